/*
 * flash_bench: a development benchmark of the FlashAttention kernels (not a
 * test): forward and whole backward (its three passes) timed with CUDA
 * events, 3 warm-up runs, then the median of up to 20, on the seeds' grid:
 * batch 8, 1 head, d_head 16/32/64/128, seq 256 .. 32768, causal, BF16,
 * and F32 at d_head 64 up to seq 4096. TFLOP/s count the causal half:
 * forward 4 B H T^2 d / 2, backward 2.5 times that.
 *
 *   flash_bench              the grid
 *   flash_bench D T [f32]    one configuration
 *   flash_bench variants     other tile shapes (built with -DFLASH_ATTENTION_VARIANTS),
 *                            each also checked against the library's own
 *                            launchers (err: worst relative error of o, or
 *                            of dq, dk, dv)
 *
 *   flash_bench paths        the BF16 kernels: the default (sm90 on
 *                            an H100) against FlashAttention-2, d_head 64 and
 *                            128, seq 1024 .. 32768, causal and full (full/...)
 *
 * One line per configuration: impl dtype d_head seq fwd_ms fwd_tflops bwd_ms bwd_tflops.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "kernels/flash_attention.h"

#define BATCH 8
#define HEADS 1
#define WARMUP 3
#define RUNS 20

static bool causal = true;   /* `paths` times full attention too */

#ifdef FLASH_ATTENTION_VARIANTS
int flash_dev_variants(void);
const char *flash_dev_variant(int i, int *d, int *backward);
cudaError_t flash_dev_run(int i, void *o, float *lse, void *dq, void *dk, void *dv,
			  const void *dout, const void *q, const void *k, const void *v,
			  void *workspace, int bh, int t, float scale, bool causal,
			  cudaStream_t stream);
#endif

/* A failed CUDA call ends the configuration: the caller prints an error row. */
#define TRY(call)                                                                          \
	do {                                                                               \
		cudaError_t e_ = (call);                                                   \
		if (e_ != cudaSuccess) {                                                   \
			fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
				cudaGetErrorString(e_));                                   \
			goto fail;                                                         \
		}                                                                          \
	} while (0)

struct bufs {
	void *q, *k, *v, *o, *dout, *dq, *dk, *dv, *ws;
	float *lse;
};

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;

	return (x > y) - (x < y);
}

static uint16_t bf16_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	u += 0x7fff + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

/* Random normal-ish values in [-2, 2) (sum of uniforms), never zeros, at different offsets per tensor. */
static int fill_inputs(struct bufs *b, size_t n, size_t es)
{
	size_t extra = 4 * 1021;
	char *h = malloc((n + extra) * es);
	uint64_t s = 88172645463325252ull;
	void *dst[] = { b->q, b->k, b->v, b->dout };

	if (!h)
		return -1;
	for (size_t i = 0; i < n + extra; i++) {
		float x = 0;
		for (int j = 0; j < 4; j++) {
			s ^= s << 13, s ^= s >> 7, s ^= s << 17;
			x += (float)(s >> 40) / (float)(1 << 24) - 0.5f;
		}
		x += x >= 0 ? 1e-3f : -1e-3f;
		if (es == 2)
			((uint16_t *)h)[i] = bf16_bits(x);
		else
			((float *)h)[i] = x;
	}
	for (int i = 0; i < 4; i++)
		if (cudaMemcpy(dst[i], h + (size_t)i * 1021 * es, n * es, cudaMemcpyHostToDevice)) {
			free(h);
			return -1;
		}
	free(h);
	return 0;
}

