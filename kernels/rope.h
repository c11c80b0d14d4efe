/*
 * rope.h: attention's head layout (rope.cu). The fused projection gives q,
 * k, v token-major, (B, T, H, dh) = (B*T, H*dh) each, side by side in the
 * rows of one (B*T, 3 H dh) buffer; the attention matmuls want them
 * head-major, (B, H, T, dh), so that every head's (T, dh) matrix is one
 * contiguous block and one strided-batched GEMM covers all B*H heads. RoPE
 * is applied on the way in and undone on the way out, in the same pass.
 */
#ifndef STEPTRACE_KERNELS_ROPE_H
#define STEPTRACE_KERNELS_ROPE_H

#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/*
 * qh, kh, vh (B, H, T, dh) from q, k, v (B, T, H, dh), all in `dtype` (F32
 * or BF16): q and k rotated, v copied. The token-major rows are ld elements
 * apart (ld >= H * dh): H * dh for separate tensors, 3 H dh when q, k, v are
 * the column blocks of one fused projection output (B*T, 3 H dh), passed as
 * qkv, qkv + H dh, qkv + 2 H dh. RoPE rotates the pairs (x[2i], x[2i+1]) of
 * every head by angle t * theta^(-2i/dh), t the row's position (row % T);
 * `table` (T, dh/2, 2) F32 holds (cos, sin) of those angles
 * (rope_table_fill). Outputs must not alias inputs.
 */
cudaError_t rope_to_heads(void *qh, void *kh, void *vh, const void *q, const void *k, const void *v,
			  long long ld, const float *table, int B, int T, int H, int dh,
			  enum st_dtype dtype, cudaStream_t s);
/*
 * The backward of rope_to_heads: dq, dk, dv (B, T, H, dh), rows ld elements
 * apart, from dqh, dkh, dvh (B, H, T, dh); dq and dk rotated by the opposite
 * angle, dv copied.
 */
cudaError_t rope_from_heads(void *dq, void *dk, void *dv, const void *dqh, const void *dkh,
			    const void *dvh, long long ld, const float *table, int B, int T, int H,
			    int dh, enum st_dtype dtype, cudaStream_t s);
/* out = in moved (B, T, H, dh) -> (B, H, T, dh) if to_heads, else back; a copy. */
cudaError_t heads_permute(void *out, const void *in, int B, int T, int H, int dh, int to_heads,
			  enum st_dtype dtype, cudaStream_t s);
/* Host: fills table (T * dh) with cos/sin computed in double. */
void rope_table_fill(float *table, int T, int dh, double theta);

#ifdef __cplusplus
}
#endif
#endif
