/* plan.c: `steptrace plan` (see plan.h). */
#include "analyze/plan.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/flops.h"
#include "lib/error.h"
#include "lib/human.h"
#include "replay/memory.h"
#include "replay/replay.h"

/* The seeds count in GB of 10^9 bytes ("80 GB" H100s, "95 GB" v5p). */
#define GB 1e9

/* FP32 master weights, accumulated gradients and Adam's m and v (the seeds' (a)). */
#define STATE_BYTES_PER_PARAM 16
/* BF16 activations. */
#define ACT_BYTES 2

const char *const plan_chip_names[] = { "h100", "h200", "tpu-v5p", NULL };
const char *const plan_intra_names[] = { "nvlink4", "ici-v5p", NULL };
const char *const plan_inter_names[] = { "ib200", "ib400", "ib800", "dcn-v5p", NULL };
const char *const plan_schedule_names[] = { "1f1b", "gpipe", NULL };

enum { INTRA_NVLINK4, INTRA_ICI_V5P };
enum { INTER_IB200, INTER_IB400, INTER_IB800, INTER_DCN_V5P };

/*
 * Bytes per second a device sends one way. NVLink 4 (H100 and H200 SXM):
 * 18 links, 900 GB/s both ways, 450 GB/s each. v5p ICI: W_ici = 2 × 9e10
 * as the seeds take it from the Scaling Book. InfiniBand: one NIC of 200,
 * 400 or 800 Gb/s per GPU (a DGX H100 has eight 400 Gb/s ConnectX-7), /8
 * bits. DCN between v5p pods: the Book's 2.5e10 B/s per host of 4 chips.
 */
static const struct plan_link intra_links[] = {
	[INTRA_NVLINK4] = { "NVLink 4", 450e9 },
	[INTRA_ICI_V5P] = { "ICI", 2 * 9e10 },
};
static const struct plan_link inter_links[] = {
	[INTER_IB200] = { "InfiniBand 200 Gb/s", 25e9 },
	[INTER_IB400] = { "InfiniBand 400 Gb/s", 50e9 },
	[INTER_IB800] = { "InfiniBand 800 Gb/s", 100e9 },
	[INTER_DCN_V5P] = { "DCN", 2.5e10 / 4 },
};

/*
 * H100 and H200 SXM: 989 TFLOP/s dense BF16, eight to a node (HGX, DGX)
 * on NVLink, InfiniBand between nodes. TPU v5p: C as the seeds take it
 * from the Scaling Book, 95 GB as they say, a pod of 8,960 chips on a 3D
 * ICI torus, DCN between pods.
 */
static const struct plan_chip_spec chips[] = {
	[PLAN_CHIP_H100] = { "H100 80GB", 989e12, INTRA_NVLINK4, INTER_IB400, 8, 0, 80000000000ull },
	[PLAN_CHIP_H200] = { "H200 141GB", 989e12, INTRA_NVLINK4, INTER_IB400, 8, 0, 141000000000ull },
	[PLAN_CHIP_TPU_V5P] = { "TPU v5p 95GB", 4.6e14, INTRA_ICI_V5P, INTER_DCN_V5P, 8960, 3, 95000000000ull },
};

const struct plan_chip_spec *plan_chip_spec(int chip)
{
	return &chips[chip];
}

const struct plan_link *plan_intra_link(int preset)
{
	return &intra_links[preset];
}

const struct plan_link *plan_inter_link(int preset)
{
	return &inter_links[preset];
}

/* The links of o: bandwidths, their names and the devices of a node. */
struct links {
	double intra, inter;
	char intra_label[48], inter_label[48];
	int per_node;
	const char *node;     /* what a node is called: "node", a v5p "pod" */
};

static struct links links_of(const struct plan_opts *o)
{
	const struct plan_chip_spec *chip = plan_chip_spec(o->chip);
	struct links l;

	l.intra = o->link > 0 ? o->link : intra_links[chip->intra].bw;
	l.inter = o->inter > 0 ? o->inter : inter_links[chip->inter].bw;
	snprintf(l.intra_label, sizeof(l.intra_label), "%s", o->link_label ? o->link_label :
		 o->link > 0 ? "--link-bw" : intra_links[chip->intra].label);
	snprintf(l.inter_label, sizeof(l.inter_label), "%s", o->inter_label ? o->inter_label :
		 o->inter > 0 ? "--inter-bw" : inter_links[chip->inter].label);
	l.per_node = o->per_node > 0 ? o->per_node : chip->per_node;
	l.node = chip->mesh_axes ? "pod" : "node";
	return l;
}

/*
 * An axis of `degree` devices whose rank stride is `inner` (the product of
 * the degrees ordered inside it): its group spans inner × degree
 * consecutive ranks, and crosses nodes when that is more than a node.
 */
static bool crosses(double inner, int degree, int per_node)
{
	return degree > 1 && inner * degree > per_node;
}

int plan_ffn_matrices(const struct plan_opts *o)
{
	if (o->ffn_matrices)
		return o->ffn_matrices;
	if (o->measured)
		return o->measured->builtin ? 3 : 2;
	return o->ffn_only ? 2 : 3;
}

uint64_t plan_params(const struct plan_opts *o)
{
	if (o->ffn_only && !o->params_given && !o->measured)
		return (uint64_t)o->blocks * (uint64_t)plan_ffn_matrices(o) * (uint64_t)o->d_model * (uint64_t)o->d_ff;
	return o->params;
}

/*
 * The seeds' FFN-only block saves each linear layer's input for backward:
 * x (d_model) and h (d_ff) per token; with SwiGLU's three matrices x feeds
 * two of them and is saved once (the activation function's own inputs are
 * left out, as the seeds leave it out). A full model's are not counted
 * from its sizes (attention, norms and recomputation vary): a bundle
 * measures them.
 */
double plan_activation_per_token(const struct plan_opts *o)
{
	if (o->measured)
		return o->batch && o->seq ? (double)o->measured->activations / ((double)o->batch * o->seq) : 0;
	if (!o->ffn_only)
		return 0;
	return (double)o->blocks * ((double)o->d_model + o->d_ff) * ACT_BYTES;
}

double plan_activation_bytes(const struct plan_opts *o)
{
	if (o->measured)
		return (double)o->measured->activations;
	return plan_activation_per_token(o) * o->batch * o->seq;
}

static int microbatches(const struct plan_opts *o)
{
	return o->microbatches > 0 ? o->microbatches : 1;
}

double plan_schedule_activation_bytes(const struct plan_opts *o, int schedule)
{
	double share = o->d_model + o->d_ff > 0 ?
		       ((double)o->d_model + (double)o->d_ff / o->tp) / ((double)o->d_model + o->d_ff) : 1;
	double act = plan_activation_bytes(o) / o->pp * share;
	int m = microbatches(o);

	if (o->pp > 1 && schedule == PLAN_1F1B)
		act *= (double)(m < o->pp ? m : o->pp) / m;
	return act;
}

double plan_parallel_activation_bytes(const struct plan_opts *o)
{
	return plan_schedule_activation_bytes(o, o->schedule);
}

/* Weights, gradients and optimizer state of one device, unsharded: the bundle's, else 16 B × P. */
static double state_bytes(const struct plan_opts *o)
{
	const struct plan_measured *m = o->measured;

	if (m)
		return (double)m->weights + (double)m->gradients + (double)m->optimizer;
	return (double)plan_params(o) * STATE_BYTES_PER_PARAM;
}

/* What no sharding splits: the bundle's temporaries, workspace and inputs at its peak; 0 without one. */
static double other_bytes(const struct plan_opts *o)
{
	return o->measured ? (double)o->measured->other : 0;
}

static double shard_count(const struct plan_opts *o)
{
	return (double)o->tp * o->pp;
}

double plan_fsdp_bytes(const struct plan_opts *o, int n)
{
	double state = state_bytes(o) / shard_count(o), act = plan_parallel_activation_bytes(o);

	return state / n + act / 2 + act / 2 / n + other_bytes(o);
}

int plan_fsdp_min(const struct plan_opts *o, double memory)
{
	double state = state_bytes(o) / shard_count(o), act = plan_parallel_activation_bytes(o);
	double fixed = act / 2 + other_bytes(o);
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
	return (double)plan_params(o) / shard_count(o);
}

double plan_zero_state_bytes(const struct plan_opts *o, int stage, int policy)
{
	const struct plan_measured *m = o->measured;
	double d = plan_dp_degree(o), p1 = plan_shard_params(o), w, g, opt;

	if (m) {
		w = (double)m->weights / shard_count(o);
		g = (double)m->gradients / shard_count(o);
		opt = (double)m->optimizer / shard_count(o);
	} else if (policy == PLAN_MIXED) {
		/* ZeRO §3.1: fp16 parameters and gradients, 2Ψ + 2Ψ; K = 12 for the FP32 master weights, m and v */
		w = 2 * p1;
		g = 2 * p1;
		opt = 12 * p1;
	} else {
		w = 4 * p1;
		g = 4 * p1;
		opt = 8 * p1;
	}
	switch (stage) {
	case PLAN_ZERO1: return w + g + opt / d;
	case PLAN_ZERO2: return w + (g + opt) / d;
	case PLAN_ZERO3: return (w + g + opt) / d;
	default: return w + g + opt;
	}
}

static int act_size(const struct plan_opts *o)
{
	return o->measured && o->measured->act_bytes ? o->measured->act_bytes : ACT_BYTES;
}

