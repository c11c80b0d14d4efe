/* check.c: see check.h. */
#include "model/check.h"

#include "lib/error.h"

int cuda_check_failed(cudaError_t e, const char *expr, const char *file, int line)
{
	return error("CUDA call failed: %s (%s) at %s:%d: %s", cudaGetErrorName(e), expr, file,
			line, cudaGetErrorString(e));
}

int cublas_check_failed(cublasStatus_t s, const char *expr, const char *file, int line)
{
	return error("cuBLAS call failed: %s (%s) at %s:%d", cublasGetStatusString(s), expr, file,
			line);
}
