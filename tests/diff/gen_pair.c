/*
 * gen_pair.c: three small bundles whose diff is known by hand.
 *
 *   gen_pair A.stb B.stb C.stb
 *
 * A is an FP32 run, B the same model in BF16, C is B with ctx 256 on
 * another device (the header-mismatch warning). Each has a warm-up step and
 * two measured steps of 1 ms, identical; per step (us, relative to the
 * step's start b, thread 100, stream 7):
 *
 *   op  path (kind)                       A kernel, dur            B/C kernel, dur
 *   1   forward/layer.0/attn/scores       ampere_sgemm_128x64_nn 40  sm90_xmma_gemm_bf16bf16_bf16f32 10
 *   2   forward/layer.0/attn/softmax      softmax_kernel 20          softmax_kernel 20
 *   3   forward/layer.0/ffn/w1            ampere_sgemm_128x64_tn 100 sm90_xmma_gemm_bf16bf16_bf16f32 25
 *   4   backward/layer.0/ffn/w1           ampere_sgemm_128x64_nt 200 sm90_xmma_gemm_bf16bf16_bf16f32_nt 50
 *   5   optimizer/adamw                   adamw_kernel 50            adamw_kernel 50
 *   6   forward/cast_weights              -                          cast_f32_bf16_kernel 5
 *   -   (no op, no launch call)           orphan_kernel 10           -
 *
 * Warm-up kernels last 5 us longer (they must not count). Memory (model
 * allocator, MiB): setup parameter 4, gradient 4, optimizer 8; per step an
 * activation (A 2, B 1) in forward, B's bf16 weight copy (parameter, 2) in
 * forward, a temporary 1 in backward, all freed late in backward. Peaks:
 * A 19 (forward 18, backward 19), B 20 (forward 19, backward 20).
 */
#include <stdio.h>
#include <string.h>

#include "trace/bundle.h"

#define THREAD 100
#define US 1000ull
#define MIB (1024ull * 1024ull)

struct gen {
	struct bundle_writer *w;
	uint64_t corr;
	int failed;
	bool bf16;
};

static uint32_t S(struct gen *g, const char *s)
{
	return bundle_writer_intern(g->w, s);
}

static void add(struct gen *g, const struct st_event *ev)
{
	if (bundle_writer_add(g->w, ev) < 0)
		g->failed = 1;
}

static void range(struct gen *g, const char *name, uint32_t depth, uint64_t start, uint64_t end)
{
	struct st_event ev = { .kind = ST_RANGE, .start = start, .end = end };

	ev.range.name = S(g, name);
	ev.range.thread = THREAD;
	ev.range.depth = depth;
	add(g, &ev);
}

static void kernel(struct gen *g, const char *name, uint64_t corr, uint32_t op, uint64_t start, uint64_t dur)
{
	struct st_event ev = { .kind = ST_KERNEL, .start = start, .end = start + dur };

	ev.kernel.name = S(g, name);
	ev.kernel.correlation = corr;
	ev.kernel.stream = 7;
	ev.kernel.op = op;
	ev.kernel.grid[0] = ev.kernel.grid[1] = ev.kernel.grid[2] = 1;
	ev.kernel.block[0] = 128, ev.kernel.block[1] = ev.kernel.block[2] = 1;
	add(g, &ev);
}

struct op_def {
	uint32_t id;
	const char *path, *kind, *phase;   /* path below "step/" */
	uint64_t flops, bytes;
};

static const struct op_def ops[] = {
	{ 1, "forward/layer.0/attn/scores", "attn/scores", "forward", 1000000000, 10000000 },
	{ 2, "forward/layer.0/attn/softmax", "attn/softmax", "forward", 5000000, 8000000 },
	{ 3, "forward/layer.0/ffn/w1", "ffn/w1", "forward", 4000000000, 20000000 },
	{ 4, "backward/layer.0/ffn/w1", "ffn/w1", "backward", 8000000000, 40000000 },
	{ 5, "optimizer/adamw", "adamw", "optimizer", 100000, 1600000 },
	{ 6, "forward/cast_weights", "cast_weights", "forward", 0, 6000000 },
};

