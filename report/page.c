/*
 * page.c: what the files of the HTML report share (see page.h): a bundle's
 * numbers computed once for every card, the page's head and foot, its
 * title, banner, chips and run card, its key numbers, and the pieces of
 * HTML every card writes (sections, tooltip rectangles, titled tables).
 * Every number comes from the same helpers as the text reports (replay's
 * projection, replay/memory.h, flops.h, comm.h, common.h's statistics), so
 * the page and `steptrace summary|ranges|memory|flops|diff` always agree.
 */
#include "report/page.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/category.h"
#include "analyze/comm.h"
#include "analyze/flops.h"
#include "lib/human.h"
#include "render/html.h"
#include "replay/memory.h"
#include "report/assets.h"

/* ---- small formatting ----------------------------------------------------- */

static const char *fmt_version(char *buf, size_t n, uint32_t v)
{
	if (!v)
		snprintf(buf, n, "unknown");
	else
		snprintf(buf, n, "%" PRIu32 ".%" PRIu32, v / 1000, (v % 1000) / 10);
	return buf;
}

const char *page_base_name(const char *path)
{
	const char *s = path ? strrchr(path, '/') : NULL;

	return s ? s + 1 : path ? path : "";
}

void page_kv(FILE *out, const char *key, const char *fmt, ...)
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

void page_kpi(FILE *out, const char *label, const char *value, const char *note, const char *delta)
{
	fputs("<div class=\"kpi\"><div class=\"label\">", out);
	html_escape(out, label);
	fputs("</div><div class=\"value\">", out);
	html_escape(out, value);
	if (delta)
		fprintf(out, " %s", delta);
	fputs("</div>", out);
	if (note && *note) {
		fputs("<div class=\"note\">", out);
		html_escape(out, note);
		fputs("</div>", out);
	}
	fputs("</div>\n", out);
}

void page_tip_rect(FILE *out, double x, double y, double w, double h, const char *fill, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(out, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" rx=\"2\"", x, y,
		w > 0 ? w : 0, h > 0 ? h : 0, fill);
	html_attr(out, "data-tip", "%s", buf);
	fputs("/>\n", out);
}

/* ---- what the page shows, computed once per bundle -------------------------- */

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

/*
 * By phase: the GPU busy time projected onto the phase ranges ("forward",
 * "backward", "optimizer", "zero_grad", "data", each not inside another
 * phase's: replay_range_phase) of measured steps; "other" is what the
 * steps' GPU busy time has beyond them (the loss, copies outside phases).
 * Without such ranges, kernel time summed by the op's phase.
 */
