/*
 * plan.c: the op table of the step. Every op gets its NVTX path, analytic
 * FLOPs and minimum bytes, and the dtypes it reads and writes under the
 * configured precision, in the order the step runs them; the observer sees
 * each one once, before the first step.
 */
#include <stdio.h>
#include <stdlib.h>

#include "lib/error.h"
#include "model/attention_sweep.h"
#include "model/internal.h"
#include "trace/types.h"

static const struct {
	const char *name, *group;   /* group: NVTX range between layer.N and the op, or NULL */
} layer_op_names[L_COUNT] = {
	[L_LN1] = { "ln1", NULL },          [L_QKV] = { "qkv_proj", "attn" },
	[L_ROPE] = { "rope", "attn" },      [L_SCORES] = { "scores", "attn" },
	[L_SOFTMAX] = { "softmax", "attn" },[L_AV] = { "av", "attn" },
	[L_FLASH] = { "flash", "attn" },
	[L_O] = { "output_proj", "attn" },  [L_RES1] = { "residual", "attn" },
	[L_LN2] = { "ln2", NULL },          [L_W13] = { "w1w3", "ffn" },
	[L_SWIGLU] = { "swiglu", "ffn" },   [L_W2] = { "w2", "ffn" },
	[L_RES2] = { "residual", "ffn" },
};

struct cost {
	uint64_t flops, bytes;
	int n_in, n_out;
	uint8_t in[MODEL_OP_MAX_INPUTS], out[MODEL_OP_MAX_OUTPUTS];
};

static void dtypes(struct cost *k, int n_in, const int *in, int n_out, const int *out)
{
	k->n_in = n_in;
	k->n_out = n_out;
	for (int i = 0; i < n_in; i++)
		k->in[i] = (uint8_t)in[i];
	for (int i = 0; i < n_out; i++)
		k->out[i] = (uint8_t)out[i];
}
#define DT(k, IN, OUT)                                                                   \
	do {                                                                             \
		const int in_[] = IN, out_[] = OUT;                                      \
		dtypes((k), sizeof(in_) / sizeof(int), in_, sizeof(out_) / sizeof(int), out_); \
	} while (0)
#define L(...) { __VA_ARGS__ }

/* A Linear y (n, out) = x (n, in) W^T; backward: dX (in dx_dtype) and dW (F32). */
static void linear_cost(const struct model *m, struct cost *k, bool backward, uint64_t in,
			uint64_t out, enum st_dtype dx_dtype)
{
	uint64_t n = (uint64_t)m->c.batch * m->c.ctx, a = m->adt_size;
	int A = m->adt, F = ST_DT_F32;

	if (!backward) {
		k->flops = 2 * n * in * out;
		k->bytes = (n * in + in * out + n * out) * a;
		DT(k, L(A, A), L(A));
	} else {
		k->flops = 4 * n * in * out;
		k->bytes = (n * out + n * in + in * out) * a +
			   n * in * (dx_dtype == ST_DT_F32 ? 4 : a) + in * out * 4;
		DT(k, L(A, A, A), L(dx_dtype, F));
	}
}

/*
 * A forward Linear with the residual add folded in (fused): out (n, d) F32
 * = x F32 + y, y never stored: the add's FLOPs, x read and out written in
 * F32 instead of y written in adt.
 */
static void residual_fold(const struct model *m, struct cost *k)
{
	uint64_t n = (uint64_t)m->c.batch * m->c.ctx, d = m->c.d_model;
	int A = m->adt, F = ST_DT_F32;

	k->flops += n * d;
	k->bytes += n * d * (8 - m->adt_size);
	DT(k, L(A, A, F), L(F));
}

/*
 * An RMSNorm. The backward writes dx and dg, and with cast dx's BF16
 * rounding too, for the BF16 branch whose matmuls read it next.
 */
static void norm_cost(const struct model *m, struct cost *k, bool backward, bool cast)
{
	uint64_t n = (uint64_t)m->c.batch * m->c.ctx, d = m->c.d_model, a = m->adt_size;
	int A = m->adt, F = ST_DT_F32, B16 = ST_DT_BF16;

	if (!backward) {
		k->flops = 4 * n * d;
		k->bytes = n * d * 4 + d * 4 + n * d * a + n * 4;
		DT(k, L(F, F), L(A, F));
		return;
	}
	k->flops = 8 * n * d;
	k->bytes = 4 * n * d * 4 + d * 4 + n * 4 + (cast ? n * d * 2 : 0);
	if (cast)
		DT(k, L(F, F, F, F), L(F, F, B16));
	else
		DT(k, L(F, F, F, F), L(F, F));
}

