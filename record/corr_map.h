/*
 * corr_map.h: CUPTI correlation id -> op id, written at launch time by the
 * CUPTI callback on the launching thread and read by the activity-buffer
 * thread when the kernel, memcpy or memset record arrives.
 *
 * Correlation ids are dense and grow through the run, so the map is a
 * two-level array of fixed pages: a put never moves what a concurrent get
 * reads, and neither takes a lock. Pages are allocated as ids reach them
 * (256 KiB per 65,536 ids).
 */
#ifndef STEPTRACE_RECORD_CORR_MAP_H
#define STEPTRACE_RECORD_CORR_MAP_H

#include <stdatomic.h>
#include <stdint.h>

#define CORR_PAGE_BITS 16
#define CORR_PAGE_SIZE (1u << CORR_PAGE_BITS)
#define CORR_PAGES (1u << (32 - CORR_PAGE_BITS))

struct corr_map {
	_Atomic(_Atomic uint32_t *) pages[CORR_PAGES];
};

/* `m` must start zeroed (static storage or calloc). */
/* Records that `corr` belongs to `op`; -1 when a page cannot be allocated. */
int corr_map_put(struct corr_map *m, uint32_t corr, uint32_t op);
/* The op of `corr`, 0 when none was recorded. */
uint32_t corr_map_get(struct corr_map *m, uint32_t corr);
/* Frees the pages; the map is empty (and reusable) afterwards. No put or
 * get may run concurrently. */
void corr_map_release(struct corr_map *m);

#endif
