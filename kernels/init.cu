/*
 * init.cu: the initial weights, made on the device so a 2.7B-parameter model
 * does not wait on a host loop: truncated normal by rejection over a
 * splitmix64 counter stream (Box-Muller in double), and constant fill for
 * the RMSNorm gains.
 */
#include "kernels/common.cuh"
#include "kernels/init.h"

__device__ __forceinline__ uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

__device__ __forceinline__ double uniform01(uint64_t x)
{
	return ((x >> 11) + 0.5) * (1.0 / 9007199254740992.0);   /* (0, 1) */
}

__global__ void init_trunc_normal_kernel(float *p, long long n, float std, float cut, uint64_t seed)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	uint64_t key = splitmix64(seed ^ splitmix64((uint64_t)i));
	double z;

	for (uint64_t k = 0;; k += 2) {
		double u1 = uniform01(splitmix64(key + k)), u2 = uniform01(splitmix64(key + k + 1));
		z = sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
		if (fabs(z) <= cut)
			break;
	}
	p[i] = (float)(z * std);
}

__global__ void init_fill_kernel(float *p, long long n, float value)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i < n)
		p[i] = value;
}

extern "C" cudaError_t init_trunc_normal(float *p, long long n, float std, float cut, uint64_t seed,
					 cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	init_trunc_normal_kernel<<<ceil_div(n, 256), 256, 0, s>>>(p, n, std, cut, seed);
	return cudaGetLastError();
}

extern "C" cudaError_t init_fill(float *p, long long n, float value, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	init_fill_kernel<<<ceil_div(n, 256), 256, 0, s>>>(p, n, value);
	return cudaGetLastError();
}
