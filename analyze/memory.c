/* memory.c: the memory report (see memory.h); the chart is render/memory_svg.c's, --svg cmd/memory.c's. */
#include "analyze/memory.h"

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

/* The last instant of step s that is its own: its end, or just before it when a step begins there. */
static uint64_t step_last_instant(const struct replay *rp, size_t s)
{
	uint64_t end = rp->steps[s].end;

	for (size_t k = 0; k < rp->n_steps; k++)
		if (k != s && rp->steps[k].start == end && end > rp->steps[s].start)
			return end - 1;
	return end;
}

/* "step 1", "step 0 (warm-up)" */
static const char *step_name(const struct replay *rp, size_t s, char *buf, size_t len)
{
	snprintf(buf, len, "step %" PRIu32 "%s", rp->steps[s].index, rp->steps[s].warmup ? " (warm-up)" : "");
	return buf;
}

static void peak_row(struct table *t, const struct replay *rp, const struct mem_timeline *tl,
		     const char *scope, const struct mem_peak *p)
{
	int32_t step = replay_step_at(rp, p->t);

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
	if (step >= 0)
		table_float(t, ns_to_ms(p->t - rp->steps[step].start));
	else
		table_empty(t);
	/* carried into its span: no allocation of its own, so no op */
	table_str(t, p->block >= 0 ? memory_point_op(rp, tl, p->point) : "");
	table_str(t, p->block >= 0 ? memory_point_range(rp, tl, p->point) : "");
}

/* The op and the range of a block or an instant: paths, cut in the middle where the text table is too wide. */
static void path_columns(struct table *t)
{
	table_add_column(t, "Op", COL_STR, 0);
	table_column_elastic(t);
	table_add_column(t, "Range", COL_STR, 0);
	table_column_elastic(t);
}

/* The peaks of view tl, then of the other view; only >= 0: of that step alone (--step). */
static void add_peaks(struct report *r, const struct replay *rp, const struct mem_timeline *tl,
		      const struct mem_timeline *other, int32_t only)
{
	char scope[64], title[96];
	struct table *t;

	snprintf(title, sizeof(title), "Peak live memory%s%s", only >= 0 ? " in " : "",
		 only >= 0 ? step_name(rp, (size_t)only, scope, sizeof(scope)) : "");
	t = report_add_table(r, "peaks", title);
	table_add_column(t, "Scope", COL_STR, 0);
	table_add_column(t, "View", COL_STR, 0);
	table_add_column(t, "Peak (bytes)", COL_INT, 0);
	table_add_column(t, "Peak (MiB)", COL_FLOAT, 1);
	table_add_column(t, "Time (ms)", COL_FLOAT, 3);
	table_add_column(t, "In step (ms)", COL_FLOAT, 3);
	path_columns(t);

	for (const struct mem_timeline *v = tl; v; v = v == tl && other && other->n_points ? other : NULL) {
		peak_row(t, rp, v, only >= 0 ? step_name(rp, (size_t)only, scope, sizeof(scope)) : "overall",
			 &v->peak);
		/* phases with a span or an allocation in the bundle (or the step) */
		for (int p = 0; v == tl && p < ST_PHASE_COUNT; p++) {
			if (v->phase_peak[p].point < 0)
				continue;
			snprintf(scope, sizeof(scope), "phase %s", st_phase_name(p));
			peak_row(t, rp, v, scope, &v->phase_peak[p]);
		}
		for (size_t s = 0; only < 0 && s < v->n_steps; s++)
			peak_row(t, rp, v, step_name(rp, s, scope, sizeof(scope)), &v->step_peak[s]);
		if (v == tl && only < 0 && v->n_steps && v->outside_steps_peak.point >= 0)
			peak_row(t, rp, v, "outside steps", &v->outside_steps_peak);
	}
}

static void add_categories(struct report *r, const struct mem_peak *p, const char *peak_name)
{
	char title[96];
	struct table *t;

	snprintf(title, sizeof(title), "By category at %s", peak_name);
	t = report_add_table(r, "at_peak", title);

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
	table_str(t, st_phase_name(b->phase));
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
	path_columns(t);
	table_add_column(t, "Allocated (ms)", COL_FLOAT, 3);
}

