/*
 * sections.c: a bundle's cards in the order the page shows them (see
 * sections.h): the run, Explain (explain.c), the timeline (its data
 * timeline.c's), step time, time by phase and by category, layers
 * (layers.c), the top kernels, ops, ranges, memory and the roofline (their
 * charts render/'s), and Communication (comm.c) for a run with collectives
 * or several ranks; and the page's table of contents, which names them.
 */
#include "report/sections.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/category.h"
#include "analyze/common.h"
#include "analyze/flops.h"
#include "analyze/memory.h"
#include "analyze/ranges.h"
#include "lib/error.h"
#include "lib/human.h"
#include "render/html.h"
#include "render/memory_svg.h"
#include "render/roofline_svg.h"
#include "render/svg.h"
#include "replay/memory.h"
#include "report/comm.h"
#include "report/explain.h"
#include "report/layers.h"
#include "report/page.h"
#include "report/timeline.h"

#define KERNEL_ROWS 500      /* kernel names written at most */
#define RANGE_ROWS 400       /* range paths written at most */

/* ---- charts of our own ---------------------------------------------------- */

/* Bars of (label, value ns), longest first as given; share of `total`. */
static void bar_chart(FILE *out, const char *title, const char *const *labels, const double *values,
		      const int *colors, int n, double total)
{
	const double label_w = 170, value_w = 170, row = 28, top = 6;
	double max = 0, w = CHART_W;
	int shown = 0;
	char b[32];

	for (int i = 0; i < n; i++) {
		max = values[i] > max ? values[i] : max;
		shown += values[i] > 0;
	}
	if (!shown) {
		fputs("<p class=\"muted\">No GPU work.</p>\n", out);
		return;
	}
	svg_begin(out, (int)w, (int)(top * 2 + row * shown), title);
	for (int i = 0, y = 0; i < n; i++) {
		if (values[i] <= 0)
			continue;
		double yy = top + row * y++;
		double bw = (w - label_w - value_w) * values[i] / max;
		double share = total > 0 ? 100.0 * values[i] / total : 0.0;
		svg_text(out, label_w - 10, yy + 18, SVG_END, 13, "#344054", NULL, "%s", labels[i]);
		svg_rect(out, label_w, yy + 5, w - label_w - value_w, 18, "#f2f4f7", "rx=\"4\"");
		page_tip_rect(out, label_w, yy + 5, bw < 2 ? 2 : bw, 18, svg_series_color(colors[i]),
			 "%s: %s per step, %.1f%% of the kernel time", labels[i], human_time(b, sizeof(b), values[i]), share);
		svg_text(out, w - value_w + 10, yy + 18, SVG_START, 13, "#1d2330",
			 "style=\"font-variant-numeric:tabular-nums\"", "%s  (%.1f%%)",
			 human_time(b, sizeof(b), values[i]), share);
	}
	svg_end(out);
}

/* One horizontal stacked bar of the phases, with a legend below. */
static void phase_bar(FILE *out, const struct page_data *d)
{
	double total = 0, x = 0, w = CHART_W;
	char b[32];

	for (int p = 0; p < ST_PHASE_COUNT; p++)
		total += d->phase_gpu[p];
	if (total <= 0) {
		fputs("<p class=\"muted\">No GPU work under forward, backward or optimizer ranges.</p>\n", out);
		return;
	}
	svg_begin(out, (int)w, 44, "GPU time by phase");
	for (int p = 0; p < ST_PHASE_COUNT; p++) {
		double bw = w * d->phase_gpu[p] / total;
		if (bw <= 0)
			continue;
		page_tip_rect(out, x, 4, bw, 36, svg_phase_color(p), "%s: %s per step (%.1f%%)", st_phase_name(p),
			 human_time(b, sizeof(b), d->phase_gpu[p]), 100.0 * d->phase_gpu[p] / total);
		if (bw > 120)
			svg_text(out, x + 10, 27, SVG_START, 13, "#fff", "font-weight=\"600\" pointer-events=\"none\"",
				 "%s %.0f%%", st_phase_name(p), 100.0 * d->phase_gpu[p] / total);
		x += bw;
	}
	svg_end(out);
	fputs("<div class=\"legend\">", out);
	for (int p = 0; p < ST_PHASE_COUNT; p++)
		if (d->phase_gpu[p] > 0)
			fprintf(out, "<span><i style=\"background:%s\"></i>%s: %s</span>", svg_phase_color(p),
				st_phase_name(p), human_time(b, sizeof(b), d->phase_gpu[p]));
	fputs("</div>\n", out);
}

