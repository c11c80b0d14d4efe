/*
 * Each op of the CPU reference: its backward against central finite
 * differences of L = sum(forward(x) * R) with random R, on every input
 * element; plus a few known values. Tolerance: |fd - analytic| <=
 * 1e-6 * max(|fd|, |analytic|) + 1e-9 with step 1e-5 in double.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check.h"
#include "tests/lib/reference.h"

#define FD_STEP 1e-5
#define FD_REL 1e-6
#define FD_ABS 1e-9

static struct ref_rng rng;

static double *rand_vec(size_t n, double scale)
{
	double *v = malloc(n * sizeof(double));
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = scale * ref_rng_normal(&rng);
	return v;
}

static double *zeros(size_t n)
{
	return calloc(n, sizeof(double));
}

/* Checks analytic[i] = dL/dx[i] for every i by perturbing x in place. */
static void fd_check(const char *label, double *x, size_t n, double (*loss)(void),
		     const double *analytic)
{
	double worst = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		double keep = x[i], lp, lm, fd, err;

		x[i] = keep + FD_STEP;
		lp = loss();
		x[i] = keep - FD_STEP;
		lm = loss();
		x[i] = keep;
		fd = (lp - lm) / (2 * FD_STEP);
		err = fabs(fd - analytic[i]);
		CHECK(err <= FD_REL * fmax(fabs(fd), fabs(analytic[i])) + FD_ABS,
		      "%s[%zu]: finite difference %.12g, backward %.12g", label, i, fd, analytic[i]);
		if (err > worst)
			worst = err;
	}
	printf("  %-28s %4zu entries, max abs error %.2e\n", label, n, worst);
}

/* Buffers of the op under test, shared with its loss function. */
static double *X, *X2, *X3, *Y, *R, *G;
static int32_t *IDS;
static size_t N;
static int D, IN, OUT, B, T, H, DH, V;

static double loss_embedding(void)
{
	ref_embedding_fwd(X, IDS, N, D, Y);
	return ref_dot(Y, R, N * D);
}

static void test_embedding(void)
{
	double *dt;

	N = 7, D = 3, V = 5;
	X = rand_vec((size_t)V * D, 1), Y = zeros(N * D), R = rand_vec(N * D, 1);
	IDS = malloc(N * sizeof(*IDS));
	ref_random_tokens(3, N, V, IDS);
	IDS[1] = IDS[0]; /* a repeated id must accumulate */
	dt = zeros((size_t)V * D);
	ref_embedding_bwd(R, IDS, N, D, dt);
	fd_check("embedding d_table", X, (size_t)V * D, loss_embedding, dt);
	free(X), free(Y), free(R), free(IDS), free(dt);
}

static double loss_rmsnorm(void)
{
	ref_rmsnorm_fwd(X, G, N, D, Y, NULL);
	return ref_dot(Y, R, N * D);
}

static void test_rmsnorm(void)
{
	double *dx, *dg, *rstd;
	size_t i;

	N = 4, D = 6;
	X = rand_vec(N * D, 1), G = rand_vec((size_t)D, 1), Y = zeros(N * D);
	R = rand_vec(N * D, 1), dx = zeros(N * D), dg = zeros((size_t)D), rstd = zeros(N);
	ref_rmsnorm_bwd(R, X, G, N, D, dx, dg);
	fd_check("rmsnorm dx", X, N * D, loss_rmsnorm, dx);
	fd_check("rmsnorm dgain", G, (size_t)D, loss_rmsnorm, dg);
	/* Known value: a row of constant c normalises to ~1 (eps 1e-5). */
	for (i = 0; i < (size_t)D; i++)
		X[i] = 2.0, G[i] = 1.0;
	ref_rmsnorm_fwd(X, G, 1, D, Y, rstd);
	CHECK(fabs(Y[0] - 2.0 / sqrt(4.0 + 1e-5)) < 1e-15, "rmsnorm value %.17g", Y[0]);
	CHECK(fabs(rstd[0] - 1.0 / sqrt(4.0 + 1e-5)) < 1e-15, "rstd");
	free(X), free(G), free(Y), free(R), free(dx), free(dg), free(rstd);
}

static double loss_rope(void)
{
	ref_rope_fwd(X, Y, B, T, H, DH);
	return ref_dot(Y, R, N);
}

