/*
 * attention_sweep.h: attention on its own, as the seeds benchmark it
 * (`steptrace bench attention`, `steptrace record attention`): the grid of
 * configurations, the name each one carries in the NVTX ranges and op paths
 * of a recording, and the FLOPs and minimum bytes of attention's parts,
 * which the model's op table (plan.c) uses too. No CUDA here: CPU tests
 * call all of it. The sweep itself runs in attention_bench.c.
 */
#ifndef STEPTRACE_MODEL_ATTENTION_SWEEP_H
#define STEPTRACE_MODEL_ATTENTION_SWEEP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/types.h"

/* One configuration: q, k, v of shape (batch, heads, seq, d_head). */
struct attn_config {
	int batch, heads, d_head, seq;
	enum st_precision precision;   /* fp32, tf32 (naive's products on TF32), bf16 */
	enum st_attention impl;
	bool causal;
};

/* The grid's comma-separated lists; NULL takes the default (the seeds' grid). */
struct attn_grid {
	const char *batch;       /* "8" */
	const char *heads;       /* "1" */
	const char *d_head;      /* "16,32,64,128" */
	const char *seq;         /* "256,1024,4096,8192,16384" */
	const char *precision;   /* "fp32" */
	const char *impl;        /* "naive" */
	bool causal;
};

#define ATTN_GRID_INIT { .causal = true }

/*
 * Every configuration of the grid, precisions outermost, then
 * implementations, batches, heads, head sizes and sequence lengths: the
 * count, the array in *out (malloc'd). -1 with an error line for a bad list
 * or value (sizes must be positive; seq at most 1,048,576, d_head at most
 * 1,024, batch * heads at most 65,535, batch * heads * seq^2 * d_head at
 * most 2^60, so that every FLOP count fits in 64 bits).
 */
int attn_grid_configs(const struct attn_grid *g, struct attn_config **out);

/*
 * "attn d64 seq4096 b8 h1 bf16 naive" (" noncausal" appended when not
 * causal): the configuration's NVTX range and the first component of its
 * op paths in a recording. Returns buf.
 */
const char *attn_config_name(const struct attn_config *c, char *buf, size_t len);

/* The matrix products' dtype: BF16 under bf16, else F32. */
enum st_dtype attn_config_dtype(const struct attn_config *c);

/* Attention's shape for the cost formulas: bh heads of (t, d) in elements of a bytes. */
struct attn_shape {
	uint64_t bh, t, d, a;
	bool causal;
};

struct attn_shape attn_config_shape(const struct attn_config *c);

/*
 * The parts attention's ops are made of: the naive path's scores = q k^T,
 * the scaled, masked softmax and av = p v, over materialised (t, t) score
 * matrices; and FlashAttention-2, one op each way.
 */
enum attn_part { ATTN_SCORES, ATTN_SOFTMAX, ATTN_AV, ATTN_FLASH, ATTN_PARTS };
extern const char *const attn_part_names[];   /* "scores", "softmax", "av", "flash" */

struct attn_cost {
	uint64_t flops, bytes;
};

/*
 * The FLOPs each part's kernels compute and the bytes each must move at
 * least (inputs read once, outputs written once), forward or backward:
 *  - scores, av: one batched GEMM forward, two backward, over the whole
 *    (t, t) matrix (cuBLAS computes the masked half too): 2 bh t^2 d each
 *    forward, twice that backward;
 *  - softmax: 5 FLOPs an element forward (scale, max, subtract, exp, sum and
 *    divide counted as 5), 4 backward, over bh t^2 elements;
 *  - flash: only the pairs it keeps (causal: t (t + 1) / 2 a head, else
 *    t^2): forward 4 d (two products) + 5 (online softmax) per pair;
 *    backward recomputes S and P: 10 d (five products: S, dP, dV, dK, dQ)
 *    + 5 (P = exp(S - lse), dS = P (dP - D)) per pair, plus 2 d per row for
 *    D = rowsum(dO o). Bytes: forward q, k, v read, o and the row
 *    log-sum-exp (F32) written; backward q, k, v, o, dO and lse read, dq,
 *    dk, dv written, D written and read.
 */
struct attn_cost attn_part_cost(const struct attn_shape *s, enum attn_part part, bool backward);

/*
 * The FLOPs of attention as the FlashAttention papers, PyTorch's
 * benchmarks and scripts/torch_attention.py count them, the same for every
 * implementation: forward 4 bh t^2 d, halved when causal; backward 2.5 times
 * that. bench's TFLOP/s divide this by the time.
 */
double attn_useful_flops(const struct attn_shape *s, bool backward);

#endif
