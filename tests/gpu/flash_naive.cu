/* flash_naive.cu: see flash_naive.h. Written for clarity, not speed. */
#include <cuda_bf16.h>

#include "tests/gpu/flash_naive.h"

#define NAIVE_THREADS 128

__device__ static float val(const float *p, size_t i) { return p[i]; }
__device__ static float val(const __nv_bfloat16 *p, size_t i) { return __bfloat162float(p[i]); }

/* Sum or max over the block; every thread gets the result. */
__device__ static float block_reduce(float v, bool is_max)
{
	__shared__ float part[NAIVE_THREADS / 32];
	for (int o = 16; o > 0; o >>= 1) {
		float w = __shfl_xor_sync(0xffffffffu, v, o);
		v = is_max ? fmaxf(v, w) : v + w;
	}
	__syncthreads();
	if (threadIdx.x % 32 == 0)
		part[threadIdx.x / 32] = v;
	__syncthreads();
	v = part[0];
	for (int i = 1; i < NAIVE_THREADS / 32; i++)
		v = is_max ? fmaxf(v, part[i]) : v + part[i];
	return v;
}

template <typename E>
__device__ static float dot(const E *a, const E *b, int d)
{
	float s = 0.0f;
	for (int c = 0; c < d; c++)
		s += val(a, c) * val(b, c);
	return s;
}

/* Block (row i, head): s[j] in shared memory for the keys row i sees. */
template <typename E>
__global__ void naive_fwd(float *o, float *lse, const E *q, const E *k, const E *v, int t, int d,
			  float scale, bool causal)
{
	extern __shared__ float s[];
	int i = blockIdx.x, n = causal ? i + 1 : t;
	size_t base = (size_t)blockIdx.y * t * d;
	float mx = -INFINITY, sum = 0.0f;

	for (int j = threadIdx.x; j < n; j += NAIVE_THREADS) {
		s[j] = scale * dot(q + base + (size_t)i * d, k + base + (size_t)j * d, d);
		mx = fmaxf(mx, s[j]);
	}
	mx = block_reduce(mx, true);
	for (int j = threadIdx.x; j < n; j += NAIVE_THREADS) {
		s[j] = expf(s[j] - mx);
		sum += s[j];
	}
	sum = block_reduce(sum, false);
	for (int c = threadIdx.x; c < d; c += NAIVE_THREADS) {
		float acc = 0.0f;
		for (int j = 0; j < n; j++)
			acc += s[j] * val(v, base + (size_t)j * d + c);
		o[base + (size_t)i * d + c] = acc / sum;
	}
	if (threadIdx.x == 0)
		lse[(size_t)blockIdx.y * t + i] = mx + logf(sum);
}

/* Block (row i, head): dS[i][j] in shared memory, then dq[i] = scale * dS[i] k. */
template <typename E>
__global__ void naive_dq(float *dq, const E *dout, const E *q, const E *k, const E *v,
			 const float *o, const float *lse, int t, int d, float scale, bool causal)
{
	extern __shared__ float ds[];
	int i = blockIdx.x, n = causal ? i + 1 : t;
	size_t base = (size_t)blockIdx.y * t * d, row = base + (size_t)i * d;
	float l = lse[(size_t)blockIdx.y * t + i], di = 0.0f;

	for (int c = 0; c < d; c++)
		di += val(dout, row + c) * o[row + c];
	for (int j = threadIdx.x; j < n; j += NAIVE_THREADS) {
		float p = expf(scale * dot(q + row, k + base + (size_t)j * d, d) - l);
		ds[j] = p * (dot(dout + row, v + base + (size_t)j * d, d) - di);
	}
	__syncthreads();
	for (int c = threadIdx.x; c < d; c += NAIVE_THREADS) {
		float acc = 0.0f;
		for (int j = 0; j < n; j++)
			acc += ds[j] * val(k, base + (size_t)j * d + c);
		dq[row + c] = scale * acc;
	}
}

