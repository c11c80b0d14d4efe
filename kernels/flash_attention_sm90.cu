/*
 * flash_attention_sm90.cu: the BF16 FlashAttention forward and backward on
 * Hopper's own instructions (compiled for sm_90a only), FlashAttention-3's
 * design: warp specialisation. A forward CTA takes 64 query rows of one
 * head per consumer warpgroup (two, or three for d_head 64 on large grids)
 * plus a producer warpgroup, whose one thread loads Q once and every K and
 * V tile with TMA bulk copies (cp.async.bulk.tensor, 128-byte swizzle,
 * completion counted on mbarriers) into a two-stage ring; the consumers
 * compute S = Q K^T with wgmma from shared memory, the online softmax in
 * registers, and O += P V with wgmma taking P from registers (the S
 * accumulator's layout is the A operand's) and V N-major from shared
 * memory; a tile's P V is issued with the next tile's Q K^T, so the two run
 * back to back on the tensor cores while another consumer does its
 * softmax. A consumer releases a stage as soon as its products have read
 * it, so the producer's next loads run under the softmax. The backward
 * (flash_bwd_sm90, below) has a producer and two consumers over 128 keys a
 * CTA. Design notes and measurements: flash_attention.notes.md.
 *
 * d_head is padded to 64 or 128 (TMA fills the columns past d_head with
 * zeros, which add nothing to Q K^T; P V's extra columns are not stored),
 * rows past t likewise. Same contract as flash_attention_forward
 * (flash_attention.h): head-major (bh, t, d_head) BF16, lse natural log.
 */
#include <stdint.h>

#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include "kernels/flash_attention_sm90.h"

namespace {

constexpr int BN = 128;     /* keys a tile */
constexpr int STAGES = 2;   /* K and V tiles in flight */
constexpr int BWD_THREADS = 384;  /* the backward: a producer and two consumer warpgroups */

/*
 * The forward: NC consumer warpgroups of 64 query rows each: two, or three
 * for d_head 64 on grids that fill the GPU twice (more softmax to hide
 * behind each tile's products; for 128 O's 64 registers a thread leave no
 * room).
 */
template <int D, int NC_, int BN_ = BN> struct sm90_layout {
	static constexpr int NC = NC_;
	static constexpr int KN = BN_;                    /* keys a tile: 128, or 176 (d_head 128 unmasked) */
	static constexpr int BM = 64 * NC;                /* query rows a CTA */
	static constexpr int THREADS = 128 * (NC + 1);
	static constexpr int ATOMS = D / 64;              /* 128-byte column blocks */
	static constexpr int Q_BYTES = BM * D * 2;
	static constexpr int KV_BYTES = KN * D * 2;       /* one of K or V, one stage */
	static constexpr int Q_OFF = 0;
	static constexpr int K_OFF = Q_BYTES;
	static constexpr int V_OFF = K_OFF + STAGES * KV_BYTES;
	static constexpr int BAR_OFF = V_OFF + STAGES * KV_BYTES;
	static constexpr int SMEM = BAR_OFF + 8 * (1 + 4 * STAGES) + 1024;  /* + alignment */
};

/* Device code for sm_90a only (wgmma, setmaxnreg); other targets get an empty kernel. */
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
constexpr float LN2 = 0.69314718055994530942f;

__device__ __forceinline__ uint32_t smem_u32(const void *p)
{
	return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count)
{
	asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}

__device__ __forceinline__ void mbar_expect_tx(uint32_t bar, uint32_t bytes)
{
	asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes)
		     : "memory");
}

__device__ __forceinline__ void mbar_arrive(uint32_t bar)
{
	asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
}

/* Until the phase of the given parity has completed. */
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity)
{
	uint32_t done;

	do {
		asm volatile("{\n.reg .pred p;\n"
			     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
			     "selp.u32 %0, 1, 0, p;\n}\n"
			     : "=r"(done)
			     : "r"(bar), "r"(parity)
			     : "memory");
	} while (!done);
}

/* One box of a 3-D tensor map (columns, rows, head) into shared memory, counted on bar. */
__device__ __forceinline__ void tma_load(uint32_t dst, const CUtensorMap *map, int c0, int c1,
					 int c2, uint32_t bar)
{
	asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
		     " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
		     "l"((uint64_t)map), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
		     : "memory");
}

/*
 * Shared-memory matrix descriptor, 128-byte swizzle: start address, leading
 * and stride byte offsets (each >> 4), layout type 1 in bits 62-63.
 */
__device__ __forceinline__ uint64_t desc_sw128(uint32_t addr, uint32_t lbo, uint32_t sbo)
{
	return (uint64_t)((addr & 0x3FFFF) >> 4) | ((uint64_t)(lbo >> 4) << 16) |
	       ((uint64_t)(sbo >> 4) << 32) | (1ull << 62);
}

__device__ __forceinline__ void wgmma_fence()
{
	asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_commit()
{
	asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
}

__device__ __forceinline__ void wgmma_wait0()
{
	asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
}

/* All but the most recently committed group done. */
__device__ __forceinline__ void wgmma_wait1()
{
	asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
}

/* Keeps the compiler from moving reads or writes of an accumulator across a wgmma wait. */
template <int N> __device__ __forceinline__ void reg_fence(float (&r)[N])
{
#pragma unroll
	for (int i = 0; i < N; i++)
		asm volatile("" : "+f"(r[i])::"memory");
}

__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi)
{
	__nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);

	return *(uint32_t *)&v;
}

/* d (64 x 128, this thread's 64) += A (smem, K-major) B (smem, K-major)^T; d = A B when !acc */
__device__ __forceinline__ void wgmma_ss_n128(float (&d)[64], uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16 "
		     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
		     "%64, %65, p, 1, 1, 0, 0;\n}\n"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
		     : "l"(da), "l"(db), "r"(acc));
}

