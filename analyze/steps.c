/*
 * steps.c: `steptrace steps`, per-step host wall time (synchronised, as the
 * seeds' benchmarking scripts time it), GPU busy time and GPU span, and
 * mean ± std over measured steps; with --include-warmup the same over all
 * steps and over the warm-up steps alone, which shows the effect of warm-up.
 * When the bundle says what the recorder cost (format 1.8), its own host
 * time per step, and what that is per kernel launch, NVTX range and module
 * call.
 */
#include <stdio.h>
#include <stdlib.h>

#include "analyze/steps.h"

#include "analyze/common.h"
#include "lib/error.h"
#include "lib/stats.h"

enum step_set { SET_MEASURED, SET_ALL, SET_WARMUP };

/* Which steps have module ranges, in a bundle that has them on a sample of its steps (1.8). */
static void module_steps_list(const struct replay *rp, struct report *r)
{
	char list[256];
	size_t n = 0, shown = 0, len = 0;

	list[0] = '\0';
	for (size_t i = 0; i < rp->n_steps; i++) {
		if (rp->steps[i].phases_only)
			continue;
		if (shown < 16 && len < sizeof(list)) {
			int w = snprintf(list + len, sizeof(list) - len, "%s%u", shown ? ", " : "", rp->steps[i].index);

			len += w > 0 ? (size_t)w : 0;
			shown++;
		}
		n++;
	}
	report_note(r, "module ranges on %zu of the %zu steps (%s%s; the others have phases only): summary --by op "
		    "and --range, ranges, flops, diff --by op and explain's critical path read those", n, rp->n_steps,
		    list, n > shown ? ", ..." : "");
}

static bool in_set(const struct replay_step *s, enum step_set set)
{
	return set == SET_ALL || (set == SET_WARMUP) == s->warmup;
}

/* One statistics row over a set of steps, its wall times' into *wall; false when the set is empty. */
static bool stats_row(struct table *t, const struct replay *rp, enum step_set set, uint64_t *buf,
		      struct dur_stats *wall_out)
{
	static const char *const names[] = { "measured", "with warm-up", "warm-up only" };
	struct dur_stats wall, busy, span;
	size_t n = 0;

	for (size_t i = 0; i < rp->n_steps; i++)
		if (in_set(&rp->steps[i], set))
			buf[n++] = rp->steps[i].end - rp->steps[i].start;
	if (n == 0)
		return false;
	dur_stats_compute(buf, n, &wall);
	if (wall_out)
		*wall_out = wall;
	n = 0;
	for (size_t i = 0; i < rp->n_steps; i++)
		if (in_set(&rp->steps[i], set))
			buf[n++] = rp->steps[i].gpu_busy;
	dur_stats_compute(buf, n, &busy);
	n = 0;
	for (size_t i = 0; i < rp->n_steps; i++)
		if (in_set(&rp->steps[i], set))
			buf[n++] = rp->steps[i].gpu_end - rp->steps[i].gpu_start;
	dur_stats_compute(buf, n, &span);

	table_row(t);
	table_str(t, names[set]);
	table_int(t, (int64_t)n);
	table_float(t, wall.mean / 1e6);
	table_float(t, wall.stddev / 1e6);
	table_float(t, wall.median / 1e6);
	table_float(t, (double)wall.min / 1e6);
	table_float(t, (double)wall.max / 1e6);
	table_float(t, busy.mean / 1e6);
	table_float(t, busy.stddev / 1e6);
	table_float(t, span.mean / 1e6);
	table_float(t, span.stddev / 1e6);
	return true;
}

/* The recorder's own time over the steps shown: per step, per part, per what it handled. */
static void recorder_notes(const struct replay *rp, const struct replay_cost *cost, bool include_warmup,
			   struct report *r)
{
	struct replay_cost sum = { 0 };
	double wall = 0, n = 0, by_kind[2][3] = { { 0 } };   /* [phases only][callbacks ns, launches, steps] */
	char cupti[64] = "", split[160] = "";

