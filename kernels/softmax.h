/* softmax.h: causal mask + scale + softmax over attention scores, forward and backward (softmax.cu). */
#ifndef STEPTRACE_KERNELS_SOFTMAX_H
#define STEPTRACE_KERNELS_SOFTMAX_H

#include <stdbool.h>

#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * p (BH, T, T) = softmax_j(scale * s[i][j]) for j <= i, 0 above the diagonal,
 * max subtracted, computed in FP32; s and p in `dtype` (F32 or BF16).
 */
cudaError_t causal_softmax_forward(void *p, const void *s, int bh, int T, float scale,
				   enum st_dtype dtype, cudaStream_t st);
/* ds = scale * p * (dp - sum_j dp*p), 0 above the diagonal. ds may alias dp. */
cudaError_t causal_softmax_backward(void *ds, const void *dp, const void *p, int bh, int T,
				    float scale, enum st_dtype dtype, cudaStream_t st);

/* The same with the mask optional: without causal every key is visible. */
cudaError_t attn_softmax_forward(void *p, const void *s, int bh, int T, float scale, bool causal,
				 enum st_dtype dtype, cudaStream_t st);
cudaError_t attn_softmax_backward(void *ds, const void *dp, const void *p, int bh, int T,
				  float scale, bool causal, enum st_dtype dtype, cudaStream_t st);

#ifdef __cplusplus
}
#endif
#endif