/* d (64 x 176, this thread's 88) += A (smem, K-major) B (smem, K-major)^T; d = A B when !acc */
__device__ __forceinline__ void wgmma_ss_n176(float (&d)[88], uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %90, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n176k16.f32.bf16.bf16 "
		     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63, %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, %76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87}, "
		     "%88, %89, p, 1, 1, 0, 0;\n}\n"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]), "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]), "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]), "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]), "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63]), "+f"(d[64]), "+f"(d[65]), "+f"(d[66]), "+f"(d[67]), "+f"(d[68]), "+f"(d[69]), "+f"(d[70]), "+f"(d[71]), "+f"(d[72]), "+f"(d[73]), "+f"(d[74]), "+f"(d[75]), "+f"(d[76]), "+f"(d[77]), "+f"(d[78]), "+f"(d[79]), "+f"(d[80]), "+f"(d[81]), "+f"(d[82]), "+f"(d[83]), "+f"(d[84]), "+f"(d[85]), "+f"(d[86]), "+f"(d[87])
		     : "l"(da), "l"(db), "r"(acc));
}

/* d (64 x 64, this thread's 32) += A (registers, BF16 pairs) B (smem, N-major) */
__device__ __forceinline__ void wgmma_rs_n64(float (&d)[32], const uint32_t (&a)[4], uint64_t db)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
		     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
		     "{%32, %33, %34, %35}, %36, p, 1, 1, 1;\n}\n"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
		     : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1));
}

/* d (64 x 64, this thread's 32) += A (smem, K-major) B (smem, K-major)^T; d = A B when !acc */
__device__ __forceinline__ void wgmma_ss_n64(float (&d)[32], uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
		     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
		     "%32, %33, p, 1, 1, 0, 0;\n}\n"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
		     : "l"(da), "l"(db), "r"(acc));
}

/* d (64 x 64, this thread's 32) += A (smem, M-major) B (smem, N-major); d = A B when !acc */
__device__ __forceinline__ void wgmma_ss_mn_n64(float (&d)[32], uint64_t da, uint64_t db, int acc)
{
	asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"
		     "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
		     "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
		     "%32, %33, p, 1, 1, 1, 1;\n}\n"
		     : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
		     : "l"(da), "l"(db), "r"(acc));
}

#endif

/*
 * Grid (query blocks, bh); causal grids take the longest blocks first.
 * Smem: Q (ATOMS column blocks of BM rows x 128 B), STAGES K tiles and
 * STAGES V tiles (ATOMS blocks of BN rows x 128 B each), then the mbarriers:
 * q_full, k_full[S], v_full[S], k_empty[S], v_empty[S].
 */
template <int D, int NC, int KN = BN>
__global__ void __launch_bounds__(sm90_layout<D, NC, KN>::THREADS, 1)
flash_fwd_sm90(__nv_bfloat16 *__restrict__ o, float *__restrict__ lse,
	       const __grid_constant__ CUtensorMap qmap, const __grid_constant__ CUtensorMap kmap,
	       const __grid_constant__ CUtensorMap vmap, int t, int d, float scale_log2,
	       int causal)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	typedef sm90_layout<D, NC, KN> L;
	constexpr int SN = KN / 2, PK = KN / 16;   /* a thread's scores, and P's 16-key blocks */
	extern __shared__ __align__(1024) unsigned char smem_raw[];
	const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
	const uint32_t sq = base + L::Q_OFF, sk = base + L::K_OFF, sv = base + L::V_OFF;
	const uint32_t bars = base + L::BAR_OFF;
	const uint32_t q_full = bars;
	auto k_full = [&](int s) { return bars + 8 * (1 + s); };
	auto v_full = [&](int s) { return bars + 8 * (1 + STAGES + s); };
	auto k_empty = [&](int s) { return bars + 8 * (1 + 2 * STAGES + s); };
	auto v_empty = [&](int s) { return bars + 8 * (1 + 3 * STAGES + s); };

	/* heads on x: every head's costliest causal block is dispatched before any cheaper one */
	const int mb = causal ? (int)gridDim.y - 1 - (int)blockIdx.y : (int)blockIdx.y;
	const int m0 = mb * L::BM, head = blockIdx.x;
	const int kv_end = causal ? min(t, m0 + L::BM) : t;
	const int tiles = (kv_end + KN - 1) / KN;
	const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;

	if (threadIdx.x == 0) {
		mbar_init(q_full, 1);
		for (int s = 0; s < STAGES; s++) {
			mbar_init(k_full(s), 1);
			mbar_init(v_full(s), 1);
			mbar_init(k_empty(s), 128 * L::NC);
			mbar_init(v_empty(s), 128 * L::NC);
		}
		asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
		asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
	}
	__syncthreads();

	if (wg == 0) {
		/* producer: one thread issues every copy */
		asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
		if (tid != 0)
			return;
		mbar_expect_tx(q_full, L::Q_BYTES);
		for (int a = 0; a < L::ATOMS; a++)
			tma_load(sq + a * L::BM * 128, &qmap, a * 64, m0, head, q_full);
		for (int j = 0; j < tiles; j++) {
			int s = j % STAGES;
			uint32_t ph = (j / STAGES) & 1;

			mbar_wait(k_empty(s), ph ^ 1);
			mbar_expect_tx(k_full(s), L::KV_BYTES);
			for (int a = 0; a < L::ATOMS; a++)
				tma_load(sk + s * L::KV_BYTES + a * KN * 128, &kmap, a * 64, j * KN,
					 head, k_full(s));
			mbar_wait(v_empty(s), ph ^ 1);
			mbar_expect_tx(v_full(s), L::KV_BYTES);
			for (int a = 0; a < L::ATOMS; a++)
				tma_load(sv + s * L::KV_BYTES + a * KN * 128, &vmap, a * 64, j * KN,
					 head, v_full(s));
		}
		return;
	}

	/* consumers: warpgroup c (1 .. NC) owns query rows m0 + 64 (c - 1) ... + 63 */
	if (L::NC == 3)
		asm volatile("setmaxnreg.inc.sync.aligned.u32 160;\n");
	else
		asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n");
	const int warp = tid / 32, lane = tid % 32, g = lane / 4, tq = lane % 4;
	const int wrow0 = m0 + 64 * (wg - 1);            /* the warpgroup's first row */
	const int row0 = wrow0 + warp * 16 + g;          /* this thread's rows: row0, row0 + 8 */
	const uint32_t sq_wg = sq + (wg - 1) * 64 * 128;

	float acc[L::ATOMS][32];
	float mx[2] = { -INFINITY, -INFINITY }, l[2] = { 0.0f, 0.0f };
