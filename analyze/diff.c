/*
 * diff.c: two bundles aligned by op kind, range path,
 * category or kernel (see diff.h). Each side is summed on its own into
 * (name, time per step) lists sorted by name; the report merges them, so a
 * name present on one side only gets 0 on the other, and no ratio.
 */
#include "analyze/diff.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/category.h"
#include "analyze/comm.h"
#include "analyze/common.h"
#include "lib/error.h"
#include "replay/memory.h"

const char *const diff_by_names[] = { "op", "range", "category", "kernel", "phase", NULL };

/* Below this share of GPU time in op kinds both sides have, --by op aligns by phase instead. */
#define OP_OVERLAP_MIN 0.5

/* ---- one side: (name, time per step) sorted by name ------------------- */

struct named {
	char *name;                 /* owned */
	char *sub;                  /* owned: the kernel name in the kernels pairing, else NULL */
	double time_ns, count;      /* per step */
};

struct named_list {
	struct named *v;
	size_t n;
};

static void named_list_release(struct named_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].name);
		free(l->v[i].sub);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static int cmp_str(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "");
}

static int cmp_named(const void *x, const void *y)
{
	const struct named *a = x, *b = y;
	int c = cmp_str(a->name, b->name);

	return c ? c : cmp_str(a->sub, b->sub);
}

/* Sorts by (name, sub) and sums duplicates (ops of one kind, paths of one name). */
static void named_list_merge_dups(struct named_list *l)
{
	size_t k = 0;

	if (l->n > 1)
		qsort(l->v, l->n, sizeof(*l->v), cmp_named);
	for (size_t i = 0; i < l->n; i++) {
		if (k && cmp_named(&l->v[k - 1], &l->v[i]) == 0) {
			l->v[k - 1].time_ns += l->v[i].time_ns;
			l->v[k - 1].count += l->v[i].count;
			free(l->v[i].name);
			free(l->v[i].sub);
		} else {
			l->v[k++] = l->v[i];
		}
	}
	l->n = k;
}

/* "forward/attn/softmax" for an op (its kind in its phase), "(no op)" for none. */
static char *op_group_name(const struct replay *rp, const struct replay_op *op)
{
	char buf[512];
	const char *phase, *kind;

	if (!op)
		return strdup("(no op)");
	phase = replay_str(rp, op->phase);
	kind = replay_str(rp, op->kind ? op->kind : op->path);
	snprintf(buf, sizeof(buf), "%s%s%s", phase, *phase ? "/" : "", kind);
	return strdup(buf);
}

/* Rows by op or range path (the kernels table's pairs too) sum modules: the steps that have them (1.8). */
static bool by_modules(const struct diff_options *opt, bool pairs)
{
	return pairs ? opt->by != DIFF_BY_PHASE : opt->by == DIFF_BY_OP || opt->by == DIFF_BY_RANGE;
}

static bool counted(const struct replay *rp, const struct replay_filter *f, const struct diff_options *opt,
		    const struct replay_activity *a, bool kernels_only, bool modules)
{
	if (kernels_only && a->kind != ST_KERNEL)
		return false;
	if (modules ? !replay_counts_modules(rp, a->step, opt->include_warmup)
		    : !replay_counts(rp, a->step, opt->include_warmup))
		return false;
	return replay_filter_activity(f, rp, a);
}

/* An activity's enum st_phase: its op's, else its NVTX path's. */
static int activity_phase(const struct replay *rp, const struct replay_activity *a)
{
	const struct replay_op *op = replay_op(rp, a->op);
	int p = op ? st_phase_from_name(replay_str(rp, op->phase)) : -1;

	return p >= 0 ? p : st_phase_of_path(replay_activity_path(rp, a));
}

/* The grouping key of an activity under --by, and the group's name. */
/* cc is used (and must be initialised) for DIFF_BY_CATEGORY and DIFF_BY_PHASE only. */
static uint64_t row_key(const struct replay *rp, struct category_cache *cc,
		       const struct replay_activity *a, int by)
{
	const struct replay_op *op;

	switch (by) {
	case DIFF_BY_PHASE:
		return (uint64_t)activity_phase(rp, a) << 8 | (uint64_t)category_cached(cc, a);
	case DIFF_BY_OP:
		op = replay_op(rp, a->op);
		return op ? (uint64_t)(op - rp->ops) + 1 : 0;
	case DIFF_BY_RANGE:
		return a->range >= 0 ? (uint64_t)rp->ranges[a->range].path + 1 : 0;
	case DIFF_BY_CATEGORY:
		return (uint64_t)category_cached(cc, a);
	default:
		return a->name;
	}
}

