/*
 * gen_step.c: a synthetic bundle that looks like a recorded training step of
 * the CS336 Transformer ("small" sizes, 12 layers, batch 4, ctx 128), for
 * the HTML report's tests and its screenshot: ops with analytic FLOPs and
 * bytes, kernels timed from them against H100-like peaks, NVTX ranges
 * step > forward|backward|optimizer > layer.N > attn|ffn > op, launch calls
 * on the host running ahead of the GPU, and the model allocator's events
 * (parameters, gradients, AdamW state, activations saved for backward,
 * temporaries, a cuBLAS workspace). One warm-up and three measured steps;
 * --truncated stops after the second measured step without a footer, as a
 * recording that died leaves the bundle.
 *
 *   gen_step [--precision fp32|bf16] [--truncated] -o x.stb
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/builder.h"

#define HOST 4242
#define STREAM 7
#define B 4
#define T 128
#define D 768
#define DFF 3072
#define H 12
#define L 12
#define V 10000
#define N (B * T)

static struct builder bundle;
static bool bf16;
static uint64_t cpu_t, gpu_t;
static unsigned rng = 12345;

static double jitter(void)
{
	rng = rng * 1103515245u + 12345u;
	return 0.97 + 0.06 * (double)((rng >> 8) & 0xffff) / 65535.0;
}

/* Registers an op; returns its id. */
static uint32_t op(const char *phase, const char *path, const char *name, const char *kind,
		   double flops, double bytes, bool matmul)
{
	uint8_t dt = bf16 && matmul ? ST_DT_BF16 : ST_DT_F32;
	char full[8 + 256];   /* "step/" and a path of register_ops */

	snprintf(full, sizeof(full), "step/%s", path);
	return builder_op(&bundle, &(struct builder_op){ .name = name, .path = full, .kind = kind, .phase = phase,
			  .flops = (uint64_t)flops, .bytes = (uint64_t)bytes, .inputs = { dt, dt },
			  .outputs = { dt } });
}

/* A launch call on the host and its kernel on the GPU, timed from FLOPs and bytes. */
static void launch(const char *kernel, uint32_t op_id, double flops, double bytes, bool matmul)
{
	static const struct builder_geometry gemm = { .grid = { 96, 4, 1 }, .block = { 384, 1, 1 },
						      .registers = 168, .dynamic_smem = 197632 };
	static const struct builder_geometry other = { .grid = { 512, 1, 1 }, .block = { 256, 1, 1 },
						       .registers = 32 };
	double peak = matmul ? (bf16 ? 989e12 * 0.55 : 67e12 * 0.7) : 67e12 * 0.5;
	double ns = fmax(flops / peak, bytes / (3.35e12 * 0.6)) * 1e9 * jitter() + 2500;
	uint64_t start = gpu_t > cpu_t + 3000 ? gpu_t : cpu_t + 3000;

	bundle.geometry = matmul ? gemm : other;
	builder_launch(&bundle, kernel, STREAM, op_id, cpu_t, cpu_t + 2600, start, start + (uint64_t)ns);
	gpu_t = start + (uint64_t)ns + 900;
	cpu_t += 4200;
}

/* ---- the model's ops ------------------------------------------------------ */

struct opdef {
	const char *part, *name;
	double flops, bytes;   /* forward */
	bool matmul;
};

static struct opdef ops[16];
static int n_ops;

static void define_ops(void)
{
	double es = bf16 ? 2 : 4, act = (double)N * D;
#define OP(p, n, f, b, m) (ops[n_ops++] = (struct opdef){ p, n, f, b, m })
	OP("attn", "rmsnorm", 4 * act, 2 * act * 4, false);
	OP("attn", "q_proj", 2.0 * N * D * D, (2 * act + (double)D * D) * es, true);
	OP("attn", "k_proj", 2.0 * N * D * D, (2 * act + (double)D * D) * es, true);
	OP("attn", "v_proj", 2.0 * N * D * D, (2 * act + (double)D * D) * es, true);
	OP("attn", "rope", 6 * act, 4 * act * es, false);
	OP("attn", "scores", 2.0 * N * T * D, (2 * act * es + 4.0 * B * H * T * T), true);
	OP("attn", "softmax", 5.0 * B * H * T * T, 2 * 4.0 * B * H * T * T, false);
	OP("attn", "av", 2.0 * N * T * D, (4.0 * B * H * T * T + 2 * act * es), true);
	OP("attn", "output_proj", 2.0 * N * D * D, (2 * act + (double)D * D) * es, true);
	OP("attn", "residual", act, 3 * act * 4, false);
	OP("ffn", "rmsnorm", 4 * act, 2 * act * 4, false);
	OP("ffn", "w1", 2.0 * N * D * DFF, (act + (double)N * DFF + (double)D * DFF) * es, true);
	OP("ffn", "w3", 2.0 * N * D * DFF, (act + (double)N * DFF + (double)D * DFF) * es, true);
	OP("ffn", "silu_mul", 4.0 * N * DFF, 3.0 * N * DFF * es, false);
	OP("ffn", "w2", 2.0 * N * D * DFF, (act + (double)N * DFF + (double)D * DFF) * es, true);
	OP("ffn", "residual", act, 3 * act * 4, false);
#undef OP
}

