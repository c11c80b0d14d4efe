/*
 * allreduce_bench.h: `steptrace bench allreduce` on one rank: for every
 * dtype and size, warm-up iterations, then timed iterations (CUDA events
 * around each all-reduce on the rank's stream), then a check that the
 * result is the exact sum of every rank's input (kernels/comm_check.h).
 * Every rank's times and wrong elements are gathered to every rank; rank 0
 * builds the table (model/comm_stats.h).
 */
#ifndef STEPTRACE_MODEL_ALLREDUCE_BENCH_H
#define STEPTRACE_MODEL_ALLREDUCE_BENCH_H

#include <stddef.h>
#include <stdint.h>

#include "lib/table.h"
#include "model/comm.h"

struct allreduce_opts {
	const uint64_t *sizes;        /* bytes, each rounded down to whole elements */
	size_t n_sizes;
	const int *dtypes;            /* enum st_dtype: allreduce_dtypes (comm_stats.h) */
	size_t n_dtypes;
	int warmup, iters;            /* iters >= 1 */
};

/*
 * The sweep on this rank; rank 0 adds the table "allreduce" to rep (the
 * others may pass NULL) and a line of progress per size on stderr. 0, or -1
 * after one line (the communicator is then aborted). A wrong sum is a
 * result ("FAILED" in the table, counted in *wrong), not an error.
 */
int allreduce_bench_run(struct comm *comm, const struct allreduce_opts *o, struct report *rep,
			uint64_t *wrong);

#endif