static char *row_name(const struct replay *rp, uint64_t key, int by)
{
	switch (by) {
	case DIFF_BY_OP:
		return op_group_name(rp, key ? &rp->ops[key - 1] : NULL);
	case DIFF_BY_RANGE:
		return strdup(key ? replay_path_str(rp, (uint32_t)(key - 1)) : "(no range)");
	case DIFF_BY_CATEGORY:
		return strdup(category_name((enum kernel_category)key));
	case DIFF_BY_PHASE: {
		char buf[64];

		snprintf(buf, sizeof(buf), "%s/%s", st_phase_name((int)(key >> 8)),
			 category_name((enum kernel_category)(key & 0xff)));
		return strdup(buf);
	}
	default:
		return strdup(replay_str(rp, (uint32_t)key));
	}
}

/*
 * Sums one side. pairs = false: one entry per --by group. pairs = true:
 * one entry per (op kind, or phase and category under --by phase, kernel
 * name), for the kernels table.
 */
static int side_collect(const struct replay *rp, const struct diff_options *opt, bool pairs,
			struct named_list *out)
{
	struct replay_filter filter;
	struct dur_collect dc;
	struct dur_groups groups = { NULL, 0, 0 };
	bool modules = by_modules(opt, pairs);
	double div = (double)(modules ? replay_module_step_divisor(rp, opt->include_warmup)
				      : replay_step_divisor(rp, opt->include_warmup));
	bool kernels_only = pairs || opt->by != DIFF_BY_CATEGORY;
	int pair_by = opt->by == DIFF_BY_PHASE ? DIFF_BY_PHASE : DIFF_BY_OP;
	struct category_cache cc = { 0 };
	int rc = -1;

	memset(out, 0, sizeof(*out));
	dur_collect_init(&dc);
	if (replay_filter_init(&filter, rp, opt->range) < 0)
		return -1;
	if ((opt->by == DIFF_BY_PHASE || (!pairs && opt->by == DIFF_BY_CATEGORY)) &&
	    category_cache_init(&cc, rp) < 0) {
		replay_filter_release(&filter);
		return -1;
	}
	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];
		uint64_t key;

		if (!counted(rp, &filter, opt, a, kernels_only, modules))
			continue;
		if (pairs)
			key = row_key(rp, &cc, a, pair_by) << 32 | a->name;
		else
			key = row_key(rp, &cc, a, opt->by);
		if (dur_collect_add(&dc, key, a->end > a->start ? a->end - a->start : 0) < 0)
			goto out;
	}
	if (dur_collect_groups(&dc, &groups) < 0)
		goto out;
	out->v = calloc(groups.n + 1, sizeof(*out->v));
	if (!out->v) {
		error("out of memory");
		goto out;
	}
	for (size_t i = 0; i < groups.n; i++) {
		const struct dur_group *g = &groups.g[i];
		struct named *e = &out->v[out->n++];

		if (pairs) {
			e->name = row_name(rp, g->key >> 32, pair_by);
			e->sub = strdup(replay_str(rp, (uint32_t)g->key));
		} else {
			e->name = row_name(rp, g->key, opt->by);
		}
		e->time_ns = (double)g->s.total / div;
		e->count = (double)g->s.n / div;
		if (!e->name || (pairs && !e->sub)) {
			error("out of memory");
			goto out;
		}
	}
	named_list_merge_dups(out);
	rc = 0;
out:
	if (rc < 0)
		named_list_release(out);
	dur_groups_release(&groups);
	dur_collect_release(&dc);
	category_cache_release(&cc);
	replay_filter_release(&filter);
	return rc;
}

/*
 * The kernels table's "Only in" cells (kernels joined with " + ") fit this
 * ("nvjet_... + 2 more"), unless --full-names (csv and json keep them whole).
 */
#define JOINED_WIDTH 55

/* ---- what the sides dropped while recording ---------------------------- */

/* Kinds a verdict counts on, ended by 0. */
static const int gpu_kinds[] = { ST_KERNEL, ST_MEMCPY, ST_MEMSET, 0 };
static const int memory_kinds[] = { ST_ALLOC, ST_FREE, ST_MEMTAG, 0 };

/* Whether rp dropped records of one of these kinds, or of a kind its footer does not name. */
static bool side_lost(const struct replay *rp, const int *kinds)
{
	uint64_t named = 0;

	for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST; k++)
		named += replay_dropped(rp, k);
	if (replay_dropped(rp, -1) > named)
		return true;
	for (const int *k = kinds; *k; k++)
		if (replay_dropped(rp, *k))
			return true;
	return false;
}

/*
 * The sides whose totals of these kinds are incomplete, "A", "B" or "A and
 * B"; NULL when both are whole. A verdict over them says so.
 */
static const char *lost_sides(const struct replay *a, const struct replay *b, const int *kinds)
{
	bool la = side_lost(a, kinds), lb = side_lost(b, kinds);

	return la && lb ? "A and B" : la ? "A" : lb ? "B" : NULL;
}

