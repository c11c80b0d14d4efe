/* gpu_check.c: see gpu_check.h. */
#include "lib/gpu_check.h"

#include "lib/error.h"

int cuda_check_at(cudaError_t e, const char *call, const char *file, int line)
{
	if (e == cudaSuccess)
		return 0;
	cudaGetLastError();
	return error("%s failed: %s (%s:%d)", call, cudaGetErrorString(e), file, line);
}

int cublas_check_at(cublasStatus_t s, const char *call, const char *file, int line)
{
	if (s == CUBLAS_STATUS_SUCCESS)
		return 0;
	return error("%s failed: %s (%s:%d)", call, cublasGetStatusString(s), file, line);
}
