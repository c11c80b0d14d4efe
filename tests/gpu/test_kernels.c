/*
 * Every kernel of kernels/ and the GEMM wrapper of model/gemm.c against the
 * double-precision CPU reference (tests/lib/reference.h), on fresh random
 * non-zero inputs at odd sizes, in F32 and BF16 storage. Outputs are
 * poisoned with NaN first, so an element a kernel forgets fails the check.
 *
 * Tolerances (relative error ||gpu - ref|| / ||ref||):
 *   F32 storage 1e-5 (FP32 arithmetic against double);
 *   BF16 storage 1e-2 (inputs are rounded to BF16 before the reference sees
 *   them, so only the output rounding, 2^-9 relative, and FP32 maths remain);
 *   TF32 matmuls 5e-3; exact operations (gather, cast, head moves, zeroing) 0.
 */
#include "gpu_test.h"

#include "kernels/adamw.h"
#include "kernels/cast.h"
#include "kernels/cross_entropy.h"
#include "kernels/embedding.h"
#include "kernels/grad_reduce.h"
#include "kernels/init.h"
#include "kernels/residual.h"
#include "kernels/rmsnorm.h"
#include "kernels/rope.h"
#include "kernels/softmax.h"
#include "kernels/swiglu.h"
#include "kernels/zero.h"
#include "model/gemm.h"

#define B 3
#define T 33
#define H 4
#define DH 16
#define D (H * DH)
#define N (B * T)
#define FF 96
#define VOCAB 301

static struct ref_rng rng;

static double tol_of(int dtype)
{
	return dtype == ST_DT_BF16 ? 1e-2 : 1e-5;
}

static const char *dt_name(int dtype)
{
	return dtype == ST_DT_BF16 ? "bf16" : "f32";
}

static void label(char *buf, size_t cap, const char *what, int dtype)
{
	snprintf(buf, cap, "%s [%s]", what, dt_name(dtype));
}

static void test_embedding(void)
{
	int32_t ids[N];
	double *table = host_normal(&rng, (size_t)VOCAB * D, 1.0);
	double *dout = host_normal(&rng, (size_t)N * D, 1.0);
	double *base = host_normal(&rng, (size_t)VOCAB * D, 1.0);
	double *ref = malloc((size_t)N * D * sizeof(double));
	int32_t *dids;

	round_to(table, (size_t)VOCAB * D, ST_DT_F32);
	round_to(dout, (size_t)N * D, ST_DT_F32);
	round_to(base, (size_t)VOCAB * D, ST_DT_F32);
	ref_random_tokens(11, N, VOCAB, ids);
	ids[1] = ids[0];    /* a repeated id: the backward must add, not overwrite */
	CUDA_OK(cudaMalloc((void **)&dids, sizeof(ids)));
	CUDA_OK(cudaMemcpy(dids, ids, sizeof(ids), cudaMemcpyHostToDevice));

	float *dtable = upload(table, (size_t)VOCAB * D, ST_DT_F32);
	float *out = poisoned((size_t)N * D, ST_DT_F32);
	CHECK(embedding_forward(out, dtable, dids, N, D, 0) == 0, "embedding_forward launch");
	double *got = download(out, (size_t)N * D, ST_DT_F32);
	ref_embedding_fwd(table, ids, N, D, ref);
	check_err("embedding forward [f32]", rel_err(got, ref, (size_t)N * D), 0.0);
	free(got);

	float *dgrad = upload(base, (size_t)VOCAB * D, ST_DT_F32);
	float *ddout = upload(dout, (size_t)N * D, ST_DT_F32);
	CHECK(embedding_backward(dgrad, ddout, dids, N, D, 0) == 0, "embedding_backward launch");
	got = download(dgrad, (size_t)VOCAB * D, ST_DT_F32);
	ref_embedding_bwd(dout, ids, N, D, base);     /* base += scatter */
	check_err("embedding backward (accumulating) [f32]", rel_err(got, base, (size_t)VOCAB * D), 1e-6);
	free(got);
	cudaFree(dtable), cudaFree(out), cudaFree(dgrad), cudaFree(ddout), cudaFree(dids);
	free(table), free(dout), free(base), free(ref);
}

/*
 * n rows of d: d a multiple of 4 takes the warp-per-row kernels, any other
 * d the block-per-row ones; n past 16,384 rows (d 200) has each warp of the
 * backward walk several rows.
 */
