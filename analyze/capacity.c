/* capacity.c: does the run fit in a device of a given size (see capacity.h). */
#include "analyze/capacity.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/common.h"
#include "analyze/memory.h"
#include "lib/error.h"
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

struct labelled {
	const char *label;
	size_t step;
};

static int cmp_labelled(const void *a, const void *b)
{
	const struct labelled *x = a, *y = b;
	int c = strcmp(x->label, y->label);

	return c ? c : (x->step > y->step) - (x->step < y->step);
}

/*
 * first[s]: the first step with step s's label. Sorted, not compared step
 * against step: a sweep of 150,000 configurations is 150,000 labels.
 */
static int first_of_label(const char **label, size_t n, size_t *first)
{
	struct labelled *by = malloc((n + 1) * sizeof(*by));

	if (!by)
		return error("out of memory");
	for (size_t s = 0; s < n; s++)
		by[s] = (struct labelled){ label[s], s };
	qsort(by, n, sizeof(*by), cmp_labelled);
	for (size_t i = 0; i < n; i++)
		first[by[i].step] = i && !strcmp(by[i].label, by[i - 1].label) ? first[by[i - 1].step] : by[i].step;
	free(by);
	return 0;
}

/*
 * When the steps carry different labels (an attention sweep: one
 * configuration each), whether each configuration fits on its own: its
 * steps' peak, or at least what was live plus the request that failed where
 * it ran out when recorded. Steps of one label are one row, warm-up
 * included, in the order of their first step. 0, or -1 after an error line.
 */
static int add_by_label(struct report *r, const struct replay *rp, const struct mem_timeline *tl,
			uint64_t capacity)
{
	bool differ;
	const char **label = step_labels(rp, &differ);
	uint64_t *need = calloc(rp->n_steps + 1, sizeof(*need)), *peak = calloc(rp->n_steps + 1, sizeof(*peak));
	size_t *first = calloc(rp->n_steps + 1, sizeof(*first)), *n = calloc(rp->n_steps + 1, sizeof(*n));
	bool *oom = calloc(rp->n_steps + 1, sizeof(*oom));
	size_t fit = 0, rows = 0;
	struct table *t;
	int rc = -1;

	if (!label || !need || !peak || !first || !n || !oom) {
		if (label)
			error("out of memory");
		goto out;
	}
	rc = 0;
	/* In every report, so JSON's keys do not depend on the bundle: empty unless the steps are of different ranges */
	t = report_add_table(r, "capacity_by_range", "Each step's range against the capacity");
	table_optional(t);
	table_add_column(t, "Range", COL_STR, 0);
	table_column_elastic(t);
	table_add_column(t, "Steps", COL_INT, 0);
	table_add_column(t, "Peak (MiB)", COL_FLOAT, 1);
	table_add_column(t, "Needs (MiB)", COL_FLOAT, 1);
	table_add_column(t, "Recorded", COL_STR, 0);
	table_add_column(t, "Fits", COL_STR, 0);
	if (!differ || tl->n_steps != rp->n_steps)
		goto out;
	for (size_t s = 0; s < rp->n_steps; s++)
		need[s] = tl->step_peak[s].bytes;
	for (size_t i = 0; i < tl->n_points; i++) {
		const struct replay_mem *m = &rp->mem[tl->points[i].mem];

		if (tl->points[i].kind != ST_OOM || m->step < 0 || (size_t)m->step >= rp->n_steps)
			continue;
		oom[m->step] = true;
		if (m->ev.oom.live_bytes + m->ev.oom.requested > need[m->step])
			need[m->step] = m->ev.oom.live_bytes + m->ev.oom.requested;
	}
	rc = first_of_label(label, rp->n_steps, first);
	if (rc < 0)
		goto out;
	/* each label's totals on its first step */
	for (size_t u = 0; u < rp->n_steps; u++) {
		size_t s = first[u];

		n[s]++;
		peak[s] = tl->step_peak[u].bytes > peak[s] ? tl->step_peak[u].bytes : peak[s];
		need[s] = need[u] > need[s] ? need[u] : need[s];
		oom[s] |= oom[u];
	}
	for (size_t s = 0; s < rp->n_steps; s++) {
		if (first[s] != s)
			continue;
		table_row(t);
		table_str(t, label[s]);
		table_int(t, (int64_t)n[s]);
		table_float(t, peak[s] / MIB);
		table_float(t, need[s] / MIB);
		table_str(t, oom[s] ? "OOM" : "ok");
		table_str(t, need[s] > capacity ? "no" : oom[s] ? "maybe" : "yes");
		fit += need[s] <= capacity && !oom[s];
		rows++;
	}
	report_note(r, "%zu of %zu step ranges fit in %s on their own (Needs: the steps' peak, or "
		    "where the recording ran out, at least the live bytes plus the failed request: "
		    "\"maybe\" if that fits)", fit, rows,
		    human_bytes((char[32]){ 0 }, 32, (double)capacity));
out:
	free(label);
	free(need);
	free(peak);
	free(first);
	free(n);
	free(oom);
	return rc;
}

/* What was live when the replay ran out; in every report (empty when it fits), so JSON's keys stay. */
static struct table *failure_table(struct report *r)
{
	struct table *c = report_add_table(r, "live_at_failure", "Live by category when it fails");

	table_optional(c);
	table_add_column(c, "Category", COL_STR, 0);
	table_add_column(c, "Bytes", COL_INT, 0);
	table_add_column(c, "MiB", COL_FLOAT, 1);
	return c;
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
	table_column_elastic(t);   /* an op's path */
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
		failure_table(r);
	} else {
		const struct mem_block *b = &tl.blocks[cap.block];
		const struct replay_mem *m = &rp->mem[tl.points[cap.point].mem];
		struct table *c;

		kv_row(t, "result", "out of memory", 0, false);
		kv_row(t, "request", human_bytes(b1, sizeof(b1), (double)cap.request), (int64_t)cap.request, true);
		kv_row(t, "category", st_mem_category_name(b->category), 0, false);
		kv_row(t, "op", memory_block_op(rp, b), 0, false);
		kv_row(t, "range", memory_point_range(rp, &tl, cap.point), 0, false);
		kv_row(t, "phase", st_phase_name(b->phase), 0, false);
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
		c = failure_table(r);
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
	int rc = add_by_label(r, rp, &tl, a->capacity);
	mem_timeline_release(&tl);
	return rc;
}