static int add_largest(struct report *r, const struct replay *rp, const struct mem_timeline *tl, int top,
		       const char *peak_name)
{
	uint32_t *idx = malloc(((size_t)top + 1) * sizeof(*idx));
	size_t live, shown;
	char title[96];
	struct table *t;

	snprintf(title, sizeof(title), "Largest live blocks at %s", peak_name);
	t = report_add_table(r, "largest_at_peak", title);

	if (!idx)
		return error("out of memory");
	table_add_column(t, "Order", COL_INT, 0);   /* 1: the largest; "Rank" is a GPU's, under ranks */
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

/*
 * What was live when the first out-of-memory happened: the largest blocks
 * then, and the request that failed. An empty table when the run had none.
 */
static int add_at_oom(struct report *r, const struct replay *rp, const struct mem_timeline *tl, int top)
{
	struct table *t;
	uint32_t *idx;
	size_t live, shown;
	int32_t p = -1;
	char b1[32], b2[32], b3[32];

	t = report_add_table(r, "largest_at_oom", "Largest live blocks at the first out-of-memory");
	table_optional(t);
	table_add_column(t, "Order", COL_INT, 0);   /* 1: the largest; "Rank" is a GPU's, under ranks */
	block_columns(t);
	for (size_t i = 0; i < tl->n_points && p < 0; i++)
		if (tl->points[i].kind == ST_OOM)
			p = (int32_t)i;
	if (p < 0)
		return 0;
	idx = malloc(((size_t)top + 1) * sizeof(*idx));
	if (!idx)
		return error("out of memory");
	live = mem_timeline_live_at(tl, p, idx, (size_t)top);
	shown = live < (size_t)top ? live : (size_t)top;
	for (size_t i = 0; i < shown; i++) {
		table_row(t);
		table_int(t, (int64_t)i + 1);
		block_cells(t, rp, tl, &tl->blocks[idx[i]]);
	}
	const struct st_event *ev = &rp->mem[tl->points[p].mem].ev;
	report_note(r, "the first out-of-memory, at %.3f ms: %s (%s) requested by '%s' in '%s' with %s "
		    "live of %s; %zu blocks were live%s", rel_ms(rp, ev->start),
		    human_bytes(b1, sizeof(b1), (double)ev->oom.requested),
		    st_mem_category_name((int)ev->oom.category),
		    *memory_point_op(rp, tl, p) ? memory_point_op(rp, tl, p) : "no op",
		    memory_point_range(rp, tl, p), human_bytes(b2, sizeof(b2), (double)tl->points[p].live),
		    human_bytes(b3, sizeof(b3), (double)ev->oom.capacity), live,
		    live > shown ? " (--top N lists more)" : "");
	free(idx);
	return 0;
}

/*
 * Never-freed blocks and unknown frees: tables of the first --top (empty,
 * and left out of the text formats, when there are none), notes with the
 * totals.
 */
static void add_unpaired(struct report *r, const struct replay *rp, const struct mem_timeline *tl, int top)
{
	const char *vname = mem_view_short_names[tl->view];
	char buf[32];
	struct table *t = report_add_table(r, tl->view == MEM_VIEW_DRIVER ? "never_freed_driver" : "never_freed",
					   tl->view == MEM_VIEW_DRIVER ? "Never freed by the end of the bundle (driver view)"
					   : "Never freed by the end of the bundle");
	struct table *u;

	table_optional(t);
	block_columns(t);
	table_add_column(t, "Address", COL_STR, 0);
	if (tl->n_never_freed) {
		uint64_t cat[ST_MEM_CATEGORY_COUNT] = { 0 };
		char list[512] = "";
		size_t len = 0;

		for (size_t i = 0; i < tl->n_never_freed; i++)
			cat[tl->blocks[tl->never_freed[i]].category] += tl->blocks[tl->never_freed[i]].size;
		for (int c = 0; c < ST_MEM_CATEGORY_COUNT && len < sizeof(list) - 64; c++)
			if (cat[c])
				len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s %s", len ? ", " : "",
							st_mem_category_name(c), human_bytes(buf, sizeof(buf), (double)cat[c]));
		report_note(r, "warning: %s view: %zu block(s) (%s) were never freed by the end of the bundle: %s%s",
			    vname, tl->n_never_freed, human_bytes(buf, sizeof(buf), (double)tl->never_freed_bytes),
			    list, tl->n_reused_live ? "; some addresses were allocated again while live (lost frees)" : "");
		for (size_t i = 0; i < tl->n_never_freed && i < (size_t)top; i++) {
			const struct mem_block *b = &tl->blocks[tl->never_freed[i]];

			table_row(t);
			block_cells(t, rp, tl, b);
			snprintf(buf, sizeof(buf), "0x%" PRIx64, b->address);
			table_str(t, buf);
		}
	}
	u = report_add_table(r, tl->view == MEM_VIEW_DRIVER ? "unknown_frees_driver" : "unknown_frees",
			     tl->view == MEM_VIEW_DRIVER ? "Frees of addresses not live (driver view)"
			     : "Frees of addresses not live");
	table_optional(u);
	table_add_column(u, "Address", COL_STR, 0);
	table_add_column(u, "Size (bytes)", COL_INT, 0);
	table_add_column(u, "Time (ms)", COL_FLOAT, 3);
	path_columns(u);
	if (tl->n_unknown_frees)
		report_note(r, "warning: %s view: %zu free(s) of addresses that were not live (their allocation was not recorded); ignored",
			    vname, tl->n_unknown_frees);
	if (tl->n_overlapping) {
		char shared[32];

		report_note(r, "warning: %s view: %zu allocation(s) overlap a block still live at another address (of up "
			       "to %s): no allocator hands out a byte twice (lost frees, or damage), so the live totals "
			       "and peaks count those bytes more than once", vname, tl->n_overlapping,
			    human_bytes(shared, sizeof(shared), (double)tl->overlap_bytes));
	}
	for (size_t i = 0; i < tl->n_unknown_frees && i < (size_t)top; i++) {
		int32_t p = (int32_t)tl->unknown_frees[i];
		const struct st_event *ev = &rp->mem[tl->points[p].mem].ev;

		table_row(u);
		snprintf(buf, sizeof(buf), "0x%" PRIx64, ev->mem.address);
		table_str(u, buf);
		table_int(u, (int64_t)ev->mem.size);
		table_float(u, rel_ms(rp, ev->start));
		table_str(u, memory_point_op(rp, tl, p));
		table_str(u, memory_point_range(rp, tl, p));
	}
}

