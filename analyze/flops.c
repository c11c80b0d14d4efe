/*
 * flops.c: FLOPs and bytes against GPU time per op or op kind, with the
 * roofline bound of each (the rule is in flops.h); the chart is
 * render/roofline_svg.c's, the command (and its --svg) cmd/flops.c.
 */
#include "analyze/flops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/category.h"
#include "lib/error.h"
#include "replay/nccl.h"

const char *const flops_by_names[] = { "kind", "op", NULL };

const char *flops_precision_name(enum flops_precision p)
{
	static const char *const names[FP_COUNT] = { "fp32", "tf32", "bf16", "fp16" };

	return p >= 0 && p < FP_COUNT ? names[p] : "";
}

const char *flops_bound_name(enum flops_bound b)
{
	static const char *const names[] = { "", "compute", "memory", "mixed" };

	return (unsigned)b <= BOUND_MIXED ? names[b] : "";
}

/* ---- derived columns ------------------------------------------------ */

double flops_row_tflops(const struct flops_row *r)
{
	return r->flops > 0 && r->time_ns > 0 ? r->flops / r->time_ns / 1e3 : NAN;
}

double flops_row_gbs(const struct flops_row *r)
{
	return r->bytes > 0 && r->time_ns > 0 ? r->bytes / r->time_ns : NAN;
}

double flops_row_intensity(const struct flops_row *r)
{
	return r->flops > 0 && r->bytes > 0 ? r->flops / r->bytes : NAN;
}

double flops_row_bound_tflops(const struct flops_row *r)
{
	return r->flops > 0 && r->roof_ns > 0 ? r->flops / r->roof_ns / 1e3 : NAN;
}

double flops_row_percent(const struct flops_row *r)
{
	return r->roof_ns > 0 && r->time_ns > 0 ? 100.0 * r->roof_ns / r->time_ns : NAN;
}

/* ---- the rule -------------------------------------------------------- */

static void peaks_from_header(const struct replay *rp, struct flops_peaks *pk)
{
	const struct replay_device *d = &rp->run.device;

	memset(pk, 0, sizeof(*pk));
	pk->source = "unknown";
	if (!rp->run.has_device)
		return;
	pk->flops[FP_FP32] = d->peak_fp32_flops > 0 ? d->peak_fp32_flops : 0;
	pk->flops[FP_TF32] = d->peak_tf32_flops > 0 ? d->peak_tf32_flops : 0;
	pk->flops[FP_BF16] = d->peak_bf16_flops > 0 ? d->peak_bf16_flops : 0;
	pk->flops[FP_FP16] = d->peak_fp16_flops > 0 ? d->peak_fp16_flops : 0;
	pk->bandwidth = d->peak_bandwidth > 0 ? d->peak_bandwidth : 0;
	pk->source = st_name(st_peak_source_names, d->peak_source);
}

/* The run's enum st_precision, -1 when the header names none. */
static int run_precision(const struct replay *rp)
{
	return rp->run.has_config ? rp->run.config.precision : -1;
}

/* Matrix products, fused attention (FlashAttention's FLOPs are its products) included. */
static bool op_is_matmul(const struct replay *rp, const struct replay_op *op)
{
	enum kernel_category c = category_from_op(replay_str(rp, op->kind), replay_str(rp, op->phase));

	return c == CAT_GEMM || c == CAT_ATTENTION;
}

static enum flops_precision op_precision(const struct replay *rp, const struct replay_op *op, bool matmul)
{
	bool tf32 = run_precision(rp) == ST_TF32;

	if (!matmul)
		return FP_FP32;
	for (int i = 0; i < op->n_inputs; i++) {
		if (op->inputs[i] == ST_DT_BF16)
			return FP_BF16;
		if (op->inputs[i] == ST_DT_F16)
			return FP_FP16;
	}
	for (int i = 0; i < op->n_inputs; i++)
		if (op->inputs[i] == ST_DT_F32)
			return tf32 ? FP_TF32 : FP_FP32;
	if (run_precision(rp) == ST_BF16)
		return FP_BF16;
	return tf32 ? FP_TF32 : FP_FP32;
}