/* What each side dropped, and which comparisons that leaves incomplete. */
static void lost_notes(struct report *r, const struct replay *a, const struct replay *b)
{
	const char *gpu = lost_sides(a, b, gpu_kinds), *memory = lost_sides(a, b, memory_kinds);
	char text[512];

	if (*replay_dropped_text(a, text, sizeof(text)))
		report_note(r, "A: %s", text);
	if (*replay_dropped_text(b, text, sizeof(text)))
		report_note(r, "B: %s", text);
	if (gpu)
		report_note(r, "%s dropped records of GPU work: GPU times, kernel counts and their deltas "
			    "compare incomplete totals", gpu);
	if (memory)
		report_note(r, "%s dropped allocation records: the memory peaks may be wrong", memory);
}

/* ---- cells ------------------------------------------------------------ */

static void cell_or_empty(struct table *t, bool ok, double v)
{
	if (ok && isfinite(v))
		table_float(t, v);
	else
		table_empty(t);
}

/* A, B, Delta, B/A; a side that lacks the value gets empty cells. */
static void compare_cells(struct table *t, bool has_a, double a, bool has_b, double b)
{
	cell_or_empty(t, has_a, a);
	cell_or_empty(t, has_b, b);
	cell_or_empty(t, has_a && has_b, b - a);
	cell_or_empty(t, has_a && has_b && a != 0, b / a);
}

static void compare_columns(struct table *t, const char *unit, int precision)
{
	char name[64];

	snprintf(name, sizeof(name), "A%s", unit);
	table_add_column(t, name, COL_FLOAT, precision);
	snprintf(name, sizeof(name), "B%s", unit);
	table_add_column(t, name, COL_FLOAT, precision);
	snprintf(name, sizeof(name), "Delta%s", unit);
	table_add_column(t, name, COL_FLOAT, precision);
	table_add_column(t, "B/A", COL_FLOAT, 3);
}

/* ---- the aligned rows --------------------------------------------------- */

struct diff_row {
	const struct named *a, *b;
};

static double row_magnitude(const struct diff_row *r)
{
	double a = r->a ? r->a->time_ns : 0, b = r->b ? r->b->time_ns : 0;

	return fabs(b - a);
}

static int cmp_diff_row(const void *x, const void *y)
{
	const struct diff_row *p = x, *q = y;
	double mp = row_magnitude(p), mq = row_magnitude(q);

	if (mp != mq)
		return mp < mq ? 1 : -1;
	return strcmp(p->a ? p->a->name : p->b->name, q->a ? q->a->name : q->b->name);
}

/* Merges two name-sorted lists (subs ignored) into rows, largest |delta| first. */
static struct diff_row *merge_rows(const struct named_list *la, const struct named_list *lb, size_t *n)
{
	struct diff_row *rows = calloc(la->n + lb->n + 1, sizeof(*rows));
	size_t i = 0, j = 0, k = 0;

	if (!rows)
		return NULL;
	while (i < la->n || j < lb->n) {
		int c = i == la->n ? 1 : j == lb->n ? -1 : strcmp(la->v[i].name, lb->v[j].name);
		rows[k].a = c <= 0 ? &la->v[i++] : NULL;
		rows[k].b = c >= 0 ? &lb->v[j++] : NULL;
		k++;
	}
	if (k > 1)
		qsort(rows, k, sizeof(*rows), cmp_diff_row);
	*n = k;
	return rows;
}

/* What the kernel names of both sides print (analyze/common.h): names, or with subs the kernels'. */
static int both_names(struct kernel_names *kn, const struct named_list *la, const struct named_list *lb,
		      bool subs, size_t width, bool whole)
{
	const char **names = malloc((la->n + lb->n + 1) * sizeof(*names));
	size_t n = 0;
	int rc;

	if (!names)
		return error("out of memory");
	for (size_t i = 0; i < la->n; i++)
		names[n++] = subs ? la->v[i].sub : la->v[i].name;
	for (size_t i = 0; i < lb->n; i++)
		names[n++] = subs ? lb->v[i].sub : lb->v[i].name;
	rc = kernel_names_init(kn, names, n, width, whole);
	free(names);
	return rc;
}