static void op_event(struct gen *g, const struct op_def *d)
{
	struct st_event ev = { .kind = ST_OP };
	char path[128];
	const char *name = strrchr(d->path, '/');

	snprintf(path, sizeof(path), "step/%s", d->path);
	ev.op.id = d->id;
	ev.op.name = S(g, name ? name + 1 : d->path);
	ev.op.path = S(g, path);
	ev.op.kind = S(g, d->kind);
	ev.op.phase = S(g, d->phase);
	ev.op.flops = d->flops;
	ev.op.bytes = d->bytes;
	ev.op.n_inputs = 2;
	ev.op.inputs[0] = ev.op.inputs[1] = g->bf16 && d->id != 2 && d->id != 5 ? ST_DT_BF16 : ST_DT_F32;
	ev.op.n_outputs = 1;
	ev.op.outputs[0] = ev.op.inputs[0];
	add(g, &ev);
}

/* The op's ranges below the phase (nested, span [t, t + 10 us]), its launch call and kernel. */
static void launch(struct gen *g, const struct op_def *d, uint64_t t, const char *kname, uint64_t dur)
{
	char comp[8][32];
	int n = 0;
	const char *p = strchr(d->path, '/');
	struct st_event ev = { .kind = ST_API, .start = t + 1 * US, .end = t + 6 * US };

	while (p && n < 8) {
		const char *q = strchr(p + 1, '/');
		size_t len = q ? (size_t)(q - p - 1) : strlen(p + 1);
		snprintf(comp[n++], sizeof(comp[0]), "%.*s", (int)len, p + 1);
		p = q;
	}
	for (int i = n - 1; i >= 0; i--)
		range(g, comp[i], 2 + (uint32_t)i, t, t + 10 * US);
	ev.api.name = S(g, "cudaLaunchKernel");
	ev.api.thread = THREAD;
	ev.api.correlation = ++g->corr;
	ev.api.cbid = 211;
	add(g, &ev);
	kernel(g, kname, g->corr, d->id, t + 10 * US, dur);
}

static void mem(struct gen *g, int kind, uint64_t t, uint64_t address, uint64_t size, uint32_t category,
		uint32_t op)
{
	struct st_event ev = { .kind = kind, .start = t, .end = t };

	ev.mem.address = address;
	ev.mem.size = size;
	ev.mem.category = category;
	ev.mem.op = op;
	ev.mem.source = ST_SRC_MODEL;
	add(g, &ev);
}

