/*
 * summary.c: `steptrace summary`, the kernel summary with exactly Nsight
 * Systems' cuda_gpu_kern_sum columns, by kernel name, by op or by category.
 *
 * --by op groups by the op's phase and kind, summed over layers:
 * "forward/attn/softmax" is every layer's forward softmax. Kernels no op
 * launched fall in "(no op)". Memcpys and memsets are left out, as nsys
 * keeps them in other reports, except with --by category or --all.
 *
 * Time (%) is a share of kernel time, memcpys and memsets left out of the
 * total even where they have a row: so the GEMM share here is the one
 * flops, diff and report print (GEMM kernel time over all kernel time).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/summary.h"

#include "analyze/category.h"
#include "analyze/common.h"
#include "lib/error.h"

const char *const summary_by_names[] = { "kernel", "op", "category", NULL };

/* The op group key: phase id in the high half, kind id in the low half; 0 = no op. */
static uint64_t op_key(const struct replay *rp, const struct replay_activity *a)
{
	const struct replay_op *op = replay_op(rp, a->op);

	if (!op)
		return 0;
	return (uint64_t)op->phase << 32 | (op->kind ? op->kind : op->path);
}

static const char *op_group_name(const struct replay *rp, uint64_t key, char *buf, size_t len)
{
	const char *phase = replay_str(rp, (uint32_t)(key >> 32));
	const char *kind = replay_str(rp, (uint32_t)key);

	if (key == 0)
		return "(no op)";
	if (*phase)
		snprintf(buf, len, "%s/%s", phase, kind);
	else
		snprintf(buf, len, "%s", kind);
	return buf;
}

/* By op, or under a range path: module rows, from the steps that have them (replay_counts_modules). */
static bool by_modules(const struct summary_opts *args)
{
	return args->by == BY_OP || args->range;
}

/* Groups the selected work into dc; *kernel_ns gets the kernels' total. */
static int collect(const struct replay *rp, const struct summary_opts *args,
		   const struct replay_filter *filter, struct dur_collect *dc, uint64_t *kernel_ns)
{
	struct category_cache cc = { 0 };
	int rc = -1;

	if (args->by == BY_CATEGORY && category_cache_init(&cc, rp) < 0)
		return -1;
	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];
		uint64_t key;

		if (a->kind != ST_KERNEL && !args->all && args->by != BY_CATEGORY)
			continue;
		if (!(by_modules(args) ? replay_counts_modules(rp, a->step, args->include_warmup)
				       : replay_counts(rp, a->step, args->include_warmup)) ||
		    !replay_filter_activity(filter, rp, a))
			continue;
		switch (args->by) {
		case BY_OP:
			key = op_key(rp, a);
			break;
		case BY_CATEGORY:
			key = category_cached(&cc, a);
			break;
		default:
			key = a->name;
			break;
		}
		if (dur_collect_add(dc, key, a->end - a->start) < 0)
			goto out;
		if (a->kind == ST_KERNEL)
			*kernel_ns += a->end - a->start;
	}
	rc = 0;
out:
	category_cache_release(&cc);
	return rc;
}

/* What the kernel rows print (analyze/common.h): base names unless whole. */
static int row_names(struct kernel_names *kn, const struct dur_groups *g, bool whole)
{
	const char **names = malloc((g->n + 1) * sizeof(*names));
	int rc;

	if (!names)
		return error("out of memory");
	for (size_t i = 0; i < g->n; i++)
		names[i] = g->g[i].name;
	rc = kernel_names_init(kn, names, g->n, KERNEL_NAME_WIDTH, whole);
	free(names);
	return rc;
}

