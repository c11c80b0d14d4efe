/* adamw.h: the AdamW update over one flat parameter buffer (adamw.cu). */
#ifndef STEPTRACE_KERNELS_ADAMW_H
#define STEPTRACE_KERNELS_ADAMW_H

#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * m = b1 m + (1-b1) g;  v = b2 v + (1-b2) g^2;
 * p -= alpha_t m / (sqrt(v) + eps);  then p -= lr_wd p   (lr_wd = lr * weight_decay).
 * alpha_t = lr sqrt(1-b2^t) / (1-b1^t) is computed by the caller (in double).
 * The betas are doubles so 1 - b is formed before rounding: (float)(1 - 0.999)
 * is exact to 1e-8, 1 - (float)0.999 only to 1e-5.
 *
 * avg (n_avg > 0, at most ADAMW_AVG_MAX): the gradient is the mean of
 * avg[0..n_avg) (the ranks' gradients in rank order, g among them, summed
 * in that order, then times 1/n_avg: --allreduce-by exchange); g is not read
 * then, nor is the mean written anywhere (4 bytes an element saved: a
 * reader of the gradients averages them itself, model/ddp.c). n_avg 0: g.
 */
#define ADAMW_AVG_MAX 8

cudaError_t adamw_update(float *p, const float *g, float *m, float *v, long long n, double beta1,
			 double beta2, float eps, float alpha_t, float lr_wd, const float *const *avg,
			 int n_avg, cudaStream_t s);

/*
 * The same update (--kernels fused), reading alpha_t and lr_wd from device
 * memory (hyper[0], hyper[1]), so a CUDA graph replays it with each step's
 * values, and writing each updated parameter from copy_from on also to
 * copy[i - copy_from] as BF16 (round to nearest even): autocast's weight
 * copies for the next step, without a cast of their own. copy NULL writes
 * none. Where n and copy_from are multiples of 4 and the buffers aligned,
 * each thread takes four elements (16-byte loads).
 */
cudaError_t adamw_update_copy(float *p, const float *g, float *m, float *v, long long n,
			      double beta1, double beta2, float eps, const float *hyper,
			      void *copy, long long copy_from, const float *const *avg, int n_avg,
			      cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
