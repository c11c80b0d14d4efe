/*
 * run.c: the run's facts (struct replay_run) from the bundle's header and
 * footer messages, so that no report reads a generated protobuf type. The
 * strings point into the messages, which the reader keeps as long as the
 * replay lives, or, for one that is not valid UTF-8, to its repaired copy.
 */
#include "replay/internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/human.h"
#include "lib/stats.h"

static const char *str(struct replay *rp, const char *s)
{
	return replay_utf8(rp, s ? s : "");
}

static void config_fill(struct replay *rp, struct replay_config *c, const Steptrace__RunConfig *m)
{
	c->model = str(rp, m->model);
	c->d_model = m->d_model;
	c->d_ff = m->d_ff;
	c->layers = m->layers;
	c->heads = m->heads;
	c->vocab = m->vocab;
	c->batch = m->batch;
	c->ctx = m->ctx;
	c->precision_name = str(rp, m->precision);
	c->mode_name = str(rp, m->mode);
	c->attention_name = str(rp, m->attention);
	c->kernels_name = str(rp, m->kernels);
	c->precision = st_lookup(st_precision_names, c->precision_name);
	c->mode = st_lookup(st_mode_names, c->mode_name);
	c->attention = st_lookup(st_attention_names, c->attention_name);
	/* before 1.4 every step was plain */
	c->kernels = *c->kernels_name ? st_lookup(st_kernels_names, c->kernels_name)
				      : ST_KERNELS_PLAIN;
	c->warmup_steps = m->warmup_steps;
	c->measured_steps = m->measured_steps;
	c->parameters = m->parameters;
	c->seed = m->seed;
	c->lr = m->lr;
	c->ddp_name = str(rp, m->ddp);
	c->ddp = *c->ddp_name ? st_lookup(st_ddp_names, c->ddp_name) : ST_DDP_NONE;
	c->bucket_mb = m->bucket_mb;
	c->sm_carveout = m->sm_carveout;
	c->nccl_ctas = m->nccl_ctas;
	c->allreduce = str(rp, m->allreduce);
}

static void device_fill(struct replay *rp, struct replay_device *d, const Steptrace__DeviceInfo *m)
{
	d->name = str(rp, m->name);
	d->index = m->index;
	d->sm_count = m->sm_count;
	d->cc_major = m->cc_major;
	d->cc_minor = m->cc_minor;
	d->memory_bytes = m->memory_bytes;
	d->l2_bytes = m->l2_bytes;
	d->sm_clock_khz = m->sm_clock_khz;
	d->mem_clock_khz = m->mem_clock_khz;
	d->mem_bus_bits = m->mem_bus_bits;
	d->peak_fp32_flops = m->peak_fp32_flops;
	d->peak_tf32_flops = m->peak_tf32_flops;
	d->peak_bf16_flops = m->peak_bf16_flops;
	d->peak_fp16_flops = m->peak_fp16_flops;
	d->peak_bandwidth = m->peak_bandwidth;
	d->peak_source = m->peak_source == STEPTRACE__PEAK_SOURCE__PEAK_MEASURED    ? ST_PEAK_MEASURED
			 : m->peak_source == STEPTRACE__PEAK_SOURCE__PEAK_DATASHEET ? ST_PEAK_DATASHEET
										    : ST_PEAK_UNKNOWN;
	d->peak_note = str(rp, m->peak_note);
	d->cuda_runtime_version = m->cuda_runtime_version;
	d->cuda_driver_version = m->cuda_driver_version;
	d->cupti_version = m->cupti_version;
	d->cublas_version = m->cublas_version;
	d->driver_version = str(rp, m->driver_version);
}

static void footer_fill(struct replay *rp, struct replay_footer *f, const Steptrace__Footer *m)
{
	f->complete = m->complete;
	f->end_reason = str(rp, m->end_reason);
	f->steps_from = str(rp, m->steps_from);
	f->events = m->events;
	f->dropped = m->dropped;
	f->chunks = m->chunks;
	f->strings = m->strings;
	f->finished_unix_ns = m->finished_unix_ns;
	for (size_t i = 0; i < m->n_counts; i++) {
		const Steptrace__KindCount *c = m->counts[i];
		int k = c && c->kind ? st_kind_from_name(c->kind) : -1;

		if (k < 0 || f->has_count[k])
			continue;      /* the first count of a kind is the one that counts */
		f->has_count[k] = true;
		f->count_events[k] = c->events;
		f->count_dropped[k] = c->dropped;
	}
}