/*
 * A column per step (host wall time), warm-up steps in grey. The scale is
 * the measured steps': a warm-up step many times longer is cut at the top
 * and labelled with its time, so it does not flatten the steps that count.
 */
static void steps_chart(FILE *out, const struct replay *rp)
{
	const double h = 150, left = 60, bottom = 24, w = CHART_W;
	double max = 0, max_all = 0, ticks[8], step;
	char b[32];
	int nt;

	if (rp->n_steps == 0 || rp->n_steps > 400)
		return;
	for (size_t i = 0; i < rp->n_steps; i++) {
		double v = (double)(rp->steps[i].end - rp->steps[i].start);

		max_all = fmax(max_all, v);
		if (!rp->steps[i].warmup)
			max = fmax(max, v);
	}
	max = svg_nice_ceil((max > 0 ? max * 1.25 : max_all) / 1e6);
	nt = svg_ticks_linear(0, max, 4, ticks, 8, &step);
	svg_begin(out, (int)w, (int)h, "Host wall time per step");
	for (int i = 0; i < nt; i++) {
		double y = h - bottom - (h - bottom - 8) * ticks[i] / max;
		svg_line(out, left, y, w, y, "#eaecf0", 1, NULL);
		svg_text(out, left - 6, y + 4, SVG_END, 11, "#667085", NULL, "%s ms",
			 svg_fmt_tick(b, sizeof(b), ticks[i], step));
	}
	double cw = (w - left) / (double)rp->n_steps;
	for (size_t i = 0; i < rp->n_steps; i++) {
		const struct replay_step *s = &rp->steps[i];
		double v = (double)(s->end - s->start) / 1e6, bh = (h - bottom - 8) * fmin(v, max) / max;
		page_tip_rect(out, left + cw * (double)i + cw * 0.15, h - bottom - bh, cw * 0.7, bh,
			 s->warmup ? "#c4c9d2" : "#3b5bdb", "step %" PRIu32 "%s: %.3f ms host wall, %.3f ms GPU busy, "
			 "%" PRIu32 " kernels", s->index, s->warmup ? " (warm-up)" : "", v, (double)s->gpu_busy / 1e6,
			 s->kernels);
		if (v > max && rp->n_steps <= 40)   /* cut: say how tall it is */
			svg_text(out, left + cw * ((double)i + 0.5), h - bottom - bh + 14, SVG_MIDDLE, 11,
				 "#344054", "pointer-events=\"none\"", "%.1f ms", v);
		if (rp->n_steps <= 40)
			svg_text(out, left + cw * ((double)i + 0.5), h - 7, SVG_MIDDLE, 11, "#667085", NULL,
				 "%" PRIu32 "%s", s->index, s->warmup ? " (w)" : "");
	}
	svg_end(out);
}

/* ---- sections ---------------------------------------------------------------- */

/*
 * The timeline's data: every rank of the page's run, one lane group each on
 * the run's time line; rank 0's memory counter is the page's, the others'
 * in the same view.
 */
