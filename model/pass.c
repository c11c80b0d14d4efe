/*
 * pass.c: the step's three phases on the model's stream: forward (with the
 * loss), backward and AdamW. Each op is bracketed by op_begin/op_end (the
 * observer hooks and its NVTX range, ops.c) and gets every block it needs from the
 * allocator inside that bracket, so memory is attributed to the op. Saved
 * activations are freed by the backward op that consumes them last;
 * temporaries right after use. Nothing here waits for the device.
 *
 * Shapes: n = batch * ctx rows, d = d_model, f = d_ff, heads split d in
 * order (B, T, H, dh); attention works head-major, (B, H, T, dh), and the
 * rope op and a permute in av (naive) or flash move between the two. Naive
 * attention materialises the (B, H, T, T) scores and probabilities for
 * batched GEMMs and the softmax kernels; flash (FlashAttention-2) saves the
 * head-major output and each row's log-sum-exp instead. Projections that
 * share an input run as one GEMM on their stacked weights (adjacent in the
 * parameter buffers): q, k, v (n, 3d) and w1, w3 (n, 2f), each row the parts
 * side by side; their backward is one weight GEMM and one data GEMM. "adt"
 * is the matmul dtype: F32, or BF16 under autocast, where weights are BF16 copies,
 * RMSNorm, softmax and the loss run in FP32, and the residual stream, weight
 * gradients and the gradients entering an RMSNorm backward are FP32.
 *
 * --kernels fused (m->fused) changes four things: the BF16 weight copies
 * live from step to step, made once by cast_weights and then by AdamW as it
 * updates each weight; the residual adds are folded into the output
 * products (D = A B + C, the stream's F32 sum, no branch output); the loss
 * writes its gradient over the logits in the same launch (no backward
 * cross_entropy op, no dlogits buffer); and AdamW reads its step-dependent
 * scalars from device memory, so the step can be replayed as a CUDA graph
 * (model.c).
 */
#include <limits.h>
#include <math.h>

#include "kernels/adamw.h"
#include "kernels/cast.h"
#include "kernels/cross_entropy.h"
#include "kernels/embedding.h"
#include "kernels/flash_attention.h"
#include "kernels/residual.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softmax.h"
#include "kernels/swiglu.h"
#include "kernels/zero.h"
#include "lib/error.h"
#include "lib/gpu_check.h"
#include "model/internal.h"
#include "trace/types.h"

#define RMSNORM_EPS 1e-5f

/*
 * Returns what failed: MODEL_OOM or MODEL_ERROR from the allocator and the
 * GEMMs, and -1 (MODEL_ERROR) from a CUDA_CHECK, whose line is printed.
 */
#define TRY(x)                          \
	do {                            \
		int rc_ = (x);          \
		if (rc_)                \
			return rc_;     \
	} while (0)

static struct mem_block *lb(struct model *m, int l, enum layer_block k)
{
	return &m->act[(size_t)l * A_COUNT + k];
}

static struct mem_block *tb(struct model *m, enum top_block k)
{
	return &m->act[(size_t)m->c.layers * A_COUNT + k];
}

static int get(struct model *m, struct mem_block *b, size_t bytes, int category)
{
	return mem_get(&m->alloc, b, bytes, category);
}

static void put(struct model *m, struct mem_block *b)
{
	mem_put(&m->alloc, b);
}

/*
 * Every gradient from element `offset` of the buffer up is final: under
 * data parallelism (overlap, bucket) the all-reduces that carry only such
 * gradients start now (ddp.c). The backward finishes them last to first.
 */
static int grads_final(struct model *m, size_t offset)
{
	return m->ddp ? ddp_grads_final(m, offset) : MODEL_OK;
}

/* Forward mode keeps nothing for a backward: blocks go after their last forward use. */
static void drop(struct model *m, struct mem_block *b)
{
	if (m->c.mode == ST_MODE_FORWARD)
		put(m, b);
}

static size_t rows(const struct model *m)
{
	return (size_t)m->c.batch * m->c.ctx;
}

static void *at(const struct model *m, const struct mem_block *b, size_t i)
{
	return (char *)b->ptr + i * m->adt_size;
}

/* A weight as the matmuls read it: the BF16 copy under autocast, else the FP32 parameter. */
static const void *weight(struct model *m, size_t off)
{
	if (m->adt == ST_DT_BF16)
		return (char *)tb(m, T_WCAST)->ptr + (off - m->cast_from) * 2;
	return (float *)m->params.ptr + off;
}

static float *param(struct model *m, size_t off)
{
	return (float *)m->params.ptr + off;
}

static float *grad(struct model *m, size_t off)
{
	return (float *)m->grads.ptr + off;
}

/* y (n, out) adt = x (n, in) W^T, W (out, in). */
static int linear_fwd(struct model *m, void *y, const void *x, size_t w, int in, int out)
{
	return gemm_rm(&m->gemm, false, true, (int)rows(m), out, in, 1.0f, x, in, 0, weight(m, w), in,
		       0, m->adt, 0.0f, y, out, 0, m->adt, 1);
}

