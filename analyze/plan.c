/* plan.c: `steptrace plan` (see plan.h). */
#include "analyze/plan.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/human.h"

/* The seeds count in GB of 10^9 bytes ("80 GB" H100s, "95 GB" v5p). */
#define GB 1e9

/* FP32 master weights, accumulated gradients and Adam's m and v. */
#define STATE_BYTES_PER_PARAM 16
/* BF16 activations. */
#define ACT_BYTES 2

const char *const plan_chip_names[] = { "h100", "h200", "tpu-v5p", NULL };

/*
 * H100 and H200 SXM: 989 TFLOP/s dense BF16, NVLink 4 at 450 GB/s each
 * way. TPU v5p: C and W_ici as the seeds take them from the Scaling Book
 * (W_ici = 2 × 9e10, both directions of a link), 95 GB as the seeds say.
 */
static const struct plan_chip_spec chips[] = {
	[PLAN_CHIP_H100] = { "H100 80GB", 989e12, 450e9, 80000000000ull },
	[PLAN_CHIP_H200] = { "H200 141GB", 989e12, 450e9, 141000000000ull },
	[PLAN_CHIP_TPU_V5P] = { "TPU v5p 95GB", 4.6e14, 2 * 9e10, 95000000000ull },
};

const struct plan_chip_spec *plan_chip_spec(int chip)
{
	return &chips[chip];
}

uint64_t plan_params(const struct plan_opts *o)
{
	if (o->ffn_only)
		return (uint64_t)o->blocks * 2 * (uint64_t)o->d_model * (uint64_t)o->d_ff;
	return o->params;
}

/* Each linear layer saves its input for backward: x (d_model) and h (d_ff) per token. */
double plan_activation_bytes(const struct plan_opts *o)
{
	return (double)o->blocks * o->batch * o->seq * ((double)o->d_model + o->d_ff) * ACT_BYTES;
}

double plan_fsdp_bytes(const struct plan_opts *o, int n)
{
	double state = (double)plan_params(o) * STATE_BYTES_PER_PARAM, act = plan_activation_bytes(o);

	return state / n + act / 2 + act / 2 / n;
}

int plan_fsdp_min(const struct plan_opts *o, double memory)
{
	double state = (double)plan_params(o) * STATE_BYTES_PER_PARAM, act = plan_activation_bytes(o);
	double n;

	if (memory <= act / 2)
		return 0;
	n = ceil((state + act / 2) / (memory - act / 2));
	if (n > INT_MAX / 2)
		return 0;
	if (n < 1)
		n = 1;
	/* the division may land a hair off a whole number: settle on the bytes themselves */
	while (n > 1 && plan_fsdp_bytes(o, (int)n - 1) <= memory)
		n--;
	while (plan_fsdp_bytes(o, (int)n) > memory)
		n++;
	return (int)n;
}

/* v with `decimals` digits and thousands separators, into buf. */
static const char *num(char *buf, size_t len, double v, int decimals)
{
	char raw[64];

	snprintf(raw, sizeof(raw), "%.*f", decimals, v);
	human_group_digits(raw, buf, len);
	return buf;
}

static struct table *quantity_table(struct report *r, const char *name, const char *title)
{
	struct table *t = report_add_table(r, name, title);

	table_add_column(t, "Quantity", COL_STR, 0);
	table_add_column(t, "Value", COL_FLOAT, 2);
	table_add_column(t, "Unit", COL_STR, 0);
	table_add_column(t, "Formula", COL_STR, 0);
	return t;
}

static void row_float(struct table *t, const char *what, double v, const char *unit, const char *formula)
{
	table_row(t);
	table_str(t, what);
	table_float(t, v);
	table_str(t, unit);
	table_str(t, formula);
}

static void row_int(struct table *t, const char *what, int64_t v, const char *unit, const char *formula)
{
	table_row(t);
	table_str(t, what);
	table_int(t, v);
	table_str(t, unit);
	table_str(t, formula);
}