/* All-reduces of the activations per block and step: Megatron's f and g, forward and backward. */
static int tp_allreduces(const struct plan_opts *o)
{
	return o->ffn_only ? 2 : 4;
}

double plan_tp_bytes(const struct plan_opts *o)
{
	return (double)o->blocks / o->pp * tp_allreduces(o) * 2.0 * (o->tp - 1) / o->tp *
	       o->batch * (double)o->seq * o->d_model * act_size(o);
}

double plan_pp_bytes(const struct plan_opts *o)
{
	return o->pp > 1 ? 2.0 * o->batch * (double)o->seq * o->d_model * act_size(o) : 0;
}

double plan_bubble(const struct plan_opts *o)
{
	return (double)(o->pp - 1) / (microbatches(o) + o->pp - 1);
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
	table_column_wrap(t);
	table_add_column(t, "Assumes", COL_STR, 0);
	table_column_wrap(t);
	table_column_hide_empty(t);
	return t;
}

static void cell_opt(struct table *t, const char *s)
{
	if (s && *s)
		table_str(t, s);
	else
		table_empty(t);
}

static void row_float(struct table *t, const char *what, double v, const char *unit, const char *formula,
		      const char *assumes)
{
	table_row(t);
	table_str(t, what);
	table_float(t, v);
	table_str(t, unit);
	table_str(t, formula);
	cell_opt(t, assumes);
}

static void row_int(struct table *t, const char *what, int64_t v, const char *unit, const char *formula,
		    const char *assumes)
{
	table_row(t);
	table_str(t, what);
	table_int(t, v);
	table_str(t, unit);
	table_str(t, formula);
	cell_opt(t, assumes);
}

static void row_text(struct table *t, const char *what, const char *v, const char *unit, const char *formula,
		     const char *assumes)
{
	table_row(t);
	table_str(t, what);
	cell_opt(t, v);
	table_str(t, unit);
	table_str(t, formula);
	cell_opt(t, assumes);
}

static void params_formula(const struct plan_opts *o, char *buf, size_t len)
{
	char d[32], ff[32];

	num(d, sizeof(d), o->d_model, 0);
	num(ff, sizeof(ff), o->d_ff, 0);
	if (o->measured && o->measured->params_from_bytes)
		snprintf(buf, len, "the bundle's parameter bytes at its peak / 4 B (FP32)");
	else if (o->measured && o->measured->params_from_groups)
		snprintf(buf, len, "the bundle's optimizer parameter groups");
	else if (o->measured)
		snprintf(buf, len, "the bundle's run configuration (parameters)");
	else if (o->params_given)
		snprintf(buf, len, "--params");
	else if (o->ffn_only && plan_ffn_matrices(o) == 2)
		snprintf(buf, len, "blocks × 2 × d_model × d_ff = %d × 2 × %s × %s", o->blocks, d, ff);
	else if (o->ffn_only)
		snprintf(buf, len, "blocks × k × d_model × d_ff = %d × %d × %s × %s", o->blocks, plan_ffn_matrices(o), d, ff);
	else
		snprintf(buf, len, "2·vocab·d + blocks·(4d² + %d·d·d_ff + 2d) + d with d %s, d_ff %s, blocks %d "
			 "(the built-in model's count)", plan_ffn_matrices(o), d, ff, o->blocks);
}

static void activation_formula(const struct plan_opts *o, char *buf, size_t len)
{
	char d[32], ff[32];

	num(d, sizeof(d), o->d_model, 0);
	num(ff, sizeof(ff), o->d_ff, 0);
	snprintf(buf, len, "A = blocks × B × S × (d_model + d_ff) × 2 B = %d × %d × %d × (%s + %s) × 2 B",
		 o->blocks, o->batch, o->seq, d, ff);
}

/* Why no activations are counted, NULL when they are. */
static const char *no_activations(const struct plan_opts *o)
{
	if (o->measured)
		return NULL;
	if (!o->d_model || !o->d_ff || !o->blocks)
		return "none counted: --d-model, --d-ff and --blocks give the sizes";
	if (!o->ffn_only)
		return "none counted: a full model's depend on its attention, norms and recomputation; "
		       "a bundle measures them (plan RUN.stb)";
	if (!o->batch || !o->seq)
		return "none counted: --batch and --seq give them";
	return NULL;
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
	double p = (double)plan_params(o), total = p * STATE_BYTES_PER_PARAM, per_token = plan_activation_per_token(o);
	const char *none = no_activations(o);
	char f[320], a[64], b[64], c[64], d[64];

	params_formula(o, f, sizeof(f));
	row_int(t, "Parameters P", (int64_t)plan_params(o), "", f, NULL);
	row_float(t, "Master weights (FP32)", p * 4 / GB, "GB", "4 B × P", NULL);
	row_float(t, "Accumulated gradients (FP32)", p * 4 / GB, "GB", "4 B × P", NULL);
	row_float(t, "Adam m and v (FP32)", p * 8 / GB, "GB", "2 × 4 B × P", NULL);
	snprintf(f, sizeof(f), "16 B × P = %s B", num(a, sizeof(a), total, 0));
	row_float(t, "Total", total / GB, "GB", f, "the seeds' precisions: all four in FP32, nothing sharded");
	snprintf(f, sizeof(f), "⌈total / %s GB⌉ = ⌈%s⌉", num(a, sizeof(a), memory / GB, 0),
		 num(b, sizeof(b), total / memory, 2));
	row_int(t, "Devices", (int64_t)ceil(total / memory), label, f, "memory alone: no activations, no workspace");
	if (o->measured) {
		row_float(t, "Activations saved for backward", (double)o->measured->activations / GB, "GB",
			  "the bundle's activation bytes at its memory peak", "the run's batch, precision and kernels");
	} else if (per_token <= 0) {
		row_text(t, "Activations saved for backward per token", NULL, "MB", none, NULL);
	} else {
		snprintf(f, sizeof(f), "blocks × (d_model + d_ff) × 2 B = %d × (%s + %s) × 2 B = %s B", o->blocks,
			 num(a, sizeof(a), o->d_model, 0), num(b, sizeof(b), o->d_ff, 0), num(c, sizeof(c), per_token, 0));
		row_float(t, "Activations saved for backward per token", per_token / 1e6, "MB", f,
			  "BF16; each linear layer's input (x and h), no recomputation");
		if (none) {
			row_text(t, "Activations saved for backward (BF16)", NULL, "GB", none, NULL);
		} else {
			activation_formula(o, f, sizeof(f));
			row_float(t, "Activations saved for backward (BF16)", plan_activation_bytes(o) / GB, "GB", f,
				  "--batch sequences of --seq tokens on one device");
		}
	}
	if (!notes)
		return;
	report_note(r, "(a) %s GB = %lld %s: 16 B per parameter (FP32 weights, gradients, Adam m and v), "
		    "GB = 10^9 B", num(a, sizeof(a), total / GB, 2), (long long)ceil(total / memory), label);
	rounded_parts_note(p, r);
	if (!o->measured && !none)
		report_note(r, "(a) saved for backward in BF16: %s MB per token, %s GB for %d × %d tokens (%s B)",
			    num(a, sizeof(a), per_token / 1e6, 2), num(b, sizeof(b), plan_activation_bytes(o) / GB, 2),
			    o->batch, o->seq, num(d, sizeof(d), plan_activation_bytes(o), 0));
	else if (!o->measured && per_token > 0)
		report_note(r, "(a) saved for backward in BF16: %s MB per token (%s B); times the tokens of a batch "
			    "(--batch, --seq)", num(a, sizeof(a), per_token / 1e6, 2), num(d, sizeof(d), per_token, 0));
}

static const char *schedule_label(int schedule)
{
	return schedule == PLAN_GPIPE ? "GPipe" : "1F1B";
}

/* What the activations of a T·PP split assume, into buf. */
static void activation_assumes(const struct plan_opts *o, char *buf, size_t len)
{
	int m = microbatches(o);

	if (o->pp == 1)
		snprintf(buf, len, "no pipeline: the whole batch's activations");
	else if (o->schedule == PLAN_GPIPE)
		snprintf(buf, len, "GPipe: all M = %d micro-batches in flight on a stage", m);
	else
		snprintf(buf, len, "1F1B: min(PP, M) = %d of M = %d micro-batches in flight on the first stage",
			 m < o->pp ? m : o->pp, m);
}

