/* plan.c: `steptrace plan` (see plan.h). */
#include "analyze/plan.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analyze/flops.h"
#include "lib/error.h"
#include "lib/human.h"
#include "replay/memory.h"
#include "replay/replay.h"

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

/* Weights, gradients and optimizer state of one unsharded device: the bundle's, else 16 B × P. */
static double state_bytes(const struct plan_opts *o)
{
	const struct plan_measured *m = o->measured;

	if (m)
		return (double)m->weights + (double)m->gradients + (double)m->optimizer;
	return (double)plan_params(o) * STATE_BYTES_PER_PARAM;
}

/* The activations A of (b): the bundle's at its peak, else the --batch formula's. */
static double fsdp_activation_bytes(const struct plan_opts *o)
{
	return o->measured ? (double)o->measured->activations : plan_activation_bytes(o);
}

/* What no sharding splits: the bundle's temporaries, workspace and inputs at its peak; 0 without one. */
static double other_bytes(const struct plan_opts *o)
{
	return o->measured ? (double)o->measured->other : 0;
}

double plan_fsdp_bytes(const struct plan_opts *o, int n)
{
	double state = state_bytes(o), act = fsdp_activation_bytes(o);

	return state / n + act / 2 + act / 2 / n + other_bytes(o);
}

int plan_fsdp_min(const struct plan_opts *o, double memory)
{
	double state = state_bytes(o), act = fsdp_activation_bytes(o), fixed = act / 2 + other_bytes(o);
	double n;

	if (memory <= fixed)
		return 0;
	n = ceil((state + act / 2) / (memory - fixed));
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
	if (o->measured && o->measured->params_from_bytes)
		snprintf(buf, len, "the bundle's parameter bytes at its peak / 4 B (FP32)");
	else if (o->measured)
		snprintf(buf, len, "the bundle's run configuration (parameters)");
	else if (o->ffn_only)
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
	if (o->measured) {
		row_float(t, "Activations saved for backward", (double)o->measured->activations / GB, "GB",
			  "the bundle's activation bytes at its memory peak");
	} else if (o->batch && o->seq) {
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
	double state = state_bytes(o), act = fsdp_activation_bytes(o), other = other_bytes(o);
	int min = plan_fsdp_min(o, memory), n = o->fsdp ? o->fsdp : min ? min : 1;
	double bytes = plan_fsdp_bytes(o, n);
	const char *s = o->measured ? "(W + G + O)" : "16·P";
	char f[512], a[64], b[64], c[64], d[64], e[64];

	row_int(t, "N (FSDP degree)", n, "devices", o->fsdp ? "--fsdp" : "the smallest that fits");
	if (o->measured)
		snprintf(f, sizeof(f), "(W + G + O) / N = %s B / %d, the bundle's bytes at its peak",
			 num(a, sizeof(a), state, 0), n);
	else
		snprintf(f, sizeof(f), "16 B × P / N = %s B / %d", num(a, sizeof(a), state, 0), n);
	row_float(t, "Weights + gradients + Adam state", state / n / GB, "GB", f);
	if (o->measured) {
		row_float(t, "Activations A (unsharded)", act / GB, "GB", "the bundle's activation bytes at its peak");
	} else if (o->batch && o->seq) {
		activation_formula(o, f, sizeof(f));
		row_float(t, "Activations A (unsharded)", act / GB, "GB", f);
	} else {
		row_float(t, "Activations A (unsharded)", 0, "GB", "none counted: --batch and --seq give them");
	}
	row_float(t, "Activations per device", (act / 2 + act / 2 / n) / GB, "GB", "A/2 + A/(2N)");
	if (o->measured) {
		row_float(t, "Other (unsharded)", other / GB, "GB",
			  "R: the bundle's temporaries, workspace, inputs and unknown bytes at its peak, on every device");
		row_float(t, "Total per device", bytes / GB, "GB", "(W + G + O)/N + A/2 + A/(2N) + R");
	} else {
		row_float(t, "Total per device", bytes / GB, "GB", "16·P/N + A/2 + A/(2N)");
	}
	row_float(t, "Device memory M", memory / GB, "GB", "--chip or --memory");
	row_text(t, "Fits", bytes <= memory ? "yes" : "no", "", "total per device ≤ M");
	if (min) {
		if (o->measured)
			snprintf(f, sizeof(f), "⌈(%s + A/2) / (M − A/2 − R)⌉ = ⌈(%s + %s) / (%s − %s − %s)⌉ GB", s,
				 num(a, sizeof(a), state / GB, 2), num(b, sizeof(b), act / 2 / GB, 2),
				 num(c, sizeof(c), memory / GB, 2), num(d, sizeof(d), act / 2 / GB, 2),
				 num(e, sizeof(e), other / GB, 2));
		else
			snprintf(f, sizeof(f), "⌈(16·P + A/2) / (M − A/2)⌉ = ⌈(%s + %s) / (%s − %s)⌉ GB",
				 num(a, sizeof(a), state / GB, 2), num(b, sizeof(b), act / 2 / GB, 2),
				 num(c, sizeof(c), memory / GB, 2), num(d, sizeof(d), act / 2 / GB, 2));
		row_int(t, "Smallest N that fits", min, "devices", f);
	} else {
		row_text(t, "Smallest N that fits", NULL, "devices", memory <= act / 2 + other ?
			 "none: the unsharded half A/2 alone is ≥ M" : "none below 2^30 devices");
	}
	if (!notes)
		return;
	if (min)
		report_note(r, "(b) the smallest FSDP degree that fits: N = %d %s, %s GB per device of %s GB", min, label,
			    num(a, sizeof(a), plan_fsdp_bytes(o, min) / GB, 2), num(b, sizeof(b), memory / GB, 2));
	else
		report_note(r, "(b) no FSDP degree fits %s%s", label, memory <= act / 2 + other ?
			    ": half the activations stay whole on every device" : " below 2^30 devices");
}

/*
 * (c) The Scaling Book's mixed FSDP and tensor parallelism, forward pass
 * only, per layer of the two products, B tokens over N = X·Y devices
 * (How to Scale Your Model, "How to Parallelize a Transformer for
 * Training", section "Mixed FSDP and Tensor Parallelism"):
 *   T_math = 4·B·D·F / (N·C), T_FSDP = 4·D·F / (Y·W_ici·M_X), T_TP = 4·B·D / (X·W_ici·M_Y)
 * and, since FLOPs and comms overlap, "we become comms bound when
 * T_FSDP + T_TP = T_math": compute-bound when T_math ≥ T_FSDP + T_TP,
 * the two collectives' times added (the Book's sum, not their maximum).
 * Dividing by 4·D·F/(N·C), with α = C / W_ici and B/X = (B/N)·Y:
 *   B/N ≥ α/(M_X·Y) + (B/N)·α·Y/(M_Y·F)
 *   B/N ≥ [α / (M_X·Y)] / [1 − α·Y / (M_Y·F)],   only for Y < M_Y·F / α
 * (at Y ≥ M_Y·F / α, T_TP alone reaches T_math at any batch: the Book's
 * "model parallelism becomes comms bound when Y > n_axes·F / 2550").
 * With X chosen for the batch (the quadratic's discriminant at zero) the
 * Book's floor is B/N > 4·α² / (F·M_X·M_Y), which is 2·α²/F at M_X = 2,
 * M_Y = 1. An earlier version took max(T_FSDP, T_TP) and printed α²/(...)
 * for the floor: a factor 4 short of the Book's.
 */
struct compute_bound {
	double alpha, fsdp_only, tp_share, per_device;   /* per_device: NAN when Y is at or above the TP bound */
};

/* x: the FSDP degree; an axis of one device runs no collective (T_FSDP = 0 at X = 1, T_TP = 0 at Y = 1). */
static struct compute_bound compute_bound(const struct plan_opts *o, int x, double flops, double link)
{
	struct compute_bound b;

	b.alpha = flops / link;
	b.fsdp_only = x > 1 ? b.alpha / ((double)o->mesh_x * o->tp) : 0;
	b.tp_share = o->tp > 1 ? b.alpha * o->tp / ((double)o->mesh_y * o->d_ff) : 0;
	b.per_device = b.tp_share < 1 ? b.fsdp_only / (1 - b.tp_share) : NAN;
	return b;
}

static void compute_table(const struct plan_opts *o, const struct plan_chip_spec *chip, double flops,
			  double link, bool notes, struct report *r)
{
	struct table *t = quantity_table(r, "compute",
					 "(c) Compute-bound batch under FSDP × TP, forward only (Scaling Book)");
	int x = o->fsdp ? o->fsdp : plan_fsdp_min(o, o->memory ? (double)o->memory : (double)chip->memory);
	int y = o->tp;
	struct compute_bound cb;
	double alpha, y_max, batch, either;
	bool found, tp_ok;
	char f[320], a[64], b[64];

	if (!x)
		x = 1;
	cb = compute_bound(o, x, flops, link);
	alpha = cb.alpha;
	y_max = (double)o->mesh_y * o->d_ff / alpha;
	tp_ok = y == 1 || y < y_max;
	batch = ceil(cb.per_device);
	either = ceil(cb.fsdp_only);
	found = tp_ok && batch * x * y <= 0x1p53;
	row_int(t, "X (FSDP)", x, "devices", o->fsdp ? "--fsdp" : "the smallest FSDP degree that fits");
	row_int(t, "Y (TP)", y, "devices", "--tp");
	row_int(t, "M_X (mesh axes of X)", o->mesh_x, "", "--mesh-x");
	row_int(t, "M_Y (mesh axes of Y)", o->mesh_y, "", "--mesh-y");
	row_float(t, "C", flops / 1e12, "TFLOP/s", "--chip or --flops");
	row_float(t, "W_ici", link / 1e9, "GB/s", "--chip or --link-bw");
	snprintf(f, sizeof(f), "C / W_ici = %.4g / %.4g", flops, link);
	row_float(t, "α", alpha, "FLOP/B", f);
	if (x > 1)
		snprintf(f, sizeof(f), "T_math ≥ T_FSDP alone ⟺ B/(X·Y) ≥ α / (M_X·Y) = %s / (%d × %d)",
			 num(a, sizeof(a), alpha, 2), o->mesh_x, y);
	else
		snprintf(f, sizeof(f), "none at X = 1: no weights to gather");
	row_float(t, "FSDP bound on tokens per device", cb.fsdp_only, "tokens", f);
	if (y > 1)
		snprintf(f, sizeof(f), "T_TP / T_math = α·Y / (M_Y·F) = %s × %d / (%d × %s)", num(a, sizeof(a), alpha, 2), y,
			 o->mesh_y, num(b, sizeof(b), o->d_ff, 0));
	else
		snprintf(f, sizeof(f), "none at Y = 1: no activations to gather");
	row_float(t, "TP share of T_math", cb.tp_share, "", f);
	snprintf(f, sizeof(f), "T_TP < T_math ⟺ Y < M_Y·F / α = %d × %s / %s", o->mesh_y,
		 num(a, sizeof(a), o->d_ff, 0), num(b, sizeof(b), alpha, 2));
	row_float(t, "TP bound on Y", y_max, "devices", f);
	if (!tp_ok) {
		row_text(t, "Tokens per device bound", NULL, "tokens", "none: Y is at or above the TP bound");
		row_text(t, "Per-device batch", NULL, "tokens", "none: Y is at or above the TP bound at any batch");
		row_text(t, "Overall batch", NULL, "tokens", "none");
	} else {
		snprintf(f, sizeof(f), "T_math ≥ T_FSDP + T_TP ⟺ B/N ≥ [α/(M_X·Y)] / [1 − α·Y/(M_Y·F)] = %s / (1 − %s)",
			 num(a, sizeof(a), cb.fsdp_only, 2), num(b, sizeof(b), cb.tp_share, 4));
		row_float(t, "Tokens per device bound", cb.per_device, "tokens", f);
		if (!found) {
			/* --flops and --link-bw are the user's: keep the integers exact */
			row_text(t, "Per-device batch", NULL, "tokens", "past 2^53 tokens in all");
			row_text(t, "Overall batch", NULL, "tokens", "past 2^53 tokens");
		} else {
			snprintf(f, sizeof(f), "⌈B/N bound⌉ = ⌈%s⌉", num(a, sizeof(a), cb.per_device, 2));
			row_int(t, "Per-device batch", (int64_t)batch, "tokens", f);
			snprintf(f, sizeof(f), "per-device batch × X × Y = %s × %d × %d", num(a, sizeof(a), batch, 0), x, y);
			row_int(t, "Overall batch", (int64_t)batch * x * y, "tokens", f);
		}
	}
	if (tp_ok && either * x * y <= 0x1p53) {
		snprintf(f, sizeof(f), "⌈α/(M_X·Y)⌉ = ⌈%s⌉: T_math ≥ max(T_FSDP, T_TP), were the two collectives "
			 "(on different mesh axes) to overlap each other too; not the Book's", num(a, sizeof(a), cb.fsdp_only, 2));
		row_int(t, "Per-device batch if collectives overlap", (int64_t)either, "tokens", f);
	}
	snprintf(f, sizeof(f), "4·α² / (F·M_X·M_Y) = 4 × %s² / (%s × %d × %d), the Book's floor with X = optimal for the batch",
		 num(a, sizeof(a), alpha, 2), num(b, sizeof(b), o->d_ff, 0), o->mesh_x, o->mesh_y);
	row_float(t, "FSDP bound with the optimal X", 4 * alpha * alpha / ((double)o->mesh_x * o->mesh_y * o->d_ff),
		  "tokens", f);
	if (o->measured && o->measured->achieved > 0) {
		const struct plan_measured *m = o->measured;
		struct compute_bound mb = compute_bound(o, x, m->achieved, link);

		snprintf(f, sizeof(f), "the bundle's: the ops' FLOPs / their kernels' time per step = %s GFLOP / %s ms",
			 num(a, sizeof(a), m->flops / 1e9, 2), num(b, sizeof(b), m->kernel_ns / 1e6, 3));
		row_float(t, "C measured", m->achieved / 1e12, "TFLOP/s", f);
		if (m->peak_flops > 0) {
			snprintf(f, sizeof(f), "measured / the bundle's device peak = %s / %s TFLOP/s",
				 num(a, sizeof(a), m->achieved / 1e12, 2), num(b, sizeof(b), m->peak_flops / 1e12, 2));
			row_float(t, "C measured of the device's peak", 100 * m->achieved / m->peak_flops, "%", f);
		}
		snprintf(f, sizeof(f), "C measured / W_ici = %.4g / %.4g", m->achieved, link);
		row_float(t, "α measured", mb.alpha, "FLOP/B", f);
		if (y == 1 || mb.tp_share < 1) {
			snprintf(f, sizeof(f), "[α/(M_X·Y)] / [1 − α·Y/(M_Y·F)] at C measured = %s / (1 − %s)",
				 num(a, sizeof(a), mb.fsdp_only, 2), num(b, sizeof(b), mb.tp_share, 4));
			row_float(t, "Tokens per device bound at C measured", mb.per_device, "tokens", f);
		} else {
			row_text(t, "Tokens per device bound at C measured", NULL, "tokens",
				 "none: Y is at or above M_Y·F / α measured");
		}
	}
	if (o->batch && o->seq) {
		snprintf(f, sizeof(f), "B × S = %d × %d ≥ %s%s", o->batch, o->seq,
			 tp_ok ? num(a, sizeof(a), cb.per_device, 2) : "(none)",
			 o->measured ? " (the bundle's batch and sequence)" : "");
		row_text(t, "--batch × --seq compute-bound", tp_ok && o->batch * (double)o->seq >= cb.per_device ?
			 "yes" : "no", "", f);
	}
	if (!notes)
		return;
	if (found)
		report_note(r, "(c) compute-bound from %s tokens per device, %s in all over X × Y = %d × %d",
			    num(a, sizeof(a), batch, 0), num(b, sizeof(b), batch * x * y, 0), x, y);
	report_note(r, "(c) T_math = 4·B·D·F/(N·C), T_FSDP = 4·D·F/(Y·W_ici·M_X), T_TP = 4·B·D/(X·W_ici·M_Y) "
		    "per layer (B tokens, N = X·Y); compute-bound when T_math ≥ T_FSDP + T_TP (Scaling Book, "
		    "Training, \"Mixed FSDP and Tensor Parallelism\")");
}

int plan_dp_degree(const struct plan_opts *o)
{
	if (o->dp || o->fsdp)
		return o->dp ? o->dp : o->fsdp;
	return o->measured && o->measured->world_size > 1 ? (int)o->measured->world_size : 1;
}

static const char *dp_source(const struct plan_opts *o)
{
	return o->dp ? "--dp" : o->fsdp ? "--fsdp" : o->measured && o->measured->world_size > 1 ?
	       "the bundle's world size" : "neither --dp nor --fsdp";
}

double plan_shard_params(const struct plan_opts *o)
{
	return (double)plan_params(o) / ((double)o->tp * o->pp);
}

double plan_parallel_activation_bytes(const struct plan_opts *o)
{
	if (o->measured)
		return (double)o->measured->activations / o->pp *
		       ((double)o->d_model + (double)o->d_ff / o->tp) / ((double)o->d_model + o->d_ff);
	return (double)o->blocks / o->pp * o->batch * o->seq *
	       ((double)o->d_model + (double)o->d_ff / o->tp) * ACT_BYTES;
}

static int act_size(const struct plan_opts *o)
{
	return o->measured && o->measured->act_bytes ? o->measured->act_bytes : ACT_BYTES;
}

double plan_tp_bytes(const struct plan_opts *o)
{
	return (double)o->blocks / o->pp * 4 * 2.0 * (o->tp - 1) / o->tp *
	       o->batch * (double)o->seq * o->d_model * act_size(o);
}

double plan_pp_bytes(const struct plan_opts *o)
{
	return o->pp > 1 ? 2.0 * o->batch * (double)o->seq * o->d_model * act_size(o) : 0;
}

double plan_bubble(const struct plan_opts *o)
{
	int m = o->microbatches > 0 ? o->microbatches : 1;

	return (double)(o->pp - 1) / (m + o->pp - 1);
}

/* Memory per device table columns: what, state, activations, [other,] total, fits, formula. */
static void parallel_row(struct table *t, const char *what, double state, double act, double other,
			 bool measured, double memory, const char *formula)
{
	table_row(t);
	table_str(t, what);
	table_float(t, state / GB);
	table_float(t, act / GB);
	if (measured)
		table_float(t, other / GB);
	table_float(t, (state + act + other) / GB);
	table_str(t, state + act + other <= memory ? "yes" : "no");
	table_str(t, formula);
}

/*
 * Memory per device for each parallelism in the seeds' precisions: FP32
 * master weights 4 B, FP32 gradients 4 B, Adam m and v 8 B per parameter.
 * P' = P/(T·PP); D the data-parallel degree.
 *   DP      16·P'              ZeRO-1  (4+4)·P' + 8·P'/D
 *   ZeRO-2  4·P' + (4+8)·P'/D  ZeRO-3  16·P'/D
 * From a bundle, its bytes at the memory peak in their place: W, G and O
 * (weights, gradients, optimizer state) each split by T·PP, then
 *   DP  W'+G'+O'   ZeRO-1  W'+G'+O'/D   ZeRO-2  W'+(G'+O')/D   ZeRO-3  (W'+G'+O')/D
 * its activations A/PP × (d_model + d_ff/T)/(d_model + d_ff) (the share of
 * a block's saved inputs TP leaves whole, as the FFN-only count has it),
 * and R, the rest (temporaries, workspace, inputs), whole on every device.
 */
static void parallel_table(const struct plan_opts *o, const char *label, double memory,
			   bool notes, struct report *r)
{
	const struct plan_measured *m = o->measured;
	struct table *t;
	int d = plan_dp_degree(o);
	double p1 = plan_shard_params(o), act = plan_parallel_activation_bytes(o), shard = (double)o->tp * o->pp;
	double w = 4 * p1, g = 4 * p1, opt = 8 * p1, other = 0;
	char title[320], f[384], a[64], b[64], c[64];

	if (m) {
		w = (double)m->weights / shard;
		g = (double)m->gradients / shard;
		opt = (double)m->optimizer / shard;
		other = (double)m->other;
		snprintf(title, sizeof(title), "Memory per device by parallelism: D = %d, T = %d, PP = %d, "
			 "the bundle's bytes at its memory peak (W %s, G %s, O %s GB on one device)", d, o->tp, o->pp,
			 num(a, sizeof(a), (double)m->weights / GB, 2), num(b, sizeof(b), (double)m->gradients / GB, 2),
			 num(c, sizeof(c), (double)m->optimizer / GB, 2));
	} else {
		snprintf(title, sizeof(title), "Memory per device by parallelism: D = %d, T = %d, PP = %d, "
			 "FP32 weights 4 B + FP32 gradients 4 B + Adam m, v 8 B per parameter", d, o->tp, o->pp);
	}
	t = report_add_table(r, "parallel", title);
	table_add_column(t, "Parallelism", COL_STR, 0);
	table_add_column(t, "State GB", COL_FLOAT, 2);
	table_add_column(t, "Activations GB", COL_FLOAT, 2);
	if (m)
		table_add_column(t, "Other GB", COL_FLOAT, 2);
	table_add_column(t, "Total GB", COL_FLOAT, 2);
	table_add_column(t, "Fits", COL_STR, 0);
	table_add_column(t, "Formula", COL_STR, 0);
	if (m) {
		parallel_row(t, "DP", w + g + opt, act, other, true, memory,
			     "W' + G' + O' + act + R (every device all of its T·PP shard; X' = X/(T·PP))");
		parallel_row(t, "ZeRO-1", w + g + opt / d, act, other, true, memory,
			     "W' + G' + O'/D + act + R (optimizer state sharded over D)");
		parallel_row(t, "ZeRO-2", w + (g + opt) / d, act, other, true, memory,
			     "W' + (G' + O')/D + act + R (gradients and optimizer state sharded over D)");
		parallel_row(t, "ZeRO-3/FSDP", (w + g + opt) / d, act, other, true, memory,
			     "(W' + G' + O')/D + act + R (weights, gradients and optimizer state sharded over D)");
	} else {
		parallel_row(t, "DP", 16 * p1, act, 0, false, memory,
			     "16 B × P' + act (every device all of its T·PP shard)");
		parallel_row(t, "ZeRO-1", 8 * p1 + 8 * p1 / d, act, 0, false, memory,
			     "(4 + 4) B × P' + 8 B × P'/D + act (Adam sharded over D)");
		parallel_row(t, "ZeRO-2", 4 * p1 + 12 * p1 / d, act, 0, false, memory,
			     "4 B × P' + (4 + 8) B × P'/D + act (gradients and Adam sharded over D)");
		parallel_row(t, "ZeRO-3/FSDP", 16 * p1 / d, act, 0, false, memory,
			     "16 B × P'/D + act (weights, gradients and Adam sharded over D)");
	}
	table_row(t);
	table_str(t, "act (in each row)");
	table_empty(t);
	table_float(t, act / GB);
	if (m)
		table_empty(t);
	table_empty(t);
	table_empty(t);
	if (m)
		snprintf(f, sizeof(f), "A/PP × (d_model + d_ff/T)/(d_model + d_ff) = %s GB/%d × (%d + %d/%d)/(%d + %d): "
			 "the bundle's activations at its peak, split by PP, TP splitting the d_ff share; not split by D",
			 num(a, sizeof(a), (double)m->activations / GB, 2), o->pp, o->d_model, o->d_ff, o->tp,
			 o->d_model, o->d_ff);
	else if (o->batch && o->seq)
		snprintf(f, sizeof(f), "blocks/PP × B × S × (d_model + d_ff/T) × 2 B = %d/%d × %d × %d × (%d + %d/%d) × 2 B: "
			 "BF16 inputs of the two linears, x whole, h split by TP; one micro-batch per stage; not split by D",
			 o->blocks, o->pp, o->batch, o->seq, o->d_model, o->d_ff, o->tp);
	else
		snprintf(f, sizeof(f), "none counted: --batch and --seq give them");
	table_str(t, f);
	if (!notes)
		return;
	if (m)
		report_note(r, "parallel: from '%s' (rank %u of %u): W, G, O, A and R are its bytes live at its memory peak "
			    "(%s view), R = %s GB of temporaries, workspace, inputs and unknown; D = %d (%s); "
			    "device memory %s GB (%s)", m->path ? m->path : "the bundle", m->rank,
			    m->world_size ? m->world_size : 1, m->view, num(a, sizeof(a), other / GB, 2), d, dp_source(o),
			    num(b, sizeof(b), memory / GB, 2), label);
	else
		report_note(r, "parallel: P' = P/(T·PP) = %s / (%d × %d) = %s parameters; D = %d (%s); "
			    "device memory %s GB (%s)", num(a, sizeof(a), (double)plan_params(o), 0), o->tp, o->pp,
			    num(b, sizeof(b), p1, 0), d, dp_source(o), num(title, sizeof(title), memory / GB, 2), label);
}

/* One row of the comm table; bytes < 0: no bytes (the bubble), share < 0: none. */
static void comm_row(struct table *t, const char *what, const char *collective, double bytes, double link,
		     double share, const char *formula)
{
	table_row(t);
	table_str(t, what);
	table_str(t, collective);
	if (bytes >= 0) {
		table_float(t, bytes / GB);
		table_float(t, bytes / link * 1e3);
	} else {
		table_empty(t);
		table_empty(t);
	}
	if (share >= 0)
		table_float(t, share);
	else
		table_empty(t);
	table_str(t, formula);
}

/*
 * Bytes per device per step over the data-parallel degree D, BF16, ring:
 *   DP, ZeRO-1, ZeRO-2  all-reduce of the gradients      2·(D−1)/D × 2 B × P'
 *   ZeRO-3/FSDP         all-gather of the weights in forward and again in
 *                       backward, reduce-scatter of the gradients  3·(D−1)/D × 2 B × P'
 * From a bundle, its own bytes: 2·(D−1)/D × G' and (D−1)/D × (2·W' + G').
 * Tensor parallelism (Megatron): per block two all-reduces of the B·S·d_model
 * activations in forward and two in backward, each 2·(T−1)/T × B·S·d_model × 2 B
 * on the ring; blocks/PP blocks on a device. Pipeline parallelism: a stage
 * sends its B·S·d_model activations forward and receives their gradients
 * backward (a middle stage sends each way once per micro-batch, B in all),
 * 2 × B·S·d_model × 2 B; the bubble (PP−1)/(M+PP−1) of M micro-batches
 * (GPipe's and 1F1B's).
 */
static void comm_table(const struct plan_opts *o, double link, bool notes, struct report *r)
{
	const struct plan_measured *m = o->measured;
	struct table *t;
	int d = plan_dp_degree(o), mb = o->microbatches > 0 ? o->microbatches : 1;
	double p1 = plan_shard_params(o), frac = (double)(d - 1) / d, shard = (double)o->tp * o->pp;
	const struct { const char *what, *collective; double k; } rows[] = {
		{ "DP", "all-reduce of BF16 gradients", 2 },
		{ "ZeRO-1", "all-reduce of BF16 gradients (as DP)", 2 },
		{ "ZeRO-2", "all-reduce of BF16 gradients (as DP)", 2 },
		{ "ZeRO-3/FSDP", "all-gather BF16 weights (forward, backward) + reduce-scatter BF16 gradients", 3 },
	};
	const struct { const char *what, *collective; } mrows[] = {
		{ "DP", "all-reduce of the gradients" },
		{ "ZeRO-1", "all-reduce of the gradients (as DP)" },
		{ "ZeRO-2", "all-reduce of the gradients (as DP)" },
		{ "ZeRO-3/FSDP", "all-gather the weights (forward, backward) + reduce-scatter the gradients" },
	};
	char title[160], f[384], a[64], b[64], c[64];
	bool bs = o->batch && o->seq;

	snprintf(title, sizeof(title), "Communication per device per step over D = %d, T = %d, PP = %d (ring, %s)",
		 d, o->tp, o->pp, m ? "the bundle's bytes" : "BF16");
	t = report_add_table(r, "comm", title);
	table_add_column(t, "Parallelism", COL_STR, 0);
	table_add_column(t, "Collectives", COL_STR, 0);
	table_add_column(t, "GB per device", COL_FLOAT, 2);
	table_add_column(t, "Time ms", COL_FLOAT, 2);
	table_add_column(t, "Share", COL_FLOAT, 4);
	table_column_hide_empty(t);
	table_add_column(t, "Formula", COL_STR, 0);
	num(b, sizeof(b), link / 1e9, 2);
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		double bytes;

		if (m && i < 3) {
			bytes = 2 * frac * (double)m->gradients / shard;
			snprintf(f, sizeof(f), "2·(D−1)/D × G' = 2 × %d/%d × %s B / (%d × %d); time: ÷ W_ici = %s GB/s",
				 d - 1, d, num(a, sizeof(a), (double)m->gradients, 0), o->tp, o->pp, b);
		} else if (m) {
			bytes = frac * (2 * (double)m->weights + (double)m->gradients) / shard;
			snprintf(f, sizeof(f), "(D−1)/D × (2·W' + G') = %d/%d × (2 × %s + %s) B / (%d × %d); "
				 "time: ÷ W_ici = %s GB/s", d - 1, d, num(a, sizeof(a), (double)m->weights, 0),
				 num(c, sizeof(c), (double)m->gradients, 0), o->tp, o->pp, b);
		} else {
			bytes = rows[i].k * frac * 2 * p1;
			snprintf(f, sizeof(f), "%g·(D−1)/D × 2 B × P' = %g × %d/%d × 2 B × %s; time: ÷ W_ici = %s GB/s",
				 rows[i].k, rows[i].k, d - 1, d, num(a, sizeof(a), p1, 0), b);
		}
		comm_row(t, m ? mrows[i].what : rows[i].what, m ? mrows[i].collective : rows[i].collective, bytes,
			 link, -1, f);
	}
	if (bs) {
		snprintf(f, sizeof(f), "blocks/PP × 4 × 2·(T−1)/T × B·S·d_model × %d B = %d/%d × 4 × 2 × %d/%d × %d × %d × %d × %d B",
			 act_size(o), o->blocks, o->pp, o->tp - 1, o->tp, o->batch, o->seq, o->d_model, act_size(o));
		comm_row(t, "TP", "2 all-reduces of the activations per block forward and 2 backward (Megatron)",
			 plan_tp_bytes(o), link, -1, f);
		snprintf(f, sizeof(f), "2 × B·S·d_model × %d B = 2 × %d × %d × %d × %d B%s", act_size(o), o->batch,
			 o->seq, o->d_model, act_size(o), o->pp > 1 ? "" : "; none at PP = 1");
		comm_row(t, "PP", "activations sent forward and their gradients backward at a stage boundary",
			 plan_pp_bytes(o), link, -1, f);
	} else {
		comm_row(t, "TP", "2 all-reduces of the activations per block forward and 2 backward (Megatron)", -1, link,
			 -1, "none counted: --batch and --seq give B and S");
		comm_row(t, "PP", "activations sent forward and their gradients backward at a stage boundary",
			 -1, link, -1, "none counted: --batch and --seq give B and S");
	}
	snprintf(f, sizeof(f), "(PP−1)/(M+PP−1) = (%d−1)/(%d+%d−1), M micro-batches (--microbatches)", o->pp, mb, o->pp);
	comm_row(t, "PP bubble", "idle share of a pipeline step (no communication)", -1, link, plan_bubble(o), f);
	if (!notes)
		return;
	report_note(r, "comm: bus-bandwidth lower bounds: each device's bytes at W_ici = %s GB/s (--chip or --link-bw), "
		    "no overlap with compute, no latency", b);
	if (m)
		report_note(r, "comm: from '%s': G and W are its gradient and weight bytes at its memory peak (in the dtypes "
			    "it holds them), X' = X/(T·PP); B = %d, S = %d, d_model = %d from its run configuration",
			    m->path ? m->path : "the bundle", o->batch, o->seq, o->d_model);
	if (o->pp > 1)
		report_note(r, "comm: the pipeline bubble is %.2f%% of a step at PP = %d, M = %d", 100 * plan_bubble(o),
			    o->pp, mb);
}