static void row_text(struct table *t, const char *what, const char *v, const char *unit, const char *formula)
{
	table_row(t);
	table_str(t, what);
	if (v)
		table_str(t, v);
	else
		table_empty(t);
	table_str(t, unit);
	table_str(t, formula);
}

static void params_formula(const struct plan_opts *o, char *buf, size_t len)
{
	char d[32], ff[32];

	num(d, sizeof(d), o->d_model, 0);
	num(ff, sizeof(ff), o->d_ff, 0);
	if (o->ffn_only)
		snprintf(buf, len, "blocks × 2 × d_model × d_ff = %d × 2 × %s × %s", o->blocks, d, ff);
	else
		snprintf(buf, len, "2·vocab·d + blocks·(4d² + 3·d·d_ff + 2d) + d with d %s, d_ff %s, blocks %d "
			 "(the built-in model's count)", d, ff, o->blocks);
}

static void activation_formula(const struct plan_opts *o, char *buf, size_t len)
{
	char d[32], ff[32];

	num(d, sizeof(d), o->d_model, 0);
	num(ff, sizeof(ff), o->d_ff, 0);
	snprintf(buf, len, "A = blocks × B × S × (d_model + d_ff) × 2 B = %d × %d × %d × (%s + %s) × 2 B",
		 o->blocks, o->batch, o->seq, d, ff);
}

/* Centi-GB, as the table rounds them. */
static double centi_gb(double bytes)
{
	return round(bytes / GB * 100);
}

/* A sum done by hand from the printed parts (the seeds' 3,517.57) may differ from the total's rounding. */
static void rounded_parts_note(double p, struct report *r)
{
	double parts = 2 * centi_gb(p * 4) + centi_gb(p * 8);
	char a[64], b[64];

	if (parts == centi_gb(p * STATE_BYTES_PER_PARAM))
		return;
	report_note(r, "(a) the parts as printed add up to %s GB; the total, %s GB, is rounded from its bytes",
		    num(a, sizeof(a), parts / 100, 2), num(b, sizeof(b), centi_gb(p * STATE_BYTES_PER_PARAM) / 100, 2));
}

/* (a) */
static void state_table(const struct plan_opts *o, const char *label, double memory,
			bool notes, struct report *r)
{
	struct table *t = quantity_table(r, "state",
					 "(a) Master weights, gradients and Adam state in FP32 on one device");
	double p = (double)plan_params(o), total = p * STATE_BYTES_PER_PARAM;
	char f[256], a[64], b[64];

	params_formula(o, f, sizeof(f));
	row_int(t, "Parameters P", (int64_t)plan_params(o), "", f);
	row_float(t, "Master weights (FP32)", p * 4 / GB, "GB", "4 B × P");
	row_float(t, "Accumulated gradients (FP32)", p * 4 / GB, "GB", "4 B × P");
	row_float(t, "Adam m and v (FP32)", p * 8 / GB, "GB", "2 × 4 B × P");
	snprintf(f, sizeof(f), "16 B × P = %s B", num(a, sizeof(a), total, 0));
	row_float(t, "Total", total / GB, "GB", f);
	snprintf(f, sizeof(f), "⌈total / %s GB⌉ = ⌈%s⌉", num(a, sizeof(a), memory / GB, 0),
		 num(b, sizeof(b), total / memory, 2));
	row_int(t, "Devices", (int64_t)ceil(total / memory), label, f);
	if (o->batch && o->seq) {
		activation_formula(o, f, sizeof(f));
		row_float(t, "Activations saved for backward (BF16)", plan_activation_bytes(o) / GB, "GB", f);
	}
	if (!notes)
		return;
	report_note(r, "(a) %s GB = %lld %s: 16 B per parameter (FP32 weights, gradients, Adam m and v), "
		    "GB = 10^9 B", num(a, sizeof(a), total / GB, 2), (long long)ceil(total / memory), label);
	rounded_parts_note(p, r);
}

