/*
 * gen_step.c: a synthetic bundle that looks like a recorded training step of
 * the CS336 Transformer ("small" sizes, 12 layers, batch 4, ctx 128), for
 * the HTML report's tests and its screenshot: ops with analytic FLOPs and
 * bytes, kernels timed from them against H100-like peaks, NVTX ranges
 * step > forward|backward|optimizer > layer.N > attn|ffn > op, launch calls
 * on the host running ahead of the GPU, and the model allocator's events
 * (parameters, gradients, AdamW state, activations saved for backward,
 * temporaries, a cuBLAS workspace). One warm-up and three measured steps.
 *
 *   gen_step [--precision fp32|bf16] -o x.stb
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace/bundle.h"

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

static struct bundle_writer *W;
static int failed;
static bool bf16;
static uint64_t cpu_t, gpu_t, corr;
static uint32_t next_op;
static unsigned rng = 12345;

static double jitter(void)
{
	rng = rng * 1103515245u + 12345u;
	return 0.97 + 0.06 * (double)((rng >> 8) & 0xffff) / 65535.0;
}

static void add(const struct st_event *ev)
{
	if (bundle_writer_add(W, ev) < 0)
		failed = 1;
}

static uint32_t S(const char *s)
{
	return bundle_writer_intern(W, s);
}

/* An NVTX range written when it closes, as the recorder does. */
static void range(const char *name, uint32_t depth, uint64_t start, uint64_t end)
{
	struct st_event ev = { .kind = ST_RANGE, .start = start, .end = end };

	ev.range.name = S(name);
	ev.range.thread = HOST;
	ev.range.depth = depth;
	add(&ev);
}

static void mem(int kind, uint64_t addr, uint64_t size, int cat, uint32_t op)
{
	struct st_event ev = { .kind = kind, .start = cpu_t, .end = cpu_t };

	ev.mem.address = addr;
	ev.mem.size = size;
	ev.mem.category = (uint32_t)cat;
	ev.mem.op = op;
	add(&ev);
	cpu_t += 300;
}

/* Registers an op; returns its id. */
static uint32_t op(const char *phase, const char *path, const char *name, const char *kind,
		   double flops, double bytes, bool matmul)
{
	struct st_event ev = { .kind = ST_OP };
	char full[256];

	snprintf(full, sizeof(full), "step/%s", path);
	ev.op.id = ++next_op;
	ev.op.name = S(name);
	ev.op.path = S(full);
	ev.op.kind = S(kind);
	ev.op.phase = S(phase);
	ev.op.flops = (uint64_t)flops;
	ev.op.bytes = (uint64_t)bytes;
	ev.op.n_inputs = 2;
	ev.op.inputs[0] = ev.op.inputs[1] = bf16 && matmul ? ST_DT_BF16 : ST_DT_F32;
	ev.op.n_outputs = 1;
	ev.op.outputs[0] = bf16 && matmul ? ST_DT_BF16 : ST_DT_F32;
	add(&ev);
	return ev.op.id;
}

