/* corr_map.c: see corr_map.h. */
#include "record/corr_map.h"

#include <stdlib.h>

int corr_map_put(struct corr_map *m, uint32_t corr, uint32_t op)
{
	_Atomic(_Atomic uint32_t *) *slot = &m->pages[corr >> CORR_PAGE_BITS];
	_Atomic uint32_t *page = atomic_load_explicit(slot, memory_order_acquire);

	if (!page) {
		_Atomic uint32_t *fresh = calloc(CORR_PAGE_SIZE, sizeof(*fresh));

		if (!fresh)
			return -1;
		if (atomic_compare_exchange_strong_explicit(slot, &page, fresh,
							    memory_order_acq_rel,
							    memory_order_acquire)) {
			page = fresh;
		} else {
			free(fresh);   /* another launching thread won; `page` is its page */
		}
	}
	atomic_store_explicit(&page[corr & (CORR_PAGE_SIZE - 1)], op, memory_order_release);
	return 0;
}

uint32_t corr_map_get(struct corr_map *m, uint32_t corr)
{
	_Atomic uint32_t *page = atomic_load_explicit(&m->pages[corr >> CORR_PAGE_BITS],
						      memory_order_acquire);

	if (!page)
		return 0;
	return atomic_load_explicit(&page[corr & (CORR_PAGE_SIZE - 1)], memory_order_acquire);
}

void corr_map_release(struct corr_map *m)
{
	uint32_t i;

	for (i = 0; i < CORR_PAGES; i++) {
		_Atomic uint32_t *page = atomic_exchange(&m->pages[i], NULL);

		free((void *)page);
	}
}
