/*
 * capacity.h: `steptrace replay --capacity`: the run's allocations replayed
 * against a device of a given size (replay/memory.h), and the first request
 * that would not fit, with what was live by category when it fails; or the
 * headroom at the peak when everything fits.
 */
#ifndef STEPTRACE_ANALYZE_CAPACITY_H
#define STEPTRACE_ANALYZE_CAPACITY_H

#include <stdint.h>

#include "lib/table.h"
#include "replay/replay.h"

struct capacity_opts {
	uint64_t capacity;             /* bytes */
	int view;                      /* enum mem_view replayed */
};

/* Adds the capacity table (and the live-at-failure one) and notes to r. 0, or -1 after an error line. */
int capacity_run(const struct replay *rp, const struct capacity_opts *o, struct report *r);

#endif