static void compute_phases(struct page_data *d)
{
	const struct replay *rp = d->rp;
	double step_busy = 0, sum = 0;

	for (size_t i = 0; i < rp->n_ranges; i++) {
		const struct replay_range *r = &rp->ranges[i];
		int p = replay_range_phase(rp, i);

		if (p < 0 || !replay_counts(rp, r->step, false))
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
			int p = op ? st_phase_from_name(replay_str(rp, op->phase)) : -1;
			if (!replay_counts(rp, a->step, false))
				continue;
			p = p < 0 ? ST_PHASE_OTHER : p;
			d->phase_gpu[p] += (double)(a->end - a->start);
			d->phase_kernels[p] += a->kind == ST_KERNEL;
		}
	}
	for (int p = 0; p < ST_PHASE_COUNT; p++) {
		d->phase_gpu[p] /= (double)d->divisor;
		d->phase_cpu[p] /= (double)d->divisor;
		sum += p < ST_PHASE_OTHER ? d->phase_gpu[p] : 0;
	}
	if (d->phase_from_ranges) {
		for (size_t i = 0; i < rp->n_steps; i++)
			if (!rp->steps[i].warmup)
				step_busy += (double)rp->steps[i].gpu_busy;
		step_busy /= (double)d->divisor;
		d->phase_gpu[ST_PHASE_OTHER] = step_busy > sum ? step_busy - sum : 0;
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

int page_data_init(struct page_data *d, const struct replay *rp, const struct replay_ranks *ranks,
		   const char *label, const char *prefix)
{
	struct flops_options fo = { .by = FLOPS_BY_KIND };
	struct comm_totals ct;

	memset(d, 0, sizeof(*d));
	d->rp = rp;
	d->ranks = ranks;
	if (comm_totals(rp, false, &ct) < 0)
		return -1;
	d->have_comm = ct.kernels > 0 || (ranks && ranks->n > 1);
	d->label = label;
	d->prefix = prefix;
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

void page_data_release(struct page_data *d)
{
	if (d->have_mem)
		mem_timeline_release(&d->tl);
	if (d->have_flops)
		flops_result_release(&d->fl);
	memset(d, 0, sizeof(*d));
}

/* A card; its id carries the bundle's prefix (d may be NULL: the diff's own cards). */
void page_section_begin(FILE *out, const struct page_data *d, const char *id, const char *title, const char *lead)
{
	fprintf(out, "<section class=\"card\" id=\"%s%s\">\n<h2>", d ? d->prefix : "", id);
	html_escape(out, title);
	fputs("</h2>\n", out);
	if (lead) {
		fputs("<p class=\"lead\">", out);
		html_escape(out, lead);
		fputs("</p>\n", out);
	}
}

void page_section_end(FILE *out)
{
	fputs("</section>\n", out);
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

void page_chips(FILE *out, const struct replay *rp)
{
	const struct replay_config *c = &rp->run.config;

	fputs("<div class=\"chips\">", out);
	if (rp->run.has_config && !c->d_model) {   /* a program recorded with `record -- COMMAND --precision P` */
		chip(out, c->precision_name);
	} else if (rp->run.has_config) {
		chip(out, c->model);
		chip(out, c->precision_name);
		chip(out, c->mode_name);
		fprintf(out, "<span class=\"chip\">batch %" PRIu32 " &middot; ctx %" PRIu32 "</span>", c->batch, c->ctx);
	}
	if (rp->run.has_device)
		chip(out, rp->run.device.name);
	if (rp->run.world_size > 1)
		fprintf(out, "<span class=\"chip\">rank %" PRIu32 " of %" PRIu32 "</span>", rp->run.rank,
			rp->run.world_size);
	if (*c->ddp_name) {
		fputs("<span class=\"chip\">ddp ", out);
		html_escape(out, c->ddp_name);
		fputs("</span>", out);
	}
	fputs("</div>\n", out);
}

/*
 * What is wrong with the bundle, above everything else: a truncated bundle
 * (no footer), an incomplete one, dropped records. Nothing for a sound one.
 */
void page_banner(FILE *out, const struct replay *rp, const char *label)
{
	const struct replay_footer *f = &rp->run.footer;
	char who[512], dropped[512];

	snprintf(who, sizeof(who), "%s%s'%s'", label ? label : "", label ? ", " : "", page_base_name(rp->path));
	if (!rp->run.has_footer && rp->path) {
		fputs("<div class=\"banner\" role=\"alert\"><b>Truncated bundle.</b> ", out);
		html_printf(out, "%s is truncated (%s): read %" PRIu32 " chunk%s, %" PRIu64 " events. Every number "
			    "on this page covers only that part of the recording.", who,
			    rp->truncation ? rp->truncation : "no footer", rp->chunks_read,
			    rp->chunks_read == 1 ? "" : "s", rp->events_read);
		fputs("</div>\n", out);
		return;
	}
	replay_dropped_text(rp, dropped, sizeof(dropped));
	if (rp->run.has_footer && (!f->complete || *dropped)) {
		fputs("<div class=\"banner\" role=\"alert\"><b>Incomplete recording.</b> ", out);
		html_printf(out, "%s: the recording %s%s", who,
			    !f->complete ? "says it is incomplete" : "is complete",
			    *f->end_reason && strcmp(f->end_reason, "ok") != 0 ? " (it ended: " : "");
		if (*f->end_reason && strcmp(f->end_reason, "ok") != 0)
			html_printf(out, "%s)", f->end_reason);
		if (*dropped)
			html_printf(out, "; %s", dropped);
		fputs(".</div>\n", out);
	}
}

void page_run(FILE *out, const struct replay *rp)
{
	const struct replay_run *h = &rp->run;
	const struct replay_config *c = &h->config;
	const struct replay_device *dv = &h->device;
	const char *source = dv->peak_source == ST_PEAK_UNKNOWN ? "unknown source"
			   : st_name(st_peak_source_names, dv->peak_source);
	const char *mark = *dv->peak_note ? "*" : "";
	char b1[64], b2[64], b3[64], b4[64];

	fputs("<div class=\"grid2 run\">\n<dl class=\"kv\">\n", out);
	if (h->has_config && !c->d_model) {
		page_kv(out, "Precision", "%s (as record --precision said)", c->precision_name);
	} else if (h->has_config) {
		page_kv(out, "Model", "%s", *c->model ? c->model : "custom");
		page_kv(out, "Parameters", "%.1f M", (double)c->parameters / 1e6);
		page_kv(out, "Sizes", "d_model %" PRIu32 ", d_ff %" PRIu32 ", %" PRIu32 " layers, %" PRIu32 " heads",
		   c->d_model, c->d_ff, c->layers, c->heads);
		page_kv(out, "Batch, context, vocab", "%" PRIu32 " x %" PRIu32 ", vocab %" PRIu32, c->batch, c->ctx, c->vocab);
		page_kv(out, "Precision, mode", "%s, %s", c->precision_name, c->mode_name);
		page_kv(out, "Attention", "%s", *c->attention_name ? c->attention_name : "naive");
		page_kv(out, "Steps", "%" PRIu32 " warm-up + %" PRIu32 " measured", c->warmup_steps, c->measured_steps);
	} else if (h->has_header) {   /* record -- COMMAND: a program, no model configuration of steptrace's */
		page_kv(out, "Run", "a program's recording: no model configuration (its command line below)");
		if (h->world_size > 1)
			page_kv(out, "Rank", "%" PRIu32 " of %" PRIu32 " (local rank %" PRIu32 ")", h->rank, h->world_size,
				h->local_rank);
		if (rp->run.steps_from && *rp->run.steps_from)
			page_kv(out, "Steps from", "%s", rp->run.steps_from);
	} else {
		page_kv(out, "Run", "no header (built without a bundle)");
	}
	if (h->has_footer)
		page_kv(out, "Bundle", "%s, %" PRIu64 " events in %" PRIu32 " chunks, %s%s", page_base_name(rp->path),
		   h->footer.events, h->footer.chunks, h->footer.complete ? "complete" : "incomplete",
		   replay_dropped(rp, -1) ? ", records dropped" : "");
	else if (rp->path)
		page_kv(out, "Bundle", "%s, %" PRIu64 " events read, truncated (%s)", page_base_name(rp->path), rp->events_read,
		   rp->truncation ? rp->truncation : "no footer");
	fputs("</dl>\n<dl class=\"kv\">\n", out);
	if (h->has_device) {
		page_kv(out, "Device", "%s, %" PRIu32 " SMs, cc %" PRIu32 ".%" PRIu32 ", %s", dv->name,
		   dv->sm_count, dv->cc_major, dv->cc_minor, human_bytes(b1, sizeof(b1), (double)dv->memory_bytes));
		page_kv(out, "Peak matrix FLOP/s", "bf16 %.0f, tf32 %.0f, fp32 %.1f TFLOP/s (%s%s)", dv->peak_bf16_flops / 1e12,
		   dv->peak_tf32_flops / 1e12, dv->peak_fp32_flops / 1e12, source, mark);
		page_kv(out, "Peak bandwidth", "%.2f TB/s (%s%s)", dv->peak_bandwidth / 1e12, source, mark);
		page_kv(out, "CUDA", "runtime %s, driver %s (%s), CUPTI %" PRIu32 ", cuBLAS %" PRIu32,
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
		page_kv(out, "Recorded", "%s on %s (%s)", b4, *h->hostname ? h->hostname : "?",
		   *h->tool_version ? h->tool_version : "unknown tool version");
	}
	fputs("</dl>\n</div>\n", out);
	if (h->has_device && *dv->peak_note) {
		fputs("<p class=\"footnote\">", out);
		html_printf(out, "* How the peaks were found (%s): %s", source, dv->peak_note);
		fputs("</p>\n", out);
	}
	if (h->has_header && *h->command_line) {
		fputs("<pre class=\"cmd mono\">", out);
		html_words(out, h->command_line);
		fputs("</pre>\n", out);
	}
}

/* ---- key numbers ------------------------------------------------------------- */

void page_kpi_texts(const struct page_data *d, struct page_kpi_text k[KPI_COUNT])
{
	char b1[32], b2[32];
	double gemm = d->category_ns[CAT_GEMM];

	memset(k, 0, sizeof(struct page_kpi_text) * KPI_COUNT);
	if (d->have_steps) {
		int dec = d->wall.stddev > 0 && d->wall.stddev < 0.01 ? 3 : 2;
		snprintf(k[KPI_STEP].value, sizeof(k[0].value), "%.2f ms", d->wall.mean);
		snprintf(k[KPI_STEP].note, sizeof(k[0].note), "± %.*f ms (std), host wall over %zu measured step%s",
			 dec, d->wall.stddev, d->wall.n, d->wall.n == 1 ? "" : "s");
		k[KPI_STEP].raw = d->wall.mean;
	} else {
		snprintf(k[KPI_STEP].value, sizeof(k[0].value), "n/a");
		snprintf(k[KPI_STEP].note, sizeof(k[0].note), "the bundle has no measured steps");
		k[KPI_STEP].raw = NAN;
	}
	k[KPI_BUSY].raw = d->have_steps ? d->busy.mean * 1e6 : d->kernel_ns;
	human_time(k[KPI_BUSY].value, sizeof(k[0].value), k[KPI_BUSY].raw);
	if (d->have_steps)
		snprintf(k[KPI_BUSY].note, sizeof(k[0].note), "%.0f%% of the step's wall time",
			 d->wall.mean > 0 ? 100.0 * d->busy.mean / d->wall.mean : 0.0);
	else
		snprintf(k[KPI_BUSY].note, sizeof(k[0].note), "kernel time, all work");
	k[KPI_GEMM].raw = d->kernel_ns > 0 ? 100.0 * gemm / d->kernel_ns : 0.0;
	snprintf(k[KPI_GEMM].value, sizeof(k[0].value), "%.1f%%", k[KPI_GEMM].raw);
	snprintf(k[KPI_GEMM].note, sizeof(k[0].note), "%s of GEMM per step", human_time(b1, sizeof(b1), gemm));
	k[KPI_GEMM].neutral = true;
	k[KPI_PEAK].raw = (double)d->tl.peak.bytes;
	human_bytes(k[KPI_PEAK].value, sizeof(k[0].value), k[KPI_PEAK].raw);
	if (d->rp->run.has_device && d->rp->run.device.memory_bytes)
		snprintf(k[KPI_PEAK].note, sizeof(k[0].note), "%.0f%% of %s, %s view",
			 100.0 * (double)d->tl.peak.bytes / (double)d->rp->run.device.memory_bytes,
			 human_bytes(b2, sizeof(b2), (double)d->rp->run.device.memory_bytes), mem_view_name(d->tl.view));
	else
		snprintf(k[KPI_PEAK].note, sizeof(k[0].note), "%s view", mem_view_name(d->tl.view));
	k[KPI_KERNELS].raw = (double)d->kernels / (double)d->divisor;
	snprintf(k[KPI_KERNELS].value, sizeof(k[0].value), "%.0f", k[KPI_KERNELS].raw);
	snprintf(k[KPI_KERNELS].note, sizeof(k[0].note), "%s of kernels and copies", human_time(b1, sizeof(b1), d->kernel_ns));
}

const char *const page_kpi_labels[KPI_COUNT] = {
	"Step time", "GPU busy per step", "GEMM share", "Peak memory", "Kernels per step",
};

/* The row of key numbers: step time, GPU busy, GEMM share, peak memory, kernels. */
void page_kpis(FILE *out, const struct page_data *d)
{
	struct page_kpi_text k[KPI_COUNT];

	page_kpi_texts(d, k);
	fputs("<div class=\"kpis\">\n", out);
	for (int i = 0; i < KPI_COUNT; i++)
		page_kpi(out, page_kpi_labels[i], k[i].value, k[i].note, NULL);
	fputs("</div>\n", out);
}

/* ---- the page's parts -------------------------------------------------------------- */

void page_begin(FILE *out, const char *title)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
	      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
	      "<meta name=\"generator\" content=\"steptrace report\">\n<title>", out);
	html_escape(out, title);
	fprintf(out, "</title>\n<style>\n%s</style>\n<script>\n%s</script>\n</head>\n<body>\n"
		"<div id=\"js-errors\" class=\"banner error\" role=\"alert\" hidden></div>\n<main>\n",
		report_css, report_guard_js);
}

void page_end(FILE *out)
{
	fprintf(out, "<footer>Made by <b>steptrace report</b> from the bundles alone: one file, inline CSS, SVG "
		"and script, nothing loaded from the network.</footer>\n</main>\n<script>\n%s</script>\n"
		"</body>\n</html>\n", report_js);
}

void page_top(FILE *out, const struct replay *rp, const struct replay *other)
{
	fputs("<header class=\"top\"><div><h1>", out);
	if (other) {
		html_printf(out, "%s vs %s", page_base_name(rp->path), page_base_name(other->path));
		fputs("</h1><div class=\"sub\">Training-step diff: A (baseline) against B</div>", out);
	} else {
		html_escape(out, page_base_name(rp->path));
		fputs("</h1><div class=\"sub\">One training step, recorded through CUPTI</div>", out);
		page_chips(out, rp);
	}
	fputs("</div><div class=\"brand\"><b>steptrace</b><br>training-step profile</div></header>\n", out);
}

const struct replay_ranks *page_ranks(const struct page_data *d, struct page_alone *alone)
{
	if (d->ranks)
		return d->ranks;
	alone->one[0] = d->rp;
	alone->zero = 0;
	alone->rs = (struct replay_ranks){ alone->one, 1, &alone->zero, 1, 0, "one rank" };
	return &alone->rs;
}

int page_titled_tables(FILE *out, const struct page_data *d, const struct report *r, const char *card,
		       const struct page_part *parts, size_t n)
{
	char id[96];

	for (size_t i = 0; i < n; i++) {
		fputs("<h3>", out);
		html_escape(out, parts[i].title);
		fputs("</h3>\n", out);
		snprintf(id, sizeof(id), "%s%s-%s", d->prefix, card, parts[i].name);
		if (html_report_tables(out, r, &(struct html_tables){ .name = parts[i].name, .id = id,
				       .visible = VISIBLE_ROWS, .notes = i + 1 == n }) < 0)
			return -1;
	}
	return 0;
}
