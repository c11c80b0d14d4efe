/*
 * The whole reference model: gradients of the mean cross-entropy against
 * central finite differences, for every parameter tensor on a sample of
 * entries, at fresh random weights (random gains too) and random tokens.
 * Tolerance: |fd - analytic| <= 1e-6 * max(|fd|, |analytic|) + 1e-9, step
 * 1e-5, all in double. Then AdamW over tensor sets, a few training steps
 * that must lower the loss, and rejected inputs.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check.h"
#include "lib/error.h"
#include "tests/lib/reference.h"
#include "trace/types.h"

#define FD_STEP 1e-5
#define FD_REL 1e-6
#define FD_ABS 1e-9
#define SAMPLES 6

static void tiny_config(struct model_config *c)
{
	model_config_preset("small", c);
	snprintf(c->name, sizeof(c->name), "custom");
	c->d_model = 8;
	c->d_ff = 12;
	c->layers = 2;
	c->heads = 2;
	c->vocab = 11;
	c->batch = 2;
	c->ctx = 5;
}

/* F64 copy of F32 weights, gains randomised around 1 so they matter. */
static void to_f64(const struct tensor_set *in, struct tensor_set *out, struct ref_rng *rng)
{
	size_t i, j;

	tensor_set_init(out);
	for (i = 0; i < in->n; i++) {
		const struct named_tensor *t = &in->t[i];
		struct named_tensor *o = tensor_set_add(out, t->name, ST_DT_F64, t->ndim, t->shape, NULL);
		size_t n = (size_t)named_tensor_numel(t);

		for (j = 0; j < n; j++) {
			double v = ((const float *)t->data)[j];

			if (t->ndim == 1)
				v += 0.3 * ref_rng_normal(rng);
			((double *)o->data)[j] = v;
		}
	}
}

static double loss_at(const struct model_config *c, const struct tensor_set *w,
		      const int32_t *in, const int32_t *tg)
{
	double loss = NAN;

	CHECK(ref_forward_backward(c, w, in, tg, &loss, NULL) == 0, "forward");
	return loss;
}

static void gradient_check(const struct model_config *c, struct tensor_set *w,
			   const int32_t *in, const int32_t *tg, struct ref_rng *rng)
{
	struct tensor_set g;
	double loss, worst_rel = 0;
	size_t i, checked = 0;
	int s;

	tensor_set_init(&g);
	CHECK(ref_forward_backward(c, w, in, tg, &loss, &g) == 0, "forward-backward");
	CHECK(isfinite(loss) && loss > 0, "loss %g", loss);
	CHECK(fabs(loss - loss_at(c, w, in, tg)) == 0, "forward only gives the same loss");
	CHECK(g.n == (size_t)model_param_count(c), "%zu gradients", g.n);
	for (i = 0; i < w->n; i++) {
		struct named_tensor *p = &w->t[i], *gt = tensor_set_find(&g, p->name);
		size_t n = (size_t)named_tensor_numel(p);
		double *pv = p->data, norm = 0;

		CHECK(gt && gt->dtype == ST_DT_F64 && (size_t)named_tensor_numel(gt) == n,
		      "gradient of %s", p->name);
		if (!gt)
			continue;
		for (s = 0; s < (int)n; s++)
			norm += fabs(((double *)gt->data)[s]);
		/* Every tensor (embedding rows aside) gets a gradient. */
		CHECK(norm > 0, "gradient of %s is all zero", p->name);
		for (s = 0; s < SAMPLES; s++) {
			size_t at = s == 0 ? 0 : s == 1 ? n - 1 : ref_rng_u64(rng) % n;
			double keep = pv[at], lp, lm, fd, an = ((double *)gt->data)[at], err;

			if (!strcmp(p->name, "token_embeddings.weight"))
				at = (size_t)in[s % (c->batch * c->ctx)] * c->d_model +
				     ref_rng_u64(rng) % c->d_model, keep = pv[at],
				an = ((double *)gt->data)[at];
			pv[at] = keep + FD_STEP;
			lp = loss_at(c, w, in, tg);
			pv[at] = keep - FD_STEP;
			lm = loss_at(c, w, in, tg);
			pv[at] = keep;
			fd = (lp - lm) / (2 * FD_STEP);
			err = fabs(fd - an);
			CHECK(err <= FD_REL * fmax(fabs(fd), fabs(an)) + FD_ABS,
			      "%s[%zu]: finite difference %.12g, backward %.12g", p->name, at, fd, an);
			if (fmax(fabs(fd), fabs(an)) > 0)
				worst_rel = fmax(worst_rel, err / fmax(fabs(fd), fabs(an)));
			checked++;
		}
	}
	printf("  %zu entries over %zu tensors, loss %.6f, worst relative error %.2e\n",
	       checked, w->n, loss, worst_rel);
	tensor_set_release(&g);
}

