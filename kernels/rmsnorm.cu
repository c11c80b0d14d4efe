/*
 * rmsnorm.cu: RMSNorm (eps added to the mean square, gain, no bias), forward
 * and backward, always in FP32 whatever the output dtype. One block per row
 * forward; the backward walks a band of rows per block so the gain gradient
 * is reduced in shared memory before one atomic add per column and block,
 * and can write its dx in BF16 too, for the BF16 matmul that reads it next.
 *
 * Those block-per-row forms are kept for rows of odd widths; where d holds
 * whole float4 vectors (and for the backward d <= 12,288) a warp takes a
 * row instead, reducing with shuffles alone and moving 16 bytes a load
 * (the block forms reached about half of the bandwidth on the model's
 * 1,280-wide rows; flops of a recorded large step). Sums run in another
 * order than the block forms', so results differ from theirs by FP32
 * rounding, not more.
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

/* Four values: 16 bytes of F32 (store16) or 8 of BF16. */
__device__ __forceinline__ void store4(float *p, const float *f)
{
	store16(p, f);
}

__device__ __forceinline__ void store4(__nv_bfloat16 *p, const float *f)
{
	__nv_bfloat162 lo = __floats2bfloat162_rn(f[0], f[1]), hi = __floats2bfloat162_rn(f[2], f[3]);
	*(uint2 *)p = make_uint2(*(const unsigned *)&lo, *(const unsigned *)&hi);
}

template <typename T>
__global__ void rmsnorm_forward_warp_kernel(T *out, float *rstd, const float *x, const float *g,
					    int n, int d, float eps)
{
	int lane = threadIdx.x % 32;
	long long row = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	if (row >= n)
		return;
	const float *xr = x + row * d;
	T *yr = out + row * d;
	float ss = 0.0f, v[4], w[4];

	for (int i = 4 * lane; i < d; i += 128) {
		load16(v, xr + i);
		ss += v[0] * v[0] + v[1] * v[1] + v[2] * v[2] + v[3] * v[3];
	}
	float r = rsqrtf(warp_sum(ss) / d + eps);
	for (int i = 4 * lane; i < d; i += 128) {
		load16(v, xr + i);
		load16(w, g + i);
		for (int j = 0; j < 4; j++)
			v[j] = v[j] * r * w[j];
		store4(yr + i, v);
	}
	if (rstd && lane == 0)
		rstd[row] = r;
}

/*
 * Warps stride over the rows; each keeps its part of the gain gradient in
 * its own d floats of shared memory (a column is always the same lane's),
 * summed over the block's warps before one atomic add per column.
 */
__global__ void rmsnorm_backward_warp_kernel(float *dx, __nv_bfloat16 *dx_bf16, float *dg,
					     const float *dout, const float *x, const float *g,
					     const float *rstd, int n, int d, int accumulate)
{
	extern __shared__ float dg_warp[];   /* (warps, d) */
	int lane = threadIdx.x % 32, warp = threadIdx.x / 32, warps = blockDim.x / 32;
	float *part = dg_warp + (size_t)warp * d;
	const float zero[4] = { 0.0f, 0.0f, 0.0f, 0.0f };

	for (int i = 4 * lane; i < d; i += 128)
		store4(part + i, zero);
	for (long long row = (long long)blockIdx.x * warps + warp; row < n;
	     row += (long long)gridDim.x * warps) {
		const float *xr = x + row * d, *dyr = dout + row * d;
		float *dxr = dx + row * d;
		float r = rstd[row], dot = 0.0f, xv[4], dy[4], gv[4], o[4], p[4];

		for (int i = 4 * lane; i < d; i += 128) {
			load16(xv, xr + i);
			load16(dy, dyr + i);
			load16(gv, g + i);
			for (int j = 0; j < 4; j++)
				dot += dy[j] * gv[j] * xv[j];
		}
		float c = warp_sum(dot) * r * r * r / d;
		for (int i = 4 * lane; i < d; i += 128) {
			load16(xv, xr + i);
			load16(dy, dyr + i);
			load16(gv, g + i);
			if (accumulate)
				load16(o, dxr + i);
			load16(p, part + i);
			for (int j = 0; j < 4; j++) {
				float v = r * gv[j] * dy[j] - c * xv[j];
				o[j] = accumulate ? o[j] + v : v;
				p[j] += dy[j] * xv[j] * r;
			}
			store4(dxr + i, o);
			if (dx_bf16)
				store4(dx_bf16 + row * d + i, o);
			store4(part + i, p);
		}
	}
	__syncthreads();
	for (int i = threadIdx.x; i < d; i += blockDim.x) {
		float sum = 0.0f;
		for (int w = 0; w < warps; w++)
			sum += dg_warp[(size_t)w * d + i];
		atomicAdd(dg + i, sum);
	}
}

/* The warp forms: rows of whole float4 vectors, every buffer aligned to them. */
static bool rmsnorm_warp_ok(int d, const void *a, const void *b, const void *c, const void *e)
{
	return d % 4 == 0 && aligned16(a) && aligned16(b) && aligned16(c) && aligned16(e);
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
	if (rmsnorm_warp_ok(d, out, x, g, g)) {
		DISPATCH_DTYPE(out_dtype, T,
			rmsnorm_forward_warp_kernel<T><<<ceil_div(n, 8), 256, 0, s>>>(
				(T *)out, rstd, x, g, n, d, eps));
		return cudaGetLastError();
	}
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
	if (d <= 12288 && rmsnorm_warp_ok(d, dx, dout, x, g) && (!dx_bf16 || ((size_t)dx_bf16 & 7) == 0)) {
		/* 48 KiB of shared memory for the warps' gain gradients; blocks as below */
		int warps = 12288 / d < 8 ? 12288 / d : 8;
		int rows_per_warp = n / (1024 * warps) < 1 ? 1 : n / (1024 * warps);
		int blocks = ceil_div(n, (long long)warps * rows_per_warp);
		rmsnorm_backward_warp_kernel<<<blocks, 32 * warps, (size_t)warps * d * sizeof(float), s>>>(
			dx, (__nv_bfloat16 *)dx_bf16, dg, dout, x, g, rstd, n, d, accumulate);
		return cudaGetLastError();
	}
	/* enough blocks to fill the device, few enough to keep the atomics cheap */
	int rows_per_block = n / 1024 < 1 ? 1 : (n / 1024 > 32 ? 32 : n / 1024);
	int blocks = ceil_div(n, rows_per_block);
	rmsnorm_backward_kernel<<<blocks, rmsnorm_threads(d), d * sizeof(float), s>>>(
		dx, (__nv_bfloat16 *)dx_bf16, dg, dout, x, g, rstd, n, d, accumulate, rows_per_block);
	return cudaGetLastError();
}
