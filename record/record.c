/* record.c: see record.h. */
#define _GNU_SOURCE
#include "record/record.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/error.h"
#include "lib/human.h"
#include "lib/output.h"
#include "lib/table.h"
#include "model/comm.h"
#include "model/model.h"
#include "model/ranks.h"
#include "record/device.h"
#include "record/hooks.h"
#include "record/session.h"

char *record_command_line(int argc, const char **argv)
{
	size_t len = sizeof("steptrace");
	char *s, *p;
	int i;

	for (i = 0; i < argc; i++)
		len += 4 * strlen(argv[i]) + 3;
	s = p = malloc(len);
	if (!s)
		return NULL;
	p += sprintf(p, "steptrace");
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		*p++ = ' ';
		if (*a && !a[strcspn(a, " \t\n'\"\\$`*?;&|<>()")]) {
			p += sprintf(p, "%s", a);
			continue;
		}
		*p++ = '\'';
		for (; *a; a++) {
			if (*a == '\'')
				p += sprintf(p, "'\\''");
			else
				*p++ = *a;
		}
		*p++ = '\'';
		*p = '\0';
	}
	return s;
}

static void fill_run_config(Steptrace__RunConfig *rc, const struct model_config *c,
			    const struct record_opts *o)
{
	rc->model = (char *)c->name;
	rc->d_model = (uint32_t)c->d_model;
	rc->d_ff = (uint32_t)c->d_ff;
	rc->layers = (uint32_t)c->layers;
	rc->heads = (uint32_t)c->heads;
	rc->vocab = (uint32_t)c->vocab;
	rc->batch = (uint32_t)c->batch;
	rc->ctx = (uint32_t)c->ctx;
	rc->precision = (char *)st_name(st_precision_names, c->precision);
	rc->mode = (char *)st_name(st_mode_names, c->mode);
	rc->attention = (char *)st_name(st_attention_names, c->attention);
	rc->kernels = (char *)st_name(st_kernels_names, c->kernels);
	rc->warmup_steps = (uint32_t)o->warmup;
	rc->measured_steps = (uint32_t)o->steps;
	rc->parameters = model_config_params(c);
	rc->seed = c->seed;
	rc->lr = c->lr;
	if (c->ddp != ST_DDP_NONE) {
		rc->ddp = (char *)st_name(st_ddp_names, c->ddp);
		rc->bucket_mb = c->ddp == ST_DDP_BUCKET ? c->bucket_mb : 0;
		rc->sm_carveout = (uint32_t)c->sm_carveout;
		rc->nccl_ctas = (uint32_t)c->nccl_ctas;
		rc->allreduce = (char *)model_allreduce_names[c->allreduce];
	}
}

static int64_t unix_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* ---- signals ------------------------------------------------------- */

static volatile sig_atomic_t interrupted;
static struct sigaction old_int, old_term;

static void on_signal(int sig)
{
	interrupted = sig;
}

static void signals_install(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART | SA_RESETHAND;   /* a second signal kills */
	interrupted = 0;
	sigaction(SIGINT, &sa, &old_int);
	sigaction(SIGTERM, &sa, &old_term);
}

static void signals_restore(void)
{
	sigaction(SIGINT, &old_int, NULL);
	sigaction(SIGTERM, &old_term, NULL);
}

/* ---- progress and results ---------------------------------------------- */

struct progress {
	bool tty;
	struct timespec last;
	bool printed;
};

static void progress_step(struct progress *p, uint32_t i, uint32_t warmup, uint32_t total,
			  const struct model_step_times *t)
{
	struct timespec now;
	bool last = i + 1 == total;
	double since;

	clock_gettime(CLOCK_MONOTONIC, &now);
	since = (now.tv_sec - p->last.tv_sec) + (now.tv_nsec - p->last.tv_nsec) * 1e-9;
	if (!p->tty && total > 50 && !last && p->printed && since < 1.0)
		return;
	p->last = now;
	p->printed = true;
	fprintf(stderr, "%srecord: step %u/%u (%s) %.3f ms%s", p->tty ? "\r" : "", i + 1, total,
		i < warmup ? "warm-up" : "measured", t->wall_ms,
		p->tty ? (last ? "\n" : "   ") : "\n");
	fflush(stderr);
}

static void progress_done(struct progress *p, uint32_t done, uint32_t total)
{
	if (p->tty && p->printed && done < total)
		fputc('\n', stderr);
}

