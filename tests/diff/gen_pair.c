/*
 * gen_pair.c: three small bundles whose diff is known by hand.
 *
 *   gen_pair A.stb B.stb C.stb [D.stb [E.stb]]
 *
 * A is an FP32 run, B the same model in BF16, C is B with ctx 256 on
 * another device (the header-mismatch warning), D (when asked for) is B
 * with the op paths and kinds a PyTorch step recorded with `record --
 * COMMAND` has ("forward/aten::bmm", kind "matmul/aten::bmm"): no op kind
 * in common with B, so `diff D B` aligns by phase and kernel category; E
 * (when asked for) is D with the phases `record -- python3 train.py` adds
 * around PyTorch's step (below). Each has a warm-up step and
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
 * A 19 (forward 18, backward 19), B 20 (forward 19, backward 20); the optimizer
 * allocates nothing and runs with 16 live (its peak, carried in).
 *
 * E, per step: a "data" range [900, 950] with op 7 (data/aten::copy_)
 * launching copy_kernel 8 and allocating an input of 1 MiB at 902 (live 17,
 * the data phase's peak), freed at 995; a "zero_grad" range [950, 990]
 * with op 8 (zero_grad/aten::zero_) launching zero_kernel 4 (its peak, 17,
 * carried in).
 */
#include <stdio.h>
#include <string.h>

#include "tests/lib/builder.h"

#define THREAD 100
#define US 1000ull
#define MIB (1024ull * 1024ull)

static const struct op_def *ops;   /* the table of the bundle being written */

struct op_def {
	uint32_t id;
	const char *path, *kind, *phase;   /* path below "step/" */
	uint64_t flops, bytes;
};

static const struct op_def torch_ops[] = {
	{ 1, "forward/aten::bmm", "matmul/aten::bmm", "forward", 1000000000, 10000000 },
	{ 2, "forward/aten::_softmax", "softmax/aten::_softmax", "forward", 5000000, 8000000 },
	{ 3, "forward/aten::mm", "matmul/aten::mm", "forward", 4000000000, 20000000 },
	{ 4, "backward/aten::mm", "matmul/aten::mm", "backward", 8000000000, 40000000 },
	{ 5, "optimizer/aten::_foreach_add_", "elementwise/aten::_foreach_add_", "optimizer", 100000, 1600000 },
	{ 6, "forward/aten::_to_copy", "elementwise/aten::_to_copy", "forward", 0, 6000000 },
};

/* E's ops beyond D's: the data and zero_grad phases of a PyTorch loop */
static const struct op_def torch_more_ops[] = {
	{ 7, "data/aten::copy_", "copy/aten::copy_", "data", 0, 2097152 },
	{ 8, "zero_grad/aten::zero_", "elementwise/aten::zero_", "zero_grad", 0, 8388608 },
};

static const struct op_def steptrace_ops[] = {
	{ 1, "forward/layer.0/attn/scores", "attn/scores", "forward", 1000000000, 10000000 },
	{ 2, "forward/layer.0/attn/softmax", "attn/softmax", "forward", 5000000, 8000000 },
	{ 3, "forward/layer.0/ffn/w1", "ffn/w1", "forward", 4000000000, 20000000 },
	{ 4, "backward/layer.0/ffn/w1", "ffn/w1", "backward", 8000000000, 40000000 },
	{ 5, "optimizer/adamw", "adamw", "optimizer", 100000, 1600000 },
	{ 6, "forward/cast_weights", "cast_weights", "forward", 0, 6000000 },
};

/* BF16 runs read and write bf16 except in softmax and AdamW. */
static void op_event(struct builder *b, const struct op_def *d, bool bf16)
{
	uint8_t dt = bf16 && d->id != 2 && d->id != 5 ? ST_DT_BF16 : ST_DT_F32;
	char path[128];

	snprintf(path, sizeof(path), "step/%s", d->path);
	builder_op(b, &(struct builder_op){ .id = d->id, .path = path, .kind = d->kind, .phase = d->phase,
		   .flops = d->flops, .bytes = d->bytes, .inputs = { dt, dt }, .outputs = { dt } });
}

/* The op's ranges below the phase (nested, span [t, t + 10 us]), its launch call and kernel. */
static void launch(struct builder *b, const struct op_def *d, uint64_t t, const char *kname, uint64_t dur)
{
	char comp[8][32];
	int n = 0;
	const char *p = strchr(d->path, '/');

	while (p && n < 8) {
		const char *q = strchr(p + 1, '/');
		size_t len = q ? (size_t)(q - p - 1) : strlen(p + 1);
		snprintf(comp[n++], sizeof(comp[0]), "%.*s", (int)len, p + 1);
		p = q;
	}
	for (int i = n - 1; i >= 0; i--)
		builder_range(b, comp[i], 2 + (uint32_t)i, t, t + 10 * US);
	builder_launch(b, kname, 7, d->id, t + 1 * US, t + 6 * US, t + 10 * US, t + 10 * US + dur);
}

