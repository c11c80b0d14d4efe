/*
 * bench.h: the seeds' end-to-end benchmark without CUPTI (`steptrace
 * bench`): for each configuration of a sweep, warm-up then measured steps,
 * mean ± std of each phase (device events) and of the step's wall time,
 * peak device memory, and OOM where a configuration does not fit.
 */
#ifndef STEPTRACE_MODEL_BENCH_H
#define STEPTRACE_MODEL_BENCH_H

#include <stddef.h>

#include "lib/table.h"
#include "model/config.h"

struct comm;

struct bench_opts {
	const struct model_config *configs;   /* the sweep, in the order of its rows */
	size_t n_configs;
	int warmup, steps;                    /* per configuration; steps >= 1 */
	struct comm *comm;                    /* data parallelism (the configurations' ddp):
						 this rank's communicator; NULL for one GPU */
};

/*
 * Runs every configuration in turn (a line of progress each on stderr) and
 * adds the table "bench" and its notes to `rep`: one row per
 * configuration, "OOM" rows included. Returns how many configurations
 * failed with an error (an OOM is a result, not a failure).
 *
 * With o->comm, every rank runs the sweep as one data-parallel run: the
 * same weights everywhere, a batch of its own per rank (the seed plus the
 * rank), the ranks agreeing after model_create whether the configuration
 * fits (an OOM row when it does not fit on some rank); rank 0 adds the
 * table "ddp" (model/comm_stats.h) from every rank's steps, gathered. A
 * step that fails on a rank is fatal to the run: -1 after one line.
 */
int bench_run(const struct bench_opts *o, struct report *rep);

#endif