static void report_oom(const struct model_oom *oom)
{
	char req[32], live[32], cap[32];

	human_bytes(req, sizeof(req), (double)oom->requested);
	human_bytes(live, sizeof(live), (double)oom->live);
	human_bytes(cap, sizeof(cap), (double)oom->capacity);
	error("out of memory at '%s': requested %s (%s) with %s of %s live",
		 oom->op[0] ? oom->op : "?", req, st_mem_category_name(oom->category), live, cap);
	fprintf(stderr, "hint: the bundle holds the run up to that request; "
		"try a smaller --batch or --ctx, or --precision bf16\n");
}

static void write_stats(const char *path, uint32_t steps_done, uint32_t warmup,
			const struct rec_session *s, const struct capture_totals *t,
			const char *reason)
{
	struct capture_counts c;
	struct output out;
	FILE *f;
	uint32_t i;

	if (output_open(&out, path, NULL) < 0)
		return;
	f = out.f;
	fprintf(f, "# steptrace record stats 1\n");
	for (i = 0; i < steps_done; i++)
		if (capture_counts_of(i, &c) == 0)
			fprintf(f, "step %u warmup %d launches %llu copies %llu\n", i, i < warmup,
				(unsigned long long)c.launches, (unsigned long long)c.copies);
	if (capture_counts_of(-1, &c) == 0)
		fprintf(f, "outside launches %llu copies %llu\n", (unsigned long long)c.launches,
			(unsigned long long)c.copies);
	fprintf(f, "events %llu\n", (unsigned long long)s->events);
	fprintf(f, "dropped %llu\n", (unsigned long long)t->dropped);
	fprintf(f, "unattributed %llu\n", (unsigned long long)t->unattributed);
	fprintf(f, "open_ranges %llu\n", (unsigned long long)t->open_ranges);
	fprintf(f, "end_reason %s\n", reason);
	output_close(&out);
}

static void print_summary(const char *path, const struct rec_session *s, const double *wall,
			  uint32_t done, uint32_t warmup)
{
	struct stat st;
	char size[32];
	double sum = 0;
	uint32_t i, measured = 0;

	for (i = warmup; wall && i < done; i++, measured++)
		sum += wall[i];
	if (measured)
		fprintf(stderr, "record: %u warm-up + %u measured steps, measured step mean %.3f ms\n",
			done < warmup ? done : warmup, measured, sum / measured);
	if (stat(path, &st) == 0) {
		human_bytes(size, sizeof(size), (double)st.st_size);
		fprintf(stderr, "record: %llu events, %s written to '%s', %.1f bytes/event\n",
			(unsigned long long)s->events, size, path,
			s->events ? (double)st.st_size / (double)s->events : 0.0);
	}
}

static void warn_losses(const struct capture_totals *t)
{
	if (t->dropped) {
		warning("*** CUPTI DROPPED %llu ACTIVITY RECORDS: THIS BUNDLE IS MISSING EVENTS ***",
			   (unsigned long long)t->dropped);
		warning("CUPTI does not say of which kind; the footer books them under 'kernel'. "
			   "Record fewer steps or a smaller model");
	}
	if (t->unattributed)
		warning("%llu kernels, memcpys or memsets were launched outside any op",
			   (unsigned long long)t->unattributed);
	if (t->open_ranges || t->unpaired_ends)
		warning("%llu NVTX ranges were still open at the end and %llu ends had no start; "
			   "they are not in the bundle", (unsigned long long)t->open_ranges,
			   (unsigned long long)t->unpaired_ends);
}

/* ---- the run ------------------------------------------------------- */

struct run {
	const struct record_opts *o;
	const struct model_config *c;             /* the model's run */
	const struct attn_bench_opts *attn;       /* or the attention sweep's */
	struct rec_session s;
	struct rec_hooks h;
	struct model *m;
	double *wall;            /* ms per completed step */
	uint32_t done, total;
	const char *reason;
	enum record_outcome status;
	bool quiet;              /* no progress lines (a rank other than 0) */
};

/* Maps a model return code onto the run's outcome; true when the run must stop. */
static bool model_failed(struct run *r, int rc, const struct model_oom *oom)
{
	if (rc == MODEL_OK)
		return false;
	if (rc == MODEL_OOM) {
		report_oom(oom);
		r->reason = "oom";
		r->status = RECORD_OOM;
	} else {
		error("the training step failed; the bundle holds the run up to the failure");
		r->reason = "error";
		r->status = RECORD_ERROR;
	}
	return true;
}