	for (size_t i = 0; i < rp->n_steps; i++) {
		const struct replay_cost *c = &cost[i];
		double *k = by_kind[rp->steps[i].phases_only];

		if (rp->steps[i].warmup && !include_warmup)
			continue;
		k[0] += (double)c->callback_ns;
		k[1] += (double)c->launches;
		k[2]++;
		sum.callback_ns += c->callback_ns;
		sum.nvtx_ns += c->nvtx_ns;
		sum.hook_ns += c->hook_ns;
		sum.python_ns += c->python_ns;
		sum.launches += c->launches;
		sum.ranges += c->ranges;
		sum.modules += c->modules;
		sum.cupti_ns += c->cupti_ns;
		wall += (double)(rp->steps[i].end - rp->steps[i].start);
		n++;
	}
	if (!n)
		return;
	if (sum.cupti_ns)
		snprintf(cupti, sizeof(cupti), ", CUPTI inside the launches %.3f ms", (double)sum.cupti_ns / n / 1e6);
	report_note(r, "recorder: its own host time %.3f ms per step (%.1f%% of the wall time): CUPTI callbacks %.3f, "
		       "NVTX handlers %.3f, entry points %.3f, Python side %.3f ms%s",
		    (double)replay_cost_ns(&sum) / n / 1e6, wall > 0 ? 100 * (double)replay_cost_ns(&sum) / wall : 0,
		    (double)sum.callback_ns / n / 1e6, (double)sum.nvtx_ns / n / 1e6, (double)sum.hook_ns / n / 1e6,
		    (double)sum.python_ns / n / 1e6, cupti);
	if (sum.cupti_ns)
		report_note(r, "recorder: CUPTI's work inside the launch calls %.3f ms per step: %.0f ns per launch, measured in "
			       "the process (%u x %u launches of an empty kernel, traced %.1f us and untraced %.1f us a "
			       "batch, medians)",
			    (double)sum.cupti_ns / n / 1e6, replay_launch_cost_ns(&rp->run), rp->run.launch_cost.rounds,
			    rp->run.launch_cost.launches, (double)rp->run.launch_cost.traced_ns / 1e3,
			    (double)rp->run.launch_cost.untraced_ns / 1e3);
	/* steps with module ranges cost more a launch (the backward's node chains): each kind apart where both are shown */
	if (by_kind[0][1] > 0 && by_kind[1][1] > 0)
		snprintf(split, sizeof(split), "; %.0f ns on the %.0f step%s with module ranges, %.0f on the %.0f with phases only",
			 by_kind[0][0] / by_kind[0][1], by_kind[0][2], by_kind[0][2] == 1 ? "" : "s",
			 by_kind[1][0] / by_kind[1][1], by_kind[1][2]);
	if (sum.launches && sum.callback_ns)
		report_note(r, "recorder: %.0f ns per kernel launch (its CUPTI callbacks over %.0f launches per step%s)",
			    (double)sum.callback_ns / (double)sum.launches, (double)sum.launches / n, split);
	if (sum.ranges && sum.nvtx_ns)
		report_note(r, "recorder: %.0f ns per NVTX range (its NVTX handlers over %.0f ranges per step)",
			    (double)sum.nvtx_ns / (double)sum.ranges, (double)sum.ranges / n);
	if (sum.modules)
		report_note(r, "recorder: %.1f us per module call (the entry points and the Python side over %.0f calls "
			       "per step)",
			    (double)(sum.hook_ns + sum.python_ns) / (double)sum.modules / 1e3, (double)sum.modules / n);
}

/*
 * (1.11) An armed window: the program's unrecorded steps just before it
 * against its measured steps here (their wall times' statistics: `wall`,
 * n 0 when none), both the program's own time in one process: what
 * recording cost it, measured; and the recorder's own time while armed.
 */
static void measured_cost_note(const struct replay *rp, const struct dur_stats *wall, struct report *r)
{
	struct dur_stats before;
	bool measured = replay_unrecorded_steps(&rp->run, &before);

	if (measured && wall->n)
		report_note(r, "recorder: measured in the process: the program's %zu unrecorded steps just before this "
			       "window took %.3f ms (median; %.3f-%.3f), its %zu recorded steps here %.3f ms: recording "
			       "cost it %+.1f%%",
			    (size_t)before.n, before.median / 1e6, (double)before.min / 1e6, (double)before.max / 1e6,
			    (size_t)wall->n, wall->median / 1e6, 100 * (wall->median - before.median) / before.median);
	if (rp->run.armed_span_ns) {
		double share = (double)rp->run.armed_recorder_ns / (double)rp->run.armed_span_ns;
		char per[64] = "";

		if (measured)
			snprintf(per, sizeof(per), ", %.1f us per unrecorded step", share * before.median / 1e3);
		report_note(r, "recorder: armed, recording nothing, over the %.3f s of the run before this window: its own "
			       "host time %.3f ms (%.3f%%%s)",
			    (double)rp->run.armed_span_ns / 1e9, (double)rp->run.armed_recorder_ns / 1e6, 100 * share, per);
	}
}

