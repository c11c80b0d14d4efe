/*
 * report.c: the HTML report (see report.h). Every number comes from the
 * same helpers as the text reports (replay's projection, replay/memory.h,
 * flops.h, diff.h, common.h's statistics), so the page and
 * `steptrace summary|memory|flops|diff` always agree.
 */
#include "analyze/report.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/category.h"
#include "analyze/common.h"
#include "analyze/diff.h"
#include "analyze/flops.h"
#include "analyze/html.h"
#include "analyze/memory.h"
#include "analyze/svg.h"
#include "lib/error.h"
#include "lib/human.h"
#include "lib/output.h"
#include "replay/memory.h"

#define PAGE_W 1180          /* content width in CSS pixels; charts are drawn at it */
#define TOP_KERNELS 15
#define TOP_BLOCKS 10

static const char page_css[] =
	":root{--bg:#f5f6f8;--card:#fff;--ink:#1d2330;--muted:#667085;--line:#e4e7ec;"
	"--accent:#3b5bdb;--good:#2b8a3e;--bad:#c92a2a}"
	"*{box-sizing:border-box}"
	"body{margin:0;background:var(--bg);color:var(--ink);"
	"font:14px/1.5 system-ui,-apple-system,'Segoe UI',Roboto,'Helvetica Neue',Arial,sans-serif}"
	"main{max-width:1240px;margin:0 auto;padding:28px 30px 48px}"
	"header.top{display:flex;justify-content:space-between;align-items:flex-end;gap:24px;margin-bottom:20px}"
	"header.top h1{font-size:24px;margin:0 0 4px;letter-spacing:-.01em}"
	".sub{color:var(--muted)}"
	".chips{display:flex;flex-wrap:wrap;gap:6px;margin-top:8px}"
	".chip{background:#eef2ff;color:#364fc7;border-radius:999px;padding:2px 10px;font-size:12px;font-weight:600}"
	".brand{font-size:12px;color:var(--muted);text-align:right;white-space:nowrap}"
	".brand b{color:var(--accent);font-size:14px}"
	".kpis{display:grid;grid-template-columns:repeat(auto-fit,minmax(180px,1fr));gap:12px;margin-bottom:18px}"
	".kpi{background:var(--card);border:1px solid var(--line);border-radius:12px;padding:14px 16px}"
	".kpi .label{font-size:12px;color:var(--muted);text-transform:uppercase;letter-spacing:.04em}"
	".kpi .value{font-size:22px;font-weight:650;margin-top:2px;font-variant-numeric:tabular-nums}"
	".kpi .note{font-size:12px;color:var(--muted)}"
	"section.card{background:var(--card);border:1px solid var(--line);border-radius:12px;"
	"padding:18px 20px;margin-bottom:18px;box-shadow:0 1px 2px rgba(16,24,40,.04)}"
	"section.card h2{font-size:17px;margin:0 0 4px}"
	"section.card h3{font-size:14px;margin:18px 0 6px}"
	".lead{color:var(--muted);margin:0 0 12px;font-size:13px}"
	".grid2{display:grid;grid-template-columns:1fr 1fr;gap:8px 32px}"
	"dl.kv{display:grid;grid-template-columns:max-content 1fr;gap:3px 14px;margin:0}"
	"dl.kv dt{color:var(--muted)}dl.kv dd{margin:0;font-variant-numeric:tabular-nums}"
	"code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;font-size:12px}"
	"pre.cmd{background:#f8f9fb;border:1px solid var(--line);border-radius:8px;padding:8px 10px;"
	"white-space:pre-wrap;word-break:break-all;margin:6px 0 0}"
	".scroll{overflow-x:auto}"
	"table.data{border-collapse:collapse;width:100%;font-size:12.5px;font-variant-numeric:tabular-nums}"
	"table.data th{text-align:left;font-weight:600;color:var(--muted);border-bottom:1px solid var(--line);"
	"padding:6px 8px;white-space:nowrap;background:#fafbfc}"
	"table.data td{padding:5px 8px;border-bottom:1px solid #f0f2f5;white-space:nowrap}"
	"table.data tr:nth-child(even) td{background:#fcfcfd}"
	"table.data .num{text-align:right}"
	"table.data td{max-width:400px;overflow:hidden;text-overflow:ellipsis}"
	"svg{max-width:100%;height:auto;display:block}"
	".muted{color:var(--muted)}"
	"ul.notes{color:var(--muted);font-size:12.5px;margin:10px 0 0;padding-left:18px}"
	".legend{display:flex;flex-wrap:wrap;gap:14px;font-size:12.5px;margin-top:8px}"
	".legend i{display:inline-block;width:10px;height:10px;border-radius:3px;margin-right:6px;vertical-align:-1px}"
	".pair{display:grid;grid-template-columns:1fr 1fr;gap:18px}.pair .grid2{grid-template-columns:1fr}"
	"footer{color:var(--muted);font-size:12px;text-align:center;margin-top:24px}"
	"@media print{body{background:#fff}section.card{break-inside:avoid}}";

