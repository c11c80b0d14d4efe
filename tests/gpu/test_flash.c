/*
 * test_flash: FlashAttention forward and backward (kernels/flash_attention.h)
 * against a double-precision CPU reference written here, at awkward sizes
 * (T = 1, 77, 129, 256, 1000; d_head 40, 64 and 128, and 16, 24, 64, 80,
 * 96, 136, 256 at small T), causal and not, F32 and BF16; and large cases
 * (T 4096, d_head 64; 20 heads of T 2048, d_head 32 and 64; 3 heads of T
 * 3000, d_head 128; 24 heads of T 2000, d_head 64; BF16) against a naive
 * FP32 attention on the GPU (flash_naive.cu). Where BF16 runs the Hopper
 * kernels (flash_attention_sm90.cu), each BF16 case checks
 * FlashAttention-2's forward and backward too, on the same inputs.
 * Inputs are fresh random normals (never zeros); outputs are poisoned with
 * NaN before each run, so an element left unwritten fails.
 *
 * Tolerances, relative error ||gpu - ref|| / ||ref|| per tensor:
 *   F32:  o, lse, dq, dk, dv 1e-5 (FP32 arithmetic against double);
 *   BF16: o, dq, dk, dv 1e-2 (inputs are rounded to BF16 before the
 *         reference sees them; P and dS are rounded to BF16 for the tensor
 *         cores, outputs to BF16), lse 1e-4 (FP32 sums of exact products).
 * Also: unsupported head sizes are refused with a reason.
 *
 * `test_flash quick` runs the small cases only, `test_flash race` a handful
 * (for compute-sanitizer's memcheck and racecheck).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "kernels/flash_attention.h"
#include "tests/gpu/flash_naive.h"
#include "tests/lib/check.h"

#define SKIP_NO_GPU 77

#define CUDA_OK(call)                                                                      \
	do {                                                                               \
		cudaError_t e_ = (call);                                                   \
		if (e_ != cudaSuccess) {                                                   \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
				cudaGetErrorString(e_));                                   \
			exit(1);                                                           \
		}                                                                          \
	} while (0)

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static double rng_uniform(void)
{
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return ((z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double rng_normal(void)
{
	return sqrt(-2.0 * log(rng_uniform())) * cos(2.0 * M_PI * rng_uniform());
}

static uint16_t bf16_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1);      /* round to nearest even */
	return (uint16_t)(u >> 16);
}

