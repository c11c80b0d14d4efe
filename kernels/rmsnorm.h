/* rmsnorm.h: RMSNorm forward and backward, computed in FP32 (rmsnorm.cu). */
#ifndef STEPTRACE_KERNELS_RMSNORM_H
#define STEPTRACE_KERNELS_RMSNORM_H

#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * out (n, d) = x / sqrt(mean(x^2) + eps) * g, out in `out_dtype` (enum st_dtype,
 * F32 or BF16: the cast a following autocast matmul would make is fused);
 * rstd (n) F32 (may be NULL) keeps 1/sqrt(mean(x^2) + eps) for the backward.
 */
cudaError_t rmsnorm_forward(void *out, float *rstd, const float *x, const float *g, int n, int d,
			    float eps, enum st_dtype out_dtype, cudaStream_t s);
/*
 * dx (n, d) F32 written (accumulate == 0) or added to (accumulate != 0);
 * dg (d) += the gain's gradient (atomic adds per block of rows; zero it first).
 * dx_bf16 (n, d) BF16, unless NULL, gets dx's final value rounded to nearest
 * even: the cast a following BF16 matmul would make of it, fused.
 */
cudaError_t rmsnorm_backward(float *dx, void *dx_bf16, float *dg, const float *dout, const float *x,
			     const float *g, const float *rstd, int n, int d, int accumulate,
			     cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
