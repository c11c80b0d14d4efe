/*
 * gen_model.c: a transformer-shaped synthetic bundle for the roofline chart
 * and the flops command: the CS336 block's ops (forward and backward per
 * layer, the head, the loss, AdamW) with analytic FLOPs and bytes, and one
 * kernel per op whose duration is the op's roofline time divided by a fixed
 * efficiency per kind, so every number is known in advance.
 *
 *   gen_model [--precision fp32|tf32|bf16] [--layers N] [--no-peaks] -o x.stb
 *
 * Shape: d_model 768, d_ff 3072, 12 heads, batch 4, ctx 256, vocab 10000;
 * H100 datasheet peaks (fp32 67, tf32 494.7, bf16/fp16 989.4 TFLOP/s,
 * 3.35 TB/s). One warm-up step (kernels twice as long) and two measured ones.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/builder.h"

struct gen {
	struct builder b;
	uint64_t t;
	int adt, adt_size;
	bool tf32, peaks;
	const char *prec;
};

struct opc {
	const char *path, *phase;
	uint64_t flops, bytes;
	bool matmul;
	double eff;                 /* share of the roofline reached */
	uint32_t id;
};

static const double P_FP32 = 67e12, P_TF32 = 494.7e12, P_BF16 = 989.4e12, BW = 3.35e12;

/* "step/forward/layer.3/attn/softmax" -> "attn/softmax" */
static const char *kind_of(const char *path, char *buf, size_t len)
{
	const char *p = path + 5;                     /* past "step/" */
	p = strchr(p, '/') ? strchr(p, '/') + 1 : p;
	if (!strncmp(p, "layer.", 6) && strchr(p, '/'))
		p = strchr(p, '/') + 1;
	snprintf(buf, len, "%s", p);
	return buf;
}

/* Two inputs and one output, in the run's precision for matrix products, f32 otherwise. */
static void reg(struct gen *g, struct opc *o)
{
	uint8_t dt = (uint8_t)(o->matmul ? g->adt : ST_DT_F32);
	char kind[128];

	o->id = builder_op(&g->b, &(struct builder_op){ .path = o->path,
			   .kind = kind_of(o->path, kind, sizeof(kind)), .phase = o->phase,
			   .flops = o->flops, .bytes = o->bytes, .inputs = { dt, dt }, .outputs = { dt } });
}

static double peak_for(const struct gen *g, const struct opc *o)
{
	if (!o->matmul)
		return P_FP32;
	return g->adt == ST_DT_BF16 ? P_BF16 : g->tf32 ? P_TF32 : P_FP32;
}

static const char *kernel_name(const struct gen *g, const struct opc *o)
{
	const char *leaf = strrchr(o->path, '/') + 1;
	static char buf[128];

	if (o->matmul)
		return g->adt == ST_DT_BF16 ? "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64"
		       : g->tf32 ? "sm90_xmma_gemm_f32f32_tf32f32_f32_tn_n_tilesize128x128x32"
				 : "ampere_sgemm_128x64_tn";
	snprintf(buf, sizeof(buf), "%s_%s_kernel", leaf, strcmp(o->phase, "backward") ? "fwd" : "bwd");
	return buf;
}

static void run_op(struct gen *g, const struct opc *o, double slow)
{
	double t_c = (double)o->flops / peak_for(g, o), t_m = (double)o->bytes / BW;
	uint64_t dur = (uint64_t)((t_c > t_m ? t_c : t_m) / o->eff * 1e9 * slow) + 1;
	uint64_t start = g->t + 5000;

	builder_launch(&g->b, kernel_name(g, o), 7, o->id, g->t, g->t + 3000, start, start + dur);
	g->t = start + dur + 1000;
}

#define MAX_OPS 4096

int main(int argc, char **argv)
{
	struct gen g = { .prec = "fp32", .peaks = true };
	static struct opc ops[MAX_OPS];
	const char *out = NULL;
	int layers = 4, n = 0;
	uint64_t B = 4, T = 256, D = 768, F = 3072, H = 12, V = 10000;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--precision") && i + 1 < argc)
			g.prec = argv[++i];
		else if (!strcmp(argv[i], "--layers") && i + 1 < argc)
			layers = atoi(argv[++i]);
		else if (!strcmp(argv[i], "--no-peaks"))
			g.peaks = false;
		else if (!strcmp(argv[i], "-o") && i + 1 < argc)
			out = argv[++i];
		else
			out = NULL, i = argc;
	}
	if (!out || layers < 1 || layers > 64) {
		fprintf(stderr, "usage: gen_model [--precision fp32|tf32|bf16] [--layers N] [--no-peaks] -o x.stb\n");
		return 2;
	}
	g.adt = strcmp(g.prec, "bf16") ? ST_DT_F32 : ST_DT_BF16;
	g.adt_size = g.adt == ST_DT_BF16 ? 2 : 4;
	g.tf32 = !strcmp(g.prec, "tf32");

	uint64_t N = B * T, a = (uint64_t)g.adt_size, bhtt = B * H * T * T;
	char path[160];
