/*
 * bench.c: `steptrace bench`, the seeds' end-to-end benchmark without
 * CUPTI: sizes x context lengths x precisions x modes, warm-up then measured
 * steps, mean ± std of each phase (device events) and of the step's wall
 * time, peak device memory, and OOM where a configuration does not fit.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "lib/error.h"
#include "lib/options.h"
#include "lib/stats.h"
#include "lib/table.h"
#include "model/config.h"
#include "model/model.h"

#define BENCH_MAX_LIST 16

static const char *const bench_usage[] = {
	"steptrace bench [--model LIST] [--ctx LIST] [--precision LIST] [--mode LIST] [<options>]",
	NULL,
};

/* One configuration's outcome. */
struct bench_result {
	int status;                             /* MODEL_OK, MODEL_OOM, MODEL_ERROR */
	struct model_oom oom;
	struct real_stats fwd, bwd, opt, wall, launch;
	double warmup_wall_ms;                  /* mean over warm-up steps, NaN if none */
	uint64_t peak;
};

struct bench_args {
	const char *models, *ctxs, *precisions, *modes, *attention;
	struct model_dims dims;
	int warmup, steps;
	uint64_t seed;
};

/* Runs warm-up and measured steps of one configuration. */
static void bench_one(const struct model_config *c, const struct bench_args *a,
		      struct bench_result *r)
{
	double *v = calloc(5 * (size_t)a->steps, sizeof(double));
	double *fwd = v, *bwd = v + a->steps, *opt = v + 2 * a->steps, *wall = v + 3 * a->steps;
	double *launch = v + 4 * a->steps;
	struct model_step_times t;
	struct model *m = NULL;
	double warm_total = 0;
	int i, rc;

	memset(r, 0, sizeof(*r));
	r->warmup_wall_ms = NAN;
	if (!v) {
		r->status = error("out of memory");
		return;
	}
	rc = model_create(&m, c, NULL, &r->oom);
	if (rc != MODEL_OK) {
		r->status = rc == MODEL_OOM ? MODEL_OOM : MODEL_ERROR;
		goto done;
	}
	rc = model_init_random(m, a->seed);
	if (rc == MODEL_OK)
		rc = model_random_batch(m, a->seed);
	for (i = 0; rc == MODEL_OK && i < a->warmup + a->steps; i++) {
		int k = i - a->warmup;

		rc = model_step(m, (uint32_t)i, k < 0, &t);
		if (rc != MODEL_OK)
			break;
		if (k < 0) {
			warm_total += t.wall_ms;
			continue;
		}
		fwd[k] = t.forward_ms;
		bwd[k] = t.backward_ms;
		opt[k] = t.optimizer_ms;
		wall[k] = t.wall_ms;
		launch[k] = t.launch_ms;
	}
	if (rc == MODEL_OOM)
		r->oom = *model_last_oom(m);
	r->status = rc == MODEL_OK ? MODEL_OK : rc == MODEL_OOM ? MODEL_OOM : MODEL_ERROR;
	r->peak = model_peak_bytes(m);
	if (rc == MODEL_OK) {
		real_stats_compute(fwd, (size_t)a->steps, &r->fwd);
		real_stats_compute(bwd, (size_t)a->steps, &r->bwd);
		real_stats_compute(opt, (size_t)a->steps, &r->opt);
		real_stats_compute(wall, (size_t)a->steps, &r->wall);
		real_stats_compute(launch, (size_t)a->steps, &r->launch);
		if (a->warmup)
			r->warmup_wall_ms = warm_total / a->warmup;
	}
	model_free(m);
done:
	free(v);
}

static void bench_columns(struct table *t)
{
	static const char *const floats[] = {
		"forward_ms", "forward_std", "backward_ms", "backward_std", "optimizer_ms",
		"optimizer_std", "step_ms", "step_std", "step_median_ms", "launch_ms",
		"warmup_step_ms", "tokens_per_s", "peak_gib",
	};
	size_t i;

	table_add_column(t, "model", COL_STR, 0);
	table_add_column(t, "params", COL_INT, 0);
	table_add_column(t, "ctx", COL_INT, 0);
	table_add_column(t, "precision", COL_STR, 0);
	table_add_column(t, "mode", COL_STR, 0);
	for (i = 0; i < sizeof(floats) / sizeof(floats[0]); i++)
		table_add_column(t, floats[i], COL_FLOAT,
				 !strcmp(floats[i], "tokens_per_s") ? 0 : 3);
	table_add_column(t, "status", COL_STR, 0);
}