/* The footer's parameter groups (1.8), copied into the replay's keeping. */
static void param_groups_fill(struct replay *rp, const Steptrace__Footer *f)
{
	struct replay_priv *pv = rp->priv;
	size_t n = f->n_param_groups < ST_PARAM_GROUPS_MAX ? f->n_param_groups : ST_PARAM_GROUPS_MAX;
	struct st_param_group *g = n ? calloc(n, sizeof(*g)) : NULL;

	if (!g)
		return;   /* none, or out of memory: the run then has none */
	for (size_t i = 0; i < n; i++) {
		const Steptrace__ParamGroup *m = f->param_groups[i];

		if (!m)
			continue;
		g[i].tensors = m->tensors;
		g[i].elements = m->elements;
		g[i].bytes = m->bytes;
		g[i].dtype = (int)m->dtype >= 0 && (int)m->dtype <= ST_DT_U8 ? (uint32_t)m->dtype : ST_DT_UNKNOWN;
	}
	free(pv->param_groups);
	pv->param_groups = g;
	rp->run.param_groups = g;
	rp->run.n_param_groups = n;
}

/* (1.9) Header.import_missing's lines joined with '\n' into one pooled string. */
static void import_missing_fill(struct replay *rp, struct replay_run *run, const Steptrace__Header *h)
{
	size_t len = 1;
	char *buf, *p;

	for (size_t i = 0; i < h->n_import_missing; i++)
		len += strlen(h->import_missing[i] ? h->import_missing[i] : "") + 1;
	if (!h->n_import_missing || !(buf = malloc(len)))
		return;
	p = buf;
	for (size_t i = 0; i < h->n_import_missing; i++) {
		const char *m = h->import_missing[i] ? h->import_missing[i] : "";

		p += sprintf(p, "%s%s", i ? "\n" : "", m);
	}
	run->import_missing = str(rp, replay_arena_strdup(rp, buf, strlen(buf) + 1));
	free(buf);
}

void replay_run_fill(struct replay *rp, const Steptrace__Header *h, const Steptrace__Footer *f)
{
	struct replay_run *run = &rp->run;

	memset(run, 0, sizeof(*run));
	run->tool_version = run->command_line = run->hostname = run->clock = run->api_calls = "";
	run->config.model = run->config.precision_name = run->config.mode_name = "";
	run->config.attention_name = run->config.ddp_name = run->config.kernels_name = "";
	run->nccl_version = run->imported_from = run->import_missing = "";
	run->config.precision = run->config.mode = run->config.attention = -1;
	run->config.kernels = -1;
	run->device.name = run->device.peak_note = run->device.driver_version = "";
	run->footer.end_reason = run->footer.steps_from = "";
	if (h) {
		run->has_header = true;
		run->format_major = h->format_major;
		run->format_minor = h->format_minor;
		run->tool_version = str(rp, h->tool_version);
		run->command_line = str(rp, h->command_line);
		run->hostname = str(rp, h->hostname);
		run->created_unix_ns = h->created_unix_ns;
		run->clock = str(rp, h->clock);
		run->time_base_ns = h->time_base_ns;
		run->api_calls = str(rp, h->api_calls);
		run->pid = h->pid;
		run->rank = h->rank;
		run->world_size = h->world_size;
		run->local_rank = h->local_rank;
		run->run_id = h->run_id;
		run->nccl_version = str(rp, h->nccl_version);
		run->imported_from = str(rp, h->imported_from);
		import_missing_fill(rp, run, h);
		if (h->config) {
			run->has_config = true;
			config_fill(rp, &run->config, h->config);
		}
		if (h->device) {
			run->has_device = true;
			device_fill(rp, &run->device, h->device);
		}
	}
	if (f) {
		run->has_footer = true;
		footer_fill(rp, &run->footer, f);
		param_groups_fill(rp, f);
		if (f->launch_cost) {
			run->launch_cost.launches = f->launch_cost->launches;
			run->launch_cost.rounds = f->launch_cost->rounds;
			run->launch_cost.traced_ns = f->launch_cost->traced_ns;
			run->launch_cost.untraced_ns = f->launch_cost->untraced_ns;
		}
		/* the last ST_UNRECORDED_STEPS_MAX, each a wall time of at most an hour */
		for (size_t i = f->n_unrecorded_step_ns > ST_UNRECORDED_STEPS_MAX ?
				 f->n_unrecorded_step_ns - ST_UNRECORDED_STEPS_MAX : 0;
		     i < f->n_unrecorded_step_ns; i++)
			if (f->unrecorded_step_ns[i] && f->unrecorded_step_ns[i] <= 3600ull * 1000000000ull)
				run->unrecorded_step_ns[run->n_unrecorded_steps++] = f->unrecorded_step_ns[i];
		if (f->unrecorded_span_ns && f->unrecorded_span_ns <= 365ull * 86400 * 1000000000ull &&
		    f->unrecorded_recorder_ns / REPLAY_ARMED_THREADS_MAX <= f->unrecorded_span_ns) {
			run->armed_recorder_ns = f->unrecorded_recorder_ns;
			run->armed_span_ns = f->unrecorded_span_ns;
		}
	}
	run->steps_from = run->footer.steps_from;   /* replay_build may find its own */
}