/* ---- small formatting ----------------------------------------------------- */

static const char *fmt_version(char *buf, size_t n, uint32_t v)
{
	if (!v)
		snprintf(buf, n, "unknown");
	else
		snprintf(buf, n, "%" PRIu32 ".%" PRIu32, v / 1000, (v % 1000) / 10);
	return buf;
}

static const char *base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "";
}

static void kv(FILE *out, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void kv(FILE *out, const char *key, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fputs("<dt>", out);
	html_escape(out, key);
	fputs("</dt><dd>", out);
	html_escape(out, buf);
	fputs("</dd>", out);
}

static void kpi(FILE *out, const char *label, const char *value, const char *note)
{
	fputs("<div class=\"kpi\"><div class=\"label\">", out);
	html_escape(out, label);
	fputs("</div><div class=\"value\">", out);
	html_escape(out, value);
	fputs("</div>", out);
	if (note && *note) {
		fputs("<div class=\"note\">", out);
		html_escape(out, note);
		fputs("</div>", out);
	}
	fputs("</div>\n", out);
}

static void section_begin(FILE *out, const char *id, const char *title, const char *lead)
{
	fprintf(out, "<section class=\"card\" id=\"%s\">\n<h2>", id);
	html_escape(out, title);
	fputs("</h2>\n", out);
	if (lead) {
		fputs("<p class=\"lead\">", out);
		html_escape(out, lead);
		fputs("</p>\n", out);
	}
}

static void section_end(FILE *out)
{
	fputs("</section>\n", out);
}

/* ---- what the page shows, computed once per bundle -------------------------- */

enum { PH_FORWARD, PH_BACKWARD, PH_OPTIMIZER, PH_OTHER, PH_COUNT };
static const char *const phase_names[PH_COUNT] = { "forward", "backward", "optimizer", "other" };

struct page_data {
	const struct replay *rp;
	const char *label;                 /* "A", "B" or NULL */
	size_t divisor;                    /* measured steps (>= 1) */
	struct real_stats wall, busy;      /* ms over measured steps */
	bool have_steps;
	double phase_gpu[PH_COUNT];        /* ns per step: GPU busy under each phase range */
	double phase_cpu[PH_COUNT];        /* ns per step: host time of the phase ranges */
	uint32_t phase_kernels[PH_COUNT];
	bool phase_from_ranges;            /* else from the ops' phases */
	double category_ns[CAT_COUNT];     /* per step */
	double kernel_ns;                  /* per step, kernels + copies */
	uint64_t kernels;                  /* counted kernel launches */
	struct mem_timeline tl;
	bool have_mem;
	struct flops_result fl;
	bool have_flops;
};

static void compute_steps(struct page_data *d)
{
	const struct replay *rp = d->rp;
	double *wall = calloc(rp->n_steps + 1, sizeof(double));
	double *busy = calloc(rp->n_steps + 1, sizeof(double));
	size_t n = 0;

	if (!wall || !busy)
		goto out;
	for (size_t i = 0; i < rp->n_steps; i++)
		if (!rp->steps[i].warmup) {
			wall[n] = (double)(rp->steps[i].end - rp->steps[i].start) / 1e6;
			busy[n++] = (double)rp->steps[i].gpu_busy / 1e6;
		}
	d->have_steps = n > 0;
	real_stats_compute(wall, n, &d->wall);
	real_stats_compute(busy, n, &d->busy);
out:
	free(wall);
	free(busy);
}

static int phase_of_name(const char *s)
{
	for (int p = 0; p < PH_OTHER; p++)
		if (strcmp(s, phase_names[p]) == 0)
			return p;
	return -1;
}

/*
 * By phase: the GPU busy time projected onto the outermost "forward",
 * "backward" and "optimizer" ranges of measured steps; "other" is what the
 * steps' GPU busy time has beyond them (the loss, copies outside phases).
 * Without such ranges, kernel time summed by the op's phase.
 */
static void compute_phases(struct page_data *d)
{
	const struct replay *rp = d->rp;
	double step_busy = 0, sum = 0;

	for (size_t i = 0; i < rp->n_ranges; i++) {
		const struct replay_range *r = &rp->ranges[i];
		int p = phase_of_name(replay_str(rp, r->name));
		if (p < 0 || !replay_counts(rp, r->step, false))
			continue;
		/* only the outermost range of a phase name counts */
		bool nested = false;
		for (int32_t q = r->parent; q >= 0 && !nested; q = rp->ranges[q].parent)
			nested = phase_of_name(replay_str(rp, rp->ranges[q].name)) == p;
		if (nested)
			continue;
		d->phase_from_ranges = true;
		d->phase_gpu[p] += (double)r->gpu_busy;
		d->phase_cpu[p] += (double)(r->end - r->start);
		d->phase_kernels[p] += r->kernels;
	}
	if (!d->phase_from_ranges) {
		for (size_t i = 0; i < rp->n_activities; i++) {
			const struct replay_activity *a = &rp->activities[i];
			const struct replay_op *op = replay_op(rp, a->op);
			int p = op ? phase_of_name(replay_str(rp, op->phase)) : -1;
			if (!replay_counts(rp, a->step, false))
				continue;
			p = p < 0 ? PH_OTHER : p;
			d->phase_gpu[p] += (double)(a->end - a->start);
			d->phase_kernels[p] += a->kind == ST_KERNEL;
		}
	}
	for (int p = 0; p < PH_COUNT; p++) {
		d->phase_gpu[p] /= (double)d->divisor;
		d->phase_cpu[p] /= (double)d->divisor;
		sum += p < PH_OTHER ? d->phase_gpu[p] : 0;
	}
	if (d->phase_from_ranges) {
		for (size_t i = 0; i < rp->n_steps; i++)
			if (!rp->steps[i].warmup)
				step_busy += (double)rp->steps[i].gpu_busy;
		step_busy /= (double)d->divisor;
		d->phase_gpu[PH_OTHER] = step_busy > sum ? step_busy - sum : 0;
	}
}

static int compute_categories(struct page_data *d)
{
	const struct replay *rp = d->rp;
	struct category_cache cc;

	if (category_cache_init(&cc, rp) < 0)
		return -1;
	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];
		if (!replay_counts(rp, a->step, false))
			continue;
		d->category_ns[category_cached(&cc, a)] += (double)(a->end - a->start);
		d->kernel_ns += (double)(a->end - a->start);
		d->kernels += a->kind == ST_KERNEL;
	}
	for (int c = 0; c < CAT_COUNT; c++)
		d->category_ns[c] /= (double)d->divisor;
	d->kernel_ns /= (double)d->divisor;
	category_cache_release(&cc);
	return 0;
}

