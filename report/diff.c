/*
 * diff.c: the report of a pair, A (baseline) against B: B's key
 * numbers with the change from A, charts of what changed (B - A per op kind
 * as diverging bars; A and B side by side per category, phase and memory
 * peak), the tables of `steptrace diff` (whose numbers the charts draw),
 * then each bundle's whole report folded in a <details>.
 */
#include "report/diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/common.h"
#include "analyze/diff.h"
#include "lib/error.h"
#include "lib/human.h"
#include "render/html.h"
#include "render/svg.h"
#include "report/page.h"
#include "report/sections.h"

#define DIFF_BARS 20         /* op kinds in the diverging chart */

/* B's key numbers with A's beside them and the change: green where B is lower, red where higher. */
static void write_kpis_diff(FILE *out, const struct page_data *a, const struct page_data *b)
{
	struct page_kpi_text ka[KPI_COUNT], kb[KPI_COUNT];
	char delta[256], note[300];

	page_kpi_texts(a, ka);
	page_kpi_texts(b, kb);
	fputs("<div class=\"kpis\">\n", out);
	for (int i = 0; i < KPI_COUNT; i++) {
		double x = ka[i].raw, y = kb[i].raw;
		const char *cls = "";

		delta[0] = 0;
		if (isfinite(x) && isfinite(y) && x != 0) {
			double change = i == KPI_GEMM ? y - x : 100.0 * (y - x) / x;
			if (!ka[i].neutral && change != 0)
				cls = change < 0 ? " good" : " bad";
			snprintf(delta, sizeof(delta), "<span class=\"delta%s\">%+.1f%s</span>", cls, change,
				 i == KPI_GEMM ? " pt" : "%");
		}
		snprintf(note, sizeof(note), "A: %.100s", ka[i].value);
		page_kpi(out, page_kpi_labels[i], kb[i].value, note, *delta ? delta : NULL);
	}
	fputs("</div>\n", out);
}

static double json_num(const json_t *row, const char *key)
{
	const json_t *v = json_object_get(row, key);

	return json_is_number(v) ? json_number_value(v) : 0.0;
}

/* Whether the row has the count `key` and it is 0: an op kind found on the other side only. */
static bool no_instances(const json_t *row, const char *key)
{
	const json_t *v = json_object_get(row, key);

	return json_is_number(v) && json_number_value(v) == 0;
}

static const char *json_str(const json_t *row, const char *key)
{
	const char *s = json_string_value(json_object_get(row, key));

	return s ? s : "";
}

static int cmp_delta(const void *x, const void *y)
{
	const json_t *a = *(const json_t *const *)x, *b = *(const json_t *const *)y;
	double da = json_num(a, "B (ms)") - json_num(a, "A (ms)"), db = json_num(b, "B (ms)") - json_num(b, "A (ms)");

	return da < db ? -1 : da > db;
}

static int cmp_abs_delta(const void *x, const void *y)
{
	const json_t *a = *(const json_t *const *)x, *b = *(const json_t *const *)y;
	double da = fabs(json_num(a, "B (ms)") - json_num(a, "A (ms)"));
	double db = fabs(json_num(b, "B (ms)") - json_num(b, "A (ms)"));

	return da > db ? -1 : da < db;
}

/*
 * The diff's rows (A (ms), B (ms), Name) as a diverging bar chart of B - A:
 * the largest changes, faster to the left in green, slower to the right in
 * red, each labelled on the other side of the axis with both times.
 */