/* mean and std of a phase, or two empty cells when the mode lacks it. */
static void stats_cells(struct table *t, const struct real_stats *s, int present)
{
	if (!present) {
		table_empty(t);
		table_empty(t);
		return;
	}
	table_float(t, s->mean);
	table_float(t, s->stddev);
}

static void bench_row(struct table *t, struct report *rep, const struct model_config *c,
		      const struct bench_result *r)
{
	int i;

	table_row(t);
	table_str(t, c->name);
	table_int(t, (int64_t)model_config_params(c));
	table_int(t, c->ctx);
	table_str(t, st_name(st_precision_names, c->precision));
	table_str(t, st_name(st_mode_names, c->mode));
	if (r->status != MODEL_OK) {
		for (i = 0; i < 13; i++)
			table_empty(t);
		table_str(t, r->status == MODEL_OOM ? "OOM" : "error");
		if (r->status == MODEL_OOM)
			report_note(rep, "%s ctx %d %s %s: OOM: %.1f MiB requested by '%s' with "
				    "%.2f GiB live of %.2f GiB", c->name, c->ctx,
				    st_name(st_precision_names, c->precision), st_name(st_mode_names, c->mode),
				    r->oom.requested / 1048576.0, r->oom.op, r->oom.live / 1073741824.0,
				    r->oom.capacity / 1073741824.0);
		return;
	}
	stats_cells(t, &r->fwd, 1);
	stats_cells(t, &r->bwd, c->mode != ST_MODE_FORWARD);
	stats_cells(t, &r->opt, c->mode == ST_MODE_TRAIN);
	stats_cells(t, &r->wall, 1);
	table_float(t, r->wall.median);
	table_float(t, r->launch.mean);
	if (isnan(r->warmup_wall_ms))
		table_empty(t);
	else
		table_float(t, r->warmup_wall_ms);
	table_float(t, r->wall.mean > 0 ? (double)c->batch * c->ctx / (r->wall.mean / 1e3) : 0);
	table_float(t, r->peak / 1073741824.0);
	table_str(t, "ok");
}

static int ctx_parse(const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v <= 0 || v > (1 << 24))
		return error("bad context length '%s'", s);
	*out = (int)v;
	return 0;
}

