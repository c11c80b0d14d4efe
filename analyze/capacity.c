/* capacity.c: does the run fit in a device of a given size (see capacity.h). */
#include "analyze/capacity.h"

#include <inttypes.h>

#include "analyze/common.h"
#include "analyze/memory.h"
#include "lib/human.h"
#include "replay/memory.h"

static void kv_row(struct table *t, const char *what, const char *value, int64_t bytes, bool has_bytes)
{
	table_row(t);
	table_str(t, what);
	table_str(t, value);
	if (has_bytes)
		table_int(t, bytes);
	else
		table_empty(t);
}

int capacity_run(const struct replay *rp, const struct capacity_opts *a, struct report *r)
{
	struct mem_timeline tl;
	struct mem_capacity cap;
	struct table *t;
	char b1[64], b2[64];

	if (mem_timeline_build(&tl, rp, a->view) < 0)
		return -1;
	mem_timeline_capacity(&tl, a->capacity, &cap);
	t = report_add_table(r, "capacity", "Capacity replay");
	table_add_column(t, "What", COL_STR, 0);
	table_add_column(t, "Value", COL_STR, 0);
	table_add_column(t, "Bytes", COL_INT, 0);
	kv_row(t, "capacity", human_bytes(b1, sizeof(b1), (double)cap.capacity), (int64_t)cap.capacity, true);
	kv_row(t, "view", mem_view_name(tl.view), 0, false);
	if (cap.fits) {
		kv_row(t, "result", "fits", 0, false);
		kv_row(t, "peak", human_bytes(b1, sizeof(b1), (double)cap.peak), (int64_t)cap.peak, true);
		kv_row(t, "headroom at the peak", human_bytes(b1, sizeof(b1), (double)cap.headroom), (int64_t)cap.headroom, true);
		if (tl.peak.point >= 0) {
			snprintf(b2, sizeof(b2), "%.3f ms since the first event", ns_to_ms(tl.peak.t - rp->t_min));
			kv_row(t, "peak time", b2, 0, false);
			kv_row(t, "peak op", memory_block_op(rp, &tl.blocks[tl.peak.block]), 0, false);
		}
		report_note(r, "the whole run fits in %s: peak %s, headroom %s",
			    human_bytes(b1, sizeof(b1), (double)cap.capacity),
			    human_bytes(b2, sizeof(b2), (double)cap.peak),
			    human_bytes((char[32]){ 0 }, 32, (double)cap.headroom));
	} else {
		const struct mem_block *b = &tl.blocks[cap.block];
		const struct replay_mem *m = &rp->mem[tl.points[cap.point].mem];
		struct table *c;

		kv_row(t, "result", "out of memory", 0, false);
		kv_row(t, "request", human_bytes(b1, sizeof(b1), (double)cap.request), (int64_t)cap.request, true);
		kv_row(t, "category", st_mem_category_name(b->category), 0, false);
		kv_row(t, "op", memory_block_op(rp, b), 0, false);
		kv_row(t, "range", memory_point_range(rp, &tl, cap.point), 0, false);
		kv_row(t, "phase", mem_phase_name((enum mem_phase)b->phase), 0, false);
		if (m->step >= 0 && (size_t)m->step < rp->n_steps)
			snprintf(b2, sizeof(b2), "%" PRIu32 "%s", rp->steps[m->step].index,
				 rp->steps[m->step].warmup ? " (warm-up)" : "");
		else
			snprintf(b2, sizeof(b2), "outside steps");
		kv_row(t, "step", b2, 0, false);
		snprintf(b2, sizeof(b2), "%.3f ms since the first event", ns_to_ms(b->t_alloc - rp->t_min));
		kv_row(t, "time", b2, 0, false);
		kv_row(t, "live before it", human_bytes(b1, sizeof(b1), (double)cap.live_before), (int64_t)cap.live_before, true);
		kv_row(t, "overshoot", human_bytes(b1, sizeof(b1), (double)cap.overshoot), (int64_t)cap.overshoot, true);
		c = report_add_table(r, "live_at_failure", "Live by category when it fails");
		table_add_column(c, "Category", COL_STR, 0);
		table_add_column(c, "Bytes", COL_INT, 0);
		table_add_column(c, "MiB", COL_FLOAT, 1);
		for (int k = 0; k < ST_MEM_CATEGORY_COUNT; k++) {
			if (!cap.by_category[k])
				continue;
			table_row(c);
			table_str(c, st_mem_category_name(k));
			table_int(c, (int64_t)cap.by_category[k]);
			table_float(c, cap.by_category[k] / MIB);
		}
		report_note(r, "does not fit in %s: the %s %s request of %s overshoots by %s",
			    human_bytes(b1, sizeof(b1), (double)cap.capacity), st_mem_category_name(b->category),
			    *memory_block_op(rp, b) ? memory_block_op(rp, b) : "(no op)",
			    human_bytes(b2, sizeof(b2), (double)cap.request),
			    human_bytes((char[32]){ 0 }, 32, (double)cap.overshoot));
	}
	report_note(r, "counts live bytes of the %s's blocks only, not allocator fragmentation, caching or the CUDA context: "
		    "a real device of this size runs out somewhat sooner", mem_view_name(tl.view));
	if (!tl.n_blocks)
		report_note(r, "warning: the bundle holds no %s allocations", mem_view_name(tl.view));
	mem_timeline_release(&tl);
	return 0;
}