#pragma unroll
	for (int a = 0; a < L::ATOMS; a++)
#pragma unroll
		for (int i = 0; i < 32; i++)
			acc[a][i] = 0.0f;

	/* S = Q K^T for tile j, issued (not waited for) */
	auto issue_s = [&](float (&sc)[SN], int j) {
		const int s = j % STAGES;
		mbar_wait(k_full(s), (j / STAGES) & 1);
#pragma unroll
		for (int kk = 0; kk < D / 16; kk++) {
			uint32_t qa = sq_wg + (kk / 4) * L::BM * 128 + (kk % 4) * 32;
			uint32_t ka = sk + s * L::KV_BYTES + (kk / 4) * KN * 128 + (kk % 4) * 32;

			if constexpr (KN == 176)
				wgmma_ss_n176(sc, desc_sw128(qa, 16, 1024), desc_sw128(ka, 16, 1024), kk > 0);
			else
				wgmma_ss_n128(sc, desc_sw128(qa, 16, 1024), desc_sw128(ka, 16, 1024), kk > 0);
		}
		wgmma_commit();
	};
	/*
	 * The online softmax of tile j's scores (units of log2), first part: the
	 * masks, the new row maxima and O's rescaling factors (alpha), P in sc
	 * and the row sums; it touches neither O nor pa, so it runs while the
	 * previous tile's P V is still on the tensor cores.
	 */
	auto softmax = [&](float (&sc)[SN], float (&alpha)[2], int j) {
		const int n0 = j * KN;
		if (n0 + KN > t || (causal && n0 + KN - 1 > wrow0)) {
			/* keys past t and, when causal, past the row */
#pragma unroll
			for (int jn = 0; jn < KN / 8; jn++)
#pragma unroll
				for (int e = 0; e < 4; e++) {
					int col = n0 + jn * 8 + 2 * tq + (e & 1);
					int row = row0 + (e >> 1) * 8;
					if (col >= t || (causal && col > row))
						sc[jn * 4 + e] = -INFINITY;
				}
		}
#pragma unroll
		for (int h = 0; h < 2; h++) {
			float m = mx[h];
#pragma unroll
			for (int jn = 0; jn < KN / 8; jn++)
				m = fmaxf(m, fmaxf(sc[jn * 4 + 2 * h], sc[jn * 4 + 2 * h + 1]) * scale_log2);
			m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 1));
			m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, 2));
			alpha[h] = exp2f(mx[h] - m);
			mx[h] = m;
			float sum = 0.0f;
#pragma unroll
			for (int jn = 0; jn < KN / 8; jn++)
#pragma unroll
				for (int e = 0; e < 2; e++) {
					float p = exp2f(sc[jn * 4 + 2 * h + e] * scale_log2 - m);
					sc[jn * 4 + 2 * h + e] = p;
					sum += p;
				}
			l[h] = l[h] * alpha[h] + sum;
		}
	};
	/* ... and the second, once that P V is done: O rescaled, P into pa (P V's A operand) */
	auto rescale_pack = [&](const float (&sc)[SN], uint32_t (&pa)[PK][4], const float (&alpha)[2]) {
#pragma unroll
		for (int a = 0; a < L::ATOMS; a++)
#pragma unroll
			for (int i = 0; i < 32; i++)
				acc[a][i] *= alpha[(i >> 1) & 1];
#pragma unroll
		for (int kk = 0; kk < PK; kk++)
#pragma unroll
			for (int r = 0; r < 4; r++)
				pa[kk][r] = pack_bf16(sc[8 * kk + 2 * r], sc[8 * kk + 2 * r + 1]);
	};

	/*
	 * Tile j + 1's Q K^T is issued together with tile j's P V, so the tensor
	 * cores run both back to back while the other warpgroup does its softmax.
	 * With two consumers the two take turns to issue (named barriers 4 and
	 * 5, FlashAttention-3's ping-pong): one's products queue behind the
	 * other's, so its softmax overlaps them rather than the other's softmax.
	 * Within each of two warpgroups (FlashAttention-3's intra-warpgroup
	 * overlap), Q K^T goes first and the softmax of its scores waits for it
	 * alone (wgmma.wait_group 1), so the exponentials run beside the
	 * warpgroup's own P V; O's rescaling and P's packing wait for that P V
	 * (on an H200, d_head 128 forward 2-4% faster from 8k up,
	 * kernels/flash_attention.notes.md).
	 */
	const int w = wg - 1;
	auto turn_wait = [&] {
		if (L::NC == 2)
			asm volatile("bar.sync %0, 256;\n" ::"r"(4 + w) : "memory");
	};
	auto turn_pass = [&] {
		if (L::NC == 2)
			asm volatile("bar.arrive %0, 256;\n" ::"r"(5 - w) : "memory");
	};
	if (L::NC == 2 && w == 1)
		asm volatile("bar.arrive 4, 256;\n" ::: "memory");   /* the first turn is warpgroup 0's */
	float sc[SN], alpha[2];
	uint32_t pa[PK][4];
	mbar_wait(q_full, 0);
	turn_wait();
	wgmma_fence();
	issue_s(sc, 0);
	turn_pass();
	wgmma_wait0();
	reg_fence(sc);
	mbar_arrive(k_empty(0));
	softmax(sc, alpha, 0);
	rescale_pack(sc, pa, alpha);
	/* tile j's P V into O */
	auto issue_pv = [&](int j) {
		const int s = j % STAGES;
#pragma unroll
		for (int kk = 0; kk < PK; kk++)
#pragma unroll
			for (int a = 0; a < L::ATOMS; a++) {
				uint32_t va = sv + s * L::KV_BYTES + a * KN * 128 + kk * 2048;
				wgmma_rs_n64(acc[a], pa[kk], desc_sw128(va, 1024, 1024));
			}
		wgmma_commit();
	};
	if constexpr (L::NC == 3) {
		/*
		 * Three consumers (d_head 64 on large grids; no ping-pong): each
		 * waits for both products before its softmax; the overlap below
		 * made them 3-5% slower at 16k-64k on an H200 (160 registers a
		 * thread leave it no room).
		 */
		for (int j = 0; j < tiles; j++) {
			const int s = j % STAGES;
			const bool next = j + 1 < tiles;

			mbar_wait(v_full(s), (j / STAGES) & 1);
			wgmma_fence();
			issue_pv(j);
			if (next)
				issue_s(sc, j + 1);
			wgmma_wait0();
#pragma unroll
			for (int a = 0; a < L::ATOMS; a++)
				reg_fence(acc[a]);
			reg_fence(sc);
			mbar_arrive(v_empty(s));
			if (next) {
				mbar_arrive(k_empty((j + 1) % STAGES));
				softmax(sc, alpha, j + 1);
				rescale_pack(sc, pa, alpha);
			}
		}
	} else {
		/* every tile but the last: no branch around the products (ptxas would serialise them) */
		for (int j = 0; j + 1 < tiles; j++) {
			const int s = j % STAGES;

			mbar_wait(v_full(s), (j / STAGES) & 1);
			turn_wait();
			wgmma_fence();
			issue_s(sc, j + 1);
			issue_pv(j);
			turn_pass();
			wgmma_wait1();   /* Q K^T done (P V may not be): the softmax beside P V */
			reg_fence(sc);
			mbar_arrive(k_empty((j + 1) % STAGES));
			softmax(sc, alpha, j + 1);
			wgmma_wait0();
#pragma unroll
			for (int a = 0; a < L::ATOMS; a++)
				reg_fence(acc[a]);
			mbar_arrive(v_empty(s));
			reg_fence(sc);   /* P's packing into pa (P V's operand) after that wait, not before */
			rescale_pack(sc, pa, alpha);
		}
		{
			const int j = tiles - 1, s = j % STAGES;

			mbar_wait(v_full(s), (j / STAGES) & 1);
			turn_wait();
			wgmma_fence();
			issue_pv(j);
			if (w == 0)   /* every wait is matched: warpgroup 1 leaves its last turn unpassed */
				turn_pass();
			wgmma_wait0();
#pragma unroll
			for (int a = 0; a < L::ATOMS; a++)
				reg_fence(acc[a]);
			mbar_arrive(v_empty(s));
		}
	}

	/* the row sums over the quad, then O / l and the log-sum-exp */