static void test_rope(void)
{
	double *dx, n0 = 0, n1 = 0;
	int i;

	B = 2, T = 5, H = 2, DH = 6;
	N = (size_t)B * T * H * DH;
	X = rand_vec(N, 1), Y = zeros(N), R = rand_vec(N, 1), dx = zeros(N);
	ref_rope_bwd(R, dx, B, T, H, DH);
	fd_check("rope dx", X, N, loss_rope, dx);
	ref_rope_fwd(X, Y, B, T, H, DH);
	for (i = 0; i < H * DH; i++)
		CHECK(Y[i] == X[i], "position 0 is the identity");
	/* Position 1, pair 0 rotates by exactly 1 radian; norms are kept. */
	{
		size_t at = (size_t)H * DH;

		CHECK(fabs(Y[at] - (X[at] * cos(1.0) - X[at + 1] * sin(1.0))) < 1e-14, "pair 0");
		CHECK(fabs(Y[at + 1] - (X[at] * sin(1.0) + X[at + 1] * cos(1.0))) < 1e-14, "pair 0");
		/* Pair 1 at position 1: angle 10000^(-2/6). */
		CHECK(fabs(Y[at + 2] - (X[at + 2] * cos(pow(1e4, -2.0 / 6)) -
					 X[at + 3] * sin(pow(1e4, -2.0 / 6)))) < 1e-14, "pair 1");
	}
	for (i = 0; i < (int)N; i++)
		n0 += X[i] * X[i], n1 += Y[i] * Y[i];
	CHECK(fabs(n0 - n1) < 1e-10 * n0, "rope keeps the norm");
	/* In place equals out of place. */
	memcpy(dx, X, N * sizeof(double));
	ref_rope_fwd(dx, dx, B, T, H, DH);
	CHECK(!memcmp(dx, Y, N * sizeof(double)), "rope in place");
	free(X), free(Y), free(R), free(dx);
}

static double SCALE;

static double loss_softmax(void)
{
	ref_causal_softmax_fwd(X, N, T, SCALE, Y);
	return ref_dot(Y, R, N * T * T);
}

static void test_softmax(void)
{
	size_t total, r;
	double *ds;
	int i, j;

	N = 3, T = 6, SCALE = 1.0 / sqrt(8.0);
	total = N * T * T;
	X = rand_vec(total, 3), Y = zeros(total), R = rand_vec(total, 1), ds = zeros(total);
	X[5] = 800.0; /* large scores: max subtraction keeps it finite */
	ref_causal_softmax_fwd(X, N, T, SCALE, Y);
	ref_causal_softmax_bwd(R, Y, N, T, SCALE, ds);
	for (r = 0; r < N; r++)
		for (i = 0; i < T; i++) {
			double sum = 0;

			for (j = 0; j < T; j++) {
				double p = Y[(r * T + i) * T + j];

				sum += p;
				CHECK(isfinite(p), "finite");
				if (j > i)
					CHECK(p == 0 && ds[(r * T + i) * T + j] == 0, "masked");
			}
			CHECK(fabs(sum - 1) < 1e-14, "row %d sums to %.17g", i, sum);
		}
	CHECK(Y[0] == 1.0, "first row is all on the diagonal");
	fd_check("causal softmax ds", X, total, loss_softmax, ds);
	free(X), free(Y), free(R), free(ds);
}

static double loss_attention(void)
{
	ref_attention_fwd(X, X2, X3, B, T, H, DH, Y, NULL);
	return ref_dot(Y, R, N);
}

static void test_attention(void)
{
	double *dq, *dk, *dv, *p, *dq2, *dk2, *dv2, *y2;

	B = 2, T = 5, H = 3, DH = 4;
	N = (size_t)B * T * H * DH;
	X = rand_vec(N, 1), X2 = rand_vec(N, 1), X3 = rand_vec(N, 1);
	Y = zeros(N), R = rand_vec(N, 1), y2 = zeros(N);
	dq = zeros(N), dk = zeros(N), dv = zeros(N), dq2 = zeros(N), dk2 = zeros(N), dv2 = zeros(N);
	p = zeros((size_t)B * H * T * T);
	ref_attention_fwd(X, X2, X3, B, T, H, DH, y2, p);
	ref_attention_bwd(R, X, X2, X3, p, B, T, H, DH, dq, dk, dv);
	ref_attention_bwd(R, X, X2, X3, NULL, B, T, H, DH, dq2, dk2, dv2);
	CHECK(!memcmp(dq, dq2, N * sizeof(double)) && !memcmp(dk, dk2, N * sizeof(double)) &&
	      !memcmp(dv, dv2, N * sizeof(double)), "saved and recomputed probabilities agree");
	/* The first query of every head attends only to itself: out = v. */
	CHECK(y2[0] == X3[0] && y2[DH] == X3[DH], "first row copies v");
	fd_check("attention dq", X, N, loss_attention, dq);
	fd_check("attention dk", X2, N, loss_attention, dk);
	fd_check("attention dv", X3, N, loss_attention, dv);
	free(X), free(X2), free(X3), free(Y), free(R), free(y2), free(p);
	free(dq), free(dk), free(dv), free(dq2), free(dk2), free(dv2);
}

static double loss_matmul(void)
{
	ref_matmul_fwd(X, X2, N, IN, OUT, Y);
	return ref_dot(Y, R, N * OUT);
}

static void test_matmul(void)
{
	double *dx, *dw;

	N = 5, IN = 4, OUT = 3;
	X = rand_vec(N * IN, 1), X2 = rand_vec((size_t)OUT * IN, 1);
	Y = zeros(N * OUT), R = rand_vec(N * OUT, 1);
	dx = zeros(N * IN), dw = zeros((size_t)OUT * IN);
	ref_matmul_fwd(X, X2, N, IN, OUT, Y);
	CHECK(fabs(Y[1] - (X[0] * X2[4] + X[1] * X2[5] + X[2] * X2[6] + X[3] * X2[7])) < 1e-14,
	      "y = x W^T");
	ref_matmul_bwd(R, X, X2, N, IN, OUT, dx, dw);
	fd_check("matmul dx", X, N * IN, loss_matmul, dx);
	fd_check("matmul dW", X2, (size_t)OUT * IN, loss_matmul, dw);
	free(X), free(X2), free(Y), free(R), free(dx), free(dw);
}

