/*
 * test_ddp_plan.c: which gradients each all-reduce carries (model/ddp_plan.c),
 * on the layout of a tiny model (vocab 10, d 4, d_ff 8, 2 layers), worked
 * out by hand: offsets, counts, order, the bucket rule, and when each
 * collective may start as the backward finishes gradients last to first.
 */
#include "tests/lib/check.h"
#include "lib/error.h"
#include "model/ddp_plan.h"

/* The GPU model's memory order (model.c's param_layout: w3 before w2). */
static const struct ddp_param params[] = {
	{ "token_embeddings.weight", 0, 40 },
	{ "layers.0.ln1.weight", 40, 4 },
	{ "layers.0.attn.q_proj.weight", 44, 16 },
	{ "layers.0.attn.k_proj.weight", 60, 16 },
	{ "layers.0.attn.v_proj.weight", 76, 16 },
	{ "layers.0.attn.output_proj.weight", 92, 16 },
	{ "layers.0.ln2.weight", 108, 4 },
	{ "layers.0.ffn.w1.weight", 112, 32 },
	{ "layers.0.ffn.w3.weight", 144, 32 },
	{ "layers.0.ffn.w2.weight", 176, 32 },
	{ "layers.1.ln1.weight", 208, 4 },
	{ "layers.1.attn.q_proj.weight", 212, 16 },
	{ "layers.1.attn.k_proj.weight", 228, 16 },
	{ "layers.1.attn.v_proj.weight", 244, 16 },
	{ "layers.1.attn.output_proj.weight", 260, 16 },
	{ "layers.1.ln2.weight", 276, 4 },
	{ "layers.1.ffn.w1.weight", 280, 32 },
	{ "layers.1.ffn.w3.weight", 312, 32 },
	{ "layers.1.ffn.w2.weight", 344, 32 },
	{ "ln_final.weight", 376, 4 },
	{ "lm_head.weight", 380, 40 },
};
#define N (sizeof(params) / sizeof(params[0]))

/* The offsets the backward finishes, in order: op by op, w1 and w3 (and q, k, v) together. */
static const size_t finals[] = { 380, 376, 344, 280, 276, 260, 212, 208,
				 176, 112, 108, 92, 44, 40, 0 };
#define N_FINALS (sizeof(finals) / sizeof(finals[0]))

/* How many collectives have started after each of `finals`. */
static void replay_backward(const struct ddp_plan *p, size_t *started)
{
	size_t next = 0;

	for (size_t i = 0; i < N_FINALS; i++)
		started[i] = next = ddp_plan_ready(p, next, finals[i]);
}

static void test_buckets(void)
{
	struct ddp_plan p;
	/* 0.0003 MB = 314.6 bytes = 78.6 F32 elements: a bucket closes at 79 or more */
	static const struct { size_t offset, count, first, n; } want[] = {
		{ 312, 108, 17, 4 },   /* w3, w2 of layer 1, ln_final, lm_head */
		{ 228, 84, 12, 5 },    /* k, v, o, ln2, w1 of layer 1 */
		{ 144, 84, 8, 4 },     /* w3, w2 of layer 0, ln1 and q of layer 1 */
		{ 60, 84, 3, 5 },      /* k, v, o, ln2, w1 of layer 0 */
		{ 0, 60, 0, 3 },       /* the embedding, ln1 and q of layer 0: what is left */
	};
	static const size_t started[N_FINALS] = { 0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3, 4, 4, 5 };
	size_t got[N_FINALS];

	CHECK(ddp_plan_make(&p, ST_DDP_BUCKET, params, N, 0.0003, 4) == 0);
	CHECK_U64(p.n, 5);
	for (size_t k = 0; k < p.n && k < 5; k++) {
		char name[16];

		snprintf(name, sizeof(name), "bucket.%zu", k);
		CHECK_STR(p.c[k].name, name);
		CHECK(p.c[k].offset == want[k].offset && p.c[k].count == want[k].count &&
		      p.c[k].first == want[k].first && p.c[k].n_params == want[k].n && p.c[k].in_backward,
		      "bucket %zu: offset %zu count %zu params [%zu, +%zu)", k, p.c[k].offset, p.c[k].count,
		      p.c[k].first, p.c[k].n_params);
	}
	replay_backward(&p, got);
	for (size_t i = 0; i < N_FINALS; i++)
		CHECK(got[i] == started[i], "after the gradients from %zu: %zu started, want %zu", finals[i],
		      got[i], started[i]);
	ddp_plan_release(&p);

	/* buckets smaller than any parameter: one per parameter, in reverse order */
	CHECK(ddp_plan_make(&p, ST_DDP_BUCKET, params, N, 1e-9, 4) == 0 && p.n == N);
	for (size_t k = 0; k < p.n; k++)
		CHECK(p.c[k].first == N - 1 - k && p.c[k].n_params == 1, "bucket %zu", k);
	ddp_plan_release(&p);

	/* one bucket holds everything */
	CHECK(ddp_plan_make(&p, ST_DDP_BUCKET, params, N, 25, 4) == 0 && p.n == 1 &&
	      p.c[0].offset == 0 && p.c[0].count == 420);
	ddp_plan_release(&p);
}