/* (b) */
static void fsdp_table(const struct plan_opts *o, const char *label, double memory,
		       bool notes, struct report *r)
{
	struct table *t = quantity_table(r, "fsdp", "(b) Memory per device under FSDP over N devices");
	double shard = shard_count(o), state = state_bytes(o) / shard, act = plan_parallel_activation_bytes(o);
	double other = other_bytes(o);
	int min = plan_fsdp_min(o, memory), n = o->fsdp ? o->fsdp : min ? min : 1;
	double bytes = plan_fsdp_bytes(o, n);
	const char *s = o->measured ? "(W + G + O)" : "16·P";
	const char *none = no_activations(o);
	char f[512], tp[64], as[160], a[64], b[64], c[64], d[64], e[64];

	tp[0] = 0;
	if (shard > 1)
		snprintf(tp, sizeof(tp), "/(T·PP)");
	row_int(t, "N (FSDP degree)", n, "devices", o->fsdp ? "--fsdp" : "the smallest that fits", NULL);
	if (shard > 1)
		snprintf(as, sizeof(as), "T = %d, PP = %d split it first", o->tp, o->pp);
	else
		snprintf(as, sizeof(as), "all of it sharded over N");
	if (o->measured)
		snprintf(f, sizeof(f), "(W + G + O)%s / N = %s B%s%s / %d, the bundle's bytes at its peak", tp,
			 num(a, sizeof(a), state * shard, 0), shard > 1 ? " / " : "",
			 shard > 1 ? num(b, sizeof(b), shard, 0) : "", n);
	else if (shard > 1)
		snprintf(f, sizeof(f), "16 B × P/(T·PP) / N = %s B / %s / %d", num(a, sizeof(a), state * shard, 0),
			 num(b, sizeof(b), shard, 0), n);
	else
		snprintf(f, sizeof(f), "16 B × P / N = %s B / %d", num(a, sizeof(a), state, 0), n);
	row_float(t, "Weights + gradients + Adam state", state / n / GB, "GB", f, as);
	activation_assumes(o, as, sizeof(as));
	if (o->measured) {
		if (shard > 1)
			snprintf(f, sizeof(f), "A/PP × (d_model + d_ff/T)/(d_model + d_ff), A = %s GB the bundle's at its peak",
				 num(a, sizeof(a), (double)o->measured->activations / GB, 2));
		else
			snprintf(f, sizeof(f), "the bundle's activation bytes at its peak");
		row_float(t, "Activations A (unsharded)", act / GB, "GB", f, as);
	} else if (none) {
		row_float(t, "Activations A (unsharded)", 0, "GB", none, NULL);
	} else {
		if (shard > 1)
			snprintf(f, sizeof(f), "A = blocks/PP × B × S × (d_model + d_ff/T) × 2 B = %d/%d × %d × %d × "
				 "(%d + %d/%d) × 2 B", o->blocks, o->pp, o->batch, o->seq, o->d_model, o->d_ff, o->tp);
		else
			activation_formula(o, f, sizeof(f));
		if (o->pp > 1 && o->schedule == PLAN_1F1B) {
			size_t l = strlen(f);
			int m = microbatches(o);

			snprintf(f + l, sizeof(f) - l, " × %d/%d", m < o->pp ? m : o->pp, m);
		}
		row_float(t, "Activations A (unsharded)", act / GB, "GB", f, as);
	}
	row_float(t, "Activations per device", (act / 2 + act / 2 / n) / GB, "GB", "A/2 + A/(2N)",
		  "half of them sharded over N (every second layer), the other half whole");
	snprintf(f, sizeof(f), "%s%s/N + A/2 + A/(2N)%s", o->measured ? "(W + G + O)" : "16·P", tp,
		 o->measured ? " + R" : "");
	if (o->measured)
		row_float(t, "Other (unsharded)", other / GB, "GB",
			  "R: the bundle's temporaries, workspace, inputs and unknown bytes at its peak, on every device",
			  NULL);
	row_float(t, "Total per device", bytes / GB, "GB", f, NULL);
	row_float(t, "Device memory M", memory / GB, "GB", "--chip or --memory", NULL);
	row_text(t, "Fits", bytes <= memory ? "yes" : "no", "", "total per device ≤ M", NULL);
	if (min) {
		if (o->measured)
			snprintf(f, sizeof(f), "⌈(%s%s + A/2) / (M − A/2 − R)⌉ = ⌈(%s + %s) / (%s − %s − %s)⌉ GB", s, tp,
				 num(a, sizeof(a), state / GB, 2), num(b, sizeof(b), act / 2 / GB, 2),
				 num(c, sizeof(c), memory / GB, 2), num(d, sizeof(d), act / 2 / GB, 2),
				 num(e, sizeof(e), other / GB, 2));
		else
			snprintf(f, sizeof(f), "⌈(16·P%s + A/2) / (M − A/2)⌉ = ⌈(%s + %s) / (%s − %s)⌉ GB", tp,
				 num(a, sizeof(a), state / GB, 2), num(b, sizeof(b), act / 2 / GB, 2),
				 num(c, sizeof(c), memory / GB, 2), num(d, sizeof(d), act / 2 / GB, 2));
		row_int(t, "Smallest N that fits", min, "devices", f, NULL);
	} else {
		row_text(t, "Smallest N that fits", NULL, "devices", memory <= act / 2 + other ?
			 "none: the unsharded half A/2 alone is ≥ M" : "none below 2^30 devices", NULL);
	}
	if (!notes)
		return;
	if (min)
		report_note(r, "(b) the smallest FSDP degree that fits: N = %d %s, %s GB per device of %s GB%s", min, label,
			    num(a, sizeof(a), plan_fsdp_bytes(o, min) / GB, 2), num(b, sizeof(b), memory / GB, 2),
			    shard > 1 ? " (after the T·PP split)" : "");
	else
		report_note(r, "(b) no FSDP degree fits %s%s", label, memory <= act / 2 + other ?
			    ": half the activations stay whole on every device" : " below 2^30 devices");
}

/*
 * (c) The Scaling Book's mixed FSDP and tensor parallelism, forward pass
 * only, per block of k FFN matrices, B tokens over N = X·Y devices (How to
 * Scale Your Model, "How to Parallelize a Transformer for Training",
 * section "Combining FSDP and Tensor Parallelism", earlier "Mixed FSDP and
 * Tensor Parallelism"):
 *   T_math = 2k·B·D·F / (N·C), T_FSDP = 2k·D·F / (Y·W_X·M_X), T_TP = 4·B·D / (X·W_Y·M_Y)
 * (k = 2 in the Book; T_TP gathers the input and scatters the output
 * whatever k is). With α_X = C/W_X, α_Y = C/W_Y and b = B/N:
 *   T_FSDP/T_math = α_X / (M_X·Y·b),   T_TP/T_math = 2·α_Y·Y / (k·M_Y·F)
 * The Book's current text lets the two collectives overlap each other (on
 * a torus they use disjoint links): compute-bound when max(T_FSDP, T_TP) ≤
 * T_math, b ≥ α_X/(M_X·Y) and Y < k·M_Y·F/(2·α_Y), whose floor over Y is
 * 2·α_X·α_Y/(k·M_X·M_Y·F), its α²/(M_X·M_Y·F). Its early-2025 text added
 * them, T_FSDP + T_TP ≤ T_math:
 *   b ≥ [α_X/(M_X·Y)] / [1 − 2·α_Y·Y/(k·M_Y·F)],   floor 4× the other's (its 4α²/(M_X·M_Y·F)).
 */
struct plan_bound plan_compute_bound(const struct plan_opts *o, int x, int y, int mx, int my, double flops,
				     double wx, double wy)
{
	struct plan_bound b;
	double k = plan_ffn_matrices(o), ax = flops / wx, ay = flops / wy;

	b.fsdp_only = x > 1 ? ax / ((double)(mx > 0 ? mx : 1) * y) : 0;
	b.tp_max = k * (my > 0 ? my : 1) * o->d_ff / (2 * ay);
	b.tp_share = y > 1 ? 2 * ay * y / (k * (my > 0 ? my : 1) * o->d_ff) : 0;
	b.tp_ok = y == 1 || b.tp_share < 1;
	b.summed = b.tp_ok ? b.fsdp_only / (1 - b.tp_share) : NAN;
	return b;
}

/* The link of an axis: its bandwidth, and its name (with the bandwidth when `with_bw`) into buf. */
static double axis_link(const struct links *l, bool cross, bool with_bw, char *buf, size_t len)
{
	char a[32];

	if (with_bw)
		snprintf(buf, len, "%s, %s GB/s", cross ? l->inter_label : l->intra_label,
			 num(a, sizeof(a), (cross ? l->inter : l->intra) / 1e9, 2));
	else
		snprintf(buf, len, "%s", cross ? l->inter_label : l->intra_label);
	return cross ? l->inter : l->intra;
}

/*
 * Why an axis crosses nodes or not, into buf: "crosses nodes: T·D = 4 × 8 =
 * 32 > 8 per node"; `outer_first` writes the degree before the devices
 * inside it (X·Y = 16 × 4).
 */
static void cross_why(const char *what, double inner, int degree, bool outer_first, const struct links *l,
		      char *buf, size_t len)
{
	bool cross = crosses(inner, degree, l->per_node);
	char where[32], a[32], b[32];

	snprintf(where, sizeof(where), cross ? "crosses %ss" : "inside a %s", l->node);
	if (degree == 1)
		snprintf(buf, len, "one device: no collective");
	else if (inner > 1 && outer_first)
		snprintf(buf, len, "%s: %s = %d × %s = %s %s %d per %s", where, what, degree, num(a, sizeof(a), inner, 0),
			 num(b, sizeof(b), inner * degree, 0), cross ? ">" : "≤", l->per_node, l->node);
	else if (inner > 1)
		snprintf(buf, len, "%s: %s = %s × %d = %s %s %d per %s", where, what, num(a, sizeof(a), inner, 0), degree,
			 num(b, sizeof(b), inner * degree, 0), cross ? ">" : "≤", l->per_node, l->node);
	else
		snprintf(buf, len, "%s: %s = %d %s %d per %s", where, what, degree, cross ? ">" : "≤", l->per_node, l->node);
}

