/*
 * contention_stats.h: `steptrace bench contention`'s table and its
 * calibration of explain's ranks=N, from what every rank measured, on the
 * host (no GPU, no NCCL). contention_bench.c measures; rank 0 gathers
 * every rank's samples and builds them.
 *
 * The computations are fixed: BF16 matrix products (FP32 accumulation,
 * BF16 out, model/gemm.h) at a transformer's shapes, 16384 tokens (a batch
 * of 16 x 1024) of GPT-2 small's width, its MLP's two products, and a large
 * square one; and a memory-bound kernel, the FP32 residual add over 256 MiB
 * a tensor (768 MiB moved). Each is timed alone, then beside all-reduces
 * of one size and dtype run back-to-back on a stream of the device's
 * highest priority on every rank at once.
 *
 * A row is one computation at one size and dtype as its slowest rank (the
 * longest beside the all-reduces) measured it: medians alone and beside,
 * their ratio, the all-reduce's median alone and beside it (those that
 * began and ended inside its timed window; else those that overlapped it),
 * the median host time of a comm_allreduce call (the slowest rank's), and
 * the share of the window the all-reduces ran (below 100%: part of it ran
 * alone, and the ratio understates).
 *
 * The calibration (`--calibration FILE`, what `explain --contention FILE`
 * reads): contention is the time-weighted ratio over the products, the sum
 * of their times beside over the sum alone, at one size and dtype (the
 * caller's choice: the largest size of the first dtype). The products, as
 * the backward's time is mostly theirs; the largest size, as the buckets
 * of a real step follow each other closely and a large all-reduce keeps
 * NCCL's kernels running with the fewest gaps. A ratio under 1 is noise
 * and is written as 1, the least explain takes.
 */
#ifndef STEPTRACE_MODEL_CONTENTION_STATS_H
#define STEPTRACE_MODEL_CONTENTION_STATS_H

#include <stdint.h>
#include <stdio.h>

#include "lib/table.h"
#include "trace/types.h"

enum contention_kind { CONTENTION_PRODUCT, CONTENTION_MEMORY };

struct contention_work {
	const char *name;            /* the table's "computation" */
	enum contention_kind kind;
	int m, n, k;                 /* a product: (M, K) x (K, N) -> (M, N), row-major */
	long long elements;          /* the memory-bound kernel: F32 elements of each tensor */
};

#define CONTENTION_WORKS 4
extern const struct contention_work contention_works[CONTENTION_WORKS];

/* One rank at one size and dtype; doubles only, so it travels as bytes (comm_allgather_host). */
struct contention_sample {
	double alone_us[CONTENTION_WORKS];      /* median over the timed repetitions */
	double beside_us[CONTENTION_WORKS];
	double ar_beside_us[CONTENTION_WORKS];  /* the all-reduces' median during it; 0: none ran */
	double covered[CONTENTION_WORKS];       /* share of its timed window an all-reduce ran, 0 to 1 */
	double ar_alone_us;                     /* the all-reduce's median alone */
	double call_us;                         /* median host time of one comm_allreduce call */
	double calls;                           /* the calls timed for call_us */
};

/* One size and dtype as every rank measured it. */
struct contention_result {
	uint64_t bytes;                         /* the all-reduce's buffer */
	enum st_dtype dtype;
	int ranks, iters;
	const struct contention_sample *s;      /* ranks of them, in rank order */
};

/* The table "contention" with its columns. */
struct table *contention_table(struct report *r);
/* A row per computation, each its slowest rank's. */
void contention_rows(struct table *t, const struct contention_result *res);

/* What explain's --contention FILE holds (analyze/whatif.h), and where it came from. */
struct contention_calibration {
	double contention;           /* >= 1: the ratio, at least 1 */
	double measured;             /* the ratio as measured */
	double call_us;              /* the slowest rank's median */
	int64_t kernels_beside;      /* the products' timed repetitions beside the all-reduces */
	int64_t calls;               /* the all-reduce calls timed for call_us, on each rank */
	uint64_t bytes;              /* the size and dtype it was measured at */
	enum st_dtype dtype;
};

/* The calibration from one size and dtype. 0, or -1 after one line (nothing measured alone). */
int contention_calibrate(const struct contention_result *res, struct contention_calibration *cal);

/*
 * The calibration as the table "calibration", the columns `explain
 * --section calibration` prints (contention, call_us, kernels_beside,
 * calls), one row; into out as CSV (a header line, the row). 0, or -1
 * after one line naming the write error.
 */
struct table *contention_calibration_table(struct report *r, const struct contention_calibration *cal);
int contention_calibration_write(const struct contention_calibration *cal, FILE *out);

#endif
