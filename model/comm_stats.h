/*
 * comm_stats.h: the tables of the multi-GPU benchmarks from what every
 * rank measured, on the host (no GPU, no NCCL): `bench allreduce`'s
 * (allreduce_bench.c) and the data-parallel step's (bench.c). Rank 0
 * gathers every rank's samples and builds them.
 *
 * All-reduce: each rank times each iteration on its own stream; a rank's
 * row holds mean, min, max and sample std of its iterations; the "all" row
 * takes, for each iteration, the slowest rank's time (a collective ends
 * when its last rank does), as nccl-tests reports it. Bandwidths are
 * nccl-tests': algorithm bandwidth = bytes / mean time, bus bandwidth =
 * algorithm bandwidth * st_bus_factor (2(n - 1)/n for all-reduce), in GB/s
 * of 10^9 bytes.
 *
 * Data parallelism: per rank, the mean over measured steps of forward,
 * backward, communication (the all-reduces' time on their stream),
 * exposed communication (what the step waited for after the backward),
 * optimizer and step time; the "all" row averages the ranks' phases and
 * takes each step's slowest rank for the step time. Shares are of the step
 * time; hidden = 1 - exposed / communication.
 */
#ifndef STEPTRACE_MODEL_COMM_STATS_H
#define STEPTRACE_MODEL_COMM_STATS_H

#include <stdint.h>

#include "lib/table.h"
#include "model/config.h"

/* The dtypes `bench allreduce --dtype` takes ("f32", "bf16", "f16") and their enum st_dtype. */
extern const char *const allreduce_dtype_names[];
extern const int allreduce_dtypes[];

/* GB/s (10^9 bytes per second) of `bytes` moved in `us` microseconds; 0 when us <= 0. */
double comm_gbps(uint64_t bytes, double us);

/* One all-reduce size and dtype as every rank measured it. */
struct allreduce_result {
	uint64_t bytes;              /* the buffer: count * dtype size */
	enum st_dtype dtype;
	int ranks, iters;
	const double *us;            /* ranks * iters: rank r's iteration i at [r * iters + i] */
	uint64_t mismatches;         /* wrong elements of the result, over every rank */
};

/* The table "allreduce" with its columns. */
struct table *allreduce_table(struct report *r);
/* A row per rank and one "all" row. */
void allreduce_rows(struct table *t, const struct allreduce_result *res);

/* The phases of a data-parallel step, in ms. */
enum ddp_phase { DP_FORWARD, DP_BACKWARD, DP_COMM, DP_EXPOSED, DP_OPTIMIZER, DP_STEP, DP_COUNT };

/* One configuration as every rank measured it. */
struct ddp_result {
	const struct model_config *c;   /* batch is per rank */
	int ranks, steps;
	const double *ms;               /* rank r's step s, phase p at [(r * steps + s) * DP_COUNT + p] */
	double peak_gib;                /* the largest over the ranks */
};

/* The table "ddp" with its columns. */
struct table *ddp_table(struct report *r);
/* A row per rank and one "all" row. */
void ddp_rows(struct table *t, const struct ddp_result *res);
/* A configuration that did not run: one row, status "OOM" or "error". */
void ddp_failed_row(struct table *t, const struct model_config *c, int ranks, const char *status);

#endif