static void test_rmsnorm(int dtype, int n, int d)
{
	double *x = host_normal(&rng, (size_t)n * d, 1.5), *g = host_normal(&rng, d, 0.2);
	double *y = malloc((size_t)n * d * sizeof(double)), *rstd = malloc(n * sizeof(double));
	char what[96];

	for (int i = 0; i < d; i++)
		g[i] += 1.0;
	round_to(x, (size_t)n * d, ST_DT_F32);
	round_to(g, d, ST_DT_F32);
	ref_rmsnorm_fwd(x, g, n, d, y, rstd);
	float *dx = upload(x, (size_t)n * d, ST_DT_F32), *dg = upload(g, d, ST_DT_F32);
	void *out = poisoned((size_t)n * d, dtype);
	float *drstd = poisoned(n, ST_DT_F32);
	CHECK(rmsnorm_forward(out, drstd, dx, dg, n, d, 1e-5f, dtype, 0) == 0, "rmsnorm_forward launch");
	double *got = download(out, (size_t)n * d, dtype), *got_r = download(drstd, n, ST_DT_F32);
	char name[64];
	snprintf(name, sizeof(name), "rmsnorm forward %dx%d", n, d);
	label(what, sizeof(what), name, dtype);
	check_err(what, rel_err(got, y, (size_t)n * d), tol_of(dtype));
	snprintf(name, sizeof(name), "rmsnorm forward rstd %dx%d", n, d);
	label(what, sizeof(what), name, dtype);
	check_err(what, rel_err(got_r, rstd, n), 1e-5);
	free(got), free(got_r);

	if (dtype == ST_DT_F32) {   /* the backward is FP32 throughout */
		double *dy = host_normal(&rng, (size_t)n * d, 1.0), *dxr = malloc((size_t)n * d * sizeof(double));
		double *gbase = host_normal(&rng, d, 1.0), *xbase = host_normal(&rng, (size_t)n * d, 1.0);
		round_to(dy, (size_t)n * d, ST_DT_F32);
		round_to(gbase, d, ST_DT_F32);
		round_to(xbase, (size_t)n * d, ST_DT_F32);
		double *dgr = malloc(d * sizeof(double));
		memcpy(dgr, gbase, d * sizeof(double));
		ref_rmsnorm_bwd(dy, x, g, n, d, dxr, dgr);

		float *ddy = upload(dy, (size_t)n * d, ST_DT_F32), *rs = upload(rstd, n, ST_DT_F32);
		float *ddx = poisoned((size_t)n * d, ST_DT_F32), *ddg = upload(gbase, d, ST_DT_F32);
		CHECK(rmsnorm_backward(ddx, NULL, ddg, ddy, dx, dg, rs, n, d, 0, 0) == 0,
		      "rmsnorm_backward launch");
		double *gdx = download(ddx, (size_t)n * d, ST_DT_F32), *gdg = download(ddg, d, ST_DT_F32);
		snprintf(name, sizeof(name), "rmsnorm backward dx %dx%d [f32]", n, d);
		check_err(name, rel_err(gdx, dxr, (size_t)n * d), 1e-5);
		snprintf(name, sizeof(name), "rmsnorm backward dg (accumulating) %dx%d [f32]", n, d);
		check_err(name, rel_err(gdg, dgr, d), 1e-5);
		free(gdx);
		/* accumulate: dx = base + backward */
		float *ddx2 = upload(xbase, (size_t)n * d, ST_DT_F32);
		CHECK(rmsnorm_backward(ddx2, NULL, ddg, ddy, dx, dg, rs, n, d, 1, 0) == 0,
		      "rmsnorm_backward launch");
		gdx = download(ddx2, (size_t)n * d, ST_DT_F32);
		for (size_t i = 0; i < (size_t)n * d; i++)
			dxr[i] += xbase[i];
		snprintf(name, sizeof(name), "rmsnorm backward dx (accumulating) %dx%d [f32]", n, d);
		check_err(name, rel_err(gdx, dxr, (size_t)n * d), 1e-5);
		free(gdx), free(gdg), free(dy), free(dxr), free(gbase), free(xbase), free(dgr);
		cudaFree(ddx2);

		/* the BF16 copy of dx: its FP32 dx rounded, after the add when accumulating */
		for (int acc = 0; acc < 2; acc++) {
			double *base = host_normal(&rng, (size_t)n * d, 1.0);
			round_to(base, (size_t)n * d, ST_DT_F32);
			float *ddx3 = acc ? upload(base, (size_t)n * d, ST_DT_F32) : ddx;
			void *dbf = poisoned((size_t)n * d, ST_DT_BF16);
			CHECK(rmsnorm_backward(ddx3, dbf, ddg, ddy, dx, dg, rs, n, d, acc, 0) == 0,
			      "rmsnorm_backward launch");
			gdx = download(ddx3, (size_t)n * d, ST_DT_F32);
			double *gbf = download(dbf, (size_t)n * d, ST_DT_BF16);
			for (size_t i = 0; i < (size_t)n * d; i++)
				gdx[i] = ref_round_bf16(gdx[i]);
			snprintf(name, sizeof(name), "rmsnorm backward dx bf16 copy%s %dx%d",
				 acc ? " (accumulating)" : "", n, d);
			check_err(name, rel_err(gbf, gdx, (size_t)n * d), 0.0);
			free(base), free(gdx), free(gbf);
			cudaFree(dbf);
			if (acc)
				cudaFree(ddx3);
		}
		cudaFree(ddy), cudaFree(rs), cudaFree(ddx), cudaFree(ddg);
	}
	cudaFree(dx), cudaFree(dg), cudaFree(out), cudaFree(drstd);
	free(x), free(g), free(y), free(rstd);
}

/* y = x moved from (B, T, H, DH) to (B, H, T, DH) if to_heads, else back. */
static void host_heads(const double *x, double *y, int to_heads)
{
	for (int b = 0; b < B; b++)
		for (int t = 0; t < T; t++)
			for (int h = 0; h < H; h++)
				for (int e = 0; e < DH; e++) {
					size_t tok = (((size_t)b * T + t) * H + h) * DH + e;
					size_t head = (((size_t)b * H + h) * T + t) * DH + e;
					if (to_heads)
						y[head] = x[tok];
					else
						y[tok] = x[head];
				}
}

/*
 * The token-major side of the rope kernels: q, k, v (N, D) each inside one
 * buffer of 3 N D elements, rows ld apart, q, k, v starting at off[j]. With
 * ld = D they are three tensors one after another; with ld = 3D they are the
 * column blocks of the fused projection's rows [q | k | v], and with
 * ld = 3d + 2 the same with two unused elements ending each row (the
 * kernels' scalar form).
 */
struct tok_layout {
	const char *name;
	long long ld;
	size_t off[3];
};

static const struct tok_layout tok_layouts[3] = {
	{ "stride d", D, { 0, (size_t)N * D, 2 * (size_t)N * D } },
	{ "stride 3d", 3 * D, { 0, D, 2 * D } },
	{ "stride 3d+2", 3 * D + 2, { 0, D, 2 * D } },   /* no 16-byte vector divides it */
};

/* Elements of the buffer that holds a layout: N rows of 3 D, or of ld when wider. */
static size_t tok_size(const struct tok_layout *L)
{
	return L->ld > 3 * D ? (size_t)N * L->ld : 3 * (size_t)N * D;
}

/* x[j] (N, D) placed into buf, or taken out of it if !into. */
static void tok_place(const struct tok_layout *L, double *buf, double *const *x, int into)
{
	for (int j = 0; j < 3; j++)
		for (size_t r = 0; r < N; r++)
			for (size_t c = 0; c < D; c++) {
				size_t i = L->off[j] + r * (size_t)L->ld + c;
				if (into)
					buf[i] = x[j][r * D + c];
				else
					x[j][r * D + c] = buf[i];
			}
}

/* got[j] against refs[j], j < 3, with tolerances tols[j]. */
static void check_three(double *const *got, double *const *refs, const char *const *names,
			const char *layout, const double *tols, size_t n, int dtype)
{
	char what[128], name[96];

	for (int j = 0; j < 3; j++) {
		snprintf(name, sizeof(name), "%s, %s", names[j], layout);
		label(what, sizeof(what), name, dtype);
		check_err(what, rel_err(got[j], refs[j], n), tols[j]);
	}
}

