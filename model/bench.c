/* bench.c: see bench.h. */
#include "model/bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/stats.h"
#include "model/comm.h"
#include "model/comm_stats.h"
#include "model/model.h"

/* One configuration's outcome. */
struct bench_result {
	int status;                             /* MODEL_OK, MODEL_OOM, MODEL_ERROR */
	struct model_oom oom;
	struct real_stats fwd, bwd, opt, wall, launch;
	double warmup_wall_ms;                  /* mean over warm-up steps, NaN if none */
	uint64_t peak;
};

/* Runs warm-up and measured steps of one configuration. */
static void bench_one(const struct model_config *c, const struct bench_opts *a,
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
	rc = model_init_random(m, c->seed);
	if (rc == MODEL_OK)
		rc = model_random_batch(m, c->seed);
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
	table_add_column(t, "kernels", COL_STR, 0);   /* last: older readers index the others */
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
		table_str(t, st_name(st_kernels_names, c->kernels));
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
	table_str(t, st_name(st_kernels_names, c->kernels));
}

/* Configurations a and b alike but for their kernels (and the attention they imply)? */
static bool same_but_kernels(const struct model_config *a, const struct model_config *b)
{
	return !strcmp(a->name, b->name) && a->d_model == b->d_model && a->d_ff == b->d_ff &&
	       a->layers == b->layers && a->heads == b->heads && a->vocab == b->vocab &&
	       a->batch == b->batch && a->ctx == b->ctx && a->precision == b->precision &&
	       a->mode == b->mode && a->kernels != b->kernels;
}

/*
 * The table "kernels": each plain configuration beside its fused twin,
 * forward and step times and the speed-up (plain / fused step time).
 * Only when the sweep has both.
 */
static void bench_speedups(const struct bench_opts *o, const struct bench_result *res,
			   struct report *rep)
{
	struct table *t = NULL;

	for (size_t i = 0; i < o->n_configs; i++) {
		const struct model_config *p = &o->configs[i];

		if (p->kernels != ST_KERNELS_PLAIN)
			continue;
		for (size_t j = 0; j < o->n_configs; j++) {
			const struct model_config *f = &o->configs[j];
			const struct bench_result *rp = &res[i], *rf = &res[j];

			if (!same_but_kernels(p, f))
				continue;
			if (!t) {
				t = report_add_table(rep, "kernels", "Plain and fused kernels side by side "
						     "(ms: mean over measured steps)");
				table_add_column(t, "model", COL_STR, 0);
				table_add_column(t, "ctx", COL_INT, 0);
				table_add_column(t, "precision", COL_STR, 0);
				table_add_column(t, "mode", COL_STR, 0);
				table_add_column(t, "plain_forward_ms", COL_FLOAT, 3);
				table_add_column(t, "fused_forward_ms", COL_FLOAT, 3);
				table_add_column(t, "plain_step_ms", COL_FLOAT, 3);
				table_add_column(t, "fused_step_ms", COL_FLOAT, 3);
				table_add_column(t, "speedup", COL_FLOAT, 2);
			}
			table_row(t);
			table_str(t, p->name);
			table_int(t, p->ctx);
			table_str(t, st_name(st_precision_names, p->precision));
			table_str(t, st_name(st_mode_names, p->mode));
			if (rp->status != MODEL_OK || rf->status != MODEL_OK) {
				for (int k = 0; k < 5; k++)
					table_empty(t);
				continue;
			}
			table_float(t, rp->fwd.mean);
			table_float(t, rf->fwd.mean);
			table_float(t, rp->wall.mean);
			table_float(t, rf->wall.mean);
			table_float(t, rf->wall.mean > 0 ? rp->wall.mean / rf->wall.mean : 0);
		}
	}
}

/* ---- data parallelism ------------------------------------------------------- */