/* Whether X's and Y's collectives use disjoint links, as a word, and the phrase saying why. */
static const char *links_shared(const struct plan_opts *o, int x, int y, bool x_cross, bool y_cross,
				const struct links *l, char *buf, size_t len)
{
	bool torus = plan_chip_spec(o->chip)->mesh_axes > 0 && !x_cross && !y_cross;

	if (x == 1 || y == 1) {
		snprintf(buf, len, "one collective only");
		return "one axis";
	}
	if (torus) {
		snprintf(buf, len, "X and Y on different axes of the %s torus", l->intra_label);
		return "disjoint";
	}
	if (x_cross != y_cross) {
		snprintf(buf, len, "X over %s, Y over %s", x_cross ? l->inter_label : l->intra_label,
			 y_cross ? l->inter_label : l->intra_label);
		return "disjoint";
	}
	snprintf(buf, len, "X and Y both over %s: their collectives share its bandwidth",
		 x_cross ? l->inter_label : l->intra_label);
	return "shared";
}

#define OVERLAPPED "max(T_FSDP, T_TP) ≤ T_math: the two collectives overlap each other and the math (the Book's current text)"
#define SUMMED "T_FSDP + T_TP ≤ T_math: they overlap the math, not each other (the Book's early-2025 text)"

static void compute_table(const struct plan_opts *o, double flops, double memory, bool notes, struct report *r)
{
	struct table *t = quantity_table(r, "compute",
					 "(c) Compute-bound batch under FSDP × TP, forward only (Scaling Book)");
	struct links l = links_of(o);
	int x = o->fsdp ? o->fsdp : o->dp ? o->dp : plan_fsdp_min(o, memory), y = o->tp, k = plan_ffn_matrices(o);
	struct plan_bound cb;
	double ax, ay, wx, wy, batch, summed, floor1;
	bool x_cross, y_cross, found, found_s;
	const char *shared;
	char f[384], as[192], a[64], b[64], c[64], sh[160];

	if (!o->d_ff) {
		row_text(t, "F (d_ff)", NULL, "", "none: the compute bound needs d_ff (--d-ff)", NULL);
		return;
	}
	if (!x)
		x = 1;
	y_cross = crosses(1, y, l.per_node);
	x_cross = crosses(y, x, l.per_node);
	cb = plan_compute_bound(o, x, y, o->mesh_x, o->mesh_y, flops, x_cross ? l.inter : l.intra,
				y_cross ? l.inter : l.intra);
	batch = ceil(cb.fsdp_only);
	summed = ceil(cb.summed);
	found = cb.tp_ok && batch * x * y <= 0x1p53;
	found_s = cb.tp_ok && summed * x * y <= 0x1p53;
	row_int(t, "X (FSDP)", x, "devices", o->fsdp ? "--fsdp" : o->dp ? "--dp" : "the smallest FSDP degree that fits",
		o->fsdp || !o->dp ? NULL : "DP's gradient all-reduce moves what FSDP's gathers do: the same bound");
	row_int(t, "Y (TP)", y, "devices", "--tp", NULL);
	row_int(t, "M_X (mesh axes of X)", o->mesh_x, "", "--mesh-x", NULL);
	row_int(t, "M_Y (mesh axes of Y)", o->mesh_y, "", "--mesh-y", NULL);
	row_float(t, "C", flops / 1e12, "TFLOP/s", "--chip or --flops", "dense BF16 peak");
	row_int(t, "k (FFN matrices)", k, "", o->ffn_matrices ? "--ffn-matrices" :
		o->measured && k == 3 ? "SwiGLU: w1, w3, w2 (a run of the built-in step)" :
		o->measured ? "two linear layers: the bundle records no FFN (--ffn-matrices 3 for SwiGLU)" : k == 2 ?
		"two linear layers per block (the seeds', the Book's)" : "SwiGLU: w1, w3, w2 (the built-in model's)",
		"the FFN's products alone: attention and embeddings not counted");
	cross_why("X·Y", y, x, true, &l, as, sizeof(as));
	wx = axis_link(&l, x_cross, false, f, sizeof(f));
	row_float(t, "W_X (FSDP axis)", wx / 1e9, "GB/s", f, as);
	cross_why("Y", 1, y, false, &l, as, sizeof(as));
	wy = axis_link(&l, y_cross, false, f, sizeof(f));
	row_float(t, "W_Y (TP axis)", wy / 1e9, "GB/s", f, as);
	ax = flops / wx;
	ay = flops / wy;
	snprintf(f, sizeof(f), "C / W_X = %.4g / %.4g", flops, wx);
	row_float(t, "α_X", ax, "FLOP/B", f, NULL);
	snprintf(f, sizeof(f), "C / W_Y = %.4g / %.4g", flops, wy);
	row_float(t, "α_Y", ay, "FLOP/B", f, NULL);
	if (x > 1)
		snprintf(f, sizeof(f), "T_FSDP ≤ T_math ⟺ B/(X·Y) ≥ α_X / (M_X·Y) = %s / (%d × %d)",
			 num(a, sizeof(a), ax, 2), o->mesh_x, y);
	else
		snprintf(f, sizeof(f), "none at X = 1: no weights to gather");
	row_float(t, "FSDP bound on tokens per device", cb.fsdp_only, "tokens", f, NULL);
	if (y > 1)
		snprintf(f, sizeof(f), "T_TP / T_math = 2·α_Y·Y / (k·M_Y·F) = 2 × %s × %d / (%d × %d × %s)",
			 num(a, sizeof(a), ay, 2), y, k, o->mesh_y, num(b, sizeof(b), o->d_ff, 0));
	else
		snprintf(f, sizeof(f), "none at Y = 1: no activations to gather");
	row_float(t, "TP share of T_math", cb.tp_share, "", f, NULL);
	snprintf(f, sizeof(f), "T_TP < T_math ⟺ Y < k·M_Y·F / (2·α_Y) = %d × %d × %s / (2 × %s)", k, o->mesh_y,
		 num(a, sizeof(a), o->d_ff, 0), num(b, sizeof(b), ay, 2));
	row_float(t, "TP bound on Y", cb.tp_max, "devices", f, NULL);
	shared = links_shared(o, x, y, x_cross, y_cross, &l, sh, sizeof(sh));
	row_text(t, "Links of X and Y", shared, "", sh, NULL);
	if (!cb.tp_ok) {
		row_text(t, "Per-device batch (overlapped)", NULL, "tokens", "none: Y is at or above the TP bound at any batch",
			 OVERLAPPED);
		row_text(t, "Per-device batch (not overlapped)", NULL, "tokens", "none: Y is at or above the TP bound",
			 SUMMED);
	} else {
		if (!found) {
			/* --flops and --link-bw are the user's: keep the integers exact */
			row_text(t, "Per-device batch (overlapped)", NULL, "tokens", "past 2^53 tokens in all", OVERLAPPED);
		} else {
			snprintf(f, sizeof(f), "⌈α_X/(M_X·Y)⌉ = ⌈%s⌉%s", num(a, sizeof(a), cb.fsdp_only, 2),
				 x == 1 ? ": any batch" : "");
			row_int(t, "Per-device batch (overlapped)", (int64_t)batch, "tokens", f, OVERLAPPED);
			snprintf(f, sizeof(f), "per-device batch × X × Y = %s × %d × %d", num(a, sizeof(a), batch, 0), x, y);
			row_int(t, "Overall batch (overlapped)", (int64_t)batch * x * y, "tokens", f, OVERLAPPED);
		}
		snprintf(f, sizeof(f), "[α_X/(M_X·Y)] / [1 − 2·α_Y·Y/(k·M_Y·F)] = %s / (1 − %s)",
			 num(a, sizeof(a), cb.fsdp_only, 2), num(b, sizeof(b), cb.tp_share, 4));
		row_float(t, "Tokens per device bound (not overlapped)", cb.summed, "tokens", f, SUMMED);
		if (!found_s) {
			row_text(t, "Per-device batch (not overlapped)", NULL, "tokens", "past 2^53 tokens in all", SUMMED);
		} else {
			snprintf(f, sizeof(f), "⌈%s⌉", num(a, sizeof(a), cb.summed, 2));
			row_int(t, "Per-device batch (not overlapped)", (int64_t)summed, "tokens", f, SUMMED);
			snprintf(f, sizeof(f), "per-device batch × X × Y = %s × %d × %d", num(a, sizeof(a), summed, 0), x, y);
			row_int(t, "Overall batch (not overlapped)", (int64_t)summed * x * y, "tokens", f, SUMMED);
		}
	}
	floor1 = 2 * ax * ay / ((double)k * o->mesh_x * o->mesh_y * o->d_ff);
	snprintf(f, sizeof(f), "2·α_X·α_Y / (k·M_X·M_Y·F) = 2 × %s × %s / (%d × %d × %d × %s): Y at the TP bound",
		 num(a, sizeof(a), ax, 2), num(b, sizeof(b), ay, 2), k, o->mesh_x, o->mesh_y, num(c, sizeof(c), o->d_ff, 0));
	row_float(t, "Floor over Y (overlapped)", floor1, "tokens", f,
		  "the Book's current α²/(M_X·M_Y·F) at k = 2, α_X = α_Y; collectives overlapped; these links kept");
	snprintf(f, sizeof(f), "4 × 2·α_X·α_Y / (k·M_X·M_Y·F) = 4 × %s: Y at half the TP bound", num(a, sizeof(a), floor1, 2));
	row_float(t, "Floor over Y (not overlapped)", 4 * floor1, "tokens", f,
		  "the Book's early 4α²/(M_X·M_Y·F) at k = 2, α_X = α_Y; collectives added; these links kept");
	if (o->measured && o->measured->achieved > 0) {
		const struct plan_measured *m = o->measured;
		struct plan_bound mb = plan_compute_bound(o, x, y, o->mesh_x, o->mesh_y, m->achieved, wx, wy);

		snprintf(f, sizeof(f), "the bundle's: the ops' FLOPs / their kernels' time per step = %s GFLOP / %s ms",
			 num(a, sizeof(a), m->flops / 1e9, 2), num(b, sizeof(b), m->kernel_ns / 1e6, 3));
		row_float(t, "C measured", m->achieved / 1e12, "TFLOP/s", f, NULL);
		if (m->peak_flops > 0) {
			snprintf(f, sizeof(f), "measured / the bundle's device peak = %s / %s TFLOP/s",
				 num(a, sizeof(a), m->achieved / 1e12, 2), num(b, sizeof(b), m->peak_flops / 1e12, 2));
			row_float(t, "C measured of the device's peak", 100 * m->achieved / m->peak_flops, "%", f, NULL);
		}
		snprintf(f, sizeof(f), "C measured / W_X = %.4g / %.4g", m->achieved, wx);
		row_float(t, "α_X measured", m->achieved / wx, "FLOP/B", f, NULL);
		if (mb.tp_ok) {
			snprintf(f, sizeof(f), "α_X/(M_X·Y) at C measured = %s / (%d × %d)",
				 num(a, sizeof(a), m->achieved / wx, 2), o->mesh_x, y);
			row_float(t, "Tokens per device bound at C measured (overlapped)", mb.fsdp_only, "tokens", f,
				  OVERLAPPED);
			snprintf(f, sizeof(f), "[α_X/(M_X·Y)] / [1 − 2·α_Y·Y/(k·M_Y·F)] at C measured = %s / (1 − %s)",
				 num(a, sizeof(a), mb.fsdp_only, 2), num(b, sizeof(b), mb.tp_share, 4));
			row_float(t, "Tokens per device bound at C measured (not overlapped)", mb.summed, "tokens", f, SUMMED);
		} else {
			row_text(t, "Tokens per device bound at C measured", NULL, "tokens",
				 "none: Y is at or above k·M_Y·F / (2·α_Y) at C measured", NULL);
		}
	}
	if (o->batch && o->seq) {
		snprintf(f, sizeof(f), "B × S = %d × %d ≥ %s%s", o->batch, o->seq,
			 cb.tp_ok ? num(a, sizeof(a), cb.fsdp_only, 2) : "(none)",
			 o->measured ? " (the bundle's batch and sequence)" : "");
		row_text(t, "--batch × --seq compute-bound (overlapped)", cb.tp_ok &&
			 o->batch * (double)o->seq >= cb.fsdp_only ? "yes" : "no", "", f, OVERLAPPED);
		snprintf(f, sizeof(f), "B × S = %d × %d ≥ %s", o->batch, o->seq,
			 cb.tp_ok ? num(a, sizeof(a), cb.summed, 2) : "(none)");
		row_text(t, "--batch × --seq compute-bound (not overlapped)", cb.tp_ok &&
			 o->batch * (double)o->seq >= cb.summed ? "yes" : "no", "", f, SUMMED);
	}
	if (!notes)
		return;
	if (found && x == 1)
		report_note(r, "(c) compute-bound at any batch over X × Y = 1 × %d: no FSDP collective, and Y is below the TP "
			    "bound %s", y, num(a, sizeof(a), cb.tp_max, 2));
	else if (found && found_s)
		report_note(r, "(c) compute-bound from %s tokens per device, %s in all over X × Y = %d × %d, if the FSDP and "
			    "TP collectives overlap each other (the Scaling Book's current text); from %s and %s if they do "
			    "not (its early-2025 text)", num(a, sizeof(a), batch, 0), num(b, sizeof(b), batch * x * y, 0), x, y,
			    num(c, sizeof(c), summed, 0), num(f, sizeof(f), summed * x * y, 0));
	else if (!cb.tp_ok)
		report_note(r, "(c) Y = %d is at or above the TP bound %s: tensor parallelism is communication-bound at any "
			    "batch", y, num(a, sizeof(a), cb.tp_max, 2));
	if (!strcmp(shared, "shared"))
		report_note(r, "(c) here %s: the not-overlapped bound is the one that holds", sh);
	else if (!strcmp(shared, "disjoint"))
		report_note(r, "(c) here %s: the overlapped bound holds where the collectives run concurrently", sh);
	report_note(r, "(c) T_math = 2k·B·D·F/(N·C), T_FSDP = 2k·D·F/(Y·W_X·M_X), T_TP = 4·B·D/(X·W_Y·M_Y) per block "
		    "(B tokens, N = X·Y, k = %d) (Scaling Book, \"How to Parallelize a Transformer for Training\", "
		    "\"Combining FSDP and Tensor Parallelism\")", k);
}

