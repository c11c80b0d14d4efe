/*
 * gpu_test.h: what the GPU tests share beside tests/lib/check.h: the skip
 * where there is no GPU, host <-> device copies that convert between double
 * and a kernel's storage dtype (F32 or BF16), NaN poisoning of outputs, the
 * relative error ||a - b|| / ||b||, and one line per error check with the
 * measured error and its tolerance. Static functions only: each test is one
 * translation unit.
 */
#ifndef STEPTRACE_TESTS_GPU_TEST_H
#define STEPTRACE_TESTS_GPU_TEST_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "lib/gpu_check.h"
#include "tests/lib/check.h"
#include "tests/lib/reference.h"
#include "trace/types.h"

#define SKIP_NO_GPU 77

static inline int gpu_or_skip(void)
{
	int n = 0;

	if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
		printf("SKIP: no CUDA GPU on this machine\n");
		return 0;
	}
	return 1;
}

/* A CUDA call the test cannot go on without: reported by CUDA_CHECK, then exit. */
#define CUDA_OK(x)                              \
	do {                                    \
		if (CUDA_CHECK(x))              \
			exit(1);                \
	} while (0)

/* ||a - b|| / ||b|| over n values; +inf if a holds a NaN or inf (an unwritten, poisoned element). */
static inline double rel_err(const double *a, const double *b, size_t n)
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

/* Prints "  what: rel err E (tol T) ok|FAIL"; a failure is a failed CHECK. */
static inline void check_err(const char *what, double err, double tol)
{
	bool ok = err <= tol;

	printf("  %-44s rel err %.3e (tol %.1e) %s\n", what, err, tol, ok ? "ok" : "FAIL");
	fflush(stdout);
	CHECK(ok, "%s: rel err %.3e above %.1e", what, err, tol);
}

static inline double *host_normal(struct ref_rng *r, size_t n, double scale)
{
	double *v = malloc(n * sizeof(double));

	for (size_t i = 0; i < n; i++)
		v[i] = scale * ref_rng_normal(r);
	return v;
}

static inline uint16_t bf16_bits(double x)
{
	float f = (float)ref_round_bf16(x);
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16);
}

static inline double bf16_value(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* Rounds v in place to what the dtype can hold, so GPU and reference see the same inputs. */
static inline void round_to(double *v, size_t n, int dtype)
{
	for (size_t i = 0; i < n; i++)
		v[i] = dtype == ST_DT_BF16 ? ref_round_bf16(v[i]) : (double)(float)v[i];
}

static inline size_t dtype_size(int dtype)
{
	return dtype == ST_DT_BF16 ? 2 : 4;
}

/* A device copy of v (n) in dtype. Caller cudaFree()s it. */
static inline void *upload(const double *v, size_t n, int dtype)
{
	void *h = malloc(n * dtype_size(dtype)), *d = NULL;

	for (size_t i = 0; i < n; i++) {
		if (dtype == ST_DT_BF16)
			((uint16_t *)h)[i] = bf16_bits(v[i]);
		else
			((float *)h)[i] = (float)v[i];
	}
	CUDA_OK(cudaMalloc(&d, n * dtype_size(dtype) + 16));
	CUDA_OK(cudaMemcpy(d, h, n * dtype_size(dtype), cudaMemcpyHostToDevice));
	free(h);
	return d;
}

/* A device buffer of n elements filled with NaN (all bits set), so unwritten outputs fail. */
static inline void *poisoned(size_t n, int dtype)
{
	void *d = NULL;

	CUDA_OK(cudaMalloc(&d, n * dtype_size(dtype) + 16));
	CUDA_OK(cudaMemset(d, 0xff, n * dtype_size(dtype)));
	return d;
}

/* Host doubles (malloc'ed) from a device buffer, after synchronising. */
static inline double *download(const void *d, size_t n, int dtype)
{
	void *h = malloc(n * dtype_size(dtype));
	double *v = malloc(n * sizeof(double));

	CUDA_OK(cudaDeviceSynchronize());
	CUDA_OK(cudaMemcpy(h, d, n * dtype_size(dtype), cudaMemcpyDeviceToHost));
	for (size_t i = 0; i < n; i++)
		v[i] = dtype == ST_DT_BF16 ? bf16_value(((uint16_t *)h)[i]) : ((float *)h)[i];
	free(h);
	return v;
}

#endif