static void step(struct builder *b, uint32_t index, bool bf, bool more)
{
	uint64_t t0 = (index + 1) * 1000 * US, extra = index == 0 ? 5 * US : 0;

	builder_range(b, "step", 0, t0, t0 + 1000 * US);
	builder_range(b, "forward", 1, t0 + 1 * US, t0 + 400 * US);
	builder_range(b, "backward", 1, t0 + 400 * US, t0 + 800 * US);
	builder_range(b, "optimizer", 1, t0 + 800 * US, t0 + 900 * US);
	if (bf) {
		launch(b, &ops[5], t0 + 5 * US, "cast_f32_bf16_kernel", 5 * US + extra);
		builder_alloc(b, t0 + 8 * US, 0x900000, 2 * MIB, ST_MEM_PARAMETER, 6);
	}
	launch(b, &ops[0], t0 + 10 * US, bf ? "sm90_xmma_gemm_bf16bf16_bf16f32" : "ampere_sgemm_128x64_nn",
	       (bf ? 10 : 40) * US + extra);
	builder_alloc(b, t0 + 90 * US, 0xa00000, (bf ? 1 : 2) * MIB, ST_MEM_ACTIVATION, 2);
	launch(b, &ops[1], t0 + 100 * US, "softmax_kernel", 20 * US + extra);
	launch(b, &ops[2], t0 + 200 * US, bf ? "sm90_xmma_gemm_bf16bf16_bf16f32" : "ampere_sgemm_128x64_tn",
	       (bf ? 25 : 100) * US + extra);
	builder_alloc(b, t0 + 410 * US, 0xb00000, 1 * MIB, ST_MEM_TEMPORARY, 4);
	launch(b, &ops[3], t0 + 420 * US, bf ? "sm90_xmma_gemm_bf16bf16_bf16f32_nt" : "ampere_sgemm_128x64_nt",
	       (bf ? 50 : 200) * US + extra);
	builder_free(b, t0 + 700 * US, 0xb00000, 0, ST_MEM_TEMPORARY, 4);
	builder_free(b, t0 + 710 * US, 0xa00000, 0, ST_MEM_ACTIVATION, 4);
	if (bf)
		builder_free(b, t0 + 720 * US, 0x900000, 0, ST_MEM_PARAMETER, 4);
	launch(b, &ops[4], t0 + 810 * US, "adamw_kernel", 50 * US + extra);
	if (!bf)
		builder_kernel(b, "orphan_kernel", 1000000 + index, 7, 0, t0 + 950 * US,
			       t0 + 950 * US + 10 * US + extra);
	if (more) {
		builder_range(b, "data", 1, t0 + 900 * US, t0 + 950 * US);
		builder_alloc(b, t0 + 902 * US, 0xc00000, 1 * MIB, ST_MEM_INPUT, 7);
		launch(b, &torch_more_ops[0], t0 + 905 * US, "copy_kernel", 8 * US + extra);
		builder_range(b, "zero_grad", 1, t0 + 950 * US, t0 + 990 * US);
		launch(b, &torch_more_ops[1], t0 + 955 * US, "zero_kernel", 4 * US + extra);
		builder_free(b, t0 + 995 * US, 0xc00000, 0, ST_MEM_INPUT, 0);
	}
	builder_step(b, index, index == 0, t0, t0 + 1000 * US);
}

static int write_bundle(const char *path, bool bf16, uint32_t ctx, const char *device, bool torch_names,
			bool more_phases)
{
	struct builder b;

	ops = torch_names ? torch_ops : steptrace_ops;
	builder_init(&b);
	builder_small_model(&b, bf16 ? "bf16" : "fp32");
	b.config.layers = 1;
	b.config.ctx = ctx;
	b.config.warmup_steps = 1;
	b.config.measured_steps = 2;
	if (ctx == 256)   /* C ran fused kernels; A and B name none, as before format 1.4: plain */
		b.config.kernels = "fused";
	b.device.name = (char *)device;
	builder_peaks(&b, 50e12, 400e12, 800e12, 2e12);
	b.thread = THREAD;
	b.cbid = 211;   /* CUPTI's cudaLaunchKernel */
	b.geometry = (struct builder_geometry){ .grid = { 1, 1, 1 }, .block = { 128, 1, 1 } };
	if (builder_open(&b, path) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(steptrace_ops) / sizeof(steptrace_ops[0]); i++)
		if (bf16 || ops[i].id != 6)
			op_event(&b, &ops[i], bf16);
	for (size_t i = 0; more_phases && i < sizeof(torch_more_ops) / sizeof(torch_more_ops[0]); i++)
		op_event(&b, &torch_more_ops[i], bf16);
	builder_alloc(&b, 100 * US, 0x100000, 4 * MIB, ST_MEM_PARAMETER, 0);
	builder_alloc(&b, 110 * US, 0x500000, 4 * MIB, ST_MEM_GRADIENT, 0);
	builder_alloc(&b, 120 * US, 0x600000, 8 * MIB, ST_MEM_OPTIMIZER, 0);
	for (uint32_t s = 0; s < 3; s++)
		step(&b, s, bf16, more_phases);
	if (b.failed) {
		builder_abort(&b);
		return -1;
	}
	return builder_close(&b, "ok");
}

int main(int argc, char **argv)
{
	if (argc < 4 || argc > 6) {
		fprintf(stderr, "usage: gen_pair A.stb B.stb C.stb [D.stb [E.stb]]\n");
		return 2;
	}
	if (write_bundle(argv[1], false, 128, "NVIDIA H100 80GB HBM3", false, false) < 0 ||
	    write_bundle(argv[2], true, 128, "NVIDIA H100 80GB HBM3", false, false) < 0 ||
	    write_bundle(argv[3], true, 256, "NVIDIA H200", false, false) < 0 ||
	    (argc >= 5 && write_bundle(argv[4], true, 128, "NVIDIA H100 80GB HBM3", true, false) < 0) ||
	    (argc == 6 && write_bundle(argv[5], true, 128, "NVIDIA H100 80GB HBM3", true, true) < 0))
		return 1;
	return 0;
}