/* Memory per device table columns: what, state, activations, [other,] total, fits, formula, assumes. */
static void parallel_row(struct table *t, const char *what, double state, double act, double other,
			 bool measured, double memory, const char *formula, const char *assumes)
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
	table_str(t, assumes);
}

/* The act row of a schedule: its bytes, formula and assumption. */
static void parallel_act_row(struct table *t, const struct plan_opts *o, int schedule, bool used)
{
	const struct plan_measured *m = o->measured;
	double act = plan_schedule_activation_bytes(o, schedule);
	int mb = microbatches(o), inflight = mb < o->pp ? mb : o->pp;
	const char *none = no_activations(o);
	char what[64], f[384], sched[64], nums[32], as[160], a[64];

	if (o->pp == 1)
		snprintf(what, sizeof(what), "act (in each row)");
	else
		snprintf(what, sizeof(what), "act %s%s", schedule_label(schedule), used ? " (in each row)" : "");
	sched[0] = nums[0] = 0;
	if (o->pp > 1 && schedule == PLAN_1F1B) {
		snprintf(sched, sizeof(sched), " × min(PP, M)/M");
		snprintf(nums, sizeof(nums), " × %d/%d", inflight, mb);
	}
	table_row(t);
	table_str(t, what);
	table_empty(t);
	table_float(t, act / GB);
	if (m)
		table_empty(t);
	table_empty(t);
	table_empty(t);
	if (m)
		snprintf(f, sizeof(f), "A/PP × (d_model + d_ff/T)/(d_model + d_ff)%s = %s GB/%d × (%d + %d/%d)/(%d + %d)%s: "
			 "the bundle's activations at its peak", sched, num(a, sizeof(a), (double)m->activations / GB, 2),
			 o->pp, o->d_model, o->d_ff, o->tp, o->d_model, o->d_ff, nums);
	else if (!none)
		snprintf(f, sizeof(f), "blocks/PP × B × S × (d_model + d_ff/T) × 2 B%s = %d/%d × %d × %d × (%d + %d/%d) × 2 B%s",
			 sched, o->blocks, o->pp, o->batch, o->seq, o->d_model, o->d_ff, o->tp, nums);
	else
		snprintf(f, sizeof(f), "%s", none);
	table_str(t, f);
	if (o->pp == 1)
		snprintf(as, sizeof(as), "no pipeline%s", none ? "" : "; x whole, h split by TP; not split by D");
	else if (schedule == PLAN_GPIPE)
		snprintf(as, sizeof(as), "GPipe: all %d micro-batches in flight on a stage%s", mb,
			 none ? "" : "; x whole, h split by TP");
	else
		snprintf(as, sizeof(as), "1F1B: %d of %d micro-batches in flight on the first stage%s", inflight, mb,
			 none ? "" : "; x whole, h split by TP");
	table_str(t, as);
}

