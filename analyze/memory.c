/* memory.c: the memory report (see memory.h); the chart is in memory_svg.c. */
#include "analyze/memory.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/common.h"
#include "lib/error.h"
#include "lib/human.h"

const char *memory_block_op(const struct replay *rp, const struct mem_block *b)
{
	const struct replay_op *op = replay_op(rp, b->op);

	if (!op)
		return "";
	return *replay_str(rp, op->path) ? replay_str(rp, op->path) : replay_str(rp, op->name);
}

const char *memory_point_range(const struct replay *rp, const struct mem_timeline *tl, int32_t p)
{
	const struct replay_mem *m;

	if (p < 0 || (size_t)p >= tl->n_points)
		return "";
	m = &rp->mem[tl->points[p].mem];
	if (m->range < 0 || (size_t)m->range >= rp->n_ranges)
		return "";
	return replay_range_path(rp, &rp->ranges[m->range]);
}

const char *memory_point_op(const struct replay *rp, const struct mem_timeline *tl, int32_t p)
{
	const struct st_event *ev;
	const struct replay_op *op;

	if (p < 0 || (size_t)p >= tl->n_points)
		return "";
	if (tl->points[p].block >= 0)
		return memory_block_op(rp, &tl->blocks[tl->points[p].block]);
	ev = &rp->mem[tl->points[p].mem].ev;
	op = replay_op(rp, ev->kind == ST_OOM ? ev->oom.op : ev->mem.op);
	if (!op)
		return "";
	return *replay_str(rp, op->path) ? replay_str(rp, op->path) : replay_str(rp, op->name);
}

static double rel_ms(const struct replay *rp, uint64_t t)
{
	return t >= rp->t_min ? ns_to_ms(t - rp->t_min) : -ns_to_ms(rp->t_min - t);
}

/* ---- the report ------------------------------------------------------- */

static void peak_row(struct table *t, const struct replay *rp, const struct mem_timeline *tl,
		     const char *scope, const struct mem_peak *p, int32_t step)
{
	table_row(t);
	table_str(t, scope);
	table_str(t, mem_view_short_names[tl->view]);
	if (p->point < 0) {
		table_int(t, 0);
		table_float(t, 0);
		for (int i = 0; i < 4; i++)
			table_empty(t);
		return;
	}
	table_int(t, (int64_t)p->bytes);
	table_float(t, p->bytes / MIB);
	table_float(t, rel_ms(rp, p->t));
	if (step >= 0 && (size_t)step < rp->n_steps && p->t >= rp->steps[step].start)
		table_float(t, ns_to_ms(p->t - rp->steps[step].start));
	else
		table_empty(t);
	table_str(t, memory_point_op(rp, tl, p->point));
	table_str(t, memory_point_range(rp, tl, p->point));
}

static void add_peaks(struct report *r, const struct replay *rp, const struct mem_timeline *tl,
		      const struct mem_timeline *other)
{
	struct table *t = report_add_table(r, "peaks", "Peak live memory");
	char scope[64];

	table_add_column(t, "Scope", COL_STR, 0);
	table_add_column(t, "View", COL_STR, 0);
	table_add_column(t, "Peak (bytes)", COL_INT, 0);
	table_add_column(t, "Peak (MiB)", COL_FLOAT, 1);
	table_add_column(t, "Time (ms)", COL_FLOAT, 3);
	table_add_column(t, "In step (ms)", COL_FLOAT, 3);
	table_add_column(t, "Op", COL_STR, 0);
	table_add_column(t, "Range", COL_STR, 0);

	peak_row(t, rp, tl, "overall", &tl->peak, rp->mem && tl->peak.point >= 0 ?
		 rp->mem[tl->points[tl->peak.point].mem].step : -1);
	for (int p = 0; p < MEM_PHASE_COUNT; p++) {
		const struct mem_peak *pk = &tl->phase_peak[p];

		if (p == MEM_PHASE_OTHER && pk->point < 0)
			continue;
		snprintf(scope, sizeof(scope), "phase %s", mem_phase_name((enum mem_phase)p));
		peak_row(t, rp, tl, scope, pk, pk->point >= 0 ? rp->mem[tl->points[pk->point].mem].step : -1);
	}
	for (size_t s = 0; s < tl->n_steps; s++) {
		snprintf(scope, sizeof(scope), "step %" PRIu32 "%s", rp->steps[s].index,
			 rp->steps[s].warmup ? " (warm-up)" : "");
		peak_row(t, rp, tl, scope, &tl->step_peak[s], (int32_t)s);
	}
	if (tl->n_steps && tl->outside_steps_peak.point >= 0)
		peak_row(t, rp, tl, "outside steps", &tl->outside_steps_peak, -1);
	if (other && other->n_points) {
		peak_row(t, rp, other, "overall", &other->peak,
			 other->peak.point >= 0 ? rp->mem[other->points[other->peak.point].mem].step : -1);
		for (size_t s = 0; s < other->n_steps; s++) {
			snprintf(scope, sizeof(scope), "step %" PRIu32 "%s", rp->steps[s].index,
				 rp->steps[s].warmup ? " (warm-up)" : "");
			peak_row(t, rp, other, scope, &other->step_peak[s], (int32_t)s);
		}
	}
}