static int rows_table(struct report *r, const struct replay *a, const struct replay *b,
		      const struct diff_options *opt)
{
	static const char *const by_name[] = { "op kind", "range path", "category", "kernel",
					       "phase and kernel category" };
	struct named_list la, lb;
	struct kernel_names kn = { NULL, NULL, 0, 0 };
	struct diff_row *rows;
	struct table *t;
	char title[512];
	size_t n = 0, shown;
	int rc = -1;

	if (side_collect(a, opt, false, &la) < 0)
		return -1;
	if (side_collect(b, opt, false, &lb) < 0) {
		named_list_release(&la);
		return -1;
	}
	rows = merge_rows(&la, &lb, &n);
	if (!rows) {
		named_list_release(&la);
		named_list_release(&lb);
		return error("out of memory");
	}
	snprintf(title, sizeof(title), "GPU time per step by %s%s%s%s, A -> B (largest change first)",
		 by_name[opt->by], opt->range ? " under '" : "", opt->range ? opt->range : "",
		 opt->range ? "'" : "");
	t = report_add_table(r, "diff", title);
	compare_columns(t, " (ms)", 3);
	table_add_column(t, "A Count", COL_FLOAT, 2);
	table_add_column(t, "B Count", COL_FLOAT, 2);
	table_add_column(t, "Name", COL_STR, 0);
	if (!opt->full_names)
		table_column_elastic(t);
	if (opt->by == DIFF_BY_KERNEL && both_names(&kn, &la, &lb, false, KERNEL_NAME_WIDTH, opt->full_names) < 0)
		goto out;
	shown = opt->top > 0 && (size_t)opt->top < n ? (size_t)opt->top : n;
	for (size_t i = 0; i < shown; i++) {
		const struct diff_row *d = &rows[i];
		double ta = d->a ? d->a->time_ns / 1e6 : 0, tb = d->b ? d->b->time_ns / 1e6 : 0;

		/* a row on one side only ran nothing on the other: 0 there, the whole time as the delta, no ratio */
		table_row(t);
		table_float(t, ta);
		table_float(t, tb);
		table_float(t, tb - ta);
		cell_or_empty(t, d->a && d->b && ta != 0, tb / ta);
		table_count(t, d->a ? d->a->count : 0);
		table_count(t, d->b ? d->b->count : 0);
		table_str(t, kernel_names_get(&kn, d->a ? d->a->name : d->b->name));
	}
	if (shown < n)
		report_note(r, "%zu of %zu rows shown (--top %d)", shown, n, opt->top);
	if (kernel_names_shortened(&kn))
		report_note(r, KERNEL_NAMES_NOTE);
	rc = 0;
out:
	kernel_names_release(&kn);
	free(rows);
	named_list_release(&la);
	named_list_release(&lb);
	return rc;
}

/* ---- steps ------------------------------------------------------------- */

struct step_facts {
	bool has_steps;
	double wall_ns, busy_ns;            /* means over counted steps */
	double kernel_ns, gemm_ns, fwd_kernel_ns, fwd_gemm_ns, kernels;   /* per step */
};

static int step_facts(const struct replay *rp, const struct diff_options *opt, struct step_facts *f)
{
	struct replay_filter filter;
	struct category_cache cc;
	double div = (double)replay_step_divisor(rp, opt->include_warmup);
	size_t n = 0;

	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < rp->n_steps; i++) {
		const struct replay_step *s = &rp->steps[i];
		if (!replay_counts(rp, (int32_t)i, opt->include_warmup))
			continue;
		f->wall_ns += (double)(s->end - s->start);
		f->busy_ns += (double)s->gpu_busy;
		n++;
	}
	if (n) {
		f->has_steps = true;
		f->wall_ns /= (double)n;
		f->busy_ns /= (double)n;
	}
	if (replay_filter_init(&filter, rp, opt->range) < 0)
		return -1;
	if (category_cache_init(&cc, rp) < 0) {
		replay_filter_release(&filter);
		return -1;
	}
	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];
		const struct replay_op *op;
		double d;
		bool gemm, fwd;

		if (!counted(rp, &filter, opt, a, true, false))
			continue;
		d = (double)(a->end > a->start ? a->end - a->start : 0);
		gemm = category_cached(&cc, a) == CAT_GEMM;
		op = replay_op(rp, a->op);
		fwd = op && st_phase_from_name(replay_str(rp, op->phase)) == ST_PHASE_FORWARD;
		f->kernel_ns += d;
		f->kernels += 1;
		f->gemm_ns += gemm ? d : 0;
		f->fwd_kernel_ns += fwd ? d : 0;
		f->fwd_gemm_ns += fwd && gemm ? d : 0;
	}
	f->kernel_ns /= div;
	f->gemm_ns /= div;
	f->fwd_kernel_ns /= div;
	f->fwd_gemm_ns /= div;
	f->kernels /= div;
	category_cache_release(&cc);
	replay_filter_release(&filter);
	return 0;
}

static void metric(struct table *t, const char *name, bool has_a, double a, bool has_b, double b)
{
	table_row(t);
	table_str(t, name);
	compare_cells(t, has_a, a, has_b, b);
}

