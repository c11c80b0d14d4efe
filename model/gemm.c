/* gemm.c: see gemm.h. */
#include "model/gemm.h"

#include "model/check.h"
#include "trace/bundle.h"

int gemm_init(struct gemm *g, cudaStream_t s, enum model_precision p, void *workspace,
	      size_t workspace_bytes)
{
	g->handle = NULL;
	g->compute = p == PREC_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
	CUBLAS_CHECK(cublasCreate(&g->handle));
	CUBLAS_CHECK(cublasSetStream(g->handle, s));
	CUBLAS_CHECK(cublasSetMathMode(g->handle, CUBLAS_DEFAULT_MATH));
	if (workspace)
		CUBLAS_CHECK(cublasSetWorkspace(g->handle, workspace, workspace_bytes));
	return 0;
}

void gemm_release(struct gemm *g)
{
	if (g->handle)
		cublasDestroy(g->handle);
	g->handle = NULL;
}

static cudaDataType_t cuda_type(int dtype)
{
	return dtype == ST_DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

/*
 * Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a
 * row-major matrix read column-major is its own transpose: so B goes first,
 * A second, with their transposition flags unchanged and M, N swapped.
 */
int gemm_rm(const struct gemm *g, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
	    const void *A, int lda, long long sA, const void *B, int ldb, long long sB, int ab_dtype,
	    float beta, void *C, int ldc, long long sC, int c_dtype, int batch)
{
	cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t oa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	cudaDataType_t tab = cuda_type(ab_dtype), tc = cuda_type(c_dtype);

	if (batch <= 1)
		CUBLAS_CHECK(cublasGemmEx(g->handle, ob, oa, N, M, K, &alpha, B, tab, ldb, A, tab, lda,
					  &beta, C, tc, ldc, g->compute, CUBLAS_GEMM_DEFAULT));
	else
		CUBLAS_CHECK(cublasGemmStridedBatchedEx(g->handle, ob, oa, N, M, K, &alpha, B, tab, ldb,
							sB, A, tab, lda, sA, &beta, C, tc, ldc, sC,
							batch, g->compute, CUBLAS_GEMM_DEFAULT));
	return 0;
}
