/*
 * flash_attention.cu: FlashAttention-2 (Dao, 2023) forward and backward, one
 * op in one file of over 1,000 lines: its kernels share the helpers below.
 * BF16 runs on the tensor cores (mma.sync m16n8k16, FP32 accumulators,
 * ldmatrix from shared memory filled by cp.async). The forward gives each
 * block BM query rows and walks the keys in tiles of BN: S = Q K^T in
 * registers, online softmax (running max and sum per row), O += P V with P
 * taken straight from the S accumulators. The backward gives each block BN
 * keys and walks the queries in tiles of BM, double-buffered, after a pass
 * that computes D = rowsum(dO o O). Up to d_head 80 each warp owns 16 or 32
 * keys, so S^T = K Q^T, P^T, dP^T = V dO^T and dS^T stay in its registers
 * and dV += P^T dO, dK += dS^T Q need no shared memory for P or dS; for
 * d_head 128 the dK and dV rows fill a warp's registers, so P^T and dS^T go
 * through shared memory and each product gets its own warp layout
 * (flash_bwd_bf16_sp). dQ += dS K is summed across key blocks with FP32
 * atomics in a workspace and scaled into dq by a last pass. Head sizes are
 * padded to a multiple of 16 in shared memory (zeros), sequence tails are
 * zero-filled and masked. Tile shapes were chosen by measurement
 * (flash_attention.notes.md).
 *
 * F32 (and BF16 backward above d_head 128) runs on CUDA cores in FP32: 32 x
 * 32 tiles, one warp per score row for the softmax.
 *
 * On compute capability 9.0, BF16 with d_head 40 to 128 runs the Hopper
 * kernels instead (flash_attention_sm90.cu: wgmma, TMA, warp
 * specialisation); the launchers here pick them (use_sm90) and
 * flash_attention_set_path turns them off.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/common.cuh"
#include "kernels/flash_attention.h"
#include "kernels/flash_attention_sm90.h"

typedef __nv_bfloat16 bf16;

#define FLASH_LOG2E 1.4426950408889634f
#define FLASH_LN2 0.6931471805599453f

/* ---- device helpers: async copies, ldmatrix, mma ---- */

/*
 * Shared memory is addressed by 32-bit shared-window addresses: each lane's
 * part of an address is computed once per kernel, and the tile offsets the
 * loops add are compile-time constants the instructions carry.
 */
__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared; src_bytes 0 writes zeros (and reads nothing). */
__device__ __forceinline__ void cp_async16(uint32_t dst, const void *src, int src_bytes)
{
	asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src),
		     "r"(src_bytes));
}

__device__ __forceinline__ void cp_async4(uint32_t dst, const void *src, int src_bytes)
{
	asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(dst), "l"(src),
		     "r"(src_bytes));
}

__device__ __forceinline__ void cp_async_commit(void)
{
	asm volatile("cp.async.commit_group;\n" ::);
}

__device__ __forceinline__ void cp_async_wait_all(void)
{
	asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

/* Four 8x8 b16 matrices; lane i gives the address of row i % 8 of matrix i / 8. */
__device__ __forceinline__ void ldsm_x4(uint32_t r[4], uint32_t addr)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(addr));
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t r[4], uint32_t addr)
{
	asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
		     : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
		     : "r"(addr));
}

/* The inverse of ldsm_x4: four 8x8 b16 matrices from registers to shared memory. */
__device__ __forceinline__ void stsm_x4(uint32_t addr, const uint32_t r[4])
{
	asm volatile("stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(addr),
		     "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3]));
}

/* c (16x8 f32) += a (16x16 bf16, row) * b (16x8 bf16, col). */
__device__ __forceinline__ void mma_bf16(float c[4], const uint32_t a[4], uint32_t b0, uint32_t b1)
{
	asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
	    "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
	    : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
	    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);

	return *(uint32_t *)&v;
}

/*
 * The A operand of an m16n8k16 from four 16x8 accumulator tiles' worth of
 * registers: c0 (columns 0..7) and c1 (columns 8..15) of one 16-row block.
 */
__device__ __forceinline__ void acc_to_a(uint32_t a[4], const float c0[4], const float c1[4])
{
	a[0] = pack_bf16(c0[0], c0[1]);
	a[1] = pack_bf16(c0[2], c0[3]);
	a[2] = pack_bf16(c1[0], c1[1]);
	a[3] = pack_bf16(c1[2], c1[3]);
}

/*
 * The element offset of the row address a lane gives ldmatrix.x4 for the
 * 16x16 block at (0, 0) of a row-major tile with `stride` elements a row
 * (add r0 * stride + c0 for another block):
 *  - lane_a: the A operand (rows m, columns k);
 *  - lane_b: B operands when the tile holds B^T (rows n, columns k):
 *    {b0, b1} of n-tile r0, then of r0 + 8; with .trans, also the A
 *    operand when the tile holds A^T (rows k, columns m);
 *  - lane_bt: B operands when the tile holds B (rows k, columns n), with
 *    .trans: {b0, b1} of n-tile c0, then of c0 + 8.
 */
__device__ __forceinline__ int lane_a(int stride, int lane)
{
	return (lane % 16) * stride + (lane / 16) * 8;
}

__device__ __forceinline__ int lane_b(int stride, int lane)
{
	return (lane % 8 + (lane / 16) * 8) * stride + ((lane / 8) % 2) * 8;
}

__device__ __forceinline__ int lane_bt(int stride, int lane)
{
	return (lane % 8 + ((lane / 8) % 2) * 8) * stride + (lane / 16) * 8;
}

/*
 * Copies rows [row0, row0 + ROWS) of a (t, d) matrix into a shared tile
 * with row stride D + 8 elements (+16 bytes: conflict-free ldmatrix), 16
 * bytes per cp.async; rows >= t and columns >= d become zeros. Each
 * thread's chunks are fixed, so their offsets are computed once.
 */
template <int ROWS, int D, int THREADS> struct tile_copy {
	static constexpr int chunks = D / 8, total = ROWS * chunks;
	static constexpr int iters = (total + THREADS - 1) / THREADS;
	static constexpr bool regular = THREADS % chunks == 0 && total % THREADS == 0;
	static constexpr int rstep = THREADS / chunks;
	int r, col;

	__device__ __forceinline__ tile_copy()
		: r((int)threadIdx.x / chunks), col(((int)threadIdx.x % chunks) * 8)
	{
	}

	__device__ __forceinline__ void load(uint32_t s, const bf16 *g, int row0, int t, int d) const
	{
		if constexpr (regular) {
			const bf16 *src = g + (size_t)(row0 + r) * d + col;
			const uint32_t dst = s + 2 * (r * (D + 8) + col);
#pragma unroll
			for (int i = 0; i < iters; i++) {
				bool ok = row0 + r + i * rstep < t && col < d;
				cp_async16(dst + 2 * i * rstep * (D + 8),
					   ok ? src + (size_t)i * rstep * d : g, ok ? 16 : 0);
			}
		} else {
#pragma unroll
			for (int i = 0; i < iters; i++) {
				int c = i * THREADS + threadIdx.x;
				if (total % THREADS == 0 || c < total) {
					int rr = c / chunks, cc = (c % chunks) * 8, gr = row0 + rr;
					bool ok = gr < t && cc < d;
					cp_async16(s + 2 * (rr * (D + 8) + cc),
						   ok ? g + (size_t)gr * d + cc : g, ok ? 16 : 0);
				}
			}
		}
	}
};

/* v[row0 .. row0 + N) into shared memory, zeros past t. */
template <int N, int THREADS>
__device__ __forceinline__ void vec_load(uint32_t s, const float *g, int row0, int t)
{
	for (int i = threadIdx.x; i < N; i += THREADS) {
		bool ok = row0 + i < t;
		cp_async4(s + 4 * i, ok ? g + row0 + i : g, ok ? 4 : 0);
	}
}

/* ---- BF16 forward ---- */

template <int D, int BM, int BN, int NW> struct fwd_tile {
	static constexpr int threads = NW * 32;
	static constexpr int mt = BM / (16 * NW);       /* m-tiles of 16 query rows per warp */
	static constexpr int row = D + 8;
	static constexpr size_t smem = (size_t)(BM + 2 * BN) * row * sizeof(bf16);
	static_assert(D % 16 == 0 && BN % 16 == 0 && BM % (16 * NW) == 0, "tile shape");
};

/*
 * Grid (bh, query blocks), the last query block first (causal: the longest).
 * Warp w owns query rows [w * 16 * MT, (w + 1) * 16 * MT) of the block.
 * Shared memory holds one tile each of Q, K and V: V(j) loads while
 * S(j) is computed, K(j + 1) while O += P V(j) is.
 */