/* dx (n, in) in dx_dtype = dy W (+ dx if accumulate). */
static int linear_bwd_data(struct model *m, void *dx, enum st_dtype dx_dtype, const void *dy,
			   size_t w, int in, int out, bool accumulate)
{
	return gemm_rm(&m->gemm, false, false, (int)rows(m), in, out, 1.0f, dy, out, 0, weight(m, w),
		       in, 0, m->adt, accumulate ? 1.0f : 0.0f, dx, in, 0, dx_dtype, 1);
}

/* dW (out, in) F32 = dy^T x: each weight has one use per step, so written, not added. */
static int linear_bwd_weight(struct model *m, size_t w, const void *dy, const void *x, int in, int out)
{
	return gemm_rm(&m->gemm, true, false, out, in, (int)rows(m), 1.0f, dy, out, 0, x, in, 0,
		       m->adt, 0.0f, grad(m, w), in, 0, ST_DT_F32, 1);
}

/* Attention's products (gemm_attention) at the model's shape. */
static int attn_gemm(struct model *m, enum attn_gemm kind, void *out, const void *x,
		     const void *y)
{
	return gemm_attention(&m->gemm, kind, m->c.batch * m->c.heads, m->c.ctx, m->dh, m->adt, out,
			      x, y) ? MODEL_ERROR : MODEL_OK;
}

/* Attention's score scale, 1 / sqrt(d_head). */
static float attn_scale(const struct model *m)
{
	return (float)(1.0 / sqrt((double)m->dh));
}

/*
 * The output product of a branch with the residual add folded in (fused):
 * out (n, d) F32 = x + in (n, in_dim) W^T, out saved, x freed in forward mode.
 */
static int linear_residual_fwd(struct model *m, struct mem_block *out, struct mem_block *x,
			       const void *in, size_t w, int in_dim)
{
	int d = m->c.d_model;

	TRY(get(m, out, rows(m) * d * sizeof(float), m->saved_category));
	TRY(gemm_rm_add(&m->gemm, false, true, (int)rows(m), d, in_dim, in, in_dim, weight(m, w),
			in_dim, m->adt, x->ptr, out->ptr, d, ST_DT_F32) ? MODEL_ERROR : MODEL_OK);
	drop(m, x);
	return MODEL_OK;
}

/* The residual stream entering layer l. */
static struct mem_block *layer_input(struct model *m, int l)
{
	return l == 0 ? tb(m, T_X0) : lb(m, l - 1, A_XOUT);
}

/* ---- Forward ---- */

static int norm_fwd(struct model *m, uint32_t op, struct mem_block *xn, struct mem_block *rstd,
		    struct mem_block *x, size_t g, bool last_use)
{
	size_t n = rows(m), d = m->c.d_model;
	bool keep = m->c.mode != ST_MODE_FORWARD;

	op_begin(&m->ops, op);
	TRY(get(m, xn, n * d * m->adt_size, m->saved_category));
	if (keep)
		TRY(get(m, rstd, n * sizeof(float), m->saved_category));
	TRY(CUDA_CHECK(rmsnorm_forward(xn->ptr, keep ? rstd->ptr : NULL, x->ptr, param(m, g),
				       (int)n, (int)d, RMSNORM_EPS, m->adt, m->stream)));
	if (last_use)
		drop(m, x);
	op_end(&m->ops);
	return MODEL_OK;
}

/* out = x + y, y a temporary branch output freed here (and x too in forward mode). */
static int residual_fwd(struct model *m, uint32_t op, struct mem_block *out, struct mem_block *x)
{
	size_t n = rows(m) * m->c.d_model;
	struct mem_block *y = tb(m, T_Y);

	op_begin(&m->ops, op);
	TRY(get(m, out, n * sizeof(float), m->saved_category));
	TRY(CUDA_CHECK(residual_forward(out->ptr, x->ptr, y->ptr, (long long)n, m->adt,
					m->stream)));
	put(m, y);
	drop(m, x);
	op_end(&m->ops);
	return MODEL_OK;
}

/* p = softmax(q k^T / sqrt(dh)) (saved), att = p v with its heads merged (saved). */
static int naive_fwd(struct model *m, int l)
{
	const struct model_config *c = &m->c;
	const uint32_t *op = m->plan[l].fwd;
	int B = c->batch, T = c->ctx, H = c->heads, dh = m->dh;
	size_t n = rows(m), d = c->d_model, a = m->adt_size;
	size_t bhtt = (size_t)B * H * T * T;
	struct mem_block *qh = lb(m, l, A_Q), *kh = lb(m, l, A_K), *vh = lb(m, l, A_V);
	struct mem_block *p = lb(m, l, A_P), *att = lb(m, l, A_ATT);
	struct mem_block *s = tb(m, T_SCORES), *atth = tb(m, T_ATTH);

	op_begin(&m->ops, op[L_SCORES]);
	TRY(get(m, s, bhtt * a, ST_MEM_TEMPORARY));
	TRY(attn_gemm(m, S_QK, s->ptr, qh->ptr, kh->ptr));
	drop(m, qh);
	drop(m, kh);
	op_end(&m->ops);

	op_begin(&m->ops, op[L_SOFTMAX]);
	TRY(get(m, p, bhtt * a, m->saved_category));
	TRY(CUDA_CHECK(causal_softmax_forward(p->ptr, s->ptr, B * H, T, attn_scale(m), m->adt,
					      m->stream)));
	put(m, s);
	op_end(&m->ops);

	op_begin(&m->ops, op[L_AV]);
	TRY(get(m, atth, n * d * a, ST_MEM_TEMPORARY));
	TRY(attn_gemm(m, O_PV, atth->ptr, p->ptr, vh->ptr));
	drop(m, p);
	drop(m, vh);
	TRY(get(m, att, n * d * a, m->saved_category));
	TRY(CUDA_CHECK(heads_permute(att->ptr, atth->ptr, B, T, H, dh, 0, m->adt, m->stream)));
	put(m, atth);
	op_end(&m->ops);

	return MODEL_OK;
}