/* A table's notes only where it is printed: --section's alone. */
static bool notes_for(const struct plan_opts *o, const char *table)
{
	return !o->section || !strcmp(o->section, table);
}

int plan_measure(const struct replay *rp, struct plan_measured *m)
{
	struct mem_timeline tl;
	struct flops_options fo = { .by = FLOPS_BY_KIND };
	struct flops_result fr;
	enum mem_view view = mem_default_view(rp);
	const struct replay_config *c = &rp->run.config;
	const struct replay_device *dev = &rp->run.device;

	memset(m, 0, sizeof(*m));
	m->path = rp->path;
	m->view = mem_view_name(view);
	if (mem_timeline_build(&tl, rp, view) < 0)
		return -1;
	m->peak = tl.peak.bytes;
	for (int k = 0; k < ST_MEM_CATEGORY_COUNT; k++) {
		uint64_t v = tl.peak.by_category[k];

		switch (k) {
		case ST_MEM_PARAMETER: m->weights = v; break;
		case ST_MEM_GRADIENT: m->gradients = v; break;
		case ST_MEM_OPTIMIZER: m->optimizer = v; break;
		case ST_MEM_ACTIVATION: m->activations = v; break;
		default: m->other += v; break;
		}
	}
	mem_timeline_release(&tl);
	if (flops_compute(rp, &fo, &fr) < 0)
		return -1;
	for (size_t i = 0; i < fr.n_rows; i++)
		m->flops += fr.rows[i].flops;
	m->kernel_ns = fr.kernel_ns;
	m->achieved = m->flops > 0 && m->kernel_ns > 0 ? m->flops / (m->kernel_ns * 1e-9) : 0;
	flops_result_release(&fr);
	m->params = c->parameters;
	if (!m->params) {
		m->params = m->weights / 4;
		m->params_from_bytes = true;
	}
	m->peak_flops = c->precision == ST_FP32 ? dev->peak_fp32_flops :
			c->precision == ST_TF32 ? dev->peak_tf32_flops : dev->peak_bf16_flops;
	m->device = dev->name && *dev->name ? dev->name : NULL;
	m->rank = rp->run.rank;
	m->world_size = rp->run.world_size;
	m->act_bytes = c->precision == ST_FP32 || c->precision == ST_TF32 ? 4 : 2;
	return 0;
}

