/* tensors.c: named host tensor sets (see tensors.h). */
#include "model/tensors.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "trace/types.h"

size_t tensor_dtype_size(enum st_dtype dtype)
{
	switch (dtype) {
	case ST_DT_F64:
	case ST_DT_I64:
		return 8;
	case ST_DT_F32:
	case ST_DT_I32:
		return 4;
	case ST_DT_BF16:
	case ST_DT_F16:
		return 2;
	case ST_DT_U8:
		return 1;
	default:
		return 0;
	}
}

const char *tensor_dtype_name(enum st_dtype dtype)
{
	switch (dtype) {
	case ST_DT_F64: return "F64";
	case ST_DT_F32: return "F32";
	case ST_DT_BF16: return "BF16";
	case ST_DT_F16: return "F16";
	case ST_DT_I64: return "I64";
	case ST_DT_I32: return "I32";
	case ST_DT_U8: return "U8";
	default: return "?";
	}
}

void tensor_set_init(struct tensor_set *s)
{
	s->t = NULL;
	s->n = 0;
	s->alloc = 0;
}

void tensor_set_release(struct tensor_set *s)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		free(s->t[i].name);
		free(s->t[i].data);
	}
	free(s->t);
	tensor_set_init(s);
}

int64_t named_tensor_numel(const struct named_tensor *t)
{
	int64_t n = 1;
	int i;

	for (i = 0; i < t->ndim; i++)
		n *= t->shape[i];
	return n;
}

struct named_tensor *tensor_set_find(const struct tensor_set *s, const char *name)
{
	size_t i;

	for (i = 0; i < s->n; i++)
		if (!strcmp(s->t[i].name, name))
			return &s->t[i];
	return NULL;
}

struct named_tensor *tensor_set_add(struct tensor_set *s, const char *name, enum st_dtype dtype,
				    int ndim, const int64_t *shape, const void *data)
{
	size_t esize = tensor_dtype_size(dtype), bytes;
	struct named_tensor *t;
	uint64_t numel = 1;
	int i;

	if (!name || !esize || ndim < 0 || ndim > TENSOR_MAX_DIMS || (ndim && !shape))
		return NULL;
	if (tensor_set_find(s, name))
		return NULL;
	for (i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return NULL;
		if (shape[i] && numel > (uint64_t)SIZE_MAX / esize / (uint64_t)shape[i])
			return NULL;
		numel *= (uint64_t)shape[i];
	}
	bytes = (size_t)numel * esize;

	if (ALLOC_GROW(s->t, s->n + 1, s->alloc))
		return NULL;
	t = &s->t[s->n];
	memset(t, 0, sizeof(*t));
	t->name = strdup(name);
	t->data = data ? malloc(bytes ? bytes : 1) : calloc(bytes ? bytes : 1, 1);
	if (!t->name || !t->data) {
		free(t->name);
		free(t->data);
		return NULL;
	}
	if (data && bytes)
		memcpy(t->data, data, bytes);
	t->dtype = dtype;
	t->ndim = ndim;
	for (i = 0; i < ndim; i++)
		t->shape[i] = shape[i];
	t->bytes = bytes;
	s->n++;
	return t;
}