static int page_data_init(struct page_data *d, const struct replay *rp, const char *label)
{
	struct flops_options fo = { .by = FLOPS_BY_KIND };

	memset(d, 0, sizeof(*d));
	d->rp = rp;
	d->label = label;
	d->divisor = replay_step_divisor(rp, false);
	compute_steps(d);
	compute_phases(d);
	if (compute_categories(d) < 0)
		return -1;
	if (mem_timeline_build(&d->tl, rp, MEM_VIEW_MODEL) < 0)
		return -1;
	if (d->tl.n_blocks == 0) {
		mem_timeline_release(&d->tl);
		if (mem_timeline_build(&d->tl, rp, MEM_VIEW_DRIVER) < 0)
			return -1;
	}
	d->have_mem = true;
	if (flops_compute(rp, &fo, &d->fl) < 0)
		return -1;
	d->have_flops = true;
	return 0;
}

static void page_data_release(struct page_data *d)
{
	if (d->have_mem)
		mem_timeline_release(&d->tl);
	if (d->have_flops)
		flops_result_release(&d->fl);
	memset(d, 0, sizeof(*d));
}

/* ---- header ---------------------------------------------------------------- */

/* A chip with s in it; nothing for "". */
static void chip(FILE *out, const char *s)
{
	if (!*s)
		return;
	fputs("<span class=\"chip\">", out);
	html_escape(out, s);
	fputs("</span>", out);
}

static void write_chips(FILE *out, const struct replay *rp)
{
	const struct replay_config *c = &rp->run.config;

	fputs("<div class=\"chips\">", out);
	if (rp->run.has_config) {
		chip(out, c->model);
		chip(out, c->precision_name);
		chip(out, c->mode_name);
		fprintf(out, "<span class=\"chip\">batch %" PRIu32 " &middot; ctx %" PRIu32 "</span>", c->batch, c->ctx);
	}
	if (rp->run.has_device)
		chip(out, rp->run.device.name);
	fputs("</div>\n", out);
}

