/* comm_stats.c: see comm_stats.h. */
#include "model/comm_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/human.h"
#include "lib/stats.h"

const char *const allreduce_dtype_names[] = { "f32", "bf16", "f16", NULL };
const int allreduce_dtypes[] = { ST_DT_F32, ST_DT_BF16, ST_DT_F16 };

double comm_gbps(uint64_t bytes, double us)
{
	return us > 0 ? (double)bytes / (us * 1e3) : 0;
}

/* ---- all-reduce ------------------------------------------------------------ */

/* A table's columns, declared. */
struct column_def {
	const char *name;
	enum column_type type;
	int precision;
};

static struct table *table_with(struct report *r, const char *name, const char *title,
				const struct column_def *cols, size_t n)
{
	struct table *t = report_add_table(r, name, title);

	for (size_t i = 0; i < n; i++)
		table_add_column(t, cols[i].name, cols[i].type, cols[i].precision);
	return t;
}

struct table *allreduce_table(struct report *r)
{
	static const struct column_def cols[] = {
		{ "size", COL_STR, 0 }, { "bytes", COL_INT, 0 }, { "dtype", COL_STR, 0 },
		{ "ranks", COL_INT, 0 }, { "rank", COL_STR, 0 }, { "iters", COL_INT, 0 },
		{ "mean_us", COL_FLOAT, 1 }, { "min_us", COL_FLOAT, 1 }, { "max_us", COL_FLOAT, 1 },
		{ "std_us", COL_FLOAT, 1 }, { "algbw_gbs", COL_FLOAT, 2 }, { "busbw_gbs", COL_FLOAT, 2 },
		{ "check", COL_STR, 0 },
	};

	return table_with(r, "allreduce", "All-reduce (us per iteration; bandwidths in GB/s, nccl-tests' "
			  "definitions)", cols, sizeof(cols) / sizeof(cols[0]));
}

static void allreduce_row(struct table *t, const struct allreduce_result *res, const char *rank,
			  double *v, const char *check)
{
	struct real_stats s;
	char size[32];

	real_stats_compute(v, (size_t)res->iters, &s);
	table_row(t);
	table_str(t, human_bytes(size, sizeof(size), (double)res->bytes));
	table_int(t, (int64_t)res->bytes);
	table_str(t, st_dtype_name(res->dtype));
	table_int(t, res->ranks);
	table_str(t, rank);
	table_int(t, res->iters);
	table_float(t, s.mean);
	table_float(t, s.min);
	table_float(t, s.max);
	table_float(t, s.stddev);
	table_float(t, comm_gbps(res->bytes, s.mean));
	table_float(t, comm_gbps(res->bytes, s.mean) * st_bus_factor(ST_COLL_ALLREDUCE, res->ranks));
	table_str(t, check);
}

void allreduce_rows(struct table *t, const struct allreduce_result *res)
{
	double *v = calloc((size_t)res->iters + 1, sizeof(*v));
	char name[16], check[64];

	if (!v)
		return;
	if (res->mismatches)
		snprintf(check, sizeof(check), "FAILED: %llu wrong", (unsigned long long)res->mismatches);
	else
		snprintf(check, sizeof(check), "ok");
	for (int r = 0; r < res->ranks; r++) {
		memcpy(v, res->us + (size_t)r * res->iters, (size_t)res->iters * sizeof(*v));
		snprintf(name, sizeof(name), "%d", r);
		allreduce_row(t, res, name, v, check);
	}
	/* each iteration lasts as long as its slowest rank */
	for (int i = 0; i < res->iters; i++) {
		v[i] = 0;
		for (int r = 0; r < res->ranks; r++)
			v[i] = fmax(v[i], res->us[(size_t)r * res->iters + i]);
	}
	allreduce_row(t, res, "all", v, check);
	free(v);
}

/* ---- data parallelism -------------------------------------------------------- */