/*
 * rope_to_heads against ref_rope_fwd then the move to heads (q, k) or the
 * move alone (v); rope_from_heads against the move back then ref_rope_bwd;
 * both with the token-major side at row stride d and 3d (tok_layouts);
 * heads_permute both ways. Moves are copies: exact.
 */
static void test_rope(int dtype)
{
	static const char *const fwd_names[3] = { "rope to heads q", "rope to heads k",
						  "rope to heads v (copy)" };
	static const char *const bwd_names[3] = { "rope from heads dq", "rope from heads dk",
						  "rope from heads dv (copy)" };
	size_t n = (size_t)N * D, es = dtype_size(dtype);
	double *x[3], *ref[3], *got[3], *tmp = malloc(n * sizeof(double));
	double *buf = malloc(tok_size(&tok_layouts[2]) * sizeof(double));
	void *in[3], *out[3];
	float *table = malloc((size_t)T * DH * sizeof(float)), *dtable;
	double tols[3] = { tol_of(dtype), tol_of(dtype), 0.0 };
	char what[96];

	for (int j = 0; j < 3; j++) {
		x[j] = host_normal(&rng, n, 1.0);
		round_to(x[j], n, dtype);
		ref[j] = malloc(n * sizeof(double));
		got[j] = malloc(n * sizeof(double));
		in[j] = upload(x[j], n, dtype);     /* head-major inputs of the backward */
		out[j] = poisoned(n, dtype);        /* head-major outputs of the forward */
	}
	rope_table_fill(table, T, DH, REF_ROPE_THETA);
	CUDA_OK(cudaMalloc((void **)&dtable, (size_t)T * DH * sizeof(float)));
	CUDA_OK(cudaMemcpy(dtable, table, (size_t)T * DH * sizeof(float), cudaMemcpyHostToDevice));

	for (int li = 0; li < 3; li++) {
		const struct tok_layout *L = &tok_layouts[li];
		size_t nb = tok_size(L);

		/* forward: x[] are q, k, v token-major, placed by the layout */
		for (size_t i = 0; i < nb; i++)
			buf[i] = 0.0;                  /* the padding, where there is any */
		tok_place(L, buf, x, 1);
		char *tok = upload(buf, nb, dtype);
		for (int j = 0; j < 3; j++) {
			CUDA_OK(cudaMemset(out[j], 0xff, n * es));
			if (j < 2)
				ref_rope_fwd(x[j], tmp, B, T, H, DH);
			else
				memcpy(tmp, x[j], n * sizeof(double));
			host_heads(tmp, ref[j], 1);
		}
		CHECK(rope_to_heads(out[0], out[1], out[2], tok + L->off[0] * es, tok + L->off[1] * es,
				    tok + L->off[2] * es, L->ld, dtable, B, T, H, DH, dtype, 0) == 0,
		      "rope_to_heads launch");
		for (int j = 0; j < 3; j++) {
			free(got[j]);
			got[j] = download(out[j], n, dtype);
		}
		check_three(got, ref, fwd_names, L->name, tols, n, dtype);

		/* backward: the same x[] read as dqh, dkh, dvh head-major, written by the layout */
		CUDA_OK(cudaMemset(tok, 0xff, nb * es));
		for (int j = 0; j < 3; j++) {
			host_heads(x[j], tmp, 0);
			if (j < 2)
				ref_rope_bwd(tmp, ref[j], B, T, H, DH);
			else
				memcpy(ref[j], tmp, n * sizeof(double));
		}
		CHECK(rope_from_heads(tok + L->off[0] * es, tok + L->off[1] * es, tok + L->off[2] * es,
				      in[0], in[1], in[2], L->ld, dtable, B, T, H, DH, dtype, 0) == 0,
		      "rope_from_heads launch");
		double *all = download(tok, nb, dtype);  /* every element placed: a poisoned one fails */
		tok_place(L, all, got, 0);
		free(all);
		check_three(got, ref, bwd_names, L->name, tols, n, dtype);
		cudaFree(tok);
	}

	for (int to = 1; to >= 0; to--) {
		CUDA_OK(cudaMemset(out[0], 0xff, n * es));
		host_heads(x[0], ref[0], to);
		CHECK(heads_permute(out[0], in[0], B, T, H, DH, to, dtype, 0) == 0,
		      "heads_permute launch");
		double *g = download(out[0], n, dtype);
		label(what, sizeof(what), to ? "heads permute to heads" : "heads permute from heads",
		      dtype);
		check_err(what, rel_err(g, ref[0], n), 0.0);
		free(g);
	}
	for (int j = 0; j < 3; j++) {
		cudaFree(in[j]), cudaFree(out[j]);
		free(x[j]), free(ref[j]), free(got[j]);
	}
	cudaFree(dtable);
	free(tmp), free(buf), free(table);
}

static void test_softmax(int dtype)
{
	size_t rows = (size_t)B * H, n = rows * T * T;
	double scale = 1.0 / sqrt((double)DH);
	double *s = host_normal(&rng, n, 3.0), *p = malloc(n * sizeof(double));
	double *dp = host_normal(&rng, n, 1.0), *ds = malloc(n * sizeof(double));
	char what[96];

	round_to(s, n, dtype);
	round_to(dp, n, dtype);
	ref_causal_softmax_fwd(s, rows, T, scale, p);
	void *dsin = upload(s, n, dtype), *dpout = poisoned(n, dtype);
	CHECK(causal_softmax_forward(dpout, dsin, (int)rows, T, (float)scale, dtype, 0) == 0,
	      "causal_softmax_forward launch");
	double *got = download(dpout, n, dtype);
	label(what, sizeof(what), "causal softmax forward", dtype);
	check_err(what, rel_err(got, p, n), tol_of(dtype));
	free(got);

	round_to(p, n, dtype);           /* the backward reads the stored probabilities */
	ref_causal_softmax_bwd(dp, p, rows, T, scale, ds);
	void *dpp = upload(p, n, dtype), *ddp = upload(dp, n, dtype), *dds = poisoned(n, dtype);
	CHECK(causal_softmax_backward(dds, ddp, dpp, (int)rows, T, (float)scale, dtype, 0) == 0,
	      "causal_softmax_backward launch");
	got = download(dds, n, dtype);
	label(what, sizeof(what), "causal softmax backward", dtype);
	check_err(what, rel_err(got, ds, n), tol_of(dtype));
	free(got);
	CHECK(causal_softmax_backward(ddp, ddp, dpp, (int)rows, T, (float)scale, dtype, 0) == 0,
	      "causal_softmax_backward launch");
	got = download(ddp, n, dtype);
	label(what, sizeof(what), "causal softmax backward in place", dtype);
	check_err(what, rel_err(got, ds, n), tol_of(dtype));
	free(got);
	cudaFree(dsin), cudaFree(dpout), cudaFree(dpp), cudaFree(ddp), cudaFree(dds);
	free(s), free(p), free(dp), free(ds);
}

