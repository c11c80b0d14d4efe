/*
 * tensors.h: named host tensors under PyTorch's state-dict names
 * ("token_embeddings.weight", "layers.3.attn.q_proj.weight", ...), and their
 * safetensors files. The one interface between the GPU step, the CPU
 * reference, `steptrace step` and PyTorch.
 */
#ifndef STEPTRACE_MODEL_TENSORS_H
#define STEPTRACE_MODEL_TENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "trace/types.h"

#define TENSOR_MAX_DIMS 4

struct named_tensor {
	char *name;
	enum st_dtype dtype;             /* F32, F64, BF16, I32, I64 ... */
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	void *data;                      /* owned, little-endian, row-major */
	size_t bytes;
};

struct tensor_set {
	struct named_tensor *t;
	size_t n, alloc;
};

void tensor_set_init(struct tensor_set *s);
void tensor_set_release(struct tensor_set *s);   /* frees contents, leaves s empty */
/* Adds a tensor with a copy of `data` (zeroed if NULL). Returns it, NULL on bad shape/out of memory. */
struct named_tensor *tensor_set_add(struct tensor_set *s, const char *name, enum st_dtype dtype,
				    int ndim, const int64_t *shape, const void *data);
struct named_tensor *tensor_set_find(const struct tensor_set *s, const char *name);
int64_t named_tensor_numel(const struct named_tensor *t);

/* Bytes per element, 0 for a dtype tensors cannot hold. */
size_t tensor_dtype_size(enum st_dtype dtype);
/* safetensors' name of a dtype: "F32", "BF16", ...; "?" if it has none. */
const char *tensor_dtype_name(enum st_dtype dtype);

/* Reads a whole safetensors file. -1 with one error line (malformed header,
 * offsets out of range, unsupported dtype, ...). */
int safetensors_read(const char *path, struct tensor_set *out);
/* Writes all tensors in order; `metadata` may be NULL. -1 with an error line. */
int safetensors_write(const char *path, const struct tensor_set *s,
		      const char *const *metadata_kv /* key, value, ..., NULL */);

#endif
