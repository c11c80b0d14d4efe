/*
 * swiglu.cu: the FFN's gate g = silu(w1 x) * (w3 x), silu(a) = a sigmoid(a),
 * forward and backward, elementwise in FP32 whatever the storage dtype. Both
 * halves come from (and their gradients go to) one row [a | b] of the fused
 * w1/w3 output, so one thread per gate element reads a and b f apart.
 */
#include "kernels/common.cuh"
#include "kernels/swiglu.h"

template <typename T>
__global__ void swiglu_forward_kernel(T *g, const T *h13, long long n, int f)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	long long a = i + (i / f) * f;      /* row r, column c: r * 2f + c */
	float x = to_f32(h13[a]);
	g[i] = from_f32<T>(x / (1.0f + __expf(-x)) * to_f32(h13[a + f]));
}

template <typename T>
__global__ void swiglu_backward_kernel(T *dh13, const T *dg, const T *h13, long long n, int f)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	long long a = i + (i / f) * f;
	float x = to_f32(h13[a]), y = to_f32(h13[a + f]), d = to_f32(dg[i]);
	float sig = 1.0f / (1.0f + __expf(-x));

	dh13[a] = from_f32<T>(d * y * sig * (1.0f + x * (1.0f - sig)));
	dh13[a + f] = from_f32<T>(d * x * sig);
}

extern "C" cudaError_t swiglu_forward(void *g, const void *h13, long long rows, int f,
				      enum st_dtype dtype, cudaStream_t s)
{
	long long n = rows * f;

	if (n == 0)
		return cudaSuccess;
	DISPATCH_DTYPE(dtype, E,
		swiglu_forward_kernel<E><<<ceil_div(n, 256), 256, 0, s>>>((E *)g, (const E *)h13, n,
									  f));
	return cudaGetLastError();
}

extern "C" cudaError_t swiglu_backward(void *dh13, const void *dg, const void *h13, long long rows,
				       int f, enum st_dtype dtype, cudaStream_t s)
{
	long long n = rows * f;

	if (n == 0)
		return cudaSuccess;
	DISPATCH_DTYPE(dtype, E,
		swiglu_backward_kernel<E><<<ceil_div(n, 256), 256, 0, s>>>(
			(E *)dh13, (const E *)dg, (const E *)h13, n, f));
	return cudaGetLastError();
}