/* ref_adamw over sets matches ref_adamw_step, and a few steps lower the loss. */
static void adamw_and_training(const struct model_config *c, const int32_t *in, const int32_t *tg)
{
	struct tensor_set w, g, m, v, w0;
	double loss0, loss = 0;
	int step;

	tensor_set_init(&w), tensor_set_init(&g), tensor_set_init(&m), tensor_set_init(&v);
	tensor_set_init(&w0);
	CHECK(ref_init_weights(c, 5, &w) == 0, "init");
	CHECK(ref_init_weights(c, 5, &w0) == 0, "init again");
	CHECK(!memcmp(w.t[3].data, w0.t[3].data, w.t[3].bytes), "same seed, same weights");
	CHECK(ref_forward_backward(c, &w, in, tg, &loss0, &g) == 0, "step 0");
	CHECK(ref_adamw(c, &w, &g, &m, &v, 1) == 0, "adamw");
	CHECK(m.n == w.n && v.n == w.n, "state created");
	{
		/* One element by hand, F32 weights rounded after the double maths. */
		const struct named_tensor *q = tensor_set_find(&w0, "layers.0.attn.q_proj.weight");
		const struct named_tensor *gq = tensor_set_find(&g, "layers.0.attn.q_proj.weight");
		const struct named_tensor *q1 = tensor_set_find(&w, "layers.0.attn.q_proj.weight");
		double p = ((float *)q->data)[7], gg = ((double *)gq->data)[7], mm = 0, vv = 0;

		ref_adamw_step(&p, &gg, &mm, &vv, 1, 1, c->lr, c->beta1, c->beta2, c->eps,
			       c->weight_decay);
		CHECK(((float *)q1->data)[7] == (float)p, "adamw over sets");
		CHECK(((double *)tensor_set_find(&m, q->name)->data)[7] == mm, "m");
	}
	for (step = 2; step <= 20; step++) {
		CHECK(ref_forward_backward(c, &w, in, tg, &loss, &g) == 0, "train");
		CHECK(ref_adamw(c, &w, &g, &m, &v, step) == 0, "adamw %d", step);
	}
	printf("  training on one batch: loss %.4f -> %.4f\n", loss0, loss);
	CHECK(loss < loss0 - 0.1, "loss did not fall: %g -> %g", loss0, loss);
	tensor_set_release(&w), tensor_set_release(&g), tensor_set_release(&m);
	tensor_set_release(&v), tensor_set_release(&w0);
}

static void rejects(const struct model_config *c, const int32_t *in, const int32_t *tg)
{
	struct tensor_set w;
	int32_t bad[10];
	double loss;
	FILE *sink = fopen("/dev/null", "w");
	struct named_tensor *t;

	tensor_set_init(&w);
	ref_init_weights(c, 1, &w);
	error_set_stream(sink);
	memcpy(bad, in, sizeof(bad));
	bad[4] = c->vocab;
	CHECK(ref_forward_backward(c, &w, bad, tg, &loss, NULL) == -1, "token id = vocab");
	bad[4] = -1;
	CHECK(ref_forward_backward(c, &w, in, bad, &loss, NULL) == -1, "negative target");
	t = tensor_set_find(&w, "layers.0.ffn.w2.weight");
	t->shape[0] = c->d_ff, t->shape[1] = c->d_model;
	CHECK(ref_forward_backward(c, &w, in, tg, &loss, NULL) == -1, "transposed w2");
	free(t->name);
	t->name = strdup("layers.0.ffn.w2");
	CHECK(ref_forward_backward(c, &w, in, tg, &loss, NULL) == -1, "missing w2");
	error_set_stream(NULL);
	fclose(sink);
	tensor_set_release(&w);
}

int main(void)
{
	struct model_config c;
	struct tensor_set w32, w;
	struct ref_rng rng;
	int32_t in[10], tg[10];
	int i;

	tiny_config(&c);
	CHECK(model_config_validate(&c) == 0, "tiny config");
	CHECK(c.batch * c.ctx == 10, "batch");
	ref_rng_init(&rng, 77);
	ref_random_tokens(101, 10, c.vocab, in);
	ref_random_tokens(202, 10, c.vocab, tg);
	tensor_set_init(&w32);
	CHECK(ref_init_weights(&c, 123, &w32) == 0, "init");
	for (i = 0; i < (int)w32.n; i++)
		CHECK(((float *)w32.t[i].data)[0] != 0, "%s starts with zero", w32.t[i].name);
	to_f64(&w32, &w, &rng);
	gradient_check(&c, &w, in, tg, &rng);

	/* A second shape: one layer, four heads of 4, longer context, batch 1. */
	tensor_set_release(&w);
	tensor_set_release(&w32);
	c.d_model = 16, c.heads = 4, c.layers = 1, c.d_ff = 20, c.batch = 1, c.ctx = 10;
	c.vocab = 13;
	ref_random_tokens(303, 10, c.vocab, in);
	ref_random_tokens(404, 10, c.vocab, tg);
	ref_init_weights(&c, 9, &w32);
	to_f64(&w32, &w, &rng);
	gradient_check(&c, &w, in, tg, &rng);
	adamw_and_training(&c, in, tg);
	rejects(&c, in, tg);
	tensor_set_release(&w);
	tensor_set_release(&w32);
	return check_done("model_reference_model");
}