#pragma unroll
	for (int h = 0; h < 2; h++) {
		l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
		l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
	}
#pragma unroll
	for (int h = 0; h < 2; h++) {
		int row = row0 + 8 * h;
		if (row >= t)
			continue;
		float inv = 1.0f / l[h];
		__nv_bfloat16 *orow = o + ((size_t)head * t + row) * d;
#pragma unroll
		for (int a = 0; a < L::ATOMS; a++)
#pragma unroll
			for (int jn = 0; jn < 8; jn++) {
				int col = a * 64 + jn * 8 + 2 * tq;
				if (col < d)
					*(uint32_t *)(orow + col) =
						pack_bf16(acc[a][jn * 4 + 2 * h] * inv,
							  acc[a][jn * 4 + 2 * h + 1] * inv);
			}
		if (lse && tq == 0)
			lse[(size_t)head * t + row] = (mx[h] + log2f(l[h])) * LN2;
	}
#endif
}

constexpr int BKEYS = 128;  /* keys a backward CTA: two consumer warpgroups of 64 */
constexpr int BQ = 64;      /* queries a backward tile */

template <int D> struct sm90_bwd_layout {
	static constexpr int ATOMS = D / 64;
	static constexpr int KV_BYTES = BKEYS * D * 2;   /* K or V */
	static constexpr int QT_BYTES = BQ * D * 2;      /* one Q or dO tile */
	static constexpr int DS_BYTES = BKEYS * BQ * 2;  /* dS^T, one of two buffers */
	static constexpr int K_OFF = 0;
	static constexpr int V_OFF = KV_BYTES;
	static constexpr int Q_OFF = 2 * KV_BYTES;
	static constexpr int DO_OFF = Q_OFF + STAGES * QT_BYTES;
	static constexpr int DS_OFF = DO_OFF + STAGES * QT_BYTES;
	/* a tile's lse (times log2 e) and D as float4 {lse r, lse r + 1, D r, D r + 1}, r even */
	static constexpr int LSE_OFF = DS_OFF + 2 * DS_BYTES;
	static constexpr int DQ_OFF = LSE_OFF + STAGES * BQ * 8;  /* 1024-aligned: 2 KB */
	static constexpr int DQ_BYTES = BQ * 64 * 4;     /* a warpgroup's dQ tile, FP32, two each */
	static constexpr int BAR_OFF = DQ_OFF + 4 * DQ_BYTES;
	/* kv_full, full[S], empty[S], then dq_full[2][2] and dq_empty[2][2] (warpgroup, buffer) */
	static constexpr int SMEM = BAR_OFF + 8 * (1 + 2 * STAGES + 8) + 1024;
};

/* Hopper's most dynamic shared memory for one block: 227 KiB. */
static_assert(sm90_bwd_layout<128>::SMEM <= 227 * 1024, "the d_head 128 backward's shared memory");
static_assert(sm90_layout<128, 2, 176>::SMEM <= 227 * 1024, "the d_head 128 forward's shared memory at 176 keys");

/*
 * The backward's main pass (flash_attention.cu computes D = rowsum(dO o O)
 * and zeroes dq_acc before, scales dq_acc into dq after). Grid (key
 * blocks of 128, bh). The producer warp loads K and V once, then for each
 * query tile of 64 (from the block's diagonal when causal) Q and dO by TMA
 * and the tile's lse (times log2 e) and D into shared memory. Consumer
 * warpgroup w owns keys n0 + 64 w ... + 63: S^T = K Q^T and dP^T = V dO^T
 * (wgmma, shared memory), P^T and dS^T = P^T (dP^T - D) in registers, dV +=
 * P^T dO and dK += dS^T Q (wgmma, A from registers, dO and Q N-major); dS^T
 * goes to shared memory in the swizzled layout wgmma reads M-major, and dQ
 * += dS K (wgmma, both operands transposed) is staged in shared memory and
 * added to dq_acc with TMA bulk reduce-adds: for d_head 128 each warpgroup
 * takes 64 columns of dQ over all 128 keys (the two meet at a named
 * barrier) and issues its own, for 64 each its own keys, and the producer
 * warpgroup's second warp issues them.
 */