static const char *kernel_for(const struct opdef *o, bool backward, int which)
{
	static char buf[256];

	if (o->matmul) {
		if (bf16)
			return which ? "sm90_xmma_gemm_bf16bf16_bf16f32_f32_nt_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas"
				     : "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64_warpgroupsize1x1x1_execute_segment_k_off_kernel__5x_cublas";
		return which ? "ampere_sgemm_128x64_nt" : backward ? "ampere_sgemm_64x64_nn" : "ampere_sgemm_128x64_tn";
	}
	snprintf(buf, sizeof(buf), "%s_%s_kernel", strcmp(o->name, "residual") == 0 ? "residual_add" : o->name,
		 backward ? "backward" : "forward");
	return buf;
}

/* op ids per (phase, layer, op) */
static uint32_t op_ids[2][L][16], head_ids[4], adam_id, cast_id;

static void register_ops(void)
{
	char path[256], kind[128];

	define_ops();
	for (int ph = 0; ph < 2; ph++)
		for (int l = 0; l < L; l++)
			for (int k = 0; k < n_ops; k++) {
				const char *phase = ph ? "backward" : "forward";
				snprintf(path, sizeof(path), "%s/layer.%d/%s/%s", phase, l, ops[k].part, ops[k].name);
				snprintf(kind, sizeof(kind), "%s/%s", ops[k].part, ops[k].name);
				op_ids[ph][l][k] = op(phase, path, ops[k].name, kind, ops[k].flops * (ph ? 2 : 1),
						      ops[k].bytes * (ph ? 2 : 1), ops[k].matmul);
			}
	head_ids[0] = op("forward", "forward/lm_head", "lm_head", "lm_head", 2.0 * N * D * V,
			 ((double)N * D + (double)D * V + (double)N * V) * (bf16 ? 2 : 4), true);
	head_ids[1] = op("forward", "forward/loss", "cross_entropy", "loss", 5.0 * N * V, 2.0 * N * V * 4, false);
	head_ids[2] = op("backward", "backward/loss", "cross_entropy", "loss", 3.0 * N * V, 2.0 * N * V * 4, false);
	head_ids[3] = op("backward", "backward/lm_head", "lm_head", "lm_head", 4.0 * N * D * V,
			 2 * ((double)N * D + (double)D * V + (double)N * V) * (bf16 ? 2 : 4), true);
	adam_id = op("optimizer", "optimizer/adamw", "adamw", "adamw", 12.0 * 128625408, 16.0 * 128625408, false);
	cast_id = bf16 ? op("forward", "forward/cast_weights", "cast", "cast", 0, 6.0 * 85e6, false) : 0;
}

/* ---- memory ------------------------------------------------------------------ */

#define PARAMS 128625408ull
static uint64_t next_addr = 0x7f0000000000ull;

/* The model allocator takes 300 ns of host time per call. */
static uint64_t alloc(uint64_t size, int cat, uint32_t op_id)
{
	uint64_t a = next_addr;

	next_addr += (size + 0xfffff) & ~0xfffffull;
	builder_alloc(&bundle, cpu_t, a, size, cat, op_id);
	cpu_t += 300;
	return a;
}

static void release(uint64_t address)
{
	builder_free(&bundle, cpu_t, address, 0, 0, 0);
	cpu_t += 300;
}

static uint64_t saved[L][16], cast_buf;