/* Every rank's int, gathered; the worst (MODEL_ERROR over MODEL_OOM over MODEL_OK) into *out. */
static int agree_status(struct comm *comm, int mine, int *out)
{
	int n = comm_size(comm), *all = calloc((size_t)n, sizeof(*all));

	if (!all)
		return error("out of memory");
	if (comm_allgather_host(comm, &mine, all, sizeof(mine))) {
		free(all);
		return -1;
	}
	*out = MODEL_OK;
	for (int r = 0; r < n; r++)
		if (all[r] == MODEL_ERROR || (all[r] == MODEL_OOM && *out == MODEL_OK))
			*out = all[r];
	free(all);
	return 0;
}

/*
 * One configuration on this rank; rank 0 adds its rows to t. 0, or -1 when
 * the run must end (a step failed here, or the communicator did).
 */
static int ddp_one(const struct model_config *c, const struct bench_opts *a, struct table *t,
		   struct report *rep)
{
	int rank = comm_rank(a->comm), ranks = comm_size(a->comm), rc, agreed = MODEL_ERROR, status = -1;
	size_t per = (size_t)a->steps * DP_COUNT + 1;   /* the steps' phases, then the peak */
	double *mine = calloc(per, sizeof(*mine)), *all = calloc(per * (size_t)ranks, sizeof(*all));
	double *ms = calloc(per * (size_t)ranks, sizeof(*ms));
	struct model_step_times tm;
	struct model_oom oom = { 0 };
	struct model *m = NULL;

	if (!mine || !all || !ms) {
		error("out of memory");
		goto out;
	}
	rc = model_create(&m, c, NULL, &oom);
	if (rc == MODEL_OK && (rc = model_set_comm(m, a->comm)) == MODEL_OK &&
	    (rc = model_init_random(m, c->seed)) == MODEL_OK)
		rc = model_random_batch(m, c->seed + 1 + (uint64_t)rank);
	if (agree_status(a->comm, rc, &agreed))
		goto out;
	if (agreed != MODEL_OK) {
		if (rank == 0) {
			ddp_failed_row(t, c, ranks, agreed == MODEL_OOM ? "OOM" : "error");
			fprintf(stderr, " %s on some rank\n", agreed == MODEL_OOM ? "OOM" : "error");
		}
		if (rc == MODEL_OOM && rank == 0)
			report_note(rep, "%s ctx %d: OOM: %.1f MiB requested by '%s' with %.2f GiB live",
				    c->name, c->ctx, oom.requested / 1048576.0, oom.op, oom.live / 1073741824.0);
		status = agreed == MODEL_OOM ? 0 : -1;
		goto out;
	}
	for (int i = 0; i < a->warmup + a->steps; i++) {
		int k = i - a->warmup;
		double *v = mine + (size_t)(k < 0 ? 0 : k) * DP_COUNT;

		rc = model_step(m, (uint32_t)i, k < 0, &tm);
		if (rc == MODEL_OOM) {
			const struct model_oom *o = model_last_oom(m);
			error("out of memory in step %d at '%s': %.1f MiB requested with %.2f GiB live; "
			      "ending the run", i, o->op, o->requested / 1048576.0, o->live / 1073741824.0);
		}
		if (rc != MODEL_OK)
			goto out;
		if (k < 0)
			continue;
		v[DP_FORWARD] = tm.forward_ms;
		v[DP_BACKWARD] = tm.backward_ms;
		v[DP_COMM] = tm.comm_ms;
		v[DP_EXPOSED] = tm.exposed_ms;
		v[DP_OPTIMIZER] = tm.optimizer_ms;
		v[DP_STEP] = tm.wall_ms;
	}
	mine[per - 1] = model_peak_bytes(m) / 1073741824.0;
	if (comm_allgather_host(a->comm, mine, all, per * sizeof(*mine)))
		goto out;
	if (rank == 0) {
		struct ddp_result res = { c, ranks, a->steps, ms, 0 };

		for (int r = 0; r < ranks; r++) {
			memcpy(ms + (size_t)r * (per - 1), all + (size_t)r * per, (per - 1) * sizeof(*ms));
			if (all[(size_t)r * per + per - 1] > res.peak_gib)
				res.peak_gib = all[(size_t)r * per + per - 1];
		}
		ddp_rows(t, &res);
		fprintf(stderr, " done\n");
	}
	status = 0;
out:
	model_free(m);
	free(mine);
	free(all);
	free(ms);
	return status;
}

