/*
 * flash_attention_sm90.h: the BF16 FlashAttention forward and backward on Hopper's wgmma,
 * TMA and warp specialisation (flash_attention_sm90.cu, built for sm_90a).
 * flash_attention.cu dispatches to it; nothing else calls it.
 */
#ifndef STEPTRACE_KERNELS_FLASH_ATTENTION_SM90_H
#define STEPTRACE_KERNELS_FLASH_ATTENTION_SM90_H

#include <stdbool.h>

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * 1 if the current device runs the kernel for d_head: compute capability
 * 9.0, a build with sm_90a code, the driver's tensor-map encoder, d_head a
 * multiple of 8 from 40 to 128 (padded to 64 or 128; at 32 and below
 * FlashAttention-2 is faster).
 */
int flash_sm90_supported(int d_head);

/*
 * As flash_attention_forward for BF16 (flash_attention.h), for a d_head
 * flash_sm90_supported accepted; q, k, v 16-byte aligned; bh <= 65535.
 */
cudaError_t flash_sm90_forward(void *o, float *lse, const void *q, const void *k,
			       const void *v, int bh, int t, int d_head, float scale, bool causal,
			       cudaStream_t stream);

/*
 * The backward's main pass for BF16 (flash_attention_backward runs it
 * between its D = rowsum(dO o O) pass and the scaling of dq_acc into dq):
 * dk = scale dS^T Q and dv = P^T dO (bh, t, d_head) BF16, dq_acc (bh, t,
 * d_head) FP32 += dS K (unscaled; zeroed before), from the forward's lse
 * (natural log) and drow = D (bh, t).
 */
cudaError_t flash_sm90_backward(void *dk, void *dv, float *dq_acc, const void *dout,
				const void *q, const void *k, const void *v, const float *lse,
				const float *drow, int bh, int t, int d_head, float scale,
				bool causal, cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