/* One of attention's parts at the model's shape: B * H causal heads of (ctx, d_head). */
static void attn_cost(const struct model *m, struct cost *k, enum attn_part part, bool bwd)
{
	struct attn_shape s = { .bh = (uint64_t)m->c.batch * m->c.heads, .t = (uint64_t)m->c.ctx,
				.d = (uint64_t)m->dh, .a = m->adt_size, .causal = true };
	struct attn_cost c = attn_part_cost(&s, part, bwd);

	k->flops = c.flops;
	k->bytes = c.bytes;
}

/* Does op run under the configured attention? */
static bool layer_op_runs(const struct model *m, enum layer_op op)
{
	bool flash = m->c.attention == ST_ATTN_FLASH;

	if (op == L_FLASH)
		return flash;
	if (m->fused && (op == L_RES1 || op == L_RES2))   /* folded into L_O and L_W2 */
		return false;
	return !(flash && (op == L_SCORES || op == L_SOFTMAX || op == L_AV));
}

static void layer_cost(const struct model *m, int l, enum layer_op op, bool bwd, struct cost *k)
{
	uint64_t n = (uint64_t)m->c.batch * m->c.ctx, d = m->c.d_model, f = m->c.d_ff;
	uint64_t a = m->adt_size;
	int A = m->adt, F = ST_DT_F32;

	k->flops = k->bytes = 0;
	switch (op) {
	case L_LN1:         /* layer 0's ln1 backward feeds the embedding's, not a branch */
	case L_LN2:
		norm_cost(m, k, bwd, m->adt == ST_DT_BF16 && (op == L_LN2 || l > 0));
		break;
	case L_QKV:         /* q, k, v as one Linear (n, d) -> (n, 3d) */
		linear_cost(m, k, bwd, d, 3 * d, F);
		break;
	case L_O:
		linear_cost(m, k, bwd, d, d, A);
		if (m->fused && !bwd)
			residual_fold(m, k);
		break;
	case L_W13:         /* w1 and w3 as one Linear (n, d) -> (n, 2f) */
		linear_cost(m, k, bwd, d, 2 * f, F);
		break;
	case L_W2:
		linear_cost(m, k, bwd, f, d, A);
		if (m->fused && !bwd)
			residual_fold(m, k);
		break;
	case L_ROPE:        /* q, k rotated and v copied, between token- and head-major */
		k->flops = 6 * n * d;
		k->bytes = 6 * n * d * a;
		DT(k, L(A, A, A), L(A, A, A));
		break;
	/*
	 * Attention's parts (model/attention_sweep.c has the formulas). av also
	 * moves out (forward) or dout (backward) between head-major and
	 * token-major, and flash moves o and dout the same way: another 2 n d a
	 * bytes each, not counted: a layout choice, not the minimum.
	 */
	case L_SCORES:      /* s = q k^T; backward dq = ds k, dk = ds^T q */
	case L_AV:          /* out = p v; backward dp = dout v^T, dv = p^T dout */
		attn_cost(m, k, op == L_SCORES ? ATTN_SCORES : ATTN_AV, bwd);
		if (bwd)
			DT(k, L(A, A, A), L(A, A));
		else
			DT(k, L(A, A), L(A));
		break;
	case L_SOFTMAX:
		attn_cost(m, k, ATTN_SOFTMAX, bwd);
		if (bwd)
			DT(k, L(A, A), L(A));
		else
			DT(k, L(A), L(A));
		break;
	case L_FLASH:       /* o, lse from q, k, v; backward dq, dk, dv from dout, q, k, v, o, lse */
		attn_cost(m, k, ATTN_FLASH, bwd);
		if (bwd)
			DT(k, L(A, A, A, A, A, F), L(A, A, A));
		else
			DT(k, L(A, A, A), L(A, F));
		break;
	case L_RES1:
	case L_RES2:        /* forward only: no backward op (model_plan) */
		k->flops = n * d;
		k->bytes = n * d * (8 + a);
		DT(k, L(F, A), L(F));
		break;
	case L_SWIGLU:
		k->flops = (bwd ? 10 : 5) * n * f;
		k->bytes = (bwd ? 5 : 3) * n * f * a;
		if (bwd)
			DT(k, L(A, A, A), L(A, A));
		else
			DT(k, L(A, A), L(A));
		break;
	case L_COUNT:
		break;
	}
}

static uint32_t reg(struct model *m, const char *path, const char *phase, const struct cost *k)
{
	return op_registry_add(&m->ops, path, phase, k->flops, k->bytes, k->n_in, k->in, k->n_out,
			       k->out);
}

static int reg_layer(struct model *m, int l, enum layer_op op, bool bwd)
{
	const char *phase = bwd ? "backward" : "forward";
	char path[160];
	struct cost k;

	layer_cost(m, l, op, bwd, &k);
	if (layer_op_names[op].group)
		snprintf(path, sizeof(path), "step/%s/layer.%d/%s/%s", phase, l,
			 layer_op_names[op].group, layer_op_names[op].name);
	else
		snprintf(path, sizeof(path), "step/%s/layer.%d/%s", phase, l, layer_op_names[op].name);
	uint32_t id = reg(m, path, phase, &k);
	if (bwd)
		m->plan[l].bwd[op] = id;
	else
		m->plan[l].fwd[op] = id;
	return id ? 0 : -1;
}

