/*
 * internal.h: the model's private state, shared by model.c (lifetime, step),
 * plan.c (the op table) and pass.c (forward, backward, optimizer). model.c
 * calls into the other two; all three keep their ops and ranges through
 * ops.h, so none depends on model.c.
 */
#ifndef STEPTRACE_MODEL_INTERNAL_H
#define STEPTRACE_MODEL_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <cuda_runtime.h>

#include "model/alloc.h"
#include "model/gemm.h"
#include "model/model.h"
#include "model/ops.h"

/* One parameter tensor inside the flat buffers (params, grads, m, v). */
struct param {
	char name[96];            /* PyTorch's state-dict name */
	int ndim;
	int64_t shape[2];
	size_t offset, numel;     /* in elements */
};

/*
 * Element offsets of one block's parameters. proj: q, k, v, output. q, k, v
 * are adjacent, so [Wq; Wk; Wv] at proj[0] is one (3d, d) matrix, and w3
 * follows w1, so [W1; W3] at w1 is one (2 d_ff, d): one GEMM each.
 */
struct layer_params {
	size_t ln1, proj[4], ln2, w1, w3, w2;
};

/*
 * Per-layer ops, in forward order; the backward runs them in reverse.
 * Attention is either scores, softmax and av (naive) or flash.
 */
enum layer_op {
	L_LN1, L_QKV, L_ROPE, L_SCORES, L_SOFTMAX, L_AV, L_FLASH, L_O, L_RES1,
	L_LN2, L_W13, L_SWIGLU, L_W2, L_RES2, L_COUNT
};

/* The residual adds' backward is the identity, fused into the norms': no backward op. */
struct layer_plan {
	uint32_t fwd[L_COUNT], bwd[L_COUNT];   /* op ids; 0 where the op does not run */
};

struct top_plan {
	uint32_t cast, embedding, ln_final, lm_head, loss;         /* forward */
	uint32_t zero_grad, loss_bwd, lm_head_bwd, ln_final_bwd, embedding_bwd;
	uint32_t adamw;
};

/*
 * Blocks of one step, per layer (index l * A_COUNT + k). Saved for the
 * backward in fwdbwd/train (category activation), freed as the backward
 * consumes them; in forward mode freed after their last forward use.
 */
enum layer_block {
	A_RSTD1,      /* (n) F32 */
	A_XN1,        /* (n, d) adt: rmsnorm1(x), the qkv input */
	A_Q, A_K, A_V,/* (B, H, T, dh) adt: head-major, q and k after RoPE */
	A_P,          /* (B, H, T, T) adt: softmax probabilities (naive) */
	A_O,          /* (B, H, T, dh) adt: attention output, head-major (flash) */
	A_LSE,        /* (B, H, T) F32: each score row's log-sum-exp (flash) */
	A_ATT,        /* (n, d) adt: p v, heads merged */
	A_XMID,       /* (n, d) F32: residual stream after attention */
	A_RSTD2,      /* (n) F32 */
	A_XN2,        /* (n, d) adt */
	A_H13,        /* (n, 2 d_ff) adt: rows [w1 x | w3 x] */
	A_G,          /* (n, d_ff) adt: silu(h1) * h3 */
	A_XOUT,       /* (n, d) F32: residual stream after the block */
	A_COUNT
};

/* Blocks outside the layers (index layers * A_COUNT + k). */
enum top_block {
	T_WCAST,      /* (params from cast_from) BF16: autocast's weight copies */
	T_X0,         /* (n, d) F32: embedding output */
	T_RSTDF,      /* (n) F32 */
	T_XF,         /* (n, d) adt: ln_final output */
	T_LOGITS,     /* (n, vocab) adt */
	T_LSE,        /* (2n) F32: logsumexp per row, then per-row losses */
	T_LOSS,       /* (1) F32 */
	T_QKV,        /* (n, 3d) adt: rows [q | k | v], until rope moves them to heads */
	T_SCORES,     /* (B, H, T, T) adt: temporary */
	T_ATTH,       /* (B, H, T, dh) adt: p v before its heads are merged */
	T_Y,          /* (n, d) adt: a branch output before the residual add */
	T_DLOGITS,    /* (n, vocab) adt */
	T_DRES,       /* (n, d) F32: gradient of the residual stream */
	T_DY,         /* (n, d) BF16: that gradient for a BF16 branch, from the norm backward */
	T_DXN,        /* (n, d) F32: gradient of a norm output */
	T_DG,         /* (n, d_ff) adt */
	T_DH13,       /* (n, 2 d_ff) adt: rows [dh1 | dh3] */
	T_DATT,       /* (n, d) adt */
	T_DATTH,      /* (B, H, T, dh) adt: datt head-major */
	T_DP,         /* (B, H, T, T) adt: dp, then ds in place */
	T_DQH, T_DKH, T_DVH, /* (B, H, T, dh) adt: from the attention matmuls */
	T_DQKV,       /* (n, 3d) adt: rows [dq | dk | dv], after rope, for the projection */
	T_FLASH_WS,   /* flash backward's workspace: FP32 dQ accumulator and rowsum(dO o) */
	T_COUNT
};