/* (b) n: the degree shown (0: none fits, then 1) */
static void fsdp_table(const struct plan_opts *o, const char *label, double memory,
		       bool notes, struct report *r)
{
	struct table *t = quantity_table(r, "fsdp", "(b) Memory per device under FSDP over N devices");
	double state = (double)plan_params(o) * STATE_BYTES_PER_PARAM, act = plan_activation_bytes(o);
	int min = plan_fsdp_min(o, memory), n = o->fsdp ? o->fsdp : min ? min : 1;
	double bytes = plan_fsdp_bytes(o, n);
	char f[384], a[64], b[64], c[64], d[64];

	row_int(t, "N (FSDP degree)", n, "devices", o->fsdp ? "--fsdp" : "the smallest that fits");
	snprintf(f, sizeof(f), "16 B × P / N = %s B / %d", num(a, sizeof(a), state, 0), n);
	row_float(t, "Weights + gradients + Adam state", state / n / GB, "GB", f);
	if (o->batch && o->seq) {
		activation_formula(o, f, sizeof(f));
		row_float(t, "Activations A (unsharded)", act / GB, "GB", f);
	} else {
		row_float(t, "Activations A (unsharded)", 0, "GB", "none counted: --batch and --seq give them");
	}
	row_float(t, "Activations per device", (act / 2 + act / 2 / n) / GB, "GB", "A/2 + A/(2N)");
	row_float(t, "Total per device", bytes / GB, "GB", "16·P/N + A/2 + A/(2N)");
	row_float(t, "Device memory M", memory / GB, "GB", "--chip or --memory");
	row_text(t, "Fits", bytes <= memory ? "yes" : "no", "", "total per device ≤ M");
	if (min) {
		snprintf(f, sizeof(f), "⌈(16·P + A/2) / (M − A/2)⌉ = ⌈(%s + %s) / (%s − %s)⌉ GB",
			 num(a, sizeof(a), state / GB, 2), num(b, sizeof(b), act / 2 / GB, 2),
			 num(c, sizeof(c), memory / GB, 2), num(d, sizeof(d), act / 2 / GB, 2));
		row_int(t, "Smallest N that fits", min, "devices", f);
	} else {
		row_text(t, "Smallest N that fits", NULL, "devices", memory <= act / 2 ?
			 "none: the unsharded half A/2 alone is ≥ M" : "none below 2^30 devices");
	}
	if (!notes)
		return;
	if (min)
		report_note(r, "(b) the smallest FSDP degree that fits: N = %d %s, %s GB per device of %s GB", min, label,
			    num(a, sizeof(a), plan_fsdp_bytes(o, min) / GB, 2), num(b, sizeof(b), memory / GB, 2));
	else
		report_note(r, "(b) no FSDP degree fits %s%s", label, memory <= act / 2 ?
			    ": half the activations stay whole on every device" : " below 2^30 devices");
}

/*
 * (c) The Scaling Book's FSDP × TP forward pass, per layer of the two
 * products (B tokens in all, N = X·Y devices):
 *   T_math = 4·B·D·F / (N·C), T_FSDP = 4·D·F / (Y·W_ici·M_X), T_TP = 4·B·D / (X·W_ici·M_Y)
 * with the two collectives overlapped, compute-bound when T_math ≥ both:
 *   T_math ≥ T_FSDP  ⟺  B/N ≥ α / (M_X·Y), α = C / W_ici
 *   T_math ≥ T_TP    ⟺  Y ≤ M_Y·F / α (no batch helps otherwise)
 */
