/*
 * flash_naive.h: a naive attention on the GPU in FP32 (flash_naive.cu), the
 * reference for the flash kernels at sizes the CPU reference is too slow
 * for. One block per row (or per key for dK, dV), the row's scores in
 * shared memory; inputs (bh, t, d) in F32 or BF16, outputs F32.
 */
#ifndef STEPTRACE_TESTS_GPU_FLASH_NAIVE_H
#define STEPTRACE_TESTS_GPU_FLASH_NAIVE_H

#include <stdbool.h>

#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* o (bh, t, d) and lse (bh, t), as flash_attention_forward defines them. t <= 16384. */
cudaError_t naive_attention_forward(float *o, float *lse, const void *q, const void *k,
				    const void *v, int bh, int t, int d, float scale, bool causal,
				    enum st_dtype dtype);
/* dq, dk, dv (bh, t, d) from dout, using o and lse of naive_attention_forward. */
cudaError_t naive_attention_backward(float *dq, float *dk, float *dv, const void *dout,
				     const void *q, const void *k, const void *v, const float *o,
				     const float *lse, int bh, int t, int d, float scale,
				     bool causal, enum st_dtype dtype);

#ifdef __cplusplus
}
#endif
#endif