static void step(struct gen *g, uint32_t index)
{
	uint64_t b = (index + 1) * 1000 * US, extra = index == 0 ? 5 * US : 0;
	bool bf = g->bf16;
	struct st_event ev = { .kind = ST_STEP, .start = b, .end = b + 1000 * US };

	range(g, "step", 0, b, b + 1000 * US);
	range(g, "forward", 1, b + 1 * US, b + 400 * US);
	range(g, "backward", 1, b + 400 * US, b + 800 * US);
	range(g, "optimizer", 1, b + 800 * US, b + 900 * US);
	if (bf) {
		launch(g, &ops[5], b + 5 * US, "cast_f32_bf16_kernel", 5 * US + extra);
		mem(g, ST_ALLOC, b + 8 * US, 0x900000, 2 * MIB, ST_MEM_PARAMETER, 6);
	}
	launch(g, &ops[0], b + 10 * US, bf ? "sm90_xmma_gemm_bf16bf16_bf16f32" : "ampere_sgemm_128x64_nn",
	       (bf ? 10 : 40) * US + extra);
	mem(g, ST_ALLOC, b + 90 * US, 0xa00000, (bf ? 1 : 2) * MIB, ST_MEM_ACTIVATION, 2);
	launch(g, &ops[1], b + 100 * US, "softmax_kernel", 20 * US + extra);
	launch(g, &ops[2], b + 200 * US, bf ? "sm90_xmma_gemm_bf16bf16_bf16f32" : "ampere_sgemm_128x64_tn",
	       (bf ? 25 : 100) * US + extra);
	mem(g, ST_ALLOC, b + 410 * US, 0xb00000, 1 * MIB, ST_MEM_TEMPORARY, 4);
	launch(g, &ops[3], b + 420 * US, bf ? "sm90_xmma_gemm_bf16bf16_bf16f32_nt" : "ampere_sgemm_128x64_nt",
	       (bf ? 50 : 200) * US + extra);
	mem(g, ST_FREE, b + 700 * US, 0xb00000, 0, ST_MEM_TEMPORARY, 4);
	mem(g, ST_FREE, b + 710 * US, 0xa00000, 0, ST_MEM_ACTIVATION, 4);
	if (bf)
		mem(g, ST_FREE, b + 720 * US, 0x900000, 0, ST_MEM_PARAMETER, 4);
	launch(g, &ops[4], b + 810 * US, "adamw_kernel", 50 * US + extra);
	if (!bf)
		kernel(g, "orphan_kernel", 1000000 + index, 0, b + 950 * US, 10 * US + extra);
	ev.step.index = index;
	ev.step.warmup = index == 0;
	ev.step.thread = THREAD;
	add(g, &ev);
}

static int write_bundle(const char *path, bool bf16, uint32_t ctx, const char *device)
{
	Steptrace__Header h = STEPTRACE__HEADER__INIT;
	Steptrace__RunConfig c = STEPTRACE__RUN_CONFIG__INIT;
	Steptrace__DeviceInfo d = STEPTRACE__DEVICE_INFO__INIT;
	struct gen g = { .bf16 = bf16 };

	c.model = "small";
	c.d_model = 768;
	c.d_ff = 3072;
	c.layers = 1;
	c.heads = 12;
	c.vocab = 10000;
	c.batch = 4;
	c.ctx = ctx;
	c.precision = bf16 ? "bf16" : "fp32";
	c.mode = "train";
	c.attention = "naive";
	c.warmup_steps = 1;
	c.measured_steps = 2;
	d.name = (char *)device;
	d.peak_fp32_flops = 50e12;
	d.peak_tf32_flops = 400e12;
	d.peak_bf16_flops = 800e12;
	d.peak_fp16_flops = 800e12;
	d.peak_bandwidth = 2e12;
	d.peak_source = STEPTRACE__PEAK_SOURCE__PEAK_DATASHEET;
	h.config = &c;
	h.device = &d;
	h.clock = "synthetic";
	g.w = bundle_writer_open(path, &h, NULL);
	if (!g.w)
		return -1;
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		if (bf16 || ops[i].id != 6)
			op_event(&g, &ops[i]);
	mem(&g, ST_ALLOC, 100 * US, 0x100000, 4 * MIB, ST_MEM_PARAMETER, 0);
	mem(&g, ST_ALLOC, 110 * US, 0x500000, 4 * MIB, ST_MEM_GRADIENT, 0);
	mem(&g, ST_ALLOC, 120 * US, 0x600000, 8 * MIB, ST_MEM_OPTIMIZER, 0);
	for (uint32_t s = 0; s < 3; s++)
		step(&g, s);
	if (g.failed) {
		bundle_writer_abort(g.w);
		return -1;
	}
	return bundle_writer_close(g.w, "ok");
}

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: gen_pair A.stb B.stb C.stb\n");
		return 2;
	}
	if (write_bundle(argv[1], false, 128, "NVIDIA H100 80GB HBM3") < 0 ||
	    write_bundle(argv[2], true, 128, "NVIDIA H100 80GB HBM3") < 0 ||
	    write_bundle(argv[3], true, 256, "NVIDIA H200") < 0)
		return 1;
	return 0;
}
