/*
 * cast.cu: the FP32 -> BF16 cast autocast makes of the weights before each
 * matmul. (The residual stream's gradient entering a BF16 branch is cast
 * inside the RMSNorm backward that writes it, rmsnorm.cu.)
 */
#include "kernels/cast.h"
#include "kernels/common.cuh"

__global__ void cast_f32_to_bf16_kernel(__nv_bfloat16 *out, const float *in, long long n)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		out[i] = __float2bfloat16_rn(in[i]);
}

extern "C" cudaError_t cast_f32_to_bf16(void *out, const float *in, long long n, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	cast_f32_to_bf16_kernel<<<ceil_div(n, 256), 256, 0, s>>>((__nv_bfloat16 *)out, in, n);
	return cudaGetLastError();
}
