/*
 * memory.h: the memory report's pieces other reports reuse: the
 * active-memory timeline chart (stacked by category, phases marked, the peak
 * annotated) that `steptrace memory --svg` writes and `steptrace report`
 * embeds, and the helpers that name where an allocation came from.
 */
#ifndef STEPTRACE_ANALYZE_MEMORY_H
#define STEPTRACE_ANALYZE_MEMORY_H

#include <stdint.h>
#include <stdio.h>

#include "replay/memory.h"
#include "replay/replay.h"

/*
 * Writes the chart as one <svg> element (no XML declaration: it embeds in
 * HTML as is). tl: the model view's timeline, or NULL to build it here (the
 * driver view is built here either way, for its dashed total line).
 * [t0, t1]: the time window in bundle ns; t0 == t1 == 0 means everything.
 * Returns 0, or -1 with an error line (allocation failure, or a write error
 * seen through ferror(out)).
 */
int memory_svg_write(FILE *out, const struct replay *rp, const struct mem_timeline *tl,
		     uint64_t t0, uint64_t t1, int width, int height);

/* The op path of a block ("step/forward/layer.3/attn/softmax"), else its op name, else "". */
const char *memory_block_op(const struct replay *rp, const struct mem_block *b);
/* The NVTX range path covering the event that made point p, "" when none. */
const char *memory_point_range(const struct replay *rp, const struct mem_timeline *tl, int32_t p);

#endif
