/*
 * contention_bench.h: `steptrace bench contention` on one rank: how much
 * longer computation takes beside NCCL's all-reduces, the calibration of
 * explain's ranks=N (model/contention_stats.h has the computations, the
 * table and the calibration).
 *
 * For every dtype and size: the all-reduce alone (warm-up, then timed
 * iterations, CUDA events on its stream, the host's time around each
 * comm_allreduce call); each computation alone (warm-up, then timed
 * repetitions); then, on every rank at once, enough all-reduces
 * back-to-back on a stream of the device's highest priority (as the
 * data-parallel step's, model/ddp.c) to outlast the computations thrice,
 * and the same computations beside them on the compute stream, which
 * waits for the first all-reduce to end (so every rank starts together).
 * The number of all-reduces is the same on every rank: each rank's times
 * alone are gathered first. Every wait is bounded (comm_sync).
 */
#ifndef STEPTRACE_MODEL_CONTENTION_BENCH_H
#define STEPTRACE_MODEL_CONTENTION_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "lib/table.h"
#include "model/comm.h"
#include "model/contention_stats.h"

struct contention_opts {
	const uint64_t *sizes;        /* bytes, each rounded down to whole elements */
	size_t n_sizes;
	const int *dtypes;            /* enum st_dtype: allreduce_dtypes (comm_stats.h) */
	size_t n_dtypes;
	int warmup, iters;            /* iters >= 1 */
};

/*
 * The sweep on this rank; rank 0 adds the table "contention" to rep (the
 * others may pass NULL), a line of progress per size on stderr, and sets
 * *cal from the largest size of the first dtype (may be NULL; the other
 * ranks leave it alone). 0, or -1 after one line.
 */
int contention_bench_run(struct comm *comm, const struct contention_opts *o, struct report *rep,
			 struct contention_calibration *cal);

#endif
