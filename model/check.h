/*
 * check.h: error checks for the CUDA runtime and cuBLAS calls of the model.
 * Each macro hands the failing expression, file and line to a real function
 * that prints one line through error, and makes the caller return
 * MODEL_ERROR (-1).
 */
#ifndef STEPTRACE_MODEL_CHECK_H
#define STEPTRACE_MODEL_CHECK_H

#include <cublas_v2.h>
#include <cuda_runtime.h>

int cuda_check_failed(cudaError_t e, const char *expr, const char *file, int line);
int cublas_check_failed(cublasStatus_t s, const char *expr, const char *file, int line);

#define CUDA_CHECK(x)                                                               \
	do {                                                                        \
		cudaError_t e_ = (x);                                               \
		if (e_ != cudaSuccess)                                              \
			return cuda_check_failed(e_, #x, __FILE__, __LINE__);       \
	} while (0)

#define CUBLAS_CHECK(x)                                                             \
	do {                                                                        \
		cublasStatus_t s_ = (x);                                            \
		if (s_ != CUBLAS_STATUS_SUCCESS)                                    \
			return cublas_check_failed(s_, #x, __FILE__, __LINE__);     \
	} while (0)

#endif
