/* cast.h: FP32 -> BF16 conversion (cast.cu). */
#ifndef STEPTRACE_KERNELS_CAST_H
#define STEPTRACE_KERNELS_CAST_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/* out (n) BF16 = in (n) F32, round to nearest even (autocast's weight copies). */
cudaError_t cast_f32_to_bf16(void *out, const float *in, long long n, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