static double bf16_value(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

static size_t dtype_size(enum st_dtype dt)
{
	return dt == ST_DT_BF16 ? 2 : 4;
}

/* n random normals, already rounded to what dt holds. */
static double *random_input(size_t n, enum st_dtype dt)
{
	double *v = malloc(n * sizeof(double));

	for (size_t i = 0; i < n; i++) {
		float f = (float)rng_normal();
		v[i] = dt == ST_DT_BF16 ? bf16_value(bf16_bits(f)) : (double)f;
	}
	return v;
}

static void *upload(const double *v, size_t n, enum st_dtype dt)
{
	void *h = malloc(n * dtype_size(dt)), *d = NULL;

	for (size_t i = 0; i < n; i++) {
		if (dt == ST_DT_BF16)
			((uint16_t *)h)[i] = bf16_bits((float)v[i]);
		else
			((float *)h)[i] = (float)v[i];
	}
	CUDA_OK(cudaMalloc(&d, n * dtype_size(dt)));
	CUDA_OK(cudaMemcpy(d, h, n * dtype_size(dt), cudaMemcpyHostToDevice));
	free(h);
	return d;
}

/* A device buffer of `bytes` filled with NaN (all bits set). */
static void *poisoned(size_t bytes)
{
	void *d = NULL;

	CUDA_OK(cudaMalloc(&d, bytes));
	CUDA_OK(cudaMemset(d, 0xff, bytes));
	return d;
}

static double *download(const void *d, size_t n, enum st_dtype dt)
{
	void *h = malloc(n * dtype_size(dt));
	double *v = malloc(n * sizeof(double));

	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaMemcpy(h, d, n * dtype_size(dt), cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++)
		v[i] = dt == ST_DT_BF16 ? bf16_value(((uint16_t *)h)[i]) : ((float *)h)[i];
	free(h);
	return v;
}

static void free_device(void *const *bufs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		CUDA_OK(cudaFree(bufs[i]));
}

/* ||a - b|| / ||b||; +inf if a holds a NaN or inf (an element left poisoned). */
static double rel_err(const double *a, const double *b, size_t n)
{
	double num = 0, den = 0;

	for (size_t i = 0; i < n; i++) {
		if (!isfinite(a[i]))
			return INFINITY;
		num += (a[i] - b[i]) * (a[i] - b[i]);
		den += b[i] * b[i];
	}
	return den > 0 ? sqrt(num / den) : sqrt(num);
}

/*
 * The reference: per head, s = scale q k^T (masked), p = softmax(s), o = p v,
 * lse = log sum exp s; backward dp = dout v^T, ds = p (dp - rowsum(dout o)),
 * dq = scale ds k, dk = scale ds^T q, dv = p^T dout. All in double.
 */
struct ref {
	double *o, *lse, *dq, *dk, *dv;
};

static void reference(struct ref *r, const double *q, const double *k, const double *v,
		      const double *dout, int bh, int t, int d, double scale, bool causal)
{
	size_t n = (size_t)bh * t * d;
	double *p = malloc((size_t)t * sizeof(double)), *ds = malloc((size_t)t * sizeof(double));

	r->o = calloc(n, sizeof(double));
	r->lse = calloc((size_t)bh * t, sizeof(double));
	r->dq = calloc(n, sizeof(double));
	r->dk = calloc(n, sizeof(double));
	r->dv = calloc(n, sizeof(double));
	for (int h = 0; h < bh; h++) {
		size_t base = (size_t)h * t * d;
		const double *qh = q + base, *kh = k + base, *vh = v + base, *doh = dout + base;
		double *oh = r->o + base, *dqh = r->dq + base, *dkh = r->dk + base;
		double *dvh = r->dv + base;
		for (int i = 0; i < t; i++) {
			int n_keys = causal ? i + 1 : t;
			double mx = -INFINITY, sum = 0, di = 0;
			for (int j = 0; j < n_keys; j++) {
				double s = 0;
				for (int c = 0; c < d; c++)
					s += qh[(size_t)i * d + c] * kh[(size_t)j * d + c];
				p[j] = s * scale;
				mx = fmax(mx, p[j]);
			}
			for (int j = 0; j < n_keys; j++)
				sum += (p[j] = exp(p[j] - mx));
			for (int j = 0; j < n_keys; j++)
				p[j] /= sum;
			r->lse[(size_t)h * t + i] = mx + log(sum);
			for (int c = 0; c < d; c++) {
				double acc = 0;
				for (int j = 0; j < n_keys; j++)
					acc += p[j] * vh[(size_t)j * d + c];
				oh[(size_t)i * d + c] = acc;
				di += acc * doh[(size_t)i * d + c];
			}
			for (int j = 0; j < n_keys; j++) {
				double dp = 0;
				for (int c = 0; c < d; c++)
					dp += doh[(size_t)i * d + c] * vh[(size_t)j * d + c];
				ds[j] = p[j] * (dp - di);
			}
			for (int j = 0; j < n_keys; j++)
				for (int c = 0; c < d; c++) {
					dqh[(size_t)i * d + c] += scale * ds[j] * kh[(size_t)j * d + c];
					dkh[(size_t)j * d + c] += scale * ds[j] * qh[(size_t)i * d + c];
					dvh[(size_t)j * d + c] += p[j] * doh[(size_t)i * d + c];
				}
		}
	}
	free(p);
	free(ds);
}

static void ref_free(struct ref *r)
{
	free(r->o), free(r->lse), free(r->dq), free(r->dk), free(r->dv);
}

static const char *dt_name(enum st_dtype dt)
{
	return dt == ST_DT_BF16 ? "bf16" : "f32";
}

/* One configuration: random inputs (rounded to dt) on both sides, poisoned outputs. */
struct flash_run {
	int bh, t, d;
	bool causal;
	enum st_dtype dt;
	float scale;
	size_t n;                                  /* bh * t * d */
	double *q, *k, *v, *dout;                  /* host */
	void *gq, *gk, *gv, *gdout;                /* device inputs */
	void *o, *dq, *dk, *dv, *ws;               /* device outputs and workspace */
	float *lse;
	const char *path;                          /* the kernels, as run_forward ran them */
};

static void run_init(struct flash_run *r, int bh, int t, int d, bool causal, enum st_dtype dt)
{
	size_t es = dtype_size(dt);

	r->bh = bh, r->t = t, r->d = d, r->causal = causal, r->dt = dt;
	r->scale = (float)(1.0 / sqrt((double)d));
	r->n = (size_t)bh * t * d;
	r->q = random_input(r->n, dt), r->k = random_input(r->n, dt);
	r->v = random_input(r->n, dt), r->dout = random_input(r->n, dt);
	r->gq = upload(r->q, r->n, dt), r->gk = upload(r->k, r->n, dt);
	r->gv = upload(r->v, r->n, dt), r->gdout = upload(r->dout, r->n, dt);
	r->o = poisoned(r->n * es), r->dq = poisoned(r->n * es);
	r->dk = poisoned(r->n * es), r->dv = poisoned(r->n * es);
	r->lse = poisoned((size_t)bh * t * sizeof(float));
	r->ws = poisoned(flash_attention_backward_workspace(bh, t, d));
}

static void run_release(struct flash_run *r)
{
	void *bufs[] = { r->gq, r->gk, r->gv, r->gdout, r->o, r->dq, r->dk, r->dv, r->lse, r->ws };

	free(r->q), free(r->k), free(r->v), free(r->dout);
	free_device(bufs, sizeof(bufs) / sizeof(bufs[0]));
}

static void run_forward(struct flash_run *r)
{
	r->path = flash_attention_kernels(r->d, r->dt);
	CUDA_OK(flash_attention_forward(r->o, r->lse, r->gq, r->gk, r->gv, r->bh, r->t, r->d,
					r->scale, r->causal, r->dt, 0));
}

static void run_backward(struct flash_run *r)
{
	CUDA_OK(flash_attention_backward(r->dq, r->dk, r->dv, r->gdout, r->gq, r->gk, r->gv, r->o,
					 r->lse, r->ws, r->bh, r->t, r->d, r->scale, r->causal,
					 r->dt, 0));
}

/*
 * One output against its reference: got (n, in dt; lse F32) on the device.
 * Tolerance: 1e-5 in F32; 1e-2 in BF16, except lse's 1e-4.
 */
static void run_check(const struct flash_run *r, const char *what, const void *got,
		      const double *want, size_t n)
{
	bool is_lse = !strcmp(what, "lse");
	double *g = download(got, n, is_lse ? ST_DT_F32 : r->dt);
	double err = rel_err(g, want, n);
	double tol = r->dt == ST_DT_F32 ? 1e-5 : is_lse ? 1e-4 : 1e-2;

	printf("  %-4s bh %d t %5d d %3d %-6s %-4s %-4s rel err %.3e (tol %.0e) %s\n", what,
	       r->bh, r->t, r->d, r->causal ? "causal" : "full", dt_name(r->dt), r->path, err, tol,
	       err <= tol ? "ok" : "FAIL");
	CHECK(err <= tol, "%s bh %d t %d d %d %s %s %s: rel err %.3e > %.0e", what, r->bh, r->t,
	      r->d, r->causal ? "causal" : "full", dt_name(r->dt), r->path, err, tol);
	free(g);
}

/*
 * Where the Hopper kernels ran, FlashAttention-2's forward and backward on
 * the same inputs against the same references (into poisoned outputs), so
 * both stay tested on a Hopper GPU. want: o, lse, dq, dk, dv.
 */
static void fa2_too(struct flash_run *r, const double *const want[5])
{
	void *got[5] = { r->o, r->lse, r->dq, r->dk, r->dv };
	const char *names[5] = { "o", "lse", "dq", "dk", "dv" };
	size_t rows = (size_t)r->bh * r->t;

	if (strcmp(r->path, "sm90"))
		return;
	for (int i = 0; i < 5; i++)
		CUDA_OK(cudaMemset(got[i], 0xff, i == 1 ? rows * sizeof(float)
							  : r->n * dtype_size(r->dt)));
	flash_attention_set_path(FLASH_PATH_FA2);
	run_forward(r);
	run_backward(r);
	flash_attention_set_path(FLASH_PATH_AUTO);
	for (int i = 0; i < 5; i++)
		run_check(r, names[i], got[i], want[i], i == 1 ? rows : r->n);
}

/* Forward and backward of one configuration against the CPU reference. */
static void case_cpu(int bh, int t, int d, bool causal, enum st_dtype dt)
{
	struct flash_run r;
	struct ref ref;

	run_init(&r, bh, t, d, causal, dt);
	reference(&ref, r.q, r.k, r.v, r.dout, bh, t, d, r.scale, causal);
	run_forward(&r);
	run_check(&r, "o", r.o, ref.o, r.n);
	run_check(&r, "lse", r.lse, ref.lse, (size_t)bh * t);
	run_backward(&r);
	run_check(&r, "dq", r.dq, ref.dq, r.n);
	run_check(&r, "dk", r.dk, ref.dk, r.n);
	run_check(&r, "dv", r.dv, ref.dv, r.n);
	/* the same inputs again: the backward must not depend on its workspace's contents */
	CUDA_OK(cudaMemset(r.dq, 0xff, r.n * dtype_size(dt)));
	run_backward(&r);
	run_check(&r, "dq'", r.dq, ref.dq, r.n);
	const double *want[5] = { ref.o, ref.lse, ref.dq, ref.dk, ref.dv };
	fa2_too(&r, want);
	ref_free(&ref);
	run_release(&r);
}

/* Flash against the naive FP32 attention on the GPU, at a size the CPU is too slow for. */
static void case_naive(int bh, int t, int d, bool causal, enum st_dtype dt)
{
	struct flash_run r;
	size_t rows = (size_t)bh * t;

	run_init(&r, bh, t, d, causal, dt);
	float *o = poisoned(r.n * sizeof(float)), *lse = poisoned(rows * sizeof(float));
	float *dq = poisoned(r.n * sizeof(float)), *dk = poisoned(r.n * sizeof(float));
	float *dv = poisoned(r.n * sizeof(float));
	CUDA_OK(naive_attention_forward(o, lse, r.gq, r.gk, r.gv, bh, t, d, r.scale, causal, dt));
	CUDA_OK(naive_attention_backward(dq, dk, dv, r.gdout, r.gq, r.gk, r.gv, o, lse, bh, t, d,
					 r.scale, causal, dt));
	run_forward(&r);
	run_backward(&r);

	struct { const char *name; const void *got; float *want; size_t n; } c[] = {
		{ "o", r.o, o, r.n }, { "lse", r.lse, lse, rows },
		{ "dq", r.dq, dq, r.n }, { "dk", r.dk, dk, r.n }, { "dv", r.dv, dv, r.n },
	};
	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		double *want = download(c[i].want, c[i].n, ST_DT_F32);
		run_check(&r, c[i].name, c[i].got, want, c[i].n);
		free(want);
	}
	double *want[5];
	for (size_t i = 0; i < 5; i++)
		want[i] = download(c[i].want, c[i].n, ST_DT_F32);
	fa2_too(&r, (const double *const *)want);
	for (size_t i = 0; i < 5; i++)
		free(want[i]);
	void *bufs[] = { o, lse, dq, dk, dv };
	free_device(bufs, sizeof(bufs) / sizeof(bufs[0]));
	run_release(&r);
}