static void write_run(FILE *out, const struct replay *rp)
{
	const struct replay_run *h = &rp->run;
	const struct replay_config *c = &h->config;
	const struct replay_device *dv = &h->device;
	char b1[64], b2[64], b3[64], b4[64];

	fputs("<div class=\"grid2\">\n<dl class=\"kv\">\n", out);
	if (h->has_config) {
		kv(out, "Model", "%s", *c->model ? c->model : "custom");
		kv(out, "Parameters", "%.1f M", (double)c->parameters / 1e6);
		kv(out, "Sizes", "d_model %" PRIu32 ", d_ff %" PRIu32 ", %" PRIu32 " layers, %" PRIu32 " heads",
		   c->d_model, c->d_ff, c->layers, c->heads);
		kv(out, "Batch, context, vocab", "%" PRIu32 " x %" PRIu32 ", vocab %" PRIu32, c->batch, c->ctx, c->vocab);
		kv(out, "Precision, mode", "%s, %s", c->precision_name, c->mode_name);
		kv(out, "Attention", "%s", *c->attention_name ? c->attention_name : "naive");
		kv(out, "Steps", "%" PRIu32 " warm-up + %" PRIu32 " measured", c->warmup_steps, c->measured_steps);
	} else {
		kv(out, "Run", "no header (built without a bundle)");
	}
	if (h->has_footer)
		kv(out, "Bundle", "%s, %" PRIu64 " events in %" PRIu32 " chunks, %s%s", base_name(rp->path),
		   h->footer.events, h->footer.chunks, h->footer.complete ? "complete" : "incomplete",
		   h->footer.dropped ? ", records dropped" : "");
	else if (rp->path)
		kv(out, "Bundle", "%s, %" PRIu64 " events, truncated (%s)", base_name(rp->path), rp->events_read,
		   rp->truncation ? rp->truncation : "no footer");
	fputs("</dl>\n<dl class=\"kv\">\n", out);
	if (h->has_device) {
		kv(out, "Device", "%s, %" PRIu32 " SMs, cc %" PRIu32 ".%" PRIu32 ", %s", dv->name,
		   dv->sm_count, dv->cc_major, dv->cc_minor, human_bytes(b1, sizeof(b1), (double)dv->memory_bytes));
		kv(out, "Peak matrix FLOP/s", "bf16 %.0f, tf32 %.0f, fp32 %.1f TFLOP/s", dv->peak_bf16_flops / 1e12,
		   dv->peak_tf32_flops / 1e12, dv->peak_fp32_flops / 1e12);
		kv(out, "Peak bandwidth", "%.2f TB/s (%s%s%s)", dv->peak_bandwidth / 1e12,
		   dv->peak_source == ST_PEAK_UNKNOWN ? "unknown source" : st_name(st_peak_source_names, dv->peak_source),
		   *dv->peak_note ? ": " : "", dv->peak_note);
		kv(out, "CUDA", "runtime %s, driver %s (%s), CUPTI %" PRIu32 ", cuBLAS %" PRIu32,
		   fmt_version(b2, sizeof(b2), dv->cuda_runtime_version),
		   fmt_version(b3, sizeof(b3), dv->cuda_driver_version),
		   *dv->driver_version ? dv->driver_version : "?", dv->cupti_version,
		   dv->cublas_version);
	}
	if (h->has_header) {
		time_t t = (time_t)(h->created_unix_ns / 1000000000);
		struct tm tm;
		if (h->created_unix_ns && gmtime_r(&t, &tm))
			strftime(b4, sizeof(b4), "%Y-%m-%d %H:%M UTC", &tm);
		else
			snprintf(b4, sizeof(b4), "unknown");
		kv(out, "Recorded", "%s on %s (%s)", b4, *h->hostname ? h->hostname : "?",
		   *h->tool_version ? h->tool_version : "unknown tool version");
	}
	fputs("</dl>\n</div>\n", out);
	if (h->has_header && *h->command_line) {
		fputs("<pre class=\"cmd mono\">", out);
		html_escape(out, h->command_line);
		fputs("</pre>\n", out);
	}
}

/* The row of key numbers: step time, GPU busy, GEMM share, peak memory, kernels. */
static void write_kpis(FILE *out, const struct page_data *d)
{
	char v[128], n[256], b1[32], b2[32];
	double gemm = d->category_ns[CAT_GEMM];

	fputs("<div class=\"kpis\">\n", out);
	if (d->have_steps) {
		int dec = d->wall.stddev > 0 && d->wall.stddev < 0.01 ? 3 : 2;
		snprintf(v, sizeof(v), "%.2f ms", d->wall.mean);
		snprintf(n, sizeof(n), "± %.*f ms (std), host wall over %zu measured step%s", dec, d->wall.stddev,
			 d->wall.n, d->wall.n == 1 ? "" : "s");
	} else {
		snprintf(v, sizeof(v), "n/a");
		snprintf(n, sizeof(n), "the bundle has no measured steps");
	}
	kpi(out, "Step time", v, n);
	snprintf(v, sizeof(v), "%s", human_time(b1, sizeof(b1), d->have_steps ? d->busy.mean * 1e6 : d->kernel_ns));
	snprintf(n, sizeof(n), "%.0f%% of the step's wall time",
		 d->have_steps && d->wall.mean > 0 ? 100.0 * d->busy.mean / d->wall.mean : 0.0);
	kpi(out, "GPU busy per step", v, d->have_steps ? n : "kernel time, all work");
	snprintf(v, sizeof(v), "%.1f%%", d->kernel_ns > 0 ? 100.0 * gemm / d->kernel_ns : 0.0);
	snprintf(n, sizeof(n), "%s of GEMM per step", human_time(b1, sizeof(b1), gemm));
	kpi(out, "GEMM share", v, n);
	snprintf(v, sizeof(v), "%s", human_bytes(b1, sizeof(b1), (double)d->tl.peak.bytes));
	if (d->rp->run.has_device && d->rp->run.device.memory_bytes)
		snprintf(n, sizeof(n), "%.0f%% of %s, %s view",
			 100.0 * (double)d->tl.peak.bytes / (double)d->rp->run.device.memory_bytes,
			 human_bytes(b2, sizeof(b2), (double)d->rp->run.device.memory_bytes),
			 mem_view_name(d->tl.view));
	else
		snprintf(n, sizeof(n), "%s view", mem_view_name(d->tl.view));
	kpi(out, "Peak memory", v, n);
	snprintf(v, sizeof(v), "%.0f", (double)d->kernels / (double)d->divisor);
	snprintf(n, sizeof(n), "%s of kernels and copies", human_time(b1, sizeof(b1), d->kernel_ns));
	kpi(out, "Kernels per step", v, n);
	fputs("</div>\n", out);
}

