/*
 * report.h: one self-contained HTML page per bundle (or per pair, for a
 * diff): the run's header, step time, the time breakdown by phase (NVTX
 * range projection) and by kernel category, the top kernels with Nsight's
 * columns, the memory timeline with its peak and the largest live blocks,
 * and the roofline. No network, no scripts, no fonts: inline CSS and inline
 * SVG only, so the file opens anywhere and can be mailed around.
 */
#ifndef STEPTRACE_ANALYZE_REPORT_H
#define STEPTRACE_ANALYZE_REPORT_H

#include "replay/replay.h"

/*
 * Writes the page of a (b NULL), or of the diff a -> b, to `output` (NULL:
 * the bundle's name with .html, "a-vs-b.html" for a pair, in the current
 * directory) through lib/output.h (never one of the bundles; a failed write
 * leaves the target as it was), then names it on stderr. 0, or -1 after an
 * error line.
 */
int report_html_write(const struct replay *a, const struct replay *b, const char *output);

#endif