static void refusals(void)
{
	char why[128] = "";
	int dims[] = { 8, 16, 40, 64, 80, 128, 136, 256 };

	for (size_t i = 0; i < sizeof(dims) / sizeof(dims[0]); i++)
		CHECK(flash_attention_supported(dims[i], ST_DT_BF16, why, sizeof(why)),
		      "d_head %d refused: %s", dims[i], why);
	CHECK(!flash_attention_supported(100, ST_DT_BF16, why, sizeof(why)));
	CHECK_STR(why, "d_head 100 is not a multiple of 8");
	CHECK(!flash_attention_supported(264, ST_DT_F32, why, sizeof(why)));
	CHECK_STR(why, "d_head 264 is outside 8..256");
	CHECK(!flash_attention_supported(0, ST_DT_F32, why, sizeof(why)));
	CHECK(!flash_attention_supported(64, ST_DT_F16, why, sizeof(why)));
	CHECK(flash_attention_forward(NULL, NULL, NULL, NULL, NULL, 1, 1, 100, 0.1f, true,
				      ST_DT_BF16, 0) == cudaErrorInvalidValue);
	CHECK(cudaGetLastError() == cudaSuccess, "a refusal must not leave a CUDA error behind");
}

int main(int argc, char **argv)
{
	int n = 0;
	bool quick = argc > 1 && !strcmp(argv[1], "quick");
	enum st_dtype dts[] = { ST_DT_F32, ST_DT_BF16 };

	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("SKIP: no CUDA GPU on this machine\n");
		return SKIP_NO_GPU;
	}
	/* STEPTRACE_FLASH_PATH=fa2 is read at the first use; set_path overrides it */
	setenv("STEPTRACE_FLASH_PATH", "fa2", 1);
	CHECK_STR(flash_attention_kernels(64, ST_DT_BF16), "fa2");
	unsetenv("STEPTRACE_FLASH_PATH");
	CHECK_STR(flash_attention_kernels(64, ST_DT_BF16), "fa2");
	flash_attention_set_path(FLASH_PATH_AUTO);
	printf("  BF16 d_head 64 runs %s here (STEPTRACE_FLASH_PATH=fa2 gave fa2)\n",
	       flash_attention_kernels(64, ST_DT_BF16));
	refusals();
	if (argc > 1 && !strcmp(argv[1], "race")) {
		case_cpu(1, 77, 64, true, ST_DT_BF16);
		case_cpu(1, 130, 128, false, ST_DT_BF16);
		case_cpu(1, 77, 40, true, ST_DT_BF16);
		case_cpu(1, 40, 256, true, ST_DT_BF16);
		case_cpu(1, 77, 40, true, ST_DT_F32);
		return check_done("test_flash");
	}
	for (int di = 0; di < 2; di++)
		for (int causal = 0; causal < 2; causal++) {
			enum st_dtype dt = dts[di];
			int ts[] = { 1, 77, 1000 }, ds[] = { 40, 128 };
			int small_ds[] = { 8, 16, 24, 64, 80, 96, 136, 256 };
			for (int ti = 0; ti < 3; ti++)
				for (int j = 0; j < 2; j++)
					if (!quick || ts[ti] < 1000)
						case_cpu(ts[ti] < 1000 ? 3 : 2, ts[ti], ds[j], causal, dt);
			for (int j = 0; j < 8; j++)
				case_cpu(2, 77, small_ds[j], causal, dt);
			case_cpu(1, quick ? 130 : 333, 64, causal, dt);
			/* the Hopper kernels' tile edges: 128 query rows or keys a block, 64 or 128 a tile */
			case_cpu(2, 256, 128, causal, dt);
			case_cpu(2, 129, 64, causal, dt);
		}
	if (!quick) {
		for (int causal = 0; causal < 2; causal++)
			case_naive(4, 4096, 64, causal, ST_DT_BF16);
		/* grids that fill an H100 twice over, where the backward takes wider warp tiles */
		case_naive(20, 2048, 64, true, ST_DT_BF16);
		case_naive(20, 2048, 32, false, ST_DT_BF16);
		for (int causal = 0; causal < 2; causal++) {
			case_naive(3, 3000, 128, causal, ST_DT_BF16);
			/* 11 blocks of 192 rows x 24 heads: the Hopper forward's three-consumer form */
			case_naive(24, 2000, 64, causal, ST_DT_BF16);
		}
	}
	return check_done("test_flash");
}
