/*
 * category.c: classifying GPU work by words. The op's kind ("attn/softmax",
 * "ffn/w1") is the better witness since the model names it; kernel names
 * decide when there is no op or its kind says nothing. Rules are ordered:
 * the first that matches wins (fused attention before softmax before GEMM,
 * so "flash_fwd" is attention and "cutlass_gemm" is a GEMM).
 */
#include "analyze/category.h"

#include "lib/error.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

const char *category_name(enum kernel_category c)
{
	static const char *const names[CAT_COUNT] = {
		"GEMM", "elementwise", "reduction/norm", "softmax", "attention",
		"optimizer", "memcpy/memset", "other", "communication",
	};
	return (unsigned)c < CAT_COUNT ? names[c] : "other";
}

struct rule {
	enum kernel_category cat;
	const char *const *words;
};

static bool has_word(const char *lower, const char *const *words)
{
	for (; *words; words++)
		if (strstr(lower, *words))
			return true;
	return false;
}

static void lowercase(char *dst, size_t len, const char *src)
{
	size_t i = 0;

	for (; src[i] && i + 1 < len; i++)
		dst[i] = (char)tolower((unsigned char)src[i]);
	dst[i] = '\0';
}

static enum kernel_category classify(const char *text, const struct rule *rules)
{
	char lower[512];

	lowercase(lower, sizeof(lower), text);
	for (; rules->words; rules++)
		if (has_word(lower, rules->words))
			return rules->cat;
	return CAT_OTHER;
}

static const char *const w_comm[] = { "nccl", NULL };
static const char *const w_attention[] = { "flash", "fmha", "attention", "sdpa", "mha_", NULL };
static const char *const w_softmax[] = { "softmax", NULL };
/* not "lamb": every PyTorch kernel built from a lambda would be an optimizer's */
static const char *const w_optimizer[] = { "adam", "optimizer", "sgd", "lamb_", "_lamb", NULL };
static const char *const w_gemm_kernel[] = {
	"gemm", "xmma", "cutlass", "nvjet", "sm90_", "sm80_", "sm89_", "sm100_", "ampere_",
	"hopper_", "volta_", "turing_", "cublas", "matmul", "gemv", "wgmma", "hmma", NULL,
};
static const char *const w_reduction[] = {
	"norm", "reduce", "reduction", "cross_entropy", "crossentropy", "nll", "loss", "sum", "mean",
	NULL,
};
static const char *const w_elementwise[] = {
	"elementwise", "vectorized", "add", "mul", "cast", "copy", "silu", "swiglu", "gelu", "relu",
	"rope", "fill", "embedding", "residual", "scale", "mask", "zero", "convert", "unrolled",
	"permute", "transpose", NULL,
};
/*
 * op kinds name the projections: "attn/q_proj", "ffn/w1", "lm_head", "attn/scores";
 * PyTorch's ops (an imported trace's) the products: "aten::mm", "aten::addmm"
 */
static const char *const w_gemm_op[] = {
	"proj", "matmul", "gemm", "linear", "lm_head", "/w1", "/w2", "/w3", "scores", "qk", "/av",
	"/pv", "bmm", "::mm", "addmm", NULL,
};

static const struct rule kernel_rules[] = {
	{ CAT_COMM, w_comm },
	{ CAT_ATTENTION, w_attention },
	{ CAT_SOFTMAX, w_softmax },
	{ CAT_GEMM, w_gemm_kernel },
	{ CAT_OPTIMIZER, w_optimizer },
	{ CAT_REDUCTION, w_reduction },
	{ CAT_ELEMENTWISE, w_elementwise },
	{ CAT_OTHER, NULL },
};

static const struct rule op_rules[] = {
	{ CAT_ATTENTION, w_attention },
	{ CAT_SOFTMAX, w_softmax },
	{ CAT_OPTIMIZER, w_optimizer },
	{ CAT_GEMM, w_gemm_op },
	{ CAT_REDUCTION, w_reduction },
	{ CAT_ELEMENTWISE, w_elementwise },
	{ CAT_OTHER, NULL },
};

enum kernel_category category_from_op(const char *kind, const char *phase)
{
	char buf[512];

	if (st_phase_from_name(phase) == ST_PHASE_OPTIMIZER)
		return CAT_OPTIMIZER;
	if (phase && strcmp(phase, ST_OP_PHASE_COMM) == 0)
		return CAT_COMM;
	/* a leading '/' lets "/w1" match "w1" at the start of the kind too */
	buf[0] = '/';
	lowercase(buf + 1, sizeof(buf) - 1, kind ? kind : "");
	return classify(buf, op_rules);
}

enum kernel_category category_from_kernel_name(const char *name)
{
	return classify(name ? name : "", kernel_rules);
}

enum kernel_category category_pick(enum kernel_category by_op, enum kernel_category by_name)
{
	/* NCCL's kernels are communication whatever module's op launched them */
	if (by_op == CAT_OTHER || by_name == CAT_COMM)
		return by_name;
	if (by_op == CAT_GEMM && by_name != CAT_GEMM && by_name != CAT_OTHER)
		return by_name;
	return by_op;
}

int category_cache_init(struct category_cache *cc, const struct replay *rp)
{
	cc->rp = rp;
	cc->by_op = malloc(rp->n_ops + 1);
	cc->by_name = malloc(rp->n_strings + 1);
	if (!cc->by_op || !cc->by_name) {
		category_cache_release(cc);
		return error("out of memory");
	}
	memset(cc->by_op, -1, rp->n_ops + 1);
	memset(cc->by_name, -1, rp->n_strings + 1);
	return 0;
}

enum kernel_category category_cached(struct category_cache *cc, const struct replay_activity *a)
{
	const struct replay *rp = cc->rp;
	const struct replay_op *op;
	int8_t *by_name, *by_op;

	if (a->kind == ST_MEMCPY || a->kind == ST_MEMSET)
		return CAT_MEMCPY;
	by_name = &cc->by_name[a->name];
	if (*by_name < 0)
		*by_name = (int8_t)category_from_kernel_name(replay_str(rp, a->name));
	op = replay_op(rp, a->op);
	if (!op)
		return (enum kernel_category)*by_name;
	by_op = &cc->by_op[op - rp->ops];
	if (*by_op < 0)
		*by_op = (int8_t)category_from_op(replay_str(rp, op->kind), replay_str(rp, op->phase));
	return category_pick((enum kernel_category)*by_op, (enum kernel_category)*by_name);
}

void category_cache_release(struct category_cache *cc)
{
	free(cc->by_op);
	free(cc->by_name);
	cc->by_op = cc->by_name = NULL;
}