static void run_steps(struct run *r)
{
	struct model_observer obs = rec_hooks_observer(&r->h);
	struct model_oom oom = { 0 };
	struct progress p = { .tty = isatty(STDERR_FILENO) };
	uint32_t warmup = (uint32_t)r->o->warmup, i;

	uint64_t rank = r->o->comm ? (uint64_t)comm_rank(r->o->comm) : 0;
	bool stopped = false;

	clock_gettime(CLOCK_MONOTONIC, &p.last);
	if (model_failed(r, model_create(&r->m, r->c, &obs, &oom), &oom))
		return;
	/* --kernels fused replays a CUDA graph; this diagnostic runs it eagerly */
	model_set_graphs(r->m, !getenv("STEPTRACE_RECORD_EAGER"));
	if ((r->o->comm && model_failed(r, model_set_comm(r->m, r->o->comm), model_last_oom(r->m))) ||
	    model_failed(r, model_init_random(r->m, r->c->seed), model_last_oom(r->m)) ||
	    model_failed(r, model_random_batch(r->m, r->c->seed + 1 + rank), model_last_oom(r->m)))
		return;
	for (i = 0; i < r->total; i++) {
		struct model_step_times t = { 0 };
		int stop = interrupted != 0;

		/* every rank runs step i, or none does: a rank alone in a step would wait forever */
		if (r->o->comm && model_failed(r, model_agree(r->m, &stop), model_last_oom(r->m)))
			break;
		if (stop) {
			stopped = true;
			break;
		}
		if (model_failed(r, model_step(r->m, i, i < warmup, &t), model_last_oom(r->m))) {
			rec_hooks_step_abandoned(&r->h);
			break;
		}
		r->wall[r->done++] = t.wall_ms;
		if (!r->quiet)
			progress_step(&p, i, warmup, r->total, &t);
	}
	progress_done(&p, r->done, r->total);
	if (stopped && r->status == RECORD_OK) {
		fprintf(stderr, "record: interrupted after %u of %u steps; closing the bundle\n",
			r->done, r->total);
		r->reason = "interrupted";
		r->status = RECORD_INTERRUPTED;
	}
}

/*
 * The attention sweep under the recorder: its table on stdout, each
 * iteration a step. An OOM is a row of the sweep, not the end of the run.
 */
static void run_attention(struct run *r)
{
	struct model_observer obs = rec_hooks_observer(&r->h);
	struct attn_bench_opts a = *r->attn;
	struct attn_bench_totals t;
	struct report *rep = report_new();

	a.obs = &obs;
	a.stop = &interrupted;
	if (attn_bench_run(&a, rep, &t) || t.errors) {
		error("the attention sweep failed; the bundle holds the run up to the failure");
		r->reason = "error";
		r->status = RECORD_ERROR;
	}
	if (report_print(rep, OUT_TABLE, stdout) && r->status == RECORD_OK) {
		r->reason = "error";
		r->status = RECORD_ERROR;
	}
	report_free(rep);
	r->done = t.steps;
	if (interrupted && r->status == RECORD_OK) {
		fprintf(stderr, "record: interrupted after %u of %u steps; closing the bundle\n",
			r->done, r->total);
		r->reason = "interrupted";
		r->status = RECORD_INTERRUPTED;
	}
}

/* The header's run configuration of the sweep: what its configurations share, "mixed" where they differ. */
static void fill_attention_config(Steptrace__RunConfig *rc, const struct attn_bench_opts *a)
{
	const struct attn_config *c = a->configs;
	bool one_prec = true, one_impl = true;

	for (size_t i = 1; i < a->n_configs; i++) {
		one_prec &= c[i].precision == c[0].precision;
		one_impl &= c[i].impl == c[0].impl;
		if (c[i].seq > (int)rc->ctx)
			rc->ctx = (uint32_t)c[i].seq;
	}
	rc->model = "attention";
	rc->batch = (uint32_t)c[0].batch;
	rc->heads = (uint32_t)c[0].heads;
	if (c[0].seq > (int)rc->ctx)
		rc->ctx = (uint32_t)c[0].seq;
	rc->precision = (char *)(one_prec ? st_name(st_precision_names, c[0].precision) : "mixed");
	rc->mode = (char *)st_name(st_mode_names, ST_MODE_FWDBWD);
	rc->attention = (char *)(one_impl ? st_name(st_attention_names, c[0].impl) : "mixed");
	rc->warmup_steps = (uint32_t)(a->warmup * a->n_configs);
	rc->measured_steps = (uint32_t)(a->steps * a->n_configs);
	rc->seed = a->seed;
}

static enum record_outcome record_with(struct run *r, Steptrace__RunConfig *rc,
				       void (*body)(struct run *));

enum record_outcome record_run(const struct record_opts *o, const struct model_config *c)
{
	Steptrace__RunConfig rc = STEPTRACE__RUN_CONFIG__INIT;
	struct run r = { .o = o, .c = c, .reason = "ok" };

	fill_run_config(&rc, c, o);
	r.total = (uint32_t)o->warmup + (uint32_t)o->steps;
	return record_with(&r, &rc, run_steps);
}