/* ---- charts of our own ---------------------------------------------------- */

/* Bars of (label, value ns), longest first as given; share of `total`. */
static void bar_chart(FILE *out, const char *title, const char *const *labels, const double *values,
		      const int *colors, int n, double total)
{
	const double label_w = 170, value_w = 170, row = 28, top = 6;
	double max = 0, w = PAGE_W - 40;
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
		svg_text(out, label_w - 10, yy + 18, SVG_END, 13, "#344054", NULL, "%s", labels[i]);
		svg_rect(out, label_w, yy + 5, w - label_w - value_w, 18, "#f2f4f7", "rx=\"4\"");
		svg_rect(out, label_w, yy + 5, bw < 2 ? 2 : bw, 18, svg_series_color(colors[i]), "rx=\"4\"");
		svg_text(out, w - value_w + 10, yy + 18, SVG_START, 13, "#1d2330",
			 "style=\"font-variant-numeric:tabular-nums\"", "%s  (%.1f%%)",
			 human_time(b, sizeof(b), values[i]), total > 0 ? 100.0 * values[i] / total : 0.0);
	}
	svg_end(out);
}

/* One horizontal stacked bar of the phases, with a legend below. */
static void phase_bar(FILE *out, const struct page_data *d)
{
	double total = 0, x = 0, w = PAGE_W - 40;
	char b[32];

	for (int p = 0; p < PH_COUNT; p++)
		total += d->phase_gpu[p];
	if (total <= 0) {
		fputs("<p class=\"muted\">No GPU work under forward, backward or optimizer ranges.</p>\n", out);
		return;
	}
	svg_begin(out, (int)w, 44, "GPU time by phase");
	for (int p = 0; p < PH_COUNT; p++) {
		double bw = w * d->phase_gpu[p] / total;
		if (bw <= 0)
			continue;
		svg_rect(out, x, 4, bw, 36, svg_series_color(p), NULL);
		if (bw > 120)
			svg_text(out, x + 10, 27, SVG_START, 13, "#fff", "font-weight=\"600\"", "%s %.0f%%",
				 phase_names[p], 100.0 * d->phase_gpu[p] / total);
		x += bw;
	}
	svg_end(out);
	fputs("<div class=\"legend\">", out);
	for (int p = 0; p < PH_COUNT; p++)
		if (d->phase_gpu[p] > 0)
			fprintf(out, "<span><i style=\"background:%s\"></i>%s: %s</span>", svg_series_color(p),
				phase_names[p], human_time(b, sizeof(b), d->phase_gpu[p]));
	fputs("</div>\n", out);
}

/*
 * A column per step (host wall time), warm-up steps in grey. The scale is
 * the measured steps': a warm-up step many times longer is cut at the top
 * and labelled with its time, so it does not flatten the steps that count.
 */
static void steps_chart(FILE *out, const struct replay *rp)
{
	const double h = 150, left = 60, bottom = 24, w = PAGE_W - 40;
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
		svg_rect(out, left + cw * (double)i + cw * 0.15, h - bottom - bh, cw * 0.7, bh,
			 s->warmup ? "#c4c9d2" : "#3b5bdb", "rx=\"3\"");
		if (v > max && rp->n_steps <= 40)   /* cut: say how tall it is */
			svg_text(out, left + cw * ((double)i + 0.5), h - bottom - bh + 14, SVG_MIDDLE, 11,
				 "#344054", NULL, "%.1f ms", v);
		if (rp->n_steps <= 40)
			svg_text(out, left + cw * ((double)i + 0.5), h - 7, SVG_MIDDLE, 11, "#667085", NULL,
				 "%" PRIu32 "%s", s->index, s->warmup ? " (w)" : "");
	}
	svg_end(out);
}

/* ---- sections ---------------------------------------------------------------- */

