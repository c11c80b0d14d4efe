/*
 * explain.c: the HTML report's Explain card: `steptrace explain`'s
 * step split into its parts as one bar (analyze/explain.h), its findings
 * ranked by predicted saving, the critical path and the steps' parts.
 */
#include "report/explain.h"

#include <stdio.h>
#include <string.h>

#include "analyze/explain.h"
#include "lib/error.h"
#include "render/html.h"
#include "report/page.h"

#define BAR_H 28

/* The parts' colours, in enum explain_part's order. */
static const char *const part_fill[EP_COUNT] = {
	"#2e7dd1", "#c0392b", "#8e6bbf", "#e67e22", "#d4a017", "#16a085", "#9aa0a6",
};

/* The mean step as one bar of its parts, a legend under it. */
static void parts_bar(FILE *out, const struct explain_summary *s)
{
	double x = 0, w = CHART_W;

	if (!(s->measured > 0))
		return;
	fprintf(out, "<svg class=\"chart\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"the step's parts\">\n",
		CHART_W, BAR_H + 30 + 18 * ((EP_COUNT + 3) / 4));
	for (int p = 0; p < EP_COUNT; p++) {
		double pw = w * s->part[p] / s->measured;

		if (pw <= 0)
			continue;
		page_tip_rect(out, x, 4, pw, BAR_H, part_fill[p], "%s: %.3f ms per step (%.1f%%)", explain_part_names[p],
			      s->part[p] / 1e6, 100 * s->part[p] / s->measured);
		x += pw;
	}
	for (int p = 0; p < EP_COUNT; p++) {
		double lx = (double)(p % 4) * (CHART_W / 4.0), ly = BAR_H + 22 + 18.0 * (p / 4);

		fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/>", lx, ly - 10,
			part_fill[p]);
		fprintf(out, "<text x=\"%.1f\" y=\"%.1f\" class=\"axis\">", lx + 16, ly);
		html_escape(out, explain_part_names[p]);
		fprintf(out, " %.3f ms (%.1f%%)</text>\n", s->part[p] / 1e6, 100 * s->part[p] / s->measured);
	}
	fputs("</svg>\n", out);
}

int page_explain(FILE *out, const struct page_data *d)
{
	static const struct page_part parts[] = {
		{ "findings", "Findings, by the saving the re-timed graph predicts" },
		{ "critical_path", "Critical path: what decided the step's end" },
		{ "steps", "Each step's parts (ms)" },
	};
	struct page_alone alone;
	const struct replay_ranks *rs = page_ranks(d, &alone);
	struct explain_opts o = { .top = 10 };
	struct explain_summary s;
	struct report *r;
	char lead[1024];
	int rc = -1;

	r = report_new();
	if (explain_run(rs, &o, r, &s) < 0)
		goto out;
	if (s.n_findings && s.finding[0].saving > 0)
		snprintf(lead, sizeof(lead),
			 "The step is %.3f ms (mean of %zu); of it the GPU computes %.1f%%. First finding: %s, "
			 "predicted to save %.3f ms (%.1f%%) by re-timing the run's dependency graph. "
			 "Reproduce: steptrace explain %s%s",
			 s.measured / 1e6, s.steps, 100 * s.part[EP_COMPUTE] / s.measured, s.finding[0].title,
			 s.finding[0].saving / 1e6, 100 * s.finding[0].saving / s.measured, page_base_name(d->rp->path),
			 rs->n > 1 ? " ..." : "");
	else
		snprintf(lead, sizeof(lead),
			 "The step is %.3f ms (mean of %zu); of it the GPU computes %.1f%%; no change the graph "
			 "re-timed predicts saves time above the findings' thresholds. Reproduce: steptrace explain %s%s",
			 s.measured / 1e6, s.steps, s.measured > 0 ? 100 * s.part[EP_COMPUTE] / s.measured : 0,
			 page_base_name(d->rp->path), rs->n > 1 ? " ..." : "");
	page_section_begin(out, d, "explain", "Explain", lead);
	parts_bar(out, &s);
	if (page_titled_tables(out, d, r, "explain", parts, sizeof(parts) / sizeof(parts[0])) < 0)
		goto out;
	page_section_end(out);
	rc = 0;
out:
	report_free(r);
	return rc;
}