enum record_outcome record_attention_run(const struct record_opts *o,
					 const struct attn_bench_opts *a)
{
	Steptrace__RunConfig rc = STEPTRACE__RUN_CONFIG__INIT;
	struct run r = { .o = o, .attn = a, .reason = "ok" };

	if (!a->n_configs)
		return RECORD_OK;
	fill_attention_config(&rc, a);
	r.total = (uint32_t)((a->warmup + a->steps) * a->n_configs);
	return record_with(&r, &rc, run_attention);
}

/* Everything around the body: device facts, the bundle, CUPTI, signals, the summary. */
static enum record_outcome record_with(struct run *rp, Steptrace__RunConfig *rc,
				       void (*body)(struct run *))
{
	const struct record_opts *o = rp->o;
	Steptrace__Header hdr = STEPTRACE__HEADER__INIT;
	struct device_facts dev;
	struct capture_totals totals;
	struct run r = *rp;
	const char *stats = getenv("STEPTRACE_RECORD_STATS");
	char host[256] = "";
	bool closed;

	r.wall = calloc(r.total, sizeof(*r.wall));
	if (!r.wall) {
		error("out of memory");
		return RECORD_ERROR;
	}
	/* Before anything can call NVTX: the model's ranges must reach CUPTI (a rank's
	 * command did this before NCCL, which has ranges of its own). */
	if (capture_nvtx_setup() || !model_gpu_available() ||
	    device_facts_read(o->comm ? comm_device(o->comm) : 0, &dev))
		goto fail_early;
	if (!o->calibrate)
		device_datasheet(&dev, "--no-calibrate");
	else if (device_calibrate(&dev))
		device_datasheet(&dev, "calibration failed");

	gethostname(host, sizeof(host) - 1);
	hdr.command_line = (char *)(o->command_line ? o->command_line : "steptrace record");
	hdr.hostname = host;
	hdr.pid = (uint32_t)getpid();
	hdr.config = rc;
	hdr.device = &dev.info;
	hdr.clock = "cupti";
	hdr.api_calls = (char *)capture_api_rule(o->api);
	if (o->comm) {
		hdr.rank = (uint32_t)comm_rank(o->comm);
		hdr.world_size = (uint32_t)comm_size(o->comm);
		hdr.local_rank = o->rank ? (uint32_t)o->rank->local_rank : 0;
		hdr.run_id = comm_run_id(o->comm);
		hdr.nccl_version = (char *)comm_nccl_version();
		r.quiet = hdr.rank != 0;
	}
	/*
	 * Back to back: the pair maps CUPTI's clock to CLOCK_REALTIME (export's
	 * clock snapshot). The ranks of one host share CUPTI's clock, so their
	 * time bases place their events on one time line (replay/ranks.c).
	 */
	hdr.time_base_ns = capture_now();
	hdr.created_unix_ns = unix_ns();
	if (rec_session_open(&r.s, o->output, &hdr))
		goto fail_early;
	fprintf(stderr, "record: writing '%s'; it becomes '%s' when the recording ends "
		"(should the process die first, it is readable up to its last whole chunk)\n",
		bundle_writer_file(r.s.w), o->output);
	rec_hooks_init(&r.h, &r.s);
	r.h.device = dev.info.index;
	if (capture_start(&r.s, r.total, o->api)) {
		rec_session_close(&r.s, "error");
		rec_session_release(&r.s);
		goto fail_early;
	}

	signals_install();
	rank_wait_stop_on(&interrupted);   /* a rank told to stop is not held by a lost peer */
	body(&r);
	/* Freed under the recorder: every allocation in the bundle gets its free. */
	if (r.m)
		model_free(r.m);
	if (capture_stop() && r.status == RECORD_OK) {
		r.reason = "error";
		r.status = RECORD_ERROR;
	}
	rec_hooks_drain(&r.h, true);
	rank_wait_stop_on(NULL);
	signals_restore();

	capture_totals(&totals);
	warn_losses(&totals);
	rec_session_set_steps_from(&r.s, "built-in step");
	closed = rec_session_close(&r.s, r.reason) == 0;
	if (!closed && r.status == RECORD_OK)
		r.status = RECORD_ERROR;
	if (stats)
		write_stats(stats, r.done, r.c ? (uint32_t)o->warmup : 0, &r.s, &totals, r.reason);
	if (closed)
		print_summary(o->output, &r.s, r.c ? r.wall : NULL, r.done, (uint32_t)o->warmup);
	rec_hooks_release(&r.h);
	rec_session_release(&r.s);
	free(r.wall);
	return r.status;

fail_early:
	free(r.wall);
	return RECORD_ERROR;
}
