/*
 * common.cuh: what every kernel file shares: warp/block reductions, float
 * <-> storage conversion for the two activation dtypes (F32, BF16) the
 * kernels are templated over, and the dispatch between them. Device-side
 * helpers only; no kernels live here. Launchers never print: each returns
 * its launch's cudaError_t (cudaGetLastError() after the launch) for the
 * caller to check (lib/gpu_check.h).
 */
#ifndef STEPTRACE_KERNELS_COMMON_CUH
#define STEPTRACE_KERNELS_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "trace/types.h"

static inline int ceil_div(long long a, long long b)
{
	return (int)((a + b - 1) / b);
}

__device__ __forceinline__ float to_f32(float x) { return x; }
__device__ __forceinline__ float to_f32(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T> __device__ __forceinline__ T from_f32(float x);
template <> __device__ __forceinline__ float from_f32<float>(float x) { return x; }
template <> __device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float x)
{
	return __float2bfloat16_rn(x);
}

__device__ __forceinline__ float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_xor_sync(0xffffffffu, v, o);
	return v;
}

__device__ __forceinline__ float warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
	return v;
}

/* Sum over the whole block (blockDim.x a multiple of 32, at most 1024); every thread gets it. */
__device__ __forceinline__ float block_sum(float v)
{
	__shared__ float part[32];
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;

	v = warp_sum(v);
	__syncthreads();          /* part[] may still be read by a previous call */
	if (lane == 0)
		part[warp] = v;
	__syncthreads();
	v = lane < nwarps ? part[lane] : 0.0f;
	return warp_sum(v);
}

__device__ __forceinline__ float block_max(float v)
{
	__shared__ float part[32];
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;

	v = warp_max(v);
	__syncthreads();
	if (lane == 0)
		part[warp] = v;
	__syncthreads();
	v = lane < nwarps ? part[lane] : -INFINITY;
	return warp_max(v);
}

/*
 * 16-byte accesses for the bandwidth-bound kernels: VEC16<E> elements (4 F32
 * or 8 BF16) loaded into or stored from FP32 registers in one transaction.
 * The caller checks alignment (aligned16) and that rows hold whole vectors;
 * conversions round as the scalar from_f32 does, so results match it bit
 * for bit.
 */
template <typename E> struct vec16_len {
	static constexpr int n = 16 / (int)sizeof(E);
};
#define VEC16(E) (vec16_len<E>::n)

static inline bool aligned16(const void *p)
{
	return ((unsigned long long)(size_t)p & 15) == 0;
}

__device__ __forceinline__ void load16(float *f, const float *p)
{
	float4 v = *(const float4 *)p;
	f[0] = v.x, f[1] = v.y, f[2] = v.z, f[3] = v.w;
}

__device__ __forceinline__ void load16(float *f, const __nv_bfloat16 *p)
{
	uint4 v = *(const uint4 *)p;
	unsigned w[4] = { v.x, v.y, v.z, v.w };
	for (int j = 0; j < 4; j++) {
		float2 t = __bfloat1622float2(*(const __nv_bfloat162 *)&w[j]);
		f[2 * j] = t.x, f[2 * j + 1] = t.y;
	}
}

__device__ __forceinline__ void store16(float *p, const float *f)
{
	*(float4 *)p = make_float4(f[0], f[1], f[2], f[3]);
}

__device__ __forceinline__ void store16(__nv_bfloat16 *p, const float *f)
{
	unsigned w[4];
	for (int j = 0; j < 4; j++) {
		__nv_bfloat162 t = __floats2bfloat162_rn(f[2 * j], f[2 * j + 1]);
		w[j] = *(const unsigned *)&t;
	}
	*(uint4 *)p = make_uint4(w[0], w[1], w[2], w[3]);
}

/* Instantiates a launch for the F32 or BF16 variant of a kernel template. */
#define DISPATCH_DTYPE(dtype, T, ...)                         \
	do {                                                   \
		if ((dtype) == ST_DT_BF16) {                     \
			typedef __nv_bfloat16 T;               \
			__VA_ARGS__;                           \
		} else {                                       \
			typedef float T;                       \
			__VA_ARGS__;                           \
		}                                              \
	} while (0)

#endif
