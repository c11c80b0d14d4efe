/* embedding.h: token embedding lookup and its scatter-add backward (embedding.cu). */
#ifndef STEPTRACE_KERNELS_EMBEDDING_H
#define STEPTRACE_KERNELS_EMBEDDING_H

#include <stdint.h>
#include <cuda_runtime.h>

#include "trace/types.h"

#ifdef __cplusplus
extern "C" {
#endif

/* out (n, d) F32 = table (vocab, d) rows ids[i]. */
cudaError_t embedding_forward(float *out, const float *table, const int32_t *ids, int n, int d,
			      cudaStream_t s);
/* dtable (vocab, d) += dout rows scattered to ids (atomic adds; zero dtable first). */
cudaError_t embedding_backward(float *dtable, const float *dout, const int32_t *ids, int n, int d,
			       cudaStream_t s);

#ifdef __cplusplus
}
#endif
#endif
