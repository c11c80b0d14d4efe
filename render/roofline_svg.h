/*
 * roofline_svg.h: the roofline chart of a flops result (analyze/flops.h),
 * which `steptrace flops --svg` writes (cmd/flops.c) and the HTML report
 * embeds (report/).
 */
#ifndef STEPTRACE_RENDER_ROOFLINE_SVG_H
#define STEPTRACE_RENDER_ROOFLINE_SVG_H

#include <stdio.h>

#include "analyze/flops.h"
#include "replay/replay.h"

/*
 * The roofline chart as a standalone <svg> (embeddable in HTML): log-log
 * FLOP/byte against TFLOP/s, a ceiling per precision with a peak in the
 * header and the bandwidth slope, one labelled point per row with FLOPs,
 * sized by its share of time. Returns 0, or -1 after an error line (out of
 * memory); a write error stays in out's error flag, for whoever closes it
 * (lib/output.h names it once).
 */
int flops_svg(FILE *out, const struct flops_result *res, int width, int height);

/* flops_compute by kind over measured steps, then flops_svg. */
int flops_roofline_svg(FILE *out, const struct replay *rp, int width, int height);

#endif