/* A launch call on the host and its kernel on the GPU, timed from FLOPs and bytes. */
static void launch(const char *kernel, uint32_t op_id, double flops, double bytes, bool matmul)
{
	double peak = matmul ? (bf16 ? 989e12 * 0.55 : 67e12 * 0.7) : 67e12 * 0.5;
	double ns = fmax(flops / peak, bytes / (3.35e12 * 0.6)) * 1e9 * jitter() + 2500;
	struct st_event ev = { .kind = ST_API, .start = cpu_t, .end = cpu_t + 2600 };
	uint64_t start;

	ev.api.name = S("cudaLaunchKernel");
	ev.api.thread = HOST;
	ev.api.correlation = ++corr;
	ev.api.cbid = 211;
	add(&ev);
	start = gpu_t > cpu_t + 3000 ? gpu_t : cpu_t + 3000;
	memset(&ev, 0, sizeof(ev));
	ev.kind = ST_KERNEL;
	ev.start = start;
	ev.end = start + (uint64_t)ns;
	ev.kernel.name = S(kernel);
	ev.kernel.correlation = corr;
	ev.kernel.stream = STREAM;
	ev.kernel.op = op_id;
	ev.kernel.grid[0] = matmul ? 96 : 512, ev.kernel.grid[1] = matmul ? 4 : 1, ev.kernel.grid[2] = 1;
	ev.kernel.block[0] = matmul ? 384 : 256, ev.kernel.block[1] = 1, ev.kernel.block[2] = 1;
	ev.kernel.registers = matmul ? 168 : 32;
	ev.kernel.dynamic_smem = matmul ? 197632 : 0;
	add(&ev);
	gpu_t = ev.end + 900;
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

static uint64_t alloc(uint64_t size, int cat, uint32_t op_id)
{
	uint64_t a = next_addr;

	next_addr += (size + 0xfffff) & ~0xfffffull;
	mem(ST_ALLOC, a, size, cat, op_id);
	return a;
}

static uint64_t saved[L][16], cast_buf;

/* ---- one step ------------------------------------------------------------------ */

static void step(uint32_t index, bool warmup, bool first)
{
	uint64_t s0 = cpu_t, f0, l0, p0, o0, b0;
	double es = bf16 ? 2 : 4;
	char name[32];

	/* forward */
	f0 = cpu_t;
	uint64_t tokens = alloc((uint64_t)N * 8 * 2, ST_MEM_INPUT, 0);
	if (bf16) {
		uint64_t c = cpu_t, w = alloc(PARAMS * 2, ST_MEM_TEMPORARY, cast_id);
		launch("cast_f32_to_bf16_kernel", cast_id, 0, 6.0 * PARAMS, false);
		range("cast_weights", 2, c, cpu_t);
		cast_buf = w;
	}
	for (int l = 0; l < L; l++) {
		l0 = cpu_t;
		for (int part = 0; part < 2; part++) {
			uint64_t a0 = cpu_t;
			for (int k = 0; k < n_ops; k++) {
				if (strcmp(ops[k].part, part ? "ffn" : "attn") != 0)
					continue;
				uint64_t o = cpu_t;
				double out = strcmp(ops[k].name, "scores") == 0 || strcmp(ops[k].name, "softmax") == 0
					? 4.0 * B * H * T * T : strncmp(ops[k].name, "w", 1) == 0 && ops[k].name[1] != '2'
					? (double)N * DFF * es : (double)N * D * es;
				saved[l][k] = alloc((uint64_t)out, ST_MEM_ACTIVATION, op_ids[0][l][k]);
				launch(kernel_for(&ops[k], false, 0), op_ids[0][l][k], ops[k].flops, ops[k].bytes,
				       ops[k].matmul);
				range(ops[k].name, 4, o, cpu_t);
			}
			range(part ? "ffn" : "attn", 3, a0, cpu_t);
		}
		snprintf(name, sizeof(name), "layer.%d", l);
		range(name, 2, l0, cpu_t);
	}
	p0 = cpu_t;
	uint64_t logits = alloc((uint64_t)N * V * 4, ST_MEM_ACTIVATION, head_ids[0]);
	launch(bf16 ? kernel_for(&ops[1], false, 0) : "ampere_sgemm_128x64_tn", head_ids[0],
	       2.0 * N * D * V, ((double)N * D + (double)D * V + (double)N * V) * es, true);
	range("lm_head", 2, p0, cpu_t);
	range("forward", 1, f0, cpu_t);
	p0 = cpu_t;
	launch("cross_entropy_forward_kernel", head_ids[1], 5.0 * N * V, 2.0 * N * V * 4, false);
	range("loss", 1, p0, cpu_t);

	/* backward */
	b0 = cpu_t;
	if (first)
		for (int i = 0; i < 4; i++)
			alloc(PARAMS, ST_MEM_GRADIENT, 0);   /* four gradient buckets */
	uint64_t dlogits = alloc((uint64_t)N * V * 4, ST_MEM_TEMPORARY, head_ids[2]);
	p0 = cpu_t;
	launch("cross_entropy_backward_kernel", head_ids[2], 3.0 * N * V, 2.0 * N * V * 4, false);
	launch(bf16 ? kernel_for(&ops[1], true, 0) : "ampere_sgemm_64x64_nn", head_ids[3],
	       2.0 * N * D * V, ((double)N * D + (double)D * V + (double)N * V) * es, true);
	launch(bf16 ? kernel_for(&ops[1], true, 1) : "ampere_sgemm_128x64_nt", head_ids[3],
	       2.0 * N * D * V, ((double)N * D + (double)D * V + (double)N * V) * es, true);
	mem(ST_FREE, dlogits, 0, 0, 0);
	mem(ST_FREE, logits, 0, 0, 0);
	range("lm_head", 2, p0, cpu_t);
	for (int l = L - 1; l >= 0; l--) {
		l0 = cpu_t;
		for (int part = 1; part >= 0; part--) {
			uint64_t a0 = cpu_t;
			for (int k = n_ops - 1; k >= 0; k--) {
				if (strcmp(ops[k].part, part ? "ffn" : "attn") != 0)
					continue;
				uint64_t o = cpu_t, tmp = 0;
				if (strcmp(ops[k].name, "softmax") == 0)
					tmp = alloc(4ull * B * H * T * T, ST_MEM_TEMPORARY, op_ids[1][l][k]);
				launch(kernel_for(&ops[k], true, 0), op_ids[1][l][k], ops[k].flops, ops[k].bytes,
				       ops[k].matmul);
				if (ops[k].matmul)
					launch(kernel_for(&ops[k], true, 1), op_ids[1][l][k], ops[k].flops, ops[k].bytes,
					       true);
				if (tmp)
					mem(ST_FREE, tmp, 0, 0, 0);
				mem(ST_FREE, saved[l][k], 0, 0, 0);
				range(ops[k].name, 4, o, cpu_t);
			}
			range(part ? "ffn" : "attn", 3, a0, cpu_t);
		}
		snprintf(name, sizeof(name), "layer.%d", l);
		range(name, 2, l0, cpu_t);
	}
	if (bf16)
		mem(ST_FREE, cast_buf, 0, 0, 0);
	range("backward", 1, b0, cpu_t);

	/* optimizer */
	o0 = cpu_t;
	if (first) {
		alloc(PARAMS * 4, ST_MEM_OPTIMIZER, adam_id);
		alloc(PARAMS * 4, ST_MEM_OPTIMIZER, adam_id);
	}
	p0 = cpu_t;
	launch("adamw_kernel", adam_id, 12.0 * PARAMS, 16.0 * PARAMS, false);
	range("adamw", 2, p0, cpu_t);
	range("optimizer", 1, o0, cpu_t);
	mem(ST_FREE, tokens, 0, 0, 0);

	/* synchronise: the step ends when the GPU does */
	cpu_t = (gpu_t > cpu_t ? gpu_t : cpu_t) + 6000;
	range("step", 0, s0, cpu_t);
	struct st_event ev = { .kind = ST_STEP, .start = s0, .end = cpu_t };
	ev.step.index = index;
	ev.step.warmup = warmup;
	ev.step.thread = HOST;
	add(&ev);
	cpu_t += 50000;
	gpu_t = cpu_t;
}

int main(int argc, char **argv)
{
	const char *out = NULL;
	Steptrace__Header h = STEPTRACE__HEADER__INIT;
	Steptrace__RunConfig cfg = STEPTRACE__RUN_CONFIG__INIT;
	Steptrace__DeviceInfo dev = STEPTRACE__DEVICE_INFO__INIT;
	char cmd[256];

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strcmp(argv[i], "--precision") == 0 && i + 1 < argc)
			bf16 = strcmp(argv[++i], "bf16") == 0;
		else
			out = NULL, i = argc;
	}
	if (!out) {
		fprintf(stderr, "usage: gen_step [--precision fp32|bf16] -o FILE\n");
		return 2;
	}
	cfg.model = "small";
	cfg.d_model = D, cfg.d_ff = DFF, cfg.layers = L, cfg.heads = H, cfg.vocab = V;
	cfg.batch = B, cfg.ctx = T;
	cfg.precision = bf16 ? "bf16" : "fp32";
	cfg.mode = "train";
	cfg.attention = "naive";
	cfg.warmup_steps = 1, cfg.measured_steps = 3;
	cfg.parameters = PARAMS;
	cfg.lr = 1e-3;
	dev.name = "NVIDIA H100 80GB HBM3 (synthetic)";
	dev.sm_count = 132, dev.cc_major = 9, dev.cc_minor = 0;
	dev.memory_bytes = 80ull << 30;
	dev.sm_clock_khz = 1980000;
	dev.peak_fp32_flops = 67e12, dev.peak_tf32_flops = 494e12;
	dev.peak_bf16_flops = 989e12, dev.peak_fp16_flops = 989e12;
	dev.peak_bandwidth = 3.35e12;
	dev.peak_source = STEPTRACE__PEAK_SOURCE__PEAK_DATASHEET;
	dev.peak_note = "H100 SXM datasheet";
	dev.cuda_runtime_version = 13000, dev.cuda_driver_version = 13000;
	dev.cupti_version = 26, dev.cublas_version = 130000;
	dev.driver_version = "580.95.05";
	snprintf(cmd, sizeof(cmd), "steptrace record --model small --ctx 128 --precision %s --mode train "
		 "--warmup 1 --steps 3 -o small-%s.stb   (synthetic: tests/report/gen_step)",
		 cfg.precision, cfg.precision);
	h.command_line = cmd;
	h.hostname = "synthetic";
	h.created_unix_ns = 1767225600ll * 1000000000ll;
	h.config = &cfg;
	h.device = &dev;
	h.clock = "synthetic";

	W = bundle_writer_open(out, &h, NULL);
	if (!W)
		return 1;
	register_ops();
	cpu_t = gpu_t = 1000000;
	/* setup: parameters and the cuBLAS workspace */
	for (int i = 0; i < 4; i++)
		alloc(PARAMS, ST_MEM_PARAMETER, 0);
	alloc(32ull << 20, ST_MEM_WORKSPACE, 0);
	cpu_t += 200000;
	gpu_t = cpu_t;
	for (uint32_t s = 0; s < 4; s++)
		step(s, s == 0, s == 0);
	if (bundle_writer_close(W, "ok") < 0 || failed)
		return 1;
	return 0;
}