static void write_steps(FILE *out, const struct page_data *d)
{
	char lead[256];

	snprintf(lead, sizeof(lead), "Host wall time of each step (synchronised); warm-up steps in grey are "
		 "left out of the mean. Reproduce: steptrace steps %s --include-warmup", base_name(d->rp->path));
	section_begin(out, "steps", "Step time", lead);
	if (!d->have_steps) {
		fputs("<p class=\"muted\">No measured steps in this bundle.</p>\n", out);
	} else {
		fputs("<dl class=\"kv\">", out);
		kv(out, "Wall time", "%.3f ± %.3f ms (median %.3f, min %.3f, max %.3f; %zu steps)", d->wall.mean,
		   d->wall.stddev, d->wall.median, d->wall.min, d->wall.max, d->wall.n);
		kv(out, "GPU busy", "%.3f ± %.3f ms", d->busy.mean, d->busy.stddev);
		fputs("</dl>\n", out);
		steps_chart(out, d->rp);
	}
	section_end(out);
}

static void write_phases(FILE *out, const struct page_data *d)
{
	char b1[32], b2[32];
	double total = 0;

	section_begin(out, "phases", "Time by phase",
		      d->phase_from_ranges
		      ? "GPU busy time per measured step projected onto the forward, backward and optimizer NVTX "
			"ranges (as Nsight Systems projects ranges); other = the rest of the step's GPU time."
		      : "Kernel time per measured step by the phase of the op that launched it (the bundle has "
			"no phase ranges).");
	phase_bar(out, d);
	for (int p = 0; p < PH_COUNT; p++)
		total += d->phase_gpu[p];
	fputs("<div class=\"scroll\"><table class=\"data\" style=\"margin-top:12px\"><thead><tr><th>Phase</th>"
	      "<th class=\"num\">GPU time / step</th><th class=\"num\">Share</th>"
	      "<th class=\"num\">CPU time / step</th><th class=\"num\">Kernels / step</th></tr></thead><tbody>\n",
	      out);
	for (int p = 0; p < PH_COUNT; p++) {
		if (d->phase_gpu[p] <= 0 && d->phase_cpu[p] <= 0)
			continue;
		fprintf(out, "<tr><td>%s</td><td class=\"num\">%s</td><td class=\"num\">%.1f%%</td>"
			"<td class=\"num\">%s</td><td class=\"num\">%.0f</td></tr>\n", phase_names[p],
			human_time(b1, sizeof(b1), d->phase_gpu[p]), total > 0 ? 100.0 * d->phase_gpu[p] / total : 0.0,
			d->phase_cpu[p] > 0 ? human_time(b2, sizeof(b2), d->phase_cpu[p]) : "",
			(double)d->phase_kernels[p] / (double)d->divisor);
	}
	fputs("</tbody></table></div>\n", out);
	section_end(out);
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
		 "steptrace summary %s --by category", base_name(d->rp->path));
	section_begin(out, "categories", "Time by category", lead);
	bar_chart(out, "GPU time by kernel category", labels, values, colors, CAT_COUNT, d->kernel_ns);
	section_end(out);
}

static int write_top_kernels(FILE *out, const struct page_data *d)
{
	const struct replay *rp = d->rp;
	struct dur_collect dc;
	struct dur_groups g = { NULL, 0, 0 };
	struct report *r = NULL;
	struct table *t;
	char lead[256];
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
	for (size_t i = 0; i < g.n && i < TOP_KERNELS; i++) {
		table_row(t);
		nsys_stat_cells(t, &g.g[i].s, g.total, 1.0);
		table_str(t, g.g[i].name);
	}
	snprintf(lead, sizeof(lead), "Nsight Systems' cuda_gpu_kern_sum columns over the measured steps (%zu "
		 "kernel names in all). Reproduce: steptrace summary %s --top %d", g.n, base_name(rp->path),
		 TOP_KERNELS);
	section_begin(out, "kernels", "Top kernels", lead);
	if (html_report_tables(out, r, "kernels", 0, 0) < 0)
		goto out;
	section_end(out);
	rc = 0;
out:
	report_free(r);
	dur_groups_release(&g);
	dur_collect_release(&dc);
	return rc;
}

