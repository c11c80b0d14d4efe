/*
 * grad_reduce.cu: the one kernel of the copy-engine all-reduce
 * (model/ddp_ce.c): the ranks' copies of a rank's shard of a bucket, in
 * rank order, times 1/ranks. Memory-bound: 16-byte loads where every pointer
 * allows them, a grid-stride loop so that a capped grid still covers n.
 */
#include "kernels/common.cuh"
#include "kernels/grad_reduce.h"

struct grad_in {
	const float *p[GRAD_REDUCE_MAX_IN];
};

__global__ void grad_reduce_vec_kernel(float4 *out, struct grad_in in, int n_in, long long n4,
				       float scale)
{
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4;
	     i += (long long)gridDim.x * blockDim.x) {
		float4 a = ((const float4 *)in.p[0])[i];
#pragma unroll
		for (int j = 1; j < GRAD_REDUCE_MAX_IN; j++) {   /* constant indices: no local copy of in */
			if (j >= n_in)
				break;
			float4 b = ((const float4 *)in.p[j])[i];
			a.x += b.x;
			a.y += b.y;
			a.z += b.z;
			a.w += b.w;
		}
		a.x *= scale;
		a.y *= scale;
		a.z *= scale;
		a.w *= scale;
		out[i] = a;
	}
}

__global__ void grad_reduce_kernel(float *out, struct grad_in in, int n_in, long long n, float scale)
{
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x) {
		float a = in.p[0][i];
#pragma unroll
		for (int j = 1; j < GRAD_REDUCE_MAX_IN; j++)
			if (j < n_in)
				a += in.p[j][i];
		out[i] = a * scale;
	}
}

extern "C" cudaError_t grad_reduce(float *out, const float *const *in, int n_in, long long n, float scale,
				   int max_ctas, cudaStream_t s)
{
	struct grad_in g = {};
	bool vec = ((uintptr_t)out & 15) == 0 && n % 4 == 0;
	long long work, blocks;

	if (n <= 0)
		return cudaSuccess;
	if (n_in < 1 || n_in > GRAD_REDUCE_MAX_IN)
		return cudaErrorInvalidValue;
	for (int j = 0; j < n_in; j++) {
		g.p[j] = in[j];
		vec = vec && ((uintptr_t)in[j] & 15) == 0;
	}
	work = vec ? n / 4 : n;
	blocks = ceil_div(work, 256);
	if (max_ctas > 0 && blocks > max_ctas)
		blocks = max_ctas;
	if (vec)
		grad_reduce_vec_kernel<<<(unsigned)blocks, 256, 0, s>>>((float4 *)out, g, n_in, work, scale);
	else
		grad_reduce_kernel<<<(unsigned)blocks, 256, 0, s>>>(out, g, n_in, n, scale);
	return cudaGetLastError();
}
