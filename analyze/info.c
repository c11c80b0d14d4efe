/* info.c: a bundle's header, footer and counts (see info.h). */
#include "analyze/info.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "lib/human.h"

/*
 * A table of (field, value) rows; a value wider than `wrap` goes on as
 * many rows as it takes, broken between words, the field named on the
 * first (0: never).
 */
struct kv {
	struct table *t;
	size_t wrap;
};

static struct kv *kv_table(struct kv *kv, struct report *r, const char *name, const char *title, size_t wrap)
{
	kv->t = report_add_table(r, name, title);
	kv->wrap = wrap;
	table_add_column(kv->t, "Field", COL_STR, 0);
	table_add_column(kv->t, "Value", COL_STR, 0);
	return kv;
}

static void kv_row(struct kv *t, const char *k, const char *v, size_t n)
{
	char buf[1024];

	snprintf(buf, sizeof(buf), "%.*s", (int)n, v);
	table_row(t->t);
	table_str(t->t, k);
	table_str(t->t, buf);
}

static void kv_str(struct kv *t, const char *k, const char *v)
{
	v = v ? v : "";
	while (t->wrap && strlen(v) > t->wrap) {
		size_t cut = t->wrap;

		while (cut > 0 && v[cut] != ' ')
			cut--;
		if (cut == 0)
			cut = t->wrap;   /* one word wider than the column: broken where it must */
		kv_row(t, k, v, cut);
		k = "";
		for (v += cut; *v == ' '; v++)
			;
	}
	kv_row(t, k, v, strlen(v));
}