int model_plan(struct model *m)
{
	const struct model_config *c = &m->c;
	uint64_t n = (uint64_t)c->batch * c->ctx, d = c->d_model, V = c->vocab, a = m->adt_size;
	int A = m->adt, F = ST_DT_F32, I = ST_DT_I32, B16 = ST_DT_BF16;
	bool bf16 = m->adt == ST_DT_BF16, train = c->mode != ST_MODE_FORWARD;
	struct cost k;

	m->plan = calloc(c->layers, sizeof(*m->plan));
	m->layer_name = calloc(c->layers, sizeof(*m->layer_name));
	if (!m->plan || !m->layer_name)
		return error("out of host memory for the op plan");
	for (int l = 0; l < c->layers; l++)
		snprintf(m->layer_name[l], sizeof(m->layer_name[l]), "layer.%d", l);

#define REG(field, path, phase) do { if (!(m->top.field = reg(m, path, phase, &k))) return -1; } while (0)
	if (bf16) {
		uint64_t nw = m->n_params - m->cast_from;
		k = (struct cost){ .flops = 0, .bytes = nw * 6 };
		DT(&k, L(F), L(B16));
		REG(cast, "step/forward/cast_weights", "forward");
	}
	k = (struct cost){ .flops = 0, .bytes = n * 4 + 2 * n * d * 4 };
	DT(&k, L(I, F), L(F));
	REG(embedding, "step/forward/embedding", "forward");
	for (int l = 0; l < c->layers; l++)
		for (int op = 0; op < L_COUNT; op++)
			if (layer_op_runs(m, op) && reg_layer(m, l, op, false))
				return -1;
	norm_cost(m, &k, false, false);
	REG(ln_final, "step/forward/ln_final", "forward");
	linear_cost(m, &k, false, d, V, F);
	REG(lm_head, "step/forward/lm_head", "forward");
	k = (struct cost){ .flops = 3 * n * V, .bytes = n * V * a + n * 16 };
	DT(&k, L(A, I), L(F));
	if (m->fused && train) {   /* and the backward's gradient, written over the logits */
		k.flops += 3 * n * V;
		k.bytes += n * V * a + n * 4;
		DT(&k, L(A, I), L(F, A));
	}
	REG(loss, "step/forward/cross_entropy", "forward");
	if (!train)
		return 0;

	/* the gradients accumulated with atomics: every RMSNorm gain's (2 per layer and
	 * ln_final's) and the embedding's */
	k = (struct cost){ .flops = 0, .bytes = ((2 * (uint64_t)c->layers + 1) * d + V * d) * 4 };
	dtypes(&k, 0, NULL, 1, (const int[]){ F });
	REG(zero_grad, "step/backward/zero_grad", "backward");
	if (!m->fused) {   /* fused: inside the forward's */
		k = (struct cost){ .flops = 3 * n * V, .bytes = 2 * n * V * a + n * 8 };
		DT(&k, L(A, F, I), L(A));
		REG(loss_bwd, "step/backward/cross_entropy", "backward");
	}
	linear_cost(m, &k, true, d, V, F);
	REG(lm_head_bwd, "step/backward/lm_head", "backward");
	norm_cost(m, &k, true, bf16);
	REG(ln_final_bwd, "step/backward/ln_final", "backward");
	for (int l = c->layers - 1; l >= 0; l--)
		for (int op = L_COUNT - 1; op >= 0; op--) {
			/*
			 * the backward of a residual add is the identity; under BF16 the
			 * norm backward before a branch writes its gradient's BF16 copy
			 */
			if (op == L_RES1 || op == L_RES2 || !layer_op_runs(m, op))
				continue;
			if (reg_layer(m, l, op, true))
				return -1;
		}
	/* its gradient was zeroed by zero_grad, whose bytes count that */
	k = (struct cost){ .flops = n * d, .bytes = 2 * n * d * 4 + n * 4 };
	DT(&k, L(F, I), L(F));
	REG(embedding_bwd, "step/backward/embedding", "backward");
	if (c->mode == ST_MODE_TRAIN) {
		k = (struct cost){ .flops = 15 * (uint64_t)m->n_params, .bytes = 28 * (uint64_t)m->n_params };
		DT(&k, L(F, F, F, F), L(F, F, F));
		if (m->fused && bf16) {   /* and the next step's weight copies, for cast_weights */
			k.bytes += 2 * (uint64_t)(m->n_params - m->cast_from);
			DT(&k, L(F, F, F, F), L(F, F, F, B16));
		}
		REG(adamw, "step/optimizer/adamw", "optimizer");
	}
#undef REG
	return 0;
}
