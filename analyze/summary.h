/*
 * summary.h: the kernel summary with exactly Nsight Systems'
 * cuda_gpu_kern_sum columns, by kernel name, by op or by category.
 */
#ifndef STEPTRACE_ANALYZE_SUMMARY_H
#define STEPTRACE_ANALYZE_SUMMARY_H

#include <stdbool.h>

#include "lib/table.h"
#include "replay/replay.h"

enum summary_by { BY_KERNEL, BY_OP, BY_CATEGORY };
extern const char *const summary_by_names[];   /* "kernel", "op", "category" */

struct summary_opts {
	const char *range;        /* NVTX path pattern, NULL: everything */
	int by;                   /* enum summary_by */
	int top;                  /* rows shown, 0: all */
	bool per_step;            /* totals divided by the number of measured steps */
	bool all;                 /* memcpy and memset rows too */
	bool include_warmup;      /* warm-up steps and work outside steps count */
	bool full_names;          /* kernel names whole, not base names (analyze/common.h) */
};

/* Adds the summary table (and notes) to r. 0, or -1 after an error line. */
int summary_run(const struct replay *rp, const struct summary_opts *o, struct report *r);

#endif