static int bench_sweep(const struct bench_args *a, enum out_format fmt)
{
	const char *models[BENCH_MAX_LIST], *ctxs[BENCH_MAX_LIST], *precs[BENCH_MAX_LIST];
	const char *modes[BENCH_MAX_LIST];
	char *s_models = NULL, *s_ctxs = NULL, *s_precs = NULL, *s_modes = NULL;
	int n_models, n_ctxs, n_precs, n_modes, im, ic, ip, io, ret = 1, errors = 0;
	int ctx_val[BENCH_MAX_LIST];
	int prec_val[BENCH_MAX_LIST], mode_val[BENCH_MAX_LIST], attn = ST_ATTN_NAIVE;
	struct report *rep = NULL;
	struct table *t;

	n_models = split_list(a->models ? a->models : a->dims.d_model > 0 ? "custom" : "small",
			      models, BENCH_MAX_LIST, &s_models);
	n_ctxs = split_list(a->ctxs ? a->ctxs : "128", ctxs, BENCH_MAX_LIST, &s_ctxs);
	n_precs = split_list(a->precisions ? a->precisions : "fp32", precs, BENCH_MAX_LIST, &s_precs);
	n_modes = split_list(a->modes ? a->modes : "train", modes, BENCH_MAX_LIST, &s_modes);
	if (n_models < 0 || n_ctxs < 0 || n_precs < 0 || n_modes < 0)
		goto free_lists;
	for (ic = 0; ic < n_ctxs; ic++)
		if (ctx_parse(ctxs[ic], &ctx_val[ic]))
			goto free_lists;
	for (ip = 0; ip < n_precs; ip++)
		if (parse_choice(precs[ip], st_precision_names, "--precision", &prec_val[ip]))
			goto free_lists;
	for (io = 0; io < n_modes; io++)
		if (parse_choice(modes[io], st_mode_names, "--mode", &mode_val[io]))
			goto free_lists;
	if (a->attention && parse_choice(a->attention, st_attention_names, "--attention", &attn))
		goto free_lists;
	for (im = 0; im < n_models; im++) {
		struct model_config c;

		if (model_config_resolve(models[im], &a->dims, &c))
			goto free_lists;
	}
	if (!model_gpu_available())
		goto free_lists;

	rep = report_new();
	t = report_add_table(rep, "bench", "Training step benchmark (ms: mean and std over measured steps)");
	bench_columns(t);
	for (im = 0; im < n_models; im++)
		for (ic = 0; ic < n_ctxs; ic++)
			for (ip = 0; ip < n_precs; ip++)
				for (io = 0; io < n_modes; io++) {
					struct model_config c;
					struct bench_result r;

					model_config_resolve(models[im], &a->dims, &c);
					c.ctx = ctx_val[ic];
					c.precision = prec_val[ip];
					c.mode = mode_val[io];
					c.attention = attn;
					c.seed = a->seed;
					fprintf(stderr, "bench: %s ctx %d %s %s ...", c.name, c.ctx,
						st_name(st_precision_names, c.precision), st_name(st_mode_names, c.mode));
					fflush(stderr);
					bench_one(&c, a, &r);
					if (r.status == MODEL_OK)
						fprintf(stderr, " %.3f ± %.3f ms/step\n", r.wall.mean,
							r.wall.stddev);
					else
						fprintf(stderr, " %s\n", r.status == MODEL_OOM ? "OOM" : "error");
					errors += r.status == MODEL_ERROR;
					bench_row(t, rep, &c, &r);
				}
	report_note(rep, "%d warm-up and %d measured steps per configuration; phases timed with "
		    "device events, step with the host clock after synchronisation", a->warmup,
		    a->steps);
	if (report_print(rep, fmt, stdout) == 0 && !errors)
		ret = 0;
free_lists:
	report_free(rep);
	free(s_models);
	free(s_ctxs);
	free(s_precs);
	free(s_modes);
	return ret;
}

int cmd_bench(int argc, const char **argv)
{
	struct bench_args a = { .warmup = 5, .steps = 10 };
	int fmt = OUT_TABLE;
	const struct option opts[] = {
		OPT_GROUP("sweep (comma-separated lists)"),
		OPT_STRING(0, "model", &a.models, "LIST", "small, medium, large, xl, 2.7B, custom (default small)"),
		OPT_STRING(0, "ctx", &a.ctxs, "LIST", "context lengths (default 128)"),
		OPT_STRING(0, "precision", &a.precisions, "LIST", "fp32, tf32, bf16 (default fp32)"),
		OPT_STRING(0, "mode", &a.modes, "LIST", "forward, fwdbwd, train (default train)"),
		OPT_STRING(0, "attention", &a.attention, "IMPL", "naive or flash (default naive)"),
		OPT_GROUP("sizes (custom model, or overrides of a preset)"),
		OPT_MODEL_DIMS(&a.dims),
		OPT_GROUP("measurement"),
		OPT_INTEGER('w', "warmup", &a.warmup, "warm-up steps, not measured (default 5)"),
		OPT_INTEGER('n', "steps", &a.steps, "measured steps (default 10)"),
		OPT_U64(0, "seed", &a.seed, "seed of the random weights and batch (default 0)"),
		OPT_FORMAT(&fmt),
		OPT_END(),
	};

	argc = parse_options(argc, argv, opts, bench_usage);
	if (argc < 0)
		return argc == PARSE_OPT_HELP ? 0 : 129;
	if (argc > 0) {
		error("unexpected argument '%s'", argv[0]);
		usage_with_options(bench_usage, opts, false);
		return 129;
	}
	if (a.warmup < 0 || a.steps < 1) {
		error("need --warmup >= 0 and --steps >= 1");
		return 129;
	}
	return bench_sweep(&a, (enum out_format)fmt);
}