#ifdef FLASH_ATTENTION_VARIANTS
static double bf16_value(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* ||a - b|| / ||b|| of two BF16 device buffers; -1 if they cannot be read. */
static double rel_err_bf16(const void *a, const void *b, size_t n)
{
	uint16_t *ha = malloc(n * 2), *hb = malloc(n * 2);
	double num = 0, den = 0;

	if (!ha || !hb || cudaMemcpy(ha, a, n * 2, cudaMemcpyDeviceToHost) ||
	    cudaMemcpy(hb, b, n * 2, cudaMemcpyDeviceToHost)) {
		free(ha), free(hb);
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		double x = bf16_value(ha[i]), y = bf16_value(hb[i]);
		num += (x - y) * (x - y);
		den += y * y;
	}
	free(ha), free(hb);
	return isfinite(num) ? sqrt(num / den) : INFINITY;
}
#endif

/* what: 0 forward, 1 backward; variant < 0 the library's launchers. */
static cudaError_t launch(int what, int variant, struct bufs *b, int bh, int t, int d,
			  enum st_dtype dt)
{
	float scale = 1.0f / sqrtf((float)d);

#ifdef FLASH_ATTENTION_VARIANTS
	if (variant >= 0)
		return flash_dev_run(variant, b->o, b->lse, b->dq, b->dk, b->dv, b->dout, b->q, b->k,
				     b->v, b->ws, bh, t, scale, true, 0);
#endif
	(void)variant;
	if (what == 0)
		return flash_attention_forward(b->o, b->lse, b->q, b->k, b->v, bh, t, d, scale, causal,
					       dt, 0);
	return flash_attention_backward(b->dq, b->dk, b->dv, b->dout, b->q, b->k, b->v, b->o,
					b->lse, b->ws, bh, t, d, scale, causal, dt, 0);
}

/* Median milliseconds of `what` (the forward runs once first when timing the backward). */
static float time_ms(int what, int variant, struct bufs *b, int bh, int t, int d,
		     enum st_dtype dt)
{
	cudaEvent_t e0, e1;
	float ms[RUNS], first = 0;
	int runs = RUNS;

	if (cudaEventCreate(&e0) || cudaEventCreate(&e1))
		return -1;
	if (launch(0, what ? -1 : variant, b, bh, t, d, dt))
		return -1;
	for (int i = 0; i < WARMUP; i++)
		if (launch(what, variant, b, bh, t, d, dt))
			return -1;
	for (int i = 0; i < runs; i++) {
		cudaEventRecord(e0, 0);
		if (launch(what, variant, b, bh, t, d, dt))
			return -1;
		cudaEventRecord(e1, 0);
		if (cudaEventSynchronize(e1))
			return -1;
		cudaEventElapsedTime(&ms[i], e0, e1);
		if (i == 0)
			first = ms[0];
		if (i == 4 && first > 200)      /* slow configurations: 5 runs are enough */
			runs = 5;
	}
	cudaEventDestroy(e0);
	cudaEventDestroy(e1);
	qsort(ms, (size_t)runs, sizeof(float), cmp_float);
	return ms[runs / 2];
}

static void bench(const char *impl, int variant, int d, int t, enum st_dtype dt)
{
	struct bufs b = { 0 };
	int bh = BATCH * HEADS;
	size_t es = dt == ST_DT_BF16 ? 2 : 4, n = (size_t)bh * t * d;
	double fwd_flops = 4.0 * bh * (double)t * t * d / (causal ? 2 : 1);
	float f = -1, g = -1;
	void **all[] = { &b.q, &b.k, &b.v, &b.o, &b.dout, &b.dq, &b.dk, &b.dv };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		TRY(cudaMalloc(all[i], n * es));
	TRY(cudaMalloc((void **)&b.lse, (size_t)bh * t * sizeof(float)));
	TRY(cudaMalloc(&b.ws, flash_attention_backward_workspace(bh, t, d)));
	if (fill_inputs(&b, n, es))
		goto fail;
	int d_var = d, bwd_var = 0;
#ifdef FLASH_ATTENTION_VARIANTS
	if (variant >= 0)
		flash_dev_variant(variant, &d_var, &bwd_var);
#endif
	double err = 0;
#ifdef FLASH_ATTENTION_VARIANTS
	if (variant >= 0) {
		/* the library's outputs, then the variant's; o is the forward's either way */
		void *ref[3] = { 0 }, *out[3] = { b.o, b.dq, b.dk };
		int nout = bwd_var ? 3 : 1;
		if (bwd_var)
			out[0] = b.dv;
		for (int i = 0; i < nout; i++)
			TRY(cudaMalloc(&ref[i], n * es));
		TRY(launch(0, -1, &b, bh, t, d_var, dt));
		if (bwd_var)
			TRY(launch(1, -1, &b, bh, t, d_var, dt));
		for (int i = 0; i < nout; i++)
			TRY(cudaMemcpy(ref[i], out[i], n * es, cudaMemcpyDeviceToDevice));
		for (int i = 0; i < nout; i++)
			TRY(cudaMemset(out[i], 0xff, n * es));
		if (bwd_var)
			TRY(launch(0, -1, &b, bh, t, d_var, dt));
		TRY(launch(bwd_var, variant, &b, bh, t, d_var, dt));
		TRY(cudaDeviceSynchronize());
		for (int i = 0; i < nout; i++) {
			double e = rel_err_bf16(out[i], ref[i], n);
			err = e > err || !(e == e) ? e : err;
			cudaFree(ref[i]);
		}
	}
#endif
	if (variant < 0 || !bwd_var)
		f = time_ms(0, variant, &b, bh, t, d_var, dt);
	if (variant < 0 || bwd_var)
		g = time_ms(1, variant, &b, bh, t, d_var, dt);
	printf("%-18s %-4s %4d %6d %9.3f %7.1f %9.3f %7.1f", impl, dt == ST_DT_BF16 ? "bf16" : "f32",
	       d, t, f, f > 0 ? fwd_flops / f / 1e9 : 0, g, g > 0 ? 2.5 * fwd_flops / g / 1e9 : 0);
	printf(variant >= 0 ? "  err %.1e\n" : "\n", err);
	fflush(stdout);
	goto done;
fail:
	printf("%-18s %-4s %4d %6d ERROR\n", impl, dt == ST_DT_BF16 ? "bf16" : "f32", d, t);
	cudaGetLastError();
done:
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		cudaFree(*all[i]);
	cudaFree(b.lse);
	cudaFree(b.ws);
}

int main(int argc, char **argv)
{
	struct cudaDeviceProp prop;
	int ds[] = { 16, 32, 64, 128 }, ts[] = { 256, 1024, 4096, 8192, 16384, 32768 };

	if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) {
		printf("no CUDA GPU\n");
		return 77;
	}
	printf("# %s, batch %d, heads %d, causal; median ms of %d runs\n", prop.name, BATCH, HEADS,
	       RUNS);
	printf("%-18s %-4s %4s %6s %9s %7s %9s %7s\n", "impl", "dt", "d", "seq", "fwd_ms", "fwd_tf",
	       "bwd_ms", "bwd_tf");
	if (argc > 1 && !strcmp(argv[1], "variants")) {
#ifdef FLASH_ATTENTION_VARIANTS
		int tv[] = { 4096, 8192, 16384 };
		for (int i = 0; i < flash_dev_variants(); i++)
			for (int j = 0; j < 3; j++) {
				int d, bwd;
				const char *name = flash_dev_variant(i, &d, &bwd);
				bench(name, i, d, tv[j], ST_DT_BF16);
			}
#else
		printf("built without -DFLASH_ATTENTION_VARIANTS\n");
#endif
		return 0;
	}
	if (argc > 1 && !strcmp(argv[1], "paths")) {
		/* the BF16 kernels' two families, causal and not, d_head 64 and 128 */
		int tp[] = { 1024, 4096, 8192, 16384, 32768 };
		for (int c = 1; c >= 0; c--)
			for (int i = 2; i < 4; i++)
				for (int j = 0; j < 5; j++) {
					causal = c;
					flash_attention_set_path(FLASH_PATH_AUTO);
					bench(c ? flash_attention_kernels(ds[i], ST_DT_BF16)
						: "full/auto", -1, ds[i], tp[j], ST_DT_BF16);
					flash_attention_set_path(FLASH_PATH_FA2);
					bench(c ? "fa2" : "full/fa2", -1, ds[i], tp[j], ST_DT_BF16);
				}
		flash_attention_set_path(FLASH_PATH_AUTO);
		return 0;
	}
	if (argc > 2) {
		bench("flash", -1, atoi(argv[1]), atoi(argv[2]),
		      argc > 3 && !strcmp(argv[3], "f32") ? ST_DT_F32 : ST_DT_BF16);
		return 0;
	}
	for (int i = 0; i < 4; i++)
		for (int j = 0; j < 6; j++)
			bench("flash", -1, ds[i], ts[j], ST_DT_BF16);
	for (int j = 0; j < 3; j++)
		bench("flash", -1, 64, ts[j], ST_DT_F32);
	return 0;
}