template <int D>
__global__ void __launch_bounds__(BWD_THREADS, 1)
flash_bwd_sm90(__nv_bfloat16 *__restrict__ dk, __nv_bfloat16 *__restrict__ dv,
	       float *__restrict__ dq_acc, const float *__restrict__ lse,
	       const float *__restrict__ drow, const __grid_constant__ CUtensorMap qmap,
	       const __grid_constant__ CUtensorMap kmap, const __grid_constant__ CUtensorMap vmap,
	       const __grid_constant__ CUtensorMap domap, const __grid_constant__ CUtensorMap dqmap,
	       int t, int d, float scale, int causal)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
	typedef sm90_bwd_layout<D> L;
	extern __shared__ __align__(1024) unsigned char smem_raw[];
	const uint32_t base = (smem_u32(smem_raw) + 1023) & ~1023u;
	unsigned char *gbase = smem_raw + (base - smem_u32(smem_raw));
	float4 *lsdr_s = (float4 *)(gbase + L::LSE_OFF);
	const uint32_t sk = base + L::K_OFF, sv = base + L::V_OFF, sq = base + L::Q_OFF;
	const uint32_t sdo = base + L::DO_OFF, sds = base + L::DS_OFF;
	const uint32_t bars = base + L::BAR_OFF, kv_full = bars;
	const uint32_t sdq0 = base + L::DQ_OFF + (threadIdx.x / 128 - 1) * 2 * L::DQ_BYTES;
	auto full = [&](int s) { return bars + 8 * (1 + s); };
	auto empty = [&](int s) { return bars + 8 * (1 + STAGES + s); };
	auto dq_full = [&](int w, int b) { return bars + 8 * (1 + 2 * STAGES + 2 * w + b); };
	auto dq_empty = [&](int w, int b) { return bars + 8 * (5 + 2 * STAGES + 2 * w + b); };

	/* heads on x: the first key blocks, the costliest under a causal mask, dispatched first */
	const int n0 = blockIdx.y * BKEYS, head = blockIdx.x;
	const int q_begin = causal ? n0 / BQ : 0, q_end = (t + BQ - 1) / BQ;
	const int tiles = q_end - q_begin;
	const int wg = threadIdx.x / 128, tid = threadIdx.x % 128;
	const float scale_log2 = scale * 1.44269504088896340736f;
	/*
	 * a dQ writer warp at d_head 64 (flash_bench: backward 1.63 -> 1.59 ms
	 * at 16k); at 128, where the consumers already meet before dQ, it was
	 * slower (2.47-2.71 -> 2.76), so there the consumers issue the reduces
	 */
	constexpr bool WRITER = D == 64;

	if (threadIdx.x == 0) {
		mbar_init(kv_full, 1);
		for (int s = 0; s < STAGES; s++) {
			mbar_init(full(s), 1 + 32);
			mbar_init(empty(s), 256);
		}
		for (int i = 0; i < 4; i++) {
			mbar_init(dq_full(i / 2, i % 2), 128);
			mbar_init(dq_empty(i / 2, i % 2), 1);
		}
		asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
		asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
	}
	__syncthreads();

	if (wg == 0) {
		/*
		 * producer: warp 0; lane 0 issues the copies, every lane fills lse
		 * and D. With WRITER, warp 1's lane 0 writes dQ: as each consumer's
		 * tile lands in one of its two staging buffers, it adds it to dq_acc
		 * by a bulk tensor reduce-add, and frees a buffer once its reduce
		 * has read it.
		 */
		asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
		if (WRITER && tid == 32) {
			const uint32_t sdq_base = base + L::DQ_OFF;
			for (int it = 0; it < tiles; it++) {
				const int b = it & 1, m0 = (q_begin + it) * BQ;
				for (int w = 0; w < 2; w++) {
					const uint32_t src = sdq_base + (2 * w + b) * L::DQ_BYTES;
					const int col0 = D == 128 ? 64 * w : 0;
					mbar_wait(dq_full(w, b), (it >> 1) & 1);
					for (int x = 0; x < 2; x++)
						asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group"
							     " [%0, {%1, %2, %3}], [%4];\n" ::"l"((uint64_t)&dqmap),
							     "r"(col0 + 32 * x), "r"(m0), "r"(head),
							     "r"(src + x * (BQ * 128))
							     : "memory");
					asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
				}
				/* this tile's two reduces may still be reading; the last tile's have read */
				asm volatile("cp.async.bulk.wait_group.read 2;\n" ::: "memory");
				if (it > 0)
					for (int w = 0; w < 2; w++)
						mbar_arrive(dq_empty(w, b ^ 1));
			}
			asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");
			return;
		}
		if (tid >= 32)
			return;
		const int lane = tid;
		if (lane == 0) {
			mbar_expect_tx(kv_full, 2 * L::KV_BYTES);
			for (int a = 0; a < L::ATOMS; a++) {
				tma_load(sk + a * BKEYS * 128, &kmap, a * 64, n0, head, kv_full);
				tma_load(sv + a * BKEYS * 128, &vmap, a * 64, n0, head, kv_full);
			}
		}
		/* lane p: rows 2p and 2p + 1 of a tile, read from global a tile ahead */
		float4 next;
		auto fetch = [&](int it) {
			const int q = (q_begin + it) * BQ + 2 * lane;
			const float *lr = lse + (size_t)head * t, *dr = drow + (size_t)head * t;
			next.x = q < t ? lr[q] * 1.44269504088896340736f : INFINITY;
			next.y = q + 1 < t ? lr[q + 1] * 1.44269504088896340736f : INFINITY;
			next.z = q < t ? dr[q] : 0.0f;
			next.w = q + 1 < t ? dr[q + 1] : 0.0f;
		};
		fetch(0);
		for (int it = 0; it < tiles; it++) {
			const int s = it % STAGES, m0 = (q_begin + it) * BQ;
			const uint32_t ph = (it / STAGES) & 1;

			mbar_wait(empty(s), ph ^ 1);
			if (lane == 0) {
				mbar_expect_tx(full(s), 2 * L::QT_BYTES);
				for (int a = 0; a < L::ATOMS; a++) {
					tma_load(sq + s * L::QT_BYTES + a * BQ * 128, &qmap, a * 64, m0,
						 head, full(s));
					tma_load(sdo + s * L::QT_BYTES + a * BQ * 128, &domap, a * 64, m0,
						 head, full(s));
				}
			}
			lsdr_s[s * (BQ / 2) + lane] = next;
			mbar_arrive(full(s));
			if (it + 1 < tiles)
				fetch(it + 1);
		}
		return;
	}

	asm volatile("setmaxnreg.inc.sync.aligned.u32 240;\n");
	const int w = wg - 1, warp = tid / 32, lane = tid % 32, g = lane / 4, tq = lane % 4;
	const int kw0 = n0 + 64 * w;                      /* the warpgroup's first key */
	const int krow = warp * 16 + g;                   /* this thread's keys: kw0 + krow (+8) */

	float dka[L::ATOMS][32], dva[L::ATOMS][32];