/* Where the driver view's categories came from: the program's tags, and the rule for the rest. */
static void note_tags(struct report *r, const struct mem_timeline *tl)
{
	size_t tagged = 0;
	char ignored[96] = "";

	for (size_t i = 0; i < tl->n_blocks; i++)
		tagged += tl->blocks[i].tagged;
	if (tl->n_tags_ignored)
		snprintf(ignored, sizeof(ignored), "; %zu named no live block and were ignored", tl->n_tags_ignored);
	report_note(r, "driver view: %zu tag(s) of the program named the category of %zu block(s)%s; "
		    "untagged blocks: workspace when never freed, activation when allocated in the forward and "
		    "live when it ends, temporary when allocated in another phase or freed within the forward, "
		    "unknown outside every phase",
		    tl->n_tags - tl->n_tags_ignored, tagged, ignored);
}

int memory_step_index(const struct replay *rp, int step, int32_t *index)
{
	*index = -1;
	if (step < 0)
		return 0;
	for (size_t s = 0; s < rp->n_steps; s++)
		if (rp->steps[s].index == (uint32_t)step)
			*index = (int32_t)s;
	if (*index < 0)
		return error("no step %d in '%s' (it has %zu steps)", step, rp->path, rp->n_steps);
	return 0;
}

int memory_compute(const struct replay *rp, const struct memory_opts *a, struct memory_result *res)
{
	memset(res, 0, sizeof(*res));
	res->t1 = UINT64_MAX;
	if (memory_step_index(rp, a->step, &res->step) < 0)
		return -1;
	if (res->step >= 0) {
		res->t0 = rp->steps[res->step].start;
		res->t1 = step_last_instant(rp, (size_t)res->step);
	}
	if (mem_timeline_build_window(&res->views[MEM_VIEW_MODEL], rp, MEM_VIEW_MODEL, res->t0, res->t1) < 0)
		return -1;
	if (mem_timeline_build_window(&res->views[MEM_VIEW_DRIVER], rp, MEM_VIEW_DRIVER, res->t0, res->t1) < 0)
		return -1;
	/* no --view: the model allocator's, or CUDA's when the model reported nothing (a program recorded with -- COMMAND) */
	res->view = a->view >= 0 ? a->view
		    : !res->views[MEM_VIEW_MODEL].n_blocks && res->views[MEM_VIEW_DRIVER].n_blocks ? MEM_VIEW_DRIVER
		    : MEM_VIEW_MODEL;
	return 0;
}

