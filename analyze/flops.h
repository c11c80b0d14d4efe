/*
 * flops.h: FLOPs against runtime. Every op the model registered carries its
 * analytic FLOPs and minimum bytes; its GPU time is the sum of the kernels
 * it launched (activity.op, exact by correlation id). From those, per op or
 * per op kind summed over layers: achieved TFLOP/s and GB/s, arithmetic
 * intensity, and where that sits under the device's roofline.
 *
 * The roofline rule. Against the device peaks the header records (rp->run.device):
 *   bound = min(peak(precision), intensity x bandwidth)
 * where precision is the peak an op may use:
 *   - a matrix-product op (its kind is a GEMM by category_from_op: the
 *     projections, ffn/w1..w3, lm_head, attn/scores, attn/av; or fused
 *     attention, attn/flash, whose FLOPs are its products) uses the peak
 *     of its input dtype: bf16 -> bf16 peak, f16 -> fp16 peak, f32 -> fp32
 *     peak, or the tf32 peak when the run's precision (rp->run.config) is
 *     tf32; with no dtypes recorded, the run's precision decides;
 *   - every other op (norms, softmax, RoPE, SwiGLU, residuals, the loss,
 *     AdamW) runs on CUDA cores and uses the fp32 peak, whatever its dtype.
 * The table's Peak Used says which peak that is (empty for a row without
 * FLOPs, whose bound is the bandwidth alone); Inputs and Outputs say the
 * ops' dtypes, which for an op off the matrix units are not its peak's.
 * "Of bound" is the share of that bound reached. For a group of ops this is
 * sum(roofline time) / sum(measured time), where an op's roofline time is
 * max(FLOPs / peak, bytes / bandwidth): for one op it equals achieved
 * TFLOP/s / bound, and it also covers ops with no FLOPs (pure data
 * movement: bandwidth reached / peak bandwidth). A zero peak or bandwidth
 * means "unknown": those cells stay empty.
 *
 * Times are per step: totals over the counted kernels divided by the
 * number of counted steps (measured only unless include_warmup) in which
 * a selected kernel ran: every step of a model's run, or under --range one
 * configuration's steps of an attention sweep (`record attention`). Only
 * kernels count (memcpy and memset are not an op's arithmetic). Kernels no
 * op launched form one "(no op)" row, never dropped.
 */
#ifndef STEPTRACE_ANALYZE_FLOPS_H
#define STEPTRACE_ANALYZE_FLOPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "lib/table.h"
#include "replay/replay.h"

enum flops_by { FLOPS_BY_KIND, FLOPS_BY_OP };
extern const char *const flops_by_names[];       /* "kind", "op" */

struct flops_options {
	int by;                     /* enum flops_by */
	const char *range;          /* NVTX path pattern (see range_pattern), NULL = all */
	const char *phase;          /* one of st_phase_names: ops of that phase, kernels of no op by their
				       range path's phase (replay_path_phases); NULL = all */
	bool include_warmup;
};

enum flops_precision { FP_FP32, FP_TF32, FP_BF16, FP_FP16, FP_COUNT, FP_NONE = -1 };
const char *flops_precision_name(enum flops_precision p);   /* "fp32", ... */

enum flops_bound { BOUND_UNKNOWN, BOUND_COMPUTE, BOUND_MEMORY, BOUND_MIXED };
const char *flops_bound_name(enum flops_bound b);           /* "compute", "memory", "mixed", "" */

/* Peak FLOP/s per enum flops_precision and bytes/s; 0 = not in the header. */
struct flops_peaks {
	double flops[FP_COUNT];
	double bandwidth;
	const char *source;         /* "measured", "datasheet" or "unknown" */
};

/* One row: an op, an op kind of one phase ("forward/attn/softmax"), or "(no op)". */
struct flops_row {
	char *name;                 /* owned */
	const struct replay_op *op; /* --by op: the op (its dtypes), else NULL */
	const struct replay_op *dtypes_op;   /* the row's first op: its dtypes are the row's unless mixed */
	bool inputs_mixed, outputs_mixed;    /* the row's ops differ in their input (output) dtypes */
	bool no_op;
	bool matmul;                /* some op of the row is a matrix product */
	int precision;              /* enum flops_precision of its ops; FP_NONE when none or mixed */
	bool mixed_precision;
	int phase;                  /* enum st_phase of its ops; -1 when other or mixed */
	/* per step */
	double instances;           /* op executions (a kind: one per layer) */
	double kernels;
	double flops, bytes;
	double time_ns;             /* sum of its kernels' durations */
	double roof_ns;             /* sum of roofline times; < 0 when a peak is unknown */
	enum flops_bound bound;
};

/* Derived columns, NAN where they make no sense (no FLOPs, no time, no peak). */
double flops_row_tflops(const struct flops_row *r);          /* achieved TFLOP/s */
double flops_row_gbs(const struct flops_row *r);             /* achieved GB/s (1e9 B/s) */
double flops_row_intensity(const struct flops_row *r);       /* FLOP per byte */
double flops_row_bound_tflops(const struct flops_row *r);    /* roofline bound, TFLOP/s */
double flops_row_percent(const struct flops_row *r);         /* of the bound reached */

/* Attention in one phase: softmax against the two matrix products around it. */
struct flops_attention {
	bool present;
	double softmax_ns, matmul_ns;           /* per step; matmul = scores + av */
	double softmax_flops, matmul_flops;
};

struct flops_result {
	struct flops_row *rows;     /* time descending, then name */
	size_t n_rows;
	struct flops_peaks peaks;
	bool peaks_missing;         /* every peak and the bandwidth are 0 */
	double divisor;             /* steps the totals were divided by (those where selected kernels ran) */
	bool by_op;                 /* one row per op */
	bool dtypes;                /* the table shows the rows' dtypes (Inputs, Outputs): by op, and `steptrace flops` */
	int phase;                  /* the enum st_phase selected (--phase), -1: all */
	const char *range;          /* the --range selected, NULL: all */
	double kernel_ns;           /* per step, every kernel counted */
	double gemm_ns;             /* per step, kernels of category GEMM */
	double phase_kernel_ns[ST_PHASE_OTHER];        /* per named enum st_phase, by op phase */
	double phase_gemm_ns[ST_PHASE_OTHER];
	double comm_ns;             /* per step, communication ops' kernels: left out of the rows */
	struct flops_attention attention[2];         /* ST_PHASE_FORWARD, ST_PHASE_BACKWARD */
	size_t module_steps, of_steps;   /* (1.8) module ranges on a sample: the steps read, of how many; 0, 0 */
};

/*
 * Walks the replay's kernels under `opt` and fills `out` (released with
 * flops_result_release, also on failure). -1 with one error line.
 */
int flops_compute(const struct replay *rp, const struct flops_options *opt, struct flops_result *out);
void flops_result_release(struct flops_result *res);

/*
 * Adds the "flops" table (top > 0 keeps the top rows by time) and the notes:
 * peaks, the rule, GEMM share, softmax against scores + av. `title_extra`
 * (may be NULL) is appended to the table title.
 */
void flops_report(struct report *r, const struct flops_result *res, int top, const char *title_extra);

#endif
