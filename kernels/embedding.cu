/*
 * embedding.cu: the token embedding. Forward gathers table rows by token id;
 * backward scatter-adds the rows of the output gradient into the table's
 * gradient with float atomics (ids repeat within a batch).
 */
#include "kernels/common.cuh"
#include "kernels/embedding.h"

__global__ void embedding_forward_kernel(float *out, const float *table, const int32_t *ids,
					 int d)
{
	int row = blockIdx.x;
	const float4 *src = (const float4 *)(table + (size_t)ids[row] * d);
	float4 *dst = (float4 *)(out + (size_t)row * d);

	if (d % 4 == 0) {
		for (int i = threadIdx.x; i < d / 4; i += blockDim.x)
			dst[i] = src[i];
	} else {
		for (int i = threadIdx.x; i < d; i += blockDim.x)
			out[(size_t)row * d + i] = table[(size_t)ids[row] * d + i];
	}
}

__global__ void embedding_backward_kernel(float *dtable, const float *dout, const int32_t *ids,
					  int d)
{
	int row = blockIdx.x;
	float *dst = dtable + (size_t)ids[row] * d;
	const float *src = dout + (size_t)row * d;

	for (int i = threadIdx.x; i < d; i += blockDim.x)
		atomicAdd(dst + i, src[i]);
}

extern "C" cudaError_t embedding_forward(float *out, const float *table, const int32_t *ids, int n,
					 int d, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	embedding_forward_kernel<<<n, 256, 0, s>>>(out, table, ids, d);
	return cudaGetLastError();
}

extern "C" cudaError_t embedding_backward(float *dtable, const float *dout, const int32_t *ids,
					  int n, int d, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	embedding_backward_kernel<<<n, 256, 0, s>>>(dtable, dout, ids, d);
	return cudaGetLastError();
}