template <int D, int BM, int BN, int NW>
__global__ void __launch_bounds__(NW * 32)
flash_fwd_bf16(bf16 *__restrict__ o, float *__restrict__ lse, const bf16 *__restrict__ q,
	       const bf16 *__restrict__ k, const bf16 *__restrict__ v, int t, int d,
	       float scale_log2, bool causal)
{
	typedef fwd_tile<D, BM, BN, NW> C;
	constexpr int MT = C::mt, R = C::row, NT = BN / 8, DT = D / 8;
	extern __shared__ __align__(16) unsigned char smem[];
	const uint32_t sq = smem_addr(smem), sk = sq + 2 * BM * R, sv = sk + 2 * BN * R;
	const int bh = blockIdx.x, m0 = (gridDim.y - 1 - blockIdx.y) * BM;
	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
	const int wr = warp * 16 * MT, wrow = m0 + wr;   /* the warp's first row: local, global */
	const uint32_t q_a = sq + 2 * (wr * R + lane_a(R, lane));
	const uint32_t k_b = sk + 2 * lane_b(R, lane), v_bt = sv + 2 * lane_bt(R, lane);
	const size_t base = (size_t)bh * t * d;
	const int n_end = causal ? min(t, m0 + BM) : t;
	const int nblocks = (n_end + BN - 1) / BN;
	const tile_copy<BM, D, C::threads> q_copy;
	const tile_copy<BN, D, C::threads> kv_copy;

	q += base, k += base, v += base, o += base;
	q_copy.load(sq, q, m0, t, d);
	kv_copy.load(sk, k, 0, t, d);
	cp_async_commit();

	float acc[MT][DT][4], mx[MT][2], sum[MT][2];
#pragma unroll
	for (int mt = 0; mt < MT; mt++) {
#pragma unroll
		for (int dt = 0; dt < DT; dt++)
			acc[mt][dt][0] = acc[mt][dt][1] = acc[mt][dt][2] = acc[mt][dt][3] = 0.0f;
		mx[mt][0] = mx[mt][1] = -INFINITY;
		sum[mt][0] = sum[mt][1] = 0.0f;
	}

	for (int j = 0; j < nblocks; j++) {
		const int n0 = j * BN;
		/* causal: keys past the warp's last row contribute nothing */
		const bool active = !causal || n0 <= wrow + 16 * MT - 1;
		float s[MT][NT][4];

		cp_async_wait_all();
		__syncthreads();
		kv_copy.load(sv, v, n0, t, d);
		cp_async_commit();

		if (active) {
#pragma unroll
			for (int mt = 0; mt < MT; mt++)
#pragma unroll
				for (int nt = 0; nt < NT; nt++)
					s[mt][nt][0] = s[mt][nt][1] = s[mt][nt][2] = s[mt][nt][3] = 0.0f;
#pragma unroll
			for (int kc = 0; kc < D / 16; kc++) {
				uint32_t a[MT][4];
#pragma unroll
				for (int mt = 0; mt < MT; mt++)
					ldsm_x4(a[mt], q_a + 2 * (mt * 16 * R + kc * 16));
#pragma unroll
				for (int np = 0; np < NT / 2; np++) {
					uint32_t b[4];
					ldsm_x4(b, k_b + 2 * (np * 16 * R + kc * 16));
#pragma unroll
					for (int mt = 0; mt < MT; mt++) {
						mma_bf16(s[mt][2 * np], a[mt], b[0], b[1]);
						mma_bf16(s[mt][2 * np + 1], a[mt], b[2], b[3]);
					}
				}
			}
			if (n0 + BN > t || (causal && n0 + BN - 1 > wrow)) {
#pragma unroll
				for (int mt = 0; mt < MT; mt++)
#pragma unroll
					for (int nt = 0; nt < NT; nt++)
#pragma unroll
						for (int e = 0; e < 4; e++) {
							int row = wrow + mt * 16 + g + (e / 2) * 8;
							int col = n0 + nt * 8 + 2 * tq + e % 2;
							if (col >= t || (causal && col > row))
								s[mt][nt][e] = -INFINITY;
						}
			}
			/* online softmax; the 4 threads of a quad share a row */
#pragma unroll
			for (int mt = 0; mt < MT; mt++)
#pragma unroll
				for (int h = 0; h < 2; h++) {
					float m_new = mx[mt][h];
#pragma unroll
					for (int nt = 0; nt < NT; nt++)
						m_new = fmaxf(m_new, fmaxf(s[mt][nt][2 * h], s[mt][nt][2 * h + 1]));
					m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 1));
					m_new = fmaxf(m_new, __shfl_xor_sync(0xffffffffu, m_new, 2));
					float ms = m_new == -INFINITY ? 0.0f : m_new * scale_log2;
					float alpha = exp2f(mx[mt][h] * scale_log2 - ms);
					mx[mt][h] = m_new;
					sum[mt][h] *= alpha;
#pragma unroll
					for (int dt = 0; dt < DT; dt++) {
						acc[mt][dt][2 * h] *= alpha;
						acc[mt][dt][2 * h + 1] *= alpha;
					}
#pragma unroll
					for (int nt = 0; nt < NT; nt++)
#pragma unroll
						for (int e = 2 * h; e < 2 * h + 2; e++) {
							float p = exp2f(fmaf(s[mt][nt][e], scale_log2, -ms));
							s[mt][nt][e] = p;
							sum[mt][h] += p;
						}
				}
		}

		cp_async_wait_all();
		__syncthreads();
		if (j + 1 < nblocks)
			kv_copy.load(sk, k, n0 + BN, t, d);
		cp_async_commit();

		if (active) {
#pragma unroll
			for (int kc = 0; kc < BN / 16; kc++) {
				uint32_t pa[MT][4];
#pragma unroll
				for (int mt = 0; mt < MT; mt++)
					acc_to_a(pa[mt], s[mt][2 * kc], s[mt][2 * kc + 1]);
#pragma unroll
				for (int dp = 0; dp < D / 16; dp++) {
					uint32_t b[4];
					ldsm_x4_trans(b, v_bt + 2 * (kc * 16 * R + dp * 16));
#pragma unroll
					for (int mt = 0; mt < MT; mt++) {
						mma_bf16(acc[mt][2 * dp], pa[mt], b[0], b[1]);
						mma_bf16(acc[mt][2 * dp + 1], pa[mt], b[2], b[3]);
					}
				}
			}
		}
	}

#pragma unroll
	for (int mt = 0; mt < MT; mt++)
#pragma unroll
		for (int h = 0; h < 2; h++) {
			float l = sum[mt][h];
			l += __shfl_xor_sync(0xffffffffu, l, 1);
			l += __shfl_xor_sync(0xffffffffu, l, 2);
			int row = wrow + mt * 16 + g + h * 8;
			if (row >= t)
				continue;
			float inv = 1.0f / l;
#pragma unroll
			for (int dt = 0; dt < DT; dt++) {
				int col = dt * 8 + 2 * tq;
				if (col < d)
					*(__nv_bfloat162 *)(o + (size_t)row * d + col) =
						__floats2bfloat162_rn(acc[mt][dt][2 * h] * inv,
								      acc[mt][dt][2 * h + 1] * inv);
			}
			if (lse && tq == 0)
				lse[(size_t)bh * t + row] = (mx[mt][h] * scale_log2 + log2f(l)) * FLASH_LN2;
		}
}

/* ---- BF16 backward ---- */

/*
 * The backward's grid is 1-D: block -> (head, key block). Heads go in groups
 * of hg (head_group), a group's key blocks in order (the longest first,
 * causal) with its heads side by side, so that when the FP32 dQ accumulator
 * of all heads outgrows L2, the rows the running blocks add to still fit.
 */
__device__ __forceinline__ void bwd_block(int nkb, int bh, int hg, int *head, int *kb)
{
	int per = hg * nkb, grp = (int)blockIdx.x / per, r = (int)blockIdx.x % per;
	int n = min(hg, bh - grp * hg);

	*kb = r / n;
	*head = grp * hg + r % n;
}

template <int D, int BN, int BM, int NW> struct bwd_tile {
	static constexpr int threads = NW * 32;
	static constexpr int mt = BN / (16 * NW);       /* m-tiles of 16 keys per warp */
	static constexpr int row = D + 8;
	static constexpr int srow = BM + 8;             /* dS^T rows */
	/* dQ = dS K: warps split BM/16 m-tiles by wm, the D/16 column pairs by wn */
	static constexpr int qm = BM / 16;
	static constexpr int wm = qm < NW ? qm : NW, wn = NW / wm, mq = qm / wm;
	static constexpr int np = (D / 16 + wn - 1) / wn;
	static constexpr size_t smem = (size_t)(2 * BN + 4 * BM) * row * sizeof(bf16) +
				       (size_t)BN * srow * sizeof(bf16) + 4 * BM * sizeof(float);
	static_assert(D % 16 == 0 && BM % 16 == 0 && BN % (16 * NW) == 0, "tile shape");
	static_assert(NW % wm == 0 && qm % wm == 0, "dQ warp split");
};

/*
 * P^T = exp(scale S^T - lse) and dS^T = P^T (dP^T - D) in place of S^T and
 * dP^T; MASK zeroes what lies past t or above the diagonal.
 */
