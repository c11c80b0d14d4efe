/*
 * memory.h: the memory report: the timeline's peaks (overall, per phase,
 * per step, the model allocator's view beside the driver's), the category
 * breakdown and the largest live blocks at the peak, and what never paired
 * up. Its pieces other reports reuse: the timelines it computes (which the
 * active-memory chart of render/memory_svg.h draws, for `steptrace memory
 * --svg` and `steptrace report`), and the helpers that name where an
 * allocation came from.
 */
#ifndef STEPTRACE_ANALYZE_MEMORY_H
#define STEPTRACE_ANALYZE_MEMORY_H

#include <stdint.h>
#include <stdio.h>

#include "lib/table.h"
#include "replay/memory.h"
#include "replay/replay.h"

struct memory_opts {
	int top;                  /* largest live blocks listed (and unpaired ones), >= 1 */
	int view;                 /* enum mem_view of the tables (the other view's peaks follow); -1: the
				     model's, or the driver's when the model reported no allocation */
	int step;                 /* report only the step of this index; -1: the whole run */
};

/* What the report shows, computed once: both views over the window. */
struct memory_result {
	struct mem_timeline views[2];   /* by enum mem_view */
	int view;                 /* the view of the tables (memory_opts.view, or the one chosen) */
	int32_t step;             /* --step's place in rp->steps, -1: the whole run */
	uint64_t t0, t1;          /* the window in bundle ns: the step's first and last instants, or
				     [0, UINT64_MAX] */
};

/* Where step `step` (its index) is in rp->steps, -1 for step -1. 0, or -1 after an error line. */
int memory_step_index(const struct replay *rp, int step, int32_t *index);

/* Builds both views under o. 0, or -1 after an error line (a step that is not in the bundle); release either way. */
int memory_compute(const struct replay *rp, const struct memory_opts *o, struct memory_result *res);
void memory_result_release(struct memory_result *res);

/* Adds res's tables and notes to r. 0, or -1 after an error line. */
int memory_report(struct report *r, const struct replay *rp, const struct memory_opts *o,
		  const struct memory_result *res);

/* memory_compute, then memory_report: the report without its chart. */
int memory_run(const struct replay *rp, const struct memory_opts *o, struct report *r);

/* The op path of a block ("step/forward/layer.3/attn/softmax"), else its op name, else "". */
const char *memory_block_op(const struct replay *rp, const struct mem_block *b);
/* The op of the event that made point p (a block's op, or an OOM's): its path, else its name, else "". */
const char *memory_point_op(const struct replay *rp, const struct mem_timeline *tl, int32_t p);
/* The NVTX range path covering the event that made point p, "" when none. */
const char *memory_point_range(const struct replay *rp, const struct mem_timeline *tl, int32_t p);

#endif