/* ---- one step ------------------------------------------------------------------ */

static void step(uint32_t index, bool warmup, bool first)
{
	uint64_t s0 = cpu_t;
	double es = bf16 ? 2 : 4;
	char name[32];

	builder_push(&bundle, "step", cpu_t);
	builder_push(&bundle, "forward", cpu_t);
	uint64_t tokens = alloc((uint64_t)N * 8 * 2, ST_MEM_INPUT, 0);
	if (bf16) {
		builder_push(&bundle, "cast_weights", cpu_t);
		cast_buf = alloc(PARAMS * 2, ST_MEM_TEMPORARY, cast_id);
		launch("cast_f32_to_bf16_kernel", cast_id, 0, 6.0 * PARAMS, false);
		builder_pop(&bundle, cpu_t);
	}
	for (int l = 0; l < L; l++) {
		snprintf(name, sizeof(name), "layer.%d", l);
		builder_push(&bundle, name, cpu_t);
		for (int part = 0; part < 2; part++) {
			builder_push(&bundle, part ? "ffn" : "attn", cpu_t);
			for (int k = 0; k < n_ops; k++) {
				if (strcmp(ops[k].part, part ? "ffn" : "attn") != 0)
					continue;
				builder_push(&bundle, ops[k].name, cpu_t);
				double out = strcmp(ops[k].name, "scores") == 0 || strcmp(ops[k].name, "softmax") == 0
					? 4.0 * B * H * T * T : strncmp(ops[k].name, "w", 1) == 0 && ops[k].name[1] != '2'
					? (double)N * DFF * es : (double)N * D * es;
				saved[l][k] = alloc((uint64_t)out, ST_MEM_ACTIVATION, op_ids[0][l][k]);
				launch(kernel_for(&ops[k], false, 0), op_ids[0][l][k], ops[k].flops, ops[k].bytes,
				       ops[k].matmul);
				builder_pop(&bundle, cpu_t);
			}
			builder_pop(&bundle, cpu_t);
		}
		builder_pop(&bundle, cpu_t);
	}
	builder_push(&bundle, "lm_head", cpu_t);
	uint64_t logits = alloc((uint64_t)N * V * 4, ST_MEM_ACTIVATION, head_ids[0]);
	launch(bf16 ? kernel_for(&ops[1], false, 0) : "ampere_sgemm_128x64_tn", head_ids[0],
	       2.0 * N * D * V, ((double)N * D + (double)D * V + (double)N * V) * es, true);
	builder_pop(&bundle, cpu_t);
	builder_pop(&bundle, cpu_t);   /* forward */
	builder_push(&bundle, "loss", cpu_t);
	launch("cross_entropy_forward_kernel", head_ids[1], 5.0 * N * V, 2.0 * N * V * 4, false);
	builder_pop(&bundle, cpu_t);

	builder_push(&bundle, "backward", cpu_t);
	if (first)
		for (int i = 0; i < 4; i++)
			alloc(PARAMS, ST_MEM_GRADIENT, 0);   /* four gradient buckets */
	uint64_t dlogits = alloc((uint64_t)N * V * 4, ST_MEM_TEMPORARY, head_ids[2]);
	builder_push(&bundle, "lm_head", cpu_t);
	launch("cross_entropy_backward_kernel", head_ids[2], 3.0 * N * V, 2.0 * N * V * 4, false);
	launch(bf16 ? kernel_for(&ops[1], true, 0) : "ampere_sgemm_64x64_nn", head_ids[3],
	       2.0 * N * D * V, ((double)N * D + (double)D * V + (double)N * V) * es, true);
	launch(bf16 ? kernel_for(&ops[1], true, 1) : "ampere_sgemm_128x64_nt", head_ids[3],
	       2.0 * N * D * V, ((double)N * D + (double)D * V + (double)N * V) * es, true);
	release(dlogits);
	release(logits);
	builder_pop(&bundle, cpu_t);
	for (int l = L - 1; l >= 0; l--) {
		snprintf(name, sizeof(name), "layer.%d", l);
		builder_push(&bundle, name, cpu_t);
		for (int part = 1; part >= 0; part--) {
			builder_push(&bundle, part ? "ffn" : "attn", cpu_t);
			for (int k = n_ops - 1; k >= 0; k--) {
				if (strcmp(ops[k].part, part ? "ffn" : "attn") != 0)
					continue;
				uint64_t tmp = 0;
				builder_push(&bundle, ops[k].name, cpu_t);
				if (strcmp(ops[k].name, "softmax") == 0)
					tmp = alloc(4ull * B * H * T * T, ST_MEM_TEMPORARY, op_ids[1][l][k]);
				launch(kernel_for(&ops[k], true, 0), op_ids[1][l][k], ops[k].flops, ops[k].bytes,
				       ops[k].matmul);
				if (ops[k].matmul)
					launch(kernel_for(&ops[k], true, 1), op_ids[1][l][k], ops[k].flops, ops[k].bytes,
					       true);
				if (tmp)
					release(tmp);
				release(saved[l][k]);
				builder_pop(&bundle, cpu_t);
			}
			builder_pop(&bundle, cpu_t);
		}
		builder_pop(&bundle, cpu_t);
	}
	if (bf16)
		release(cast_buf);
	builder_pop(&bundle, cpu_t);   /* backward */

	builder_push(&bundle, "optimizer", cpu_t);
	if (first) {
		alloc(PARAMS * 4, ST_MEM_OPTIMIZER, adam_id);
		alloc(PARAMS * 4, ST_MEM_OPTIMIZER, adam_id);
	}
	builder_push(&bundle, "adamw", cpu_t);
	launch("adamw_kernel", adam_id, 12.0 * PARAMS, 16.0 * PARAMS, false);
	builder_pop(&bundle, cpu_t);
	builder_pop(&bundle, cpu_t);   /* optimizer */
	release(tokens);

	/* synchronise: the step ends when the GPU does */
	cpu_t = (gpu_t > cpu_t ? gpu_t : cpu_t) + 6000;
	builder_pop(&bundle, cpu_t);   /* step */
	builder_step(&bundle, index, warmup, s0, cpu_t);
	cpu_t += 50000;
	gpu_t = cpu_t;
}

