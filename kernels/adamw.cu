/*
 * adamw.cu: AdamW exactly as the CS336 reference orders it: moments, the
 * bias-corrected step with alpha_t, then decoupled weight decay applied to
 * the already-updated parameter. FP32 parameters, gradients and moments.
 */
#include "kernels/adamw.h"
#include "kernels/common.cuh"

__global__ void adamw_kernel(float *p, const float *g, float *m, float *v, long long n, float beta1,
			     float one_minus_beta1, float beta2, float one_minus_beta2, float eps,
			     float alpha_t, float lr_wd)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	float gi = g[i];
	float mi = beta1 * m[i] + one_minus_beta1 * gi;
	float vi = beta2 * v[i] + one_minus_beta2 * gi * gi;
	float pi = p[i] - alpha_t * mi / (sqrtf(vi) + eps);

	m[i] = mi;
	v[i] = vi;
	p[i] = pi - lr_wd * pi;
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