/* Block (key j, head): P[i][j] and dS[i][j] over the rows i that see key j. */
template <typename E>
__global__ void naive_dkdv(float *dk, float *dv, const E *dout, const E *q, const E *k,
			   const E *v, const float *o, const float *lse, int t, int d, float scale,
			   bool causal)
{
	extern __shared__ float sm[];
	float *p = sm, *ds = sm + t;
	int j = blockIdx.x, i0 = causal ? j : 0;
	size_t base = (size_t)blockIdx.y * t * d, key = base + (size_t)j * d;

	for (int i = i0 + threadIdx.x; i < t; i += NAIVE_THREADS) {
		size_t row = base + (size_t)i * d;
		float di = 0.0f;
		for (int c = 0; c < d; c++)
			di += val(dout, row + c) * o[row + c];
		float pi = expf(scale * dot(q + row, k + key, d) - lse[(size_t)blockIdx.y * t + i]);
		p[i] = pi;
		ds[i] = pi * (dot(dout + row, v + key, d) - di);
	}
	__syncthreads();
	for (int c = threadIdx.x; c < d; c += NAIVE_THREADS) {
		float a = 0.0f, b = 0.0f;
		for (int i = i0; i < t; i++) {
			a += p[i] * val(dout, base + (size_t)i * d + c);
			b += ds[i] * val(q, base + (size_t)i * d + c);
		}
		dv[key + c] = a;
		dk[key + c] = scale * b;
	}
}

extern "C" cudaError_t naive_attention_forward(float *o, float *lse, const void *q, const void *k,
					       const void *v, int bh, int t, int d, float scale,
					       bool causal, enum st_dtype dtype)
{
	dim3 grid(t, bh);
	size_t smem = (size_t)t * sizeof(float);

	if (dtype == ST_DT_BF16) {
		cudaFuncSetAttribute(naive_fwd<__nv_bfloat16>,
				     cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
		naive_fwd<<<grid, NAIVE_THREADS, smem>>>(o, lse, (const __nv_bfloat16 *)q,
			(const __nv_bfloat16 *)k, (const __nv_bfloat16 *)v, t, d, scale, causal);
	} else {
		cudaFuncSetAttribute(naive_fwd<float>, cudaFuncAttributeMaxDynamicSharedMemorySize,
				     (int)smem);
		naive_fwd<<<grid, NAIVE_THREADS, smem>>>(o, lse, (const float *)q, (const float *)k,
							 (const float *)v, t, d, scale, causal);
	}
	return cudaGetLastError();
}

template <typename E>
static cudaError_t naive_bwd(float *dq, float *dk, float *dv, const E *dout, const E *q,
			     const E *k, const E *v, const float *o, const float *lse, int bh,
			     int t, int d, float scale, bool causal)
{
	dim3 grid(t, bh);
	size_t smem = (size_t)t * sizeof(float);
	cudaError_t e;

	cudaFuncSetAttribute(naive_dq<E>, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
	cudaFuncSetAttribute(naive_dkdv<E>, cudaFuncAttributeMaxDynamicSharedMemorySize,
			     (int)(2 * smem));
	naive_dq<<<grid, NAIVE_THREADS, smem>>>(dq, dout, q, k, v, o, lse, t, d, scale, causal);
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	naive_dkdv<<<grid, NAIVE_THREADS, 2 * smem>>>(dk, dv, dout, q, k, v, o, lse, t, d, scale,
						      causal);
	return cudaGetLastError();
}

extern "C" cudaError_t naive_attention_backward(float *dq, float *dk, float *dv, const void *dout,
						const void *q, const void *k, const void *v,
						const float *o, const float *lse, int bh, int t,
						int d, float scale, bool causal, enum st_dtype dtype)
{
	if (dtype == ST_DT_BF16)
		return naive_bwd(dq, dk, dv, (const __nv_bfloat16 *)dout, (const __nv_bfloat16 *)q,
				 (const __nv_bfloat16 *)k, (const __nv_bfloat16 *)v, o, lse, bh, t,
				 d, scale, causal);
	return naive_bwd(dq, dk, dv, (const float *)dout, (const float *)q, (const float *)k,
			 (const float *)v, o, lse, bh, t, d, scale, causal);
}