struct table *ddp_table(struct report *r)
{
	static const struct column_def cols[] = {
		{ "model", COL_STR, 0 }, { "ctx", COL_INT, 0 }, { "precision", COL_STR, 0 },
		{ "ddp", COL_STR, 0 }, { "ranks", COL_INT, 0 }, { "rank", COL_STR, 0 },
		{ "batch", COL_INT, 0 },
		/* enum ddp_phase's order */
		{ "forward_ms", COL_FLOAT, 3 }, { "backward_ms", COL_FLOAT, 3 }, { "comm_ms", COL_FLOAT, 3 },
		{ "exposed_ms", COL_FLOAT, 3 }, { "optimizer_ms", COL_FLOAT, 3 }, { "step_ms", COL_FLOAT, 3 },
		{ "step_std", COL_FLOAT, 3 },
		{ "forward_pct", COL_FLOAT, 1 }, { "backward_pct", COL_FLOAT, 1 }, { "exposed_pct", COL_FLOAT, 1 },
		{ "optimizer_pct", COL_FLOAT, 1 }, { "comm_pct", COL_FLOAT, 1 }, { "hidden_pct", COL_FLOAT, 1 },
		{ "tokens_per_s", COL_FLOAT, 0 }, { "peak_gib", COL_FLOAT, 3 }, { "status", COL_STR, 0 },
	};

	return table_with(r, "ddp", "Data-parallel training step (ms: mean over measured steps; shares of "
			  "the step time)", cols, sizeof(cols) / sizeof(cols[0]));
}

static void lead_cells(struct table *t, const struct model_config *c, int ranks, const char *rank)
{
	char ddp[48];

	if (c->ddp == ST_DDP_BUCKET)
		snprintf(ddp, sizeof(ddp), "bucket %g MB", c->bucket_mb);
	else
		snprintf(ddp, sizeof(ddp), "%s", st_name(st_ddp_names, c->ddp));
	table_row(t);
	table_str(t, c->name);
	table_int(t, c->ctx);
	table_str(t, st_name(st_precision_names, c->precision));
	table_str(t, ddp);
	table_int(t, ranks);
	table_str(t, rank);
	table_int(t, c->batch);
}

static double share(double part, double whole)
{
	return whole > 0 ? 100.0 * part / whole : 0;
}

/* means[DP_COUNT] and the step time's std, as one row */
static void phase_cells(struct table *t, const struct ddp_result *res, const double *mean, double step_std)
{
	double step = mean[DP_STEP];

	for (int p = 0; p < DP_COUNT; p++)
		table_float(t, mean[p]);
	table_float(t, step_std);
	table_float(t, share(mean[DP_FORWARD], step));
	table_float(t, share(mean[DP_BACKWARD], step));
	table_float(t, share(mean[DP_EXPOSED], step));
	table_float(t, share(mean[DP_OPTIMIZER], step));
	table_float(t, share(mean[DP_COMM], step));
	/* after the backward (naive, flat) the wait can outlast the all-reduces: nothing hidden */
	table_float(t, mean[DP_COMM] > 0 ? fmax(0.0, 100.0 * (1.0 - mean[DP_EXPOSED] / mean[DP_COMM])) : 0);
	table_float(t, step > 0 ? (double)res->ranks * res->c->batch * res->c->ctx / (step / 1e3) : 0);
	table_float(t, res->peak_gib);
	table_str(t, "ok");
}

void ddp_rows(struct table *t, const struct ddp_result *res)
{
	double *v = calloc((size_t)res->steps + 1, sizeof(*v));
	double mean[DP_COUNT], all[DP_COUNT] = { 0 };
	struct real_stats s;
	char name[16];

	if (!v)
		return;
	for (int r = 0; r < res->ranks; r++) {
		for (int p = 0; p < DP_COUNT; p++) {
			for (int i = 0; i < res->steps; i++)
				v[i] = res->ms[((size_t)r * res->steps + i) * DP_COUNT + p];
			real_stats_compute(v, (size_t)res->steps, &s);
			mean[p] = s.mean;
			all[p] += s.mean / res->ranks;
		}
		snprintf(name, sizeof(name), "%d", r);
		lead_cells(t, res->c, res->ranks, name);
		real_stats_compute(v, (size_t)res->steps, &s);   /* v holds the step times */
		phase_cells(t, res, mean, s.stddev);
	}
	/* the step of the run: each step as long as its slowest rank's */
	for (int i = 0; i < res->steps; i++) {
		v[i] = 0;
		for (int r = 0; r < res->ranks; r++)
			v[i] = fmax(v[i], res->ms[((size_t)r * res->steps + i) * DP_COUNT + DP_STEP]);
	}
	real_stats_compute(v, (size_t)res->steps, &s);
	all[DP_STEP] = s.mean;
	lead_cells(t, res->c, res->ranks, "all");
	phase_cells(t, res, all, s.stddev);
	free(v);
}

void ddp_failed_row(struct table *t, const struct model_config *c, int ranks, const char *status)
{
	lead_cells(t, c, ranks, "all");
	for (int i = 0; i < DP_COUNT + 1 + 6 + 2; i++)
		table_empty(t);
	table_str(t, status);
}
