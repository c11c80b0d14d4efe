/*
 * rope.cu: RoPE (theta 10000) on interleaved pairs of Q and K, forward and
 * backward (the backward is the inverse rotation). Angles come from a table
 * computed once in double on the host, so no fast-math sin/cos of large
 * arguments enters the step.
 */
#include <math.h>

#include "kernels/common.cuh"
#include "kernels/rope.h"

template <typename T>
__global__ void rope_kernel(T *q, T *k, const float2 *table, long long pairs, int T_, int H,
			    int half, float direction)
{
	long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= pairs)
		return;
	T *x = blockIdx.y == 0 ? q : k;
	int i = (int)(idx % half);
	long long row = idx / half / H;
	float2 cs = table[(row % T_) * half + i];
	float sn = direction * cs.y;
	float x0 = to_f32(x[2 * idx]), x1 = to_f32(x[2 * idx + 1]);

	x[2 * idx] = from_f32<T>(x0 * cs.x - x1 * sn);
	x[2 * idx + 1] = from_f32<T>(x0 * sn + x1 * cs.x);
}

extern "C" int rope_apply(void *q, void *k, const float *table, int n, int T, int H, int dh,
			  int direction, int dtype, cudaStream_t s)
{
	long long pairs = (long long)n * H * (dh / 2);
	if (pairs == 0)
		return 0;
	dim3 grid(ceil_div(pairs, 256), k ? 2 : 1);
	DISPATCH_DTYPE(dtype, E,
		rope_kernel<E><<<grid, 256, 0, s>>>((E *)q, (E *)k, (const float2 *)table, pairs, T, H,
						    dh / 2, direction < 0 ? -1.0f : 1.0f));
	return KERNEL_CHECK("rope_apply");
}

extern "C" void rope_table_fill(float *table, int T, int dh, double theta)
{
	for (int t = 0; t < T; t++)
		for (int i = 0; i < dh / 2; i++) {
			double a = t * pow(theta, -2.0 * i / dh);
			table[(size_t)t * dh + 2 * i] = (float)cos(a);
			table[(size_t)t * dh + 2 * i + 1] = (float)sin(a);
		}
}