static int write_timeline_data(FILE *out, const struct page_data *d, const char *id)
{
	const struct replay_ranks *rs = d->ranks;
	struct report_timeline_rank *ranks;
	struct mem_timeline *tls;
	int rc = -1;

	if (!rs || rs->n < 2)
		return report_timeline_write(out, d->rp, &d->tl, id, REPORT_TIMELINE_BUDGET);
	ranks = calloc(rs->n, sizeof(*ranks));
	tls = calloc(rs->n, sizeof(*tls));   /* zeroed: released whether built or not */
	if (!ranks || !tls) {
		error("out of memory for the timeline");
		goto out;
	}
	for (size_t r = 0; r < rs->n; r++) {
		ranks[r] = (struct report_timeline_rank){ rs->rank[r], &tls[r], rs->offset[r],
							  replay_ranks_rank(rs, r) };
		if (rs->rank[r] == d->rp)
			ranks[r].tl = &d->tl;
		else if (mem_timeline_build(&tls[r], rs->rank[r], d->tl.view) < 0)
			goto out;
	}
	rc = report_timeline_write_ranks(out, ranks, rs->n, id, REPORT_TIMELINE_BUDGET);
out:
	for (size_t r = 0; tls && r < rs->n; r++)
		mem_timeline_release(&tls[r]);
	free(tls);
	free(ranks);
	return rc;
}

static int write_timeline(FILE *out, const struct page_data *d)
{
	char id[64], lead[512];

	snprintf(id, sizeof(id), "%stimeline-data", d->prefix);
	snprintf(lead, sizeof(lead), "One step as recorded: kernels and copies on each GPU stream (coloured by "
		 "category), the NVTX ranges of each host thread nested by depth, and live memory as a counter%s. "
		 "Wheel or +/- to zoom, drag to pan, hover for values, click to pin a slice's details, double-click "
		 "to fit the step.", d->ranks && d->ranks->n > 1 ? "; one lane group per rank, on the run's time line"
								: "");
	page_section_begin(out, d, "timeline", "Timeline", lead);
	fprintf(out, "<div class=\"tl\" data-src=\"%s\"><noscript><p class=\"muted\">The timeline is drawn by the "
		"page's script; it needs JavaScript.</p></noscript></div>\n", id);
	if (write_timeline_data(out, d, id) < 0)
		return -1;
	page_section_end(out);
	return 0;
}

static void write_steps(FILE *out, const struct page_data *d)
{
	char lead[256];

	snprintf(lead, sizeof(lead), "Host wall time of each step (synchronised); warm-up steps in grey are "
		 "left out of the mean. Reproduce: steptrace steps %s --include-warmup", page_base_name(d->rp->path));
	page_section_begin(out, d, "steps", "Step time", lead);
	if (!d->have_steps) {
		fputs("<p class=\"muted\">No measured steps in this bundle.</p>\n", out);
	} else {
		fputs("<dl class=\"kv\">", out);
		page_kv(out, "Wall time", "%.3f ± %.3f ms (median %.3f, min %.3f, max %.3f; %zu steps)", d->wall.mean,
		   d->wall.stddev, d->wall.median, d->wall.min, d->wall.max, d->wall.n);
		page_kv(out, "GPU busy", "%.3f ± %.3f ms", d->busy.mean, d->busy.stddev);
		fputs("</dl>\n", out);
		steps_chart(out, d->rp);
	}
	page_section_end(out);
}