/* One execution's roofline time in ns, -1 when a needed peak is unknown. */
static double roofline_ns(const struct flops_peaks *pk, enum flops_precision p, uint64_t flops,
			  uint64_t bytes, enum flops_bound *bound)
{
	double tc = 0, tm = 0;

	if (flops && pk->flops[p] <= 0)
		return -1;
	if (bytes && pk->bandwidth <= 0)
		return -1;
	if (flops)
		tc = (double)flops / pk->flops[p] * 1e9;
	if (bytes)
		tm = (double)bytes / pk->bandwidth * 1e9;
	*bound = tc >= tm ? BOUND_COMPUTE : BOUND_MEMORY;
	return tc >= tm ? tc : tm;
}

/* ---- accumulation ---------------------------------------------------- */

struct op_acc {
	uint64_t time, kernels, execs;
	int64_t last_step;
	int32_t group;
};

/* The enum st_phase an op names, -1 when none */
static int op_phase(const struct replay *rp, const struct replay_op *op)
{
	return st_phase_from_name(replay_str(rp, op->phase));
}

static int group_of(struct flops_result *res, size_t *cap, const struct replay *rp,
		    const struct replay_op *op, int by, uint64_t *keys)
{
	uint32_t kind = op->kind ? op->kind : op->path;
	uint64_t key = by == FLOPS_BY_OP ? (uint64_t)(op - rp->ops) : (uint64_t)op->phase << 32 | kind;
	char buf[512];

	if (by == FLOPS_BY_KIND)
		for (size_t g = 0; g < res->n_rows; g++)
			if (keys[g] == key)
				return (int)g;
	if (res->n_rows == *cap)
		return -2;
	struct flops_row *row = &res->rows[res->n_rows];
	memset(row, 0, sizeof(*row));
	row->precision = FP_NONE;
	if (by == FLOPS_BY_OP) {
		row->op = op;
		row->name = strdup(*replay_str(rp, op->path) ? replay_str(rp, op->path) : replay_str(rp, op->name));
	} else {
		const char *phase = replay_str(rp, op->phase);
		snprintf(buf, sizeof(buf), "%s%s%s", phase, *phase ? "/" : "", replay_str(rp, kind));
		row->name = strdup(buf);
	}
	if (!row->name)
		return -1;
	keys[res->n_rows] = key;
	return (int)res->n_rows++;
}

/* Whether two lists of dtypes are the same, in order. */
static bool same_dtypes(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
	return na == nb && !memcmp(a, b, na * sizeof(*a));
}

static void row_add_op(struct flops_row *row, const struct replay *rp, const struct replay_op *op,
		       const struct op_acc *acc, const struct flops_peaks *pk)
{
	bool matmul = op_is_matmul(rp, op);
	enum flops_precision p = op_precision(rp, op, matmul);
	enum flops_bound b = BOUND_UNKNOWN;
	double roof = roofline_ns(pk, p, op->flops, op->bytes, &b);

	int ph = op_phase(rp, op);

	if (row->instances == 0) {
		row->precision = p;
		row->bound = b;
		row->phase = ph;
		row->dtypes_op = op;
	} else {
		row->inputs_mixed |= !same_dtypes(row->dtypes_op->inputs, row->dtypes_op->n_inputs, op->inputs,
						  op->n_inputs);
		row->outputs_mixed |= !same_dtypes(row->dtypes_op->outputs, row->dtypes_op->n_outputs, op->outputs,
						   op->n_outputs);
		if (row->phase != ph)
			row->phase = -1;
		if (row->precision != (int)p) {
			row->mixed_precision = true;
			row->precision = FP_NONE;
		}
		if (row->bound != b)
			row->bound = row->bound == BOUND_UNKNOWN || b == BOUND_UNKNOWN ? BOUND_UNKNOWN : BOUND_MIXED;
	}
	row->matmul |= matmul;
	row->instances += (double)acc->execs;
	row->kernels += (double)acc->kernels;
	row->flops += (double)acc->execs * (double)op->flops;
	row->bytes += (double)acc->execs * (double)op->bytes;
	row->time_ns += (double)acc->time;
	if (roof < 0 || row->roof_ns < 0)
		row->roof_ns = -1;
	else
		row->roof_ns += (double)acc->execs * roof;
}