/* rows [a | b] of (rows, 2 f) from a and b (rows, f), or back if !join. */
static void halves(double *ab, double *a, double *b, size_t rows, size_t f, int join)
{
	for (size_t r = 0; r < rows; r++)
		for (size_t c = 0; c < f; c++) {
			double *lo = &ab[r * 2 * f + c], *hi = lo + f;
			if (join)
				*lo = a[r * f + c], *hi = b[r * f + c];
			else
				a[r * f + c] = *lo, b[r * f + c] = *hi;
		}
}

/*
 * The gate on the fused layout: h13 (rows, 2 f) rows [a | b] in, dh13 rows
 * [da | db] out. f a multiple of 8 (4 in FP32) takes the 16-byte kernels.
 */
static void test_swiglu(int dtype, size_t rows, size_t f)
{
	size_t n = rows * f;
	double *a = host_normal(&rng, n, 2.0), *b = host_normal(&rng, n, 1.0);
	double *dh = host_normal(&rng, n, 1.0), *h = malloc(n * sizeof(double));
	double *da = malloc(n * sizeof(double)), *db = malloc(n * sizeof(double));
	double *ab = malloc(2 * n * sizeof(double));
	char what[96], name[80];

	round_to(a, n, dtype), round_to(b, n, dtype), round_to(dh, n, dtype);
	ref_swiglu_fwd(a, b, n, h);
	ref_swiglu_bwd(dh, a, b, n, da, db);
	halves(ab, a, b, rows, f, 1);
	void *gpab = upload(ab, 2 * n, dtype), *gpdh = upload(dh, n, dtype);
	void *gph = poisoned(n, dtype), *gpdab = poisoned(2 * n, dtype);
	CHECK(swiglu_forward(gph, gpab, (long long)rows, (int)f, dtype, 0) == 0,
	      "swiglu_forward launch");
	CHECK(swiglu_backward(gpdab, gpdh, gpab, (long long)rows, (int)f, dtype, 0) == 0,
	      "swiglu_backward launch");
	double *gh = download(gph, n, dtype), *gdab = download(gpdab, 2 * n, dtype);
	double *gda = malloc(n * sizeof(double)), *gdb = malloc(n * sizeof(double));
	halves(gdab, gda, gdb, rows, f, 0);      /* both halves cover dh13: a poisoned element fails */
	snprintf(name, sizeof(name), "swiglu forward (fused input) %zux%zu", rows, f);
	label(what, sizeof(what), name, dtype);
	check_err(what, rel_err(gh, h, n), tol_of(dtype));
	snprintf(name, sizeof(name), "swiglu backward da (fused output) %zux%zu", rows, f);
	label(what, sizeof(what), name, dtype);
	check_err(what, rel_err(gda, da, n), tol_of(dtype));
	snprintf(name, sizeof(name), "swiglu backward db (fused output) %zux%zu", rows, f);
	label(what, sizeof(what), name, dtype);
	check_err(what, rel_err(gdb, db, n), tol_of(dtype));
	free(gh), free(gdab), free(gda), free(gdb);
	cudaFree(gpab), cudaFree(gpdh), cudaFree(gph), cudaFree(gpdab);
	free(a), free(b), free(dh), free(h), free(da), free(db), free(ab);
}

static void test_cross_entropy(int dtype)
{
	size_t n = (size_t)N * VOCAB;
	int32_t tg[N], *dtg;
	double *logits = host_normal(&rng, n, 3.0), *dl = malloc(n * sizeof(double));
	char what[96];

	round_to(logits, n, dtype);
	ref_random_tokens(5, N, VOCAB, tg);
	double loss = ref_cross_entropy_fwd(logits, tg, N, VOCAB);
	ref_cross_entropy_bwd(logits, tg, N, VOCAB, 1.0, dl);
	CUDA_OK(cudaMalloc((void **)&dtg, sizeof(tg)));
	CUDA_OK(cudaMemcpy(dtg, tg, sizeof(tg), cudaMemcpyHostToDevice));
	void *dlog = upload(logits, n, dtype), *ddl = poisoned(n, dtype);
	float *dloss = poisoned(1, ST_DT_F32), *dlse = poisoned(2 * N, ST_DT_F32);
	CHECK(cross_entropy_forward(dloss, dlse, dlog, dtg, N, VOCAB, dtype, 0) == 0,
	      "cross_entropy_forward launch");
	CHECK(cross_entropy_backward(ddl, dlog, dlse, dtg, N, VOCAB, dtype, 0) == 0,
	      "cross_entropy_backward launch");
	double *gl = download(dloss, 1, ST_DT_F32), *gdl = download(ddl, n, dtype);
	label(what, sizeof(what), "cross-entropy forward (mean loss)", dtype);
	check_err(what, fabs(gl[0] - loss) / fabs(loss), 1e-5);
	label(what, sizeof(what), "cross-entropy backward", dtype);
	check_err(what, rel_err(gdl, dl, n), tol_of(dtype));
	free(gl), free(gdl);

	/* fused: the same loss, lse and gradient from one launch, the gradient over the logits */
	double *glse = download(dlse, N, ST_DT_F32);
	float *dloss2 = poisoned(1, ST_DT_F32), *dlse2 = poisoned(2 * N, ST_DT_F32);
	CHECK(cross_entropy_fused(dloss2, dlse2, dlog, dtg, N, VOCAB, dtype, 0) == 0,
	      "cross_entropy_fused launch");
	gl = download(dloss2, 1, ST_DT_F32), gdl = download(dlog, n, dtype);
	double *glse2 = download(dlse2, N, ST_DT_F32);
	label(what, sizeof(what), "cross-entropy fused: mean loss", dtype);
	check_err(what, fabs(gl[0] - loss) / fabs(loss), 1e-5);
	label(what, sizeof(what), "cross-entropy fused: gradient over the logits", dtype);
	check_err(what, rel_err(gdl, dl, n), tol_of(dtype));
	label(what, sizeof(what), "cross-entropy fused: lse as the forward's", dtype);
	check_err(what, rel_err(glse2, glse, N), 1e-6);
	free(gl), free(gdl), free(glse), free(glse2);
	cudaFree(dloss2), cudaFree(dlse2);
	cudaFree(dtg), cudaFree(dlog), cudaFree(ddl), cudaFree(dloss), cudaFree(dlse);
	free(logits), free(dl);
}