static void write_phases(FILE *out, const struct page_data *d)
{
	char b1[32], b2[32];
	double total = 0;

	bool more = false;   /* phases beyond a training step's three: named in the lead too */

	for (int p = ST_PHASE_OPTIMIZER + 1; p < ST_PHASE_OTHER; p++)
		more |= d->phase_gpu[p] > 0 || d->phase_cpu[p] > 0;
	page_section_begin(out, d, "phases", "Time by phase",
		      !d->phase_from_ranges
		      ? "Kernel time per measured step by the phase of the op that launched it (the bundle has "
			"no phase ranges)."
		      : more
		      ? "GPU busy time per measured step projected onto the forward, backward, optimizer, zero_grad "
			"and data NVTX ranges (as Nsight Systems projects ranges); other = the rest of the step's GPU time."
		      : "GPU busy time per measured step projected onto the forward, backward and optimizer NVTX "
			"ranges (as Nsight Systems projects ranges); other = the rest of the step's GPU time.");
	phase_bar(out, d);
	for (int p = 0; p < ST_PHASE_COUNT; p++)
		total += d->phase_gpu[p] + d->phase_cpu[p];
	if (total <= 0) {
		page_section_end(out);
		return;
	}
	total = 0;
	for (int p = 0; p < ST_PHASE_COUNT; p++)
		total += d->phase_gpu[p];
	fputs("<div class=\"scroll\"><table class=\"data\" style=\"margin-top:12px\"><thead><tr><th>Phase</th>"
	      "<th class=\"num\">GPU time / step</th><th class=\"num\">Share</th>"
	      "<th class=\"num\">CPU time / step</th><th class=\"num\">Kernels / step</th></tr></thead><tbody>\n",
	      out);
	for (int p = 0; p < ST_PHASE_COUNT; p++) {
		if (d->phase_gpu[p] <= 0 && d->phase_cpu[p] <= 0)
			continue;
		fprintf(out, "<tr><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%.1f%%</td>"
			"<td class=\"num\">%s</td><td class=\"num\">%.0f</td></tr>\n", st_phase_name(p),
			human_time(b1, sizeof(b1), d->phase_gpu[p]), total > 0 ? 100.0 * d->phase_gpu[p] / total : 0.0,
			d->phase_cpu[p] > 0 ? human_time(b2, sizeof(b2), d->phase_cpu[p]) : "",
			(double)d->phase_kernels[p] / (double)d->divisor);
	}
	fputs("</tbody></table></div>\n", out);
	page_section_end(out);
}

static void write_categories(FILE *out, const struct page_data *d)
{
	const char *labels[CAT_COUNT];
	double values[CAT_COUNT];
	int colors[CAT_COUNT], order[CAT_COUNT];
	char lead[256];

	for (int c = 0; c < CAT_COUNT; c++)
		order[c] = c;
	for (int i = 1; i < CAT_COUNT; i++)   /* largest first */
		for (int j = i; j > 0 && d->category_ns[order[j]] > d->category_ns[order[j - 1]]; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	for (int i = 0; i < CAT_COUNT; i++) {
		labels[i] = category_name((enum kernel_category)order[i]);
		values[i] = d->category_ns[order[i]];
		colors[i] = order[i];
	}
	snprintf(lead, sizeof(lead), "Kernel and copy time per measured step by kind of work. Reproduce: "
		 "steptrace summary %s --by category", page_base_name(d->rp->path));
	page_section_begin(out, d, "categories", "Time by category", lead);
	bar_chart(out, "GPU time by kernel category", labels, values, colors, CAT_COUNT, d->kernel_ns);
	page_section_end(out);
}

/* ---- tables of the text reports ------------------------------------------------- */

static int write_top_kernels(FILE *out, const struct page_data *d)
{
	const struct replay *rp = d->rp;
	struct dur_collect dc;
	struct dur_groups g = { NULL, 0, 0 };
	struct report *r = NULL;
	struct table *t;
	char lead[256], id[64];
	int rc = -1;

	dur_collect_init(&dc);
	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];
		if (a->kind == ST_KERNEL && replay_counts(rp, a->step, false) &&
		    dur_collect_add(&dc, a->name, a->end - a->start) < 0)
			goto out;
	}
	if (dur_collect_groups(&dc, &g) < 0)
		goto out;
	for (size_t i = 0; i < g.n; i++)
		g.g[i].name = replay_str(rp, (uint32_t)g.g[i].key);
	dur_groups_sort(&g);
	r = report_new();
	t = report_add_table(r, "kernels", NULL);
	nsys_stat_columns(t, 1.0);
	table_add_column(t, "Name", COL_STR, 0);
	for (size_t i = 0; i < g.n && i < KERNEL_ROWS; i++) {
		table_row(t);
		nsys_stat_cells(t, &g.g[i].s, g.total, 1.0);
		table_str(t, g.g[i].name);
	}
	snprintf(lead, sizeof(lead), "Nsight Systems' cuda_gpu_kern_sum columns over the measured steps (%zu "
		 "kernel names). Reproduce: steptrace summary %s", g.n, page_base_name(rp->path));
	page_section_begin(out, d, "kernels", "Top kernels", lead);
	snprintf(id, sizeof(id), "%skernels-table", d->prefix);
	if (html_report_tables(out, r, &(struct html_tables){ .name = "kernels", .id = id, .visible = VISIBLE_ROWS }) < 0)
		goto out;
	if (g.n > KERNEL_ROWS)
		fprintf(out, "<p class=\"muted\">The %d kernels with the most time of %zu.</p>\n", KERNEL_ROWS, g.n);
	page_section_end(out);
	rc = 0;
