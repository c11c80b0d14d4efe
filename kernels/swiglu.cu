/*
 * swiglu.cu: the FFN's gate h = silu(w1 x) * (w3 x), silu(a) = a sigmoid(a),
 * forward and backward, elementwise in FP32 whatever the storage dtype.
 */
#include "kernels/common.cuh"
#include "kernels/swiglu.h"

template <typename T>
__global__ void swiglu_forward_kernel(T *h, const T *a, const T *b, long long n)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = to_f32(a[i]);
	h[i] = from_f32<T>(x / (1.0f + __expf(-x)) * to_f32(b[i]));
}

template <typename T>
__global__ void swiglu_backward_kernel(T *da, T *db, const T *dh, const T *a, const T *b, long long n)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float x = to_f32(a[i]), y = to_f32(b[i]), g = to_f32(dh[i]);
	float sig = 1.0f / (1.0f + __expf(-x));

	da[i] = from_f32<T>(g * y * sig * (1.0f + x * (1.0f - sig)));
	db[i] = from_f32<T>(g * x * sig);
}

extern "C" int swiglu_forward(void *h, const void *a, const void *b, long long n, int dtype,
			      cudaStream_t s)
{
	if (n == 0)
		return 0;
	DISPATCH_DTYPE(dtype, E,
		swiglu_forward_kernel<E><<<ceil_div(n, 256), 256, 0, s>>>((E *)h, (const E *)a,
									  (const E *)b, n));
	return KERNEL_CHECK("swiglu_forward");
}

extern "C" int swiglu_backward(void *da, void *db, const void *dh, const void *a, const void *b,
			       long long n, int dtype, cudaStream_t s)
{
	if (n == 0)
		return 0;
	DISPATCH_DTYPE(dtype, E,
		swiglu_backward_kernel<E><<<ceil_div(n, 256), 256, 0, s>>>(
			(E *)da, (E *)db, (const E *)dh, (const E *)a, (const E *)b, n));
	return KERNEL_CHECK("swiglu_backward");
}