/*
 * FlashAttention-2: o (head-major) and each row's log-sum-exp saved for the
 * backward, no (T, T) matrix; then o's heads merged into att (saved).
 */
static int flash_fwd(struct model *m, int l)
{
	const struct model_config *c = &m->c;
	int B = c->batch, T = c->ctx, H = c->heads, dh = m->dh;
	size_t n = rows(m), d = c->d_model, a = m->adt_size;
	bool keep = c->mode != ST_MODE_FORWARD;
	struct mem_block *qh = lb(m, l, A_Q), *kh = lb(m, l, A_K), *vh = lb(m, l, A_V);
	struct mem_block *o = lb(m, l, A_O), *lse = lb(m, l, A_LSE), *att = lb(m, l, A_ATT);

	op_begin(&m->ops, m->plan[l].fwd[L_FLASH]);
	TRY(get(m, o, n * d * a, m->saved_category));
	if (keep)
		TRY(get(m, lse, (size_t)B * H * T * sizeof(float), m->saved_category));
	TRY(CUDA_CHECK(flash_attention_forward(o->ptr, keep ? lse->ptr : NULL, qh->ptr, kh->ptr,
					       vh->ptr, B * H, T, dh, attn_scale(m), true, m->adt,
					       m->stream)));
	drop(m, qh);
	drop(m, kh);
	drop(m, vh);
	TRY(get(m, att, n * d * a, m->saved_category));
	TRY(CUDA_CHECK(heads_permute(att->ptr, o->ptr, B, T, H, dh, 0, m->adt, m->stream)));
	drop(m, o);
	op_end(&m->ops);
	return MODEL_OK;
}

static int attn_fwd(struct model *m, int l)
{
	const struct model_config *c = &m->c;
	const uint32_t *op = m->plan[l].fwd;
	const struct layer_params *lp = &m->lp[l];
	int B = c->batch, T = c->ctx, H = c->heads, dh = m->dh;
	size_t n = rows(m), d = c->d_model, a = m->adt_size;
	struct mem_block *xn = lb(m, l, A_XN1), *qh = lb(m, l, A_Q), *kh = lb(m, l, A_K);
	struct mem_block *vh = lb(m, l, A_V), *att = lb(m, l, A_ATT);
	struct mem_block *qkv = tb(m, T_QKV), *y = tb(m, T_Y);

	/* [q | k | v] = xn [Wq; Wk; Wv]^T: one GEMM */
	op_begin(&m->ops, op[L_QKV]);
	TRY(get(m, qkv, n * 3 * d * a, ST_MEM_TEMPORARY));
	TRY(linear_fwd(m, qkv->ptr, xn->ptr, lp->proj[0], (int)d, (int)(3 * d)));
	drop(m, xn);
	op_end(&m->ops);

	/* to heads, so that each attention product below is one batched GEMM */
	op_begin(&m->ops, op[L_ROPE]);
	TRY(get(m, qh, n * d * a, m->saved_category));
	TRY(get(m, kh, n * d * a, m->saved_category));
	TRY(get(m, vh, n * d * a, m->saved_category));
	TRY(CUDA_CHECK(rope_to_heads(qh->ptr, kh->ptr, vh->ptr, qkv->ptr, at(m, qkv, d),
				     at(m, qkv, 2 * d), (long long)(3 * d), m->rope.ptr, B, T, H,
				     dh, m->adt, m->stream)));
	put(m, qkv);
	op_end(&m->ops);

	if (c->attention == ST_ATTN_FLASH)
		TRY(flash_fwd(m, l));
	else
		TRY(naive_fwd(m, l));

	op_begin(&m->ops, op[L_O]);
	if (m->fused) {
		TRY(linear_residual_fwd(m, lb(m, l, A_XMID), layer_input(m, l), att->ptr,
					lp->proj[3], (int)d));
		drop(m, att);
		op_end(&m->ops);
		return MODEL_OK;
	}
	TRY(get(m, y, n * d * a, ST_MEM_TEMPORARY));
	TRY(linear_fwd(m, y->ptr, att->ptr, lp->proj[3], (int)d, (int)d));
	drop(m, att);
	op_end(&m->ops);

	return residual_fwd(m, op[L_RES1], lb(m, l, A_XMID), layer_input(m, l));
}

