/* swiglu.h: the SwiGLU gate silu(a) * b, forward and backward (swiglu.cu). */
#ifndef STEPTRACE_KERNELS_SWIGLU_H
#define STEPTRACE_KERNELS_SWIGLU_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* h = silu(a) * b over n values in `dtype` (F32 or BF16), computed in FP32. */
int swiglu_forward(void *h, const void *a, const void *b, long long n, int dtype, cudaStream_t s);
/* da, db written from dh. */
int swiglu_backward(void *da, void *db, const void *dh, const void *a, const void *b, long long n,
		    int dtype, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
