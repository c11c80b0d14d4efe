/*
 * flash_attention.h: FlashAttention forward and backward (flash_attention.cu:
 * FlashAttention-2; on Hopper, BF16, the kernels of flash_attention_sm90.cu),
 * attention without the T x T score matrix. Scores are computed tile by tile
 * and folded into the output with an online softmax; the forward saves each
 * row's log-sum-exp, from which the backward recomputes the probabilities
 * tile by tile for dQ, dK and dV.
 *
 * Layout: q, k, v, o and their gradients are head-major (B*H, T, d_head),
 * contiguous, as rope_to_heads writes them (kernels/rope.h); lse is
 * (B*H, T) float. Pointers must be 16-byte aligned. BF16 runs on the tensor
 * cores with FP32 accumulation; F32 is true FP32 (CUDA cores, no TF32).
 *
 * Launchers return the launch's cudaError_t, or cudaErrorInvalidValue for
 * arguments flash_attention_supported() refuses (it says why); they never
 * print. Nothing here synchronises.
 */
#ifndef STEPTRACE_KERNELS_FLASH_ATTENTION_H
#define STEPTRACE_KERNELS_FLASH_ATTENTION_H

#include <stdbool.h>
#include <stddef.h>

#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * 1 if d_head and dtype are supported (d_head a multiple of 8 from 8 to 256,
 * dtype ST_DT_F32 or ST_DT_BF16), else 0 with the reason in why (len bytes,
 * may be NULL), e.g. "d_head 100 is not a multiple of 8".
 */
int flash_attention_supported(int d_head, enum st_dtype dtype, char *why, size_t len);

/*
 * o (bh, t, d_head) = softmax(scale * q k^T) v per head, masked to keys
 * j <= i when causal; lse (bh, t) = the log-sum-exp of each row of
 * scale * q k^T (natural log), what the backward needs; lse may be NULL
 * when no backward follows. t >= 1 any length.
 */
cudaError_t flash_attention_forward(void *o, float *lse, const void *q, const void *k,
				    const void *v, int bh, int t, int d_head, float scale,
				    bool causal, enum st_dtype dtype, cudaStream_t stream);

/*
 * Which kernels flash_attention_forward and _backward run under BF16:
 * FLASH_PATH_AUTO (the default) the Hopper kernels (wgmma, TMA bulk copies,
 * warp specialisation; flash_attention_sm90.h) where they run, compute
 * capability 9.0 and d_head 40 to 128, FlashAttention-2 elsewhere;
 * FLASH_PATH_FA2 always FlashAttention-2. Process-wide, for benchmarks and
 * tests; until it is called, STEPTRACE_FLASH_PATH=fa2 in the environment
 * (read once, at the first launch) chooses FLASH_PATH_FA2.
 */
enum flash_path { FLASH_PATH_AUTO, FLASH_PATH_FA2 };
void flash_attention_set_path(enum flash_path path);

/*
 * The kernels flash_attention_forward and _backward would run for d_head
 * and dtype on the current device now: "sm90" (Hopper), "fa2" (BF16
 * FlashAttention-2) or "simt" (F32, CUDA cores).
 */
const char *flash_attention_kernels(int d_head, enum st_dtype dtype);

/* Bytes of device workspace flash_attention_backward needs (256-byte aligned start). */
size_t flash_attention_backward_workspace(int bh, int t, int d_head);

/*
 * dq, dk, dv (bh, t, d_head) from dout = dL/do and the forward's q, k, v,
 * o and lse (same scale and causal). workspace holds
 * flash_attention_backward_workspace(bh, t, d_head) bytes (FP32 dQ
 * accumulator and rowsum(dout * o)); its contents need no initialisation.
 * Outputs must not alias inputs.
 */
cudaError_t flash_attention_backward(void *dq, void *dk, void *dv, const void *dout,
				     const void *q, const void *k, const void *v, const void *o,
				     const float *lse, void *workspace, int bh, int t, int d_head,
				     float scale, bool causal, enum st_dtype dtype,
				     cudaStream_t stream);

#ifdef __cplusplus
}
#endif
#endif