void memory_result_release(struct memory_result *res)
{
	mem_timeline_release(&res->views[0]);
	mem_timeline_release(&res->views[1]);
}

int memory_report(struct report *r, const struct replay *rp, const struct memory_opts *a,
		  const struct memory_result *res)
{
	const struct mem_timeline *tl = &res->views[res->view], *other = &res->views[!res->view];
	const int32_t only = res->step;
	const int view = res->view;
	char b1[32], b2[32], peak_name[64];
	const char *op;

	if (!res->views[MEM_VIEW_MODEL].n_points && !res->views[MEM_VIEW_DRIVER].n_points)
		report_note(r, "the bundle holds no allocation events: nothing to report");
	else if (!tl->n_blocks && other->n_blocks)
		report_note(r, "the %s view is empty; see --view %s", mem_view_name(tl->view),
			    mem_view_short_names[other->view]);

	if (only >= 0)
		snprintf(peak_name, sizeof(peak_name), "the peak of %s", step_name(rp, (size_t)only, b1, sizeof(b1)));
	else
		snprintf(peak_name, sizeof(peak_name), "the overall peak");
	add_peaks(r, rp, tl, other, only);
	add_categories(r, &tl->peak, peak_name);
	if (add_largest(r, rp, tl, a->top, peak_name) < 0 || add_at_oom(r, rp, tl, a->top) < 0)
		return -1;
	/* the model view's tables first whichever is shown: the same order of keys for every bundle */
	add_unpaired(r, rp, &res->views[MEM_VIEW_MODEL], a->top);
	add_unpaired(r, rp, &res->views[MEM_VIEW_DRIVER], a->top);
	op = tl->peak.block < 0 ? "live when the step began" : memory_point_op(rp, tl, tl->peak.point);
	if (tl->peak.point >= 0 && view == MEM_VIEW_DRIVER && a->view < 0)
		report_note(r, "%s peak %s at %.3f ms (%s); the model allocator recorded nothing",
			    mem_view_name(tl->view), human_bytes(b1, sizeof(b1), (double)tl->peak.bytes),
			    rel_ms(rp, tl->peak.t), *op ? op : "no op");
	else if (tl->peak.point >= 0)
		report_note(r, "%s peak %s at %.3f ms (%s); driver-level (cudaMalloc) peak %s",
			    mem_view_name(tl->view), human_bytes(b1, sizeof(b1), (double)tl->peak.bytes),
			    rel_ms(rp, tl->peak.t), *op ? op : "no op",
			    view == MEM_VIEW_MODEL ? (other->n_points ? human_bytes(b2, sizeof(b2), (double)other->peak.bytes) : "not recorded")
			    : human_bytes(b2, sizeof(b2), (double)tl->peak.bytes));
	if (tl->view == MEM_VIEW_DRIVER && tl->n_tags)
		note_tags(r, tl);
	if (tl->n_ooms)
		report_note(r, "the run recorded %zu out-of-memory event(s); `steptrace replay --kind oom` lists them, "
			    "and the table above shows the first", tl->n_ooms);
	if (only >= 0)
		report_note(r, "peaks and blocks of %s alone (--step %d); blocks never freed are the whole bundle's",
			    step_name(rp, (size_t)only, b1, sizeof(b1)), a->step);
	report_note(r, "times in ms since the bundle's first event; a phase's or step's peak is the highest "
		    "live total during it, allocations or not (no op: what was live when it began)");
	return 0;
}

int memory_run(const struct replay *rp, const struct memory_opts *a, struct report *r)
{
	struct memory_result res;
	int rc = memory_compute(rp, a, &res);

	if (rc == 0)
		rc = memory_report(r, rp, a, &res);
	memory_result_release(&res);
	return rc;
}