static void attention_add(struct flops_result *res, const struct replay *rp, const struct replay_op *op,
			  const struct op_acc *acc)
{
	const char *kind = replay_str(rp, op->kind);
	int ph = op_phase(rp, op);
	struct flops_attention *at;
	double t = (double)acc->time, f = (double)acc->execs * (double)op->flops;

	if (ph != ST_PHASE_FORWARD && ph != ST_PHASE_BACKWARD)
		return;
	at = &res->attention[ph];
	if (!strcmp(kind, "attn/softmax")) {
		at->softmax_ns += t;
		at->softmax_flops += f;
		at->present = true;
	} else if (!strcmp(kind, "attn/scores") || !strcmp(kind, "attn/av")) {
		at->matmul_ns += t;
		at->matmul_flops += f;
	}
}

static int cmp_row(const void *a, const void *b)
{
	const struct flops_row *x = a, *y = b;

	if (x->time_ns != y->time_ns)
		return x->time_ns < y->time_ns ? 1 : -1;
	return strcmp(x->name, y->name);
}

static void divide(struct flops_result *res)
{
	double d = res->divisor;

	for (size_t i = 0; i < res->n_rows; i++) {
		struct flops_row *r = &res->rows[i];
		r->instances /= d;
		r->kernels /= d;
		r->flops /= d;
		r->bytes /= d;
		r->time_ns /= d;
		if (r->roof_ns > 0)
			r->roof_ns /= d;
	}
	res->kernel_ns /= d;
	res->comm_ns /= d;
	res->gemm_ns /= d;
	for (int p = 0; p < ST_PHASE_OTHER; p++) {
		res->phase_kernel_ns[p] /= d;
		res->phase_gemm_ns[p] /= d;
	}
	for (int p = 0; p < 2; p++) {
		struct flops_attention *at = &res->attention[p];
		at->softmax_ns /= d;
		at->matmul_ns /= d;
		at->softmax_flops /= d;
		at->matmul_flops /= d;
	}
}