template <bool MASK, int MT, int QT>
__device__ __forceinline__ void bwd_probs(float (&st)[MT][QT][4], float (&dpt)[MT][QT][4],
					  const float *cl, const float *cd, int wkey, int m0,
					  int t, bool causal, float scale_log2, int g, int tq)
{
#pragma unroll
	for (int nt = 0; nt < QT; nt++)
#pragma unroll
		for (int e2 = 0; e2 < 2; e2++) {
			int ql = nt * 8 + 2 * tq + e2;
			float nl = -cl[ql] * FLASH_LOG2E, dr = cd[ql];
#pragma unroll
			for (int mt = 0; mt < MT; mt++)
#pragma unroll
				for (int h = 0; h < 2; h++) {
					int e = 2 * h + e2;
					float p = exp2f(fmaf(st[mt][nt][e], scale_log2, nl));
					if (MASK) {
						int key = wkey + mt * 16 + g + h * 8, qg = m0 + ql;
						if (qg >= t || key >= t || (causal && key > qg))
							p = 0.0f;
					}
					st[mt][nt][e] = p;
					dpt[mt][nt][e] = p * (dpt[mt][nt][e] - dr);
				}
		}
}

template <int M, int N>
__device__ __forceinline__ void zero_tiles(float (&a)[M][N][4])
{
#pragma unroll
	for (int i = 0; i < M; i++)
#pragma unroll
		for (int j = 0; j < N; j++)
			a[i][j][0] = a[i][j][1] = a[i][j][2] = a[i][j][3] = 0.0f;
}

/* Query rows [m0, m0 + BM) of Q and dO, and their lse and D, into one buffer. */
template <int BM, int D, int THREADS>
__device__ __forceinline__ void bwd_load_queries(const tile_copy<BM, D, THREADS> &copy, uint32_t sq,
						 uint32_t sdo, uint32_t slse, uint32_t sdr,
						 const bf16 *q, const bf16 *dout, const float *lse,
						 const float *drow, int m0, int t, int d)
{
	copy.load(sq, q, m0, t, d);
	copy.load(sdo, dout, m0, t, d);
	vec_load<BM, THREADS>(slse, lse, m0, t);
	vec_load<BM, THREADS>(sdr, drow, m0, t);
}

/* Starts the copies of the block's K and V (rows n0..) and of the first query block (m0..). */
template <int BN, int BM, int D, int THREADS>
__device__ __forceinline__ void bwd_begin(const tile_copy<BM, D, THREADS> &q_copy, const bf16 *q,
					  const bf16 *k, const bf16 *v, const bf16 *dout,
					  const float *lse, const float *drow, int n0, int m0, int t,
					  int d, uint32_t sk, uint32_t sv, uint32_t sq, uint32_t sdo,
					  uint32_t slse, uint32_t sdr)
{
	const tile_copy<BN, D, THREADS> kv_copy;

	kv_copy.load(sk, k, n0, t, d);
	kv_copy.load(sv, v, n0, t, d);
	bwd_load_queries(q_copy, sq, sdo, slse, sdr, q, dout, lse, drow, m0, t, d);
	cp_async_commit();
}

/*
 * S^T = K Q^T and dP^T = V dO^T for MT m-tiles of 16 keys and NP pairs of
 * 8-query n-tiles: k_a, v_a address the warp's K and V rows (lane_a), q_b,
 * do_b the queries (lane_b).
 */
template <int MT, int NP, int D, int R>
__device__ __forceinline__ void bwd_scores(float (&st)[MT][2 * NP][4], float (&dpt)[MT][2 * NP][4],
					   uint32_t k_a, uint32_t v_a, uint32_t q_b, uint32_t do_b)
{
	zero_tiles(st);
	zero_tiles(dpt);
#pragma unroll
	for (int kc = 0; kc < D / 16; kc++) {
		uint32_t a[MT][4], av[MT][4];
#pragma unroll
		for (int mt = 0; mt < MT; mt++) {
			ldsm_x4(a[mt], k_a + 2 * (mt * 16 * R + kc * 16));
			ldsm_x4(av[mt], v_a + 2 * (mt * 16 * R + kc * 16));
		}
#pragma unroll
		for (int np = 0; np < NP; np++) {
			uint32_t b[4], bo[4];
			ldsm_x4(b, q_b + 2 * (np * 16 * R + kc * 16));
			ldsm_x4(bo, do_b + 2 * (np * 16 * R + kc * 16));
#pragma unroll
			for (int mt = 0; mt < MT; mt++) {
				mma_bf16(st[mt][2 * np], a[mt], b[0], b[1]);
				mma_bf16(st[mt][2 * np + 1], a[mt], b[2], b[3]);
				mma_bf16(dpt[mt][2 * np], av[mt], bo[0], bo[1]);
				mma_bf16(dpt[mt][2 * np + 1], av[mt], bo[2], bo[3]);
			}
		}
	}
}

/*
 * dV += P^T dO and dK += dS^T Q over one chunk of 16 queries: pa and sa are
 * the A operands of MT m-tiles of keys; do_bt, q_bt address NDP column
 * pairs of dO and Q (lane_bt).
 */
template <int MT, int NDP, int R>
__device__ __forceinline__ void bwd_dkdv_step(float (&dva)[MT][2 * NDP][4],
					      float (&dka)[MT][2 * NDP][4],
					      const uint32_t (&pa)[MT][4], const uint32_t (&sa)[MT][4],
					      uint32_t do_bt, uint32_t q_bt)
{
#pragma unroll
	for (int dp = 0; dp < NDP; dp++) {
		uint32_t b[4], bq[4];
		ldsm_x4_trans(b, do_bt + 2 * dp * 16);
		ldsm_x4_trans(bq, q_bt + 2 * dp * 16);
#pragma unroll
		for (int mt = 0; mt < MT; mt++) {
			mma_bf16(dva[mt][2 * dp], pa[mt], b[0], b[1]);
			mma_bf16(dva[mt][2 * dp + 1], pa[mt], b[2], b[3]);
			mma_bf16(dka[mt][2 * dp], sa[mt], bq[0], bq[1]);
			mma_bf16(dka[mt][2 * dp + 1], sa[mt], bq[2], bq[3]);
		}
	}
}

/*
 * dq (MQ m-tiles of 16 queries x NP column pairs) = dS K over BN keys, pair
 * pi being column pair p0 + pi * WN of the NPAIRS there are (those past it
 * skipped): ds_at addresses dS^T (lane_b, .trans), k_bt K at pair p0
 * (lane_bt).
 */
template <int MQ, int NP, int WN, int NPAIRS, int BN, int SR, int R>
__device__ __forceinline__ void bwd_dq_tile(float (&dq)[MQ][2 * NP][4], uint32_t ds_at,
					    uint32_t k_bt, int p0)
{
	zero_tiles(dq);
#pragma unroll
	for (int kc = 0; kc < BN / 16; kc++) {
		uint32_t a[MQ][4];
#pragma unroll
		for (int mi = 0; mi < MQ; mi++)
			ldsm_x4_trans(a[mi], ds_at + 2 * (kc * 16 * SR + mi * 16));
#pragma unroll
		for (int pi = 0; pi < NP; pi++) {
			if (NP * WN == NPAIRS || p0 + pi * WN < NPAIRS) {
				uint32_t b[4];
				ldsm_x4_trans(b, k_bt + 2 * (kc * 16 * R + pi * WN * 16));
#pragma unroll
				for (int mi = 0; mi < MQ; mi++) {
					mma_bf16(dq[mi][2 * pi], a[mi], b[0], b[1]);
					mma_bf16(dq[mi][2 * pi + 1], a[mi], b[2], b[3]);
				}
			}
		}
	}
}

/*
 * The dq tile of bwd_dq_tile added to the FP32 accumulator (t, d): rows
 * row0 + 16 mi + g (+8), m-tiles whose rows all lie before min_row skipped
 * (causal: they see none of the block's keys); bounds checked unless full.
 */
template <int MQ, int NP, int WN, int NPAIRS>
__device__ __forceinline__ void bwd_dq_add(float *dq_acc, const float (&dq)[MQ][2 * NP][4],
					   int row0, int p0, int min_row, int t, int d, bool full,
					   int g, int tq)
{
#pragma unroll
	for (int mi = 0; mi < MQ; mi++) {
		if (row0 + mi * 16 + 15 < min_row)
			continue;
#pragma unroll
		for (int pi = 0; pi < NP; pi++) {
			if (NP * WN != NPAIRS && p0 + pi * WN >= NPAIRS)
				continue;
#pragma unroll
			for (int half = 0; half < 2; half++)
#pragma unroll
				for (int h = 0; h < 2; h++) {
					int row = row0 + mi * 16 + g + h * 8;
					int col = (p0 + pi * WN) * 16 + half * 8 + 2 * tq;
					if (full || (row < t && col < d))
						atomicAdd((float2 *)(dq_acc + (size_t)row * d + col),
							  make_float2(dq[mi][2 * pi + half][2 * h],
								      dq[mi][2 * pi + half][2 * h + 1]));
				}
		}
	}
}

