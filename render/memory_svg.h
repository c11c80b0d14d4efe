/*
 * memory_svg.h: the active-memory timeline chart (live bytes stacked by
 * category, phases marked, the peak annotated) of a memory timeline
 * (analyze/memory.h), which `steptrace memory --svg` writes (cmd/memory.c)
 * and the HTML report embeds (report/).
 */
#ifndef STEPTRACE_RENDER_MEMORY_SVG_H
#define STEPTRACE_RENDER_MEMORY_SVG_H

#include <stdint.h>
#include <stdio.h>

#include "analyze/memory.h"
#include "replay/memory.h"
#include "replay/replay.h"

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

/*
 * The chart of what memory_compute computed: the model view (the shown one
 * when the model's is empty), over the whole run, or with --step over the
 * step's whole [start, end] (which is how the chart knows it is a step's).
 */
int memory_svg_result(FILE *out, const struct replay *rp, const struct memory_result *res, int width,
		      int height);

#endif