static int steps_table(struct report *r, const struct replay *a, const struct replay *b,
		       const struct diff_options *opt)
{
	struct step_facts fa, fb;
	struct table *t;

	if (step_facts(a, opt, &fa) < 0 || step_facts(b, opt, &fb) < 0)
		return -1;
	t = report_add_table(r, "steps", opt->include_warmup ? "Steps (all steps, warm-up included)"
							    : "Steps (means over measured steps)");
	table_add_column(t, "Metric", COL_STR, 0);
	compare_columns(t, "", 3);
	metric(t, "step wall (ms)", fa.has_steps, fa.wall_ns / 1e6, fb.has_steps, fb.wall_ns / 1e6);
	metric(t, "GPU busy (ms)", fa.has_steps, fa.busy_ns / 1e6, fb.has_steps, fb.busy_ns / 1e6);
	metric(t, "kernel time (ms)", true, fa.kernel_ns / 1e6, true, fb.kernel_ns / 1e6);
	/* a count: whole numbers print whole */
	table_row(t);
	table_str(t, "kernels");
	table_count(t, fa.kernels);
	table_count(t, fb.kernels);
	table_count(t, fb.kernels - fa.kernels);
	cell_or_empty(t, fa.kernels != 0, fb.kernels / fa.kernels);
	metric(t, "GEMM share (%)", fa.kernel_ns > 0, 100 * fa.gemm_ns / fa.kernel_ns, fb.kernel_ns > 0,
	       100 * fb.gemm_ns / fb.kernel_ns);
	metric(t, "GEMM share, forward (%)", fa.fwd_kernel_ns > 0, 100 * fa.fwd_gemm_ns / fa.fwd_kernel_ns,
	       fb.fwd_kernel_ns > 0, 100 * fb.fwd_gemm_ns / fb.fwd_kernel_ns);
	return 0;
}

/* ---- memory ------------------------------------------------------------ */

/* The model allocator's view, or CUDA's when the model reported nothing. */
static int memory_view(const struct replay *rp, struct mem_timeline *tl)
{
	if (mem_timeline_build(tl, rp, MEM_VIEW_MODEL) < 0)
		return -1;
	if (tl->n_blocks > 0)
		return 0;
	mem_timeline_release(tl);
	return mem_timeline_build(tl, rp, MEM_VIEW_DRIVER);
}

static int memory_table(struct report *r, const struct replay *a, const struct replay *b)
{
	struct mem_timeline ta, tb;
	struct table *t;
	bool ha, hb;
	char name[96];

	if (memory_view(a, &ta) < 0)
		return -1;
	if (memory_view(b, &tb) < 0) {
		mem_timeline_release(&ta);
		return -1;
	}
	ha = ta.n_blocks > 0;
	hb = tb.n_blocks > 0;
	t = report_add_table(r, "memory", "Memory peaks (live bytes)");
	table_optional(t);
	table_add_column(t, "Metric", COL_STR, 0);
	compare_columns(t, " (MiB)", 3);
	if (!ha && !hb) {
		report_note(r, "no allocation events in either bundle: no memory comparison");
		goto out;
	}
	if (ha && hb && ta.view != tb.view)
		report_note(r, "memory: A from the %s, B from the %s", mem_view_name(ta.view), mem_view_name(tb.view));
	metric(t, "peak", ha, (double)ta.peak.bytes / MIB, hb, (double)tb.peak.bytes / MIB);
	for (int p = 0; p < ST_PHASE_OTHER; p++) {
		bool pa = ha && ta.phase_peak[p].bytes > 0, pb = hb && tb.phase_peak[p].bytes > 0;
		if (!pa && !pb)
			continue;
		snprintf(name, sizeof(name), "peak in %s", st_phase_name(p));
		metric(t, name, pa, (double)ta.phase_peak[p].bytes / MIB, pb,
		       (double)tb.phase_peak[p].bytes / MIB);
	}
	for (int c = 0; c < ST_MEM_CATEGORY_COUNT; c++) {
		uint64_t va = ha ? ta.peak.by_category[c] : 0, vb = hb ? tb.peak.by_category[c] : 0;
		if (!va && !vb)
			continue;
		snprintf(name, sizeof(name), "at peak: %s", st_mem_category_name(c));
		metric(t, name, ha, (double)va / MIB, hb, (double)vb / MIB);
	}
out:
	mem_timeline_release(&ta);
	mem_timeline_release(&tb);
	return 0;
}

/* ---- communication (data parallelism) ---------------------------------- */

