/* residual.h: the residual add of a block's branch to the FP32 stream (residual.cu). */
#ifndef STEPTRACE_KERNELS_RESIDUAL_H
#define STEPTRACE_KERNELS_RESIDUAL_H

#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out (n) F32 = x (n) F32 + y (n) in `y_dtype` (F32 or BF16). out may alias x. */
cudaError_t residual_forward(float *out, const float *x, const void *y, long long n,
			     enum st_dtype y_dtype, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