double replay_launch_cost_ns(const struct replay_run *run)
{
	const struct st_launch_cost *c = &run->launch_cost;
	double per;

	if (!c->launches || c->traced_ns <= c->untraced_ns)
		return 0;
	per = (double)(c->traced_ns - c->untraced_ns) / (double)c->launches;
	return per <= REPLAY_LAUNCH_COST_MAX_NS ? per : 0;
}

uint64_t replay_parameters(const struct replay_run *run)
{
	uint64_t n = 0;

	if (run->has_config && run->config.parameters)
		return run->config.parameters;
	for (size_t k = 0; k < run->n_param_groups; k++)
		n = run->param_groups[k].elements > UINT64_MAX - n ? UINT64_MAX : n + run->param_groups[k].elements;
	return n;
}

bool replay_unrecorded_steps(const struct replay_run *run, struct dur_stats *st)
{
	uint64_t v[ST_UNRECORDED_STEPS_MAX];
	size_t k = run->n_unrecorded_steps;

	memcpy(v, run->unrecorded_step_ns, k * sizeof(*v));
	dur_stats_compute(v, k, st);
	return k >= REPLAY_UNRECORDED_MIN;
}

uint64_t replay_dropped(const struct replay *rp, int kind)
{
	const struct replay_footer *f = &rp->run.footer;
	uint64_t sum = 0;

	/* zero without a footer (replay_run_fill) */
	if (kind >= ST_KIND_FIRST && kind <= ST_KIND_LAST)
		return f->has_count[kind] ? f->count_dropped[kind] : 0;
	for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST; k++)
		sum += f->has_count[k] ? f->count_dropped[k] : 0;
	return f->dropped > sum ? f->dropped : sum;
}

/* snprintf at buf + *at, never past len; *at moves on. */
static void appendf(char *buf, size_t len, size_t *at, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void appendf(char *buf, size_t len, size_t *at, const char *fmt, ...)
{
	va_list ap;

	if (*at >= len)
		return;
	va_start(ap, fmt);
	*at += (size_t)vsnprintf(buf + *at, len - *at, fmt, ap);
	va_end(ap);
}

/*
 * The kinds with drops, "kernel", "kernel and range", "kernel, memcpy and
 * range", each after its count with `counts`; the records of no kind the
 * footer names, when it counts more than its kinds, last as "other".
 */
static void kinds_list(const struct replay *rp, char *buf, size_t len, bool counts)
{
	uint64_t v[ST_KIND_COUNT + 1] = { 0 }, all = replay_dropped(rp, -1), kinds = 0;
	const char *name[ST_KIND_COUNT + 1];
	size_t at = 0, n = 0, shown = 0;
	char num[32];

	for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST; k++) {
		v[n] = replay_dropped(rp, k);
		name[n] = st_kind_name(k);
		kinds += v[n];
		n += v[n] > 0;
	}
	if (all > kinds && (kinds || counts)) {
		v[n] = all - kinds;
		name[n++] = kinds ? "other" : "";
	}
	buf[0] = '\0';
	for (size_t i = 0; i < n; i++, shown++) {
		appendf(buf, len, &at, "%s", shown == 0 ? "" : shown + 1 == n ? " and " : ", ");
		if (counts)
			appendf(buf, len, &at, "%s%s", human_count(num, sizeof(num), v[i]), *name[i] ? " " : "");
		appendf(buf, len, &at, "%s", name[i]);
	}
}

const char *replay_dropped_text(const struct replay *rp, char *buf, size_t len)
{
	uint64_t all = replay_dropped(rp, -1);
	char counts[320], names[160];
	size_t at = 0;

	if (len)
		buf[0] = '\0';
	if (!all || !len)
		return buf;
	kinds_list(rp, counts, sizeof(counts), true);
	kinds_list(rp, names, sizeof(names), false);
	appendf(buf, len, &at, "%s record%s dropped while recording", counts, all == 1 ? " was" : "s were");
	if (replay_dropped(rp, ST_KERNEL))
		appendf(buf, len, &at, " (CUPTI's buffers were full; it does not say of which kind: copies "
			"and memsets may be among them)");
	appendf(buf, len, &at, ": %s%stotals undercount", names, *names ? " " : "");
	return buf;
}