static int diverging_chart(FILE *out, const json_t *rows, const char *title)
{
	const double w = CHART_W, name_w = 270, row = 24, top = 26;
	size_t n = json_array_size(rows), shown;
	const json_t **r = calloc(n + 1, sizeof(*r));
	double neg = 0, pos = 0, scale, mid, span = w - name_w - 16, room = 240;
	char b1[32], b2[32], b3[32], change[80];

	if (!r)
		return error("out of memory for the diff chart");
	for (size_t i = 0; i < n; i++)
		r[i] = json_array_get(rows, i);
	qsort(r, n, sizeof(*r), cmp_abs_delta);
	shown = n < DIFF_BARS ? n : DIFF_BARS;
	qsort(r, shown, sizeof(*r), cmp_delta);
	for (size_t i = 0; i < shown; i++) {
		double dlt = (json_num(r[i], "B (ms)") - json_num(r[i], "A (ms)")) * 1e6;
		neg = dlt < 0 ? fmax(neg, -dlt) : neg;
		pos = dlt > 0 ? fmax(pos, dlt) : pos;
	}
	if (shown == 0 || neg + pos <= 0) {
		fputs("<p class=\"muted\">No time changed.</p>\n", out);
		free(r);
		return 0;
	}
	/* each side as wide as its longest bar, and wide enough for the other side's labels */
	scale = span / (neg + pos);
	if (neg > 0 && pos * scale < room)
		scale = (span - room) / neg;
	if (pos > 0 && neg * scale < room)
		scale = (span - room) / pos;
	mid = name_w + 8 + fmax(neg * scale, pos > 0 ? room : 0);
	svg_begin(out, (int)w, (int)(top + row * (double)shown + 8), title);
	svg_text(out, mid - 8, 14, SVG_END, 12, "#2b8a3e", "font-weight=\"600\"", "\xe2\x97\x80 B faster");
	svg_text(out, mid + 8, 14, SVG_START, 12, "#c92a2a", "font-weight=\"600\"", "B slower \xe2\x96\xb6");
	for (size_t i = 0; i < shown; i++) {
		double a = json_num(r[i], "A (ms)") * 1e6, b = json_num(r[i], "B (ms)") * 1e6, dlt = b - a;
		double y = top + row * (double)i, bw = scale * fabs(dlt);
		const char *name = json_str(r[i], "Name");

		if (i % 2)
			svg_rect(out, 0, y, w, row, "#fafbfc", NULL);
		svg_text(out, name_w - 10, y + 16, SVG_END, 12.5, "#344054", NULL, "%.40s%s", name,
			 strlen(name) > 40 ? "\xe2\x80\xa6" : "");
		page_tip_rect(out, dlt < 0 ? mid - bw : mid, y + 4, bw < 1.5 ? 1.5 : bw, row - 8, dlt < 0 ? "#40c057" : "#fa5252",
			 "%s\nA %s, B %s per step: %s%s (B/A %.2f)", name, human_time(b1, sizeof(b1), a),
			 human_time(b2, sizeof(b2), b), dlt < 0 ? "-" : "+", human_time(b3, sizeof(b3), fabs(dlt)),
			 a > 0 ? b / a : NAN);
		/* a one-sided row has times on both sides (0 on the other) but no instances there */
		if (!json_is_number(json_object_get(r[i], "A (ms)")) || no_instances(r[i], "A Count"))
			snprintf(change, sizeof(change), "only in B");
		else if (!json_is_number(json_object_get(r[i], "B (ms)")) || no_instances(r[i], "B Count"))
			snprintf(change, sizeof(change), "only in A");
		else
			snprintf(change, sizeof(change), "%s \xe2\x86\x92 %s", human_time(b1, sizeof(b1), a),
				 human_time(b2, sizeof(b2), b));
		svg_text(out, dlt < 0 ? mid + 8 : mid - 8, y + 16, dlt < 0 ? SVG_START : SVG_END, 11.5, "#475467",
			 "style=\"font-variant-numeric:tabular-nums\"", "%s%s  (%s)", dlt < 0 ? "\xe2\x88\x92" : "+",
			 human_time(b3, sizeof(b3), fabs(dlt)), change);
	}
	svg_line(out, mid, top - 4, mid, top + row * (double)shown, "#98a2b3", 1, NULL);
	svg_end(out);
	if (n > shown)
		fprintf(out, "<p class=\"muted\">The %zu largest changes of %zu op kinds; the table below has them all.</p>\n",
			shown, n);
	free(r);
	return 0;
}

