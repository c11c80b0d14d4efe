/* device.c: see device.h. */
#include "record/device.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <cupti.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/gpu_check.h"
#include "trace/types.h"

#define CAL_N 8192                 /* GEMM size; 4096 when memory is short */
#define CAL_COPY_MAX (1ull << 30)  /* bytes per copy buffer */
#define CAL_TARGET_MS 150.0        /* per measurement */
#define CAL_TILE_FLOATS (1u << 20) /* host tile of random numbers */

int device_facts_read(int device, struct device_facts *f)
{
	struct cudaDeviceProp p;
	int v = 0, major = 0, minor = 0, patch = 0;
	uint32_t cupti = 0;

	memset(f, 0, sizeof(*f));
	steptrace__device_info__init(&f->info);
	if (CUDA_CHECK(cudaSetDevice(device)) || CUDA_CHECK(cudaGetDeviceProperties(&p, device)))
		return -1;
	snprintf(f->name, sizeof(f->name), "%s", p.name);
	f->info.name = f->name;
	f->info.index = (uint32_t)device;
	f->info.sm_count = (uint32_t)p.multiProcessorCount;
	f->info.cc_major = (uint32_t)p.major;
	f->info.cc_minor = (uint32_t)p.minor;
	f->info.memory_bytes = p.totalGlobalMem;
	f->info.mem_bus_bits = (uint32_t)p.memoryBusWidth;
	f->info.l2_bytes = (uint64_t)p.l2CacheSize;
	if (cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, device) == cudaSuccess)
		f->info.sm_clock_khz = (uint32_t)v;
	if (cudaDeviceGetAttribute(&v, cudaDevAttrMemoryClockRate, device) == cudaSuccess)
		f->info.mem_clock_khz = (uint32_t)v;
	if (cudaRuntimeGetVersion(&v) == cudaSuccess)
		f->info.cuda_runtime_version = (uint32_t)v;
	if (cudaDriverGetVersion(&v) == cudaSuccess)
		f->info.cuda_driver_version = (uint32_t)v;
	if (cuptiGetVersion(&cupti) == CUPTI_SUCCESS)
		f->info.cupti_version = cupti;
	if (cublasGetProperty(MAJOR_VERSION, &major) == CUBLAS_STATUS_SUCCESS &&
	    cublasGetProperty(MINOR_VERSION, &minor) == CUBLAS_STATUS_SUCCESS &&
	    cublasGetProperty(PATCH_LEVEL, &patch) == CUBLAS_STATUS_SUCCESS)
		f->info.cublas_version = (uint32_t)(major * 10000 + minor * 100 + patch);
	device_driver_version(f->driver, sizeof(f->driver));
	f->info.driver_version = f->driver;
	f->info.peak_source = STEPTRACE__PEAK_SOURCE__PEAK_UNKNOWN;
	f->info.peak_note = f->note;
	return 0;
}

/* ---- calibration ----------------------------------------------------- */

struct calibration {
	cublasHandle_t blas;
	cudaEvent_t start, stop;
	int n;
	void *a, *b, *c;          /* n*n floats each (bf16 uses the first half) */
	void *src, *dst;          /* copy buffers */
	size_t copy_bytes;
	float *tile;              /* host random numbers */
	uint16_t *tile_bf16;
};