/* dK (times scale) and dV rows key0 + 16 mt + g (+8), columns col0 + 8 dt + 2 tq, inside (t, d). */
template <int MT, int NT>
__device__ __forceinline__ void bwd_store_dkdv(bf16 *dk, bf16 *dv, const float (&dka)[MT][NT][4],
					       const float (&dva)[MT][NT][4], int key0, int col0,
					       int t, int d, float scale, int g, int tq)
{
#pragma unroll
	for (int mt = 0; mt < MT; mt++)
#pragma unroll
		for (int h = 0; h < 2; h++) {
			int key = key0 + mt * 16 + g + h * 8;
			if (key >= t)
				continue;
#pragma unroll
			for (int dt = 0; dt < NT; dt++) {
				int col = col0 + dt * 8 + 2 * tq;
				if (col < d) {
					size_t at = (size_t)key * d + col;
					*(__nv_bfloat162 *)(dk + at) = __floats2bfloat162_rn(
						dka[mt][dt][2 * h] * scale, dka[mt][dt][2 * h + 1] * scale);
					*(__nv_bfloat162 *)(dv + at) = __floats2bfloat162_rn(
						dva[mt][dt][2 * h], dva[mt][dt][2 * h + 1]);
				}
			}
		}
}

/*
 * Block (head, key block) from bwd_block. K and V stay in shared memory;
 * Q, dO, lse and D = rowsum(dO o O) are double-buffered per query block.
 * Warp w owns keys [16 MT w, 16 MT (w + 1)) of the block for S^T, dP^T,
 * dV and dK; dQ's tile is its own (bwd_tile's wm x wn split).
 */
template <int D, int BN, int BM, int NW>
__global__ void __launch_bounds__(NW * 32)
flash_bwd_bf16(bf16 *__restrict__ dk, bf16 *__restrict__ dv, float *__restrict__ dq_acc,
	       const bf16 *__restrict__ q, const bf16 *__restrict__ k, const bf16 *__restrict__ v,
	       const bf16 *__restrict__ dout, const float *__restrict__ lse,
	       const float *__restrict__ drow, int bh, int hg, int t, int d, float scale,
	       float scale_log2, bool causal)
{
	typedef bwd_tile<D, BN, BM, NW> C;
	constexpr int MT = C::mt, R = C::row, SR = C::srow, QT = BM / 8, DT = D / 8;
	constexpr uint32_t QBUF = 2 * BM * R;   /* bytes between the two Q (or dO) buffers */
	extern __shared__ __align__(16) unsigned char smem[];
	bf16 *sds_p = (bf16 *)smem + (2 * BN + 4 * BM) * R;
	float *slse_p = (float *)(sds_p + BN * SR), *sdr_p = slse_p + 2 * BM;
	const uint32_t sk = smem_addr(smem), sv = sk + 2 * BN * R, sq = sv + 2 * BN * R;
	const uint32_t sdo = sq + 2 * QBUF, sds = smem_addr(sds_p);
	const uint32_t slse = smem_addr(slse_p), sdr = smem_addr(sdr_p);
	int head, kb;
	bwd_block((t + BN - 1) / BN, bh, hg, &head, &kb);
	const int n0 = kb * BN;
	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
	const int wk = warp * 16 * MT, wkey = n0 + wk;   /* the warp's first key: local, global */
	const int wmi = warp % C::wm, wni = warp / C::wm;    /* the warp's dQ part */
	const uint32_t k_a = sk + 2 * (wk * R + lane_a(R, lane));
	const uint32_t v_a = sv + 2 * (wk * R + lane_a(R, lane));
	const uint32_t q_b = sq + 2 * lane_b(R, lane), do_b = sdo + 2 * lane_b(R, lane);
	const uint32_t q_bt = sq + 2 * lane_bt(R, lane), do_bt = sdo + 2 * lane_bt(R, lane);
	const uint32_t ds_at = sds + 2 * (lane_b(SR, lane) + wmi * C::mq * 16);
	const uint32_t k_bt = sk + 2 * (lane_bt(R, lane) + wni * 16);
	const uint32_t ds_st = sds + 2 * (wk * SR + lane_a(SR, lane));
	const int i0 = causal ? n0 / BM : 0, iend = (t + BM - 1) / BM;
	const size_t base = (size_t)head * t * d;
	const tile_copy<BM, D, C::threads> q_copy;

	q += base, k += base, v += base, dout += base, dk += base, dv += base, dq_acc += base;
	lse += (size_t)head * t, drow += (size_t)head * t;
	bwd_begin<BN>(q_copy, q, k, v, dout, lse, drow, n0, i0 * BM, t, d, sk, sv, sq, sdo, slse,
		      sdr);

	float dka[MT][DT][4], dva[MT][DT][4];
	zero_tiles(dka);
	zero_tiles(dva);

	for (int i = i0; i < iend; i++) {
		const int m0 = i * BM, buf = (i - i0) & 1;
		const uint32_t qo = buf * QBUF;
		const float *cl = slse_p + buf * BM, *cd = sdr_p + buf * BM;
		/* causal: queries before the warp's first key see none of its keys */
		const bool active = !causal || m0 + BM - 1 >= wkey;

		cp_async_wait_all();
		__syncthreads();
		if (i + 1 < iend)
			bwd_load_queries(q_copy, sq + (QBUF - qo), sdo + (QBUF - qo),
					 slse + 4 * BM * (1 - buf), sdr + 4 * BM * (1 - buf), q, dout,
					 lse, drow, m0 + BM, t, d);
		cp_async_commit();

		if (active) {
			float st[MT][QT][4], dpt[MT][QT][4];
			bwd_scores<MT, QT / 2, D, R>(st, dpt, k_a, v_a, q_b + qo, do_b + qo);
			if (m0 + BM > t || n0 + BN > t || (causal && wkey + 16 * MT - 1 > m0))
				bwd_probs<true>(st, dpt, cl, cd, wkey, m0, t, causal, scale_log2, g, tq);
			else
				bwd_probs<false>(st, dpt, cl, cd, wkey, m0, t, causal, scale_log2, g, tq);
			/* dV += P^T dO and dK += dS^T Q; dS^T to shared memory for dQ */
#pragma unroll
			for (int kc = 0; kc < BM / 16; kc++) {
				uint32_t pa[MT][4], sa[MT][4];
#pragma unroll
				for (int mt = 0; mt < MT; mt++) {
					acc_to_a(pa[mt], st[mt][2 * kc], st[mt][2 * kc + 1]);
					acc_to_a(sa[mt], dpt[mt][2 * kc], dpt[mt][2 * kc + 1]);
					stsm_x4(ds_st + 2 * (mt * 16 * SR + kc * 16), sa[mt]);
				}
				bwd_dkdv_step<MT, D / 16, R>(dva, dka, pa, sa, do_bt + qo + 2 * kc * 16 * R,
							     q_bt + qo + 2 * kc * 16 * R);
			}
		} else {
			/* the warp's dS^T rows are zero */
			for (int c = lane; c < 16 * MT * BM / 8; c += 32) {
				int r = c / (BM / 8), col = (c % (BM / 8)) * 8;
				*(uint4 *)(sds_p + (wk + r) * SR + col) = make_uint4(0, 0, 0, 0);
			}
		}
		__syncthreads();

		/* dQ (BM x D) += dS K over this block's keys, into the FP32 workspace */
		float dq[C::mq][2 * C::np][4];
		bwd_dq_tile<C::mq, C::np, C::wn, D / 16, BN, SR, R>(dq, ds_at, k_bt, wni);
		bwd_dq_add<C::mq, C::np, C::wn, D / 16>(dq_acc, dq, m0 + wmi * C::mq * 16, wni,
							 causal ? n0 : 0, t, d, m0 + BM <= t && d == D,
							 g, tq);
	}
	bwd_store_dkdv(dk, dv, dka, dva, wkey, 0, t, d, scale, g, tq);
}

/*
 * The backward for wide heads (d_head 128), where a warp's dK and dV rows
 * leave no registers for larger tiles: P^T and dS^T go through shared
 * memory instead, so each product has its own warp layout with 32-row warp
 * tiles, and every ldmatrix feeds more mma. S^T and dP^T (keys x queries):
 * 4 x 2 warps of 32 x 32; dV and dK (keys x d): 4 x 2 warps of 32 x D/2;
 * dQ (queries x d): 2 x 4 warps of 32 x D/4. 128 keys a block, 64 queries a
 * step, 8 warps.
 */
template <int D> struct bwd_sp_tile {
	static constexpr int bn = 128, bm = 64, threads = 256;
	static constexpr int row = D + 8, srow = bm + 8;
	static constexpr size_t smem = (size_t)(2 * bn + 4 * bm) * row * sizeof(bf16) +
				       (size_t)2 * bn * srow * sizeof(bf16) + 4 * bm * sizeof(float);
	static_assert(D % 64 == 0, "d_head a multiple of 64");
};