static int comm_table(struct report *r, const struct replay *a, const struct replay *b,
		      const struct diff_options *opt)
{
	struct comm_totals ca, cb;
	double da = (double)replay_step_divisor(a, opt->include_warmup);
	double db = (double)replay_step_divisor(b, opt->include_warmup);
	struct table *t;

	if (comm_totals(a, opt->include_warmup, &ca) < 0 || comm_totals(b, opt->include_warmup, &cb) < 0)
		return -1;
	/* a run on one GPU has none: an empty table, left out of the text formats */
	t = report_add_table(r, "comm", "Communication per step and rank (see steptrace comm)");
	table_optional(t);
	table_add_column(t, "Metric", COL_STR, 0);
	compare_columns(t, "", 3);
	if (!ca.kernels && !cb.kernels)
		return 0;
	metric(t, "collectives", true, (double)ca.kernels / da, true, (double)cb.kernels / db);
	metric(t, "comm time (ms)", true, (double)ca.time_ns / da / 1e6, true, (double)cb.time_ns / db / 1e6);
	metric(t, "hidden (ms)", true, (double)ca.hidden_ns / da / 1e6, true, (double)cb.hidden_ns / db / 1e6);
	metric(t, "exposed (ms)", true, (double)(ca.time_ns - ca.hidden_ns) / da / 1e6, true,
	       (double)(cb.time_ns - cb.hidden_ns) / db / 1e6);
	metric(t, "hidden (%)", ca.time_ns > 0, 100.0 * (double)ca.hidden_ns / (double)ca.time_ns,
	       cb.time_ns > 0, 100.0 * (double)cb.hidden_ns / (double)cb.time_ns);
	return 0;
}

/* ---- kernels on one side only, paired by op ---------------------------- */

static int cmp_sub(const void *x, const void *y)
{
	const char *const *a = x, *const *b = y;

	return strcmp(*a, *b);
}

/* Every kernel name of a side, sorted, for membership tests. */
static const char **kernel_names(const struct named_list *l)
{
	const char **v = calloc(l->n + 1, sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < l->n; i++)
		v[i] = l->v[i].sub;
	if (l->n > 1)
		qsort(v, l->n, sizeof(*v), cmp_sub);
	return v;
}

static bool has_kernel(const char **names, size_t n, const char *name)
{
	return bsearch(&name, names, n, sizeof(*names), cmp_sub) != NULL;
}

struct pair_row {
	const char *op;
	char *only_a, *only_b;      /* " + "-joined kernel names, owned */
	double a_ns, b_ns;
};

/*
 * Appends the entries of l[from..to) whose kernel the other side lacks, as
 * kn prints them; where they do not fit `width` (0: no limit), the one
 * with the most time and "+ N more".
 */
static int join_only(const struct named_list *l, size_t from, size_t to, const char **other, size_t n_other,
		     const struct kernel_names *kn, size_t width, char **joined, double *time_ns)
{
	size_t len = 0, count = 0, most = from;

	for (size_t i = from; i < to; i++)
		if (!has_kernel(other, n_other, l->v[i].sub)) {
			len += strlen(kernel_names_get(kn, l->v[i].sub)) + 3;
			if (!count++ || l->v[i].time_ns > l->v[most].time_ns)
				most = i;
		}
	*joined = NULL;
	*time_ns = 0;
	if (!len)
		return 0;
	*joined = calloc(1, len + 32);
	if (!*joined)
		return error("out of memory");
	for (size_t i = from; i < to; i++) {
		if (has_kernel(other, n_other, l->v[i].sub))
			continue;
		if (**joined)
			strcat(*joined, " + ");
		strcat(*joined, kernel_names_get(kn, l->v[i].sub));
		*time_ns += l->v[i].time_ns;
	}
	if (width && count > 1 && strlen(*joined) > width)
		sprintf(*joined, "%s + %zu more", kernel_names_get(kn, l->v[most].sub), count - 1);
	return 0;
}

static int cmp_pair(const void *x, const void *y)
{
	const struct pair_row *a = x, *b = y;
	double ma = fmax(a->a_ns, a->b_ns), mb = fmax(b->a_ns, b->b_ns);

	if (ma != mb)
		return ma < mb ? 1 : -1;
	return strcmp(a->op, b->op);
}

static size_t group_end(const struct named_list *l, size_t i)
{
	size_t j = i;

	while (j < l->n && !strcmp(l->v[j].name, l->v[i].name))
		j++;
	return j;
}

/* A side's one-sided kernels and their time, or two empty cells. */
static void one_side_cells(struct table *t, const char *kernels, double ns)
{
	if (kernels) {
		table_str(t, kernels);
		table_float(t, ns / 1e6);
	} else {
		table_empty(t);
		table_empty(t);
	}
}