static void fill_tile(struct calibration *cal)
{
	uint64_t x = 0x9E3779B97F4A7C15ull;
	uint32_t i;

	for (i = 0; i < CAL_TILE_FLOATS; i++) {
		uint32_t bits;

		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		cal->tile[i] = (float)((double)(x >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
		memcpy(&bits, &cal->tile[i], sizeof(bits));
		cal->tile_bf16[i] = (uint16_t)(bits >> 16);
	}
}

/* Random values in a device matrix of `elems` elements of the precision's operand type. */
static int fill_matrix(struct calibration *cal, void *dev, size_t elems, bool bf16)
{
	size_t esize = bf16 ? 2 : 4, done = 0;
	const void *src = bf16 ? (const void *)cal->tile_bf16 : (const void *)cal->tile;

	while (done < elems) {
		size_t n = elems - done < CAL_TILE_FLOATS ? elems - done : CAL_TILE_FLOATS;

		if (CUDA_CHECK(cudaMemcpy((char *)dev + done * esize, src, n * esize,
					  cudaMemcpyHostToDevice)))
			return -1;
		done += n;
	}
	return 0;
}

static int gemm_once(struct calibration *cal, int prec)
{
	const float alpha = 1.0f, beta = 0.0f;
	cudaDataType_t t = prec == ST_BF16 ? CUDA_R_16BF : CUDA_R_32F;
	cublasComputeType_t ct = prec == ST_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32
						 : CUBLAS_COMPUTE_32F;
	int n = cal->n;

	return CUBLAS_CHECK(cublasGemmEx(cal->blas, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha,
					 cal->a, t, n, cal->b, t, n, &beta, cal->c, t, n, ct,
					 CUBLAS_GEMM_DEFAULT));
}

static int copy_once(struct calibration *cal, int unused)
{
	return CUDA_CHECK(cudaMemcpyAsync(cal->dst, cal->src, cal->copy_bytes,
					  cudaMemcpyDeviceToDevice, 0));
}

/* Milliseconds for `reps` back-to-back runs of fn, or a negative number. */
static double time_reps(struct calibration *cal, int (*fn)(struct calibration *, int), int arg, int reps)
{
	float ms = -1.0f;
	int i;

	if (CUDA_CHECK(cudaEventRecord(cal->start, 0)))
		return -1.0;
	for (i = 0; i < reps; i++)
		if (fn(cal, arg))
			return -1.0;
	if (CUDA_CHECK(cudaEventRecord(cal->stop, 0)) || CUDA_CHECK(cudaEventSynchronize(cal->stop)) ||
	    CUDA_CHECK(cudaEventElapsedTime(&ms, cal->start, cal->stop)))
		return -1.0;
	return ms;
}

/* Runs per second of fn: one warm-up, one to size the batch, then a batch of about CAL_TARGET_MS. */
static double rate(struct calibration *cal, int (*fn)(struct calibration *, int), int arg)
{
	double one, batch;
	int reps;

	if (time_reps(cal, fn, arg, 1) < 0 || (one = time_reps(cal, fn, arg, 1)) <= 0)
		return -1.0;
	reps = (int)(CAL_TARGET_MS / one);
	reps = reps < 3 ? 3 : reps > 200 ? 200 : reps;
	batch = time_reps(cal, fn, arg, reps);
	return batch > 0 ? reps / (batch * 1e-3) : -1.0;
}

static void calibration_free(struct calibration *cal)
{
	cudaFree(cal->a);
	cudaFree(cal->b);
	cudaFree(cal->c);
	cudaFree(cal->src);
	cudaFree(cal->dst);
	cal->a = cal->b = cal->c = cal->src = cal->dst = NULL;
	if (cal->start)
		cudaEventDestroy(cal->start);
	if (cal->stop)
		cudaEventDestroy(cal->stop);
	if (cal->blas)
		cublasDestroy(cal->blas);
	free(cal->tile);
	free(cal->tile_bf16);
	cudaDeviceSynchronize();
	cudaGetLastError();
}

static int measure_gemms(struct calibration *cal, double peak[3])
{
	size_t free_bytes = 0, total = 0, elems;
	int p;

	if (CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total)))
		return -1;
	cal->n = CAL_N;
	if (3ull * cal->n * cal->n * sizeof(float) > free_bytes / 2)
		cal->n = CAL_N / 2;
	elems = (size_t)cal->n * cal->n;
	if (CUDA_CHECK(cudaMalloc(&cal->a, elems * sizeof(float))) ||
	    CUDA_CHECK(cudaMalloc(&cal->b, elems * sizeof(float))) ||
	    CUDA_CHECK(cudaMalloc(&cal->c, elems * sizeof(float))))
		return -1;
	for (p = ST_FP32; p <= ST_BF16; p++) {
		double r;

		if ((p == ST_FP32 || p == ST_BF16) &&
		    (fill_matrix(cal, cal->a, elems, p == ST_BF16) ||
		     fill_matrix(cal, cal->b, elems, p == ST_BF16)))
			return -1;
		r = rate(cal, gemm_once, p);
		if (r <= 0)
			return -1;
		peak[p] = r * 2.0 * (double)cal->n * cal->n * cal->n;
	}
	cudaFree(cal->a);
	cudaFree(cal->b);
	cudaFree(cal->c);
	cal->a = cal->b = cal->c = NULL;
	return 0;
}

