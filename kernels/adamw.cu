/*
 * adamw.cu: AdamW exactly as the CS336 reference orders it: moments, the
 * bias-corrected step with alpha_t, then decoupled weight decay applied to
 * the already-updated parameter. FP32 parameters, gradients and moments.
 * The fused variant (--kernels fused) reads alpha_t and lr_wd from device
 * memory and writes the BF16 copy of each updated parameter too.
 */
#include "kernels/adamw.h"
#include "kernels/common.cuh"

/* The ranks' gradients to average, in rank order (n 0: none). */
struct adamw_avg {
	const float *in[ADAMW_AVG_MAX];
	int n;
	float scale;
};

static adamw_avg avg_of(const float *const *avg, int n_avg)
{
	adamw_avg a = {};

	for (int j = 0; j < n_avg && j < ADAMW_AVG_MAX; j++)
		a.in[j] = avg[j];
	a.n = n_avg > 0 ? n_avg : 0;
	a.scale = n_avg > 0 ? 1.0f / (float)n_avg : 1.0f;
	return a;
}

struct adamw_coef {
	float beta1, one_minus_beta1, beta2, one_minus_beta2, eps, alpha_t, lr_wd;
};

static adamw_coef coef(double beta1, double beta2, float eps, float alpha_t, float lr_wd)
{
	return { (float)beta1, (float)(1.0 - beta1), (float)beta2, (float)(1.0 - beta2), eps,
		 alpha_t, lr_wd };
}

/* One element's update, in registers. */
__device__ __forceinline__ void adamw_elem(float &p, float g, float &m, float &v,
					   const adamw_coef &c)
{
	m = c.beta1 * m + c.one_minus_beta1 * g;
	v = c.beta2 * v + c.one_minus_beta2 * g * g;
	p = p - c.alpha_t * m / (sqrtf(v) + c.eps);
	p = p - c.lr_wd * p;
}

/* hyper: alpha_t and lr_wd from device memory (fused), or NULL for c's own. */
__device__ __forceinline__ adamw_coef with_hyper(adamw_coef c, const float *hyper)
{
	if (hyper) {
		c.alpha_t = hyper[0];
		c.lr_wd = hyper[1];
	}
	return c;
}

/* One element a thread; copy[i - copy_from] = bf16(p[i]) for i >= copy_from when copy. */
__global__ void adamw_kernel(float *p, const float *g, float *m, float *v, long long n,
			     adamw_coef c, const float *hyper, __nv_bfloat16 *copy,
			     long long copy_from, adamw_avg a)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float pi = p[i], mi = m[i], vi = v[i], gi;

	if (a.n) {
		gi = a.in[0][i];
#pragma unroll
		for (int j = 1; j < ADAMW_AVG_MAX; j++)   /* constant indices: the pointers stay in registers */
			if (j < a.n)
				gi += a.in[j][i];
		gi *= a.scale;
	} else {
		gi = g[i];
	}
	adamw_elem(pi, gi, mi, vi, with_hyper(c, hyper));
	p[i] = pi;
	m[i] = mi;
	v[i] = vi;
	if (copy && i >= copy_from)
		copy[i - copy_from] = __float2bfloat16_rn(pi);
}

/*
 * The same, four elements a thread through 16-byte loads and an 8-byte
 * copy store: n and copy_from multiples of 4, p, g, m, v 16-byte aligned
 * and copy 8-byte aligned (adamw_update_copy checks).
 */
__global__ void adamw4_kernel(float4 *p, const float4 *g, float4 *m, float4 *v, long long n4,
			      adamw_coef c, const float *hyper, __nv_bfloat162 *copy,
			      long long copy_from4, adamw_avg a)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n4)
		return;
	adamw_coef k = with_hyper(c, hyper);
	float4 pv = p[i], gv, mv = m[i], vv = v[i];

	if (a.n) {
		gv = ((const float4 *)a.in[0])[i];
#pragma unroll
		for (int j = 1; j < ADAMW_AVG_MAX; j++) {
			if (j >= a.n)
				break;
			float4 b = ((const float4 *)a.in[j])[i];
			gv.x += b.x;
			gv.y += b.y;
			gv.z += b.z;
			gv.w += b.w;
		}
		gv.x *= a.scale;
		gv.y *= a.scale;
		gv.z *= a.scale;
		gv.w *= a.scale;
	} else {
		gv = g[i];
	}

	adamw_elem(pv.x, gv.x, mv.x, vv.x, k);
	adamw_elem(pv.y, gv.y, mv.y, vv.y, k);
	adamw_elem(pv.z, gv.z, mv.z, vv.z, k);
	adamw_elem(pv.w, gv.w, mv.w, vv.w, k);
	p[i] = pv;
	m[i] = mv;
	v[i] = vv;
	if (copy && i >= copy_from4) {
		__nv_bfloat162 *d = copy + 2 * (i - copy_from4);

		d[0] = __floats2bfloat162_rn(pv.x, pv.y);
		d[1] = __floats2bfloat162_rn(pv.z, pv.w);
	}
}

extern "C" cudaError_t adamw_update(float *p, const float *g, float *m, float *v, long long n,
				    double beta1, double beta2, float eps, float alpha_t,
				    float lr_wd, const float *const *avg, int n_avg, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	if (n_avg < 0 || n_avg > ADAMW_AVG_MAX)
		return cudaErrorInvalidValue;
	adamw_kernel<<<ceil_div(n, 256), 256, 0, s>>>(p, g, m, v, n,
						       coef(beta1, beta2, eps, alpha_t, lr_wd),
						       NULL, NULL, 0, avg_of(avg, n_avg));
	return cudaGetLastError();
}

static bool aligned(const void *ptr, uintptr_t a)
{
	return ((uintptr_t)ptr & (a - 1)) == 0;
}

extern "C" cudaError_t adamw_update_copy(float *p, const float *g, float *m, float *v, long long n,
					 double beta1, double beta2, float eps, const float *hyper,
					 void *copy, long long copy_from, const float *const *avg,
					 int n_avg, cudaStream_t s)
{
	adamw_coef c = coef(beta1, beta2, eps, 0.0f, 0.0f);
	bool vec = n % 4 == 0 && copy_from % 4 == 0 && aligned(p, 16) && aligned(g, 16) &&
		   aligned(m, 16) && aligned(v, 16) && aligned(copy, 8);

	if (n == 0)
		return cudaSuccess;
	if (n_avg < 0 || n_avg > ADAMW_AVG_MAX)
		return cudaErrorInvalidValue;
	for (int j = 0; j < n_avg; j++)
		vec = vec && aligned(avg[j], 16);
	if (vec)
		adamw4_kernel<<<ceil_div(n / 4, 256), 256, 0, s>>>(
			(float4 *)p, (const float4 *)g, (float4 *)m, (float4 *)v, n / 4, c, hyper,
			(__nv_bfloat162 *)copy, copy_from / 4, avg_of(avg, n_avg));
	else
		adamw_kernel<<<ceil_div(n, 256), 256, 0, s>>>(p, g, m, v, n, c, hyper,
							       (__nv_bfloat16 *)copy, copy_from,
							       avg_of(avg, n_avg));
	return cudaGetLastError();
}
