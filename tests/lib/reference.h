/*
 * reference.h: the CPU reference of the training step, in double precision,
 * for tiny sizes; a test's yardstick, not part of steptrace. Each op has a forward and a backward that the GPU kernel
 * tests compare against; the whole model (forward, loss, backward, AdamW)
 * is built from the same functions and checked by finite differences.
 *
 * Conventions: row-major arrays; `n` counts rows (tokens, B*T); activations
 * of attention use the (B, T, H, dh) layout that a (B, T, d_model) tensor has
 * when heads are split from the d_model axis in order; scores and
 * probabilities are (B, H, T, T). Backward functions WRITE the gradient of an
 * input activation and ACCUMULATE (+=) into the gradient of a parameter, so
 * several uses of one parameter (embedding rows, tied paths) add up. Every
 * gradient output may be NULL when it is not wanted.
 */
#ifndef STEPTRACE_TESTS_LIB_REFERENCE_H
#define STEPTRACE_TESTS_LIB_REFERENCE_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "model/params.h"
#include "model/tensors.h"

#define REF_RMSNORM_EPS 1e-5
#define REF_ROPE_THETA 10000.0

/* ---- A small seeded RNG (splitmix64), for weights, tokens and tests. ---- */

struct ref_rng {
	uint64_t state;
};

void ref_rng_init(struct ref_rng *r, uint64_t seed);
uint64_t ref_rng_u64(struct ref_rng *r);
double ref_rng_uniform(struct ref_rng *r);               /* [0, 1) */
double ref_rng_normal(struct ref_rng *r);                /* N(0, 1) */
/* N(0, std^2) resampled until within [-cut*std, cut*std]. */
double ref_rng_trunc_normal(struct ref_rng *r, double std, double cut);
/* n token ids uniform in [0, vocab). */
void ref_random_tokens(uint64_t seed, size_t n, int vocab, int32_t *out);

/* Rounds to the nearest BF16 value (ties to even), as a GPU cast does. */
double ref_round_bf16(double x);

/* sum a[i] b[i] over n values, in order. */
double ref_dot(const double *a, const double *b, size_t n);

/* ---- Ops ---- */

/* out (n, d) = table (vocab, d) rows ids[i]. */
void ref_embedding_fwd(const double *table, const int32_t *ids, size_t n, int d, double *out);
/* dtable (vocab, d) += dout rows scattered to ids. */
void ref_embedding_bwd(const double *dout, const int32_t *ids, size_t n, int d, double *dtable);

/* y = x / sqrt(mean(x^2) + eps) * g, per row of d. rstd (n) may be NULL. */
void ref_rmsnorm_fwd(const double *x, const double *g, size_t n, int d, double *y, double *rstd);
/* dx written, dg (d) accumulated. */
void ref_rmsnorm_bwd(const double *dy, const double *x, const double *g, size_t n, int d,
		     double *dx, double *dg);

/*
 * RoPE on (B, T, H, dh), position = t, pair i = (x[2i], x[2i+1]) rotated by
 * angle t * theta^(-2i/dh):  y0 = x0 cos - x1 sin,  y1 = x0 sin + x1 cos.
 * In place is allowed (y == x). The backward rotates by the opposite angle.
 */
void ref_rope_fwd(const double *x, double *y, int B, int T, int H, int dh);
void ref_rope_bwd(const double *dy, double *dx, int B, int T, int H, int dh);

/*
 * Causal scaled softmax over `rows` independent (T, T) score matrices
 * (rows = B*H): p[i][j] = softmax_j(scale * s[i][j]) for j <= i (max
 * subtracted), 0 for j > i. The backward gives ds = scale * p * (dp - sum_j dp*p)
 * (0 above the diagonal).
 */
void ref_causal_softmax_fwd(const double *s, size_t rows, int T, double scale, double *p);
void ref_causal_softmax_bwd(const double *dp, const double *p, size_t rows, int T, double scale,
			    double *ds);

/*
 * Attention core on (B, T, H, dh): s = q k^T per (b, h), p = causal softmax
 * with scale 1/sqrt(dh), out = p v. `p` (B, H, T, T) is written if not NULL
 * (the backward needs it; pass NULL there to have it recomputed).
 */
void ref_attention_fwd(const double *q, const double *k, const double *v,
		       int B, int T, int H, int dh, double *out, double *p);
void ref_attention_bwd(const double *dout, const double *q, const double *k, const double *v,
		       const double *p, int B, int T, int H, int dh,
		       double *dq, double *dk, double *dv);

/* y (n, out) = x (n, in) W^T, W (out, in) as torch.nn.Linear. */
void ref_matmul_fwd(const double *x, const double *w, size_t n, int in, int out, double *y);
/* dx (n, in) = dy W written; dW (out, in) += dy^T x. */
void ref_matmul_bwd(const double *dy, const double *x, const double *w, size_t n, int in, int out,
		    double *dx, double *dw);

/* h = silu(a) * b elementwise over n values; silu(a) = a / (1 + exp(-a)). */
void ref_swiglu_fwd(const double *a, const double *b, size_t n, double *h);
void ref_swiglu_bwd(const double *dh, const double *a, const double *b, size_t n,
		    double *da, double *db);

/* Mean over n rows of logsumexp(logits) - logits[target] (max subtracted). */
double ref_cross_entropy_fwd(const double *logits, const int32_t *targets, size_t n, int vocab);
/* dlogits = dloss * (softmax(logits) - onehot(target)) / n, written. */
void ref_cross_entropy_bwd(const double *logits, const int32_t *targets, size_t n, int vocab,
			   double dloss, double *dlogits);

/*
 * One AdamW step at step number t (1 for the first), SPEC.md's order:
 *   m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 *   alpha_t = lr sqrt(1-b2^t) / (1-b1^t);  p -= alpha_t m / (sqrt(v) + eps);
 *   then p -= lr wd p.
 */
void ref_adamw_step(double *p, const double *g, double *m, double *v, size_t n, int t,
		    double lr, double beta1, double beta2, double eps, double weight_decay);

/* ---- Parameters under PyTorch's names (model/params.h) ---- */

/*
 * Fresh weights (F32): linear weights truncated normal with std
 * sqrt(2/(d_in+d_out)) cut at ±3 sigma, embedding std 1 cut at ±3, gains 1.
 * `out` is released first. -1 on out of memory.
 */
int ref_init_weights(const struct model_config *c, uint64_t seed, struct tensor_set *out);

/*
 * The whole model on batch*ctx tokens: forward, mean cross-entropy into
 * *loss, and (if grads != NULL) the backward into `grads`, which is released
 * and refilled with one F64 tensor per parameter under the same name.
 * weights: F32 or F64 under PyTorch's names. -1 with an error line on
 * missing/misshapen weights, bad token ids or out of memory.
 */
int ref_forward_backward(const struct model_config *c, const struct tensor_set *weights,
			 const int32_t *inputs, const int32_t *targets, double *loss,
			 struct tensor_set *grads);

/*
 * One AdamW step over every parameter (c->lr, beta1, beta2, eps,
 * weight_decay), step number t >= 1. weights: F32 or F64, updated in place
 * (the maths in double, rounded back to F32 for F32 tensors). grads: F32 or
 * F64. m, v: F64 state under the parameter names; when empty they are
 * created as zeros. -1 with an error line on a mismatch.
 */
int ref_adamw(const struct model_config *c, struct tensor_set *weights,
	      const struct tensor_set *grads, struct tensor_set *m, struct tensor_set *v, int t);

#endif
