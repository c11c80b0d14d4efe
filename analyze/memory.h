/*
 * memory.h: the memory report: the timeline's peaks (overall, per phase,
 * per step, the model allocator's view beside the driver's), the category
 * breakdown and the largest live blocks at the peak, and what never paired
 * up. Its pieces other reports reuse: the active-memory timeline chart
 * (stacked by category, phases marked, the peak annotated) that
 * `steptrace memory --svg` writes and `steptrace report` embeds, and the
 * helpers that name where an allocation came from.
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
	const char *svg;          /* write the chart here, NULL: no chart */
	uint64_t max_size;        /* refuse a chart larger than this (--max-size); 0: no limit */
	int step;                 /* report and chart only the step of this index; -1: the whole run */
};

/*
 * Adds the tables and notes to r and writes the chart. 0, or -1 after an
 * error line (a step that is not in the bundle, a chart not written).
 */
int memory_run(const struct replay *rp, const struct memory_opts *o, struct report *r);

/*
 * Writes the chart as one <svg> element (no XML declaration: it embeds in
 * HTML as is). tl: the model view's timeline, or NULL to build it here (the
 * driver view is built here either way, for its dashed total line).
 * [t0, t1]: the time window in bundle ns; t0 == t1 == 0 means everything.
 * Returns 0, or -1 with an error line (allocation failure); a write error
 * stays in out's error flag, for whoever closes it (lib/output.h names it).
 */
int memory_svg_write(FILE *out, const struct replay *rp, const struct mem_timeline *tl,
		     uint64_t t0, uint64_t t1, int width, int height);

/* The op path of a block ("step/forward/layer.3/attn/softmax"), else its op name, else "". */
const char *memory_block_op(const struct replay *rp, const struct mem_block *b);
/* The op of the event that made point p (a block's op, or an OOM's): its path, else its name, else "". */
const char *memory_point_op(const struct replay *rp, const struct mem_timeline *tl, int32_t p);
/* The NVTX range path covering the event that made point p, "" when none. */
const char *memory_point_range(const struct replay *rp, const struct mem_timeline *tl, int32_t p);

#endif