static int kernels_table(struct report *r, const struct replay *a, const struct replay *b,
			 const struct diff_options *opt)
{
	struct named_list la = { NULL, 0 }, lb = { NULL, 0 };
	struct kernel_names kn = { NULL, NULL, 0, 0 };
	size_t width = opt->full_names ? 0 : JOINED_WIDTH;
	const char *lost = lost_sides(a, b, gpu_kinds);
	const char **na = NULL, **nb = NULL;
	struct pair_row *rows = NULL;
	size_t n = 0, i = 0, j = 0, shown;
	struct table *t;
	int rc = -1;

	if (side_collect(a, opt, true, &la) < 0 || side_collect(b, opt, true, &lb) < 0)
		goto out;
	na = kernel_names(&la);
	nb = kernel_names(&lb);
	rows = calloc(la.n + lb.n + 1, sizeof(*rows));
	if (!na || !nb || !rows) {
		error("out of memory");
		goto out;
	}
	if (both_names(&kn, &la, &lb, true, JOINED_WIDTH - strlen(" + 99 more"), opt->full_names) < 0)
		goto out;
	while (i < la.n || j < lb.n) {
		int c = i == la.n ? 1 : j == lb.n ? -1 : strcmp(la.v[i].name, lb.v[j].name);
		size_t ie = c <= 0 ? group_end(&la, i) : i, je = c >= 0 ? group_end(&lb, j) : j;
		struct pair_row *p = &rows[n];

		p->op = c <= 0 ? la.v[i].name : lb.v[j].name;
		if (join_only(&la, i, ie, nb, lb.n, &kn, width, &p->only_a, &p->a_ns) < 0 ||
		    join_only(&lb, j, je, na, la.n, &kn, width, &p->only_b, &p->b_ns) < 0)
			goto out;
		if (p->only_a || p->only_b)
			n++;
		i = ie;
		j = je;
	}
	if (n > 1)
		qsort(rows, n, sizeof(*rows), cmp_pair);
	t = report_add_table(r, "kernels", opt->by == DIFF_BY_PHASE
				   ? "Kernels in one bundle only, paired by phase and kernel category"
				   : "Kernels in one bundle only, paired by the op kind that launched them");
	table_add_column(t, "Op", COL_STR, 0);
	table_column_elastic(t);
	table_add_column(t, "Only in A", COL_STR, 0);
	if (!opt->full_names)
		table_column_max_width(t, JOINED_WIDTH);
	table_add_column(t, "A (ms)", COL_FLOAT, 3);
	table_add_column(t, "Only in B", COL_STR, 0);
	if (!opt->full_names)
		table_column_max_width(t, JOINED_WIDTH);
	table_add_column(t, "B (ms)", COL_FLOAT, 3);
	shown = opt->top > 0 && (size_t)opt->top < n ? (size_t)opt->top : n;
	for (size_t k = 0; k < shown; k++) {
		table_row(t);
		table_str(t, rows[k].op);
		one_side_cells(t, rows[k].only_a, rows[k].a_ns);
		one_side_cells(t, rows[k].only_b, rows[k].b_ns);
	}
	if (n == 0 && lost)
		report_note(r, "no kernel of those recorded ran in one bundle only, but %s dropped records of GPU "
			    "work: whether both ran the same kernels is unknown", lost);
	else if (n == 0)
		report_note(r, "both bundles ran the same kernels");
	else if (lost)
		report_note(r, "%s dropped records of GPU work: a kernel shown in one bundle only may have run, "
			    "unrecorded, in the other", lost);
	if (n && shown < n)
		report_note(r, "%zu of %zu ops with one-sided kernels shown (--top %d)", shown, n, opt->top);
	if (n && kernel_names_shortened(&kn))
		report_note(r, KERNEL_NAMES_NOTE);
	rc = 0;
out:
	if (rows)
		for (size_t k = 0; k < la.n + lb.n; k++) {
			free(rows[k].only_a);
			free(rows[k].only_b);
		}
	free(rows);
	free(na);
	free(nb);
	kernel_names_release(&kn);
	named_list_release(&la);
	named_list_release(&lb);
	return rc;
}

/* ---- headers ------------------------------------------------------------ */

static void add_diff(char *buf, size_t len, const char *field, const char *va, const char *vb)
{
	size_t n = strlen(buf);

	if (n < len)
		snprintf(buf + n, len - n, "%s%s (%s -> %s)", n ? ", " : "", field, *va ? va : "?",
			 *vb ? vb : "?");
}

