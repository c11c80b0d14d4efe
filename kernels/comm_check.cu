/*
 * comm_check.cu: `bench allreduce`'s inputs and the check of its results
 * (comm_check.h), over F32, BF16 and F16 alike: values are made and
 * compared as floats, stored in the element type.
 */
#include <cuda_fp16.h>

#include "kernels/comm_check.h"
#include "kernels/common.cuh"

template <typename T> __device__ __forceinline__ T store(float x);
template <> __device__ __forceinline__ float store<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 store<__nv_bfloat16>(float x) { return __float2bfloat16_rn(x); }
template <> __device__ __forceinline__ __half store<__half>(float x) { return __float2half_rn(x); }

__device__ __forceinline__ float load(float x) { return x; }
__device__ __forceinline__ float load(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float load(__half x) { return __half2float(x); }

__device__ __forceinline__ float value(size_t i, int rank)
{
	return (float)((rank + i) % 4 + 1);
}

template <typename T>
__global__ void fill_kernel(T *buf, size_t n, int rank)
{
	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x)
		buf[i] = store<T>(value(i, rank));
}

template <typename T>
__global__ void check_kernel(const T *buf, size_t n, int ranks, unsigned long long *mismatches)
{
	unsigned long long bad = 0;

	for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (size_t)gridDim.x * blockDim.x) {
		float want = 0;

		for (int r = 0; r < ranks; r++)
			want += value(i, r);
		bad += load(buf[i]) != want;
	}
	if (bad)
		atomicAdd(mismatches, bad);
}

static int grid_for(size_t n)
{
	size_t blocks = (n + 255) / 256;

	return blocks > 4096 ? 4096 : blocks < 1 ? 1 : (int)blocks;
}

extern "C" cudaError_t comm_check_fill(void *buf, size_t n, enum st_dtype dtype, int rank, cudaStream_t s)
{
	if (dtype == ST_DT_BF16)
		fill_kernel<<<grid_for(n), 256, 0, s>>>((__nv_bfloat16 *)buf, n, rank);
	else if (dtype == ST_DT_F16)
		fill_kernel<<<grid_for(n), 256, 0, s>>>((__half *)buf, n, rank);
	else if (dtype == ST_DT_F32)
		fill_kernel<<<grid_for(n), 256, 0, s>>>((float *)buf, n, rank);
	else
		return cudaErrorInvalidValue;
	return cudaGetLastError();
}

extern "C" cudaError_t comm_check_sum(const void *buf, size_t n, enum st_dtype dtype, int ranks,
				      unsigned long long *mismatches, cudaStream_t s)
{
	if (dtype == ST_DT_BF16)
		check_kernel<<<grid_for(n), 256, 0, s>>>((const __nv_bfloat16 *)buf, n, ranks, mismatches);
	else if (dtype == ST_DT_F16)
		check_kernel<<<grid_for(n), 256, 0, s>>>((const __half *)buf, n, ranks, mismatches);
	else if (dtype == ST_DT_F32)
		check_kernel<<<grid_for(n), 256, 0, s>>>((const float *)buf, n, ranks, mismatches);
	else
		return cudaErrorInvalidValue;
	return cudaGetLastError();
}