int flops_compute(const struct replay *rp, const struct flops_options *opt, struct flops_result *out)
{
	struct replay_filter filter;
	struct op_acc *acc = NULL;
	struct category_cache cc = { 0 };
	uint64_t *keys = NULL;
	uint8_t *ran = NULL;      /* per step: a selected kernel ran in it */
	size_t steps_ran = 0;
	uint8_t *path_phase = NULL;    /* with --phase: each path's enum st_phase */
	uint64_t noop_time = 0, noop_kernels = 0;
	size_t cap = rp->n_ops + 1;
	int want = opt->phase ? st_phase_from_name(opt->phase) : -1;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (opt->phase && want < 0)
		return error("'%s' is not a phase", opt->phase);
	peaks_from_header(rp, &out->peaks);
	out->peaks_missing = out->peaks.bandwidth <= 0;
	for (int p = 0; p < FP_COUNT; p++)
		if (out->peaks.flops[p] > 0)
			out->peaks_missing = false;
	/* rows by op kind: the steps with module ranges (replay_counts_modules) */
	out->divisor = (double)replay_module_step_divisor(rp, opt->include_warmup);
	if (rp->n_phases_only) {
		out->module_steps = opt->include_warmup ? rp->n_steps - rp->n_phases_only : rp->n_measured_modules;
		out->of_steps = opt->include_warmup ? rp->n_steps : rp->n_measured_steps;
	}
	out->by_op = opt->by == FLOPS_BY_OP;
	out->dtypes = out->by_op;
	out->phase = want;
	out->range = opt->range;
	if (replay_filter_init(&filter, rp, opt->range) < 0)
		return -1;
	acc = calloc(rp->n_ops + 1, sizeof(*acc));
	keys = calloc(cap, sizeof(*keys));
	out->rows = calloc(cap, sizeof(*out->rows));
	ran = calloc(rp->n_steps + 1, 1);
	if (opt->phase)
		path_phase = malloc(rp->n_paths + 1);
	if (!acc || !keys || !out->rows || !ran || (opt->phase && !path_phase)) {
		error("out of memory");
		goto out;
	}
	if (category_cache_init(&cc, rp) < 0)
		goto out;
	if (path_phase)
		replay_path_phases(rp, path_phase);
	for (size_t i = 0; i < rp->n_ops; i++) {
		acc[i].last_step = INT64_MIN;
		acc[i].group = -1;
	}

	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];
		const struct replay_op *op;
		struct op_acc *oa = NULL;
		uint64_t dur;
		int ph = -1;

		if (a->kind != ST_KERNEL || !replay_counts_modules(rp, a->step, opt->include_warmup) ||
		    !replay_filter_activity(&filter, rp, a))
			continue;
		op = replay_op(rp, a->op);
		/* a communication op's kernels move data between GPUs: no FLOPs, no roofline */
		if (op && nccl_collective(rp, a)) {
			out->comm_ns += (double)(a->end - a->start);
			continue;
		}
		if (op) {
			ph = op_phase(rp, op);
			if (opt->phase && ph != want)
				continue;
			oa = &acc[op - rp->ops];
		} else if (opt->phase && !(a->range >= 0 && path_phase[rp->ranges[a->range].path] == want)) {
			continue;
		}
		dur = a->end > a->start ? a->end - a->start : 0;
		if (a->step >= 0 && (size_t)a->step < rp->n_steps && !ran[a->step]) {
			ran[a->step] = 1;
			steps_ran++;
		}
		if (oa) {
			oa->time += dur;
			oa->kernels++;
			if (oa->last_step != a->step) {
				oa->execs++;
				oa->last_step = a->step;
			}
		} else {
			noop_time += dur;
			noop_kernels++;
		}
		out->kernel_ns += (double)dur;
		bool gemm = category_cached(&cc, a) == CAT_GEMM;
		if (gemm)
			out->gemm_ns += (double)dur;
		if (ph >= 0) {
			out->phase_kernel_ns[ph] += (double)dur;
			if (gemm)
				out->phase_gemm_ns[ph] += (double)dur;
		}
	}

	for (size_t i = 0; i < rp->n_ops; i++) {
		const struct replay_op *op = &rp->ops[i];
		int g;

		if (!acc[i].kernels)
			continue;
		g = group_of(out, &cap, rp, op, opt->by, keys);
		if (g < 0) {
			error("out of memory");
			goto out;
		}
		row_add_op(&out->rows[g], rp, op, &acc[i], &out->peaks);
		attention_add(out, rp, op, &acc[i]);
	}
	if (noop_kernels) {
		struct flops_row *row = &out->rows[out->n_rows];
		memset(row, 0, sizeof(*row));
		row->name = strdup("(no op)");
		if (!row->name) {
			error("out of memory");
			goto out;
		}
		out->n_rows++;
		row->no_op = true;
		row->phase = -1;
		row->precision = FP_NONE;
		row->kernels = (double)noop_kernels;
		row->time_ns = (double)noop_time;
		row->roof_ns = -1;
	}
	/*
	 * Per step of those where the selected work ran: every step for a
	 * model's run, the steps of one configuration of an attention sweep
	 * under its --range
	 */
	if (steps_ran)
		out->divisor = (double)steps_ran;
	divide(out);
	if (out->n_rows > 1)
		qsort(out->rows, out->n_rows, sizeof(*out->rows), cmp_row);
	rc = 0;
out:
	free(path_phase);
	free(acc);
	free(ran);
	category_cache_release(&cc);
	free(keys);
	replay_filter_release(&filter);
	if (rc < 0)
		flops_result_release(out);
	return rc;
}

void flops_result_release(struct flops_result *res)
{
	for (size_t i = 0; i < res->n_rows; i++)
		free(res->rows[i].name);
	free(res->rows);
	memset(res, 0, sizeof(*res));
}

/* ---- the report ------------------------------------------------------- */