static void title_of(const struct replay *rp, const struct summary_opts *args, double per_step,
		     char *buf, size_t len)
{
	int n = snprintf(buf, len, "CUDA GPU %s summary by %s",
			 args->all || args->by == BY_CATEGORY ? "kernel and copy" : "kernel",
			 summary_by_names[args->by]);

	if (args->range && n > 0 && (size_t)n < len)
		n += snprintf(buf + n, len - n, " under '%s'", args->range);
	if (n > 0 && (size_t)n < len) {
		if (rp->n_steps == 0)
			snprintf(buf + n, len - n, " (no steps in the bundle: all work)");
		else if (per_step > 1.0 || args->per_step)
			snprintf(buf + n, len - n, ", per %s step (totals / %.0f steps)",
				 args->include_warmup ? "recorded" : "measured", per_step);
		else
			snprintf(buf + n, len - n, ", %s",
				 args->include_warmup ? "all steps (warm-up included)"
						      : "measured steps (warm-up excluded)");
	}
}

int summary_run(const struct replay *rp, const struct summary_opts *args, struct report *r)
{
	struct replay_filter filter;
	struct dur_collect dc;
	struct dur_groups groups = { NULL, 0, 0 };
	struct kernel_names kn = { NULL, NULL, 0, 0 };
	struct table *t;
	char title[512], buf[512];
	double per_step = 1.0;
	uint64_t kernel_ns = 0;
	size_t shown;
	int rc = -1;

	dur_collect_init(&dc);
	if (replay_filter_init(&filter, rp, args->range) < 0)
		return -1;
	if (collect(rp, args, &filter, &dc, &kernel_ns) < 0 || dur_collect_groups(&dc, &groups) < 0)
		goto out;

	/* names first: the sort breaks ties by name; --by op names live in one buffer per group */
	char **owned = calloc(groups.n + 1, sizeof(*owned));
	if (!owned)
		goto out;
	for (size_t i = 0; i < groups.n; i++) {
		struct dur_group *g = &groups.g[i];
		if (args->by == BY_KERNEL) {
			g->name = replay_str(rp, (uint32_t)g->key);
		} else if (args->by == BY_CATEGORY) {
			g->name = category_name((enum kernel_category)g->key);
		} else {
			owned[i] = strdup(op_group_name(rp, g->key, buf, sizeof(buf)));
			g->name = owned[i] ? owned[i] : "";
		}
	}
	if (args->by == BY_KERNEL && row_names(&kn, &groups, args->full_names) < 0)
		goto free_names;
	dur_groups_sort(&groups);

	if (args->per_step && rp->n_steps)
		per_step = (double)(by_modules(args) ? replay_module_step_divisor(rp, args->include_warmup)
						     : replay_step_divisor(rp, args->include_warmup));
	title_of(rp, args, per_step, title, sizeof(title));
	t = report_add_table(r, "summary", title);
	nsys_stat_columns(t, per_step);
	table_add_column(t, "Name", COL_STR, 0);
	if (!args->full_names)
		table_column_elastic(t);
	shown = args->top > 0 && (size_t)args->top < groups.n ? (size_t)args->top : groups.n;
	for (size_t i = 0; i < shown; i++) {
		table_row(t);
		nsys_stat_cells(t, &groups.g[i].s, kernel_ns, per_step);
		table_str(t, args->by == BY_KERNEL ? kernel_names_get(&kn, groups.g[i].name) : groups.g[i].name);
	}
	if (groups.n == 0)
		report_note(r, "no GPU work%s%s%s", args->range ? " under '" : "",
			    args->range ? args->range : "", args->range ? "'" : "");
	else if (shown < groups.n)
		report_note(r, "%zu of %zu rows shown (--top %d)", shown, groups.n, args->top);
	if (args->by == BY_KERNEL && kernel_names_shortened(&kn))
		report_note(r, KERNEL_NAMES_NOTE);
	if (groups.total > kernel_ns)
		report_note(r, "Time (%%) is a share of kernel time: memcpy and memset rows are measured "
			    "against it, not part of it");
	if (per_step > 1.0)
		report_note(r, "totals and instances are per %s step: divided by %.0f steps",
			    args->include_warmup ? "recorded" : "measured", per_step);
	if (by_modules(args))
		module_steps_note(rp, args->include_warmup, false, r);
	rc = 0;
free_names:
	for (size_t i = 0; i < groups.n; i++)
		free(owned[i]);
	free(owned);
	kernel_names_release(&kn);
out:
	dur_groups_release(&groups);
	dur_collect_release(&dc);
	replay_filter_release(&filter);
	return rc;
}

