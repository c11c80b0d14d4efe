/*
 * timeline.h: the data behind the HTML report's timeline (drawn by
 * report.js): GPU activities per stream, NVTX ranges per thread with their
 * depth, the live-memory counter, the steps, and a string table, as one
 * JSON document inside <script type="application/json">.
 *
 * Which steps: the first measured step always (the view opens on it), then
 * the others in order while the slices stay under a budget, so a page of a
 * long recording stays small; a single step over the budget is cut at the
 * budget-th slice. What was left out is said in "omitted".
 *
 * The ranks of a multi-GPU run share one page's timeline: each rank's
 * tracks on the run's time line (replay/ranks.h), the steps chosen by the
 * first rank's steps and the slices of all ranks together, a step's span
 * the union of its ranks'.
 *
 * The document (times in ns from the start of the first step shown, which
 * is "t0" ns after the first event of any rank):
 *   { "t0":      ns,
 *     "ranks":   [rank, ...]: the run's ranks, [] for a bundle of its own,
 *     "steps":   [[index, warmup 0|1, start, end], ...],
 *     "first":   position in steps of the step the view opens on,
 *     "cats":    [[category name, colour], ...],
 *     "streams": [{"name": "stream 7", "rank": k, "s": [start, dur, name, cat, path, ...]}, ...],
 *     "threads": [{"name": "main thread", "rank": k, "r": [start, dur, depth, name, path, gpu_busy, ...]}, ...],
 *     "mem":     [{"view": "model allocator", "rank": k, "p": [t, live bytes, ...]}, ...],
 *     "omitted": "" or what was left out,
 *     "strings": ["", ...] }
 * k is the position in "ranks" (0 for a bundle of its own); "mem" has one
 * counter per rank. name and path are indices into strings; path is the
 * op's NVTX path (the activity's range path without an op); cat indexes
 * cats.
 */
#ifndef STEPTRACE_REPORT_TIMELINE_H
#define STEPTRACE_REPORT_TIMELINE_H

#include <stdint.h>
#include <stdio.h>

#include "replay/memory.h"
#include "replay/replay.h"

/* The page's budget: slices (activities and ranges) embedded at most. */
#define REPORT_TIMELINE_BUDGET 60000

/*
 * Writes the <script type="application/json" id="id"> element. tl: the
 * memory timeline the page shows (NULL or empty: no counter); budget: the
 * most slices, and the most memory points, embedded. 0, or -1 with an error
 * line.
 */
int report_timeline_write(FILE *out, const struct replay *rp, const struct mem_timeline *tl, const char *id,
			  size_t budget);

/* One rank of a run for its timeline: its replay, its memory counter, where its times go. */
struct report_timeline_rank {
	const struct replay *rp;
	const struct mem_timeline *tl;   /* NULL or empty: no counter */
	int64_t offset;                  /* ns added to its times: the run's time line */
	uint32_t rank;
};

/* The same for the ranks of one run (n >= 1, the first leading the step choice), one lane group each. */
int report_timeline_write_ranks(FILE *out, const struct report_timeline_rank *ranks, size_t n, const char *id,
				size_t budget);

#endif
