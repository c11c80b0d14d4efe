/*
 * gpu_check.h: the one set of checks for CUDA runtime, cuBLAS(Lt) and CUPTI
 * calls, used by model/, record/ and the GPU commands (kernels never print:
 * their launchers return the launch's cudaError_t for the caller to check).
 * Each check is an expression that evaluates the call once and yields 0 when
 * it succeeded, or -1 after one line:
 *
 *   error: cudaMalloc(&p, bytes) failed: out of memory (model/alloc.c:88)
 *
 *   if (CUDA_CHECK(cudaMalloc(&p, bytes)))
 *           goto fail;
 *   return CUDA_CHECK(rmsnorm_forward(out, x, w, n, d, dtype, stream));
 *
 * A result that is dropped is a compile-time warning. Built only with the GPU
 * part (gpu_check.c needs the CUDA toolkit); the analysis part never sees it.
 */
#ifndef STEPTRACE_LIB_GPU_CHECK_H
#define STEPTRACE_LIB_GPU_CHECK_H

#include <cublas_api.h>
#include <cuda_runtime_api.h>
#include <cupti_result.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A failed call also clears CUDA's last (non-sticky) error, so it is reported once. */
int cuda_check_at(cudaError_t e, const char *call, const char *file, int line)
	__attribute__((warn_unused_result));
int cublas_check_at(cublasStatus_t s, const char *call, const char *file, int line)
	__attribute__((warn_unused_result));
int cupti_check_at(CUptiResult r, const char *call, const char *file, int line)
	__attribute__((warn_unused_result));

#ifdef __cplusplus
}
#endif

#define CUDA_CHECK(call) cuda_check_at((call), #call, __FILE__, __LINE__)
#define CUBLAS_CHECK(call) cublas_check_at((call), #call, __FILE__, __LINE__)
#define CUPTI_CHECK(call) cupti_check_at((call), #call, __FILE__, __LINE__)

#endif