static void compute_table(const struct plan_opts *o, const struct plan_chip_spec *chip, double flops,
			  double link, bool notes, struct report *r)
{
	struct table *t = quantity_table(r, "compute",
					 "(c) Compute-bound batch under FSDP × TP, forward only (Scaling Book)");
	int x = o->fsdp ? o->fsdp : plan_fsdp_min(o, o->memory ? (double)o->memory : (double)chip->memory);
	int y = o->tp;
	double alpha = flops / link, per_device = alpha / ((double)o->mesh_x * y);
	double y_max = (double)o->mesh_y * o->d_ff / alpha;
	double batch = ceil(per_device);
	char f[256], a[64], b[64];

	if (!x)
		x = 1;
	row_int(t, "X (FSDP)", x, "devices", o->fsdp ? "--fsdp" : "the smallest FSDP degree that fits");
	row_int(t, "Y (TP)", y, "devices", "--tp");
	row_int(t, "M_X (mesh axes of X)", o->mesh_x, "", "--mesh-x");
	row_int(t, "M_Y (mesh axes of Y)", o->mesh_y, "", "--mesh-y");
	row_float(t, "C", flops / 1e12, "TFLOP/s", "--chip or --flops");
	row_float(t, "W_ici", link / 1e9, "GB/s", "--chip or --link-bw");
	snprintf(f, sizeof(f), "C / W_ici = %.4g / %.4g", flops, link);
	row_float(t, "α", alpha, "FLOP/B", f);
	snprintf(f, sizeof(f), "T_math ≥ T_FSDP ⟺ B/(X·Y) ≥ α / (M_X·Y) = %s / (%d × %d)",
		 num(a, sizeof(a), alpha, 2), o->mesh_x, y);
	row_float(t, "FSDP bound on tokens per device", per_device, "tokens", f);
	snprintf(f, sizeof(f), "T_math ≥ T_TP ⟺ Y ≤ M_Y·F / α = %d × %s / %s", o->mesh_y,
		 num(a, sizeof(a), o->d_ff, 0), num(b, sizeof(b), alpha, 2));
	row_float(t, "TP bound on Y", y_max, "devices", f);
	if (y > y_max) {
		row_text(t, "Per-device batch", NULL, "tokens", "none: Y is above the TP bound at any batch");
		row_text(t, "Overall batch", NULL, "tokens", "none");
	} else if (batch * x * y > 0x1p53) {
		/* --flops and --link-bw are the user's: keep the integers exact */
		row_text(t, "Per-device batch", NULL, "tokens", "past 2^53 tokens in all");
		row_text(t, "Overall batch", NULL, "tokens", "past 2^53 tokens");
	} else {
		snprintf(f, sizeof(f), "⌈α / (M_X·Y)⌉ = ⌈%s⌉", num(a, sizeof(a), per_device, 2));
		row_int(t, "Per-device batch", (int64_t)batch, "tokens", f);
		snprintf(f, sizeof(f), "per-device batch × X × Y = %s × %d × %d", num(a, sizeof(a), batch, 0), x, y);
		row_int(t, "Overall batch", (int64_t)batch * x * y, "tokens", f);
	}
	snprintf(f, sizeof(f), "α² / (M_X·M_Y·F) with X = √(B·M_X·N / (F·M_Y)), the Scaling Book's optimum");
	row_float(t, "FSDP bound with the optimal X", alpha * alpha / ((double)o->mesh_x * o->mesh_y * o->d_ff),
		  "tokens", f);
	if (o->batch && o->seq) {
		snprintf(f, sizeof(f), "B × S = %d × %d ≥ %s", o->batch, o->seq, num(a, sizeof(a), per_device, 2));
		row_text(t, "--batch × --seq compute-bound", o->batch * (double)o->seq >= per_device && y <= y_max ?
			 "yes" : "no", "", f);
	}
	if (!notes)
		return;
	if (y <= y_max && batch * x * y <= 0x1p53)
		report_note(r, "(c) compute-bound from %s tokens per device, %s in all over X × Y = %d × %d",
			    num(a, sizeof(a), batch, 0), num(b, sizeof(b), batch * x * y, 0), x, y);
	report_note(r, "(c) T_math = 4·B·D·F/(N·C), T_FSDP = 4·D·F/(Y·W_ici·M_X), T_TP = 4·B·D/(X·W_ici·M_Y) "
		    "per layer (B tokens, N = X·Y), the collectives overlapped: compute-bound when T_math ≥ both");
}

int plan_dp_degree(const struct plan_opts *o)
{
	return o->dp ? o->dp : o->fsdp ? o->fsdp : 1;
}