static int write_memory(FILE *out, const struct page_data *d)
{
	const struct replay *rp = d->rp;
	const struct mem_timeline *tl = &d->tl;
	uint32_t idx[TOP_BLOCKS];
	size_t live, n;
	char b1[32], b2[32], lead[512];

	snprintf(lead, sizeof(lead), "Live device memory over time (%s view), stacked by category; the peak is "
		 "marked. Reproduce: steptrace memory %s --svg memory.svg", mem_view_name(tl->view),
		 base_name(rp->path));
	section_begin(out, "memory", "Memory", lead);
	if (tl->n_blocks == 0) {
		fputs("<p class=\"muted\">No allocation events in this bundle.</p>\n", out);
		section_end(out);
		return 0;
	}
	if (memory_svg_write(out, rp, tl, 0, 0, PAGE_W - 40, 380) < 0)
		return -1;

	fputs("<div class=\"grid2\" style=\"margin-top:14px\"><div>\n<h3>At the peak</h3>\n<dl class=\"kv\">", out);
	kv(out, "Peak", "%s at %s", human_bytes(b1, sizeof(b1), (double)tl->peak.bytes),
	   human_time(b2, sizeof(b2), (double)(tl->peak.t - rp->t_min)));
	for (int c = 0; c < ST_MEM_CATEGORY_COUNT; c++)
		if (tl->peak.by_category[c])
			kv(out, st_mem_category_name(c), "%s (%.1f%%)",
			   human_bytes(b1, sizeof(b1), (double)tl->peak.by_category[c]),
			   100.0 * (double)tl->peak.by_category[c] / (double)(tl->peak.bytes ? tl->peak.bytes : 1));
	fputs("</dl></div><div>\n<h3>Peak by phase</h3>\n<dl class=\"kv\">", out);
	for (int p = 0; p < MEM_PHASE_COUNT; p++)
		if (tl->phase_peak[p].bytes)
			kv(out, mem_phase_name((enum mem_phase)p), "%s",
			   human_bytes(b1, sizeof(b1), (double)tl->phase_peak[p].bytes));
	if (tl->n_never_freed)
		kv(out, "never freed", "%zu blocks, %s", tl->n_never_freed,
		   human_bytes(b1, sizeof(b1), (double)tl->never_freed_bytes));
	fputs("</dl></div></div>\n", out);

	live = mem_timeline_live_at(tl, tl->peak.point, idx, TOP_BLOCKS);
	n = live < TOP_BLOCKS ? live : TOP_BLOCKS;
	fprintf(out, "<h3>Largest live allocations at the peak</h3>\n<div class=\"scroll\"><table class=\"data\">"
		"<thead><tr><th class=\"num\">Size</th><th class=\"num\">Share of peak</th><th>Category</th>"
		"<th>Op</th><th class=\"num\">Allocated at</th><th>Phase</th></tr></thead><tbody>\n");
	for (size_t i = 0; i < n; i++) {
		const struct mem_block *b = &tl->blocks[idx[i]];
		const char *op = memory_block_op(rp, b);
		fprintf(out, "<tr><td class=\"num\">%s</td><td class=\"num\">%.1f%%</td><td>%s</td><td class=\"long\">",
			human_bytes(b1, sizeof(b1), (double)b->size),
			100.0 * (double)b->size / (double)(tl->peak.bytes ? tl->peak.bytes : 1),
			st_mem_category_name(b->category));
		html_escape(out, *op ? op : "(none)");
		fprintf(out, "</td><td class=\"num\">%s</td><td>%s</td></tr>\n",
			human_time(b2, sizeof(b2), (double)(b->t_alloc - rp->t_min)), mem_phase_name((enum mem_phase)b->phase));
	}
	fputs("</tbody></table></div>\n", out);
	if (live > n)
		fprintf(out, "<p class=\"muted\">%zu of %zu live blocks shown; times from the first event.</p>\n", n, live);
	section_end(out);
	return 0;
}

static int write_roofline(FILE *out, const struct page_data *d)
{
	struct report *r;
	char lead[512];
	int rc;

	snprintf(lead, sizeof(lead), "Each op kind (summed over layers) at its arithmetic intensity and achieved "
		 "TFLOP/s against the device's ceilings (%s peaks). Reproduce: steptrace flops %s",
		 d->fl.peaks.source ? d->fl.peaks.source : "unknown", base_name(d->rp->path));
	section_begin(out, "roofline", "Roofline", lead);
	if (d->fl.n_rows == 0) {
		fputs("<p class=\"muted\">No kernels launched by registered ops.</p>\n", out);
		section_end(out);
		return 0;
	}
	if (flops_roofline_svg(out, d->rp, PAGE_W - 40, 520) < 0)
		return -1;
	r = report_new();
	flops_report(r, &d->fl, 12, NULL);
	fputs("<h3>Ops by GPU time per step</h3>\n", out);
	rc = html_report_tables(out, r, "flops", 0, 1);
	report_free(r);
	section_end(out);
	return rc < 0 ? -1 : 0;
}

static int write_diff(FILE *out, const struct replay *a, const struct replay *b)
{
	static const struct { const char *name, *title; } parts[] = {
		{ "steps", "Step time" },
		{ "memory", "Memory peaks" },
		{ "diff", "By op kind (largest changes first)" },
		{ "kernels", "Kernels in one bundle only" },
	};
	struct diff_options opt = { .by = DIFF_BY_OP, .top = 25 };
	struct report *r = report_new();
	char lead[2048], what[512];
	int rc = -1;

	diff_headers(a, b, what, sizeof(what));
	snprintf(lead, sizeof(lead), "A = %s (baseline), B = %s. Rows aligned by op kind and phase, times per "
		 "measured step. %s%s Reproduce: steptrace diff %s %s", base_name(a->path), base_name(b->path),
		 *what ? "Headers differ in: " : "", what, base_name(a->path), base_name(b->path));
	section_begin(out, "diff", "Diff", lead);
	if (diff_run(a, b, &opt, r) < 0)
		goto out;
	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		fputs("<h3>", out);
		html_escape(out, parts[i].title);
		fputs("</h3>\n", out);
		if (html_report_tables(out, r, parts[i].name, 0, i + 1 == sizeof(parts) / sizeof(parts[0])) < 0)
			goto out;
	}
	section_end(out);
	rc = 0;
