/*
 * residual.cu: x + branch(x) into the FP32 residual stream. The backward of
 * an add is the identity (the stream's gradient flows to both sides); under
 * BF16 the branch side gets a cast (cast.cu), so no kernel lives here for it.
 */
#include "kernels/common.cuh"
#include "kernels/residual.h"

template <typename T>
__global__ void residual_forward_kernel(float *out, const float *x, const T *y, long long n)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = x[i] + to_f32(y[i]);
}

extern "C" cudaError_t residual_forward(float *out, const float *x, const void *y, long long n,
					enum st_dtype y_dtype, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	DISPATCH_DTYPE(y_dtype, E,
		residual_forward_kernel<E><<<ceil_div(n, 256), 256, 0, s>>>(out, x, (const E *)y, n));
	return cudaGetLastError();
}
