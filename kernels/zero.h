/* zero.h: zeroing scattered ranges of an FP32 buffer in one launch (zero.cu). */
#ifndef STEPTRACE_KERNELS_ZERO_H
#define STEPTRACE_KERNELS_ZERO_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ZERO_MAX_GROUPS 4

/* count ranges of len elements, the first at element `first`, each `stride` after the last. */
struct zero_group {
	long long first, stride;
	int count, len;
};

/*
 * Sets every range of the n_groups (at most ZERO_MAX_GROUPS) groups of base
 * to 0.0f: one kernel however many ranges, where a memset would be one op each.
 * More groups than that: cudaErrorInvalidValue, nothing launched.
 */
cudaError_t zero_groups(float *base, const struct zero_group *groups, int n_groups, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