/* Two bars per row, A grey and B blue, with both values and B's change; fmt formats a value. */
static void paired_chart(FILE *out, const char *title, const char *const *labels, const double *a, const double *b,
			 int n, char *(*fmt)(char *, size_t, double))
{
	const double w = CHART_W, label_w = 190, value_w = 250, row = 34, top = 4;
	double max = 0;
	char b1[32], b2[32];
	int shown = 0;

	for (int i = 0; i < n; i++) {
		max = fmax(max, fmax(a[i], b[i]));
		shown += a[i] > 0 || b[i] > 0;
	}
	if (!shown) {
		fputs("<p class=\"muted\">Nothing on either side.</p>\n", out);
		return;
	}
	svg_begin(out, (int)w, (int)(top * 2 + row * shown), title);
	for (int i = 0, k = 0; i < n; i++) {
		if (a[i] <= 0 && b[i] <= 0)
			continue;
		double y = top + row * k++, span = w - label_w - value_w;
		double change = a[i] > 0 ? 100.0 * (b[i] - a[i]) / a[i] : NAN;
		svg_text(out, label_w - 10, y + 20, SVG_END, 13, "#344054", NULL, "%s", labels[i]);
		page_tip_rect(out, label_w, y + 4, fmax(1.5, span * a[i] / max), 12, "#98a2b3", "%s, A: %s", labels[i],
			 fmt(b1, sizeof(b1), a[i]));
		page_tip_rect(out, label_w, y + 17, fmax(1.5, span * b[i] / max), 12, "#3b5bdb", "%s, B: %s", labels[i],
			 fmt(b2, sizeof(b2), b[i]));
		if (isfinite(change))
			svg_text(out, w - value_w + 12, y + 20, SVG_START, 12.5, "#1d2330",
				 "style=\"font-variant-numeric:tabular-nums\"", "%s \xe2\x86\x92 %s  (%+.1f%%)",
				 fmt(b1, sizeof(b1), a[i]), fmt(b2, sizeof(b2), b[i]), change);
		else
			svg_text(out, w - value_w + 12, y + 20, SVG_START, 12.5, "#1d2330", NULL, "only in B: %s",
				 fmt(b2, sizeof(b2), b[i]));
	}
	svg_end(out);
}

static char *fmt_time(char *buf, size_t n, double ns)
{
	return human_time(buf, n, ns);
}

static char *fmt_bytes(char *buf, size_t n, double bytes)
{
	return human_bytes(buf, n, bytes);
}

static void ab_legend(FILE *out, const struct replay *a, const struct replay *b)
{
	fputs("<div class=\"legend\"><span><i style=\"background:#98a2b3\"></i>A: ", out);
	html_escape(out, page_base_name(a->path));
	fputs("</span><span><i style=\"background:#3b5bdb\"></i>B: ", out);
	html_escape(out, page_base_name(b->path));
	fputs("</span></div>\n", out);
}

static int write_diff_charts(FILE *out, const struct page_data *da, const struct page_data *db, const json_t *doc)
{
	const json_t *mem = json_object_get(doc, "memory");
	const char *labels[CAT_COUNT > 16 ? CAT_COUNT : 16];
	double va[CAT_COUNT > 16 ? CAT_COUNT : 16], vb[CAT_COUNT > 16 ? CAT_COUNT : 16];
	int n = 0;

	page_section_begin(out, NULL, "charts", "What changed",
		      "Per measured step. Hover over a bar for its values; the tables below hold every row.");
	fputs("<h3>Time by op kind, B \xe2\x88\x92 A</h3>\n", out);
	if (diverging_chart(out, json_object_get(doc, "diff"), "Change in GPU time per op kind") < 0)
		return -1;

	fputs("<h3>Time by category</h3>\n", out);
	for (int c = 0; c < CAT_COUNT; c++) {
		labels[n] = category_name((enum kernel_category)c);
		va[n] = da->category_ns[c];
		vb[n++] = db->category_ns[c];
	}
	paired_chart(out, "Kernel time per category, A and B", labels, va, vb, n, fmt_time);
	ab_legend(out, da->rp, db->rp);

	fputs("<h3>Time by phase</h3>\n", out);
	n = 0;
	for (int p = 0; p < ST_PHASE_COUNT; p++) {
		labels[n] = st_phase_name(p);
		va[n] = da->phase_gpu[p];
		vb[n++] = db->phase_gpu[p];
	}
	paired_chart(out, "GPU time per phase, A and B", labels, va, vb, n, fmt_time);

	fputs("<h3>Memory peaks</h3>\n", out);
	n = 0;
	for (size_t i = 0; i < json_array_size(mem) && n < 16; i++) {
		const json_t *row = json_array_get(mem, i);
		labels[n] = json_str(row, "Metric");
		va[n] = json_num(row, "A (MiB)") * MIB;
		vb[n++] = json_num(row, "B (MiB)") * MIB;
	}
	paired_chart(out, "Memory peaks, A and B", labels, va, vb, n, fmt_bytes);
	ab_legend(out, da->rp, db->rp);
	page_section_end(out);
	return 0;
}