static int ffn_fwd(struct model *m, int l)
{
	const uint32_t *op = m->plan[l].fwd;
	const struct layer_params *lp = &m->lp[l];
	size_t n = rows(m), d = m->c.d_model, f = m->c.d_ff, a = m->adt_size;
	struct mem_block *xn = lb(m, l, A_XN2), *h13 = lb(m, l, A_H13), *g = lb(m, l, A_G);
	struct mem_block *y = tb(m, T_Y);

	/* [h1 | h3] = xn [W1; W3]^T: one GEMM */
	op_begin(&m->ops, op[L_W13]);
	TRY(get(m, h13, n * 2 * f * a, m->saved_category));
	TRY(linear_fwd(m, h13->ptr, xn->ptr, lp->w1, (int)d, (int)(2 * f)));
	drop(m, xn);
	op_end(&m->ops);

	op_begin(&m->ops, op[L_SWIGLU]);
	TRY(get(m, g, n * f * a, m->saved_category));
	TRY(CUDA_CHECK(swiglu_forward(g->ptr, h13->ptr, (long long)n, (int)f, m->adt, m->stream)));
	drop(m, h13);
	op_end(&m->ops);

	op_begin(&m->ops, op[L_W2]);
	if (m->fused) {
		TRY(linear_residual_fwd(m, lb(m, l, A_XOUT), lb(m, l, A_XMID), g->ptr, lp->w2,
					(int)f));
		drop(m, g);
		op_end(&m->ops);
		return MODEL_OK;
	}
	TRY(get(m, y, n * d * a, ST_MEM_TEMPORARY));
	TRY(linear_fwd(m, y->ptr, g->ptr, lp->w2, (int)f, (int)d));
	drop(m, g);
	op_end(&m->ops);

	return residual_fwd(m, op[L_RES2], lb(m, l, A_XOUT), lb(m, l, A_XMID));
}

static int layer_fwd(struct model *m, int l)
{
	op_range_push(&m->ops, m->layer_name[l]);
	TRY(norm_fwd(m, m->plan[l].fwd[L_LN1], lb(m, l, A_XN1), lb(m, l, A_RSTD1), layer_input(m, l),
		     m->lp[l].ln1, false));
	op_range_push(&m->ops, "attn");
	TRY(attn_fwd(m, l));
	op_range_pop(&m->ops);
	TRY(norm_fwd(m, m->plan[l].fwd[L_LN2], lb(m, l, A_XN2), lb(m, l, A_RSTD2), lb(m, l, A_XMID),
		     m->lp[l].ln2, false));
	op_range_push(&m->ops, "ffn");
	TRY(ffn_fwd(m, l));
	op_range_pop(&m->ops);
	op_range_pop(&m->ops);
	return MODEL_OK;
}

int model_forward(struct model *m)
{
	const struct model_config *c = &m->c;
	size_t n = rows(m), d = c->d_model, V = c->vocab;
	struct mem_block *x0 = tb(m, T_X0), *xf = tb(m, T_XF), *logits = tb(m, T_LOGITS);
	struct mem_block *last = lb(m, c->layers - 1, A_XOUT);

	/* fused: the copies outlive the step, and AdamW keeps them current */
	if (m->adt == ST_DT_BF16 && !(m->fused && m->wcast_valid)) {
		struct mem_block *w = tb(m, T_WCAST);
		size_t nw = m->n_params - m->cast_from;

		op_begin(&m->ops, m->top.cast);
		if (!w->ptr)    /* fused: held since an earlier step, whose weights are stale */
			TRY(get(m, w, nw * 2, m->fused ? ST_MEM_PARAMETER : m->saved_category));
		TRY(CUDA_CHECK(cast_f32_to_bf16(w->ptr, param(m, m->cast_from), (long long)nw,
						m->stream)));
		op_end(&m->ops);
		m->wcast_valid = m->fused;
	}
	op_begin(&m->ops, m->top.embedding);
	TRY(get(m, x0, n * d * sizeof(float), m->saved_category));
	TRY(CUDA_CHECK(embedding_forward(x0->ptr, param(m, m->off_emb), m->inputs.ptr, (int)n,
					 (int)d, m->stream)));
	op_end(&m->ops);

	for (int l = 0; l < c->layers; l++)
		TRY(layer_fwd(m, l));

	TRY(norm_fwd(m, m->top.ln_final, xf, tb(m, T_RSTDF), last, m->off_lnf, true));

	op_begin(&m->ops, m->top.lm_head);
	TRY(get(m, logits, n * V * m->adt_size, m->saved_category));
	TRY(linear_fwd(m, logits->ptr, xf->ptr, m->off_lm, (int)d, (int)V));
	drop(m, xf);
	if (!m->fused)
		drop(m, tb(m, T_WCAST));
	op_end(&m->ops);

	if (!m->have_targets) {
		drop(m, logits);
		return MODEL_OK;
	}
	struct mem_block *lse = tb(m, T_LSE), *loss = tb(m, T_LOSS);
	op_begin(&m->ops, m->top.loss);
	TRY(get(m, lse, 2 * n * sizeof(float), m->saved_category));
	TRY(get(m, loss, sizeof(float), ST_MEM_TEMPORARY));
	if (m->fused && c->mode != ST_MODE_FORWARD)   /* logits become their gradient */
		TRY(CUDA_CHECK(cross_entropy_fused(loss->ptr, lse->ptr, logits->ptr, m->targets.ptr,
						   (int)n, (int)V, m->adt, m->stream)));
	else
		TRY(CUDA_CHECK(cross_entropy_forward(loss->ptr, lse->ptr, logits->ptr,
						     m->targets.ptr, (int)n, (int)V, m->adt,
						     m->stream)));
	TRY(CUDA_CHECK(cudaMemcpyAsync(m->loss_host, loss->ptr, sizeof(float),
				       cudaMemcpyDeviceToHost, m->stream)));
	put(m, loss);
	drop(m, logits);
	drop(m, lse);
	op_end(&m->ops);
	return MODEL_OK;
}