template <int D>
__global__ void __launch_bounds__(256)
flash_bwd_bf16_sp(bf16 *__restrict__ dk, bf16 *__restrict__ dv, float *__restrict__ dq_acc,
		  const bf16 *__restrict__ q, const bf16 *__restrict__ k,
		  const bf16 *__restrict__ v, const bf16 *__restrict__ dout,
		  const float *__restrict__ lse, const float *__restrict__ drow, int bh, int hg,
		  int t, int d, float scale, float scale_log2, bool causal)
{
	typedef bwd_sp_tile<D> C;
	constexpr int BN = C::bn, BM = C::bm, R = C::row, SR = C::srow, DH = D / 2, DQ = D / 4;
	constexpr uint32_t QBUF = 2 * BM * R;
	extern __shared__ __align__(16) unsigned char smem[];
	bf16 *sp_p = (bf16 *)smem + (2 * BN + 4 * BM) * R, *sds_p = sp_p + BN * SR;
	float *slse_p = (float *)(sds_p + BN * SR), *sdr_p = slse_p + 2 * BM;
	const uint32_t sk = smem_addr(smem), sv = sk + 2 * BN * R, sq = sv + 2 * BN * R;
	const uint32_t sdo = sq + 2 * QBUF, sp = smem_addr(sp_p), sds = smem_addr(sds_p);
	const uint32_t slse = smem_addr(slse_p), sdr = smem_addr(sdr_p);
	int head, kb;
	bwd_block((t + BN - 1) / BN, bh, hg, &head, &kb);
	const int n0 = kb * BN;
	const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, tq = lane % 4;
	/* the warp's tiles: S (keys s_k.., queries s_q..), dK dV (keys, d kv_d..), dQ (dq_q.., dq_d..) */
	const int s_k = (warp % 4) * 32, s_q = (warp / 4) * 32, kv_d = (warp / 4) * DH;
	const int dq_q = (warp % 2) * 32, dq_d = (warp / 2) * DQ;
	const uint32_t k_a = sk + 2 * (s_k * R + lane_a(R, lane));
	const uint32_t v_a = sv + 2 * (s_k * R + lane_a(R, lane));
	const uint32_t q_b = sq + 2 * (s_q * R + lane_b(R, lane));
	const uint32_t do_b = sdo + 2 * (s_q * R + lane_b(R, lane));
	const uint32_t p_a = sp + 2 * (s_k * SR + lane_a(SR, lane));
	const uint32_t ds_a = sds + 2 * (s_k * SR + lane_a(SR, lane));
	const uint32_t q_bt = sq + 2 * (kv_d + lane_bt(R, lane));
	const uint32_t do_bt = sdo + 2 * (kv_d + lane_bt(R, lane));
	const uint32_t ds_at = sds + 2 * (dq_q + lane_b(SR, lane));
	const uint32_t k_bt = sk + 2 * (dq_d + lane_bt(R, lane));
	const uint32_t p_st = sp + 2 * (s_k * SR + s_q + lane_a(SR, lane));
	const uint32_t ds_st = sds + 2 * (s_k * SR + s_q + lane_a(SR, lane));
	const int i0 = causal ? n0 / BM : 0, iend = (t + BM - 1) / BM;
	const size_t base = (size_t)head * t * d;
	const tile_copy<BM, D, C::threads> q_copy;

	q += base, k += base, v += base, dout += base, dk += base, dv += base, dq_acc += base;
	lse += (size_t)head * t, drow += (size_t)head * t;
	bwd_begin<BN>(q_copy, q, k, v, dout, lse, drow, n0, i0 * BM, t, d, sk, sv, sq, sdo, slse,
		      sdr);

	float dka[2][DH / 8][4], dva[2][DH / 8][4];
	zero_tiles(dka);
	zero_tiles(dva);

	for (int i = i0; i < iend; i++) {
		const int m0 = i * BM, buf = (i - i0) & 1;
		const uint32_t qo = buf * QBUF;
		const float *cl = slse_p + buf * BM + s_q, *cd = sdr_p + buf * BM + s_q;
		/* causal: the warp's S tile holds a key no later than a query */
		const bool active = !causal || m0 + s_q + 31 >= n0 + s_k;

		cp_async_wait_all();
		__syncthreads();
		if (i + 1 < iend)
			bwd_load_queries(q_copy, sq + (QBUF - qo), sdo + (QBUF - qo),
					 slse + 4 * BM * (1 - buf), sdr + 4 * BM * (1 - buf), q, dout,
					 lse, drow, m0 + BM, t, d);
		cp_async_commit();

		if (active) {
			float st[2][4][4], dpt[2][4][4];
			bwd_scores<2, 2, D, R>(st, dpt, k_a, v_a, q_b + qo, do_b + qo);
			if (m0 + BM > t || n0 + BN > t || (causal && n0 + s_k + 31 > m0 + s_q))
				bwd_probs<true>(st, dpt, cl, cd, n0 + s_k, m0 + s_q, t, causal, scale_log2,
						g, tq);
			else
				bwd_probs<false>(st, dpt, cl, cd, n0 + s_k, m0 + s_q, t, causal, scale_log2,
						 g, tq);
#pragma unroll
			for (int mt = 0; mt < 2; mt++)
#pragma unroll
				for (int np = 0; np < 2; np++) {
					uint32_t r[4];
					acc_to_a(r, st[mt][2 * np], st[mt][2 * np + 1]);
					stsm_x4(p_st + 2 * (mt * 16 * SR + np * 16), r);
					acc_to_a(r, dpt[mt][2 * np], dpt[mt][2 * np + 1]);
					stsm_x4(ds_st + 2 * (mt * 16 * SR + np * 16), r);
				}
		} else {
			/* the warp's 32 x 32 of P^T and dS^T are zero */
			for (int c = lane; c < 32 * 4; c += 32) {
				int at = (s_k + c / 4) * SR + s_q + (c % 4) * 8;
				*(uint4 *)(sp_p + at) = make_uint4(0, 0, 0, 0);
				*(uint4 *)(sds_p + at) = make_uint4(0, 0, 0, 0);
			}
		}
		__syncthreads();

		/* dV += P^T dO, dK += dS^T Q: keys s_k.., columns kv_d.. */
#pragma unroll
		for (int kc = 0; kc < BM / 16; kc++) {
			uint32_t pa[2][4], sa[2][4];
#pragma unroll
			for (int mt = 0; mt < 2; mt++) {
				ldsm_x4(pa[mt], p_a + 2 * (mt * 16 * SR + kc * 16));
				ldsm_x4(sa[mt], ds_a + 2 * (mt * 16 * SR + kc * 16));
			}
			bwd_dkdv_step<2, DH / 16, R>(dva, dka, pa, sa, do_bt + qo + 2 * kc * 16 * R,
						     q_bt + qo + 2 * kc * 16 * R);
		}

		/* dQ (queries dq_q.., columns dq_d..) += dS K, into the FP32 workspace */
		if (!causal || m0 + dq_q + 31 >= n0) {
			float dq[2][DQ / 8][4];
			bwd_dq_tile<2, DQ / 16, 1, DQ / 16, BN, SR, R>(dq, ds_at, k_bt, 0);
			bwd_dq_add<2, DQ / 16, 1, D / 16>(dq_acc, dq, m0 + dq_q, dq_d / 16,
							  causal ? n0 : 0, t, d,
							  m0 + BM <= t && d == D, g, tq);
		}
	}
	bwd_store_dkdv(dk, dv, dka, dva, n0 + s_k, kv_d, t, d, scale, g, tq);
}

/* ---- FP32 (CUDA cores), any dtype: 32 x 32 tiles, 256 threads ---- */

#define SIMT_TILE 32
#define SIMT_THREADS 256

/* Rows [row0, row0 + 32) of a (t, d) matrix as floats, row stride DMAX + 1, zeros outside. */
template <typename E, int DMAX>
__device__ __forceinline__ void simt_tile_load(float *s, const E *g, int row0, int t, int d)
{
	for (int i = threadIdx.x; i < SIMT_TILE * DMAX; i += SIMT_THREADS) {
		int r = i / DMAX, c = i % DMAX, gr = row0 + r;
		s[r * (DMAX + 1) + c] = gr < t && c < d ? to_f32(g[(size_t)gr * d + c]) : 0.0f;
	}
}

__device__ __forceinline__ float simt_dot(const float *a, const float *b, int d)
{
	float s = 0.0f;

#pragma unroll 8
	for (int c = 0; c < d; c++)
		s = fmaf(a[c], b[c], s);
	return s;
}

template <int DMAX> struct simt_fwd_smem {
	static constexpr size_t bytes =
		(size_t)(3 * SIMT_TILE * (DMAX + 1) + SIMT_TILE * (SIMT_TILE + 1) + 3 * SIMT_TILE) *
		sizeof(float);
};

/*
 * Grid (bh, query blocks of 32). Warp w computes the scores of rows w, w+8,
 * w+16, w+24 (lane = key) and their softmax; thread (r = tid / 8, c = tid %
 * 8) accumulates row r of O in columns c, c + 8, ...
 */
