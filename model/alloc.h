/*
 * alloc.h: the model's one allocator. Every device block of the step comes
 * from here, tagged with its category (enum st_mem_category) and the op that
 * asked (the registry's current op), and reported to the observer.
 *
 * Blocks come from a stream-ordered memory pool of the model's own
 * (cudaMallocFromPoolAsync / cudaFreeAsync on the step stream): a free is a
 * real free in the memory timeline, yet steady-state steps reuse the pool's
 * memory without calling the driver, and the host never waits. The caller
 * owns each struct mem_block, so freeing needs no lookup and no host memory.
 */
#ifndef STEPTRACE_MODEL_ALLOC_H
#define STEPTRACE_MODEL_ALLOC_H

#include <stdint.h>

#include <cuda_runtime.h>

#include "model/model.h"
#include "model/ops.h"

struct mem_block {
	void *ptr;            /* NULL when not held */
	uint64_t size;
	int category;         /* enum st_mem_category */
};

struct model_alloc {
	cudaMemPool_t pool;
	cudaStream_t stream;
	const struct model_observer *obs;    /* NULL: nobody listens */
	const struct op_registry *ops;
	uint32_t op;                         /* the op now running: owner of new blocks */
	uint64_t live, peak, capacity;
	uint64_t live_by_category[8];
	struct model_oom oom;                /* the last failed request */
};

/* MODEL_ERROR with an error line if the pool cannot be made. */
int model_alloc_init(struct model_alloc *a, cudaStream_t s, const struct model_observer *obs,
		     const struct op_registry *ops);
/* Destroys the pool, giving its memory back to the device; every block must be put back first. */
void model_alloc_release(struct model_alloc *a);

/*
 * Gets `size` bytes (256-byte aligned) into b. MODEL_OOM when the device is
 * full (a->oom filled, observer told, no message printed), MODEL_ERROR with
 * an error line on any other failure. size 0 gives a NULL block.
 */
int mem_get(struct model_alloc *a, struct mem_block *b, uint64_t size, int category);
/* Frees b (stream-ordered) if held, and clears it. */
void mem_put(struct model_alloc *a, struct mem_block *b);

#endif