int plan_opts_from_bundle(const struct replay *rp, const struct plan_measured *m, struct plan_opts *o)
{
	const struct replay_config *c = &rp->run.config;

	if (!m->params)
		return error("'%s' records no parameter count and no parameter bytes", rp->path ? rp->path : "the bundle");
	if ((double)m->params > 0x1p53 || c->d_model > INT_MAX || c->d_ff > INT_MAX || c->layers > INT_MAX ||
	    c->batch > INT_MAX || c->ctx > INT_MAX)
		return error("'%s': sizes past what plan counts exactly", rp->path ? rp->path : "the bundle");
	if (rp->run.has_config) {
		o->d_model = (int)c->d_model;
		o->d_ff = (int)c->d_ff;
		o->blocks = (int)c->layers;
		o->batch = (int)c->batch;
		o->seq = (int)c->ctx;
	}
	if (!o->batch || !o->seq)
		o->batch = o->seq = 0;
	o->ffn_only = false;
	o->params = m->params;
	o->measured = m;
	return 0;
}

/* What came from the bundle. */
static void bundle_table(const struct plan_opts *o, bool notes, struct report *r)
{
	const struct plan_measured *m = o->measured;
	struct table *t = quantity_table(r, "bundle", "What plan takes from the bundle");
	char f[256], a[64], b[64];

	params_formula(o, f, sizeof(f));
	row_int(t, "Parameters P", (int64_t)m->params, "", f);
	row_float(t, "Weights W", (double)m->weights / GB, "GB", "category parameter at the memory peak");
	row_float(t, "Gradients G", (double)m->gradients / GB, "GB", "category gradient at the memory peak");
	row_float(t, "Optimizer state O", (double)m->optimizer / GB, "GB", "category optimizer at the memory peak");
	row_float(t, "Activations A", (double)m->activations / GB, "GB", "category activation at the memory peak");
	row_float(t, "Other R", (double)m->other / GB, "GB",
		  "temporary, workspace, input and unknown at the memory peak");
	snprintf(f, sizeof(f), "W + G + O + A + R, the %s view's (steptrace memory)", m->view);
	row_float(t, "Memory peak", (double)m->peak / GB, "GB", f);
	snprintf(f, sizeof(f), "(W + G + O) / P = %s B / %s", num(a, sizeof(a),
		 (double)m->weights + (double)m->gradients + (double)m->optimizer, 0), num(b, sizeof(b), (double)m->params, 0));
	row_float(t, "State bytes per parameter", m->params ?
		  ((double)m->weights + (double)m->gradients + (double)m->optimizer) / (double)m->params : 0, "B", f);
	row_float(t, "FLOPs per step", m->flops / 1e9, "GFLOP", "the ops' FLOPs per measured step (steptrace flops)");
	row_float(t, "GPU time per step", m->kernel_ns / 1e6, "ms",
		  "their kernels' time per measured step, communication left out");
	if (m->achieved > 0) {
		snprintf(f, sizeof(f), "FLOPs / GPU time = %s GFLOP / %s ms", num(a, sizeof(a), m->flops / 1e9, 2),
			 num(b, sizeof(b), m->kernel_ns / 1e6, 3));
		row_float(t, "Achieved", m->achieved / 1e12, "TFLOP/s", f);
	} else {
		row_text(t, "Achieved", NULL, "TFLOP/s", "none: no ops' FLOPs or no kernel time");
	}
	if (m->peak_flops > 0)
		row_float(t, "Device peak", m->peak_flops / 1e12, "TFLOP/s",
			  "the bundle's header, at the run's precision");
	snprintf(f, sizeof(f), "B × S = %d × %d, d_model %d, d_ff %d, blocks %d (run configuration)", o->batch, o->seq,
		 o->d_model, o->d_ff, o->blocks);
	row_int(t, "Tokens per step", (int64_t)o->batch * o->seq, "tokens", f);
	if (!notes)
		return;
	report_note(r, "bundle: '%s' (%s), rank %u of %u: the fsdp, parallel and comm tables use its bytes in place of "
		    "16 B × P and the --batch activations; compute adds its achieved rate beside C",
		    m->path ? m->path : "", m->device ? m->device : "no device recorded", m->rank,
		    m->world_size ? m->world_size : 1);
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
	if (o->measured)
		bundle_table(o, notes_for(o, "bundle"), r);
	state_table(o, label, memory, notes_for(o, "state"), r);
	fsdp_table(o, label, memory, notes_for(o, "fsdp"), r);
	compute_table(o, chip, flops, link, notes_for(o, "compute"), r);
	parallel_table(o, label, memory, notes_for(o, "parallel"), r);
	comm_table(o, link, notes_for(o, "comm"), r);
	return 0;
}
