/*
 * gemm.h: the model's matrix products through cuBLAS, in row-major terms.
 * The precision decides the compute type once: fp32 is true FP32
 * (CUBLAS_COMPUTE_32F, default math: no TF32, as PyTorch's default), tf32
 * allows TF32 tensor cores, bf16 takes BF16 operands with FP32 accumulation.
 * The workspace is the model allocator's, so cuBLAS allocates nothing itself.
 */
#ifndef STEPTRACE_MODEL_GEMM_H
#define STEPTRACE_MODEL_GEMM_H

#include <stdbool.h>
#include <stddef.h>

#include <cublas_v2.h>

#include "model/config.h"

struct gemm {
	cublasHandle_t handle;
	cublasComputeType_t compute;
};

int gemm_init(struct gemm *g, cudaStream_t s, enum model_precision p, void *workspace,
	      size_t workspace_bytes);
void gemm_release(struct gemm *g);

/*
 * C = alpha op(A) op(B) + beta C, all row-major: op(A) is (M, K), op(B) (K, N),
 * C (M, N); lda/ldb/ldc are the stored row strides. batch > 1 repeats it with
 * element strides sA, sB, sC. Dtypes are enum st_dtype (F32 or BF16) and
 * A and B share one.
 */
int gemm_rm(const struct gemm *g, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
	    const void *A, int lda, long long sA, const void *B, int ldb, long long sB, int ab_dtype,
	    float beta, void *C, int ldc, long long sC, int c_dtype, int batch);

#endif