static void add_categories(struct report *r, const struct mem_peak *p)
{
	struct table *t = report_add_table(r, "at_peak", "By category at the overall peak");

	table_add_column(t, "Category", COL_STR, 0);
	table_add_column(t, "Bytes", COL_INT, 0);
	table_add_column(t, "MiB", COL_FLOAT, 1);
	table_add_column(t, "Share (%)", COL_FLOAT, 1);
	for (int c = 0; c < ST_MEM_CATEGORY_COUNT; c++) {
		if (!p->by_category[c])
			continue;
		table_row(t);
		table_str(t, st_mem_category_name(c));
		table_int(t, (int64_t)p->by_category[c]);
		table_float(t, p->by_category[c] / MIB);
		table_float(t, p->bytes ? 100.0 * p->by_category[c] / p->bytes : 0);
	}
}

static void block_cells(struct table *t, const struct replay *rp, const struct mem_timeline *tl,
			const struct mem_block *b)
{
	table_int(t, (int64_t)b->size);
	table_float(t, b->size / MIB);
	table_str(t, st_mem_category_name(b->category));
	table_str(t, mem_phase_name((enum mem_phase)b->phase));
	table_str(t, memory_block_op(rp, b));
	table_str(t, memory_point_range(rp, tl, (int32_t)b->alloc_point));
	table_float(t, rel_ms(rp, b->t_alloc));
}

static void block_columns(struct table *t)
{
	table_add_column(t, "Bytes", COL_INT, 0);
	table_add_column(t, "MiB", COL_FLOAT, 2);
	table_add_column(t, "Category", COL_STR, 0);
	table_add_column(t, "Phase", COL_STR, 0);
	table_add_column(t, "Op", COL_STR, 0);
	table_add_column(t, "Range", COL_STR, 0);
	table_add_column(t, "Allocated (ms)", COL_FLOAT, 3);
}

static int add_largest(struct report *r, const struct replay *rp, const struct mem_timeline *tl, int top)
{
	struct table *t = report_add_table(r, "largest_at_peak", "Largest live blocks at the overall peak");
	uint32_t *idx = malloc(((size_t)top + 1) * sizeof(*idx));
	size_t live, shown;

	if (!idx)
		return error("out of memory");
	table_add_column(t, "Rank", COL_INT, 0);
	block_columns(t);
	live = mem_timeline_live_at(tl, tl->peak.point, idx, (size_t)top);
	shown = live < (size_t)top ? live : (size_t)top;
	for (size_t i = 0; i < shown; i++) {
		table_row(t);
		table_int(t, (int64_t)i + 1);
		block_cells(t, rp, tl, &tl->blocks[idx[i]]);
	}
	if (live > shown)
		report_note(r, "%zu blocks were live at the peak; the %zu largest are listed (--top N)", live, shown);
	free(idx);
	return 0;
}

