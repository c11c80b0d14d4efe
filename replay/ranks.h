/*
 * ranks.h: the bundles of one run on several GPUs, one per rank, taken
 * together (SPEC.md, "Several GPUs").
 *
 * One run: bundles whose headers carry the same non-zero run_id (format
 * 1.3; a single-process bundle is a run of its own). replay_runs_group
 * sorts loaded bundles into runs, ranks in order, and refuses what cannot
 * be one run (two bundles of one rank, ranks that disagree on the world
 * size or the configuration).
 *
 * One time line: CUPTI's timestamps come from one host clock, which every
 * process of a host shares, so each rank's events are placed by its time
 * base: rank r's event at t (ns since its Header.time_base_ns) is at
 * time_base_ns(r) - min over ranks of time_base_ns + t. Ranks on different
 * hosts (or without a CUPTI clock in common) are placed first by the
 * real-time clock each read right after its time base (created_unix_ns),
 * which hosts agree on only to milliseconds, then by their collectives: an
 * NCCL collective ends at nearly the same instant on every rank, so the
 * k-th collective kernel of each rank is matched with rank 0's k-th (those
 * every rank ran) and rank r moves by the median of (end on rank 0 - end on
 * rank r). The residual, |end on rank 0 - end on rank r| over the matched
 * collectives once moved, says how well that held; with fewer than 3
 * matched the real-time clocks stand. `alignment` says which was used.
 *
 * Totals across ranks: replay_ranks_pool builds one replay holding every
 * rank's events one rank after the other on a shared time line (each rank
 * moved past the end of the one before, strings, ops, correlation ids,
 * threads and addresses kept apart), so that every single-bundle report
 * sums over the ranks unchanged: kernel times, instances, steps (a rank's
 * steps are steps of the pooled replay), memory peaks (the largest rank's).
 * Times in it are not the recorded ones; reports that show when things
 * happened (export, comm, the timeline) use the ranks themselves.
 */
#ifndef STEPTRACE_REPLAY_RANKS_H
#define STEPTRACE_REPLAY_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "replay/replay.h"

struct replay_ranks {
	const struct replay **rank;   /* n replays in rank order (the caller's) */
	size_t n;
	int64_t *offset;              /* ns added to rank i's times to place it on the run's time line */
	                              /* (0 to 2^62; the rank placed first: 0) */
	uint32_t world_size;          /* as the headers say; n when the bundles have none */
	uint64_t run_id;              /* 0: a single-process bundle */
	char alignment[256];          /* how the time line was made, for a note */
};

/* The rank of replay i (its header's, or i for a run of bundles without ranks). */
uint32_t replay_ranks_rank(const struct replay_ranks *rs, size_t i);

/*
 * Sorts rps[0..n) (loaded bundles, in argument order) into runs: at most
 * max_runs, in the order their first bundle appears, each with its ranks
 * in order and its time line. Returns the number of runs, or -1 after one
 * line: two bundles of one rank, ranks of one run that disagree on the world
 * size or the configuration, more than max_runs runs (naming two bundles
 * of different runs; `what` names the command: "summary reads one run").
 * A run with fewer bundles than its world size is kept, with a warning
 * naming the missing ranks. Release with replay_runs_release.
 */
int replay_runs_group(const struct replay *rps, size_t n, struct replay_ranks *runs, size_t max_runs,
		      const char *what);
void replay_runs_release(struct replay_ranks *runs, size_t n);

/*
 * Every rank's events in one replay (see above), built; `out` points into
 * the ranks' replays (its run facts are rank 0's, but for the footer's
 * dropped counts: every rank's summed): release it before them.
 * -1 after one line.
 */
int replay_ranks_pool(struct replay *out, const struct replay_ranks *rs);

#endif