/* ---- Backward ---- */

/*
 * Every gradient that the backward adds into with atomics to zero, in one
 * launch: each RMSNorm gain's and the embedding's. param_layout puts each
 * layer's parameters the same distance apart, so ln1 and ln2 are one strided
 * group each.
 */
static int zero_norm_grads(struct model *m)
{
	const struct model_config *c = &m->c;
	long long stride = c->layers > 1 ? (long long)(m->lp[1].ln1 - m->lp[0].ln1) : 0;
	const struct zero_group groups[4] = {
		{ (long long)m->lp[0].ln1, stride, c->layers, c->d_model },
		{ (long long)m->lp[0].ln2, stride, c->layers, c->d_model },
		{ (long long)m->off_lnf, 0, 1, c->d_model },
		{ (long long)m->off_emb, 0, 1, (int)((long long)c->vocab * c->d_model) },
	};

	if ((long long)c->vocab * c->d_model > INT_MAX) {
		error("an embedding of %d x %d is too large to zero in one range", c->vocab,
			 c->d_model);
		return MODEL_ERROR;
	}
	op_begin(&m->ops, m->top.zero_grad);
	TRY(CUDA_CHECK(zero_groups(m->grads.ptr, groups, 4, m->stream)));
	op_end(&m->ops);
	return MODEL_OK;
}

/*
 * dres (+)= rmsnorm backward of dxn; the gain's gradient added to the zeroed
 * one. Under BF16, where a branch's backward reads dres next (to_branch), its
 * BF16 rounding is written alongside (T_DY), for that branch's matmuls.
 */
static int norm_bwd(struct model *m, uint32_t op, struct mem_block *x, struct mem_block *rstd,
		    size_t g, bool first, bool to_branch)
{
	size_t n = rows(m), d = m->c.d_model;
	struct mem_block *dres = tb(m, T_DRES), *dxn = tb(m, T_DXN), *dy = tb(m, T_DY);
	bool cast = to_branch && m->adt == ST_DT_BF16;

	op_begin(&m->ops, op);
	if (first)
		TRY(get(m, dres, n * d * sizeof(float), ST_MEM_TEMPORARY));
	if (cast)
		TRY(get(m, dy, n * d * 2, ST_MEM_TEMPORARY));
	TRY(CUDA_CHECK(rmsnorm_backward(dres->ptr, cast ? dy->ptr : NULL, grad(m, g), dxn->ptr,
					x->ptr, param(m, g), rstd->ptr, (int)n, (int)d, !first,
					m->stream)));
	put(m, dxn);
	put(m, rstd);
	put(m, x);
	op_end(&m->ops);
	return grads_final(m, g);
}

/*
 * The gradient a branch output sees: the residual stream's own (F32), or
 * under BF16 its rounding, which the norm backward before wrote (T_DY).
 */
static const void *branch_grad(struct model *m)
{
	return m->adt == ST_DT_BF16 ? tb(m, T_DY)->ptr : tb(m, T_DRES)->ptr;
}

static int ffn_bwd(struct model *m, int l)
{
	const uint32_t *op = m->plan[l].bwd;
	const struct layer_params *lp = &m->lp[l];
	size_t n = rows(m), d = m->c.d_model, f = m->c.d_ff, a = m->adt_size;
	struct mem_block *xn = lb(m, l, A_XN2), *h13 = lb(m, l, A_H13), *g = lb(m, l, A_G);
	struct mem_block *dg = tb(m, T_DG), *dh13 = tb(m, T_DH13), *dxn = tb(m, T_DXN);
	const void *dy = branch_grad(m);

	op_begin(&m->ops, op[L_W2]);
	TRY(linear_bwd_weight(m, lp->w2, dy, g->ptr, (int)f, (int)d));
	TRY(get(m, dg, n * f * a, ST_MEM_TEMPORARY));
	TRY(linear_bwd_data(m, dg->ptr, m->adt, dy, lp->w2, (int)f, (int)d, false));
	put(m, g);
	put(m, tb(m, T_DY));
	op_end(&m->ops);
	TRY(grads_final(m, lp->w2));

	op_begin(&m->ops, op[L_SWIGLU]);
	TRY(get(m, dh13, n * 2 * f * a, ST_MEM_TEMPORARY));
	TRY(CUDA_CHECK(swiglu_backward(dh13->ptr, dg->ptr, h13->ptr, (long long)n, (int)f, m->adt,
				       m->stream)));
	put(m, dg);
	put(m, h13);
	op_end(&m->ops);

	/* [dW1; dW3] = dh13^T xn and dxn = dh13 [W1; W3]: K = 2f sums both branches */
	op_begin(&m->ops, op[L_W13]);
	TRY(linear_bwd_weight(m, lp->w1, dh13->ptr, xn->ptr, (int)d, (int)(2 * f)));
	TRY(get(m, dxn, n * d * sizeof(float), ST_MEM_TEMPORARY));
	TRY(linear_bwd_data(m, dxn->ptr, ST_DT_F32, dh13->ptr, lp->w1, (int)d, (int)(2 * f),
			    false));
	put(m, dh13);
	put(m, xn);
	op_end(&m->ops);
	return grads_final(m, lp->w1);   /* w1 and w3 */
}

