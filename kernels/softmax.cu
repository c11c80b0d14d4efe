/*
 * softmax.cu: the "naive" attention's middle: scale, causal mask (or none) and softmax
 * with max subtraction over materialised (B, H, T, T) scores, and its
 * backward. One warp per query row; the masked upper triangle is written as
 * zeros so the following batched matmuls see a dense matrix.
 */
#include "kernels/common.cuh"
#include "kernels/softmax.h"

#define SOFTMAX_WARPS 8

template <typename T>
__global__ void causal_softmax_forward_kernel(T *p, const T *s, long long rows, int T_, float scale,
					      bool causal)
{
	long long row = (long long)blockIdx.x * SOFTMAX_WARPS + threadIdx.x / 32;
	int lane = threadIdx.x % 32;
	if (row >= rows)
		return;
	int last = causal ? (int)(row % T_) : T_ - 1;   /* query position: keys 0..last are visible */
	const T *sr = s + row * T_;
	T *pr = p + row * T_;
	float mx = -INFINITY, sum = 0.0f;

	for (int j = lane; j <= last; j += 32)
		mx = fmaxf(mx, scale * to_f32(sr[j]));
	mx = warp_max(mx);
	for (int j = lane; j <= last; j += 32)
		sum += __expf(scale * to_f32(sr[j]) - mx);
	sum = warp_sum(sum);
	float inv = 1.0f / sum;
	for (int j = lane; j < T_; j += 32)
		pr[j] = from_f32<T>(j <= last ? __expf(scale * to_f32(sr[j]) - mx) * inv : 0.0f);
}

template <typename T>
__global__ void causal_softmax_backward_kernel(T *ds, const T *dp, const T *p, long long rows, int T_,
					       float scale, bool causal)
{
	long long row = (long long)blockIdx.x * SOFTMAX_WARPS + threadIdx.x / 32;
	int lane = threadIdx.x % 32;
	if (row >= rows)
		return;
	int last = causal ? (int)(row % T_) : T_ - 1;
	const T *dpr = dp + row * T_, *pr = p + row * T_;
	T *dsr = ds + row * T_;
	float dot = 0.0f;

	for (int j = lane; j <= last; j += 32)
		dot += to_f32(dpr[j]) * to_f32(pr[j]);
	dot = warp_sum(dot);
	for (int j = lane; j < T_; j += 32)
		dsr[j] = from_f32<T>(j <= last ? scale * to_f32(pr[j]) * (to_f32(dpr[j]) - dot) : 0.0f);
}

extern "C" cudaError_t attn_softmax_forward(void *p, const void *s, int bh, int T, float scale,
					    bool causal, enum st_dtype dtype, cudaStream_t st)
{
	long long rows = (long long)bh * T;
	if (rows == 0)
		return cudaSuccess;
	DISPATCH_DTYPE(dtype, E,
		causal_softmax_forward_kernel<E><<<ceil_div(rows, SOFTMAX_WARPS), 32 * SOFTMAX_WARPS, 0, st>>>(
			(E *)p, (const E *)s, rows, T, scale, causal));
	return cudaGetLastError();
}

extern "C" cudaError_t causal_softmax_forward(void *p, const void *s, int bh, int T, float scale,
					      enum st_dtype dtype, cudaStream_t st)
{
	return attn_softmax_forward(p, s, bh, T, scale, true, dtype, st);
}

extern "C" cudaError_t attn_softmax_backward(void *ds, const void *dp, const void *p, int bh,
					     int T, float scale, bool causal, enum st_dtype dtype,
					     cudaStream_t st)
{
	long long rows = (long long)bh * T;
	if (rows == 0)
		return cudaSuccess;
	DISPATCH_DTYPE(dtype, E,
		causal_softmax_backward_kernel<E><<<ceil_div(rows, SOFTMAX_WARPS), 32 * SOFTMAX_WARPS, 0, st>>>(
			(E *)ds, (const E *)dp, (const E *)p, rows, T, scale, causal));
	return cudaGetLastError();
}

extern "C" cudaError_t causal_softmax_backward(void *ds, const void *dp, const void *p, int bh,
					       int T, float scale, enum st_dtype dtype,
					       cudaStream_t st)
{
	return attn_softmax_backward(ds, dp, p, bh, T, scale, true, dtype, st);
}
