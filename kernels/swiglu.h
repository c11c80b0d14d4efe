/*
 * swiglu.h: the SwiGLU gate silu(a) * b, forward and backward (swiglu.cu),
 * on the fused w1/w3 projection: each row of h13 (rows, 2f) is [a | b],
 * a = w1 x and b = w3 x, f columns each.
 */
#ifndef STEPTRACE_KERNELS_SWIGLU_H
#define STEPTRACE_KERNELS_SWIGLU_H

#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* g (rows, f) = silu(a) * b from h13 (rows, 2f), in `dtype` (F32 or BF16), computed in FP32. */
cudaError_t swiglu_forward(void *g, const void *h13, long long rows, int f, enum st_dtype dtype,
			   cudaStream_t s);
/* dh13 (rows, 2f) = [da | db] written from dg (rows, f) and h13; dh13 must not alias h13. */
cudaError_t swiglu_backward(void *dh13, const void *dg, const void *h13, long long rows, int f,
			    enum st_dtype dtype, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