/*
 * dq, dk, dv (head-major, T_DQH, T_DKH, T_DVH) from datt: the naive path's
 * products and softmax backward over a (T, T) dp.
 */
static int naive_bwd(struct model *m, int l, struct mem_block *datt)
{
	const struct model_config *c = &m->c;
	const uint32_t *op = m->plan[l].bwd;
	int B = c->batch, T = c->ctx, H = c->heads, dh = m->dh;
	size_t n = rows(m), d = c->d_model, a = m->adt_size;
	size_t bhtt = (size_t)B * H * T * T;
	struct mem_block *qh = lb(m, l, A_Q), *kh = lb(m, l, A_K), *vh = lb(m, l, A_V);
	struct mem_block *p = lb(m, l, A_P), *datth = tb(m, T_DATTH), *dp = tb(m, T_DP);
	struct mem_block *dqkvh[3] = { tb(m, T_DQH), tb(m, T_DKH), tb(m, T_DVH) };

	op_begin(&m->ops, op[L_AV]);
	TRY(get(m, datth, n * d * a, ST_MEM_TEMPORARY));
	TRY(CUDA_CHECK(heads_permute(datth->ptr, datt->ptr, B, T, H, dh, 1, m->adt, m->stream)));
	put(m, datt);
	TRY(get(m, dp, bhtt * a, ST_MEM_TEMPORARY));
	TRY(attn_gemm(m, DP_DOV, dp->ptr, datth->ptr, vh->ptr));
	TRY(get(m, dqkvh[2], n * d * a, ST_MEM_TEMPORARY));
	TRY(attn_gemm(m, DV_PDO, dqkvh[2]->ptr, p->ptr, datth->ptr));
	put(m, datth);
	put(m, vh);
	op_end(&m->ops);

	op_begin(&m->ops, op[L_SOFTMAX]);
	TRY(CUDA_CHECK(causal_softmax_backward(dp->ptr, dp->ptr, p->ptr, B * H, T, attn_scale(m),
					       m->adt, m->stream)));
	put(m, p);
	op_end(&m->ops);

	op_begin(&m->ops, op[L_SCORES]);
	TRY(get(m, dqkvh[0], n * d * a, ST_MEM_TEMPORARY));
	TRY(attn_gemm(m, DQ_DSK, dqkvh[0]->ptr, dp->ptr, kh->ptr));
	TRY(get(m, dqkvh[1], n * d * a, ST_MEM_TEMPORARY));
	TRY(attn_gemm(m, DK_DSQ, dqkvh[1]->ptr, dp->ptr, qh->ptr));
	put(m, dp);
	put(m, qh);
	put(m, kh);
	op_end(&m->ops);
	return MODEL_OK;
}

/*
 * The same by FlashAttention-2's backward, which recomputes the
 * probabilities tile by tile from q, k and the saved log-sum-exp.
 */
static int flash_bwd(struct model *m, int l, struct mem_block *datt)
{
	const struct model_config *c = &m->c;
	int B = c->batch, T = c->ctx, H = c->heads, dh = m->dh;
	size_t n = rows(m), d = c->d_model, a = m->adt_size;
	struct mem_block *qh = lb(m, l, A_Q), *kh = lb(m, l, A_K), *vh = lb(m, l, A_V);
	struct mem_block *o = lb(m, l, A_O), *lse = lb(m, l, A_LSE), *datth = tb(m, T_DATTH);
	struct mem_block *ws = tb(m, T_FLASH_WS);
	struct mem_block *dqkvh[3] = { tb(m, T_DQH), tb(m, T_DKH), tb(m, T_DVH) };

	op_begin(&m->ops, m->plan[l].bwd[L_FLASH]);
	TRY(get(m, datth, n * d * a, ST_MEM_TEMPORARY));
	TRY(CUDA_CHECK(heads_permute(datth->ptr, datt->ptr, B, T, H, dh, 1, m->adt, m->stream)));
	put(m, datt);
	TRY(get(m, ws, flash_attention_backward_workspace(B * H, T, dh), ST_MEM_WORKSPACE));
	for (int j = 0; j < 3; j++)
		TRY(get(m, dqkvh[j], n * d * a, ST_MEM_TEMPORARY));
	TRY(CUDA_CHECK(flash_attention_backward(dqkvh[0]->ptr, dqkvh[1]->ptr, dqkvh[2]->ptr,
						datth->ptr, qh->ptr, kh->ptr, vh->ptr, o->ptr,
						lse->ptr, ws->ptr, B * H, T, dh, attn_scale(m),
						true, m->adt, m->stream)));
	put(m, ws);
	put(m, datth);
	put(m, o);
	put(m, lse);
	put(m, qh);
	put(m, kh);
	put(m, vh);
	op_end(&m->ops);
	return MODEL_OK;
}