/*
 * Memory per device for each parallelism, P' = P/(T·PP), D the
 * data-parallel degree. ZeRO's mixed precision (Rajbhandari et al. §3.1,
 * §5.1): BF16 weights 2 B, BF16 gradients 2 B, K = 12 B of FP32 master
 * weights, m and v per parameter:
 *   DP      16·P'              ZeRO-1 (Pos)    (2+2)·P' + 12·P'/D
 *   ZeRO-2  2·P' + 14·P'/D     ZeRO-3 (Pos+g+p) 16·P'/D
 * The autocast alternative keeps FP32 weights (4 B, no separate master
 * copy) and FP32 gradients (4 B) with m and v (8 B):
 *   ZeRO-1  (4+4)·P' + 8·P'/D  ZeRO-2  4·P' + 12·P'/D   (DP and ZeRO-3 alike)
 * From a bundle, its bytes at the memory peak in their place: W, G and O
 * (weights, gradients, optimizer state, the run's own policy) each split by
 * T·PP, then
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
	double p1 = plan_shard_params(o), act = plan_parallel_activation_bytes(o);
	double other = other_bytes(o);
	char title[320], sched[64], as[256], a[64], b[64], c[64];
	static const struct { const char *what, *formula, *assumes; int stage, policy; } rows[] = {
		{ "DP", "16 B × P' + act", "either policy: 2 + 2 + 12 or 4 + 4 + 8 B per parameter, nothing sharded",
		  PLAN_DP, PLAN_MIXED },
		{ "ZeRO-1", "(2 + 2) B × P' + 12 B × P'/D + act",
		  "ZeRO's mixed precision: BF16 weights and gradients whole; FP32 master weights, m, v sharded (Pos)",
		  PLAN_ZERO1, PLAN_MIXED },
		{ "ZeRO-2", "2 B × P' + (2 + 12) B × P'/D + act",
		  "ZeRO's mixed precision: BF16 weights whole; gradients, FP32 master weights, m, v sharded (Pos+g)",
		  PLAN_ZERO2, PLAN_MIXED },
		{ "ZeRO-3/FSDP", "16 B × P'/D + act", "weights, gradients and optimizer state sharded (Pos+g+p), either policy",
		  PLAN_ZERO3, PLAN_MIXED },
		{ "ZeRO-1 autocast", "(4 + 4) B × P' + 8 B × P'/D + act",
		  "autocast: FP32 weights used directly and FP32 gradients whole; m, v sharded", PLAN_ZERO1, PLAN_AUTOCAST },
		{ "ZeRO-2 autocast", "4 B × P' + (4 + 8) B × P'/D + act",
		  "autocast: FP32 weights used directly and whole; FP32 gradients, m, v sharded", PLAN_ZERO2, PLAN_AUTOCAST },
	};
	static const struct { const char *what, *formula; int stage; } mrows[] = {
		{ "DP", "W' + G' + O' + act + R (every device all of its T·PP shard; X' = X/(T·PP))", PLAN_DP },
		{ "ZeRO-1", "W' + G' + O'/D + act + R (optimizer state sharded over D)", PLAN_ZERO1 },
		{ "ZeRO-2", "W' + (G' + O')/D + act + R (gradients and optimizer state sharded over D)", PLAN_ZERO2 },
		{ "ZeRO-3/FSDP", "(W' + G' + O')/D + act + R (weights, gradients and optimizer state sharded over D)",
		  PLAN_ZERO3 },
	};

	if (m) {
		snprintf(title, sizeof(title), "Memory per device by parallelism: D = %d, T = %d, PP = %d, "
			 "the bundle's bytes at its memory peak (W %s, G %s, O %s GB on one device)", d, o->tp, o->pp,
			 num(a, sizeof(a), (double)m->weights / GB, 2), num(b, sizeof(b), (double)m->gradients / GB, 2),
			 num(c, sizeof(c), (double)m->optimizer / GB, 2));
	} else {
		snprintf(title, sizeof(title), "Memory per device by parallelism: D = %d, T = %d, PP = %d, "
			 "ZeRO's mixed precision (BF16 2 B + 2 B, FP32 master weights and Adam 12 B per parameter) "
			 "and autocast (FP32 4 B + 4 B + 8 B)", d, o->tp, o->pp);
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
	table_column_wrap(t);
	table_add_column(t, "Assumes", COL_STR, 0);
	table_column_wrap(t);
	sched[0] = 0;
	if (o->pp > 1)
		snprintf(sched, sizeof(sched), "; act: %s", schedule_label(o->schedule));
	if (m) {
		for (size_t i = 0; i < sizeof(mrows) / sizeof(mrows[0]); i++) {
			snprintf(as, sizeof(as), "the run's own dtypes and master-weight policy (its W, G, O as recorded)%s",
				 sched);
			parallel_row(t, mrows[i].what, plan_zero_state_bytes(o, mrows[i].stage, PLAN_MIXED), act, other,
				     true, memory, mrows[i].formula, as);
		}
	} else {
		for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
			snprintf(as, sizeof(as), "%s%s", rows[i].assumes, sched);
			parallel_row(t, rows[i].what, plan_zero_state_bytes(o, rows[i].stage, rows[i].policy), act, 0,
				     false, memory, rows[i].formula, as);
		}
	}
	if (o->pp == 1) {
		parallel_act_row(t, o, o->schedule, true);
	} else {
		parallel_act_row(t, o, PLAN_1F1B, o->schedule == PLAN_1F1B);
		parallel_act_row(t, o, PLAN_GPIPE, o->schedule == PLAN_GPIPE);
	}
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
			    num(b, sizeof(b), p1, 0), d, dp_source(o), num(c, sizeof(c), memory / GB, 2), label);
	if (!m)
		report_note(r, "parallel: ZeRO-1, ZeRO-2 and ZeRO-3 follow ZeRO's mixed-precision Adam (Rajbhandari et al., "
			    "K = 12: the FP32 master weights live in the sharded optimizer state); the autocast rows keep FP32 "
			    "weights and use them directly, as PyTorch's autocast does");
	if (o->pp > 1)
		report_note(r, "parallel: the totals hold the %s schedule's activations (--schedule); the other's is the "
			    "row below", schedule_label(o->schedule));
}

/* One row of the comm table; bytes < 0: no bytes (the bubble, none counted), share < 0: none. */
static void comm_row(struct table *t, const char *what, const char *collective, double bytes, const char *link,
		     double bw, double share, const char *formula, const char *assumes)
{
	table_row(t);
	table_str(t, what);
	table_str(t, collective);
	if (bytes >= 0) {
		table_float(t, bytes / GB);
		table_str(t, link);
		table_float(t, bytes / bw * 1e3);
	} else {
		table_empty(t);
		table_empty(t);
		table_empty(t);
	}
	if (share >= 0)
		table_float(t, share);
	else
		table_empty(t);
	table_str(t, formula);
	cell_opt(t, assumes);
}

/*
 * Bytes per device per step over the data-parallel degree D, ring (ZeRO
 * §7: an all-reduce moves 2Ψ, ZeRO-3 3Ψ):
 *   DP                  all-reduce of the BF16 gradients     2·(D−1)/D × 2 B × P'
 *   ZeRO-1, ZeRO-2      reduce-scatter of the gradients and all-gather of the
 *                       updated weights, an all-reduce's bytes
 *   ZeRO-3/FSDP         all-gather of the weights in forward and again in
 *                       backward, reduce-scatter of the gradients  3·(D−1)/D × 2 B × P'
 * From a bundle, its own bytes: 2·(D−1)/D × G' and (D−1)/D × (2·W' + G').
 * Tensor parallelism (Megatron, Shoeybi et al. §3): an FFN-only block
 * all-reduces its B·S·d_model output once in forward (g) and its input's
 * gradient once in backward (f), the Book's 4BD + 4BD bytes per layer; a
 * full layer does so for attention and for the MLP, four in all; each
 * 2·(T−1)/T × B·S·d_model × 2 B on the ring, blocks/PP blocks on a device.
 * Pipeline parallelism: a stage sends its B·S·d_model activations forward
 * and their gradients backward (each TP rank the whole tensor: no
 * scatter/gather, Narayanan et al. §4.1), 2 × B·S·d_model × 2 B; the bubble
 * (PP−1)/(M+PP−1) of M micro-batches, GPipe's and 1F1B's alike (Narayanan
 * et al. §2.2: (p−1)/m of the ideal time). Each at the bandwidth of its
 * axis's link (links_of, crosses).
 */
