/*
 * alloc.h: the model's one allocator. Every device block of the step comes
 * from here, tagged with its category (enum st_mem_category) and the op that
 * asked (the registry's current op), and reported to the registry's observer.
 *
 * Blocks come from a stream-ordered memory pool of the model's own
 * (cudaMallocFromPoolAsync / cudaFreeAsync on the step stream). A freed block
 * is kept in a cache by its exact size and handed to the next request of
 * that size: every step asks for the same sizes in the same order, so a
 * steady-state step makes no CUDA call for memory at all (each one costs a
 * microsecond, more under a tracer). A free is still a free in the memory
 * timeline: the observer hears of it when it happens. When the pool cannot
 * grow, the cache goes back to it and the request is tried once more, so the
 * cache never turns a fitting request into an OOM. The step runs on one
 * stream, so a cached block is safe to reuse at once, and the host never
 * waits. The caller owns each struct mem_block, so freeing needs no lookup.
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

/* Freed blocks of one size, waiting for the next request of that size. */
struct mem_cache_bin {
	uint64_t size;       /* 0: empty slot */
	void **ptr;
	size_t n, cap;
};

struct model_alloc {
	cudaMemPool_t pool;
	struct mem_cache_bin *bins;          /* open addressing by size; n_bins a power of 2 */
	uint32_t n_bins, used_bins;
	uint64_t cached;                     /* bytes held in the cache */
	cudaStream_t stream;
	const struct op_registry *ops;       /* its current op owns new blocks; its observer listens */
	uint64_t live, peak, capacity;
	struct model_oom oom;                /* the last failed request */
};

/* MODEL_ERROR with an error line if the pool cannot be made. */
int model_alloc_init(struct model_alloc *a, cudaStream_t s, const struct op_registry *ops);
/* Empties the cache and destroys the pool, giving its memory back to the
 * device; every block must be put back first. */
void model_alloc_release(struct model_alloc *a);

/*
 * Gets `size` bytes (256-byte aligned) into b. MODEL_OOM when the device is
 * full (a->oom filled, observer told, no message printed), MODEL_ERROR with
 * an error line on any other failure. size 0 gives a NULL block.
 */
int mem_get(struct model_alloc *a, struct mem_block *b, uint64_t size, int category);
/* Frees b if held (into the cache, or stream-ordered to the pool) and clears it. */
void mem_put(struct model_alloc *a, struct mem_block *b);

#endif
