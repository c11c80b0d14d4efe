/* alloc.c: see alloc.h. */
#include "model/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/grow.h"
#include "lib/gpu_check.h"

int model_alloc_init(struct model_alloc *a, cudaStream_t s, const struct op_registry *ops)
{
	struct cudaMemPoolProps props;
	size_t free_b, total_b;
	int dev;

	memset(a, 0, sizeof(*a));
	a->stream = s;
	a->ops = ops;
	if (CUDA_CHECK(cudaGetDevice(&dev)) || CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b)))
		return MODEL_ERROR;
	a->capacity = total_b;
	memset(&props, 0, sizeof(props));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = dev;
	if (CUDA_CHECK(cudaMemPoolCreate(&a->pool, &props)))
		return MODEL_ERROR;
	/* keep freed memory in the pool between steps: steady state never calls the driver */
	uint64_t keep = UINT64_MAX;
	if (CUDA_CHECK(cudaMemPoolSetAttribute(a->pool, cudaMemPoolAttrReleaseThreshold, &keep)))
		return MODEL_ERROR;
	return MODEL_OK;
}

/* Gives p back to the pool, stream-ordered. */
static void pool_free(struct model_alloc *a, void *p)
{
	/* nothing to undo: a failed free leaves its error line, and the block is lost */
	if (CUDA_CHECK(cudaFreeAsync(p, a->stream)))
		return;
}

/* ---- the cache of freed blocks, by exact size ---------------------------- */

static uint32_t bin_hash(uint64_t size, uint32_t n_bins)
{
	return (uint32_t)((size * 0x9E3779B97F4A7C15ull) >> 32) & (n_bins - 1);
}

/* The bin of `size`, or the empty slot where it would go; NULL if there are no bins. */
static struct mem_cache_bin *bin_find(struct model_alloc *a, uint64_t size)
{
	uint32_t i;

	if (!a->n_bins)
		return NULL;
	for (i = bin_hash(size, a->n_bins); a->bins[i].size && a->bins[i].size != size;
	     i = (i + 1) & (a->n_bins - 1))
		;
	return &a->bins[i];
}

/* Room for one more bin; -1 when host memory is short (the caller frees instead). */
static int bins_reserve(struct model_alloc *a)
{
	uint32_t n = a->n_bins ? a->n_bins * 2 : 64, i;
	struct mem_cache_bin *old = a->bins, *bins;
	uint32_t old_n = a->n_bins;

	if ((a->used_bins + 1) * 2 <= a->n_bins)
		return 0;
	bins = calloc(n, sizeof(*bins));
	if (!bins)
		return -1;
	a->bins = bins;
	a->n_bins = n;
	for (i = 0; i < old_n; i++)
		if (old[i].size)
			*bin_find(a, old[i].size) = old[i];
	free(old);
	return 0;
}

/* Keeps p for the next request of `size`; -1 if it cannot (p is then the caller's to free). */
static int cache_put(struct model_alloc *a, void *p, uint64_t size)
{
	struct mem_cache_bin *b;

	if (bins_reserve(a))
		return -1;
	b = bin_find(a, size);
	if (ALLOC_GROW(b->ptr, b->n + 1, b->cap))
		return -1;
	if (!b->size) {
		b->size = size;
		a->used_bins++;
	}
	b->ptr[b->n++] = p;
	a->cached += size;
	return 0;
}

static void *cache_get(struct model_alloc *a, uint64_t size)
{
	struct mem_cache_bin *b = bin_find(a, size);

	if (!b || !b->size || !b->n)
		return NULL;
	a->cached -= size;
	return b->ptr[--b->n];
}

/* Gives every cached block back to the pool. */
static void mem_cache_trim(struct model_alloc *a)
{
	uint32_t i;
	size_t j;

	for (i = 0; i < a->n_bins; i++) {
		struct mem_cache_bin *b = &a->bins[i];

		for (j = 0; j < b->n; j++)
			pool_free(a, b->ptr[j]);
		b->n = 0;
	}
	a->cached = 0;
}

void model_alloc_release(struct model_alloc *a)
{
	uint32_t i;

	mem_cache_trim(a);
	for (i = 0; i < a->n_bins; i++)
		free(a->bins[i].ptr);
	free(a->bins);
	a->bins = NULL;
	a->n_bins = a->used_bins = 0;
	if (a->pool) {
		cudaStreamSynchronize(a->stream);
		cudaMemPoolDestroy(a->pool);
	}
	a->pool = NULL;
}

int mem_get(struct model_alloc *a, struct mem_block *b, uint64_t size, int category)
{
	const struct model_observer *obs = a->ops->obs;
	void *p = NULL;
	cudaError_t e;

	b->ptr = NULL;
	b->size = 0;
	b->category = category;
	if (!size)
		return MODEL_OK;
	p = cache_get(a, size);
	if (p)
		goto got;
	e = cudaMallocFromPoolAsync(&p, size, a->pool, a->stream);
	if (e == cudaErrorMemoryAllocation && a->cached) {
		/* Blocks of other sizes sit in the cache: give them back and try again. */
		cudaGetLastError();
		mem_cache_trim(a);
		e = cudaMallocFromPoolAsync(&p, size, a->pool, a->stream);
	}
	if (e == cudaErrorMemoryAllocation) {
		const struct model_op *op = op_registry_get(a->ops, a->ops->current);

		cudaGetLastError();    /* not sticky: clear it so the model goes on */
		a->oom.requested = size;
		a->oom.category = category;
		snprintf(a->oom.op, sizeof(a->oom.op), "%s", op ? op->path : "?");
		a->oom.live = a->live;
		a->oom.capacity = a->capacity;
		if (obs)
			obs->oom(obs->ctx, size, category, a->ops->current, a->live, a->capacity);
		return MODEL_OOM;
	}
	if (cuda_check_at(e, "cudaMallocFromPoolAsync", __FILE__, __LINE__))
		return MODEL_ERROR;
got:
	b->ptr = p;
	b->size = size;
	a->live += size;
	if (a->live > a->peak)
		a->peak = a->live;
	if (obs)
		obs->alloc(obs->ctx, (uint64_t)(uintptr_t)p, size, category, a->ops->current);
	return MODEL_OK;
}

void mem_put(struct model_alloc *a, struct mem_block *b)
{
	const struct model_observer *obs = a->ops->obs;

	if (!b->ptr)
		return;
	if (obs)
		obs->free(obs->ctx, (uint64_t)(uintptr_t)b->ptr, b->size, b->category,
			  a->ops->current);
	if (cache_put(a, b->ptr, b->size))
		pool_free(a, b->ptr);
	a->live -= b->size;
	b->ptr = NULL;
	b->size = 0;
}
