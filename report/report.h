/*
 * report.h: one self-contained HTML page per bundle (or per pair, for a
 * diff): the run's header, a zoomable timeline of a step, step time, the
 * time breakdown by phase (NVTX range projection), by kernel category and
 * per layer, the top kernels with Nsight's columns, ops against the
 * roofline, NVTX ranges, the memory timeline with its peak and the largest
 * live blocks. No network and no fonts: inline CSS, SVG and the page's own
 * script (report/report.js), so the file opens anywhere and can be mailed
 * around; without JavaScript everything but the timeline still shows.
 */
#ifndef STEPTRACE_REPORT_REPORT_H
#define STEPTRACE_REPORT_REPORT_H

#include <stdint.h>

#include "replay/ranks.h"
#include "replay/replay.h"

/*
 * Writes the page of run a (b NULL), or of the diff a -> b, to `output`
 * (NULL: the bundle's name with .html, "a-vs-b.html" for a pair, in the
 * current directory) through lib/output.h (never one of the bundles; a
 * failed write leaves the target as it was), then names it on stderr. A run
 * of several ranks (replay/ranks.h) shows its rank 0's cards, and a
 * Communication card of every rank (collectives, hidden and exposed time,
 * skew), as does a bundle with collectives. A page larger than max_size
 * (0: no limit) is refused before it is written. 0, or -1 after an error
 * line.
 */
int report_html_write(const struct replay_ranks *a, const struct replay_ranks *b, const char *output,
		      uint64_t max_size);

#endif