static void comm_table(const struct plan_opts *o, bool notes, struct report *r)
{
	const struct plan_measured *m = o->measured;
	struct links l = links_of(o);
	struct table *t;
	int d = plan_dp_degree(o), mb = microbatches(o);
	double p1 = plan_shard_params(o), frac = (double)(d - 1) / d, shard = shard_count(o);
	bool dp_cross = crosses(o->tp, d, l.per_node), tp_cross = crosses(1, o->tp, l.per_node);
	bool pp_cross = crosses((double)o->tp * d, o->pp, l.per_node);
	static const struct { const char *what, *collective; double k; } rows[] = {
		{ "DP", "all-reduce of BF16 gradients", 2 },
		{ "ZeRO-1", "reduce-scatter BF16 gradients + all-gather BF16 weights (an all-reduce's bytes)", 2 },
		{ "ZeRO-2", "reduce-scatter BF16 gradients + all-gather BF16 weights (an all-reduce's bytes)", 2 },
		{ "ZeRO-3/FSDP", "all-gather BF16 weights (forward, backward) + reduce-scatter BF16 gradients", 3 },
	};
	static const struct { const char *what, *collective; } mrows[] = {
		{ "DP", "all-reduce of the gradients" },
		{ "ZeRO-1", "all-reduce of the gradients (as DP)" },
		{ "ZeRO-2", "all-reduce of the gradients (as DP)" },
		{ "ZeRO-3/FSDP", "all-gather the weights (forward, backward) + reduce-scatter the gradients" },
	};
	char title[160], f[384], link[96], why[160], a[64], c[64];
	const char *tp_what = o->ffn_only ? "1 all-reduce of the activations per block forward and 1 backward (Megatron)" :
			      "2 all-reduces of the activations per block forward and 2 backward (Megatron)";
	double bw;
	bool bs = o->batch && o->seq && o->d_model && o->blocks;

	snprintf(title, sizeof(title), "Communication per device per step over D = %d, T = %d, PP = %d (ring, %s)",
		 d, o->tp, o->pp, m ? "the bundle's bytes" : "BF16");
	t = report_add_table(r, "comm", title);
	table_add_column(t, "Parallelism", COL_STR, 0);
	table_add_column(t, "Collectives", COL_STR, 0);
	table_column_wrap(t);
	table_add_column(t, "GB per device", COL_FLOAT, 2);
	table_add_column(t, "Link", COL_STR, 0);
	table_add_column(t, "Time ms", COL_FLOAT, 2);
	table_add_column(t, "Share", COL_FLOAT, 4);
	table_column_hide_empty(t);
	table_add_column(t, "Formula", COL_STR, 0);
	table_column_wrap(t);
	table_add_column(t, "Assumes", COL_STR, 0);
	table_column_wrap(t);
	bw = axis_link(&l, dp_cross, true, link, sizeof(link));
	cross_why("T·D", o->tp, d, false, &l, why, sizeof(why));
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		double bytes;

		if (m && i < 3) {
			bytes = 2 * frac * (double)m->gradients / shard;
			snprintf(f, sizeof(f), "2·(D−1)/D × G' = 2 × %d/%d × %s B / (%d × %d)",
				 d - 1, d, num(a, sizeof(a), (double)m->gradients, 0), o->tp, o->pp);
		} else if (m) {
			bytes = frac * (2 * (double)m->weights + (double)m->gradients) / shard;
			snprintf(f, sizeof(f), "(D−1)/D × (2·W' + G') = %d/%d × (2 × %s + %s) B / (%d × %d)", d - 1, d,
				 num(a, sizeof(a), (double)m->weights, 0), num(c, sizeof(c), (double)m->gradients, 0),
				 o->tp, o->pp);
		} else {
			bytes = rows[i].k * frac * 2 * p1;
			snprintf(f, sizeof(f), "%g·(D−1)/D × 2 B × P' = %g × %d/%d × 2 B × %s",
				 rows[i].k, rows[i].k, d - 1, d, num(a, sizeof(a), p1, 0));
		}
		comm_row(t, m ? mrows[i].what : rows[i].what, m ? mrows[i].collective : rows[i].collective, bytes,
			 link, bw, -1, f, why);
	}
	bw = axis_link(&l, tp_cross, true, link, sizeof(link));
	cross_why("T", 1, o->tp, false, &l, why, sizeof(why));
	if (bs) {
		snprintf(f, sizeof(f), "blocks/PP × %d × 2·(T−1)/T × B·S·d_model × %d B = %d/%d × %d × 2 × %d/%d × %d × %d × %d × %d B",
			 tp_allreduces(o), act_size(o), o->blocks, o->pp, tp_allreduces(o), o->tp - 1, o->tp, o->batch,
			 o->seq, o->d_model, act_size(o));
		comm_row(t, "TP", tp_what, plan_tp_bytes(o), link, bw, -1, f, why);
	} else {
		comm_row(t, "TP", tp_what, -1, link, bw, -1, o->d_model && o->blocks ? "none counted: --batch and --seq give B and S" :
			 "none counted: --d-model, --blocks, --batch and --seq give them", NULL);
	}
	bw = axis_link(&l, pp_cross, true, link, sizeof(link));
	cross_why("T·D·PP", (double)o->tp * d, o->pp, false, &l, why, sizeof(why));
	if (bs) {
		snprintf(f, sizeof(f), "2 × B·S·d_model × %d B = 2 × %d × %d × %d × %d B%s", act_size(o), o->batch,
			 o->seq, o->d_model, act_size(o), o->pp > 1 ? "" : "; none at PP = 1");
		comm_row(t, "PP", "activations sent forward and their gradients backward at a stage boundary",
			 plan_pp_bytes(o), link, bw, -1, f, why);
	} else {
		comm_row(t, "PP", "activations sent forward and their gradients backward at a stage boundary",
			 -1, link, bw, -1, o->d_model && o->blocks ? "none counted: --batch and --seq give B and S" :
			 "none counted: --d-model, --blocks, --batch and --seq give them", NULL);
	}
	snprintf(f, sizeof(f), "(PP−1)/(M+PP−1) = (%d−1)/(%d+%d−1), M micro-batches (--microbatches)", o->pp, mb, o->pp);
	comm_row(t, "PP bubble", "idle share of a pipeline step (no communication)", -1, link, bw, plan_bubble(o), f,
		 "GPipe and 1F1B alike; no interleaving");
	if (!notes)
		return;
	report_note(r, "comm: bus-bandwidth lower bounds: each row's bytes at its axis's link, %s %s GB/s inside a node of "
		    "%d devices, %s %s GB/s across nodes (--link-bw, --inter-bw, --gpus-per-node); ranks ordered TP, "
		    "DP, PP (Megatron-LM's default); no overlap with compute, no latency", l.intra_label,
		    num(a, sizeof(a), l.intra / 1e9, 2), l.per_node, l.inter_label, num(c, sizeof(c), l.inter / 1e9, 2));
	if (m)
		report_note(r, "comm: from '%s': G and W are its gradient and weight bytes at its memory peak (in the dtypes "
			    "it holds them), X' = X/(T·PP); B = %d, S = %d, d_model = %d from its run configuration",
			    m->path ? m->path : "the bundle", o->batch, o->seq, o->d_model);
	if (m && !m->gradients && d > 1)
		report_note(r, "comm: '%s' holds no gradient bytes at its memory peak: the data-parallel rows count none of "
			    "them; `steptrace comm` says what the run's collectives moved", m->path ? m->path : "the bundle");
	if (o->pp > 1)
		report_note(r, "comm: the pipeline bubble is %.2f%% of a step at PP = %d, M = %d", 100 * plan_bubble(o),
			    o->pp, mb);
}

/* ⌊log2 n⌋: the most mesh axes (two devices each at least) a group of n devices spans. */
static int log2_floor(int n)
{
	int l = 0;

	while (n > 1) {
		n /= 2;
		l++;
	}
	return l;
}

/* One split's bounds, batches and memory, for mesh axes mx, my. */
static struct plan_split split_eval(const struct plan_opts *o, const struct links *l, double flops, double memory,
				    int x, int y, int mx, int my)
{
	struct plan_split s = { .x = x, .y = y, .mx = mx, .my = my };
	double n = (double)x * y, per_token = plan_activation_per_token(o);
	double state = state_bytes(o) / n + other_bytes(o);

	s.y_cross = crosses(1, y, l->per_node);
	s.x_cross = crosses(y, x, l->per_node);
	s.wx = s.x_cross ? l->inter : l->intra;
	s.wy = s.y_cross ? l->inter : l->intra;
	s.b = plan_compute_bound(o, x, y, mx, my, flops, s.wx, s.wy);
	if (!s.b.tp_ok) {
		s.per_device = s.per_device_summed = -1;
		s.memory = state;
		s.fits = false;
		return s;
	}
	s.per_device = ceil(s.b.fsdp_only);
	s.per_device_summed = ceil(s.b.summed);
	/* FSDP × TP shards every saved input over X (the batch) and Y (d_model and d_ff): b tokens' worth per device */
	s.memory = state + per_token * s.per_device;
	s.fits = s.memory <= memory && s.per_device * n <= 0x1p53;
	return s;
}

/* a better than b: the smaller overlapped global batch, then the smaller summed one, then fewer TP devices. */
static bool split_better(const struct plan_split *a, const struct plan_split *b, bool summed)
{
	double ka = summed ? a->per_device_summed : a->per_device, kb = summed ? b->per_device_summed : b->per_device;
	double la = summed ? a->per_device : a->per_device_summed, lb = summed ? b->per_device : b->per_device_summed;

	if (ka < 0 || kb < 0)
		return kb < 0 && ka >= 0;
	if (ka != kb)
		return ka < kb;
	if (la != lb)
		return la < lb;
	return a->y < b->y;
}

int plan_devices_search(const struct plan_opts *o, struct plan_split *out, int max, int *n, int *best)
{
	const struct plan_chip_spec *chip = plan_chip_spec(o->chip);
	struct links l = links_of(o);
	int devices = o->devices, axes = o->mesh_axes > 0 ? o->mesh_axes : chip->mesh_axes;
	double flops = o->flops > 0 ? o->flops : chip->flops;
	double memory = o->memory ? (double)o->memory : (double)chip->memory;

	*n = 0;
	*best = -1;
	for (int y = 1; y <= devices; y++) {
		struct plan_split s;
		bool have = false;
		int x;

		if (devices % y)
			continue;
		x = devices / y;
		if (*n >= max)
			return error("plan: more splits of %d devices than %d", devices, max);
		if (!axes) {
			/* a switched node: one link per device, no torus axes to split */
			s = split_eval(o, &l, flops, memory, x, y, x > 1, y > 1);
			have = true;
		} else {
			int mx_max = x > 1 ? log2_floor(x) : 0, my_max = y > 1 ? log2_floor(y) : 0;

			for (int mx = x > 1 ? 1 : 0; mx <= mx_max && mx <= axes; mx++) {
				for (int my = y > 1 ? 1 : 0; my <= my_max && mx + my <= axes; my++) {
					struct plan_split c;

					/* more axes only lower the bound: the most for a lone axis */
					if ((x == 1 && my != (my_max < axes ? my_max : axes)) ||
					    (y == 1 && mx != (mx_max < axes ? mx_max : axes)))
						continue;
					c = split_eval(o, &l, flops, memory, x, y, mx, my);
					if (!have || split_better(&c, &s, false)) {
						s = c;
						have = true;
					}
				}
			}
		}
		if (!have)
			continue;
		out[*n] = s;
		if (s.fits && (*best < 0 || split_better(&s, &out[*best], false)))
			*best = *n;
		(*n)++;
	}
	return 0;
}

static void split_links(const struct plan_split *s, const struct links *l, char *buf, size_t len)
{
	const char *xl = s->x_cross ? l->inter_label : l->intra_label, *yl = s->y_cross ? l->inter_label : l->intra_label;

	if (s->x > 1 && s->y > 1)
		snprintf(buf, len, "X %s, Y %s", xl, yl);
	else if (s->x > 1)
		snprintf(buf, len, "X %s", xl);
	else if (s->y > 1)
		snprintf(buf, len, "Y %s", yl);
	else
		snprintf(buf, len, "none");
}