out:
	report_free(r);
	return rc;
}

/* ---- the page -------------------------------------------------------------- */

static void page_begin(FILE *out, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<meta name=\"generator\" content=\"steptrace report\">\n<title>", out);
	html_escape(out, title);
	fprintf(out, "</title>\n<style>%s</style>\n</head>\n<body>\n<main>\n", page_css);
}

static void page_end(FILE *out)
{
	fputs("<footer>Made by <b>steptrace report</b> from the bundles alone: inline SVG and CSS, "
	      "no scripts, no network.</footer>\n</main>\n</body>\n</html>\n", out);
}

static void page_top(FILE *out, const struct replay *rp, const struct replay *other)
{
	fputs("<header class=\"top\"><div><h1>", out);
	if (other) {
		html_printf(out, "%s vs %s", base_name(rp->path), base_name(other->path));
		fputs("</h1><div class=\"sub\">Training-step diff: A (baseline) against B</div>", out);
	} else {
		html_escape(out, base_name(rp->path));
		fputs("</h1><div class=\"sub\">One training step, recorded through CUPTI</div>", out);
		write_chips(out, rp);
	}
	fputs("</div><div class=\"brand\"><b>steptrace</b><br>training-step profile</div></header>\n", out);
}

/* The sections of one bundle; `suffix` (" (A)") tells them apart in a diff. */
static int write_bundle_sections(FILE *out, const struct page_data *d)
{
	write_steps(out, d);
	write_phases(out, d);
	write_categories(out, d);
	if (write_top_kernels(out, d) < 0 || write_memory(out, d) < 0 || write_roofline(out, d) < 0)
		return -1;
	return 0;
}

static int write_single(FILE *out, const struct replay *rp)
{
	struct page_data d;
	int rc = -1;

	if (page_data_init(&d, rp, NULL) < 0)
		goto out;
	page_begin(out, base_name(rp->path));
	page_top(out, rp, NULL);
	write_kpis(out, &d);
	section_begin(out, "run", "Run", NULL);
	write_run(out, rp);
	section_end(out);
	if (write_bundle_sections(out, &d) < 0)
		goto out;
	page_end(out);
	rc = 0;
out:
	page_data_release(&d);
	return rc;
}

/* One bundle of a pair: its heading, its key numbers and its sections. */
static int write_pair_part(FILE *out, const char *label, const struct page_data *d)
{
	fputs("<h2 style=\"margin:28px 4px 12px;font-size:19px\">", out);
	html_printf(out, "%s: %s", label, base_name(d->rp->path));
	fputs("</h2>\n", out);
	write_chips(out, d->rp);
	fputs("<div style=\"height:12px\"></div>\n", out);
	write_kpis(out, d);
	return write_bundle_sections(out, d);
}

static int write_pair(FILE *out, const struct replay *a, const struct replay *b)
{
	struct page_data da, db;
	int rc = -1;

	memset(&db, 0, sizeof(db));
	if (page_data_init(&da, a, "A") < 0 || page_data_init(&db, b, "B") < 0)
		goto out;
	page_begin(out, "steptrace diff");
	page_top(out, a, b);
	section_begin(out, "run", "Run", NULL);
	fputs("<div class=\"pair\"><div><h3>A</h3>\n", out);
	write_chips(out, a);
	write_run(out, a);
	fputs("</div><div><h3>B</h3>\n", out);
	write_chips(out, b);
	write_run(out, b);
	fputs("</div></div>\n", out);
	section_end(out);
	if (write_diff(out, a, b) < 0)
		goto out;
	if (write_pair_part(out, "A", &da) < 0 || write_pair_part(out, "B", &db) < 0)
		goto out;
	page_end(out);
	rc = 0;
out:
	page_data_release(&da);
	page_data_release(&db);
	return rc;
}

int report_html_write(const struct replay *a, const struct replay *b, const char *output)
{
	struct output out;
	char *owned = NULL;
	int rc = -1;

	if (!output)
		output = owned = bundle_output_name(a->path, b ? b->path : NULL, ".html");
	if (!output)
		return error("out of memory");
	if (output_open(&out, output, (const char *[]){ a->path, b ? b->path : NULL, NULL }) < 0)
		goto out;
	if ((b ? write_pair(out.f, a, b) : write_single(out.f, a)) < 0) {
		output_discard(&out);
		goto out;
	}
	if (output_close(&out) < 0)
		goto out;
	rc = 0;
	fprintf(stderr, "wrote '%s': open it in any browser (self-contained, no network)\n", output);
out:
	free(owned);
	return rc;
}
