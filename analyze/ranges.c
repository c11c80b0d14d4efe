/* ranges.c: NVTX ranges with CPU and projected GPU time (see ranges.h). */
#include "analyze/ranges.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/common.h"
#include "lib/error.h"

static bool is_mirror(const struct replay *rp, const struct replay_range *g)
{
	return g->domain && !strcmp(replay_str(rp, g->domain), "steptrace.mirror");
}

struct by_start {
	uint64_t start;
	uint32_t range;
};

static int cmp_start(const void *a, const void *b)
{
	const struct by_start *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->range < y->range ? -1 : x->range > y->range;
}

/*
 * Each range's GPU span (start, end; equal when it has no GPU work), a
 * lead range's widened by its mirrors': the copies a helper thread (PyTorch's
 * autograd engine) makes of the lead thread's open ranges, whose kernels
 * are the range's too. A mirror belongs to the latest lead range of its path
 * that began before it and had not ended. O(n log n) in the ranges.
 */
static int gpu_spans(const struct replay *rp, uint64_t **start_out, uint64_t **end_out)
{
	size_t n = rp->n_ranges;
	uint64_t *start = malloc((n + 1) * sizeof(*start)), *end = malloc((n + 1) * sizeof(*end));
	struct by_start *order = malloc((n + 1) * sizeof(*order));
	int64_t *lead = malloc((rp->n_paths + 1) * sizeof(*lead));

	*start_out = start;
	*end_out = end;
	if (!start || !end || !order || !lead) {
		free(order);
		free(lead);
		return error("out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		start[i] = rp->ranges[i].gpu_start;
		end[i] = rp->ranges[i].gpu_end > rp->ranges[i].gpu_start ? rp->ranges[i].gpu_end : rp->ranges[i].gpu_start;
		order[i].start = rp->ranges[i].start;
		order[i].range = (uint32_t)i;
	}
	for (size_t p = 0; p < rp->n_paths; p++)
		lead[p] = -1;
	if (n > 1)
		qsort(order, n, sizeof(*order), cmp_start);
	for (size_t k = 0; k < n; k++) {
		const struct replay_range *g = &rp->ranges[order[k].range];
		int64_t l;

		if (g->path >= rp->n_paths)
			continue;
		if (!is_mirror(rp, g)) {
			lead[g->path] = order[k].range;
			continue;
		}
		l = lead[g->path];
		if (l < 0 || rp->ranges[l].end < g->start || g->gpu_end <= g->gpu_start)
			continue;
		if (end[l] <= start[l]) {       /* the lead has no GPU work of its own */
			start[l] = g->gpu_start;
			end[l] = g->gpu_end;
		} else {
			start[l] = g->gpu_start < start[l] ? g->gpu_start : start[l];
			end[l] = g->gpu_end > end[l] ? g->gpu_end : end[l];
		}
	}
	free(order);
	free(lead);
	return 0;
}

/* The PyTorch side's own ranges (steps, phases, modules: record/torch.c's domain). */
static bool is_torch(const struct replay *rp, const struct replay_range *g)
{
	return g->domain && !strcmp(replay_str(rp, g->domain), "steptrace.torch");
}

/*
 * Does range i count: a step's outermost range or a phase's span in every
 * counted step; below them, the PyTorch side's module ranges in the steps
 * that have them (replay_counts_modules), and anyone else's (NCCL's
 * ncclAllReduce, the program's own NVTX ranges), which every step has, in
 * every counted step: a phases-only step lacks modules, not those.
 */
static bool counted(const struct replay *rp, size_t i, bool include_warmup)
{
	const struct replay_range *g = &rp->ranges[i];

	if (replay_counts_modules(rp, g->step, include_warmup))
		return true;
	return replay_counts(rp, g->step, include_warmup) &&
	       (g->parent < 0 || replay_range_phase(rp, i) >= 0 || (!is_torch(rp, g) && !is_mirror(rp, g)));
}

int ranges_run(const struct replay *rp, const struct ranges_opts *args, struct report *r)
{
	struct replay_filter filter;
	struct dur_collect dc;
	struct dur_groups groups = { NULL, 0, 0 };
	uint64_t *gpu_time = NULL, *gpu_busy = NULL, *span_start = NULL, *span_end = NULL;
	struct table *t;
	char title[512];
	size_t shown;
	int rc = -1;

	dur_collect_init(&dc);
	if (replay_filter_init(&filter, rp, args->range) < 0)
		return -1;
	gpu_time = calloc(rp->n_paths + 1, sizeof(*gpu_time));
	gpu_busy = calloc(rp->n_paths + 1, sizeof(*gpu_busy));
	if (!gpu_time || !gpu_busy) {
		error("out of memory");
		goto out;
	}
	if (gpu_spans(rp, &span_start, &span_end) < 0)
		goto out;
	for (size_t i = 0; i < rp->n_ranges; i++) {
		const struct replay_range *g = &rp->ranges[i];

		if (!counted(rp, i, args->include_warmup) || !replay_filter_range(&filter, g))
			continue;
		if (args->depth > 0 && rp->paths[g->path].depth >= (uint32_t)args->depth)
			continue;
		/* A copy of a lead thread's range on a helper thread (`record -- COMMAND`,
		 * record/ranges.h) adds its GPU work, not another instance; its span
		 * widened its lead's (gpu_spans). */
		if (is_mirror(rp, g)) {
			gpu_busy[g->path] += g->gpu_busy;
			continue;
		}
		if (dur_collect_add(&dc, g->path, g->end - g->start) < 0)
			goto out;
		gpu_time[g->path] += span_end[i] - span_start[i];
		gpu_busy[g->path] += g->gpu_busy;
	}
	if (dur_collect_groups(&dc, &groups) < 0)
		goto out;
	for (size_t i = 0; i < groups.n; i++) {
		struct dur_group *g = &groups.g[i];
		g->name = replay_path_str(rp, (uint32_t)g->key);
		g->extra[0] = gpu_time[g->key];
		g->extra[1] = gpu_busy[g->key];
	}
	dur_groups_sort(&groups);

	snprintf(title, sizeof(title), "NVTX range summary%s%s%s, %s", args->range ? " under '" : "",
		 args->range ? args->range : "", args->range ? "'" : "",
		 rp->n_steps == 0 ? "all ranges (no steps in the bundle)"
		 : args->include_warmup ? "all steps (warm-up included)"
					: "measured steps (warm-up excluded)");
	t = report_add_table(r, "ranges", title);
	nsys_stat_columns(t, 1.0);
	table_add_column(t, "Style", COL_STR, 0);
	table_column_droppable(t, 1);
	table_add_column(t, "Range", COL_STR, 0);
	table_column_elastic(t);
	table_add_column(t, "GPU Time (ns)", COL_INT, 0);
	table_add_column(t, "GPU Busy (ns)", COL_INT, 0);
	shown = args->top > 0 && (size_t)args->top < groups.n ? (size_t)args->top : groups.n;
	for (size_t i = 0; i < shown; i++) {
		const struct dur_group *g = &groups.g[i];
		table_row(t);
		nsys_stat_cells(t, &g->s, groups.total, 1.0);
		table_str(t, "PushPop");
		table_str(t, g->name);
		table_int(t, (int64_t)g->extra[0]);
		table_int(t, (int64_t)g->extra[1]);
	}
	if (rp->n_ranges == 0)
		report_note(r, "the bundle has no NVTX ranges (was NVTX_INJECTION64_PATH set when recording?)");
	else if (groups.n == 0)
		report_note(r, "no ranges%s%s%s", args->range ? " under '" : "",
			    args->range ? args->range : "", args->range ? "'" : "");
	else if (shown < groups.n)
		report_note(r, "%zu of %zu rows shown (--top %d)", shown, groups.n, args->top);
	module_steps_note(rp, args->include_warmup, true, r);
	rc = 0;
out:
	free(gpu_time);
	free(span_start);
	free(span_end);
	free(gpu_busy);
	dur_groups_release(&groups);
	dur_collect_release(&dc);
	replay_filter_release(&filter);
	return rc;
}
