/*
 * diff.h: two bundles side by side, baseline (A) first as perf diff does.
 *
 * Kernel names change across precisions (an FP32 SGEMM becomes a BF16
 * tensor-core GEMM), so rows are aligned by what the model names, not by
 * kernel: op kind per phase ("forward/ffn/w1", summed over layers), NVTX
 * range path, kernel category, or, when asked, kernel name. Each row has
 * the time per step in A and in B (totals over counted kernels divided by
 * each side's replay_step_divisor), the delta and the ratio B/A; a row that
 * exists on one side only has 0 time and count on the other, the whole
 * time as its delta (B - 0, or 0 - A) and no ratio.
 *
 * Besides the rows: mean measured step wall and GPU busy time, kernel time
 * and GEMM share per step; the communication of data-parallel runs
 * (collectives, their time, hidden and exposed; analyze/comm.h); memory peaks (overall, per phase, and the
 * breakdown by category at the overall peak, from replay/memory.h's model
 * allocator view, or the driver view when the model reported nothing); and
 * the kernels that appear in one bundle only, paired by the op kind that
 * launched them ("forward/ffn/w1: ampere_sgemm_128x64_nn -> sm90_xmma_gemm_bf16...").
 *
 * Across implementations (a PyTorch step recorded with `record -- COMMAND`
 * against steptrace's own), op kinds do not match ("forward/matmul/aten::mm"
 * against "forward/ffn/w1w3"): when less than half of the two sides' GPU
 * time is in op kinds both have, the rows and the one-sided kernels are
 * aligned by phase and kernel category instead ("forward/GEMM"), and a note
 * says so (by = -1, the command's default; --by op keeps op kinds). --by
 * phase asks for that alignment directly. An activity's phase (enum
 * st_phase) is its op's, else the first of forward, backward, optimizer,
 * zero_grad, data in its NVTX path, else "other".
 *
 * A side that dropped records while recording (replay_dropped) compares
 * incomplete totals: notes say what each side dropped and which
 * comparisons that leaves incomplete (GPU times and counts for kernels,
 * copies and memsets; memory peaks for allocations), and the one-sided
 * kernels are then never called "the same kernels".
 *
 * Bundles of different models or sizes are still diffed where their names
 * match; what differs in the headers is listed in a note, and, when it is
 * more than the precision or attention implementation (the comparisons
 * diff is for), in a warning line on stderr.
 */
#ifndef STEPTRACE_ANALYZE_DIFF_H
#define STEPTRACE_ANALYZE_DIFF_H

#include <stdbool.h>
#include <stddef.h>

#include "lib/table.h"
#include "replay/replay.h"

enum diff_by { DIFF_BY_OP, DIFF_BY_RANGE, DIFF_BY_CATEGORY, DIFF_BY_KERNEL, DIFF_BY_PHASE };
extern const char *const diff_by_names[];   /* "op", "range", "category", "kernel", "phase" */

struct diff_options {
	int by;                     /* enum diff_by; -1: op, or phase when the op kinds differ */
	const char *range;          /* keep GPU work under this NVTX path on both sides, NULL = all */
	bool include_warmup;
	int top;                    /* > 0: the N rows with the largest |delta| (tables "diff" and "kernels") */
	bool warn;                  /* header differences beyond precision/attention also go to stderr */
	bool full_names;            /* kernel names whole, not base names (analyze/common.h) */
};

/*
 * Adds to r the tables "diff" (the aligned rows), "steps", "memory",
 * "comm" (when a side has collectives) and "kernels" (one-sided kernels
 * paired by op), and notes naming header differences. -1 with one error line (r then holds what was added).
 */
int diff_run(const struct replay *a, const struct replay *b, const struct diff_options *opt,
	     struct report *r);

/*
 * What differs between the two headers, as "precision (fp32 -> bf16), ctx
 * (256 -> 512)" into buf ("" when nothing does or a header is missing).
 * Returns true when a field other than precision and attention differs.
 */
bool diff_headers(const struct replay *a, const struct replay *b, char *buf, size_t len);

#endif