int steps_run(const struct replay *rp, bool include_warmup, struct report *r)
{
	struct table *t = report_add_table(r, "steps", include_warmup ? "Steps (warm-up included)"
								       : "Measured steps");
	struct table *s;
	struct dur_stats measured_wall;
	uint64_t *buf = malloc((rp->n_steps + 1) * sizeof(*buf));
	struct replay_cost *cost = calloc(rp->n_steps + 1, sizeof(*cost));
	bool labelled, has_cost;
	const char **label = step_labels(rp, &labelled);

	if (!buf || !label || !cost) {
		free(buf);
		free(cost);
		free(label);
		return label ? error("out of memory") : -1;
	}
	has_cost = replay_step_costs(rp, cost, NULL);
	table_add_column(t, "Step", COL_INT, 0);
	table_add_column(t, "Warm-up", COL_STR, 0);
	table_add_column(t, "Wall (ms)", COL_FLOAT, 3);
	table_add_column(t, "GPU Busy (ms)", COL_FLOAT, 3);
	table_add_column(t, "GPU Span (ms)", COL_FLOAT, 3);
	table_add_column(t, "Kernels", COL_INT, 0);
	if (has_cost)   /* (1.8) */
		table_add_column(t, "Recorder (ms)", COL_FLOAT, 3);
	if (labelled) {   /* steps of different things (an attention sweep): say which */
		table_add_column(t, "Range", COL_STR, 0);
		table_column_elastic(t);
	}
	for (size_t i = 0; i < rp->n_steps; i++) {
		const struct replay_step *st = &rp->steps[i];
		if (st->warmup && !include_warmup)
			continue;
		table_row(t);
		table_int(t, st->index);
		table_str(t, st->warmup ? "yes" : "no");
		table_float(t, ns_to_ms(st->end - st->start));
		table_float(t, ns_to_ms(st->gpu_busy));
		table_float(t, ns_to_ms(st->gpu_end - st->gpu_start));
		table_int(t, st->kernels);
		if (has_cost)
			table_float(t, ns_to_ms(replay_cost_ns(&cost[i])));
		if (labelled)
			table_str(t, label[i]);
	}
	free(label);

	s = report_add_table(r, "stats", "Mean ± std over steps: wall time, and the GPU's busy time and span");
	table_add_column(s, "Steps", COL_STR, 0);
	table_add_column(s, "N", COL_INT, 0);
	table_add_column(s, "Wall Mean (ms)", COL_FLOAT, 3);
	table_add_column(s, "Wall Std (ms)", COL_FLOAT, 3);
	table_add_column(s, "Wall Med (ms)", COL_FLOAT, 3);
	table_add_column(s, "Wall Min (ms)", COL_FLOAT, 3);
	table_add_column(s, "Wall Max (ms)", COL_FLOAT, 3);
	table_add_column(s, "Busy Mean (ms)", COL_FLOAT, 3);
	table_add_column(s, "Busy Std (ms)", COL_FLOAT, 3);
	table_add_column(s, "Span Mean (ms)", COL_FLOAT, 3);
	table_add_column(s, "Span Std (ms)", COL_FLOAT, 3);
	if (!stats_row(s, rp, SET_MEASURED, buf, &measured_wall))
		measured_wall.n = 0;
	if (include_warmup) {
		stats_row(s, rp, SET_ALL, buf, NULL);
		stats_row(s, rp, SET_WARMUP, buf, NULL);
	}
	free(buf);

	if (*rp->run.steps_from)
		report_note(r, "steps from: %s", rp->run.steps_from);
	if (has_cost)
		recorder_notes(rp, cost, include_warmup, r);
	measured_cost_note(rp, &measured_wall, r);
	free(cost);
	if (rp->n_phases_only)
		module_steps_list(rp, r);
	if (rp->n_steps == 0)
		report_note(r, "the bundle has no steps");
	else if (rp->n_measured_steps == 0)
		report_note(r, "every step is a warm-up step; see --include-warmup");
	if (include_warmup && rp->n_measured_steps && rp->n_measured_steps < rp->n_steps) {
		/* the seeds' question: what does leaving warm-up in do to mean and std */
		double m = 0, a = 0;
		for (size_t i = 0; i < rp->n_steps; i++) {
			a += (double)(rp->steps[i].end - rp->steps[i].start);
			if (!rp->steps[i].warmup)
				m += (double)(rp->steps[i].end - rp->steps[i].start);
		}
		m /= (double)rp->n_measured_steps;
		a /= (double)rp->n_steps;
		report_note(r, "counting the %zu warm-up step(s) changes the mean wall time by %+.3f ms (%+.1f%%)",
			    rp->n_steps - rp->n_measured_steps, (a - m) / 1e6, m > 0 ? 100.0 * (a - m) / m : 0.0);
	}
	return 0;
}