static void cell(struct table *t, double v)
{
	if (isnan(v))
		table_empty(t);
	else
		table_float(t, v);
}

static void notes(struct report *r, const struct flops_result *res)
{
	const struct flops_peaks *pk = &res->peaks;

	if (res->of_steps)
		report_note(r, "module ranges were recorded on %zu of the %zu steps (the others have phases only): "
			    "these rows are of those %zu", res->module_steps, res->of_steps, res->module_steps);

	if (res->peaks_missing) {
		report_note(r, "the header has no device peaks: roofline columns are left empty (record on a GPU to get them)");
	} else {
		report_note(r, "device peaks (%s): fp32 %.1f, tf32 %.1f, bf16 %.1f, fp16 %.1f TFLOP/s; bandwidth %.0f GB/s",
			    pk->source, pk->flops[FP_FP32] / 1e12, pk->flops[FP_TF32] / 1e12,
			    pk->flops[FP_BF16] / 1e12, pk->flops[FP_FP16] / 1e12, pk->bandwidth / 1e9);
		report_note(r, "Bound = min(the peak of Peak Used, FLOP/B x bandwidth): a matrix product's input dtype's "
			       "(fp32 inputs: tf32 in a tf32 run), fp32's for every other op whatever its dtype, "
			       "none for a row without FLOPs (bandwidth alone); Of Bound = roofline time / measured time");
	}
	if (res->kernel_ns > 0) {
		char buf[256], what[160];
		int n = 0;

		/* the selection's share: the phase's, the range's, or the whole step's with each phase's */
		for (int p = 0; p < ST_PHASE_OTHER && res->phase < 0; p++)
			if (res->phase_kernel_ns[p] > 0 && n >= 0 && (size_t)n < sizeof(buf))
				n += snprintf(buf + n, sizeof(buf) - n, "%s%s %.1f%%", n ? ", " : "; ",
					      st_phase_name(p), 100.0 * res->phase_gemm_ns[p] / res->phase_kernel_ns[p]);
		snprintf(what, sizeof(what), "%s%s%s%s%s", res->phase >= 0 ? "the " : "",
			 res->phase >= 0 ? st_phase_name(res->phase) : "", res->phase >= 0 ? " phase's " : "",
			 res->range ? "GPU time under '" : "GPU time", res->range ? res->range : "");
		report_note(r, "GEMM share of %s%s: %.1f%% (%.3f of %.3f ms of %skernels per step)%s", what,
			    res->range ? "'" : "", 100.0 * res->gemm_ns / res->kernel_ns, res->gemm_ns / 1e6,
			    res->kernel_ns / 1e6, res->phase >= 0 || res->range ? "its " : "", n ? buf : "");
	}
	if (res->comm_ns > 0)
		report_note(r, "collectives left out: %.3f ms per step of communication kernels (steptrace comm)",
			    res->comm_ns / 1e6);
	for (int p = 0; p < 2; p++) {
		const struct flops_attention *at = &res->attention[p];
		if (!at->present || at->matmul_ns <= 0 || at->matmul_flops <= 0)
			continue;
		double tr = at->softmax_ns / at->matmul_ns, fr = at->softmax_flops / at->matmul_flops;
		report_note(r, "attention %s: softmax takes %.3fx the time of scores+av (%.3f vs %.3f ms) "
			       "for %.4fx their FLOPs (%.3f vs %.3f GFLOP): %.1fx the time per FLOP",
			    st_phase_name(p), tr, at->softmax_ns / 1e6, at->matmul_ns / 1e6, fr,
			    at->softmax_flops / 1e9, at->matmul_flops / 1e9, fr > 0 ? tr / fr : NAN);
	}
}

/* An op's input or output dtypes, "bf16,f32" (as recorded, in order); empty when none. */
static void dtype_cell(struct table *t, const uint8_t *dtypes, size_t n)
{
	char buf[128];
	size_t used = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < n && used < sizeof(buf); i++)
		used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s%s", i ? "," : "",
					 st_dtype_name(dtypes[i]) ? st_dtype_name(dtypes[i]) : "?");
	if (n)
		table_str(t, buf);
	else
		table_empty(t);
}

