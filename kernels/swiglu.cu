/*
 * swiglu.cu: the FFN's gate g = silu(w1 x) * (w3 x), silu(a) = a sigmoid(a),
 * forward and backward, elementwise in FP32 whatever the storage dtype. Both
 * halves come from (and their gradients go to) one row [a | b] of the fused
 * w1/w3 output, so one thread per gate element reads a and b f apart.
 * Where f holds whole 16-byte vectors and the buffers are aligned, a thread
 * takes one vector of the gate (8 BF16 or 4 F32) instead: the same
 * arithmetic, 16-byte loads and stores (the scalar form reached about half
 * of the bandwidth; flops of a recorded large step).
 */
#include "kernels/common.cuh"
#include "kernels/swiglu.h"

template <typename T>
__global__ void swiglu_forward_kernel(T *g, const T *h13, long long n, int f)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	long long a = i + (i / f) * f;      /* row r, column c: r * 2f + c */
	float x = to_f32(h13[a]);
	g[i] = from_f32<T>(x / (1.0f + __expf(-x)) * to_f32(h13[a + f]));
}

template <typename T>
__global__ void swiglu_backward_kernel(T *dh13, const T *dg, const T *h13, long long n, int f)
{
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= n)
		return;
	long long a = i + (i / f) * f;
	float x = to_f32(h13[a]), y = to_f32(h13[a + f]), d = to_f32(dg[i]);
	float sig = 1.0f / (1.0f + __expf(-x));

	dh13[a] = from_f32<T>(d * y * sig * (1.0f + x * (1.0f - sig)));
	dh13[a + f] = from_f32<T>(d * x * sig);
}

template <typename T>
__global__ void swiglu_forward_vec_kernel(T *g, const T *h13, long long nv, int fv)
{
	constexpr int V = VEC16(T);
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= nv)
		return;
	long long a = (i + (i / fv) * fv) * V;   /* row r, vector c: (r * 2 fv + c) V */
	float x[V], y[V], o[V];

	load16(x, h13 + a);
	load16(y, h13 + a + (long long)fv * V);
	for (int j = 0; j < V; j++)
		o[j] = x[j] / (1.0f + __expf(-x[j])) * y[j];
	store16(g + i * V, o);
}

template <typename T>
__global__ void swiglu_backward_vec_kernel(T *dh13, const T *dg, const T *h13, long long nv, int fv)
{
	constexpr int V = VEC16(T);
	long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
	if (i >= nv)
		return;
	long long a = (i + (i / fv) * fv) * V, b = a + (long long)fv * V;
	float x[V], y[V], d[V], da[V], db[V];

	load16(x, h13 + a);
	load16(y, h13 + b);
	load16(d, dg + i * V);
	for (int j = 0; j < V; j++) {
		float sig = 1.0f / (1.0f + __expf(-x[j]));
		da[j] = d[j] * y[j] * sig * (1.0f + x[j] * (1.0f - sig));
		db[j] = d[j] * x[j] * sig;
	}
	store16(dh13 + a, da);
	store16(dh13 + b, db);
}

/* f in whole 16-byte vectors and every buffer aligned to them. */
static bool swiglu_vec(int f, enum st_dtype dtype, const void *p, const void *q, const void *r)
{
	int v = dtype == ST_DT_BF16 ? 8 : 4;

	return f % v == 0 && aligned16(p) && aligned16(q) && aligned16(r);
}

extern "C" cudaError_t swiglu_forward(void *g, const void *h13, long long rows, int f,
				      enum st_dtype dtype, cudaStream_t s)
{
	long long n = rows * f;

	if (n == 0)
		return cudaSuccess;
	if (swiglu_vec(f, dtype, g, h13, h13)) {
		DISPATCH_DTYPE(dtype, E,
			long long nv = n / VEC16(E);
			swiglu_forward_vec_kernel<E><<<ceil_div(nv, 256), 256, 0, s>>>(
				(E *)g, (const E *)h13, nv, f / VEC16(E)));
		return cudaGetLastError();
	}
	DISPATCH_DTYPE(dtype, E,
		swiglu_forward_kernel<E><<<ceil_div(n, 256), 256, 0, s>>>((E *)g, (const E *)h13, n,
									  f));
	return cudaGetLastError();
}

extern "C" cudaError_t swiglu_backward(void *dh13, const void *dg, const void *h13, long long rows,
				       int f, enum st_dtype dtype, cudaStream_t s)
{
	long long n = rows * f;

	if (n == 0)
		return cudaSuccess;
	if (swiglu_vec(f, dtype, dh13, dg, h13)) {
		DISPATCH_DTYPE(dtype, E,
			long long nv = n / VEC16(E);
			swiglu_backward_vec_kernel<E><<<ceil_div(nv, 256), 256, 0, s>>>(
				(E *)dh13, (const E *)dg, (const E *)h13, nv, f / VEC16(E)));
		return cudaGetLastError();
	}
	DISPATCH_DTYPE(dtype, E,
		swiglu_backward_kernel<E><<<ceil_div(n, 256), 256, 0, s>>>(
			(E *)dh13, (const E *)dg, (const E *)h13, n, f));
	return cudaGetLastError();
}
