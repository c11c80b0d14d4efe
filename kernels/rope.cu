/*
 * rope.cu: the moves between token-major (B, T, H, dh) and head-major
 * (B, H, T, dh) around the attention matmuls, with RoPE (theta 10000, on
 * interleaved pairs) applied to q and k on the way in and undone on their
 * gradients on the way out. Angles come from a table computed once in double
 * on the host, so no fast-math sin/cos of large arguments enters the step.
 */
#include <math.h>

#include "kernels/common.cuh"
#include "kernels/rope.h"

/* Up to three tensors moved by one launch, one per blockIdx.y. */
template <typename E> struct heads_io {
	E *out[3];
	const E *in[3];
};

/*
 * One thread per pair (x[2i], x[2i+1]) of one head of one row, numbered in
 * token-major order, so a warp reads and writes whole head rows (dh
 * contiguous elements) on both sides. Token-major rows are ld elements apart
 * (H * dh, or wider when q, k and v share the rows of one fused buffer).
 * Tensors with blockIdx.y < n_rot are rotated (forward angle when moving to
 * heads, the opposite when moving back), the rest copied.
 */
template <typename E>
__global__ void permute_heads_kernel(heads_io<E> io, const float2 *table, long long pairs, int T_, int H,
			     int half, long long ld, int n_rot, int to_heads)
{
	long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= pairs)
		return;
	int i = (int)(idx % half);
	long long bth = idx / half;                     /* (b * T + t) * H + h */
	int h = (int)(bth % H);
	long long row = bth / H;                        /* b * T + t */
	int t = (int)(row % T_);
	long long b = row / T_;
	long long tok = row * ld + 2 * ((long long)h * half + i);
	long long head = 2 * (((b * H + h) * T_ + t) * half + i);
	long long src = to_heads ? tok : head, dst = to_heads ? head : tok;
	const E *x = io.in[0];
	E *y = io.out[0];

	/* selected, not indexed by blockIdx.y: a dynamic index would copy io to local memory */
	if (blockIdx.y == 1)
		x = io.in[1], y = io.out[1];
	else if (blockIdx.y == 2)
		x = io.in[2], y = io.out[2];
	if ((int)blockIdx.y >= n_rot) {
		y[dst] = x[src];
		y[dst + 1] = x[src + 1];
		return;
	}
	float2 cs = table[(long long)t * half + i];
	float sn = (to_heads ? 1.0f : -1.0f) * cs.y;
	float x0 = to_f32(x[src]), x1 = to_f32(x[src + 1]);

	y[dst] = from_f32<E>(x0 * cs.x - x1 * sn);
	y[dst + 1] = from_f32<E>(x0 * sn + x1 * cs.x);
}

/*
 * The same move a 16-byte vector at a time (VEC16 elements, VEC16 / 2 pairs,
 * of one head row) where dh and ld hold whole vectors and every buffer is
 * aligned: one 64-bit division a thread, the rest 32-bit, and 16-byte
 * accesses on both sides (the pair-a-thread form above moved about a third
 * of the bandwidth in a recorded large step). cpr is H * dh / VEC16, the
 * vectors of one token row of one tensor.
 */
template <typename E>
__global__ void permute_heads_vec_kernel(heads_io<E> io, const float2 *table, long long vecs,
					 int T_, int H, int dh, int cpr, long long ld, int n_rot,
					 int to_heads)
{
	constexpr int V = VEC16(E);
	long long idx = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (idx >= vecs)
		return;
	long long row = idx / cpr;                      /* b * T + t */
	int j = (int)(idx - row * cpr);
	int cph = dh / V, h = j / cph, c = j - h * cph;
	int t = (int)(row % T_);
	long long b = row / T_;
	long long tok = row * ld + (long long)j * V;
	long long head = ((b * H + h) * T_ + t) * dh + (long long)c * V;
	long long src = to_heads ? tok : head, dst = to_heads ? head : tok;
	const E *x = io.in[0];
	E *y = io.out[0];
	float v[V];

	if (blockIdx.y == 1)
		x = io.in[1], y = io.out[1];
	else if (blockIdx.y == 2)
		x = io.in[2], y = io.out[2];
	load16(v, x + src);
	if ((int)blockIdx.y < n_rot) {
		const float4 *cs4 = (const float4 *)(table + (long long)t * (dh / 2) + c * (V / 2));
		float sg = to_heads ? 1.0f : -1.0f;
		for (int p = 0; p < V / 4; p++) {       /* a float4 holds two (cos, sin) */
			float4 cs = cs4[p];
			float c0 = cs.x, s0 = sg * cs.y, c1 = cs.z, s1 = sg * cs.w;
			float x0 = v[4 * p], x1 = v[4 * p + 1], x2 = v[4 * p + 2], x3 = v[4 * p + 3];
			v[4 * p] = x0 * c0 - x1 * s0;
			v[4 * p + 1] = x0 * s0 + x1 * c0;
			v[4 * p + 2] = x2 * c1 - x3 * s1;
			v[4 * p + 3] = x2 * s1 + x3 * c1;
		}
	}
	store16(y + dst, v);
}