static int write_diff_tables(FILE *out, const struct replay *a, const struct replay *b, const struct report *r)
{
	static const struct { const char *name, *title; int visible; } parts[] = {
		{ "diff", "By op kind", VISIBLE_ROWS },
		{ "steps", "Step time", 0 },
		{ "memory", "Memory peaks", 0 },
		{ "kernels", "Kernels in one bundle only, paired by op", 8 },
	};
	char lead[2048], what[512], id[64];

	diff_headers(a, b, what, sizeof(what));
	snprintf(lead, sizeof(lead), "A = %s (baseline), B = %s. Rows aligned by op kind and phase, times per "
		 "measured step. %s%s Reproduce: steptrace diff %s %s", page_base_name(a->path), page_base_name(b->path),
		 *what ? "Headers differ in: " : "", what, page_base_name(a->path), page_base_name(b->path));
	page_section_begin(out, NULL, "tables", "Diff", lead);
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		fputs("<h3>", out);
		html_escape(out, parts[i].title);
		fputs("</h3>\n", out);
		snprintf(id, sizeof(id), "diff-%s-table", parts[i].name);
		if (html_report_tables(out, r, &(struct html_tables){ .name = parts[i].name, .id = id,
				       .visible = parts[i].visible, .notes = i + 1 == sizeof(parts) / sizeof(parts[0]) }) < 0)
			return -1;
	}
	page_section_end(out);
	return 0;
}

/* One bundle of a pair, folded: its key numbers and its cards. */
static int write_pair_part(FILE *out, const struct page_data *d)
{
	fprintf(out, "<details class=\"bundle\" id=\"%s\"><summary>", d->label[0] == 'A' ? "a" : "b");
	html_printf(out, "%s: %s", d->label, page_base_name(d->rp->path));
	fputs(" <span class=\"muted\">&mdash; its whole report</span></summary>\n", out);
	page_chips(out, d->rp);
	fputs("<div style=\"height:12px\"></div>\n", out);
	page_nav(out, d);
	page_kpis(out, d);
	if (page_bundle_sections(out, d) < 0)
		return -1;
	fputs("</details>\n", out);
	return 0;
}

int page_pair_init(struct page_pair *p, const struct replay_ranks *ra, const struct replay_ranks *rb)
{
	/* whole kernel names: the page's cells ellipsize and show the full text on hover */
	struct diff_options opt = { .by = DIFF_BY_OP, .full_names = true };

	memset(p, 0, sizeof(*p));
	p->a = ra->rank[0];
	p->b = rb->rank[0];
	p->diff = report_new();
	if (page_data_init(&p->da, p->a, ra, "A", "a-") < 0 || page_data_init(&p->db, p->b, rb, "B", "b-") < 0)
		return -1;
	if (diff_run(p->a, p->b, &opt, p->diff) < 0 || !(p->doc = html_report_json(p->diff)))
		return -1;
	return 0;
}

void page_pair_release(struct page_pair *p)
{
	json_decref(p->doc);
	report_free(p->diff);
	page_data_release(&p->da);
	page_data_release(&p->db);
	memset(p, 0, sizeof(*p));
}

int page_pair_write(void *ctx, FILE *out)
{
	const struct page_pair *p = ctx;
	const struct replay *a = p->a, *b = p->b;

	page_begin(out, "steptrace diff");
	page_top(out, a, b);
	page_banner(out, a, "A");
	page_banner(out, b, "B");
	fputs("<nav class=\"toc\"><a href=\"#summary\">Run</a><a href=\"#charts\">What changed</a>"
	      "<a href=\"#tables\">Diff tables</a><a href=\"#a\">A's report</a><a href=\"#b\">B's report</a></nav>\n", out);
	write_kpis_diff(out, &p->da, &p->db);
	page_section_begin(out, NULL, "summary", "Run", NULL);
	fputs("<div class=\"pair\"><div><h3>A</h3>\n", out);
	page_chips(out, a);
	page_run(out, a);
	fputs("</div><div><h3>B</h3>\n", out);
	page_chips(out, b);
	page_run(out, b);
	fputs("</div></div>\n", out);
	page_section_end(out);
	if (write_diff_charts(out, &p->da, &p->db, p->doc) < 0 || write_diff_tables(out, a, b, p->diff) < 0)
		return -1;
	if (write_pair_part(out, &p->da) < 0 || write_pair_part(out, &p->db) < 0)
		return -1;
	page_end(out);
	return 0;
}
