/* cross_entropy.h: mean cross-entropy of logits against targets, forward and backward (cross_entropy.cu). */
#ifndef STEPTRACE_KERNELS_CROSS_ENTROPY_H
#define STEPTRACE_KERNELS_CROSS_ENTROPY_H

#include <stdint.h>
#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * logits (n, vocab) in `dtype` (F32 or BF16), maths in FP32. lse has room
 * for 2n floats: lse[0..n) gets each row's logsumexp (kept for the backward),
 * lse[n..2n) the per-row losses; *loss (one F32 on the device) = their mean,
 * reduced deterministically.
 */
cudaError_t cross_entropy_forward(float *loss, float *lse, const void *logits,
				  const int32_t *targets, int n, int vocab, enum st_dtype dtype,
				  cudaStream_t s);
/* dlogits (n, vocab) in `dtype` = (softmax(logits) - onehot(target)) / n. May alias logits. */
cudaError_t cross_entropy_backward(void *dlogits, const void *logits, const float *lse,
				   const int32_t *targets, int n, int vocab, enum st_dtype dtype,
				   cudaStream_t s);

/*
 * Both at once (--kernels fused): cross_entropy_forward's loss and lse, and
 * cross_entropy_backward's gradient written over the logits, in one pass.
 */
cudaError_t cross_entropy_fused(float *loss, float *lse, void *logits, const int32_t *targets,
				int n, int vocab, enum st_dtype dtype, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