template <typename E, int DMAX>
__global__ void __launch_bounds__(SIMT_THREADS)
flash_fwd_simt(E *__restrict__ o, float *__restrict__ lse, const E *__restrict__ q,
	       const E *__restrict__ k, const E *__restrict__ v, int t, int d, float scale,
	       bool causal)
{
	constexpr int TL = SIMT_TILE, DP = DMAX + 1, CPT = DMAX / 8;
	extern __shared__ float fsm[];
	float *sq = fsm, *sk = sq + TL * DP, *sv = sk + TL * DP, *ss = sv + TL * DP;
	float *sm = ss + TL * (TL + 1), *sl = sm + TL, *sa = sl + TL;
	const int bh = blockIdx.x, m0 = (gridDim.y - 1 - blockIdx.y) * TL;
	const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, r = tid / 8, c8 = tid % 8;
	const size_t base = (size_t)bh * t * d;
	const int n_end = causal ? min(t, m0 + TL) : t;
	float acc[CPT];

	q += base, k += base, v += base, o += base;
	simt_tile_load<E, DMAX>(sq, q, m0, t, d);
	if (tid < TL)
		sm[tid] = -INFINITY, sl[tid] = 0.0f;
#pragma unroll
	for (int i = 0; i < CPT; i++)
		acc[i] = 0.0f;

	for (int n0 = 0; n0 < n_end; n0 += TL) {
		__syncthreads();
		simt_tile_load<E, DMAX>(sk, k, n0, t, d);
		simt_tile_load<E, DMAX>(sv, v, n0, t, d);
		__syncthreads();
#pragma unroll
		for (int rr = 0; rr < TL / 8; rr++) {
			int ql = warp + 8 * rr, key = n0 + lane;
			float s = simt_dot(sq + ql * DP, sk + lane * DP, d) * scale;
			if (key >= t || (causal && key > m0 + ql))
				s = -INFINITY;
			float m_old = sm[ql], m_new = fmaxf(m_old, warp_max(s));
			float p = m_new == -INFINITY ? 0.0f : __expf(s - m_new);
			float alpha = m_new == -INFINITY ? 1.0f : __expf(m_old - m_new);
			float ps = warp_sum(p);
			ss[ql * (TL + 1) + lane] = p;
			__syncwarp();
			if (lane == 0) {
				sm[ql] = m_new;
				sl[ql] = sl[ql] * alpha + ps;
				sa[ql] = alpha;
			}
		}
		__syncthreads();
		float alpha = sa[r];
#pragma unroll
		for (int i = 0; i < CPT; i++)
			acc[i] *= alpha;
		for (int key = 0; key < TL; key++) {
			float p = ss[r * (TL + 1) + key];
#pragma unroll
			for (int i = 0; i < CPT; i++)
				acc[i] = fmaf(p, sv[key * DP + c8 + 8 * i], acc[i]);
		}
	}
	__syncthreads();
	int row = m0 + r;
	if (row < t) {
		float l = sl[r];
#pragma unroll
		for (int i = 0; i < CPT; i++) {
			int c = c8 + 8 * i;
			if (c < d)
				o[(size_t)row * d + c] = from_f32<E>(acc[i] / l);
		}
		if (lse && c8 == 0)
			lse[(size_t)bh * t + row] = sm[r] + logf(l);
	}
}

template <int DMAX> struct simt_bwd_smem {
	static constexpr size_t bytes =
		(size_t)(4 * SIMT_TILE * (DMAX + 1) + 2 * SIMT_TILE * (SIMT_TILE + 1) + 2 * SIMT_TILE) *
		sizeof(float);
};

/*
 * Grid (bh, key blocks of 32). Warp w computes P^T and dS^T for query rows
 * w, w+8, ... (lane = key); thread (r, c) accumulates dK and dV of key r and
 * the block's dQ of query r in columns c, c + 8, ...
 */
template <typename E, int DMAX>
__global__ void __launch_bounds__(SIMT_THREADS)
flash_bwd_simt(E *__restrict__ dk, E *__restrict__ dv, float *__restrict__ dq_acc,
	       const E *__restrict__ q, const E *__restrict__ k, const E *__restrict__ v,
	       const E *__restrict__ dout, const float *__restrict__ lse,
	       const float *__restrict__ drow, int t, int d, float scale, bool causal)
{
	constexpr int TL = SIMT_TILE, DP = DMAX + 1, CPT = DMAX / 8, SP = TL + 1;
	extern __shared__ float fsm[];
	float *sk = fsm, *sv = sk + TL * DP, *sq = sv + TL * DP, *sdo = sq + TL * DP;
	float *sp = sdo + TL * DP, *sds = sp + TL * SP, *sl = sds + TL * SP, *sd = sl + TL;
	const int bh = blockIdx.x, n0 = blockIdx.y * TL;
	const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, r = tid / 8, c8 = tid % 8;
	const size_t base = (size_t)bh * t * d;
	float dka[CPT], dva[CPT];

	q += base, k += base, v += base, dout += base, dk += base, dv += base, dq_acc += base;
	lse += (size_t)bh * t, drow += (size_t)bh * t;
	simt_tile_load<E, DMAX>(sk, k, n0, t, d);
	simt_tile_load<E, DMAX>(sv, v, n0, t, d);
#pragma unroll
	for (int i = 0; i < CPT; i++)
		dka[i] = dva[i] = 0.0f;

	for (int m0 = causal ? n0 : 0; m0 < t; m0 += TL) {
		__syncthreads();
		simt_tile_load<E, DMAX>(sq, q, m0, t, d);
		simt_tile_load<E, DMAX>(sdo, dout, m0, t, d);
		if (tid < TL) {
			sl[tid] = m0 + tid < t ? lse[m0 + tid] : 0.0f;
			sd[tid] = m0 + tid < t ? drow[m0 + tid] : 0.0f;
		}
		__syncthreads();
#pragma unroll
		for (int rr = 0; rr < TL / 8; rr++) {
			int ql = warp + 8 * rr, qg = m0 + ql, key = n0 + lane;
			float s = simt_dot(sq + ql * DP, sk + lane * DP, d);
			float dp = simt_dot(sdo + ql * DP, sv + lane * DP, d);
			float p = qg < t && key < t && !(causal && key > qg) ? __expf(s * scale - sl[ql])
									    : 0.0f;
			sp[lane * SP + ql] = p;
			sds[lane * SP + ql] = p * (dp - sd[ql]);
		}
		__syncthreads();
		float dqa[CPT];
#pragma unroll
		for (int i = 0; i < CPT; i++)
			dqa[i] = 0.0f;
		for (int j = 0; j < TL; j++) {
			float p = sp[r * SP + j], ds = sds[r * SP + j], dsq = sds[j * SP + r];
#pragma unroll
			for (int i = 0; i < CPT; i++) {
				int c = c8 + 8 * i;
				dva[i] = fmaf(p, sdo[j * DP + c], dva[i]);
				dka[i] = fmaf(ds, sq[j * DP + c], dka[i]);
				dqa[i] = fmaf(dsq, sk[j * DP + c], dqa[i]);
			}
		}
		int qg = m0 + r;
		if (qg < t)
#pragma unroll
			for (int i = 0; i < CPT; i++) {
				int c = c8 + 8 * i;
				if (c < d)
					atomicAdd(dq_acc + (size_t)qg * d + c, dqa[i]);
			}
	}
	int key = n0 + r;
	if (key < t)
#pragma unroll
		for (int i = 0; i < CPT; i++) {
			int c = c8 + 8 * i;
			if (c < d) {
				dk[(size_t)key * d + c] = from_f32<E>(dka[i] * scale);
				dv[(size_t)key * d + c] = from_f32<E>(dva[i]);
			}
		}
}

/* ---- backward's first and last passes ---- */

/* drow[r] = sum_c dout[r][c] * o[r][c] and a zeroed dq_acc row; one warp per row. */
template <typename E>
__global__ void flash_bwd_prep(float *__restrict__ drow, float *__restrict__ dq_acc,
			       const E *__restrict__ dout, const E *__restrict__ o, long long rows,
			       int d)
{
	long long row = (long long)blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32;
	int lane = threadIdx.x % 32;
	float s = 0.0f;

	if (row >= rows)
		return;
	for (int c = lane; c < d; c += 32) {
		size_t at = (size_t)row * d + c;
		s = fmaf(to_f32(dout[at]), to_f32(o[at]), s);
		dq_acc[at] = 0.0f;
	}
	s = warp_sum(s);
	if (lane == 0)
		drow[row] = s;
}

template <typename E>
__global__ void flash_bwd_dq(E *__restrict__ dq, const float *__restrict__ dq_acc, long long n,
			     float scale)
{
	for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
	     i += (long long)gridDim.x * blockDim.x)
		dq[i] = from_f32<E>(dq_acc[i] * scale);
}

/* ---- launchers ---- */

/*
 * Raises a kernel's dynamic shared memory limit, once per device (the
 * attribute is per device; `raised` holds a bit per device id); 48 KB
 * needs no raise.
 */