static void test_per_parameter(void)
{
	struct ddp_plan p;
	size_t got[N_FINALS];
	static const size_t overlap[N_FINALS] = { 1, 2, 3, 5, 6, 7, 10, 11, 12, 14, 15, 16, 19, 20, 21 };

	for (int mode = ST_DDP_NAIVE; mode <= ST_DDP_OVERLAP; mode += ST_DDP_OVERLAP - ST_DDP_NAIVE) {
		CHECK(ddp_plan_make(&p, mode, params, N, 25, 4) == 0 && p.n == N);
		for (size_t k = 0; k < p.n; k++) {
			const struct ddp_param *q = &params[N - 1 - k];
			CHECK(p.c[k].offset == q->offset && p.c[k].count == q->numel &&
			      !strcmp(p.c[k].name, q->name) && p.c[k].in_backward == (mode == ST_DDP_OVERLAP),
			      "%s collective %zu is %s", st_ddp_names[mode], k, q->name);
		}
		replay_backward(&p, got);
		for (size_t i = 0; i < N_FINALS; i++)
			CHECK(got[i] == (mode == ST_DDP_OVERLAP ? overlap[i] : 0),
			      "%s after %zu: %zu started", st_ddp_names[mode], finals[i], got[i]);
		ddp_plan_release(&p);
	}
}

static void test_flat_and_refusals(void)
{
	struct ddp_plan p;
	struct ddp_param gap[2] = { { "a", 0, 4 }, { "b", 5, 4 } };

	CHECK(ddp_plan_make(&p, ST_DDP_FLAT, params, N, 25, 4) == 0 && p.n == 1 &&
	      p.c[0].offset == 0 && p.c[0].count == 420 && !p.c[0].in_backward &&
	      !strcmp(p.c[0].name, "flat"));
	CHECK(ddp_plan_ready(&p, 0, 0) == 0, "flat starts after the backward, never from it");
	ddp_plan_release(&p);

	error_set_stream(fopen("/dev/null", "w"));
	CHECK(ddp_plan_make(&p, ST_DDP_NONE, params, N, 25, 4) < 0, "no mode");
	CHECK(ddp_plan_make(&p, ST_DDP_BUCKET, params, N, 0, 4) < 0, "bucket size 0");
	CHECK(ddp_plan_make(&p, ST_DDP_FLAT, params, 0, 25, 4) < 0, "no parameters");
	CHECK(ddp_plan_make(&p, ST_DDP_FLAT, gap, 2, 25, 4) < 0, "a gap in the buffer");
	error_set_stream(NULL);
}

int main(void)
{
	test_buckets();
	test_per_parameter();
	test_flat_and_refusals();
	return check_done("multi.ddp_plan");
}