out:
	report_free(r);
	dur_groups_release(&g);
	dur_collect_release(&dc);
	return rc;
}

static int write_ops(FILE *out, const struct page_data *d)
{
	struct report *r;
	char lead[512], id[64];
	int rc;

	snprintf(lead, sizeof(lead), "Each op kind (summed over layers) per measured step: FLOPs and minimum bytes "
		 "against GPU time, and the share of the roofline bound reached (%s peaks). Reproduce: steptrace "
		 "flops %s", d->fl.peaks.source ? d->fl.peaks.source : "unknown", page_base_name(d->rp->path));
	page_section_begin(out, d, "ops", "Ops", lead);
	if (d->fl.n_rows == 0) {
		fputs("<p class=\"muted\">No kernels launched by registered ops.</p>\n", out);
		page_section_end(out);
		return 0;
	}
	r = report_new();
	flops_report(r, &d->fl, 0, NULL);
	snprintf(id, sizeof(id), "%sops-table", d->prefix);
	rc = html_report_tables(out, r, &(struct html_tables){ .name = "flops", .id = id, .visible = VISIBLE_ROWS,
			       .notes = true });
	report_free(r);
	page_section_end(out);
	return rc < 0 ? -1 : 0;
}

static int write_ranges(FILE *out, const struct page_data *d)
{
	static const char *const hide[] = { "Style", NULL };
	struct report *r = report_new();
	char lead[512], id[64];
	int rc = -1;

	snprintf(lead, sizeof(lead), "NVTX ranges grouped by path, Nsight Systems' nvtx_sum columns (host time) "
		 "and the GPU work projected onto them, over the measured steps. Reproduce: steptrace ranges %s",
		 page_base_name(d->rp->path));
	page_section_begin(out, d, "ranges", "Ranges", lead);
	if (ranges_run(d->rp, &(struct ranges_opts){ .top = RANGE_ROWS }, r) < 0)
		goto out;
	snprintf(id, sizeof(id), "%sranges-table", d->prefix);
	if (html_report_tables(out, r, &(struct html_tables){ .id = id, .hide = hide, .visible = VISIBLE_ROWS }) < 0)
		goto out;
	page_section_end(out);
	rc = 0;
out:
	report_free(r);
	return rc;
}

/* ---- memory -------------------------------------------------------------------- */

/*
 * The chart's window: the measured steps, so that a long warm-up step (and
 * the setup before it) does not squeeze them into a sliver; *cut says so.
 * t0 == t1 == 0 (everything) when there is nothing to cut.
 */
static void memory_window(const struct replay *rp, uint64_t *t0, uint64_t *t1, bool *cut)
{
	*t0 = *t1 = 0;
	*cut = false;
	for (size_t i = 0; i < rp->n_steps; i++) {
		const struct replay_step *s = &rp->steps[i];
		uint64_t end = s->end > s->gpu_end ? s->end : s->gpu_end;
		if (s->warmup)
			continue;
		if (*t1 == 0)
			*t0 = s->start;
		*t1 = end > *t1 ? end : *t1;
	}
	for (size_t i = 0; i < rp->n_steps && *t1; i++)
		*cut |= rp->steps[i].warmup && rp->steps[i].start < *t0;
	if (!*cut)
		*t0 = *t1 = 0;
}