bool diff_headers(const struct replay *a, const struct replay *b, char *buf, size_t len)
{
	const struct replay_config *ca = &a->run.config, *cb = &b->run.config;
	bool structural = false;
	char x[32], y[32];

	if (len)
		buf[0] = '\0';
	if (!a->run.has_header || !b->run.has_header)
		return false;
	if (a->run.has_config && b->run.has_config && (!ca->d_model || !cb->d_model)) {
		/* a program recorded with `record -- COMMAND` states its precision only */
		if (strcmp(ca->precision_name, cb->precision_name))
			add_diff(buf, len, "precision", ca->precision_name, cb->precision_name);
	} else if (a->run.has_config && b->run.has_config) {
#define STR_FIELD(name, f, structure) do { \
		if (strcmp(ca->f, cb->f)) { add_diff(buf, len, name, ca->f, cb->f); structural |= (structure); } \
	} while (0)
#define NUM_FIELD(f) do { \
		if (ca->f != cb->f) { \
			snprintf(x, sizeof(x), "%" PRIu64, (uint64_t)ca->f); \
			snprintf(y, sizeof(y), "%" PRIu64, (uint64_t)cb->f); \
			add_diff(buf, len, #f, x, y); structural = true; \
		} \
	} while (0)
		STR_FIELD("model", model, true);
		NUM_FIELD(d_model);
		NUM_FIELD(d_ff);
		NUM_FIELD(layers);
		NUM_FIELD(heads);
		NUM_FIELD(vocab);
		NUM_FIELD(batch);
		NUM_FIELD(ctx);
		STR_FIELD("mode", mode_name, true);
		STR_FIELD("precision", precision_name, false);
		STR_FIELD("attention", attention_name, false);
		STR_FIELD("ddp", ddp_name, false);
		/* how the ranks' all-reduces ran, between runs that both have the setting: not structure */
#define SETTING(f, fmt, when) do { \
		if ((when) && ca->f != cb->f) { \
			snprintf(x, sizeof(x), fmt, ca->f); \
			snprintf(y, sizeof(y), fmt, cb->f); \
			add_diff(buf, len, #f, x, y); \
		} \
	} while (0)
		SETTING(bucket_mb, "%g", ca->ddp == ST_DDP_BUCKET && cb->ddp == ST_DDP_BUCKET);
		SETTING(sm_carveout, "%" PRIu32, st_ddp_overlaps(ca->ddp) && st_ddp_overlaps(cb->ddp));
		SETTING(nccl_ctas, "%" PRIu32, st_ddp_overlaps(ca->ddp) && st_ddp_overlaps(cb->ddp));
		/* (1.12) between runs of several ranks; "" (older, or unset) reads as nccl */
		if (*ca->ddp_name && *cb->ddp_name) {
			const char *ra = *ca->allreduce ? ca->allreduce : "nccl";
			const char *rb = *cb->allreduce ? cb->allreduce : "nccl";

			if (strcmp(ra, rb))
				add_diff(buf, len, "allreduce", ra, rb);
		}
		/* by value: a bundle from before 1.4 names none, and ran plain */
		if (ca->kernels != cb->kernels)
			add_diff(buf, len, "kernels", st_name(st_kernels_names, ca->kernels),
				 st_name(st_kernels_names, cb->kernels));
#undef STR_FIELD
#undef NUM_FIELD
#undef SETTING
	}
	if (a->run.has_device && b->run.has_device && strcmp(a->run.device.name, b->run.device.name) != 0) {
		add_diff(buf, len, "device", a->run.device.name, b->run.device.name);
		structural = true;
	}
	return structural;
}

/* ---- the report --------------------------------------------------------- */

/*
 * The share of both sides' GPU time (per step) in op kinds both have; 1
 * when there is no time. -1 on error.
 */
static double op_overlap(const struct replay *a, const struct replay *b, const struct diff_options *opt)
{
	struct named_list la, lb;
	double common = 0, total = 0;
	size_t i = 0, j = 0;

	if (side_collect(a, opt, false, &la) < 0)
		return -1;
	if (side_collect(b, opt, false, &lb) < 0) {
		named_list_release(&la);
		return -1;
	}
	for (size_t k = 0; k < la.n; k++)
		total += la.v[k].time_ns;
	for (size_t k = 0; k < lb.n; k++)
		total += lb.v[k].time_ns;
	while (i < la.n && j < lb.n) {
		int c = strcmp(la.v[i].name, lb.v[j].name);

		if (c == 0)
			common += la.v[i++].time_ns + lb.v[j++].time_ns;
		else if (c < 0)
			i++;
		else
			j++;
	}
	named_list_release(&la);
	named_list_release(&lb);
	return total > 0 ? common / total : 1;
}

int diff_run(const struct replay *a, const struct replay *b, const struct diff_options *options,
	     struct report *r)
{
	char what[1024];
	bool structural = diff_headers(a, b, what, sizeof(what));
	struct diff_options o = *options;
	const struct diff_options *opt = &o;

	if (o.by < 0) {
		double overlap;

		o.by = DIFF_BY_OP;
		overlap = op_overlap(a, b, opt);

		if (overlap < 0)
			return -1;
		if (overlap < OP_OVERLAP_MIN) {
			o.by = DIFF_BY_PHASE;
			report_note(r, "only %.0f%% of the GPU time is in op kinds both bundles have (different "
				    "implementations?): rows are aligned by phase and kernel category",
				    100 * overlap);
		}
	}
	lost_notes(r, a, b);
	if (*what) {
		report_note(r, "A and B differ in %s", what);
		if (structural && opt->warn)
			warning("bundles differ in %s: rows are matched by name where the structure matches",
				   what);
	}
	if (rows_table(r, a, b, opt) < 0 || steps_table(r, a, b, opt) < 0 || memory_table(r, a, b) < 0 ||
	    comm_table(r, a, b, opt) < 0 || kernels_table(r, a, b, opt) < 0)
		return -1;
	return 0;
}
