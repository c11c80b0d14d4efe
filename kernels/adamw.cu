/*
 * adamw.cu: AdamW exactly as the CS336 reference orders it: moments, the
 * bias-corrected step with alpha_t, then decoupled weight decay applied to
 * the already-updated parameter. FP32 parameters, gradients and moments.
 */
#include "kernels/adamw.h"
#include "kernels/common.cuh"

/* One element's update; returns the new parameter. */
__device__ __forceinline__ float adamw_one(float *p, const float *g, float *m, float *v,
					   long long i, float beta1, float one_minus_beta1,
					   float beta2, float one_minus_beta2, float eps,
					   float alpha_t, float lr_wd)
{
	float gi = g[i];
	float mi = beta1 * m[i] + one_minus_beta1 * gi;
	float vi = beta2 * v[i] + one_minus_beta2 * gi * gi;
	float pi = p[i] - alpha_t * mi / (sqrtf(vi) + eps);

	m[i] = mi;
	v[i] = vi;
	pi = pi - lr_wd * pi;
	p[i] = pi;
	return pi;
}

__global__ void adamw_kernel(float *p, const float *g, float *m, float *v, long long n, float beta1,
			     float one_minus_beta1, float beta2, float one_minus_beta2, float eps,
			     float alpha_t, float lr_wd)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	adamw_one(p, g, m, v, i, beta1, one_minus_beta1, beta2, one_minus_beta2, eps, alpha_t, lr_wd);
}

__global__ void adamw_copy_kernel(float *p, const float *g, float *m, float *v, long long n,
				  float beta1, float one_minus_beta1, float beta2,
				  float one_minus_beta2, float eps, const float *hyper,
				  __nv_bfloat16 *copy, long long copy_from)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float pi = adamw_one(p, g, m, v, i, beta1, one_minus_beta1, beta2, one_minus_beta2, eps,
			     hyper[0], hyper[1]);
	if (copy && i >= copy_from)
		copy[i - copy_from] = __float2bfloat16_rn(pi);
}

extern "C" cudaError_t adamw_update(float *p, const float *g, float *m, float *v, long long n,
				    double beta1, double beta2, float eps, float alpha_t,
				    float lr_wd, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	adamw_kernel<<<ceil_div(n, 256), 256, 0, s>>>(p, g, m, v, n, (float)beta1, (float)(1.0 - beta1),
								(float)beta2, (float)(1.0 - beta2), eps,
								alpha_t, lr_wd);
	return cudaGetLastError();
}

/*
 * The same, four elements a thread through 16-byte loads and an 8-byte
 * copy store: n and copy_from multiples of 4, p, g, m, v 16-byte aligned
 * and copy 8-byte aligned (adamw_update_copy checks).
 */
__global__ void adamw_copy4_kernel(float4 *p, const float4 *g, float4 *m, float4 *v, long long n4,
				   float beta1, float one_minus_beta1, float beta2,
				   float one_minus_beta2, float eps, const float *hyper,
				   __nv_bfloat162 *copy, long long copy_from4)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n4)
		return;
	float alpha_t = hyper[0], lr_wd = hyper[1];
	float4 pv = p[i], gv = g[i], mv = m[i], vv = v[i];
	float *pe = &pv.x, *ge = &gv.x, *me = &mv.x, *ve = &vv.x;

	for (int k = 0; k < 4; k++) {
		float mi = beta1 * me[k] + one_minus_beta1 * ge[k];
		float vi = beta2 * ve[k] + one_minus_beta2 * ge[k] * ge[k];
		float pi = pe[k] - alpha_t * mi / (sqrtf(vi) + eps);

		me[k] = mi;
		ve[k] = vi;
		pe[k] = pi - lr_wd * pi;
	}
	p[i] = pv;
	m[i] = mv;
	v[i] = vv;
	if (copy && i >= copy_from4) {
		__nv_bfloat162 *c = copy + 2 * (i - copy_from4);

		c[0] = __floats2bfloat162_rn(pv.x, pv.y);
		c[1] = __floats2bfloat162_rn(pv.z, pv.w);
	}
}

static bool aligned(const void *ptr, uintptr_t a)
{
	return ((uintptr_t)ptr & (a - 1)) == 0;
}

extern "C" cudaError_t adamw_update_copy(float *p, const float *g, float *m, float *v, long long n,
					 double beta1, double beta2, float eps, const float *hyper,
					 void *copy, long long copy_from, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	if (n % 4 == 0 && copy_from % 4 == 0 && aligned(p, 16) && aligned(g, 16) && aligned(m, 16) &&
	    aligned(v, 16) && aligned(copy, 8)) {
		adamw_copy4_kernel<<<ceil_div(n / 4, 256), 256, 0, s>>>(
			(float4 *)p, (const float4 *)g, (float4 *)m, (float4 *)v, n / 4, (float)beta1,
			(float)(1.0 - beta1), (float)beta2, (float)(1.0 - beta2), eps, hyper,
			(__nv_bfloat162 *)copy, copy_from / 4);
		return cudaGetLastError();
	}
	adamw_copy_kernel<<<ceil_div(n, 256), 256, 0, s>>>(
		p, g, m, v, n, (float)beta1, (float)(1.0 - beta1), (float)beta2, (float)(1.0 - beta2),
		eps, hyper, (__nv_bfloat16 *)copy, copy_from);
	return cudaGetLastError();
}