static void memory_cut_label(FILE *out, const struct page_data *d, uint64_t t0)
{
	const struct replay *rp = d->rp;
	const struct mem_timeline *tl = &d->tl;
	uint64_t warm_peak = 0;
	char b1[32], b2[32];
	size_t n = 0;

	for (size_t i = 0; i < rp->n_steps; i++)
		if (rp->steps[i].warmup && rp->steps[i].start < t0) {
			n++;
			if (i < tl->n_steps && tl->step_peak[i].bytes > warm_peak)
				warm_peak = tl->step_peak[i].bytes;
		}
	fputs("<div class=\"cut\">", out);
	html_printf(out, "\xe2\x9c\x82 Cut on the left: the first %s of the recording (setup and %zu warm-up step%s, "
		    "peak %s), so the measured steps fill the chart. Times below count from the first measured "
		    "step; steptrace memory %s --svg FILE draws everything.", human_time(b1, sizeof(b1), (double)(t0 - rp->t_min)),
		    n, n == 1 ? "" : "s", human_bytes(b2, sizeof(b2), (double)warm_peak), page_base_name(rp->path));
	fputs("</div>\n", out);
}

static int write_memory(FILE *out, const struct page_data *d)
{
	const struct replay *rp = d->rp;
	const struct mem_timeline *tl = &d->tl;
	uint32_t idx[10];
	size_t live, n;
	uint64_t t0, t1;
	bool cut;
	char b1[32], b2[32], lead[512];

	snprintf(lead, sizeof(lead), "Live device memory over time (%s view), stacked by category; the peak is "
		 "marked. Reproduce: steptrace memory %s --svg memory.svg", mem_view_name(tl->view),
		 page_base_name(rp->path));
	page_section_begin(out, d, "memory", "Memory", lead);
	if (tl->n_blocks == 0) {
		fputs("<p class=\"muted\">No allocation events in this bundle.</p>\n", out);
		page_section_end(out);
		return 0;
	}
	memory_window(rp, &t0, &t1, &cut);
	if (cut)
		memory_cut_label(out, d, t0);
	if (memory_svg_write(out, rp, tl, t0, t1, CHART_W, 380) < 0)
		return -1;

	fputs("<div class=\"grid2\" style=\"margin-top:14px\"><div>\n<h3>At the peak</h3>\n<dl class=\"kv\">", out);
	page_kv(out, "Peak", "%s at %s (from the first event)", human_bytes(b1, sizeof(b1), (double)tl->peak.bytes),
	   human_time(b2, sizeof(b2), (double)(tl->peak.t - rp->t_min)));
	for (int c = 0; c < ST_MEM_CATEGORY_COUNT; c++)
		if (tl->peak.by_category[c])
			page_kv(out, st_mem_category_name(c), "%s (%.1f%%)",
			   human_bytes(b1, sizeof(b1), (double)tl->peak.by_category[c]),
			   100.0 * (double)tl->peak.by_category[c] / (double)(tl->peak.bytes ? tl->peak.bytes : 1));
	fputs("</dl></div><div>\n<h3>Peak by phase</h3>\n<dl class=\"kv\">", out);
	for (int p = 0; p < ST_PHASE_COUNT; p++)
		if (tl->phase_peak[p].bytes)
			page_kv(out, st_phase_name(p), "%s",
			   human_bytes(b1, sizeof(b1), (double)tl->phase_peak[p].bytes));
	if (tl->n_never_freed)
		page_kv(out, "never freed", "%zu blocks, %s", tl->n_never_freed,
		   human_bytes(b1, sizeof(b1), (double)tl->never_freed_bytes));
	fputs("</dl></div></div>\n", out);

	live = mem_timeline_live_at(tl, tl->peak.point, idx, sizeof(idx) / sizeof(idx[0]));
	n = live < sizeof(idx) / sizeof(idx[0]) ? live : sizeof(idx) / sizeof(idx[0]);
	fprintf(out, "<h3>Largest live allocations at the peak</h3>\n<div class=\"scroll\"><table class=\"data\">"
		"<thead><tr><th class=\"num\">Size</th><th class=\"num\">Share of peak</th><th>Category</th>"
		"<th>Op</th><th class=\"num\">Allocated at</th><th>Phase</th></tr></thead><tbody>\n");
	for (size_t i = 0; i < n; i++) {
		const struct mem_block *b = &tl->blocks[idx[i]];
		const char *op = memory_block_op(rp, b);
		fprintf(out, "<tr><td class=\"num\">%s</td><td class=\"num\">%.1f%%</td><td>%s</td><td class=\"name\"",
			human_bytes(b1, sizeof(b1), (double)b->size),
			100.0 * (double)b->size / (double)(tl->peak.bytes ? tl->peak.bytes : 1),
			st_mem_category_name(b->category));
		html_attr(out, "title", "%s", *op ? op : "(none)");
		fputc('>', out);
		html_escape(out, *op ? op : "(none)");
		fprintf(out, "</td><td class=\"num\">%s</td><td>%s</td></tr>\n",
			human_time(b2, sizeof(b2), (double)(b->t_alloc - rp->t_min)), st_phase_name(b->phase));
	}
	fputs("</tbody></table></div>\n", out);
	if (live > n)
		fprintf(out, "<p class=\"muted\">%zu of %zu live blocks shown; times from the first event.</p>\n", n, live);
	page_section_end(out);
	return 0;
}