/* Never-freed blocks and unknown frees: tables of the first --top, notes with the totals. */
static void add_unpaired(struct report *r, const struct replay *rp, const struct mem_timeline *tl, int top)
{
	const char *vname = mem_view_short_names[tl->view];
	char buf[32];

	if (tl->n_never_freed) {
		uint64_t cat[ST_MEM_CATEGORY_COUNT] = { 0 };
		char list[512] = "";
		size_t len = 0;
		struct table *t = report_add_table(r, tl->view == MEM_VIEW_DRIVER ? "never_freed_driver" : "never_freed",
						   tl->view == MEM_VIEW_DRIVER ? "Never freed by the end of the bundle (driver view)"
						   : "Never freed by the end of the bundle");

		for (size_t i = 0; i < tl->n_never_freed; i++)
			cat[tl->blocks[tl->never_freed[i]].category] += tl->blocks[tl->never_freed[i]].size;
		for (int c = 0; c < ST_MEM_CATEGORY_COUNT && len < sizeof(list) - 64; c++)
			if (cat[c])
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s %s", len ? ", " : "",
							st_mem_category_name(c), human_bytes(buf, sizeof(buf), (double)cat[c]));
		report_note(r, "warning: %s view: %zu block(s) (%s) were never freed by the end of the bundle: %s%s",
			    vname, tl->n_never_freed, human_bytes(buf, sizeof(buf), (double)tl->never_freed_bytes),
			    list, tl->n_reused_live ? "; some addresses were allocated again while live (lost frees)" : "");
		block_columns(t);
		table_add_column(t, "Address", COL_STR, 0);
		for (size_t i = 0; i < tl->n_never_freed && i < (size_t)top; i++) {
			const struct mem_block *b = &tl->blocks[tl->never_freed[i]];

			table_row(t);
			block_cells(t, rp, tl, b);
			snprintf(buf, sizeof(buf), "0x%" PRIx64, b->address);
			table_str(t, buf);
		}
	}
	if (tl->n_unknown_frees) {
		struct table *t = report_add_table(r, tl->view == MEM_VIEW_DRIVER ? "unknown_frees_driver" : "unknown_frees",
						   tl->view == MEM_VIEW_DRIVER ? "Frees of addresses not live (driver view)"
						   : "Frees of addresses not live");

		report_note(r, "warning: %s view: %zu free(s) of addresses that were not live (their allocation was not recorded); ignored",
			    vname, tl->n_unknown_frees);
		table_add_column(t, "Address", COL_STR, 0);
		table_add_column(t, "Size (bytes)", COL_INT, 0);
		table_add_column(t, "Time (ms)", COL_FLOAT, 3);
		table_add_column(t, "Op", COL_STR, 0);
		table_add_column(t, "Range", COL_STR, 0);
		for (size_t i = 0; i < tl->n_unknown_frees && i < (size_t)top; i++) {
			int32_t p = (int32_t)tl->unknown_frees[i];
			const struct st_event *ev = &rp->mem[tl->points[p].mem].ev;

			table_row(t);
			snprintf(buf, sizeof(buf), "0x%" PRIx64, ev->mem.address);
			table_str(t, buf);
			table_int(t, (int64_t)ev->mem.size);
			table_float(t, rel_ms(rp, ev->start));
			table_str(t, memory_point_op(rp, tl, p));
			table_str(t, memory_point_range(rp, tl, p));
		}
	}
}

/* The chart of the whole run, or of step a->step, into a->svg; -1 after an error line. */
static int write_svg(const struct replay *rp, const struct memory_opts *a, const struct mem_timeline *tl)
{
	FILE *f = fopen(a->svg, "w");
	uint64_t t0 = 0, t1 = 0;

	if (!f)
		return error("cannot write '%s': %s", a->svg, strerror(errno));
	if (a->step >= 0) {
		for (size_t s = 0; s < rp->n_steps; s++) {
			if (rp->steps[s].index == (uint32_t)a->step) {
				t0 = rp->steps[s].start;
				t1 = rp->steps[s].end;
			}
		}
	}
	if (memory_svg_write(f, rp, tl, t0, t1, 1200, 640) < 0) {
		fclose(f);
		return -1;
	}
	if (fclose(f) != 0)
		return error("cannot write '%s': %s", a->svg, strerror(errno));
	return 0;
}