void flops_report(struct report *r, const struct flops_result *res, int top, const char *title_extra)
{
	char title[512];
	struct table *t;
	size_t shown = top > 0 && (size_t)top < res->n_rows ? (size_t)top : res->n_rows;

	snprintf(title, sizeof(title), "FLOPs against GPU time%s, per step (totals / %.0f)",
		 title_extra ? title_extra : "", res->divisor);
	t = report_add_table(r, "flops", title);
	table_add_column(t, "Time (%)", COL_FLOAT, 1);
	table_add_column(t, "Time (ms)", COL_FLOAT, 3);
	table_add_column(t, "Instances", COL_FLOAT, 2);
	table_add_column(t, "Kernels", COL_FLOAT, 2);
	table_column_droppable(t, 3);
	table_add_column(t, "GFLOP", COL_FLOAT, 3);
	table_add_column(t, "Min MB", COL_FLOAT, 3);
	table_column_droppable(t, 2);
	table_add_column(t, "TFLOP/s", COL_FLOAT, 2);
	table_add_column(t, "GB/s", COL_FLOAT, 1);
	table_add_column(t, "FLOP/B", COL_FLOAT, 2);
	table_add_column(t, "Peak Used", COL_STR, 0);
	table_add_column(t, "Bound (TFLOP/s)", COL_FLOAT, 2);
	table_column_droppable(t, 1);
	table_add_column(t, "Bound by", COL_STR, 0);
	table_add_column(t, "Of Bound (%)", COL_FLOAT, 1);
	if (res->dtypes) {
		table_add_column(t, "Inputs", COL_STR, 0);
		table_column_hide_empty(t);
		table_column_wrap(t);
		table_add_column(t, "Outputs", COL_STR, 0);
		table_column_hide_empty(t);
		table_column_wrap(t);
	}
	table_add_column(t, "Name", COL_STR, 0);
	table_column_elastic(t);
	for (size_t i = 0; i < shown; i++) {
		const struct flops_row *row = &res->rows[i];
		bool roof = !res->peaks_missing && row->roof_ns > 0;

		table_row(t);
		table_float(t, res->kernel_ns > 0 ? 100.0 * row->time_ns / res->kernel_ns : 0.0);
		table_float(t, row->time_ns / 1e6);
		if (row->no_op) {
			table_empty(t);
		} else {
			table_count(t, row->instances);
		}
		table_count(t, row->kernels);
		if (row->no_op) {
			for (int c = 0; c < 5; c++)
				table_empty(t);
		} else {
			table_float(t, row->flops / 1e9);
			table_float(t, row->bytes / 1e6);
			cell(t, flops_row_tflops(row));
			cell(t, flops_row_gbs(row));
			cell(t, flops_row_intensity(row));
		}
		/* the peak the bound takes: none where there are no FLOPs to take it */
		if (row->no_op || row->flops <= 0)
			table_empty(t);
		else
			table_str(t, row->mixed_precision ? "mixed" : flops_precision_name(row->precision));
		if (roof) {
			cell(t, flops_row_bound_tflops(row));
			table_str(t, flops_bound_name(row->bound));
			cell(t, flops_row_percent(row));
		} else {
			table_empty(t);
			table_empty(t);
			table_empty(t);
		}
		if (res->dtypes) {
			const struct replay_op *op = row->dtypes_op;

			if (row->inputs_mixed)
				table_str(t, "mixed");
			else
				dtype_cell(t, op ? op->inputs : NULL, op ? op->n_inputs : 0);
			if (row->outputs_mixed)
				table_str(t, "mixed");
			else
				dtype_cell(t, op ? op->outputs : NULL, op ? op->n_outputs : 0);
		}
		table_str(t, row->name);
	}
	if (res->n_rows == 0)
		report_note(r, "no kernels selected");
	else if (shown < res->n_rows)
		report_note(r, "%zu of %zu rows shown (--top %d)", shown, res->n_rows, top);
	notes(r, res);
}
