/* grad_reduce.h: the reduction step of the copy-engine all-reduce (grad_reduce.cu, model/ddp_ce.c). */
#ifndef STEPTRACE_KERNELS_GRAD_REDUCE_H
#define STEPTRACE_KERNELS_GRAD_REDUCE_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GRAD_REDUCE_MAX_IN 8

/*
 * out[i] = (in[0][i] + in[1][i] + ... + in[n_in - 1][i]) * scale for i < n,
 * in that order of addition (FP32: the ranks' copies in rank order, so
 * every rank that sums the same copies gets the same bits), on at most
 * max_ctas CTAs (0: enough for every element in one pass). out may be one
 * of the inputs; n_in from 1 to GRAD_REDUCE_MAX_IN; the pointers need no
 * alignment.
 */
cudaError_t grad_reduce(float *out, const float *const *in, int n_in, long long n, float scale,
			int max_ctas, cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