static double loss_swiglu(void)
{
	ref_swiglu_fwd(X, X2, N, Y);
	return ref_dot(Y, R, N);
}

static void test_swiglu(void)
{
	double *da, *db;

	N = 20;
	X = rand_vec(N, 2), X2 = rand_vec(N, 1), Y = zeros(N), R = rand_vec(N, 1);
	da = zeros(N), db = zeros(N);
	ref_swiglu_bwd(R, X, X2, N, da, db);
	fd_check("swiglu da", X, N, loss_swiglu, da);
	fd_check("swiglu db", X2, N, loss_swiglu, db);
	X[0] = 1.0, X2[0] = 2.0;
	ref_swiglu_fwd(X, X2, 1, Y);
	CHECK(fabs(Y[0] - 2.0 / (1.0 + exp(-1.0))) < 1e-15, "silu(1) * 2");
	free(X), free(X2), free(Y), free(R), free(da), free(db);
}

static double loss_ce(void)
{
	return 3.0 * ref_cross_entropy_fwd(X, IDS, N, V);
}

static void test_cross_entropy(void)
{
	double *dl, *u;

	N = 6, V = 7;
	X = rand_vec(N * V, 2), dl = zeros(N * V), u = zeros(N * V);
	IDS = malloc(N * sizeof(*IDS));
	ref_random_tokens(9, N, V, IDS);
	ref_cross_entropy_bwd(X, IDS, N, V, 3.0, dl);
	fd_check("cross-entropy dlogits", X, N * V, loss_ce, dl);
	CHECK(fabs(ref_cross_entropy_fwd(u, IDS, N, V) - log(7.0)) < 1e-15, "uniform is log V");
	/* A huge logit: max subtraction keeps loss and gradient finite and exact. */
	u[IDS[0] == 0 ? 1 : 0] = 1000.0;
	CHECK(fabs(ref_cross_entropy_fwd(u, IDS, 1, V) - 1000.0) < 1e-12, "loss 1000");
	ref_cross_entropy_bwd(u, IDS, 1, V, 1.0, dl);
	CHECK(fabs(dl[IDS[0]] + 1.0) < 1e-12 && isfinite(dl[0]), "gradient -1 at the target");
	free(X), free(dl), free(u), free(IDS);
}

static void test_adamw(void)
{
	const double lr = 0.1, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.01;
	double p = 1.0, m = 0, v = 0, g = 0.5, want, mm, vv, alpha;

	ref_adamw_step(&p, &g, &m, &v, 1, 1, lr, b1, b2, eps, wd);
	/* Step 1: m = 0.05, v = 0.00025, alpha = lr sqrt(0.001)/0.1. */
	mm = 0.1 * 0.5, vv = 0.001 * 0.25;
	alpha = lr * sqrt(1 - b2) / (1 - b1);
	want = 1.0 - alpha * mm / (sqrt(vv) + eps);
	want -= lr * wd * want;
	CHECK(fabs(p - want) < 1e-15 && fabs(m - mm) < 1e-15 * mm && fabs(v - vv) < 1e-15 * vv,
	      "adamw step 1: %.17g want %.17g", p, want);
	g = -0.25;
	{
		double p2 = p;

		mm = b1 * mm + (1 - b1) * g, vv = b2 * vv + (1 - b2) * g * g;
		alpha = lr * sqrt(1 - b2 * b2) / (1 - b1 * b1);
		want = p2 - alpha * mm / (sqrt(vv) + eps);
		want -= lr * wd * want;
	}
	ref_adamw_step(&p, &g, &m, &v, 1, 2, lr, b1, b2, eps, wd);
	CHECK(fabs(p - want) < 1e-15, "adamw step 2: %.17g want %.17g", p, want);
}

static void test_bf16(void)
{
	CHECK(ref_round_bf16(1.0) == 1.0, "1");
	CHECK(ref_round_bf16(1.0 + 0x1p-8) == 1.0, "tie to even (down)");
	CHECK(ref_round_bf16(1.0 + 3 * 0x1p-8) == 1.0 + 0x1p-6, "tie to even (up)");
	CHECK(ref_round_bf16(1.0 + 0x1p-7 + 0x1p-12) == 1.0 + 0x1p-7, "nearest");
	CHECK(ref_round_bf16(-3.0) == -3.0, "negative");
}

int main(void)
{
	ref_rng_init(&rng, 20240611);
	test_embedding();
	test_rmsnorm();
	test_rope();
	test_softmax();
	test_attention();
	test_matmul();
	test_swiglu();
	test_cross_entropy();
	test_adamw();
	test_bf16();
	return check_done("model_reference_ops");
}