static int attn_bwd(struct model *m, int l)
{
	const struct model_config *c = &m->c;
	const uint32_t *op = m->plan[l].bwd;
	const struct layer_params *lp = &m->lp[l];
	int B = c->batch, T = c->ctx, H = c->heads, dh = m->dh;
	size_t n = rows(m), d = c->d_model, a = m->adt_size;
	struct mem_block *xn = lb(m, l, A_XN1), *att = lb(m, l, A_ATT), *datt = tb(m, T_DATT);
	struct mem_block *dxn = tb(m, T_DXN), *dqkv = tb(m, T_DQKV);
	struct mem_block *dqkvh[3] = { tb(m, T_DQH), tb(m, T_DKH), tb(m, T_DVH) };
	const void *dy = branch_grad(m);

	op_begin(&m->ops, op[L_O]);
	TRY(linear_bwd_weight(m, lp->proj[3], dy, att->ptr, (int)d, (int)d));
	TRY(get(m, datt, n * d * a, ST_MEM_TEMPORARY));
	TRY(linear_bwd_data(m, datt->ptr, m->adt, dy, lp->proj[3], (int)d, (int)d, false));
	put(m, att);
	put(m, tb(m, T_DY));
	op_end(&m->ops);
	TRY(grads_final(m, lp->proj[3]));

	if (c->attention == ST_ATTN_FLASH)
		TRY(flash_bwd(m, l, datt));
	else
		TRY(naive_bwd(m, l, datt));

	/* back to (B, T, H, dh), into the rows [dq | dk | dv] of one buffer for the projection */
	op_begin(&m->ops, op[L_ROPE]);
	TRY(get(m, dqkv, n * 3 * d * a, ST_MEM_TEMPORARY));
	TRY(CUDA_CHECK(rope_from_heads(dqkv->ptr, at(m, dqkv, d), at(m, dqkv, 2 * d), dqkvh[0]->ptr,
				       dqkvh[1]->ptr, dqkvh[2]->ptr, (long long)(3 * d),
				       m->rope.ptr, B, T, H, dh, m->adt, m->stream)));
	for (int j = 0; j < 3; j++)
		put(m, dqkvh[j]);
	op_end(&m->ops);

	/* [dWq; dWk; dWv] = dqkv^T xn and dxn = dqkv [Wq; Wk; Wv]: K = 3d sums q, k and v */
	op_begin(&m->ops, op[L_QKV]);
	TRY(linear_bwd_weight(m, lp->proj[0], dqkv->ptr, xn->ptr, (int)d, (int)(3 * d)));
	TRY(get(m, dxn, n * d * sizeof(float), ST_MEM_TEMPORARY));
	TRY(linear_bwd_data(m, dxn->ptr, ST_DT_F32, dqkv->ptr, lp->proj[0], (int)d, (int)(3 * d),
			    false));
	put(m, dqkv);
	put(m, xn);
	if (l == 0 && !m->fused)
		put(m, tb(m, T_WCAST));   /* the last matmul that reads a weight copy */
	op_end(&m->ops);
	return grads_final(m, lp->proj[0]);   /* q, k and v */
}

static int layer_bwd(struct model *m, int l)
{
	op_range_push(&m->ops, m->layer_name[l]);
	op_range_push(&m->ops, "ffn");
	TRY(ffn_bwd(m, l));
	op_range_pop(&m->ops);
	TRY(norm_bwd(m, m->plan[l].bwd[L_LN2], lb(m, l, A_XMID), lb(m, l, A_RSTD2), m->lp[l].ln2,
		     false, true));
	op_range_push(&m->ops, "attn");
	TRY(attn_bwd(m, l));
	op_range_pop(&m->ops);
	/*
	 * layer 0's input (the embedding output) is not needed after this either,
	 * and its dres goes to the embedding's backward, not to a branch
	 */
	TRY(norm_bwd(m, m->plan[l].bwd[L_LN1], layer_input(m, l), lb(m, l, A_RSTD1), m->lp[l].ln1,
		     false, l > 0));
	op_range_pop(&m->ops);
	return MODEL_OK;
}