double plan_shard_params(const struct plan_opts *o)
{
	return (double)plan_params(o) / ((double)o->tp * o->pp);
}

double plan_parallel_activation_bytes(const struct plan_opts *o)
{
	return (double)o->blocks / o->pp * o->batch * o->seq *
	       ((double)o->d_model + (double)o->d_ff / o->tp) * ACT_BYTES;
}

/* Memory per device table columns: what, state, activations, total, fits, formula. */
static void parallel_row(struct table *t, const char *what, double state, double act, double memory,
			 const char *formula)
{
	table_row(t);
	table_str(t, what);
	table_float(t, state / GB);
	table_float(t, act / GB);
	table_float(t, (state + act) / GB);
	table_str(t, state + act <= memory ? "yes" : "no");
	table_str(t, formula);
}

/*
 * Memory per device for each parallelism in the seeds' precisions: FP32
 * master weights 4 B, FP32 gradients 4 B, Adam m and v 8 B per parameter.
 * P' = P/(T·PP); D the data-parallel degree.
 *   DP      16·P'              ZeRO-1  (4+4)·P' + 8·P'/D
 *   ZeRO-2  4·P' + (4+8)·P'/D  ZeRO-3  16·P'/D
 */
static void parallel_table(const struct plan_opts *o, const char *label, double memory,
			   bool notes, struct report *r)
{
	struct table *t;
	int d = plan_dp_degree(o);
	double p1 = plan_shard_params(o), act = plan_parallel_activation_bytes(o);
	char title[256], f[384], a[64], b[64];

	snprintf(title, sizeof(title), "Memory per device by parallelism: D = %d, T = %d, PP = %d, "
		 "FP32 weights 4 B + FP32 gradients 4 B + Adam m, v 8 B per parameter", d, o->tp, o->pp);
	t = report_add_table(r, "parallel", title);
	table_add_column(t, "Parallelism", COL_STR, 0);
	table_add_column(t, "State GB", COL_FLOAT, 2);
	table_add_column(t, "Activations GB", COL_FLOAT, 2);
	table_add_column(t, "Total GB", COL_FLOAT, 2);
	table_add_column(t, "Fits", COL_STR, 0);
	table_add_column(t, "Formula", COL_STR, 0);
	snprintf(f, sizeof(f), "16 B × P' + act (every device all of its T·PP shard)");
	parallel_row(t, "DP", 16 * p1, act, memory, f);
	snprintf(f, sizeof(f), "(4 + 4) B × P' + 8 B × P'/D + act (Adam sharded over D)");
	parallel_row(t, "ZeRO-1", 8 * p1 + 8 * p1 / d, act, memory, f);
	snprintf(f, sizeof(f), "4 B × P' + (4 + 8) B × P'/D + act (gradients and Adam sharded over D)");
	parallel_row(t, "ZeRO-2", 4 * p1 + 12 * p1 / d, act, memory, f);
	snprintf(f, sizeof(f), "16 B × P'/D + act (weights, gradients and Adam sharded over D)");
	parallel_row(t, "ZeRO-3/FSDP", 16 * p1 / d, act, memory, f);
	table_row(t);
	table_str(t, "act (in each row)");
	table_empty(t);
	table_float(t, act / GB);
	table_empty(t);
	table_empty(t);
	if (o->batch && o->seq)
		snprintf(f, sizeof(f), "blocks/PP × B × S × (d_model + d_ff/T) × 2 B = %d/%d × %d × %d × (%d + %d/%d) × 2 B: "
			 "BF16 inputs of the two linears, x whole, h split by TP; one micro-batch per stage; not split by D",
			 o->blocks, o->pp, o->batch, o->seq, o->d_model, o->d_ff, o->tp);
	else
		snprintf(f, sizeof(f), "none counted: --batch and --seq give them");
	table_str(t, f);
	if (!notes)
		return;
	report_note(r, "parallel: P' = P/(T·PP) = %s / (%d × %d) = %s parameters; D = %d (%s); "
		    "device memory %s GB (%s)", num(a, sizeof(a), (double)plan_params(o), 0), o->tp, o->pp,
		    num(b, sizeof(b), p1, 0), d, o->dp ? "--dp" : o->fsdp ? "--fsdp" : "neither --dp nor --fsdp",
		    num(title, sizeof(title), memory / GB, 2), label);
}