struct model {
	struct model_config c;
	int dh;                       /* d_model / heads */
	enum st_dtype adt;            /* matmul operand/output dtype: ST_DT_F32 or ST_DT_BF16 */
	size_t adt_size;
	int saved_category;           /* activation, or temporary in forward mode */
	bool fused;                   /* --kernels fused: see pass.c and model_step */
	bool wcast_valid;             /* fused: T_WCAST holds the current weights' copies */

	cudaStream_t stream;
	cudaEvent_t ev[4];            /* step start, after forward, after backward, after optimizer */
	struct model_alloc alloc;
	struct op_registry ops;       /* and what is open, and the observer */
	struct gemm gemm;

	struct param *param;          /* n_param, in memory order (param_layout) */
	int n_param;
	struct layer_params *lp;      /* (layers) */
	size_t n_params, off_emb, off_lnf, off_lm;
	size_t cast_from;             /* first element autocast copies to BF16 (after the embedding) */

	struct mem_block params, grads, adam_m, adam_v;   /* (n_params) F32 each */
	struct mem_block inputs, targets;                 /* (batch * ctx) I32 */
	struct mem_block rope;                            /* (ctx, dh) F32 cos/sin */
	struct mem_block workspace;                       /* cuBLAS */
	struct mem_block hyper;                           /* fused train: AdamW's alpha_t, lr wd */
	struct mem_block *act;                            /* (n_act) step blocks */
	size_t n_act;

	struct layer_plan *plan;      /* (layers) */
	struct top_plan top;
	uint32_t op_create, op_init, op_load, op_batch;
	char (*layer_name)[24];       /* "layer.N" */

	struct ddp *ddp;              /* data parallelism (ddp.c), NULL for one process */

	float *loss_host;             /* pinned, 3 floats: the loss, then hyper_host */
	float *hyper_host;            /* AdamW's alpha_t and lr * weight_decay for this step */
	cudaGraphExec_t graph;        /* fused: the step, captured at the second */
	bool no_graphs;               /* model_set_graphs(m, false) */
	bool capturing;               /* inside that capture */
	uint32_t steps_run;           /* steps finished since the weights or batch changed */
	bool have_targets;
	int adam_t;                   /* AdamW steps taken */
	struct model_oom last_oom;
};

/* plan.c: registers every op of the step (and tells the observer). */
int model_plan(struct model *m);

/*
 * ddp.c: data parallelism. ddp_grads_final: every gradient from element
 * `offset` up is final (pass.c, in the backward); ddp_finish_backward
 * starts what is left and makes the compute stream wait for it (after
 * ev[2]); ddp_step_times reads this step's comm and exposed times and the
 * optimizer's; ddp_sync waits for the compute stream, bounded.
 */
struct ddp;
int ddp_step_begin(struct model *m, uint32_t index);
int ddp_grads_final(struct model *m, size_t offset);
int ddp_finish_backward(struct model *m);
void ddp_step_times(struct model *m, struct model_step_times *t);
/* --allreduce-by exchange: the ranks' gradients for AdamW to average, in rank order
 * (in: ADAMW_AVG_MAX entries), and their count; 0 elsewhere (m->grads is the mean). */
int ddp_grad_sources(struct model *m, const float **in);
/*
 * --allreduce-by exchange with an optimizer: 1 with [*lo, *hi) the last
 * collective's elements, which AdamW updates after ddp_wait_last (the
 * others before it); 0 for one pass.
 */
int ddp_optimizer_split(struct model *m, size_t *lo, size_t *hi);
int ddp_wait_last(struct model *m);
/* --allreduce-by exchange: makes m->grads the mean of the ranks' (once a step; a reader of the
 * gradients calls it, model_export; without an optimizer the step does). MODEL_OK elsewhere. */
int ddp_average(struct model *m);
int ddp_sync(struct model *m, const char *what);
void ddp_free(struct model *m);

/* pass.c: the phases; MODEL_OK, MODEL_OOM or MODEL_ERROR, leaving blocks for the caller to release. */
int model_forward(struct model *m);
int model_backward(struct model *m);
int model_optimizer(struct model *m);
/* The host's part of AdamW's step: t, and hyper_host for it (a graph replay's too). */
void model_optimizer_prepare(struct model *m);

#endif