static void test_adamw(void)
{
	const size_t n = 1000;
	const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
	double *p = host_normal(&rng, n, 0.5), *m = calloc(n, sizeof(double)), *v = calloc(n, sizeof(double));
	double *p0 = malloc(n * sizeof(double));

	round_to(p, n, ST_DT_F32);
	memcpy(p0, p, n * sizeof(double));
	float *dp = upload(p, n, ST_DT_F32), *dm = upload(m, n, ST_DT_F32), *dv = upload(v, n, ST_DT_F32);
	for (int t = 1; t <= 3; t++) {
		double *g = host_normal(&rng, n, 1e-2);
		round_to(g, n, ST_DT_F32);
		float *dg = upload(g, n, ST_DT_F32);
		double alpha = lr * sqrt(1 - pow(b2, t)) / (1 - pow(b1, t));
		CHECK(adamw_update(dp, dg, dm, dv, (long long)n, b1, b2, (float)eps,
				   (float)alpha, (float)(lr * wd), NULL, 0, 0) == 0, "adamw_update launch");
		ref_adamw_step(p, g, m, v, n, t, lr, b1, b2, eps, wd);
		cudaFree(dg);
		free(g);
	}
	double *gp = download(dp, n, ST_DT_F32), *gm = download(dm, n, ST_DT_F32), *gv = download(dv, n, ST_DT_F32);
	double *dref = malloc(n * sizeof(double)), *dgot = malloc(n * sizeof(double));
	for (size_t i = 0; i < n; i++)
		dref[i] = p[i] - p0[i], dgot[i] = gp[i] - p0[i];
	check_err("adamw 3 steps: parameters [f32]", rel_err(gp, p, n), 1e-6);
	check_err("adamw 3 steps: parameter change [f32]", rel_err(dgot, dref, n), 1e-4);
	check_err("adamw 3 steps: first moment [f32]", rel_err(gm, m, n), 1e-5);
	check_err("adamw 3 steps: second moment [f32]", rel_err(gv, v, n), 1e-5);
	free(gp), free(gm), free(gv), free(dref), free(dgot);
	cudaFree(dp), cudaFree(dm), cudaFree(dv);
	free(p), free(m), free(v), free(p0);
}

/*
 * AdamW averaging the ranks' gradients (--allreduce exchange): three
 * gradient buffers, the first of them the rank's own; the update must be
 * the reference's with the float mean ((g0 + g1) + g2) * (1/3) (tolerances
 * as above), and the gradients must be left as they were; for
 * the plain kernel and the fused one (its four-wide path and, with n odd,
 * its one-wide path).
 */
static void test_adamw_avg(int fused, size_t n)
{
	const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
	double *p = host_normal(&rng, n, 0.5), *m = calloc(n, sizeof(double)), *v = calloc(n, sizeof(double));
	double *g[3], *mean = malloc(n * sizeof(double));
	float *dg[3], *dhyper;
	const float *avg[3];
	char what[96];

	round_to(p, n, ST_DT_F32);
	float *dp = upload(p, n, ST_DT_F32), *dm = upload(m, n, ST_DT_F32), *dv = upload(v, n, ST_DT_F32);
	for (int j = 0; j < 3; j++) {
		g[j] = host_normal(&rng, n, 1e-2 * (j + 1));
		round_to(g[j], n, ST_DT_F32);
		dg[j] = upload(g[j], n, ST_DT_F32);
		avg[j] = dg[j];
	}
	for (size_t i = 0; i < n; i++)
		mean[i] = (((float)g[0][i] + (float)g[1][i]) + (float)g[2][i]) * (1.0f / 3.0f);
	float hyper[2] = { (float)(lr * sqrt(1 - pow(b2, 1)) / (1 - pow(b1, 1))), (float)(lr * wd) };
	CUDA_OK(cudaMalloc((void **)&dhyper, 2 * sizeof(float)));
	CUDA_OK(cudaMemcpy(dhyper, hyper, sizeof(hyper), cudaMemcpyHostToDevice));
	if (fused)
		CHECK(adamw_update_copy(dp, dg[0], dm, dv, (long long)n, b1, b2, (float)eps, dhyper, NULL, 0,
					avg, 3, 0) == 0, "adamw_update_copy (average) launch");
	else
		CHECK(adamw_update(dp, dg[0], dm, dv, (long long)n, b1, b2, (float)eps, hyper[0], hyper[1],
				   avg, 3, 0) == 0, "adamw_update (average) launch");
	ref_adamw_step(p, mean, m, v, n, 1, lr, b1, b2, eps, wd);
	double *gp = download(dp, n, ST_DT_F32), *gg = download(dg[0], n, ST_DT_F32);
	snprintf(what, sizeof(what), "adamw%s averaging 3 ranks (n %zu): parameters [f32]", fused ? " (fused)" : "", n);
	check_err(what, rel_err(gp, p, n), 1e-6);
	snprintf(what, sizeof(what), "adamw%s averaging 3 ranks (n %zu): gradients untouched [f32]",
		 fused ? " (fused)" : "", n);
	check_err(what, rel_err(gg, g[0], n), 0.0);
	for (int j = 0; j < 3; j++)
		free(g[j]), cudaFree(dg[j]);
	free(gp), free(gg), free(mean), free(p), free(m), free(v);
	cudaFree(dp), cudaFree(dm), cudaFree(dv), cudaFree(dhyper);
}

/*
 * adamw_update_copy (--kernels fused): the same update with alpha_t and
 * lr_wd read from device memory, and the BF16 copy of every parameter from
 * copy_from on, which must be exactly the rounding of the parameter it
 * wrote (tolerance 0), and must touch no element before copy_from. pad
 * poisoned elements sit before the copy: copy_from 136 with pad 4 takes the
 * four-wide path (aligned), 137 with pad 1 the one-wide path.
 */
