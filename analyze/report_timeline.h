/*
 * report_timeline.h: the data behind the HTML report's timeline (drawn by
 * report.js): GPU activities per stream, NVTX ranges per thread with their
 * depth, the live-memory counter, the steps, and a string table, as one
 * JSON document inside <script type="application/json">.
 *
 * Which steps: the first measured step always (the view opens on it), then
 * the others in order while the slices stay under a budget, so a page of a
 * long recording stays small; a single step over the budget is cut at the
 * budget-th slice. What was left out is said in "omitted".
 *
 * The document (times in ns from the start of the first step shown, which
 * is "t0" ns after the bundle's first event):
 *   { "t0":      ns,
 *     "steps":   [[index, warmup 0|1, start, end], ...],
 *     "first":   position in steps of the step the view opens on,
 *     "cats":    [[category name, colour], ...],
 *     "streams": [{"name": "stream 7", "s": [start, dur, name, cat, path, ...]}, ...],
 *     "threads": [{"name": "main thread", "r": [start, dur, depth, name, path, gpu_busy, ...]}, ...],
 *     "mem":     {"view": "model allocator", "p": [t, live bytes, ...]},
 *     "omitted": "" or what was left out,
 *     "strings": ["", ...] }
 * name and path are indices into strings; path is the op's NVTX path (the
 * activity's range path without an op); cat indexes cats.
 */
#ifndef STEPTRACE_ANALYZE_REPORT_TIMELINE_H
#define STEPTRACE_ANALYZE_REPORT_TIMELINE_H

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

#endif
