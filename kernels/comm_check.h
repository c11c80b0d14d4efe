/*
 * comm_check.h: the inputs of `bench allreduce` and the check of its sums
 * (comm_check.cu). Rank r's element i is ((r + i) mod 4) + 1, so the sum
 * over n ranks is a small integer (at most 4n) that F32, BF16 and F16 hold
 * exactly for n <= 64, in every order NCCL adds them: a wrong element is a
 * wrong sum, not rounding.
 */
#ifndef STEPTRACE_KERNELS_COMM_CHECK_H
#define STEPTRACE_KERNELS_COMM_CHECK_H

#include <stddef.h>

#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Fills n elements of dtype (ST_DT_F32, ST_DT_BF16 or ST_DT_F16) with rank's values. */
cudaError_t comm_check_fill(void *buf, size_t n, enum st_dtype dtype, int rank, cudaStream_t s);

/*
 * Adds to *mismatches (device memory) the elements of buf that are not the
 * sum over `ranks` ranks; the counter must be zeroed by the caller.
 */
cudaError_t comm_check_sum(const void *buf, size_t n, enum st_dtype dtype, int ranks,
			   unsigned long long *mismatches, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