static void test_adamw_copy(size_t from, size_t pad)
{
	const size_t n = 1000, nc = n - from;
	const double lr = 1e-2, b1 = 0.9, b2 = 0.999, eps = 1e-8, wd = 0.1;
	double *p = host_normal(&rng, n, 0.5), *m = calloc(n, sizeof(double)), *v = calloc(n, sizeof(double));
	double *r = malloc(n * sizeof(double));
	float *dhyper;
	void *copy_base;

	round_to(p, n, ST_DT_F32);
	float *dp = upload(p, n, ST_DT_F32), *dm = upload(m, n, ST_DT_F32), *dv = upload(v, n, ST_DT_F32);
	/* the copy pad elements wider in front, poisoned: the kernel must leave them */
	copy_base = poisoned(nc + pad, ST_DT_BF16);
	void *copy = (char *)copy_base + 2 * pad;
	CUDA_OK(cudaMalloc((void **)&dhyper, 2 * sizeof(float)));
	for (int t = 1; t <= 3; t++) {
		double *g = host_normal(&rng, n, 1e-2);
		round_to(g, n, ST_DT_F32);
		float *dg = upload(g, n, ST_DT_F32);
		float hyper[2] = { (float)(lr * sqrt(1 - pow(b2, t)) / (1 - pow(b1, t))), (float)(lr * wd) };
		CUDA_OK(cudaMemcpy(dhyper, hyper, sizeof(hyper), cudaMemcpyHostToDevice));
		CHECK(adamw_update_copy(dp, dg, dm, dv, (long long)n, b1, b2, (float)eps, dhyper, copy,
					(long long)from, NULL, 0, 0) == 0, "adamw_update_copy launch");
		ref_adamw_step(p, g, m, v, n, t, lr, b1, b2, eps, wd);
		cudaFree(dg);
		free(g);
	}
	double *gp = download(dp, n, ST_DT_F32), *gm = download(dm, n, ST_DT_F32);
	double *gc = download(copy_base, nc + pad, ST_DT_BF16);
	char what[96];
	snprintf(what, sizeof(what), "adamw (fused, copy from %zu) 3 steps: parameters [f32]", from);
	check_err(what, rel_err(gp, p, n), 1e-6);
	snprintf(what, sizeof(what), "adamw (fused, copy from %zu) 3 steps: first moment [f32]", from);
	check_err(what, rel_err(gm, m, n), 1e-5);
	for (size_t i = 0; i < nc; i++)
		r[i] = ref_round_bf16(gp[from + i]);
	snprintf(what, sizeof(what), "adamw (fused, copy from %zu): bf16 copy of what it wrote", from);
	check_err(what, rel_err(gc + pad, r, nc), 0.0);
	for (size_t i = 0; i < pad; i++)
		CHECK(isnan(gc[i]), "adamw (fused) wrote before its copy (%g)", gc[i]);
	free(gp), free(gm), free(gc), free(r);
	cudaFree(dp), cudaFree(dm), cudaFree(dv), cudaFree(copy_base), cudaFree(dhyper);
	free(p), free(m), free(v);
}

static void test_cast_residual(void)
{
	size_t n = 4099;
	double *x = host_normal(&rng, n, 10.0), *y = host_normal(&rng, n, 1.0);
	double *r = malloc(n * sizeof(double));

	round_to(x, n, ST_DT_F32);
	float *dx = upload(x, n, ST_DT_F32);
	void *out = poisoned(n, ST_DT_BF16);
	CHECK(cast_f32_to_bf16(out, dx, (long long)n, 0) == 0, "cast launch");
	double *got = download(out, n, ST_DT_BF16);
	for (size_t i = 0; i < n; i++)
		r[i] = ref_round_bf16(x[i]);
	check_err("cast f32 -> bf16 (round to nearest even)", rel_err(got, r, n), 0.0);
	free(got);
	cudaFree(out);

	for (int dtype = ST_DT_F32; dtype <= ST_DT_BF16; dtype++) {
		char what[96];
		double *yy = malloc(n * sizeof(double));
		memcpy(yy, y, n * sizeof(double));
		round_to(yy, n, dtype);
		void *dy = upload(yy, n, dtype);
		float *o = poisoned(n, ST_DT_F32);
		CHECK(residual_forward(o, dx, dy, (long long)n, dtype, 0) == 0, "residual launch");
		got = download(o, n, ST_DT_F32);
		for (size_t i = 0; i < n; i++)
			r[i] = x[i] + yy[i];
		label(what, sizeof(what), "residual add", dtype);
		check_err(what, rel_err(got, r, n), 1e-7);
		free(got), free(yy);
		cudaFree(dy), cudaFree(o);
	}
	cudaFree(dx);
	free(x), free(y), free(r);
}

/*
 * zero_groups on random non-zero data: the ranges of four groups (one of a
 * single range, one with ranges back to back) zero, every other element as
 * it was.
 */
static void test_zero_groups(void)
{
	const size_t n = 5003;
	const struct zero_group groups[ZERO_MAX_GROUPS] = {
		{ 3, 211, 7, 64 }, { 70, 211, 7, 100 }, { 4900, 0, 1, 77 }, { 1600, 50, 40, 50 },
	};
	double *v = host_normal(&rng, n, 1.0);

	for (size_t i = 0; i < n; i++)
		v[i] = v[i] == 0.0 ? 1.0 : v[i];
	round_to(v, n, ST_DT_F32);
	float *dv = upload(v, n, ST_DT_F32);
	CHECK(zero_groups(dv, groups, ZERO_MAX_GROUPS, 0) == 0, "zero_groups launch");
	double *got = download(dv, n, ST_DT_F32);
	for (int j = 0; j < ZERO_MAX_GROUPS; j++)
		for (int r = 0; r < groups[j].count; r++)
			for (int e = 0; e < groups[j].len; e++)
				v[groups[j].first + r * groups[j].stride + e] = 0.0;
	size_t zeros = 0;
	for (size_t i = 0; i < n; i++)
		zeros += v[i] == 0.0;
	printf("  zero groups: %zu of %zu elements zeroed\n", zeros, n);
	check_err("zero groups (targets zero, rest untouched) [f32]", rel_err(got, v, n), 0.0);
	free(v), free(got);
	cudaFree(dv);
}

/*
 * grad_reduce (the copy-engine all-reduce's kernel): out = (in_0 + ... +
 * in_k-1) * scale, in that order of FP32 additions, so exactly the CPU's
 * float arithmetic; for 2, 4 and 8 inputs with out the first of them (in
 * place, as the ranks' shards) and for 2 into a buffer of its own, 16-byte
 * aligned (the vector path) and not (offset by one element), on a full and
 * a capped grid (grid-stride).
 */
