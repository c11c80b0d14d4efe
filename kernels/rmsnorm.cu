/*
 * rmsnorm.cu: RMSNorm (eps added to the mean square, gain, no bias), forward
 * and backward, always in FP32 whatever the output dtype. One block per row
 * forward; the backward walks a band of rows per block so the gain gradient
 * is reduced in shared memory before one atomic add per column and block,
 * and can write its dx in BF16 too, for the BF16 matmul that reads it next.
 */
#include "kernels/common.cuh"
#include "kernels/rmsnorm.h"

template <typename T>
__global__ void rmsnorm_forward_kernel(T *out, float *rstd, const float *x, const float *g, int d,
				       float eps)
{
	int row = blockIdx.x;
	const float *xr = x + (size_t)row * d;
	T *yr = out + (size_t)row * d;
	float ss = 0.0f;

	for (int i = threadIdx.x; i < d; i += blockDim.x)
		ss += xr[i] * xr[i];
	ss = block_sum(ss);
	float r = rsqrtf(ss / d + eps);
	for (int i = threadIdx.x; i < d; i += blockDim.x)
		yr[i] = from_f32<T>(xr[i] * r * g[i]);
	if (rstd && threadIdx.x == 0)
		rstd[row] = r;
}

__global__ void rmsnorm_backward_kernel(float *dx, __nv_bfloat16 *dx_bf16, float *dg,
					const float *dout, const float *x, const float *g,
					const float *rstd, int n, int d, int accumulate,
					int rows_per_block)
{
	extern __shared__ float dg_part[];   /* (d) */
	int row0 = blockIdx.x * rows_per_block;
	int row1 = min(row0 + rows_per_block, n);

	for (int i = threadIdx.x; i < d; i += blockDim.x)
		dg_part[i] = 0.0f;
	for (int row = row0; row < row1; row++) {
		const float *xr = x + (size_t)row * d, *dyr = dout + (size_t)row * d;
		float *dxr = dx + (size_t)row * d;
		float r = rstd[row], dot = 0.0f;

		for (int i = threadIdx.x; i < d; i += blockDim.x)
			dot += dyr[i] * g[i] * xr[i];
		dot = block_sum(dot);
		float c = dot * r * r * r / d;
		for (int i = threadIdx.x; i < d; i += blockDim.x) {
			float v = r * g[i] * dyr[i] - c * xr[i];
			if (accumulate)
				v += dxr[i];
			dxr[i] = v;
			if (dx_bf16)
				dx_bf16[(size_t)row * d + i] = __float2bfloat16_rn(v);
			dg_part[i] += dyr[i] * xr[i] * r;   /* column i is always this thread's */
		}
	}
	for (int i = threadIdx.x; i < d; i += blockDim.x)
		atomicAdd(dg + i, dg_part[i]);
}

static int rmsnorm_threads(int d)
{
	int t = 32;

	while (t < 1024 && t * 4 < d)
		t *= 2;
	return t;
}

extern "C" cudaError_t rmsnorm_forward(void *out, float *rstd, const float *x, const float *g,
				       int n, int d, float eps, enum st_dtype out_dtype,
				       cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	DISPATCH_DTYPE(out_dtype, T,
		rmsnorm_forward_kernel<T><<<n, rmsnorm_threads(d), 0, s>>>((T *)out, rstd, x, g, d, eps));
	return cudaGetLastError();
}

extern "C" cudaError_t rmsnorm_backward(float *dx, void *dx_bf16, float *dg, const float *dout,
					const float *x, const float *g, const float *rstd, int n,
					int d, int accumulate, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	/* enough blocks to fill the device, few enough to keep the atomics cheap */
	int rows_per_block = n / 1024 < 1 ? 1 : (n / 1024 > 32 ? 32 : n / 1024);
	int blocks = ceil_div(n, rows_per_block);
	rmsnorm_backward_kernel<<<blocks, rmsnorm_threads(d), d * sizeof(float), s>>>(
		dx, (__nv_bfloat16 *)dx_bf16, dg, dout, x, g, rstd, n, d, accumulate, rows_per_block);
	return cudaGetLastError();
}