int memory_run(const struct replay *rp, const struct memory_opts *a, struct report *r)
{
	struct mem_timeline views[2];
	struct mem_timeline *tl, *other;
	char b1[32], b2[32];
	int rc = -1, view;

	if (a->step >= 0) {
		bool found = false;

		for (size_t s = 0; s < rp->n_steps; s++)
			found |= rp->steps[s].index == (uint32_t)a->step;
		if (!found)
			return error("no step %d in '%s' (it has %zu steps)", a->step, rp->path, rp->n_steps);
	}
	if (mem_timeline_build(&views[MEM_VIEW_MODEL], rp, MEM_VIEW_MODEL) < 0)
		return -1;
	if (mem_timeline_build(&views[MEM_VIEW_DRIVER], rp, MEM_VIEW_DRIVER) < 0) {
		mem_timeline_release(&views[MEM_VIEW_MODEL]);
		return -1;
	}
	/* no --view: the model allocator's, or CUDA's when the model reported nothing (a program recorded with -- COMMAND) */
	view = a->view >= 0 ? a->view
	       : !views[MEM_VIEW_MODEL].n_blocks && views[MEM_VIEW_DRIVER].n_blocks ? MEM_VIEW_DRIVER : MEM_VIEW_MODEL;
	tl = &views[view];
	other = &views[!view];
	if (!views[MEM_VIEW_MODEL].n_points && !views[MEM_VIEW_DRIVER].n_points)
		report_note(r, "the bundle holds no allocation events: nothing to report");
	else if (!tl->n_blocks && other->n_blocks)
		report_note(r, "the %s view is empty; see --view %s", mem_view_name(tl->view),
			    mem_view_short_names[other->view]);

	add_peaks(r, rp, tl, other);
	add_categories(r, &tl->peak);
	if (add_largest(r, rp, tl, a->top) < 0)
		goto out;
	add_unpaired(r, rp, tl, a->top);
	if (other->n_points)
		add_unpaired(r, rp, other, a->top);
	if (tl->peak.point >= 0 && view == MEM_VIEW_DRIVER && a->view < 0)
		report_note(r, "%s peak %s at %.3f ms (%s); the model allocator recorded nothing",
			    mem_view_name(tl->view), human_bytes(b1, sizeof(b1), (double)tl->peak.bytes),
			    rel_ms(rp, tl->peak.t),
			    *memory_point_op(rp, tl, tl->peak.point) ? memory_point_op(rp, tl, tl->peak.point) : "no op");
	else if (tl->peak.point >= 0)
		report_note(r, "%s peak %s at %.3f ms (%s); driver-level (cudaMalloc) peak %s",
			    mem_view_name(tl->view), human_bytes(b1, sizeof(b1), (double)tl->peak.bytes),
			    rel_ms(rp, tl->peak.t), *memory_point_op(rp, tl, tl->peak.point) ? memory_point_op(rp, tl, tl->peak.point) : "no op",
			    view == MEM_VIEW_MODEL ? (other->n_points ? human_bytes(b2, sizeof(b2), (double)other->peak.bytes) : "not recorded")
			    : human_bytes(b2, sizeof(b2), (double)tl->peak.bytes));
	if (tl->n_ooms)
		report_note(r, "the run recorded %zu out-of-memory event(s); `steptrace replay --kind oom` lists them", tl->n_ooms);
	report_note(r, "times in ms since the bundle's first event; a phase's or step's peak is the highest live total its own allocations reached");

	if (a->svg) {
		if (write_svg(rp, a, views[MEM_VIEW_MODEL].n_blocks ? &views[MEM_VIEW_MODEL] : tl) < 0)
			goto out;
		report_note(r, "wrote the active-memory timeline to '%s'", a->svg);
	}
	rc = 0;
out:
	mem_timeline_release(&views[0]);
	mem_timeline_release(&views[1]);
	return rc;
}