int model_backward(struct model *m)
{
	const struct model_config *c = &m->c;
	size_t n = rows(m), d = c->d_model, V = c->vocab;
	struct mem_block *logits = tb(m, T_LOGITS), *lse = tb(m, T_LSE), *dlogits = tb(m, T_DLOGITS);
	struct mem_block *xf = tb(m, T_XF), *dxn = tb(m, T_DXN), *dres = tb(m, T_DRES);

	if (!m->have_targets)
		return error("a backward needs targets: call model_set_batch with targets first");

	TRY(zero_norm_grads(m));

	if (m->fused) {   /* the forward's loss left the gradient in the logits' block */
		put(m, lse);
		dlogits = logits;
	} else {
		op_begin(&m->ops, m->top.loss_bwd);
		TRY(get(m, dlogits, n * V * m->adt_size, ST_MEM_TEMPORARY));
		TRY(CUDA_CHECK(cross_entropy_backward(dlogits->ptr, logits->ptr, lse->ptr,
						      m->targets.ptr, (int)n, (int)V, m->adt,
						      m->stream)));
		put(m, logits);
		put(m, lse);
		op_end(&m->ops);
	}

	op_begin(&m->ops, m->top.lm_head_bwd);
	TRY(linear_bwd_weight(m, m->off_lm, dlogits->ptr, xf->ptr, (int)d, (int)V));
	TRY(get(m, dxn, n * d * sizeof(float), ST_MEM_TEMPORARY));
	TRY(linear_bwd_data(m, dxn->ptr, ST_DT_F32, dlogits->ptr, m->off_lm, (int)d, (int)V, false));
	put(m, dlogits);
	put(m, xf);
	op_end(&m->ops);
	TRY(grads_final(m, m->off_lm));

	TRY(norm_bwd(m, m->top.ln_final_bwd, lb(m, c->layers - 1, A_XOUT), tb(m, T_RSTDF), m->off_lnf,
		     true, true));
	for (int l = c->layers - 1; l >= 0; l--)
		TRY(layer_bwd(m, l));

	op_begin(&m->ops, m->top.embedding_bwd);   /* its gradient was zeroed by zero_grad */
	TRY(CUDA_CHECK(embedding_backward(grad(m, m->off_emb), dres->ptr, m->inputs.ptr, (int)n,
					  (int)d, m->stream)));
	put(m, dres);
	op_end(&m->ops);
	return grads_final(m, m->off_emb);
}

/* ---- Optimizer ---- */

void model_optimizer_prepare(struct model *m)
{
	const struct model_config *c = &m->c;
	int t = ++m->adam_t;
	double alpha = c->lr * sqrt(1.0 - pow(c->beta2, t)) / (1.0 - pow(c->beta1, t));

	m->hyper_host[0] = (float)alpha;
	m->hyper_host[1] = (float)(c->lr * c->weight_decay);
}

/* AdamW over parameters [lo, hi), averaging the ranks' gradients where avg has them. */
static int adamw_range(struct model *m, size_t lo, size_t hi, const float *const *avg, int n_avg)
{
	const struct model_config *c = &m->c;
	const float *in[ADAMW_AVG_MAX];
	float *p = (float *)m->params.ptr + lo, *g = (float *)m->grads.ptr + lo;
	float *am = (float *)m->adam_m.ptr + lo, *av = (float *)m->adam_v.ptr + lo;

	if (hi <= lo)
		return MODEL_OK;
	for (int j = 0; j < n_avg; j++)
		in[j] = avg[j] + lo;
	if (m->fused) {
		/* copy[i - from] for range element i >= from: parameter lo + i's BF16 copy */
		char *w = (char *)tb(m, T_WCAST)->ptr;
		size_t from = lo < m->cast_from ? m->cast_from - lo : 0;

		if (hi > m->cast_from)
			w += 2 * (lo > m->cast_from ? lo - m->cast_from : 0);
		else
			w = NULL;
		TRY(CUDA_CHECK(adamw_update_copy(p, g, am, av, (long long)(hi - lo), c->beta1, c->beta2,
						 (float)c->eps, m->hyper.ptr, w, (long long)from, in, n_avg,
						 m->stream)));
		return MODEL_OK;
	}
	TRY(CUDA_CHECK(adamw_update(p, g, am, av, (long long)(hi - lo), c->beta1, c->beta2, (float)c->eps,
				    m->hyper_host[0], m->hyper_host[1], in, n_avg, m->stream)));
	return MODEL_OK;
}

int model_optimizer(struct model *m)
{
	const float *avg[ADAMW_AVG_MAX];
	int n_avg = ddp_grad_sources(m, avg);   /* --allreduce-by exchange: the ranks' gradients */
	size_t n = m->n_params, lo = 0, hi = 0;

	model_optimizer_prepare(m);
	op_begin(&m->ops, m->top.adamw);
	/* a copy in the graph, so each replay reads that step's scalars */
	if (m->fused)
		TRY(CUDA_CHECK(cudaMemcpyAsync(m->hyper.ptr, m->hyper_host, 2 * sizeof(float),
					       cudaMemcpyHostToDevice, m->stream)));
	if (ddp_optimizer_split(m, &lo, &hi)) {
		/* the last collective's copies are still on their way: its parameters last */
		TRY(adamw_range(m, 0, lo, avg, n_avg));
		TRY(adamw_range(m, hi, n, avg, n_avg));
		TRY(ddp_wait_last(m));
		TRY(adamw_range(m, lo, hi, avg, n_avg));
	} else {
		TRY(adamw_range(m, 0, n, avg, n_avg));
	}
	op_end(&m->ops);
	return MODEL_OK;
}