static void kv_fmt(struct kv *t, const char *k, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void kv_fmt(struct kv *t, const char *k, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	kv_str(t, k, buf);
}

static void unix_time(char *buf, size_t len, int64_t ns)
{
	time_t s = (time_t)(ns / 1000000000);
	struct tm tm;

	if (ns <= 0 || !gmtime_r(&s, &tm) || !strftime(buf, len, "%Y-%m-%d %H:%M:%S UTC", &tm))
		snprintf(buf, len, "%s", ns ? "?" : "");
}

static void header_table(struct report *r, const struct replay *rp, size_t wrap)
{
	const struct replay_run *h = &rp->run;
	struct kv kv, *t = kv_table(&kv, r, "header", "Header", wrap);
	char buf[64];

	kv_str(t, "file", rp->path);
	if (!h->has_header)
		return;
	kv_fmt(t, "format", "%" PRIu32 ".%" PRIu32, h->format_major, h->format_minor);
	kv_str(t, "tool", h->tool_version);
	kv_str(t, "command line", h->command_line);
	kv_str(t, "host", h->hostname);
	if (h->pid)
		kv_fmt(t, "process id", "%" PRIu32, h->pid);
	unix_time(buf, sizeof(buf), h->created_unix_ns);
	kv_str(t, "created", buf);
	kv_fmt(t, "clock", "%s (time base %" PRIu64 " ns)", h->clock, h->time_base_ns);
	if (!strcmp(h->clock, "cupti"))
		kv_str(t, "API calls recorded", *h->api_calls ? h->api_calls : "all");
	if (*h->imported_from)
		kv_str(t, "imported from", h->imported_from);
	for (const char *m = h->import_missing; *m; ) {
		size_t n = strcspn(m, "\n");

		kv_fmt(t, "not in the source", "%.*s", (int)n, m);
		m += n + (m[n] == '\n');
	}
	if (h->has_config && !h->config.d_model) {
		/* a program recorded with `record -- COMMAND`: only what it was told */
		kv_fmt(t, "precision", "%s (as `record --precision` said)", h->config.precision_name);
	} else if (h->has_config) {
		const struct replay_config *c = &h->config;
		kv_fmt(t, "model", "%s: d_model %" PRIu32 ", d_ff %" PRIu32 ", layers %" PRIu32
		       ", heads %" PRIu32 ", vocab %" PRIu32, c->model, c->d_model, c->d_ff,
		       c->layers, c->heads, c->vocab);
		kv_fmt(t, "parameters", "%" PRIu64, c->parameters);
		kv_fmt(t, "batch x ctx", "%" PRIu32 " x %" PRIu32, c->batch, c->ctx);
		kv_fmt(t, "precision / mode / attention", "%s / %s / %s", c->precision_name, c->mode_name,
		       c->attention_name);
		kv_fmt(t, "steps", "%" PRIu32 " warm-up, %" PRIu32 " measured", c->warmup_steps,
		       c->measured_steps);
		kv_fmt(t, "seed / lr", "%" PRIu64 " / %g", c->seed, c->lr);
		if (c->ddp == ST_DDP_BUCKET)
			kv_fmt(t, "data parallel", "%s (buckets of %g MB)", c->ddp_name, c->bucket_mb);
		else if (*c->ddp_name)
			kv_str(t, "data parallel", c->ddp_name);
		if (*c->ddp_name && *c->allreduce)
			kv_fmt(t, "all-reduces by", "%s", !strcmp(c->allreduce, "ce") ?
			       "the copy engines, reduce-scatter and all-gather (--allreduce-by ce)" :
			       !strcmp(c->allreduce, "exchange") ?
			       "the copy engines, whole copies averaged in AdamW (--allreduce-by exchange)" :
			       !strcmp(c->allreduce, "nccl") ? "NCCL (--allreduce-by nccl)" : c->allreduce);
		if (st_ddp_overlaps(c->ddp) && (h->format_major > 1 || h->format_minor >= 7)) {
			char ctas[48] = "NCCL's choice of CTAs";

			if (c->nccl_ctas)
				snprintf(ctas, sizeof(ctas), "NCCL on at most %" PRIu32 " CTAs", c->nccl_ctas);
			kv_fmt(t, "beside the all-reduces", "products on the SMs less %" PRIu32 " (--sm-carveout), "
			       "%s (--nccl-ctas)", c->sm_carveout, ctas);
		}
	}
	if (h->world_size > 1)
		kv_fmt(t, "rank", "%" PRIu32 " of %" PRIu32 " (local rank %" PRIu32 ", run %016" PRIx64
		       ", NCCL %s)", h->rank, h->world_size, h->local_rank, h->run_id,
		       *h->nccl_version ? h->nccl_version : "?");
	if (h->has_device) {
		const struct replay_device *d = &h->device;
		const char *source = st_name(st_peak_source_names, d->peak_source);
		kv_fmt(t, "device", "%s (index %" PRIu32 ", sm_%" PRIu32 "%" PRIu32 ", %" PRIu32 " SMs)",
		       d->name, d->index, d->cc_major, d->cc_minor, d->sm_count);
		char bus[16], sm[16], mem[16];   /* 0: not in the source (an imported trace): "?" */

		snprintf(bus, sizeof(bus), d->mem_bus_bits ? "%" PRIu32 : "?", d->mem_bus_bits);
		snprintf(sm, sizeof(sm), d->sm_clock_khz ? "%" PRIu32 : "?", d->sm_clock_khz / 1000);
		snprintf(mem, sizeof(mem), d->mem_clock_khz ? "%" PRIu32 : "?", d->mem_clock_khz / 1000);
		kv_fmt(t, "device memory", "%.1f GiB, L2 %.1f MiB, %s-bit bus",
		       (double)d->memory_bytes / (1u << 30), (double)d->l2_bytes / (1u << 20), bus);
		kv_fmt(t, "clocks", "SM %s MHz, memory %s MHz", sm, mem);
		kv_fmt(t, "peak FLOP/s", "fp32 %.1f, tf32 %.1f, bf16 %.1f, fp16 %.1f TFLOP/s (%s%s%s)",
		       d->peak_fp32_flops / 1e12, d->peak_tf32_flops / 1e12, d->peak_bf16_flops / 1e12,
		       d->peak_fp16_flops / 1e12, source, *d->peak_note ? ": " : "", d->peak_note);
		kv_fmt(t, "peak bandwidth", "%.1f GB/s (%s)", d->peak_bandwidth / 1e9, source);
		kv_fmt(t, "versions", "CUDA runtime %" PRIu32 ", driver %" PRIu32 " (%s), CUPTI %" PRIu32
		       ", cuBLAS %" PRIu32, d->cuda_runtime_version, d->cuda_driver_version,
		       d->driver_version, d->cupti_version, d->cublas_version);
	}
}

/* (1.8) The optimizer's parameter groups: "124,475,904 in 148 tensors ..., 2 groups, 237.4 MiB (bf16)". */
static void param_groups_row(struct kv *t, const struct replay_run *run)
{
	uint64_t tensors = 0, elements = 0, bytes = 0;
	uint32_t dtype = run->n_param_groups ? run->param_groups[0].dtype : 0;
	char size[32], count[32];

	if (!run->n_param_groups)
		return;
	for (size_t i = 0; i < run->n_param_groups; i++) {
		tensors += run->param_groups[i].tensors;
		elements += run->param_groups[i].elements;
		bytes += run->param_groups[i].bytes;
		if (run->param_groups[i].dtype != dtype && run->param_groups[i].tensors)
			dtype = ST_DT_UNKNOWN;
	}
	human_bytes(size, sizeof(size), (double)bytes);
	human_count(count, sizeof(count), elements);
	kv_fmt(t, "parameters", "%s in %" PRIu64 " tensors that require a gradient, %zu group%s, %s (%s)",
	       count, tensors, run->n_param_groups, run->n_param_groups == 1 ? "" : "s", size,
	       dtype ? st_dtype_name((int)dtype) : "several dtypes");
}

/* (1.10) CUPTI's cost per launch, as the recorder measured it in the process. */
static void launch_cost_row(struct kv *t, const struct replay_run *run)
{
	const struct st_launch_cost *c = &run->launch_cost;

	if (!c->launches)
		return;
	if (replay_launch_cost_ns(run) > 0)
		kv_fmt(t, "launch cost", "CUPTI %.0f ns per kernel launch (%" PRIu32 " rounds of %" PRIu32
		       " launches: traced %.1f us, untraced %.1f us a batch)",
		       replay_launch_cost_ns(run), c->rounds, c->launches, (double)c->traced_ns / 1e3,
		       (double)c->untraced_ns / 1e3);
	else
		kv_fmt(t, "launch cost", "not used (%" PRIu32 " launches: traced %" PRIu64 " ns, untraced %" PRIu64
		       " ns a batch)", c->launches, c->traced_ns, c->untraced_ns);
}

/* (1.11) An armed window: the program's unrecorded steps just before it. */
static void unrecorded_row(struct kv *t, const struct replay_run *run)
{
	struct dur_stats st;

	if (replay_unrecorded_steps(run, &st))
		kv_fmt(t, "unrecorded", "%" PRIu64 " steps of the program just before this window, unrecorded: %.3f ms "
		       "(median)", st.n, st.median / 1e6);
	else if (st.n)
		kv_fmt(t, "unrecorded", "%" PRIu64 " steps of the program just before this window, unrecorded (too few to "
		       "use)", st.n);
	if (run->armed_span_ns)
		kv_fmt(t, "armed cost", "the recorder's own host time while armed, over the %.3f s before this window: "
		       "%.3f ms (%.3f%%)", (double)run->armed_span_ns / 1e9, (double)run->armed_recorder_ns / 1e6,
		       100 * (double)run->armed_recorder_ns / (double)run->armed_span_ns);
}

static void footer_table(struct report *r, const struct replay *rp, size_t wrap)
{
	const struct replay_footer *f = &rp->run.footer;
	struct kv kv, *t = kv_table(&kv, r, "footer", "Footer", wrap);
	char buf[64];

	if (!rp->run.has_footer) {
		kv_str(t, "complete", "no (no footer)");
	} else {
		kv_str(t, "complete", f->complete ? "yes" : "no");
		kv_str(t, "end reason", f->end_reason);
		if (!strcmp(rp->run.steps_from, f->steps_from) && *f->steps_from)
			kv_str(t, "steps from", f->steps_from);
		else if (*rp->run.steps_from)   /* replay found them (replay/period.h) */
			kv_fmt(t, "steps from", "%s (the recorder's: %s)", rp->run.steps_from, f->steps_from);
		kv_fmt(t, "events", "%" PRIu64, f->events);
		kv_fmt(t, "chunks", "%" PRIu32, f->chunks);
		kv_fmt(t, "strings", "%" PRIu32, f->strings);
		kv_fmt(t, "dropped", "%" PRIu64, f->dropped);
		unix_time(buf, sizeof(buf), f->finished_unix_ns);
		kv_str(t, "finished", buf);
		param_groups_row(t, &rp->run);
		launch_cost_row(t, &rp->run);
		unrecorded_row(t, &rp->run);
	}
	kv_fmt(t, "read", "%" PRIu32 " chunks, %" PRIu64 " events, %" PRIu32 " strings",
	       rp->chunks_read, rp->events_read, rp->strings_read ? rp->strings_read - 1 : 0);
	kv_str(t, "truncated", rp->truncated ? (rp->truncation ? rp->truncation : "yes") : "no");
}

static void counts_table(struct report *r, const struct replay *rp)
{
	const struct replay_footer *f = &rp->run.footer;
	struct table *t = report_add_table(r, "counts", "Events per kind");

	table_add_column(t, "Kind", COL_STR, 0);
	table_add_column(t, "Footer", COL_INT, 0);
	table_add_column(t, "Read", COL_INT, 0);
	table_add_column(t, "Dropped", COL_INT, 0);
	for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST; k++) {
		if (k == ST_COST && !f->has_count[k] && !rp->counts[k])
			continue;   /* (1.8) a row only where the recorder said what it cost */
		table_row(t);
		table_str(t, st_kind_name(k));
		if (f->has_count[k])
			table_int(t, (int64_t)f->count_events[k]);
		else
			table_empty(t);
		table_int(t, (int64_t)rp->counts[k]);
		if (f->has_count[k])
			table_int(t, (int64_t)replay_dropped(rp, k));
		else
			table_empty(t);
	}
}

int info_run(const struct replay *rp, const struct info_opts *o, struct report *r)
{
	uint64_t footer_events = 0;
	char dropped[512];

	header_table(r, rp, o->wrap);
	footer_table(r, rp, o->wrap);
	counts_table(r, rp);
	if (rp->run.has_footer)
		footer_events = rp->run.footer.events;

	/* loudly: on stderr too, where replay_load warned when it read the bundle */
	if (*replay_dropped_text(rp, dropped, sizeof(dropped)))
		report_note(r, "WARNING: %s", dropped);
	if (rp->truncated)
		report_note(r, "incomplete bundle (%s): everything above covers only the %" PRIu64
			    " events read", rp->truncation ? rp->truncation : "no footer", rp->events_read);
	else if (footer_events != rp->events_read)
		report_note(r, "the footer counts %" PRIu64 " events but %" PRIu64 " were read",
			    footer_events, rp->events_read);
	else
		report_note(r, "complete: %" PRIu64 " events", rp->events_read);
	return 0;
}
