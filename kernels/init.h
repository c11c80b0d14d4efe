/* init.h: parameter initialisation on the device (init.cu). */
#ifndef STEPTRACE_KERNELS_INIT_H
#define STEPTRACE_KERNELS_INIT_H

#include <stdint.h>
#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * p (n) = N(0, std^2) resampled until within [-cut*std, cut*std], from a
 * counter-based generator: element i of stream `seed` is the same whatever
 * the launch shape.
 */
cudaError_t init_trunc_normal(float *p, long long n, float std, float cut, uint64_t seed,
			      cudaStream_t s);
/* p (n) = value. */
cudaError_t init_fill(float *p, long long n, float value, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
