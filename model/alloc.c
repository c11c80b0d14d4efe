/* alloc.c: see alloc.h. */
#include "model/alloc.h"

#include <stdio.h>
#include <string.h>

#include "cli/error.h"
#include "model/check.h"

int model_alloc_init(struct model_alloc *a, cudaStream_t s, const struct model_observer *obs,
		     const struct op_registry *ops)
{
	struct cudaMemPoolProps props;
	size_t free_b, total_b;
	int dev;

	memset(a, 0, sizeof(*a));
	a->stream = s;
	a->obs = obs;
	a->ops = ops;
	CUDA_CHECK(cudaGetDevice(&dev));
	CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
	a->capacity = total_b;
	memset(&props, 0, sizeof(props));
	props.allocType = cudaMemAllocationTypePinned;
	props.location.type = cudaMemLocationTypeDevice;
	props.location.id = dev;
	CUDA_CHECK(cudaMemPoolCreate(&a->pool, &props));
	/* keep freed memory in the pool between steps: steady state never calls the driver */
	uint64_t keep = UINT64_MAX;
	CUDA_CHECK(cudaMemPoolSetAttribute(a->pool, cudaMemPoolAttrReleaseThreshold, &keep));
	return 0;
}

void model_alloc_release(struct model_alloc *a)
{
	if (a->pool) {
		cudaStreamSynchronize(a->stream);
		cudaMemPoolDestroy(a->pool);
	}
	a->pool = NULL;
}

int mem_get(struct model_alloc *a, struct mem_block *b, uint64_t size, int category)
{
	void *p = NULL;
	cudaError_t e;

	b->ptr = NULL;
	b->size = 0;
	b->category = category;
	if (!size)
		return MODEL_OK;
	e = cudaMallocFromPoolAsync(&p, size, a->pool, a->stream);
	if (e == cudaErrorMemoryAllocation) {
		const struct model_op *op = op_registry_get(a->ops, a->op);

		cudaGetLastError();    /* not sticky: clear it so the model goes on */
		a->oom.requested = size;
		a->oom.category = category;
		snprintf(a->oom.op, sizeof(a->oom.op), "%s", op ? op->path : "?");
		a->oom.live = a->live;
		a->oom.capacity = a->capacity;
		if (a->obs)
			a->obs->oom(a->obs->ctx, size, category, a->op, a->live, a->capacity);
		return MODEL_OOM;
	}
	CUDA_CHECK(e);
	b->ptr = p;
	b->size = size;
	a->live += size;
	a->live_by_category[category & 7] += size;
	if (a->live > a->peak)
		a->peak = a->live;
	if (a->obs)
		a->obs->alloc(a->obs->ctx, (uint64_t)(uintptr_t)p, size, category, a->op);
	return MODEL_OK;
}

void mem_put(struct model_alloc *a, struct mem_block *b)
{
	if (!b->ptr)
		return;
	if (a->obs)
		a->obs->free(a->obs->ctx, (uint64_t)(uintptr_t)b->ptr, b->size, b->category, a->op);
	cudaError_t e = cudaFreeAsync(b->ptr, a->stream);
	if (e != cudaSuccess)
		cuda_check_failed(e, "cudaFreeAsync", __FILE__, __LINE__);
	a->live -= b->size;
	a->live_by_category[b->category & 7] -= b->size;
	b->ptr = NULL;
	b->size = 0;
}