static void test_grad_reduce(void)
{
	const size_t n = 10003;
	int ins[] = { 2, 4, 8, -2 };   /* -2: two inputs, out apart */

	for (size_t c = 0; c < sizeof(ins) / sizeof(ins[0]); c++)
		for (int shift = 0; shift <= 1; shift++)
			for (int cap = 0; cap <= 3; cap += 3) {
				int k = abs(ins[c]), apart = ins[c] < 0;
				size_t m = n - (size_t)shift - (shift ? 0 : 3);   /* aligned: a multiple of 4 */
				double *in[GRAD_REDUCE_MAX_IN], *r = malloc(n * sizeof(double));
				float *din[GRAD_REDUCE_MAX_IN], *out;
				const float *p[GRAD_REDUCE_MAX_IN];
				char what[96];

				for (int j = 0; j < k; j++) {
					in[j] = host_normal(&rng, n, 1.0 + j);
					round_to(in[j], n, ST_DT_F32);
					din[j] = upload(in[j], n, ST_DT_F32);
					p[j] = din[j] + shift;
				}
				out = apart ? poisoned(n, ST_DT_F32) : din[0];
				CHECK(grad_reduce(out + shift, p, k, (long long)m, 1.0f / (float)k, cap, 0) == 0,
				      "grad_reduce launch");
				double *got = download(out, n, ST_DT_F32);
				for (size_t i = (size_t)shift; i < (size_t)shift + m; i++) {
					float acc = (float)in[0][i];

					for (int j = 1; j < k; j++)
						acc += (float)in[j][i];
					r[i] = acc * (1.0f / (float)k);
				}
				snprintf(what, sizeof(what), "grad reduce, %d inputs%s, %s, %s grid [f32]", k,
					 apart ? " out apart" : " in place", shift ? "unaligned" : "aligned",
					 cap ? "capped" : "full");
				check_err(what, rel_err(got + shift, r + shift, m), 0.0);
				if (!apart)   /* around the range: untouched */
					for (size_t i = 0; i < n; i++)
						if (i < (size_t)shift || i >= (size_t)shift + m)
							CHECK(got[i] == in[0][i], "grad reduce wrote element %zu", i);
				for (int j = 0; j < k; j++)
					free(in[j]), cudaFree(din[j]);
				if (apart)
					cudaFree(out);
				free(r), free(got);
			}
}

static void test_init(void)
{
	const long long n = 1 << 20;
	const float std = 0.02f;
	float *d = poisoned(n, ST_DT_F32);

	CHECK(init_trunc_normal(d, n, std, 3.0f, 42, 0) == 0, "init launch");
	double *v = download(d, n, ST_DT_F32), sum = 0, sq = 0, mx = 0;
	for (long long i = 0; i < n; i++) {
		sum += v[i], sq += v[i] * v[i];
		mx = fmax(mx, fabs(v[i]));
	}
	double mean = sum / n, sd = sqrt(sq / n - mean * mean);
	double want = std * 0.986572;  /* std of N(0,1) cut at +-3 */
	printf("  truncated normal: mean %.2e std %.5f (want %.5f) max |x| %.4f (cut %.4f)\n", mean, sd,
	       want, mx, 3 * std);
	CHECK(fabs(mean) < 1e-4 && fabs(sd / want - 1) < 5e-3 && mx <= 3 * std * (1 + 1e-6),
	      "init_trunc_normal statistics off");
	CHECK(init_fill(d, n, 1.0f, 0) == 0, "init_fill launch");
	free(v);
	v = download(d, n, ST_DT_F32);
	for (long long i = 0; i < n; i++)
		if (v[i] != 1.0) {
			CHECK(0, "init_fill left element %lld = %g", i, v[i]);
			break;
		}
	free(v);
	cudaFree(d);
}

/*
 * One gemm_rm case: batch products whose row strides are pad wider than the
 * rows, A, B and C starting off[] elements into their buffers (so their
 * pointers lose alignment), C added to with weight beta (poisoned if 0).
 */
struct gemm_case {
	const char *name;
	int batch, pad, off[3];
	float beta;
	bool add;     /* gemm_rm_add: D = A B + C into a poisoned D, C left as it was */
};

/* The second case is the first's shape less aligned: it must not reuse the first's plan. */
static const struct gemm_case gemm_cases[] = {
	{ "batched", 3, 8, { 0, 0, 0 }, 0.0f, false },
	{ "batched, offset pointers", 3, 8, { 1, 3, 1 }, 0.0f, false },
	{ "odd strides, offset pointers, beta 1", 1, 3, { 3, 1, 1 }, 1.0f, false },
	{ "D = A B + C out of place", 1, 3, { 3, 1, 1 }, 1.0f, true },
};

/* n elements of a dtype at off elements into a fresh device buffer; its start in *base. */
static char *upload_at(const double *v, size_t n, size_t off, int dtype, void **base)
{
	double *h = calloc(off + n, sizeof(double));

	memcpy(h + off, v, n * sizeof(double));
	*base = upload(h, off + n, dtype);
	free(h);
	return (char *)*base + off * dtype_size(dtype);
}