/*
 * Moves the n tensors of out/in (the first n_rot rotated) in one launch; ld
 * is the token-major side's row stride in elements.
 */
static cudaError_t heads_move(void *const *out, const void *const *in, int n, int n_rot,
			      long long ld, const float *table, int B, int T, int H, int dh,
			      int to_heads, enum st_dtype dtype, cudaStream_t s)
{
	long long pairs = (long long)B * T * H * (dh / 2);
	if (pairs == 0)
		return cudaSuccess;
	int v = dtype == ST_DT_BF16 ? 8 : 4;
	bool vec = dh % v == 0 && ld % v == 0 && (!n_rot || aligned16(table));

	for (int j = 0; j < n; j++)
		vec = vec && aligned16(out[j]) && aligned16(in[j]);
	if (vec) {
		long long vecs = (long long)B * T * H * (dh / v);
		dim3 grid(ceil_div(vecs, 256), n);
		DISPATCH_DTYPE(dtype, E,
			heads_io<E> io = {};
			for (int j = 0; j < n; j++) {
				io.out[j] = (E *)out[j];
				io.in[j] = (const E *)in[j];
			}
			permute_heads_vec_kernel<E><<<grid, 256, 0, s>>>(
				io, (const float2 *)table, vecs, T, H, dh, H * (dh / v), ld, n_rot,
				to_heads));
		return cudaGetLastError();
	}
	dim3 grid(ceil_div(pairs, 256), n);
	DISPATCH_DTYPE(dtype, E,
		heads_io<E> io = {};
		for (int j = 0; j < n; j++) {
			io.out[j] = (E *)out[j];
			io.in[j] = (const E *)in[j];
		}
		permute_heads_kernel<E><<<grid, 256, 0, s>>>(io, (const float2 *)table, pairs, T, H, dh / 2,
						     ld, n_rot, to_heads));
	return cudaGetLastError();
}

extern "C" cudaError_t rope_to_heads(void *qh, void *kh, void *vh, const void *q, const void *k,
				     const void *v, long long ld, const float *table, int B, int T,
				     int H, int dh, enum st_dtype dtype, cudaStream_t s)
{
	void *out[3] = { qh, kh, vh };
	const void *in[3] = { q, k, v };

	return heads_move(out, in, 3, 2, ld, table, B, T, H, dh, 1, dtype, s);
}

extern "C" cudaError_t rope_from_heads(void *dq, void *dk, void *dv, const void *dqh,
				       const void *dkh, const void *dvh, long long ld,
				       const float *table, int B, int T, int H, int dh,
				       enum st_dtype dtype, cudaStream_t s)
{
	void *out[3] = { dq, dk, dv };
	const void *in[3] = { dqh, dkh, dvh };

	return heads_move(out, in, 3, 2, ld, table, B, T, H, dh, 0, dtype, s);
}

extern "C" cudaError_t heads_permute(void *out, const void *in, int B, int T, int H, int dh,
				     int to_heads, enum st_dtype dtype, cudaStream_t s)
{
	return heads_move(&out, &in, 1, 0, (long long)H * dh, NULL, B, T, H, dh, to_heads != 0,
			  dtype, s);
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