#pragma unroll
	for (int a = 0; a < L::ATOMS; a++)
#pragma unroll
		for (int i = 0; i < 32; i++)
			dka[a][i] = dva[a][i] = 0.0f;

	mbar_wait(kv_full, 0);
	for (int it = 0; it < tiles; it++) {
		const int s = it % STAGES, m0 = (q_begin + it) * BQ;
		const uint32_t ph = (it / STAGES) & 1;
		const uint32_t qs = sq + s * L::QT_BYTES, dos = sdo + s * L::QT_BYTES;
		const uint32_t dsb = sds + (it & 1) * L::DS_BYTES;
		float st[32], dp[32];

		/* acc = this warpgroup's 64 keys of kv (K-major) times the tile qt^T, one group */
		auto issue_t = [&](float (&acc)[32], uint32_t kv, uint32_t qt) {
#pragma unroll
			for (int kk = 0; kk < D / 16; kk++) {
				uint32_t off = (kk / 4) * BKEYS * 128 + w * 64 * 128 + (kk % 4) * 32;
				uint32_t qoff = (kk / 4) * BQ * 128 + (kk % 4) * 32;
				wgmma_ss_n64(acc, desc_sw128(kv + off, 16, 1024),
					     desc_sw128(qt + qoff, 16, 1024), kk > 0);
			}
			wgmma_commit();
		};

		mbar_wait(full(s), ph);
		wgmma_fence();
		issue_t(st, sk, qs);   /* S^T = K Q^T */
		issue_t(dp, sv, dos);  /* dP^T = V dO^T */

		/*
		 * the tile's lse and D for this thread's columns: for d_head 128 read
		 * while the products run, for 64 after S^T (flash_bench: faster so)
		 */
		constexpr bool early = D == 128;
		float4 lsdr[8];
		if (early)
#pragma unroll
			for (int j = 0; j < 8; j++)
				lsdr[j] = lsdr_s[s * (BQ / 2) + 4 * j + tq];

		/* P^T while dP^T is still being computed: rows keys kw0 + krow (+8), columns queries m0 + 8 j + 2 tq (+1) */
		wgmma_wait1();
		reg_fence(st);
		if (!early)
#pragma unroll
			for (int j = 0; j < 8; j++)
				lsdr[j] = lsdr_s[s * (BQ / 2) + 4 * j + tq];
		const bool mask = causal && m0 < kw0 + 64;
#pragma unroll
		for (int j = 0; j < 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++) {
				int c = 8 * j + 2 * tq + (e & 1);
				int key = kw0 + krow + 8 * (e >> 1);
				float p = exp2f(st[4 * j + e] * scale_log2 - ((e & 1) ? lsdr[j].y : lsdr[j].x));
				st[4 * j + e] = mask && key > m0 + c ? 0.0f : p;
			}
		uint32_t pa[4][4], da[4][4];
#pragma unroll
		for (int kk = 0; kk < 4; kk++)
#pragma unroll
			for (int r = 0; r < 4; r++)
				pa[kk][r] = pack_bf16(st[8 * kk + 2 * r], st[8 * kk + 2 * r + 1]);
		wgmma_wait0();
		reg_fence(dp);
		/* dS^T = P^T (dP^T - D) */
#pragma unroll
		for (int j = 0; j < 8; j++)
#pragma unroll
			for (int e = 0; e < 4; e++)
				dp[4 * j + e] = st[4 * j + e] *
						(dp[4 * j + e] - ((e & 1) ? lsdr[j].w : lsdr[j].z));
#pragma unroll
		for (int kk = 0; kk < 4; kk++)
#pragma unroll
			for (int r = 0; r < 4; r++)
				da[kk][r] = pack_bf16(dp[8 * kk + 2 * r], dp[8 * kk + 2 * r + 1]);

		/* dS^T into shared memory: key row 64 w + krow (+8), 128-byte rows of 64 queries, swizzled */
#pragma unroll
		for (int j = 0; j < 8; j++)
#pragma unroll
			for (int h = 0; h < 2; h++) {
				uint32_t r = 64 * w + krow + 8 * h;
				uint32_t addr = dsb + r * 128 + ((j ^ (r & 7)) << 4) + 4 * tq;
				asm volatile("st.shared.b32 [%0], %1;\n" ::"r"(addr),
					     "r"(da[j / 2][(j & 1) * 2 + h]));
			}
		asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");

		/*
		 * dQ (64 queries x 64 columns) = dS K over 128 keys (d 128) or this
		 * warpgroup's 64 first, then dV += P^T dO and dK += dS^T Q behind it:
		 * dQ goes out to shared memory while the tensor cores do dV and dK
		 */
		if (D == 128)
			asm volatile("bar.sync 1, 256;\n" ::: "memory");
		else
			asm volatile("bar.sync %0, 128;\n" ::"r"(2 + w) : "memory");
		constexpr int DQ_KEYS = D == 128 ? BKEYS : 64;
		const uint32_t ds_a = D == 128 ? dsb : dsb + w * 64 * 128;
		const uint32_t k_b = D == 128 ? sk + w * BKEYS * 128 : sk + w * 64 * 128;
		float dq[32];
		wgmma_fence();
#pragma unroll
		for (int kk = 0; kk < DQ_KEYS / 16; kk++)
			wgmma_ss_mn_n64(dq, desc_sw128(ds_a + kk * 2048, 1024, 1024),
					desc_sw128(k_b + kk * 2048, 1024, 1024), kk > 0);
		wgmma_commit();
#pragma unroll
		for (int kk = 0; kk < 4; kk++)
#pragma unroll
			for (int a = 0; a < L::ATOMS; a++) {
				wgmma_rs_n64(dva[a], pa[kk],
					     desc_sw128(dos + a * BQ * 128 + kk * 2048, 1024, 1024));
				wgmma_rs_n64(dka[a], da[kk],
					     desc_sw128(qs + a * BQ * 128 + kk * 2048, 1024, 1024));
			}
		wgmma_commit();
		wgmma_wait1();
		reg_fence(dq);
		/*
		 * dq_acc += the tile: into one of this warpgroup's two staging
		 * buffers as two 32-column boxes of the FP32 tensor map (128-byte
		 * swizzle), then one bulk reduce-add each, issued by the dQ writer
		 * warp (WRITER) or by thread 0 (rows past t and columns past d are
		 * clipped). In
		 * store i of a box, lanes with tq & 2 take column group i ^ 2, the
		 * others i: a half-warp's sixteen 8-byte stores fill all 32 banks once.
		 */
		const uint32_t sdq = sdq0 + (it & 1) * L::DQ_BYTES;   /* a reduce may still read the other */
		if (WRITER) {
			mbar_wait(dq_empty(w, it & 1), ((it >> 1) & 1) ^ 1);
		} else {
			if (tid == 0)
				asm volatile("cp.async.bulk.wait_group.read 1;\n" ::: "memory");
			asm volatile("bar.sync %0, 128;\n" ::"r"(2 + w) : "memory");
		}
		const bool hi = tq & 2;
#pragma unroll
		for (int h = 0; h < 2; h++)
#pragma unroll
			for (int jb = 0; jb < 2; jb++)
#pragma unroll
				for (int i = 0; i < 4; i++) {
					const int j0 = 4 * jb + i, j1 = 4 * jb + (i ^ 2);
					float v0 = hi ? dq[4 * j1 + 2 * h] : dq[4 * j0 + 2 * h];
					float v1 = hi ? dq[4 * j1 + 2 * h + 1] : dq[4 * j0 + 2 * h + 1];
					uint32_t row = warp * 16 + g + 8 * h;
					uint32_t chunk = 2 * (i ^ (hi ? 2 : 0)) + tq / 2;
					uint32_t addr = sdq + jb * (BQ * 128) + row * 128 +
							((chunk ^ (row & 7)) << 4) + (tq & 1) * 8;
					asm volatile("st.shared.v2.f32 [%0], {%1, %2};\n" ::"r"(addr),
						     "f"(v0), "f"(v1)
						     : "memory");
				}
		asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
		if (WRITER) {
			mbar_arrive(dq_full(w, it & 1));
		} else {
			asm volatile("bar.sync %0, 128;\n" ::"r"(2 + w) : "memory");
			if (tid == 0) {
				for (int b = 0; b < 2; b++)
					asm volatile("cp.reduce.async.bulk.tensor.3d.global.shared::cta.add.tile.bulk_group"
						     " [%0, {%1, %2, %3}], [%4];\n" ::"l"((uint64_t)&dqmap),
						     "r"(64 * w + 32 * b), "r"(m0), "r"(head),
						     "r"(sdq + b * (BQ * 128))
						     : "memory");
				asm volatile("cp.async.bulk.commit_group;\n" ::: "memory");
			}
		}
		wgmma_wait0();
#pragma unroll
		for (int a = 0; a < L::ATOMS; a++) {
			reg_fence(dka[a]);
			reg_fence(dva[a]);
		}
		mbar_arrive(empty(s));
	}
	if (!WRITER && tid == 0)
		asm volatile("cp.async.bulk.wait_group 0;\n" ::: "memory");

	/* dK = scale dS^T Q, dV = P^T dO, rows kw0 + krow (+8) */