static int measure_copy(struct calibration *cal, double *bandwidth)
{
	size_t free_bytes = 0, total = 0;
	double r;

	if (CUDA_CHECK(cudaMemGetInfo(&free_bytes, &total)))
		return -1;
	cal->copy_bytes = free_bytes / 4 < CAL_COPY_MAX ? free_bytes / 4 : CAL_COPY_MAX;
	cal->copy_bytes &= ~((size_t)(2u << 20) - 1);
	if (cal->copy_bytes == 0)
		return error("too little free device memory for the copy calibration");
	if (CUDA_CHECK(cudaMalloc(&cal->src, cal->copy_bytes)) ||
	    CUDA_CHECK(cudaMalloc(&cal->dst, cal->copy_bytes)) ||
	    CUDA_CHECK(cudaMemset(cal->src, 1, cal->copy_bytes)))
		return -1;
	r = rate(cal, copy_once, 0);
	if (r <= 0)
		return -1;
	*bandwidth = r * 2.0 * (double)cal->copy_bytes;   /* each byte read once and written once */
	return 0;
}

int device_calibrate(struct device_facts *f)
{
	struct calibration cal = { 0 };
	double peak[3] = { 0 }, bandwidth = 0;
	int rc = -1;

	cal.tile = malloc(CAL_TILE_FLOATS * sizeof(float));
	cal.tile_bf16 = malloc(CAL_TILE_FLOATS * sizeof(uint16_t));
	if (!cal.tile || !cal.tile_bf16) {
		error("out of memory for the calibration data");
		goto out;
	}
	fill_tile(&cal);
	if (CUBLAS_CHECK(cublasCreate(&cal.blas)) || CUDA_CHECK(cudaEventCreate(&cal.start)) ||
	    CUDA_CHECK(cudaEventCreate(&cal.stop)))
		goto out;
	if (measure_gemms(&cal, peak) || measure_copy(&cal, &bandwidth))
		goto out;
	f->info.peak_fp32_flops = peak[ST_FP32];
	f->info.peak_tf32_flops = peak[ST_TF32];
	f->info.peak_bf16_flops = peak[ST_BF16];
	f->info.peak_fp16_flops = peak[ST_BF16];
	f->info.peak_bandwidth = bandwidth;
	f->info.peak_source = STEPTRACE__PEAK_SOURCE__PEAK_MEASURED;
	snprintf(f->note, sizeof(f->note),
		 "at record time: cuBLAS GemmEx %d^3 on random data, fp32 (COMPUTE_32F), "
		 "tf32 (COMPUTE_32F_FAST_TF32), bf16 (bf16 in/out, fp32 accumulate); fp16 taken as "
		 "bf16; bandwidth from a %zu MiB device-to-device copy counting bytes read + written",
		 cal.n, cal.copy_bytes >> 20);
	rc = 0;
out:
	calibration_free(&cal);
	if (rc)
		warning("device calibration failed; using datasheet peaks");
	return rc;
}