static int bench_ddp_run(const struct bench_opts *o, struct report *rep)
{
	int rank = comm_rank(o->comm);
	struct table *t = rank == 0 ? ddp_table(rep) : NULL;

	for (size_t i = 0; i < o->n_configs; i++) {
		const struct model_config *c = &o->configs[i];

		if (rank == 0) {
			fprintf(stderr, "bench: %s ctx %d %s --ddp %s on %d ranks ...", c->name, c->ctx,
				st_name(st_precision_names, c->precision), st_name(st_ddp_names, c->ddp),
				comm_size(o->comm));
			fflush(stderr);
		}
		if (ddp_one(c, o, t, rep))
			return -1;
	}
	if (rank == 0)
		report_note(rep, "%d warm-up and %d measured steps per configuration on %d ranks, batch per "
			    "rank; phases timed with device events: comm is the all-reduces' time on the "
			    "communication stream, exposed the part the step waited for after the backward",
			    o->warmup, o->steps, comm_size(o->comm));
	for (size_t i = 0, said = 0; rank == 0 && i < o->n_configs; i++) {   /* a note per precision */
		const struct model_config *c = &o->configs[i];

		if (!model_config_overlaps(c) || said & 1u << c->precision)
			continue;
		said |= 1u << c->precision;
		report_note(rep, "%s: beside an all-reduce the matrix products target the device's SMs "
			    "less %d (--sm-carveout), NCCL uses at most %d CTAs (--nccl-ctas; 0: its choice)",
			    st_name(st_precision_names, c->precision), c->sm_carveout, c->nccl_ctas);
	}
	return 0;
}

int bench_run(const struct bench_opts *o, struct report *rep)
{
	const char *title = "Training step benchmark (ms: mean and std over measured steps)";
	struct bench_result *res;
	struct table *t;
	int errors = 0;

	if (o->comm)
		return bench_ddp_run(o, rep);
	res = calloc(o->n_configs ? o->n_configs : 1, sizeof(*res));
	if (!res)
		return error("out of memory for the benchmark's results");
	t = report_add_table(rep, "bench", title);
	bench_columns(t);
	for (size_t i = 0; i < o->n_configs; i++) {
		const struct model_config *c = &o->configs[i];
		struct bench_result *r = &res[i];

		fprintf(stderr, "bench: %s ctx %d %s %s %s ...", c->name, c->ctx,
			st_name(st_precision_names, c->precision), st_name(st_mode_names, c->mode),
			st_name(st_kernels_names, c->kernels));
		fflush(stderr);
		bench_one(c, o, r);
		if (r->status == MODEL_OK)
			fprintf(stderr, " %.3f ± %.3f ms/step\n", r->wall.mean, r->wall.stddev);
		else
			fprintf(stderr, " %s\n", r->status == MODEL_OOM ? "OOM" : "error");
		errors += r->status == MODEL_ERROR;
		bench_row(t, rep, c, r);
	}
	bench_speedups(o, res, rep);
	free(res);
	report_note(rep, "%d warm-up and %d measured steps per configuration; phases timed with "
		    "device events, step with the host clock after synchronisation", o->warmup,
		    o->steps);
	const char *tune = getenv("STEPTRACE_GEMM_TUNE");
	if (tune && atoi(tune) > 1)
		report_note(rep, "STEPTRACE_GEMM_TUNE=%s: each matrix product's plan timed up to that "
			    "many of cuBLASLt's algorithms on its first product (a warm-up step) and "
			    "kept the fastest", tune);
	return errors;
}