#pragma unroll
	for (int h = 0; h < 2; h++) {
		int key = kw0 + krow + 8 * h;
		if (key >= t)
			continue;
		__nv_bfloat16 *krow_p = dk + ((size_t)head * t + key) * d;
		__nv_bfloat16 *vrow_p = dv + ((size_t)head * t + key) * d;
#pragma unroll
		for (int a = 0; a < L::ATOMS; a++)
#pragma unroll
			for (int j = 0; j < 8; j++) {
				int col = a * 64 + 8 * j + 2 * tq;
				if (col < d) {
					*(uint32_t *)(krow_p + col) = pack_bf16(
						dka[a][4 * j + 2 * h] * scale, dka[a][4 * j + 2 * h + 1] * scale);
					*(uint32_t *)(vrow_p + col) =
						pack_bf16(dva[a][4 * j + 2 * h], dva[a][4 * j + 2 * h + 1]);
				}
			}
	}
#endif
}

typedef CUresult (*encode_tiled_fn)(CUtensorMap *, CUtensorMapDataType, cuuint32_t, void *,
				    const cuuint64_t *, const cuuint64_t *, const cuuint32_t *,
				    const cuuint32_t *, CUtensorMapInterleave, CUtensorMapSwizzle,
				    CUtensorMapL2promotion, CUtensorMapFloatOOBfill);

/* The driver's cuTensorMapEncodeTiled, found once without linking libcuda. */
encode_tiled_fn encode_tiled()
{
	static encode_tiled_fn fn = [] {
		void *p = NULL;
		cudaDriverEntryPointQueryResult q;
		if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &p, 12000,
						     cudaEnableDefault, &q) != cudaSuccess ||
		    q != cudaDriverEntryPointSuccess)
			p = NULL;
		return (encode_tiled_fn)p;
	}();
	return fn;
}

/*
 * (d, t, bh) of esize-byte elements as boxes of 128 bytes of columns x rows x
 * 1 head, 128-byte swizzle, zeros outside: BF16 q, k, v, dout (64 columns)
 * and the FP32 dq accumulator (32 columns).
 */