template <typename K>
static cudaError_t allow_smem(K kernel, size_t bytes, unsigned *raised)
{
	int dev = 0;
	cudaError_t e;

	if (bytes <= 48 * 1024)
		return cudaSuccess;
	if ((e = cudaGetDevice(&dev)) != cudaSuccess)
		return e;
	if (dev < 32 && (*raised >> dev & 1u))
		return cudaSuccess;
	e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes);
	if (e == cudaSuccess && dev < 32)
		*raised |= 1u << dev;
	return e;
}

/* Raises the kernel's shared memory limit if it needs it, then launches it. */
template <typename... P, typename... A>
static cudaError_t launch(void (*kernel)(P...), dim3 grid, int threads, size_t smem,
			  unsigned *raised, cudaStream_t stream, A... args)
{
	cudaError_t e = allow_smem(kernel, smem, raised);

	if (e != cudaSuccess)
		return e;
	kernel<<<grid, threads, smem, stream>>>(args...);
	return cudaGetLastError();
}

struct flash_args {
	void *o, *dq, *dk, *dv;
	float *lse, *dq_acc, *drow;
	const void *q, *k, *v, *dout;
	const float *lse_in;
	int bh, t, d;
	float scale;
	bool causal;
	cudaStream_t stream;
};

template <int D, int BM, int BN, int NW>
static cudaError_t fwd_bf16(const flash_args &a)
{
	typedef fwd_tile<D, BM, BN, NW> C;
	static unsigned raised;

	return launch(flash_fwd_bf16<D, BM, BN, NW>, dim3(a.bh, ceil_div(a.t, BM)), C::threads,
		      C::smem, &raised, a.stream, (bf16 *)a.o, a.lse, (const bf16 *)a.q,
		      (const bf16 *)a.k, (const bf16 *)a.v, a.t, a.d, a.scale * FLASH_LOG2E,
		      a.causal);
}

/* The current device's multiprocessor count and L2 size, read once per device. */
static void device_facts(int *sms, int *l2)
{
	static int cached_dev = -1, cached_sms = 132, cached_l2 = 50 << 20;
	int dev = 0;

	if (cudaGetDevice(&dev) == cudaSuccess && dev != cached_dev) {
		int v;
		if (cudaDeviceGetAttribute(&v, cudaDevAttrMultiProcessorCount, dev) == cudaSuccess)
			cached_sms = v;
		if (cudaDeviceGetAttribute(&v, cudaDevAttrL2CacheSize, dev) == cudaSuccess && v > 0)
			cached_l2 = v;
		cached_dev = dev;
	}
	*sms = cached_sms;
	*l2 = cached_l2;
}

/*
 * The heads the backward runs side by side: all of them while the whole
 * FP32 dQ accumulator fits in L2, else as many as fill half of it (at least
 * one). Grouping costs a tail at each group's end (measured: 1.31 -> 1.52 ms
 * at d_head 128, T 8192, 8 heads, where everything fits), and pays once
 * the accumulator is well past L2 (d_head 64, T 32768: 9.38 -> 9.22 ms).
 */
static int head_group(const flash_args &a)
{
	int sms, l2;
	size_t per_head = (size_t)a.t * a.d * sizeof(float);

	device_facts(&sms, &l2);
	if (per_head * a.bh <= (size_t)l2)
		return a.bh;
	size_t hg = (size_t)l2 / 2 / per_head;
	return hg < 1 ? 1 : hg > (size_t)a.bh ? a.bh : (int)hg;
}

/* Launches a BF16 backward kernel (both share one signature) over bwd_block's 1-D grid. */
template <typename K>
static cudaError_t bwd_bf16_launch(K kernel, size_t smem, int threads, int bn, unsigned *raised,
				   const flash_args &a)
{
	return launch(kernel, dim3(a.bh * ceil_div(a.t, bn)), threads, smem, raised, a.stream,
		      (bf16 *)a.dk, (bf16 *)a.dv, a.dq_acc, (const bf16 *)a.q, (const bf16 *)a.k,
		      (const bf16 *)a.v, (const bf16 *)a.dout, a.lse_in, a.drow, a.bh,
		      head_group(a), a.t, a.d, a.scale, a.scale * FLASH_LOG2E, a.causal);
}

template <int D, int BN, int BM, int NW>
static cudaError_t bwd_bf16(const flash_args &a)
{
	typedef bwd_tile<D, BN, BM, NW> C;
	static unsigned raised;

	return bwd_bf16_launch(flash_bwd_bf16<D, BN, BM, NW>, C::smem, C::threads, BN, &raised, a);
}

template <int D>
static cudaError_t bwd_bf16_sp(const flash_args &a)
{
	typedef bwd_sp_tile<D> C;
	static unsigned raised;

	return bwd_bf16_launch(flash_bwd_bf16_sp<D>, C::smem, C::threads, C::bn, &raised, a);
}

template <typename E, int DMAX>
static cudaError_t fwd_simt(const flash_args &a)
{
	static unsigned raised;

	return launch(flash_fwd_simt<E, DMAX>, dim3(a.bh, ceil_div(a.t, SIMT_TILE)), SIMT_THREADS,
		      simt_fwd_smem<DMAX>::bytes, &raised, a.stream, (E *)a.o, a.lse,
		      (const E *)a.q, (const E *)a.k, (const E *)a.v, a.t, a.d, a.scale, a.causal);
}

template <typename E, int DMAX>
static cudaError_t bwd_simt(const flash_args &a)
{
	static unsigned raised;

	return launch(flash_bwd_simt<E, DMAX>, dim3(a.bh, ceil_div(a.t, SIMT_TILE)), SIMT_THREADS,
		      simt_bwd_smem<DMAX>::bytes, &raised, a.stream, (E *)a.dk, (E *)a.dv,
		      a.dq_acc, (const E *)a.q, (const E *)a.k, (const E *)a.v, (const E *)a.dout,
		      a.lse_in, a.drow, a.t, a.d, a.scale, a.causal);
}

/* The CUDA-core kernels' register width: the smallest of 64, 128, 256 that holds d. */
template <typename E>
static cudaError_t fwd_simt_any(const flash_args &a)
{
	return a.d <= 64 ? fwd_simt<E, 64>(a) : a.d <= 128 ? fwd_simt<E, 128>(a)
							    : fwd_simt<E, 256>(a);
}

template <typename E>
static cudaError_t bwd_simt_any(const flash_args &a)
{
	return a.d <= 64 ? bwd_simt<E, 64>(a) : a.d <= 128 ? bwd_simt<E, 128>(a)
							    : bwd_simt<E, 256>(a);
}

/*
 * BF16 tile shapes by head size, padded up to the next specialised width:
 * 16, 32, 48 (40), 64, 80, 128 and 256 (everything past 128). Shapes are
 * the fastest measured that keep every accumulator in registers (ptxas -v:
 * no spills); kernels/flash_attention.notes.md has the measurements.
 */
static cudaError_t fwd_bf16_any(const flash_args &a)
{
	if (a.d <= 16)
		return fwd_bf16<16, 128, 128, 4>(a);
	if (a.d <= 32)
		return fwd_bf16<32, 128, 128, 4>(a);
	if (a.d <= 48)
		return fwd_bf16<48, 128, 64, 4>(a);
	if (a.d <= 64)
		return fwd_bf16<64, 128, 128, 4>(a);
	if (a.d <= 80)
		return fwd_bf16<80, 128, 64, 4>(a);
	if (a.d <= 128)
		return fwd_bf16<128, 128, 64, 4>(a);
	return fwd_bf16<256, 128, 32, 8>(a);
}

/* Past 128 the dK and dV accumulators no longer fit a warp's registers: CUDA cores. */
static cudaError_t bwd_bf16_any(const flash_args &a)
{
	int sms, l2;

	device_facts(&sms, &l2);
	/* 32 keys a warp (4 warps, 128 keys) when the grid fills the GPU twice; 16 otherwise */
	bool wide = (long long)a.bh * ceil_div(a.t, 128) > 2LL * sms;
	if (a.d <= 16)
		return bwd_bf16<16, 128, 64, 8>(a);
	if (a.d <= 32)
		return wide ? bwd_bf16<32, 128, 32, 4>(a) : bwd_bf16<32, 128, 64, 8>(a);
	if (a.d <= 48)
		return bwd_bf16<48, 128, 64, 8>(a);
	if (a.d <= 64)
		return wide ? bwd_bf16<64, 128, 32, 4>(a) : bwd_bf16<64, 128, 64, 8>(a);
	if (a.d <= 80)
		return bwd_bf16<80, 128, 64, 8>(a);
	if (a.d <= 128)
		return bwd_bf16_sp<128>(a);
	return bwd_simt_any<bf16>(a);
}

extern "C" int flash_attention_supported(int d_head, enum st_dtype dtype, char *why, size_t len)
{
	const char *fmt = NULL;

	if (dtype != ST_DT_F32 && dtype != ST_DT_BF16)
		fmt = "dtype %d is neither f32 nor bf16";
	else if (d_head < 8 || d_head > 256)
		fmt = "d_head %d is outside 8..256";
	else if (d_head % 8)
		fmt = "d_head %d is not a multiple of 8";
	if (fmt && why && len)
		snprintf(why, len, fmt, dtype != ST_DT_F32 && dtype != ST_DT_BF16 ? (int)dtype : d_head);
	return fmt == NULL;
}

