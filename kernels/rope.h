/* rope.h: rotary position embedding on interleaved pairs, in place (rope.cu). */
#ifndef STEPTRACE_KERNELS_ROPE_H
#define STEPTRACE_KERNELS_ROPE_H

#include <cuda_runtime.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Rotates pairs (x[2i], x[2i+1]) of every head of q and k, both (B*T, H*dh)
 * in `dtype` (F32 or BF16), in place, by angle t * theta^(-2i/dh) where t is
 * the row's position (row % T). `table` (T, dh/2, 2) F32 holds (cos, sin) of
 * those angles (rope_table_fill). k may be NULL. direction +1 is the forward,
 * -1 the backward (the opposite rotation, applied to dq and dk).
 */
int rope_apply(void *q, void *k, const float *table, int n, int T, int H, int dh, int direction,
	       int dtype, cudaStream_t s);
/* Host: fills table (T * dh) with cos/sin computed in double. */
void rope_table_fill(float *table, int T, int dh, double theta);

#ifdef __cplusplus
}
#endif
#endif