bool tensor_map(CUtensorMap *m, const void *base, CUtensorMapDataType type, int esize, int d,
		int t, int bh, int rows)
{
	encode_tiled_fn enc = encode_tiled();
	cuuint64_t dims[3] = { (cuuint64_t)d, (cuuint64_t)t, (cuuint64_t)bh };
	cuuint64_t strides[2] = { (cuuint64_t)d * esize, (cuuint64_t)t * d * esize };
	cuuint32_t box[3] = { (cuuint32_t)(128 / esize), (cuuint32_t)rows, 1 },
		   elem[3] = { 1, 1, 1 };

	return enc && enc(m, type, 3, (void *)base, dims, strides, box, elem,
			  CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
			  CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
			  CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

bool bf16_map(CUtensorMap *m, const void *base, int d, int t, int bh, int rows)
{
	return tensor_map(m, base, CU_TENSOR_MAP_DATA_TYPE_BFLOAT16, 2, d, t, bh, rows);
}

/* The kernel was built for sm_90a and may use SMEM bytes of dynamic shared memory. */
template <auto K, int SMEM> bool kernel_ready()
{
	static const bool ok = [] {
		cudaFuncAttributes fa;
		return cudaFuncGetAttributes(&fa, K) == cudaSuccess && fa.binaryVersion == 90 &&
		       cudaFuncSetAttribute(K, cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM) ==
			       cudaSuccess;
	}();
	return ok;
}

template <int D, int NC, int KN = BN> bool fwd_ready()
{
	return kernel_ready<flash_fwd_sm90<D, NC, KN>, sm90_layout<D, NC, KN>::SMEM>();
}

template <int D> bool bwd_ready()
{
	return kernel_ready<flash_bwd_sm90<D>, sm90_bwd_layout<D>::SMEM>();
}

template <int D>
cudaError_t launch_bwd(void *dk, void *dv, float *dq_acc, const void *dout, const void *q,
		       const void *k, const void *v, const float *lse, const float *drow, int bh,
		       int t, int d, float scale, bool causal, cudaStream_t stream)
{
	CUtensorMap qm, km, vm, dom, dqm;

	if (!bwd_ready<D>() || !bf16_map(&qm, q, d, t, bh, BQ) ||
	    !bf16_map(&km, k, d, t, bh, BKEYS) || !bf16_map(&vm, v, d, t, bh, BKEYS) ||
	    !bf16_map(&dom, dout, d, t, bh, BQ) ||
	    !tensor_map(&dqm, dq_acc, CU_TENSOR_MAP_DATA_TYPE_FLOAT32, 4, d, t, bh, BQ))
		return cudaErrorInvalidValue;
	dim3 grid((unsigned)bh, (unsigned)((t + BKEYS - 1) / BKEYS));
	flash_bwd_sm90<D><<<grid, BWD_THREADS, sm90_bwd_layout<D>::SMEM, stream>>>(
		(__nv_bfloat16 *)dk, (__nv_bfloat16 *)dv, dq_acc, lse, drow, qm, km, vm, dom, dqm, t, d,
		scale, causal ? 1 : 0);
	return cudaGetLastError();
}

template <int D, int NC, int KN = BN>
cudaError_t launch(void *o, float *lse, const void *q, const void *k, const void *v, int bh,
		   int t, int d, float scale, bool causal, cudaStream_t stream)
{
	CUtensorMap qm, km, vm;

	typedef sm90_layout<D, NC, KN> L;

	if (!fwd_ready<D, NC, KN>() || !bf16_map(&qm, q, d, t, bh, L::BM) ||
	    !bf16_map(&km, k, d, t, bh, KN) || !bf16_map(&vm, v, d, t, bh, KN))
		return cudaErrorInvalidValue;
	dim3 grid((unsigned)bh, (unsigned)((t + L::BM - 1) / L::BM));
	flash_fwd_sm90<D, NC, KN><<<grid, L::THREADS, L::SMEM, stream>>>(
		(__nv_bfloat16 *)o, lse, qm, km, vm, t, d, scale * 1.44269504088896340736f,
		causal ? 1 : 0);
	return cudaGetLastError();
}

} /* namespace */

extern "C" int flash_sm90_supported(int d_head)
{
	int dev, major, minor;

	/* at 32 and below, padded to 64, FlashAttention-2 is faster (docs/measurements.md) */
	if (d_head < 40 || d_head > 128 || d_head % 8 || cudaGetDevice(&dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess ||
	    cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess ||
	    major != 9 || minor != 0 || !encode_tiled())
		return 0;
	return d_head <= 64 ? fwd_ready<64, 2>() && fwd_ready<64, 3>() && bwd_ready<64>()
			    : fwd_ready<128, 2>() && fwd_ready<128, 2, 176>() && bwd_ready<128>();
}

extern "C" cudaError_t flash_sm90_forward(void *o, float *lse, const void *q, const void *k,
					  const void *v, int bh, int t, int d_head, float scale,
					  bool causal, cudaStream_t stream)
{
	if ((t + 127) / 128 > 65535)   /* row blocks on the grid's y */
		return cudaErrorInvalidValue;
	int dev, sms = 132;

	if (cudaGetDevice(&dev) == cudaSuccess)
		cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
	/* unmasked d_head 128: 176 keys a tile (FlashAttention-3's choice), fewer softmax passes */
	if (d_head > 64 && !causal)
		return launch<128, 2, 176>(o, lse, q, k, v, bh, t, d_head, scale, causal, stream);
	if (d_head > 64)
		return launch<128, 2>(o, lse, q, k, v, bh, t, d_head, scale, causal, stream);
	/* three consumers where 192-row blocks still fill the GPU twice (flash_bench paths) */
	if ((long long)(t + 191) / 192 * bh >= 2LL * sms)
		return launch<64, 3>(o, lse, q, k, v, bh, t, d_head, scale, causal, stream);
	return launch<64, 2>(o, lse, q, k, v, bh, t, d_head, scale, causal, stream);
}

extern "C" cudaError_t flash_sm90_backward(void *dk, void *dv, float *dq_acc, const void *dout,
					   const void *q, const void *k, const void *v,
					   const float *lse, const float *drow, int bh, int t,
					   int d_head, float scale, bool causal, cudaStream_t stream)
{
	if ((t + 127) / 128 > 65535)   /* row blocks on the grid's y */
		return cudaErrorInvalidValue;
	return d_head <= 64 ? launch_bwd<64>(dk, dv, dq_acc, dout, q, k, v, lse, drow, bh, t,
					     d_head, scale, causal, stream)
			    : launch_bwd<128>(dk, dv, dq_acc, dout, q, k, v, lse, drow, bh, t,
					      d_head, scale, causal, stream);
}
