/*
 * cross_entropy.cu: mean cross-entropy over token rows. The forward keeps
 * each row's logsumexp so the backward (softmax minus one-hot, over the row
 * count) needs one pass; the mean is a fixed-order single-block sum so the
 * loss is bitwise reproducible.
 */
#include "kernels/common.cuh"
#include "kernels/cross_entropy.h"

template <typename T>
__global__ void cross_entropy_rows_kernel(float *lse, float *row_loss, const T *logits,
					  const int32_t *targets, int vocab)
{
	int row = blockIdx.x;
	const T *lr = logits + (size_t)row * vocab;
	float mx = -INFINITY, sum = 0.0f;

	for (int j = threadIdx.x; j < vocab; j += blockDim.x)
		mx = fmaxf(mx, to_f32(lr[j]));
	mx = block_max(mx);
	for (int j = threadIdx.x; j < vocab; j += blockDim.x)
		sum += __expf(to_f32(lr[j]) - mx);
	sum = block_sum(sum);
	if (threadIdx.x == 0) {
		float l = mx + logf(sum);
		lse[row] = l;
		row_loss[row] = l - to_f32(lr[targets[row]]);
	}
}

/*
 * The forward and the backward of one row in one kernel (--kernels fused):
 * the row's logsumexp and loss, then its gradient written over the logits,
 * so the (n, vocab) matrix is read and written once by one launch (the
 * row's three reads after the first come from cache) and no dlogits
 * buffer exists. The target's logit is read before the block's barrier
 * and any write.
 */
template <typename T>
__global__ void cross_entropy_fused_kernel(float *lse, float *row_loss, T *logits,
					   const int32_t *targets, int vocab, float inv_n)
{
	int row = blockIdx.x, tgt = targets[row];
	T *lr = logits + (size_t)row * vocab;
	float mx = -INFINITY, sum = 0.0f, target_logit = to_f32(lr[tgt]);

	for (int j = threadIdx.x; j < vocab; j += blockDim.x)
		mx = fmaxf(mx, to_f32(lr[j]));
	mx = block_max(mx);
	for (int j = threadIdx.x; j < vocab; j += blockDim.x)
		sum += __expf(to_f32(lr[j]) - mx);
	sum = block_sum(sum);      /* its barriers order every read above before the writes */
	float l = mx + logf(sum);
	if (threadIdx.x == 0) {
		lse[row] = l;
		row_loss[row] = l - target_logit;
	}
	for (int j = threadIdx.x; j < vocab; j += blockDim.x) {
		float p = __expf(to_f32(lr[j]) - l);
		lr[j] = from_f32<T>((p - (j == tgt ? 1.0f : 0.0f)) * inv_n);
	}
}

/* One block, fixed order: the same inputs give the same bits. */
__global__ void mean_kernel(float *out, const float *v, int n)
{
	float s = 0.0f;

	for (int i = threadIdx.x; i < n; i += blockDim.x)
		s += v[i];
	s = block_sum(s);
	if (threadIdx.x == 0)
		*out = s / n;
}

/* After the rows' launch (its error e): the mean loss of the n row losses. */
static cudaError_t mean_after(cudaError_t e, float *loss, const float *row_loss, int n,
			      cudaStream_t s)
{
	if (e != cudaSuccess)
		return e;
	mean_kernel<<<1, 1024, 0, s>>>(loss, row_loss, n);
	return cudaGetLastError();
}

template <typename T>
__global__ void cross_entropy_backward_kernel(T *dlogits, const T *logits, const float *lse,
					      const int32_t *targets, int vocab, float inv_n)
{
	int row = blockIdx.x;
	const T *lr = logits + (size_t)row * vocab;
	T *dr = dlogits + (size_t)row * vocab;
	float l = lse[row];
	int tgt = targets[row];

	for (int j = threadIdx.x; j < vocab; j += blockDim.x) {
		float p = __expf(to_f32(lr[j]) - l);
		dr[j] = from_f32<T>((p - (j == tgt ? 1.0f : 0.0f)) * inv_n);
	}
}

extern "C" cudaError_t cross_entropy_forward(float *loss, float *lse, const void *logits,
					     const int32_t *targets, int n, int vocab,
					     enum st_dtype dtype, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	float *row_loss = lse + n;

	DISPATCH_DTYPE(dtype, E,
		cross_entropy_rows_kernel<E><<<n, 256, 0, s>>>(lse, row_loss, (const E *)logits,
							      targets, vocab));
	return mean_after(cudaGetLastError(), loss, row_loss, n, s);
}

extern "C" cudaError_t cross_entropy_fused(float *loss, float *lse, void *logits,
					   const int32_t *targets, int n, int vocab,
					   enum st_dtype dtype, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	float *row_loss = lse + n;

	DISPATCH_DTYPE(dtype, E,
		cross_entropy_fused_kernel<E><<<n, 256, 0, s>>>(lse, row_loss, (E *)logits, targets,
							       vocab, 1.0f / n));
	return mean_after(cudaGetLastError(), loss, row_loss, n, s);
}

extern "C" cudaError_t cross_entropy_backward(void *dlogits, const void *logits, const float *lse,
					      const int32_t *targets, int n, int vocab,
					      enum st_dtype dtype, cudaStream_t s)
{
	if (n == 0)
		return cudaSuccess;
	DISPATCH_DTYPE(dtype, E,
		cross_entropy_backward_kernel<E><<<n, 256, 0, s>>>((E *)dlogits, (const E *)logits, lse,
								   targets, vocab, 1.0f / n));
	return cudaGetLastError();
}