static int write_roofline(FILE *out, const struct page_data *d)
{
	char lead[512];

	snprintf(lead, sizeof(lead), "Each op kind (summed over layers) at its arithmetic intensity and achieved "
		 "TFLOP/s against the device's ceilings (%s peaks); the Ops table holds the numbers. Reproduce: "
		 "steptrace flops %s --svg roofline.svg", d->fl.peaks.source ? d->fl.peaks.source : "unknown",
		 page_base_name(d->rp->path));
	page_section_begin(out, d, "roofline", "Roofline", lead);
	if (d->fl.n_rows == 0)
		fputs("<p class=\"muted\">No kernels launched by registered ops.</p>\n", out);
	else if (flops_svg(out, &d->fl, CHART_W, 520) < 0)
		return error("cannot write the roofline chart");
	page_section_end(out);
	return 0;
}

static const struct { const char *id, *title; } bundle_sections[] = {
	{ "timeline", "Timeline" }, { "steps", "Steps" }, { "phases", "Phases" }, { "categories", "Categories" },
	{ "layers", "Layers" }, { "kernels", "Kernels" }, { "ops", "Ops" }, { "ranges", "Ranges" },
	{ "memory", "Memory" }, { "roofline", "Roofline" },
};

void page_nav(FILE *out, const struct page_data *d)
{
	fputs("<nav class=\"toc\">", out);
	fprintf(out, "<a href=\"#%srun\">Run</a>", d->prefix);
	if (d->have_steps)
		fprintf(out, "<a href=\"#%sexplain\">Explain</a>", d->prefix);
	for (size_t i = 0; i < sizeof(bundle_sections) / sizeof(bundle_sections[0]); i++)
		fprintf(out, "<a href=\"#%s%s\">%s</a>", d->prefix, bundle_sections[i].id, bundle_sections[i].title);
	if (d->have_comm)
		fprintf(out, "<a href=\"#%scomm\">Communication</a>", d->prefix);
	fputs("</nav>\n", out);
}

int page_bundle_sections(FILE *out, const struct page_data *d)
{
	page_section_begin(out, d, "run", "Run", NULL);
	page_run(out, d->rp);
	page_section_end(out);
	if (d->have_steps && page_explain(out, d) < 0)
		return -1;
	if (write_timeline(out, d) < 0)
		return -1;
	write_steps(out, d);
	write_phases(out, d);
	write_categories(out, d);
	if (page_layers(out, d) < 0 || write_top_kernels(out, d) < 0 || write_ops(out, d) < 0 ||
	    write_ranges(out, d) < 0 || write_memory(out, d) < 0 || write_roofline(out, d) < 0)
		return -1;
	return d->have_comm ? page_comm(out, d) : 0;
}