/* Sizes the grids can hold and pointers the 16-byte copies can read. */
static bool flash_args_ok(int bh, int t, int d_head, float scale, enum st_dtype dtype,
			  const void *const *ptrs, int n)
{
	if (!flash_attention_supported(d_head, dtype, NULL, 0) || bh < 0 || t < 0 ||
	    !(scale > 0.0f) || (t + SIMT_TILE - 1) / SIMT_TILE > 65535)
		return false;
	for (int i = 0; i < n; i++)
		if ((uintptr_t)ptrs[i] % 16)
			return false;
	return true;
}

/*
 * flash_attention_set_path's choice; until it is called, FLASH_PATH_FA2 if
 * the environment has STEPTRACE_FLASH_PATH=fa2 (read once), else AUTO.
 */
static volatile int path_choice = -1;

static enum flash_path path_now(void)
{
	if (path_choice < 0) {
		const char *e = getenv("STEPTRACE_FLASH_PATH");
		path_choice = e && !strcmp(e, "fa2") ? FLASH_PATH_FA2 : FLASH_PATH_AUTO;
	}
	return (enum flash_path)path_choice;
}

/* The Hopper kernels for BF16 at d_head, where they run and were not turned off. */
static bool use_sm90(int d_head)
{
	return path_now() == FLASH_PATH_AUTO && flash_sm90_supported(d_head);
}

extern "C" cudaError_t flash_attention_forward(void *o, float *lse, const void *q, const void *k,
					       const void *v, int bh, int t, int d_head, float scale,
					       bool causal, enum st_dtype dtype, cudaStream_t stream)
{
	const void *ptrs[] = { o, q, k, v };
	flash_args a = {};

	if (!flash_args_ok(bh, t, d_head, scale, dtype, ptrs, 4))
		return cudaErrorInvalidValue;
	if (bh == 0 || t == 0)
		return cudaSuccess;
	a.o = o, a.lse = lse, a.q = q, a.k = k, a.v = v;
	a.bh = bh, a.t = t, a.d = d_head, a.scale = scale, a.causal = causal, a.stream = stream;
	if (dtype != ST_DT_BF16)
		return fwd_simt_any<float>(a);
	if (use_sm90(d_head))
		return flash_sm90_forward(o, lse, q, k, v, bh, t, d_head, scale, causal, stream);
	return fwd_bf16_any(a);
}

extern "C" void flash_attention_set_path(enum flash_path path)
{
	path_choice = path;
}

extern "C" const char *flash_attention_kernels(int d_head, enum st_dtype dtype)
{
	if (dtype != ST_DT_BF16)
		return "simt";
	return use_sm90(d_head) ? "sm90" : "fa2";
}

static size_t align256(size_t n)
{
	return (n + 255) & ~(size_t)255;
}

extern "C" size_t flash_attention_backward_workspace(int bh, int t, int d_head)
{
	size_t rows = (size_t)(bh > 0 ? bh : 0) * (size_t)(t > 0 ? t : 0);

	return align256(rows * (size_t)(d_head > 0 ? d_head : 0) * sizeof(float)) +
	       align256(rows * sizeof(float));
}

typedef cudaError_t (*flash_pass)(const flash_args &a);

/* rowsum(dout * o) and a zeroed dQ accumulator, the main pass, then dq = scale * dQ. */
static cudaError_t backward_with(flash_pass main_pass, void *dq, void *dk, void *dv,
				 const void *dout, const void *q, const void *k, const void *v,
				 const void *o, const float *lse, void *workspace, int bh, int t,
				 int d_head, float scale, bool causal, enum st_dtype dtype,
				 cudaStream_t stream)
{
	const void *ptrs[] = { dq, dk, dv, dout, q, k, v, o, workspace };
	flash_args a = {};
	long long rows = (long long)bh * t, n = rows * d_head;
	cudaError_t e;

	if (!flash_args_ok(bh, t, d_head, scale, dtype, ptrs, 9) || !lse || !workspace)
		return cudaErrorInvalidValue;
	if (bh == 0 || t == 0)
		return cudaSuccess;
	a.dq = dq, a.dk = dk, a.dv = dv, a.dout = dout, a.q = q, a.k = k, a.v = v;
	a.lse_in = lse;
	a.dq_acc = (float *)workspace;
	a.drow = (float *)((char *)workspace + align256((size_t)n * sizeof(float)));
	a.bh = bh, a.t = t, a.d = d_head, a.scale = scale, a.causal = causal, a.stream = stream;

	unsigned prep_blocks = (unsigned)((rows + 7) / 8);
	DISPATCH_DTYPE(dtype, E,
		flash_bwd_prep<E><<<prep_blocks, 256, 0, stream>>>(a.drow, a.dq_acc,
			(const E *)dout, (const E *)o, rows, d_head));
	if ((e = cudaGetLastError()) != cudaSuccess)
		return e;
	if ((e = main_pass(a)) != cudaSuccess)
		return e;
	unsigned dq_blocks = (unsigned)(n / 256 + 1 < 132 * 16 ? n / 256 + 1 : 132 * 16);
	DISPATCH_DTYPE(dtype, E,
		flash_bwd_dq<E><<<dq_blocks, 256, 0, stream>>>((E *)dq, a.dq_acc, n, scale));
	return cudaGetLastError();
}

/* The Hopper main pass (flash_attention_sm90.h). */
static cudaError_t bwd_sm90(const flash_args &a)
{
	return flash_sm90_backward(a.dk, a.dv, a.dq_acc, a.dout, a.q, a.k, a.v, a.lse_in, a.drow,
				   a.bh, a.t, a.d, a.scale, a.causal, a.stream);
}

extern "C" cudaError_t flash_attention_backward(void *dq, void *dk, void *dv, const void *dout,
						const void *q, const void *k, const void *v,
						const void *o, const float *lse, void *workspace,
						int bh, int t, int d_head, float scale, bool causal,
						enum st_dtype dtype, cudaStream_t stream)
{
	flash_pass main_pass = dtype != ST_DT_BF16 ? bwd_simt_any<float>
			       : use_sm90(d_head) ? bwd_sm90 : bwd_bf16_any;

	return backward_with(main_pass, dq, dk, dv,
			     dout, q, k, v, o, lse, workspace, bh, t, d_head, scale, causal, dtype,
			     stream);
}

#ifdef FLASH_ATTENTION_VARIANTS
/*
 * Development only (tests/gpu/flash_bench.c, built with
 * -DFLASH_ATTENTION_VARIANTS): other BF16 tile shapes, timed beside the
 * chosen ones. Not part of the library.
 */
struct flash_variant {
	const char *name;
	int d, backward;
	flash_pass pass;
};

static const struct flash_variant flash_variants[] = {
	{ "fwd128 128x32 w4", 128, 0, fwd_bf16<128, 128, 32, 4> },
	{ "fwd128 128x64 w4", 128, 0, fwd_bf16<128, 128, 64, 4> },
	{ "bwd32 128x64 w8", 32, 1, bwd_bf16<32, 128, 64, 8> },
	{ "bwd32 128x32 w4", 32, 1, bwd_bf16<32, 128, 32, 4> },
	{ "bwd64 128x64 w8", 64, 1, bwd_bf16<64, 128, 64, 8> },
	{ "bwd64 128x32 w4", 64, 1, bwd_bf16<64, 128, 32, 4> },
	{ "bwd128 128x64 w8", 128, 1, bwd_bf16<128, 128, 64, 8> },
	{ "bwd128 sp", 128, 1, bwd_bf16_sp<128> },
};

extern "C" int flash_dev_variants(void)
{
	return (int)(sizeof(flash_variants) / sizeof(flash_variants[0]));
}

/* Variant i's name, head size and direction. */
extern "C" const char *flash_dev_variant(int i, int *d, int *backward)
{
	*d = flash_variants[i].d;
	*backward = flash_variants[i].backward;
	return flash_variants[i].name;
}

/* Runs variant i: the forward (o, lse) or the whole backward, BF16. */
extern "C" cudaError_t flash_dev_run(int i, void *o, float *lse, void *dq, void *dk, void *dv,
				     const void *dout, const void *q, const void *k,
				     const void *v, void *workspace, int bh, int t, float scale,
				     bool causal, cudaStream_t stream)
{
	const struct flash_variant *fv = &flash_variants[i];

	if (fv->backward)
		return backward_with(fv->pass, dq, dk, dv, dout, q, k, v, o, lse, workspace, bh, t,
				     fv->d, scale, causal, ST_DT_BF16, stream);
	flash_args a = {};
	a.o = o, a.lse = lse, a.q = q, a.k = k, a.v = v;
	a.bh = bh, a.t = t, a.d = fv->d, a.scale = scale, a.causal = causal, a.stream = stream;
	return fv->pass(a);
}
#endif