/*
 * Bytes per device per step over the data-parallel degree D, BF16, ring:
 *   DP, ZeRO-1, ZeRO-2  all-reduce of the gradients      2·(D−1)/D × 2 B × P'
 *   ZeRO-3/FSDP         all-gather of the weights in forward and again in
 *                       backward, reduce-scatter of the gradients  3·(D−1)/D × 2 B × P'
 */
static void comm_table(const struct plan_opts *o, double link, bool notes, struct report *r)
{
	struct table *t;
	int d = plan_dp_degree(o);
	double p1 = plan_shard_params(o), frac = (double)(d - 1) / d;
	const struct { const char *what, *collective; double k; } rows[] = {
		{ "DP", "all-reduce of BF16 gradients", 2 },
		{ "ZeRO-1", "all-reduce of BF16 gradients (as DP)", 2 },
		{ "ZeRO-2", "all-reduce of BF16 gradients (as DP)", 2 },
		{ "ZeRO-3/FSDP", "all-gather BF16 weights (forward, backward) + reduce-scatter BF16 gradients", 3 },
	};
	char title[128], f[256], a[64], b[64];

	snprintf(title, sizeof(title), "Communication per device per step over D = %d (ring, BF16)", d);
	t = report_add_table(r, "comm", title);
	table_add_column(t, "Parallelism", COL_STR, 0);
	table_add_column(t, "Collectives", COL_STR, 0);
	table_add_column(t, "GB per device", COL_FLOAT, 2);
	table_add_column(t, "Time ms", COL_FLOAT, 2);
	table_add_column(t, "Formula", COL_STR, 0);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		double bytes = rows[i].k * frac * 2 * p1;

		snprintf(f, sizeof(f), "%g·(D−1)/D × 2 B × P' = %g × %d/%d × 2 B × %s; time: ÷ W_ici = %s GB/s",
			 rows[i].k, rows[i].k, d - 1, d, num(a, sizeof(a), p1, 0), num(b, sizeof(b), link / 1e9, 2));
		table_row(t);
		table_str(t, rows[i].what);
		table_str(t, rows[i].collective);
		table_float(t, bytes / GB);
		table_float(t, bytes / link * 1e3);
		table_str(t, f);
	}
	if (!notes)
		return;
	report_note(r, "comm: bus-bandwidth lower bounds: each device's bytes at W_ici = %s GB/s (--chip or --link-bw), "
		    "no overlap with compute, no latency, no TP or PP traffic", num(a, sizeof(a), link / 1e9, 2));
}

/* A table's notes only where it is printed: --section's alone. */
static bool notes_for(const struct plan_opts *o, const char *table)
{
	return !o->section || !strcmp(o->section, table);
}

int plan_run(const struct plan_opts *o, struct report *r)
{
	const struct plan_chip_spec *chip = plan_chip_spec(o->chip);
	double memory = o->memory ? (double)o->memory : (double)chip->memory;
	double flops = o->flops > 0 ? o->flops : chip->flops, link = o->link > 0 ? o->link : chip->link;

	char label[64], gb[32];

	/* --memory makes it another device than the chip's preset */
	if (o->memory)
		snprintf(label, sizeof(label), "devices of %s GB", num(gb, sizeof(gb), memory / GB, 2));
	else
		snprintf(label, sizeof(label), "%s", chip->label);
	state_table(o, label, memory, notes_for(o, "state"), r);
	fsdp_table(o, label, memory, notes_for(o, "fsdp"), r);
	compute_table(o, chip, flops, link, notes_for(o, "compute"), r);
	parallel_table(o, label, memory, notes_for(o, "parallel"), r);
	comm_table(o, link, notes_for(o, "comm"), r);
	return 0;
}
