/*
 * reference.c: the training step on the CPU in double precision (see
 * reference.h). Written for clarity over speed: tiny sizes only.
 */
#include "tests/lib/reference.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "trace/types.h"

/* ---- RNG ---- */

void ref_rng_init(struct ref_rng *r, uint64_t seed)
{
	r->state = seed;
}

uint64_t ref_rng_u64(struct ref_rng *r)
{
	uint64_t z = (r->state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

double ref_rng_uniform(struct ref_rng *r)
{
	return (double)(ref_rng_u64(r) >> 11) * 0x1.0p-53;
}

double ref_rng_normal(struct ref_rng *r)
{
	double u1 = 1.0 - ref_rng_uniform(r), u2 = ref_rng_uniform(r);

	return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double ref_rng_trunc_normal(struct ref_rng *r, double std, double cut)
{
	double z;

	do
		z = ref_rng_normal(r);
	while (fabs(z) > cut);
	return z * std;
}

void ref_random_tokens(uint64_t seed, size_t n, int vocab, int32_t *out)
{
	struct ref_rng r;
	size_t i;

	ref_rng_init(&r, seed);
	for (i = 0; i < n; i++)
		out[i] = (int32_t)(ref_rng_u64(&r) % (uint64_t)vocab);
}

double ref_round_bf16(double x)
{
	float f = (float)x;
	uint32_t bits;

	if (isnan(f))
		return x;
	memcpy(&bits, &f, sizeof(bits));
	bits += 0x7fffu + ((bits >> 16) & 1u);
	bits &= 0xffff0000u;
	memcpy(&f, &bits, sizeof(f));
	return f;
}

/* ---- Ops ---- */

void ref_embedding_fwd(const double *table, const int32_t *ids, size_t n, int d, double *out)
{
	size_t i;

	for (i = 0; i < n; i++)
		memcpy(out + i * d, table + (size_t)ids[i] * d, (size_t)d * sizeof(double));
}

void ref_embedding_bwd(const double *dout, const int32_t *ids, size_t n, int d, double *dtable)
{
	size_t i;
	int j;

	for (i = 0; i < n; i++)
		for (j = 0; j < d; j++)
			dtable[(size_t)ids[i] * d + j] += dout[i * d + j];
}

static double rms_inv(const double *x, int d)
{
	double ss = 0;
	int j;

	for (j = 0; j < d; j++)
		ss += x[j] * x[j];
	return 1.0 / sqrt(ss / d + REF_RMSNORM_EPS);
}

void ref_rmsnorm_fwd(const double *x, const double *g, size_t n, int d, double *y, double *rstd)
{
	size_t i;
	int j;

	for (i = 0; i < n; i++) {
		double r = rms_inv(x + i * d, d);

		for (j = 0; j < d; j++)
			y[i * d + j] = x[i * d + j] * r * g[j];
		if (rstd)
			rstd[i] = r;
	}
}

void ref_rmsnorm_bwd(const double *dy, const double *x, const double *g, size_t n, int d,
		     double *dx, double *dg)
{
	size_t i;
	int j;

	for (i = 0; i < n; i++) {
		const double *xr = x + i * d, *dyr = dy + i * d;
		double r = rms_inv(xr, d), dot = 0;

		for (j = 0; j < d; j++)
			dot += dyr[j] * g[j] * xr[j];
		for (j = 0; j < d; j++) {
			if (dx)
				dx[i * d + j] = r * g[j] * dyr[j] - r * r * r / d * xr[j] * dot;
			if (dg)
				dg[j] += dyr[j] * xr[j] * r;
		}
	}
}

/* Rotates every pair of (B, T, H, dh) by sign * its angle. */
static void rope_rotate(const double *x, double *y, int B, int T, int H, int dh, double sign)
{
	int b, t, h, i;

	for (b = 0; b < B; b++)
		for (t = 0; t < T; t++)
			for (h = 0; h < H; h++) {
				size_t base = (((size_t)b * T + t) * H + h) * dh;

				for (i = 0; i < dh / 2; i++) {
					double ang = t * pow(REF_ROPE_THETA, -2.0 * i / dh);
					double c = cos(ang), s = sign * sin(ang);
					double x0 = x[base + 2 * i], x1 = x[base + 2 * i + 1];

					y[base + 2 * i] = x0 * c - x1 * s;
					y[base + 2 * i + 1] = x0 * s + x1 * c;
				}
			}
}

void ref_rope_fwd(const double *x, double *y, int B, int T, int H, int dh)
{
	rope_rotate(x, y, B, T, H, dh, 1.0);
}

void ref_rope_bwd(const double *dy, double *dx, int B, int T, int H, int dh)
{
	rope_rotate(dy, dx, B, T, H, dh, -1.0);
}

/* One causal row: p[0..len-1] = softmax(scale * s[0..len-1]). */
static void softmax_row(const double *s, int len, double scale, double *p)
{
	double mx = -INFINITY, sum = 0;
	int j;

	for (j = 0; j < len; j++)
		mx = fmax(mx, scale * s[j]);
	for (j = 0; j < len; j++) {
		p[j] = exp(scale * s[j] - mx);
		sum += p[j];
	}
	for (j = 0; j < len; j++)
		p[j] /= sum;
}

/* ds[0..len-1] = scale * p * (dp - sum(dp * p)). */
static void softmax_row_bwd(const double *dp, const double *p, int len, double scale, double *ds)
{
	double dot = 0;
	int j;

	for (j = 0; j < len; j++)
		dot += dp[j] * p[j];
	for (j = 0; j < len; j++)
		ds[j] = scale * p[j] * (dp[j] - dot);
}

void ref_causal_softmax_fwd(const double *s, size_t rows, int T, double scale, double *p)
{
	size_t r;
	int i, j;

	for (r = 0; r < rows; r++)
		for (i = 0; i < T; i++) {
			size_t off = (r * T + i) * T;

			softmax_row(s + off, i + 1, scale, p + off);
			for (j = i + 1; j < T; j++)
				p[off + j] = 0;
		}
}

void ref_causal_softmax_bwd(const double *dp, const double *p, size_t rows, int T, double scale,
			    double *ds)
{
	size_t r;
	int i, j;

	for (r = 0; r < rows; r++)
		for (i = 0; i < T; i++) {
			size_t off = (r * T + i) * T;

			softmax_row_bwd(dp + off, p + off, i + 1, scale, ds + off);
			for (j = i + 1; j < T; j++)
				ds[off + j] = 0;
		}
}

double ref_dot(const double *a, const double *b, size_t n)
{
	double s = 0;
	size_t i;

	for (i = 0; i < n; i++)
		s += a[i] * b[i];
	return s;
}

/* Row i of head h in batch b of a (B, T, H, dh) tensor. */
#define HEAD_ROW(x, b, i, h) ((x) + (((size_t)(b) * T + (i)) * H + (h)) * dh)

/* Probabilities of query row i of (b, h): from p if given, else recomputed. */
static void attention_probs(const double *q, const double *k, const double *p,
			    int b, int h, int i, int T, int H, int dh, double *row)
{
	int j;

	if (p) {
		memcpy(row, p + (((size_t)b * H + h) * T + i) * T, (size_t)(i + 1) * sizeof(double));
		return;
	}
	for (j = 0; j <= i; j++)
		row[j] = ref_dot(HEAD_ROW(q, b, i, h), HEAD_ROW(k, b, j, h), dh);
	softmax_row(row, i + 1, 1.0 / sqrt(dh), row);
}

void ref_attention_fwd(const double *q, const double *k, const double *v,
		       int B, int T, int H, int dh, double *out, double *p)
{
	double row[T];
	int b, h, i, j, e;

	for (b = 0; b < B; b++)
		for (h = 0; h < H; h++)
			for (i = 0; i < T; i++) {
				double *o = HEAD_ROW(out, b, i, h);

				attention_probs(q, k, NULL, b, h, i, T, H, dh, row);
				for (e = 0; e < dh; e++)
					o[e] = 0;
				for (j = 0; j <= i; j++)
					for (e = 0; e < dh; e++)
						o[e] += row[j] * HEAD_ROW(v, b, j, h)[e];
				if (p) {
					double *pr = p + (((size_t)b * H + h) * T + i) * T;

					for (j = 0; j < T; j++)
						pr[j] = j <= i ? row[j] : 0;
				}
			}
}

void ref_attention_bwd(const double *dout, const double *q, const double *k, const double *v,
		       const double *p, int B, int T, int H, int dh,
		       double *dq, double *dk, double *dv)
{
	size_t total = (size_t)B * T * H * dh;
	double row[T], dp[T], ds[T];
	int b, h, i, j, e;

	memset(dq, 0, total * sizeof(double));
	memset(dk, 0, total * sizeof(double));
	memset(dv, 0, total * sizeof(double));
	for (b = 0; b < B; b++)
		for (h = 0; h < H; h++)
			for (i = 0; i < T; i++) {
				const double *g = HEAD_ROW(dout, b, i, h);

				attention_probs(q, k, p, b, h, i, T, H, dh, row);
				for (j = 0; j <= i; j++) {
					dp[j] = ref_dot(g, HEAD_ROW(v, b, j, h), dh);
					for (e = 0; e < dh; e++)
						HEAD_ROW(dv, b, j, h)[e] += row[j] * g[e];
				}
				softmax_row_bwd(dp, row, i + 1, 1.0 / sqrt(dh), ds);
				for (j = 0; j <= i; j++)
					for (e = 0; e < dh; e++) {
						HEAD_ROW(dq, b, i, h)[e] += ds[j] * HEAD_ROW(k, b, j, h)[e];
						HEAD_ROW(dk, b, j, h)[e] += ds[j] * HEAD_ROW(q, b, i, h)[e];
					}
			}
}

#undef HEAD_ROW

void ref_matmul_fwd(const double *x, const double *w, size_t n, int in, int out, double *y)
{
	size_t r;
	int o;

	for (r = 0; r < n; r++)
		for (o = 0; o < out; o++)
			y[r * out + o] = ref_dot(x + r * in, w + (size_t)o * in, in);
}

void ref_matmul_bwd(const double *dy, const double *x, const double *w, size_t n, int in, int out,
		    double *dx, double *dw)
{
	size_t r;
	int o, i;

	if (dx)
		memset(dx, 0, n * in * sizeof(double));
	for (r = 0; r < n; r++)
		for (o = 0; o < out; o++) {
			double g = dy[r * out + o];

			for (i = 0; i < in; i++) {
				if (dx)
					dx[r * in + i] += g * w[(size_t)o * in + i];
				if (dw)
					dw[(size_t)o * in + i] += g * x[r * in + i];
			}
		}
}

static double sigmoid(double a)
{
	return 1.0 / (1.0 + exp(-a));
}

void ref_swiglu_fwd(const double *a, const double *b, size_t n, double *h)
{
	size_t i;

	for (i = 0; i < n; i++)
		h[i] = a[i] * sigmoid(a[i]) * b[i];
}

void ref_swiglu_bwd(const double *dh, const double *a, const double *b, size_t n,
		    double *da, double *db)
{
	size_t i;

	for (i = 0; i < n; i++) {
		double s = sigmoid(a[i]);

		if (da)
			da[i] = dh[i] * b[i] * s * (1.0 + a[i] * (1.0 - s));
		if (db)
			db[i] = dh[i] * a[i] * s;
	}
}

/* max + log(sum(exp(x - max))) over one row. */
static double logsumexp(const double *x, int n)
{
	double mx = -INFINITY, sum = 0;
	int j;

	for (j = 0; j < n; j++)
		mx = fmax(mx, x[j]);
	for (j = 0; j < n; j++)
		sum += exp(x[j] - mx);
	return mx + log(sum);
}

double ref_cross_entropy_fwd(const double *logits, const int32_t *targets, size_t n, int vocab)
{
	double total = 0;
	size_t r;

	for (r = 0; r < n; r++)
		total += logsumexp(logits + r * vocab, vocab) - logits[r * vocab + targets[r]];
	return n ? total / n : 0;
}

void ref_cross_entropy_bwd(const double *logits, const int32_t *targets, size_t n, int vocab,
			   double dloss, double *dlogits)
{
	size_t r;
	int j;

	for (r = 0; r < n; r++) {
		double lse = logsumexp(logits + r * vocab, vocab);

		for (j = 0; j < vocab; j++)
			dlogits[r * vocab + j] = dloss / n *
				(exp(logits[r * vocab + j] - lse) - (j == targets[r]));
	}
}

void ref_adamw_step(double *p, const double *g, double *m, double *v, size_t n, int t,
		    double lr, double beta1, double beta2, double eps, double weight_decay)
{
	double alpha = lr * sqrt(1.0 - pow(beta2, t)) / (1.0 - pow(beta1, t));
	size_t i;

	for (i = 0; i < n; i++) {
		m[i] = beta1 * m[i] + (1.0 - beta1) * g[i];
		v[i] = beta2 * v[i] + (1.0 - beta2) * g[i] * g[i];
		p[i] -= alpha * m[i] / (sqrt(v[i]) + eps);
		p[i] -= lr * weight_decay * p[i];
	}
}

/* ---- Parameters ---- */

static size_t param_numel(int ndim, const int64_t shape[2])
{
	return ndim == 1 ? (size_t)shape[0] : (size_t)shape[0] * (size_t)shape[1];
}

int ref_init_weights(const struct model_config *c, uint64_t seed, struct tensor_set *out)
{
	int i, n = model_param_count(c), ndim;
	struct ref_rng rng;
	int64_t shape[2];
	char name[96];

	tensor_set_release(out);
	ref_rng_init(&rng, seed);
	for (i = 0; i < n; i++) {
		struct named_tensor *t;
		float *w;
		size_t j, numel;
		double std, cut;

		model_param_info(c, i, name, sizeof(name), &ndim, shape);
		t = tensor_set_add(out, name, ST_DT_F32, ndim, shape, NULL);
		if (!t) {
			tensor_set_release(out);
			return error("out of memory for reference weights");
		}
		w = t->data;
		numel = param_numel(ndim, shape);
		if (ndim == 1) {
			for (j = 0; j < numel; j++)
				w[j] = 1.0f;
			continue;
		}
		/* Embedding: std 1 cut at ±3; linear: std sqrt(2/(in+out)) cut at ±3σ. */
		std = i == 0 ? 1.0 : sqrt(2.0 / (double)(shape[0] + shape[1]));
		cut = 3.0;
		for (j = 0; j < numel; j++)
			w[j] = (float)ref_rng_trunc_normal(&rng, std, cut);
	}
	return 0;
}

/* Copies an F32 or F64 tensor into doubles. */
static void tensor_to_double(const struct named_tensor *t, double *out)
{
	size_t i, n = (size_t)named_tensor_numel(t);

	if (t->dtype == ST_DT_F64) {
		memcpy(out, t->data, n * sizeof(double));
		return;
	}
	for (i = 0; i < n; i++)
		out[i] = ((const float *)t->data)[i];
}

static void tensor_from_double(struct named_tensor *t, const double *in)
{
	size_t i, n = (size_t)named_tensor_numel(t);

	if (t->dtype == ST_DT_F64) {
		memcpy(t->data, in, n * sizeof(double));
		return;
	}
	for (i = 0; i < n; i++)
		((float *)t->data)[i] = (float)in[i];
}

#define FLOAT_MASK ((1u << ST_DT_F32) | (1u << ST_DT_F64))

/*
 * All parameters in one double block, in model_param_info order; ptr[i] points
 * at parameter i.
 */
struct ref_params {
	double *block;
	double **ptr;
};

static int params_alloc(const struct model_config *c, struct ref_params *p)
{
	int i, n = model_param_count(c), ndim;
	int64_t shape[2];
	char name[96];
	double *at;

	p->block = calloc(model_config_params(c), sizeof(double));
	p->ptr = calloc((size_t)n, sizeof(double *));
	if (!p->block || !p->ptr) {
		free(p->block);
		free(p->ptr);
		return error("out of memory for reference parameters");
	}
	at = p->block;
	for (i = 0; i < n; i++) {
		model_param_info(c, i, name, sizeof(name), &ndim, shape);
		p->ptr[i] = at;
		at += param_numel(ndim, shape);
	}
	return 0;
}

static void params_free(struct ref_params *p)
{
	free(p->block);
	free(p->ptr);
}

static double *layer_param(const struct ref_params *p, int layer, enum layer_param which)
{
	return p->ptr[1 + P_PER_LAYER * layer + which];
}

/* What one block keeps from forward for backward. (n, d) unless noted. */
struct layer_cache {
	double *x_in, *xn1, *q, *k, *v, *att, *x_mid, *xn2;
	double *p;          /* (B, H, T, T) */
	double *a, *b, *h;  /* (n, d_ff) */
};

static void add_into(double *dst, const double *src, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] += src[i];
}

static double *take(double **cursor, size_t count)
{
	double *p = *cursor;

	*cursor += count;
	return p;
}

int ref_forward_backward(const struct model_config *c, const struct tensor_set *weights,
			 const int32_t *inputs, const int32_t *targets, double *loss,
			 struct tensor_set *grads)
{
	const int B = c->batch, T = c->ctx, H = c->heads, d = c->d_model, ff = c->d_ff;
	const int V = c->vocab, L = c->layers, dh = d / H;
	const size_t n = (size_t)B * T, nd = n * d, nf = n * ff;
	const size_t per_layer = 8 * nd + (size_t)B * H * T * T + 3 * nf;
	const size_t tail = 2 * nd + n * V;                          /* x_final, xf, logits */
	const size_t scratch = 9 * nd + 3 * nf + n * V;              /* backward */
	struct ref_params w, g = { NULL, NULL };
	struct layer_cache *cache = NULL;
	double *mem = NULL, *cur, *x, *xf, *logits;
	int i, l, np = model_param_count(c), ret = -1;
	char name[96];
	size_t r;

	if (model_config_validate(c) ||
	    model_params_check(c, weights, FLOAT_MASK, "reference weights"))
		return -1;
	for (r = 0; r < n; r++)
		if (inputs[r] < 0 || inputs[r] >= V || targets[r] < 0 || targets[r] >= V)
			return error("token id %d at position %zu is outside the vocabulary of %d",
					inputs[r] < 0 || inputs[r] >= V ? inputs[r] : targets[r], r, V);
	if (params_alloc(c, &w))
		return -1;
	if (grads && params_alloc(c, &g))
		goto free_params;
	cache = calloc((size_t)L, sizeof(*cache));
	mem = calloc(per_layer * L + tail + scratch, sizeof(double));
	if (!cache || !mem) {
		error("out of memory for reference activations");
		goto free_mem;
	}
	for (i = 0; i < np; i++) {
		int ndim;
		int64_t shape[2];

		model_param_info(c, i, name, sizeof(name), &ndim, shape);
		tensor_to_double(tensor_set_find(weights, name), w.ptr[i]);
	}

	/* Forward. */
	cur = mem;
	for (l = 0; l < L; l++) {
		struct layer_cache *k = &cache[l];

		k->x_in = take(&cur, nd);
		k->xn1 = take(&cur, nd);
		k->q = take(&cur, nd);
		k->k = take(&cur, nd);
		k->v = take(&cur, nd);
		k->att = take(&cur, nd);
		k->x_mid = take(&cur, nd);
		k->xn2 = take(&cur, nd);
		k->p = take(&cur, (size_t)B * H * T * T);
		k->a = take(&cur, nf);
		k->b = take(&cur, nf);
		k->h = take(&cur, nf);
	}
	x = take(&cur, nd);
	xf = take(&cur, nd);
	logits = take(&cur, n * V);

	ref_embedding_fwd(w.ptr[0], inputs, n, d, L ? cache[0].x_in : x);
	for (l = 0; l < L; l++) {
		struct layer_cache *k = &cache[l];
		double *x_out = l + 1 < L ? cache[l + 1].x_in : x;

		ref_rmsnorm_fwd(k->x_in, layer_param(&w, l, P_LN1), n, d, k->xn1, NULL);
		ref_matmul_fwd(k->xn1, layer_param(&w, l, P_Q), n, d, d, k->q);
		ref_matmul_fwd(k->xn1, layer_param(&w, l, P_K), n, d, d, k->k);
		ref_matmul_fwd(k->xn1, layer_param(&w, l, P_V), n, d, d, k->v);
		ref_rope_fwd(k->q, k->q, B, T, H, dh);
		ref_rope_fwd(k->k, k->k, B, T, H, dh);
		ref_attention_fwd(k->q, k->k, k->v, B, T, H, dh, k->att, k->p);
		ref_matmul_fwd(k->att, layer_param(&w, l, P_O), n, d, d, k->x_mid);
		add_into(k->x_mid, k->x_in, nd);

		ref_rmsnorm_fwd(k->x_mid, layer_param(&w, l, P_LN2), n, d, k->xn2, NULL);
		ref_matmul_fwd(k->xn2, layer_param(&w, l, P_W1), n, d, ff, k->a);
		ref_matmul_fwd(k->xn2, layer_param(&w, l, P_W3), n, d, ff, k->b);
		ref_swiglu_fwd(k->a, k->b, nf, k->h);
		ref_matmul_fwd(k->h, layer_param(&w, l, P_W2), n, ff, d, x_out);
		add_into(x_out, k->x_mid, nd);
	}
	ref_rmsnorm_fwd(x, w.ptr[np - 2], n, d, xf, NULL);
	ref_matmul_fwd(xf, w.ptr[np - 1], n, d, V, logits);
	*loss = ref_cross_entropy_fwd(logits, targets, n, V);

	if (grads) {
		double *dx = take(&cur, nd), *dn = take(&cur, nd), *tmp = take(&cur, nd);
		double *datt = take(&cur, nd), *dq = take(&cur, nd), *dk = take(&cur, nd);
		double *dv = take(&cur, nd), *dmid = take(&cur, nd), *dxf = take(&cur, nd);
		double *dhh = take(&cur, nf), *da = take(&cur, nf), *db = take(&cur, nf);
		double *dlogits = take(&cur, n * V);

		ref_cross_entropy_bwd(logits, targets, n, V, 1.0, dlogits);
		ref_matmul_bwd(dlogits, xf, w.ptr[np - 1], n, d, V, dxf, g.ptr[np - 1]);
		ref_rmsnorm_bwd(dxf, x, w.ptr[np - 2], n, d, dx, g.ptr[np - 2]);
		for (l = L - 1; l >= 0; l--) {
			struct layer_cache *k = &cache[l];

			/* x_out = x_mid + w2(swiglu(w1 xn2, w3 xn2)) */
			ref_matmul_bwd(dx, k->h, layer_param(&w, l, P_W2), n, ff, d, dhh,
				       layer_param(&g, l, P_W2));
			ref_swiglu_bwd(dhh, k->a, k->b, nf, da, db);
			ref_matmul_bwd(da, k->xn2, layer_param(&w, l, P_W1), n, d, ff, dn,
				       layer_param(&g, l, P_W1));
			ref_matmul_bwd(db, k->xn2, layer_param(&w, l, P_W3), n, d, ff, tmp,
				       layer_param(&g, l, P_W3));
			add_into(dn, tmp, nd);
			ref_rmsnorm_bwd(dn, k->x_mid, layer_param(&w, l, P_LN2), n, d, dmid,
					layer_param(&g, l, P_LN2));
			add_into(dmid, dx, nd);

			/* x_mid = x_in + output_proj(attention(rope(q), rope(k), v)) */
			ref_matmul_bwd(dmid, k->att, layer_param(&w, l, P_O), n, d, d, datt,
				       layer_param(&g, l, P_O));
			ref_attention_bwd(datt, k->q, k->k, k->v, k->p, B, T, H, dh, dq, dk, dv);
			ref_rope_bwd(dq, dq, B, T, H, dh);
			ref_rope_bwd(dk, dk, B, T, H, dh);
			ref_matmul_bwd(dq, k->xn1, layer_param(&w, l, P_Q), n, d, d, dn,
				       layer_param(&g, l, P_Q));
			ref_matmul_bwd(dk, k->xn1, layer_param(&w, l, P_K), n, d, d, tmp,
				       layer_param(&g, l, P_K));
			add_into(dn, tmp, nd);
			ref_matmul_bwd(dv, k->xn1, layer_param(&w, l, P_V), n, d, d, tmp,
				       layer_param(&g, l, P_V));
			add_into(dn, tmp, nd);
			ref_rmsnorm_bwd(dn, k->x_in, layer_param(&w, l, P_LN1), n, d, dx,
					layer_param(&g, l, P_LN1));
			add_into(dx, dmid, nd);
		}
		ref_embedding_bwd(dx, inputs, n, d, g.ptr[0]);

		tensor_set_release(grads);
		for (i = 0; i < np; i++) {
			int ndim;
			int64_t shape[2];

			model_param_info(c, i, name, sizeof(name), &ndim, shape);
			if (!tensor_set_add(grads, name, ST_DT_F64, ndim, shape, g.ptr[i])) {
				tensor_set_release(grads);
				error("out of memory for reference gradients");
				goto free_mem;
			}
		}
	}
	ret = 0;

free_mem:
	free(mem);
	free(cache);
	if (grads)
		params_free(&g);
free_params:
	params_free(&w);
	return ret;
}

/* Finds `name` in an optimizer state set, creating it (zero, F64) if `create`. */
static struct named_tensor *state_get(struct tensor_set *s, const char *name, int create,
				      int ndim, const int64_t *shape)
{
	struct named_tensor *t = tensor_set_find(s, name);

	if (!t && create)
		t = tensor_set_add(s, name, ST_DT_F64, ndim, shape, NULL);
	return t;
}

int ref_adamw(const struct model_config *c, struct tensor_set *weights,
	      const struct tensor_set *grads, struct tensor_set *m, struct tensor_set *v, int t)
{
	int i, np = model_param_count(c), ndim, create_m = m->n == 0, create_v = v->n == 0;
	int64_t shape[2];
	char name[96];
	double *p = NULL, *gr = NULL;
	int ret = -1;

	if (t < 1)
		return error("adamw step number must be at least 1 (got %d)", t);
	if (model_params_check(c, weights, FLOAT_MASK, "adamw weights") ||
	    model_params_check(c, grads, FLOAT_MASK, "adamw gradients"))
		return -1;
	for (i = 0; i < np; i++) {
		struct named_tensor *w, *mt, *vt;
		size_t numel;

		model_param_info(c, i, name, sizeof(name), &ndim, shape);
		numel = param_numel(ndim, shape);
		w = tensor_set_find(weights, name);
		mt = state_get(m, name, create_m, ndim, shape);
		vt = state_get(v, name, create_v, ndim, shape);
		if (!mt || !vt || mt->dtype != ST_DT_F64 || vt->dtype != ST_DT_F64 ||
		    (size_t)named_tensor_numel(mt) != numel || (size_t)named_tensor_numel(vt) != numel) {
			error("adamw state: tensor '%s' is missing or not F64 of its parameter's shape",
				 name);
			goto done;
		}
		free(p);
		free(gr);
		p = malloc(numel * sizeof(double));
		gr = malloc(numel * sizeof(double));
		if (!p || !gr) {
			error("out of memory in the reference adamw");
			goto done;
		}
		tensor_to_double(w, p);
		tensor_to_double(tensor_set_find(grads, name), gr);
		ref_adamw_step(p, gr, mt->data, vt->data, numel, t, c->lr, c->beta1, c->beta2,
			       c->eps, c->weight_decay);
		tensor_from_double(w, p);
	}
	ret = 0;
done:
	free(p);
	free(gr);
	return ret;
}
