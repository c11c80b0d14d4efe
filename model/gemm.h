/*
 * gemm.h: the model's matrix products through cuBLASLt, in row-major terms.
 * The precision decides the compute type once: fp32 is true FP32
 * (CUBLAS_COMPUTE_32F, no TF32, as PyTorch's default), tf32 allows TF32
 * tensor cores, bf16 takes BF16 operands with FP32 accumulation.
 * A step repeats the same few dozen products, so each distinct one is
 * planned once (descriptors and the heuristic's algorithm, on first use) and
 * later calls only launch. The workspace is the model allocator's, so
 * cuBLAS and cuBLASLt allocate nothing themselves.
 */
#ifndef STEPTRACE_MODEL_GEMM_H
#define STEPTRACE_MODEL_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include <cublasLt.h>
#include <cublas_v2.h>

#include "model/config.h"

struct gemm_plans;

struct gemm {
	cublasLtHandle_t lt;
	cublasHandle_t handle;        /* for products cuBLASLt has no algorithm for */
	cublasComputeType_t compute;
	cudaStream_t stream;
	void *workspace;              /* borrowed: the caller's, outlives the gemm */
	size_t workspace_bytes;
	struct gemm_plans *plans;     /* owned; filled by gemm_rm */
	int sm_target;                /* SMs a product may count on (cuBLASLt's SM count target: fewer
					 while a collective runs beside it, model/ddp.c), 0: all */
	int tune;                     /* > 1: time up to this many of the heuristic's algorithms on
					 a plan's first product and keep the fastest
					 (STEPTRACE_GEMM_TUNE); else its first */
};

/* On failure the gemm still needs gemm_release. */
int gemm_init(struct gemm *g, cudaStream_t s, enum st_precision p, void *workspace,
	      size_t workspace_bytes);
void gemm_release(struct gemm *g);
/* How many plans have timed their candidates (gemm.tune) so far. */
int gemm_tuned(const struct gemm *g);

/*
 * C = alpha op(A) op(B) + beta C, all row-major: op(A) is (M, K), op(B) (K, N),
 * C (M, N); lda/ldb/ldc are the stored row strides. batch > 1 repeats it with
 * element strides sA, sB, sC. Dtypes are F32 or BF16, and
 * A and B share one. Any pointer alignment the dtype allows is accepted.
 */
int gemm_rm(const struct gemm *g, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
	    const void *A, int lda, long long sA, const void *B, int ldb, long long sB,
	    enum st_dtype ab_dtype, float beta, void *C, int ldc, long long sC,
	    enum st_dtype c_dtype, int batch);

/*
 * D = op(A) op(B) + C, C and D (M, N) row-major with stride ldc, in c_dtype,
 * D not overlapping A or B (it may be C): cuBLASLt's D = alpha A B + beta C
 * with alpha = beta = 1, the residual add folded into a product
 * (--kernels fused). Where cuBLASLt has no algorithm, C is copied to D and
 * the product added to it. 0, or -1 as gemm_rm.
 */
int gemm_rm_add(const struct gemm *g, bool trans_a, bool trans_b, int M, int N, int K,
		const void *A, int lda, const void *B, int ldb, enum st_dtype ab_dtype,
		const void *C, void *D, int ldc, enum st_dtype c_dtype);

/*
 * Attention's products, each one strided-batched GEMM over bh heads: q, k,
 * v and the attention output are head-major (bh, T, dh), so one head's (T,
 * dh) matrix is contiguous (row stride dh, heads T*dh apart); scores are
 * (bh, T, T) (row stride T, heads T*T apart). kind selects the product:
 *   S_QK    s = q k^T        (x = q, y = k)
 *   O_PV    out = p v        (x = p, y = v)
 *   DP_DOV  dp = dout v^T    (x = dout, y = v)
 *   DV_PDO  dv = p^T dout    (x = p, y = dout)
 *   DQ_DSK  dq = ds k        (x = ds, y = k)
 *   DK_DSQ  dk = ds^T q      (x = ds, y = q)
 * Every operand and the output in dtype. 0, or -1 as gemm_rm.
 */
enum attn_gemm { S_QK, O_PV, DP_DOV, DV_PDO, DQ_DSK, DK_DSQ };

int gemm_attention(const struct gemm *g, enum attn_gemm kind, int bh, int T, int dh,
		   enum st_dtype dtype, void *out, const void *x, const void *y);

#endif