/* C_b = op(A_b) op(B_b) + beta C_b, in all four transpositions: the row-major mapping. */
static void test_gemm_case(const struct gemm *g, const struct gemm_case *gc, const char *prec,
			   int ab_dtype, int c_dtype, double tol)
{
	const int M = 37, Nn = 40, K = 48, batch = gc->batch;
	char what[128];

	for (int ta = 0; ta < 2; ta++)
		for (int tb = 0; tb < 2; tb++) {
			int ar = ta ? K : M, ac = ta ? M : K, br = tb ? Nn : K, bc = tb ? K : Nn;
			int lda = ac + gc->pad, ldb = bc + gc->pad, ldc = Nn + gc->pad;
			size_t sa = (size_t)ar * lda, sb = (size_t)br * ldb, sc = (size_t)M * ldc;
			double *A = host_normal(&rng, sa * batch, 1.0), *Bm = host_normal(&rng, sb * batch, 1.0);
			double *C = host_normal(&rng, sc * batch, 1.0);
			void *baseA, *baseB, *baseC;
			round_to(A, sa * batch, ab_dtype);
			round_to(Bm, sb * batch, ab_dtype);
			round_to(C, sc * batch, c_dtype);
			char *dA = upload_at(A, sa * batch, gc->off[0], ab_dtype, &baseA);
			char *dB = upload_at(Bm, sb * batch, gc->off[1], ab_dtype, &baseB);
			char *dC = upload_at(C, sc * batch, gc->off[2], c_dtype, &baseC);
			double *C0 = malloc(sc * batch * sizeof(double));
			void *baseD = NULL;
			char *dD = dC;
			memcpy(C0, C, sc * batch * sizeof(double));
			if (gc->add) {
				baseD = poisoned(sc * batch + 1, c_dtype);
				dD = (char *)baseD + dtype_size(c_dtype);   /* C's alignment differs */
			}
			if (gc->beta == 0.0f)   /* C must not be read */
				CUDA_OK(cudaMemset(baseC, 0xff, (gc->off[2] + sc * batch) * dtype_size(c_dtype)));
			for (int b = 0; b < batch; b++)
				for (int i = 0; i < M; i++)
					for (int j = 0; j < Nn; j++) {
						double s = 0;
						for (int k = 0; k < K; k++)
							s += A[b * sa + (ta ? (size_t)k * lda + i : (size_t)i * lda + k)] *
							     Bm[b * sb + (tb ? (size_t)j * ldb + k : (size_t)k * ldb + j)];
						C[b * sc + (size_t)i * ldc + j] = s + gc->beta * C[b * sc + (size_t)i * ldc + j];
					}
			if (gc->add)
				CHECK(gemm_rm_add(g, ta, tb, M, Nn, K, dA, lda, dB, ldb, ab_dtype, dC, dD,
						  ldc, c_dtype) == 0, "gemm_rm_add");
			else
				CHECK(gemm_rm(g, ta, tb, M, Nn, K, 1.0f, dA, lda, (long long)sa, dB, ldb,
					      (long long)sb, ab_dtype, gc->beta, dC, ldc, (long long)sc,
					      c_dtype, batch) == 0, "gemm_rm");
			double *got = download(dD, sc * batch, c_dtype);
			if (gc->add) {
				double *kept = download(dC, sc * batch, c_dtype);
				snprintf(what, sizeof(what), "gemm_rm_add %s%s leaves C (%s)", ta ? "T" : "N",
					 tb ? "T" : "N", prec);
				check_err(what, rel_err(kept, C0, sc * batch), 0.0);
				free(kept);
				cudaFree(baseD);
			}
			free(C0);
			size_t n = (size_t)batch * M * Nn, q = 0;
			double *gm = malloc(n * sizeof(double)), *rm = malloc(n * sizeof(double));
			/* the padding columns are never written: compare only the M x N parts */
			for (int b = 0; b < batch; b++)
				for (int i = 0; i < M; i++)
					for (int j = 0; j < Nn; j++, q++) {
						gm[q] = got[b * sc + (size_t)i * ldc + j];
						rm[q] = C[b * sc + (size_t)i * ldc + j];
					}
			snprintf(what, sizeof(what), "gemm %s%s %s in, %s out, %s (%s)", ta ? "T" : "N",
				 tb ? "T" : "N", dt_name(ab_dtype), dt_name(c_dtype), gc->name, prec);
			check_err(what, rel_err(gm, rm, q), tol);
			free(A), free(Bm), free(C), free(got), free(gm), free(rm);
			cudaFree(baseA), cudaFree(baseB), cudaFree(baseC);
		}
}

/*
 * Every case twice on one gemm: the second round runs on the plans the first
 * built. With tune (STEPTRACE_GEMM_TUNE's count) the first round also times
 * the heuristic's candidates on the case's own operands, which must leave C
 * and the result as they would be without it; in BF16 at least one plan had
 * candidates to time.
 */
static void test_gemm(enum st_precision prec, int ab_dtype, int c_dtype, double tol, int tune)
{
	struct gemm g;
	char name[64];

	if (gemm_init(&g, 0, prec, NULL, 0)) {
		CHECK(0, "gemm_init failed");
		gemm_release(&g);
		return;
	}
	g.tune = tune;
	for (int pass = 0; pass < 2; pass++)
		for (size_t c = 0; c < sizeof(gemm_cases) / sizeof(gemm_cases[0]); c++) {
			snprintf(name, sizeof(name), "%s%s%s", st_name(st_precision_names, prec),
				 tune ? ", tuned" : "", pass ? ", cached plan" : "");
			test_gemm_case(&g, &gemm_cases[c], name, ab_dtype, c_dtype, tol);
		}
	if (tune) {
		printf("  gemm %s tuned: %d plans timed their candidates\n",
		       st_name(st_precision_names, prec), gemm_tuned(&g));
		CHECK(prec != ST_BF16 || gemm_tuned(&g) > 0, "no BF16 plan had candidates to time");
	}
	gemm_release(&g);
}

int main(void)
{
	if (!gpu_or_skip())
		return SKIP_NO_GPU;
	ref_rng_init(&rng, 1234);
	printf("kernels against the double-precision CPU reference:\n");
	test_embedding();
	for (int dt = ST_DT_F32; dt <= ST_DT_BF16; dt++) {
		test_rmsnorm(dt, 37, 200);
		test_rmsnorm(dt, 19, 130);
		test_rmsnorm(dt, 16500, 200);
		test_rope(dt);
		test_softmax(dt);
		test_swiglu(dt, N, FF);
		test_swiglu(dt, 7, 36);
		test_swiglu(dt, 5, 30);
		test_cross_entropy(dt);
	}
	test_adamw();
	test_adamw_copy(137, 1);
	test_adamw_copy(136, 4);
	test_cast_residual();
	test_zero_groups();
	test_grad_reduce();
	test_adamw_avg(0, 1000);
	test_adamw_avg(1, 1000);
	test_adamw_avg(1, 999);
	test_init();
	for (int tune = 0; tune <= 8; tune += 8) {
		test_gemm(ST_FP32, ST_DT_F32, ST_DT_F32, 1e-5, tune);
		test_gemm(ST_TF32, ST_DT_F32, ST_DT_F32, 5e-3, tune);
		test_gemm(ST_BF16, ST_DT_BF16, ST_DT_BF16, 1e-2, tune);
		test_gemm(ST_BF16, ST_DT_BF16, ST_DT_F32, 1e-5, tune);
	}
	return check_done("test_gpu_kernels");
}