/* (d) */
static void devices_table(const struct plan_opts *o, const char *label, double memory, bool notes, struct report *r)
{
	struct links l = links_of(o);
	int max = 2 * (int)sqrt((double)o->devices) + 2, n, best, best_s = -1, k = plan_ffn_matrices(o), axes;
	struct plan_split *s = calloc((size_t)max, sizeof(*s));
	struct table *t;
	char title[160], lk[128], f[512], a[64], b[64], c[64], d[64];

	snprintf(title, sizeof(title), "(d) The smallest compute-bound batch on N = %d devices: every FSDP × TP split", o->devices);
	t = report_add_table(r, "devices", title);
	table_add_column(t, "X (FSDP)", COL_INT, 0);
	table_add_column(t, "Y (TP)", COL_INT, 0);
	table_add_column(t, "M_X", COL_INT, 0);
	table_add_column(t, "M_Y", COL_INT, 0);
	table_add_column(t, "Links", COL_STR, 0);
	table_add_column(t, "Tokens/device (overlapped)", COL_INT, 0);
	table_add_column(t, "Batch (overlapped)", COL_INT, 0);
	table_add_column(t, "Tokens/device (not overlapped)", COL_INT, 0);
	table_add_column(t, "Batch (not overlapped)", COL_INT, 0);
	table_add_column(t, "Memory GB", COL_FLOAT, 2);
	table_add_column(t, "Fits", COL_STR, 0);
	table_add_column(t, "Smallest", COL_STR, 0);
	if (!s || plan_devices_search(o, s, max, &n, &best) < 0) {
		free(s);
		return;
	}
	for (int i = 0; i < n; i++) {
		bool fits_s = s[i].per_device_summed >= 0 &&
			      s[i].memory + plan_activation_per_token(o) * (s[i].per_device_summed - s[i].per_device) <= memory &&
			      s[i].per_device_summed * o->devices <= 0x1p53;

		if (fits_s && (best_s < 0 || split_better(&s[i], &s[best_s], true)))
			best_s = i;
	}
	for (int i = 0; i < n; i++) {
		const struct plan_split *p = &s[i];

		table_row(t);
		table_int(t, p->x);
		table_int(t, p->y);
		table_int(t, p->mx);
		table_int(t, p->my);
		split_links(p, &l, lk, sizeof(lk));
		table_str(t, lk);
		if (p->per_device < 0) {
			for (int j = 0; j < 4; j++)
				table_empty(t);
		} else {
			table_int(t, (int64_t)p->per_device);
			table_int(t, (int64_t)(p->per_device * o->devices));
			table_int(t, (int64_t)p->per_device_summed);
			table_int(t, (int64_t)(p->per_device_summed * o->devices));
		}
		table_float(t, p->memory / GB);
		table_str(t, p->per_device < 0 ? "TP-bound" : p->fits ? "yes" : "no");
		snprintf(lk, sizeof(lk), "%s%s%s", i == best ? "overlapped" : "", i == best && i == best_s ? ", " : "",
			 i == best_s ? "not overlapped" : "");
		cell_opt(t, lk);
	}
	if (!notes) {
		free(s);
		return;
	}
	if (best >= 0) {
		const struct plan_split *p = &s[best];

		if (p->x == 1)
			snprintf(f, sizeof(f), "TP alone over Y = %d (M_Y = %d): compute-bound at any batch, 2·α_Y·Y/(k·M_Y·F) = "
				 "%s < 1", p->y, p->my, num(a, sizeof(a), p->b.tp_share, 4));
		else
			snprintf(f, sizeof(f), "%s tokens (%s per device) at FSDP X = %d (M_X = %d) × TP Y = %d (M_Y = %d): "
				 "N × ⌈α_X/(M_X·Y)⌉ = %d × ⌈%s / (%d × %d)⌉, with Y < k·M_Y·F/(2·α_Y) = %s",
				 num(a, sizeof(a), p->per_device * o->devices, 0), num(b, sizeof(b), p->per_device, 0), p->x,
				 p->mx, p->y, p->my, o->devices, num(c, sizeof(c), p->b.fsdp_only * p->mx * p->y, 2), p->mx,
				 p->y, num(d, sizeof(d), p->b.tp_max, 2));
		report_note(r, "(d) the smallest compute-bound global batch on %d %s, the collectives overlapped: %s",
			    o->devices, label, f);
	} else {
		report_note(r, "(d) no split of %d %s is compute-bound and fits", o->devices, label);
	}
	if (best_s >= 0) {
		const struct plan_split *p = &s[best_s];

		report_note(r, "(d) not overlapped: %s tokens (%s per device) at X = %d (M_X = %d) × Y = %d (M_Y = %d): "
			    "N × ⌈[α_X/(M_X·Y)] / [1 − 2·α_Y·Y/(k·M_Y·F)]⌉ = %d × ⌈%s / (1 − %s)⌉",
			    num(a, sizeof(a), p->per_device_summed * o->devices, 0),
			    num(b, sizeof(b), p->per_device_summed, 0), p->x, p->mx, p->y, p->my, o->devices,
			    num(c, sizeof(c), p->b.fsdp_only, 2), num(d, sizeof(d), p->b.tp_share, 4));
	}
	axes = o->mesh_axes > 0 ? o->mesh_axes : plan_chip_spec(o->chip)->mesh_axes;
	if (axes)
		snprintf(f, sizeof(f), "each with its best mesh axes (M_X + M_Y ≤ %d, an axis of n devices spanning at "
			 "most log2 n)", axes);
	else
		snprintf(f, sizeof(f), "M_X = M_Y = 1 (switched links, no torus axes)");
	report_note(r, "(d) every Y dividing N, %s; memory per device %s/N%s; X crosses %ss when X·Y > %d per %s, "
		    "Y when Y > %d; k = %d", f, o->measured ? "(W + G + O)" : "16 B × P",
		    plan_activation_per_token(o) > 0 ? " + the batch's activations, sharded over N" : "",
		    l.node, l.per_node, l.node, l.per_node, k);
	free(s);
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
	/* a PyTorch recording: what the optimizer holds, counted whether or not allocations were */
	m->params = replay_parameters(&rp->run);
	m->params_from_groups = !c->parameters && m->params;
	if (!m->params) {
		m->params = m->weights / 4;
		m->params_from_bytes = true;
	}
	m->builtin = rp->run.has_config && c->model && *c->model && c->d_ff > 0;
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
		return error("'%s' records no parameter count and no parameter bytes: plan takes P from the bundle",
			     rp->path ? rp->path : "the bundle");
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
	row_int(t, "Parameters P", (int64_t)m->params, "", f, NULL);
	row_float(t, "Weights W", (double)m->weights / GB, "GB", "category parameter at the memory peak", NULL);
	row_float(t, "Gradients G", (double)m->gradients / GB, "GB", "category gradient at the memory peak", NULL);
	row_float(t, "Optimizer state O", (double)m->optimizer / GB, "GB", "category optimizer at the memory peak", NULL);
	row_float(t, "Activations A", (double)m->activations / GB, "GB", "category activation at the memory peak", NULL);
	row_float(t, "Other R", (double)m->other / GB, "GB",
		  "temporary, workspace, input and unknown at the memory peak", NULL);
	snprintf(f, sizeof(f), "W + G + O + A + R, the %s view's (steptrace memory)", m->view);
	row_float(t, "Memory peak", (double)m->peak / GB, "GB", f, NULL);
	snprintf(f, sizeof(f), "(W + G + O) / P = %s B / %s", num(a, sizeof(a),
		 (double)m->weights + (double)m->gradients + (double)m->optimizer, 0), num(b, sizeof(b), (double)m->params, 0));
	row_float(t, "State bytes per parameter", m->params ?
		  ((double)m->weights + (double)m->gradients + (double)m->optimizer) / (double)m->params : 0, "B", f, NULL);
	row_float(t, "FLOPs per step", m->flops / 1e9, "GFLOP", "the ops' FLOPs per measured step (steptrace flops)", NULL);
	row_float(t, "GPU time per step", m->kernel_ns / 1e6, "ms",
		  "their kernels' time per measured step, communication left out", NULL);
	if (m->achieved > 0) {
		snprintf(f, sizeof(f), "FLOPs / GPU time = %s GFLOP / %s ms", num(a, sizeof(a), m->flops / 1e9, 2),
			 num(b, sizeof(b), m->kernel_ns / 1e6, 3));
		row_float(t, "Achieved", m->achieved / 1e12, "TFLOP/s", f, NULL);
	} else {
		row_text(t, "Achieved", NULL, "TFLOP/s", "none: no ops' FLOPs or no kernel time", NULL);
	}
	if (m->peak_flops > 0)
		row_float(t, "Device peak", m->peak_flops / 1e12, "TFLOP/s",
			  "the bundle's header, at the run's precision", NULL);
	snprintf(f, sizeof(f), "B × S = %d × %d, d_model %d, d_ff %d, blocks %d (run configuration)", o->batch, o->seq,
		 o->d_model, o->d_ff, o->blocks);
	row_int(t, "Tokens per step", (int64_t)o->batch * o->seq, "tokens", f, NULL);
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
	double flops = o->flops > 0 ? o->flops : chip->flops;
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
	compute_table(o, flops, memory, notes_for(o, "compute"), r);
	parallel_table(o, label, memory, notes_for(o, "parallel"), r);
	comm_table(o, notes_for(o, "comm"), r);
	if (o->devices)
		devices_table(o, label, memory, notes_for(o, "devices"), r);
	return 0;
}
