/*
 * ranges.h: NVTX ranges with Nsight's nvtx_sum columns (CPU time), grouped
 * by full range path, plus the GPU projection summed over instances: GPU
 * Time (first kernel start to last kernel end) and GPU Busy (union of the
 * GPU work's intervals). Ranges of warm-up steps are left out unless
 * include_warmup (a range belongs to the step covering its midpoint).
 */
#ifndef STEPTRACE_ANALYZE_RANGES_H
#define STEPTRACE_ANALYZE_RANGES_H

#include <stdbool.h>

#include "lib/table.h"
#include "replay/replay.h"

struct ranges_opts {
	const char *range;        /* keep ranges under this NVTX path pattern, NULL: all */
	int top;                  /* rows shown, 0: all */
	int depth;                /* keep paths of at most this many components, 0: all */
	bool include_warmup;      /* ranges of warm-up steps and outside steps count */
};

/* Adds the ranges table (and notes) to r. 0, or -1 after an error line. */
int ranges_run(const struct replay *rp, const struct ranges_opts *o, struct report *r);

#endif