#define OP(ph, p, fl, by, mm, e) do { \
		snprintf(path, sizeof(path), "step/%s/%s", ph, p); \
		ops[n].path = strdup(path); ops[n].phase = ph; ops[n].flops = (fl); ops[n].bytes = (by); \
		ops[n].matmul = (mm); ops[n].eff = (e); n++; \
	} while (0)
#define LAYER_OPS(ph, l, m) do { \
		char lp[64]; \
		snprintf(lp, sizeof(lp), "layer.%d/ln1", l); OP(ph, lp, 4 * N * D * m, N * D * 12, false, 0.6); \
		snprintf(lp, sizeof(lp), "layer.%d/attn/q_proj", l); OP(ph, lp, 2 * N * D * D * m, (2 * N * D + D * D) * a * m, true, 0.55); \
		snprintf(lp, sizeof(lp), "layer.%d/attn/k_proj", l); OP(ph, lp, 2 * N * D * D * m, (2 * N * D + D * D) * a * m, true, 0.55); \
		snprintf(lp, sizeof(lp), "layer.%d/attn/v_proj", l); OP(ph, lp, 2 * N * D * D * m, (2 * N * D + D * D) * a * m, true, 0.55); \
		snprintf(lp, sizeof(lp), "layer.%d/attn/rope", l); OP(ph, lp, 6 * N * D, 4 * N * D * a, false, 0.5); \
		snprintf(lp, sizeof(lp), "layer.%d/attn/scores", l); OP(ph, lp, 2 * N * T * D * m, (2 * N * D + bhtt) * a * m, true, 0.35); \
		snprintf(lp, sizeof(lp), "layer.%d/attn/softmax", l); OP(ph, lp, 5 * bhtt, 2 * bhtt * a * m, false, 0.25); \
		snprintf(lp, sizeof(lp), "layer.%d/attn/av", l); OP(ph, lp, 2 * N * T * D * m, (2 * N * D + bhtt) * a * m, true, 0.35); \
		snprintf(lp, sizeof(lp), "layer.%d/attn/output_proj", l); OP(ph, lp, 2 * N * D * D * m, (2 * N * D + D * D) * a * m, true, 0.55); \
		snprintf(lp, sizeof(lp), "layer.%d/ln2", l); OP(ph, lp, 4 * N * D * m, N * D * 12, false, 0.6); \
		snprintf(lp, sizeof(lp), "layer.%d/ffn/w1", l); OP(ph, lp, 2 * N * D * F * m, (N * D + D * F + N * F) * a * m, true, 0.7); \
		snprintf(lp, sizeof(lp), "layer.%d/ffn/w3", l); OP(ph, lp, 2 * N * D * F * m, (N * D + D * F + N * F) * a * m, true, 0.7); \
		snprintf(lp, sizeof(lp), "layer.%d/ffn/swiglu", l); OP(ph, lp, 5 * N * F * m, 3 * N * F * a * m, false, 0.7); \
		snprintf(lp, sizeof(lp), "layer.%d/ffn/w2", l); OP(ph, lp, 2 * N * D * F * m, (N * D + D * F + N * F) * a * m, true, 0.7); \
	} while (0)
	OP("forward", "embedding", 0, N * D * 4 + N * 4, false, 0.5);
	for (int l = 0; l < layers; l++)
		LAYER_OPS("forward", l, 1);
	OP("forward", "ln_final", 4 * N * D, N * D * 12, false, 0.6);
	OP("forward", "lm_head", 2 * N * D * V, (N * D + D * V + N * V) * a, true, 0.7);
	OP("forward", "cross_entropy", 5 * N * V, N * V * 4, false, 0.5);
	OP("backward", "lm_head", 4 * N * D * V, 2 * (N * D + D * V + N * V) * a, true, 0.7);
	for (int l = layers - 1; l >= 0; l--)
		LAYER_OPS("backward", l, 2);
	uint64_t params = 2 * V * D + (uint64_t)layers * (4 * D * D + 3 * D * F + 2 * D) + D;
	OP("optimizer", "adamw", 12 * params, 16 * params + 12 * params, false, 0.8);

	builder_init(&g.b);
	builder_small_model(&g.b, g.prec);   /* the shape above, but for layers and ctx */
	g.b.config.model = "custom";
	g.b.config.layers = (uint32_t)layers;
	g.b.config.ctx = (uint32_t)T;
	g.b.device.name = "NVIDIA H100 80GB HBM3";
	if (g.peaks)
		builder_peaks(&g.b, P_FP32, P_TF32, P_BF16, BW);
	if (builder_open(&g.b, out) < 0)
		return 1;
	for (int i = 0; i < n; i++)
		reg(&g, &ops[i]);
	g.t = 1000000;
	for (uint32_t s = 0; s < 3; s++) {
		uint64_t start = g.t;
		for (int i = 0; i < n; i++)
			run_op(&g, &ops[i], s == 0 ? 2.0 : 1.0);
		g.t += 10000;
		builder_step(&g.b, s, s == 0, start, g.t);
		g.t += 100000;
	}
	for (int i = 0; i < n; i++)
		free((char *)ops[i].path);
	if (g.b.failed) {
		builder_abort(&g.b);
		return 1;
	}
	return builder_close(&g.b, "ok") < 0 ? 1 : 0;
}