int main(int argc, char **argv)
{
	Steptrace__RunConfig *cfg = &bundle.config;
	Steptrace__DeviceInfo *dev = &bundle.device;
	const char *out = NULL;
	bool truncated = false;
	char cmd[256];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc)
			bf16 = strcmp(argv[++i], "bf16") == 0;
		else if (strcmp(argv[i], "--truncated") == 0)
			truncated = true;
		else
			out = NULL, i = argc;
	}
	if (!out) {
		fprintf(stderr, "usage: gen_step [--precision fp32|bf16] [--truncated] -o FILE\n");
		return 2;
	}
	builder_init(&bundle);
	builder_small_model(&bundle, bf16 ? "bf16" : "fp32");   /* D, DFF, L, H, V, B and T above */
	cfg->warmup_steps = 1, cfg->measured_steps = 3;
	cfg->parameters = PARAMS;
	cfg->lr = 1e-3;
	builder_h100(&bundle, "NVIDIA H100 80GB HBM3 (synthetic)");
	dev->cuda_driver_version = 13000;
	dev->cupti_version = 26, dev->cublas_version = 130000;
	dev->driver_version = "580.95.05";
	snprintf(cmd, sizeof(cmd), "steptrace record --model small --ctx 128 --precision %s --mode train "
		 "--warmup 1 --steps 3 -o small-%s.stb   (synthetic: tests/report/gen_step)",
		 cfg->precision, cfg->precision);
	bundle.header.command_line = cmd;
	bundle.header.hostname = "synthetic";
	bundle.header.created_unix_ns = 1767225600ll * 1000000000ll;
	bundle.thread = HOST;
	bundle.cbid = 211;   /* CUPTI's cudaLaunchKernel */

	if (builder_open(&bundle, out) < 0)
		return 1;
	register_ops();
	cpu_t = gpu_t = 1000000;
	/* setup: parameters and the cuBLAS workspace */
	for (int i = 0; i < 4; i++)
		alloc(PARAMS, ST_MEM_PARAMETER, 0);
	alloc(32ull << 20, ST_MEM_WORKSPACE, 0);
	cpu_t += 200000;
	gpu_t = cpu_t;
	for (uint32_t s = 0; s < (truncated ? 3u : 4u); s++)
		step(s, s == 0, s == 0);
	if (truncated) {
		builder_abort(&bundle);
		return 0;
	}
	return builder_close(&bundle, "ok") < 0;
}
