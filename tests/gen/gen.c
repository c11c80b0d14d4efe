/*
 * gen.c: writes synthetic bundles whose every report value is known in
 * advance (tests/analyze computes them by hand), and large ones for the
 * analysis benchmark. A test helper, not a user command.
 *
 *   st-gen basic -o x.stb          nested ranges, 3 steps (1 warm-up), 2 threads,
 *                                  3 streams, ties, orphan kernel, copies, memory
 *   st-gen nosteps -o x.stb        basic without step events
 *   st-gen truncated -o x.stb      basic without a footer (a crashed recording)
 *   st-gen bench --events N -o x   N kernels under a transformer-like range tree
 *
 * The "basic" layout, relative to each step's start b (thread 100 unless
 * said, streams 7 and 8, device 0):
 *
 *   ranges  step [0,1000] > forward [10,400] > layer.0 [10,200] > attn [10,200]
 *           > q_proj [10,60], softmax [60,100]; forward > layer.1 [200,400] > attn
 *           [200,400] > q_proj [210,250]; step > backward [400,700] > layer.0 >
 *           attn > softmax (all [400,700]); step > optimizer [700,1000];
 *           thread 200: loader [50,300]
 *   calls   kernel (stream) GPU span
 *     [10,15]   ampere_sgemm_128x64_nn op1 (7) [100,180] ([100,200] in step 2)
 *     [60,65]   softmax_kernel op2 (7) [200,260]
 *     [100,100] elementwise_add_kernel (8) [210,250]   zero-length call at softmax's end
 *     [210,215] ampere_sgemm_128x64_nn op3 (7) [300,400]
 *     [300,305] vectorized_elementwise_kernel (8) [380,420]
 *     [450,455] softmax_backward_kernel op4 (7) [500,600]
 *     [460,470] memcpy DtoD 4096 B (8) [500,520]
 *     [720,725] adam_kernel op5 (7) [800,900]
 *     [730,735] memset 1024 B (8) [900,910]
 *     none      nccl_kernel_orphan (9) [950,990]
 *     [100,105] thread 200: vectorized_elementwise_kernel (8) [600,650]
 *   memory  alloc 4096 B activation op1 at b+20, freed at b+600
 *
 * Steps: 0 warm-up at 1 ms lasting 5 ms, 1 at 10 ms lasting 2 ms, 2 at 20 ms
 * lasting 2.4 ms. Before them, at 100 us: range "setup" [0,100], call
 * [10,15] launching init_kernel (7) [50,80]. After them an OOM, an overhead
 * and a sync record. The writer reports 2 dropped kernels.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "trace/bundle.h"

#define T1 100
#define T2 200

struct gen {
	struct bundle_writer *w;
	uint64_t corr;
	int failed;
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

static void range(struct gen *g, const char *name, uint64_t thread, uint32_t depth,
		  uint64_t start, uint64_t end)
{
	struct st_event ev = { .kind = ST_RANGE, .start = start, .end = end };

	ev.range.name = S(g, name);
	ev.range.thread = thread;
	ev.range.depth = depth;
	add(g, &ev);
}

static uint64_t api(struct gen *g, const char *name, uint64_t thread, uint64_t start, uint64_t end)
{
	struct st_event ev = { .kind = ST_API, .start = start, .end = end };

	ev.api.name = S(g, name);
	ev.api.thread = thread;
	ev.api.correlation = ++g->corr;
	ev.api.cbid = 211;
	add(g, &ev);
	return g->corr;
}

static void kernel(struct gen *g, const char *name, uint64_t corr, uint32_t stream, uint32_t op,
		   uint64_t start, uint64_t end)
{
	struct st_event ev = { .kind = ST_KERNEL, .start = start, .end = end };

	ev.kernel.name = S(g, name);
	ev.kernel.correlation = corr;
	ev.kernel.stream = stream;
	ev.kernel.op = op;
	ev.kernel.grid[0] = 128, ev.kernel.grid[1] = 1, ev.kernel.grid[2] = 1;
	ev.kernel.block[0] = 256, ev.kernel.block[1] = 1, ev.kernel.block[2] = 1;
	ev.kernel.registers = 64;
	ev.kernel.static_smem = 1024;
	ev.kernel.dynamic_smem = 4096;
	add(g, &ev);
}

static void op(struct gen *g, uint32_t id, const char *name, const char *path, const char *kind,
	       const char *phase, uint64_t flops, uint64_t bytes)
{
	struct st_event ev = { .kind = ST_OP };

	ev.op.id = id;
	ev.op.name = S(g, name);
	ev.op.path = S(g, path);
	ev.op.kind = S(g, kind);
	ev.op.phase = S(g, phase);
	ev.op.flops = flops;
	ev.op.bytes = bytes;
	ev.op.n_inputs = 2;
	ev.op.inputs[0] = ST_DT_BF16;
	ev.op.inputs[1] = ST_DT_F32;
	ev.op.n_outputs = 1;
	ev.op.outputs[0] = ST_DT_BF16;
	add(g, &ev);
}

static void mem(struct gen *g, int kind, uint64_t t, uint64_t address, uint64_t size,
		uint32_t category, uint32_t op_id)
{
	struct st_event ev = { .kind = kind, .start = t, .end = t };

	ev.mem.address = address;
	ev.mem.size = size;
	ev.mem.category = category;
	ev.mem.op = op_id;
	ev.mem.source = ST_SRC_MODEL;
	add(g, &ev);
}

static void step_content(struct gen *g, uint64_t b, uint32_t index)
{
	uint64_t c;

	range(g, "q_proj", T1, 4, b + 10, b + 60);
	range(g, "softmax", T1, 4, b + 60, b + 100);
	range(g, "attn", T1, 3, b + 10, b + 200);
	range(g, "layer.0", T1, 2, b + 10, b + 200);
	range(g, "q_proj", T1, 4, b + 210, b + 250);
	range(g, "attn", T1, 3, b + 200, b + 400);
	range(g, "layer.1", T1, 2, b + 200, b + 400);
	range(g, "forward", T1, 1, b + 10, b + 400);
	range(g, "softmax", T1, 4, b + 400, b + 700);
	range(g, "attn", T1, 3, b + 400, b + 700);
	range(g, "layer.0", T1, 2, b + 400, b + 700);
	range(g, "backward", T1, 1, b + 400, b + 700);
	range(g, "optimizer", T1, 1, b + 700, b + 1000);
	range(g, "step", T1, 0, b, b + 1000);
	range(g, "loader", T2, 0, b + 50, b + 300);

	c = api(g, "cudaLaunchKernel", T1, b + 10, b + 15);
	kernel(g, "ampere_sgemm_128x64_nn", c, 7, 1, b + 100, b + (index == 2 ? 200 : 180));
	c = api(g, "cudaLaunchKernel", T1, b + 60, b + 65);
	kernel(g, "softmax_kernel", c, 7, 2, b + 200, b + 260);
	c = api(g, "cudaLaunchKernel", T1, b + 100, b + 100);
	kernel(g, "elementwise_add_kernel", c, 8, 0, b + 210, b + 250);
	c = api(g, "cudaLaunchKernel", T1, b + 210, b + 215);
	kernel(g, "ampere_sgemm_128x64_nn", c, 7, 3, b + 300, b + 400);
	c = api(g, "cudaLaunchKernel", T1, b + 300, b + 305);
	kernel(g, "vectorized_elementwise_kernel", c, 8, 0, b + 380, b + 420);
	c = api(g, "cudaLaunchKernel", T1, b + 450, b + 455);
	kernel(g, "softmax_backward_kernel", c, 7, 4, b + 500, b + 600);
	c = api(g, "cudaMemcpyAsync", T1, b + 460, b + 470);
	{
		struct st_event ev = { .kind = ST_MEMCPY, .start = b + 500, .end = b + 520 };
		ev.memcpy.copy_kind = 8; /* DtoD */
		ev.memcpy.src_kind = 3;
		ev.memcpy.dst_kind = 3;
		ev.memcpy.bytes = 4096;
		ev.memcpy.stream = 8;
		ev.memcpy.correlation = c;
		ev.memcpy.op = 4;
		add(g, &ev);
	}
	c = api(g, "cudaLaunchKernel", T1, b + 720, b + 725);
	kernel(g, "adam_kernel", c, 7, 5, b + 800, b + 900);
	c = api(g, "cudaMemsetAsync", T1, b + 730, b + 735);
	{
		struct st_event ev = { .kind = ST_MEMSET, .start = b + 900, .end = b + 910 };
		ev.memset.bytes = 1024;
		ev.memset.value = 0;
		ev.memset.stream = 8;
		ev.memset.correlation = c;
		add(g, &ev);
	}
	kernel(g, "nccl_kernel_orphan", 1000000 + index, 9, 0, b + 950, b + 990);
	c = api(g, "cudaLaunchKernel", T2, b + 100, b + 105);
	kernel(g, "vectorized_elementwise_kernel", c, 8, 0, b + 600, b + 650);

	mem(g, ST_ALLOC, b + 20, 0x10000 + index * 0x1000, 4096, ST_MEM_ACTIVATION, 1);
	mem(g, ST_FREE, b + 600, 0x10000 + index * 0x1000, 4096, ST_MEM_ACTIVATION, 1);
}

static void scenario_basic(struct gen *g, bool steps)
{
	static const uint64_t base[3] = { 1000000, 10000000, 20000000 };
	static const uint64_t wall[3] = { 5000000, 2000000, 2400000 };
	uint64_t c;

	op(g, 1, "q_proj", "step/forward/layer.0/attn/q_proj", "attn/q_proj", "forward", 1000, 100);
	op(g, 2, "softmax", "step/forward/layer.0/attn/softmax", "attn/softmax", "forward", 50, 200);
	op(g, 3, "q_proj", "step/forward/layer.1/attn/q_proj", "attn/q_proj", "forward", 1000, 100);
	op(g, 4, "softmax", "step/backward/layer.0/attn/softmax", "attn/softmax", "backward", 75, 300);
	op(g, 5, "adamw", "step/optimizer/adamw", "adamw", "optimizer", 400, 800);

	range(g, "setup", T1, 0, 100000, 100100);
	c = api(g, "cudaLaunchKernel", T1, 100010, 100015);
	kernel(g, "init_kernel", c, 7, 0, 100050, 100080);

	for (uint32_t i = 0; i < 3; i++) {
		step_content(g, base[i], i);
		if (steps) {
			struct st_event ev = { .kind = ST_STEP, .start = base[i], .end = base[i] + wall[i] };
			ev.step.index = i;
			ev.step.warmup = i == 0;
			ev.step.thread = T1;
			add(g, &ev);
		}
	}
	{
		struct st_event ev = { .kind = ST_OOM, .start = 30000000, .end = 30000000 };
		ev.oom.requested = 1ull << 30;
		ev.oom.category = ST_MEM_ACTIVATION;
		ev.oom.op = 2;
		ev.oom.live_bytes = 4096;
		ev.oom.capacity = 1ull << 29;
		ev.oom.step = 2;
		add(g, &ev);
	}
	{
		struct st_event ev = { .kind = ST_OVERHEAD, .start = 30000100, .end = 30000200 };
		ev.overhead.kind = 1;
		ev.overhead.thread = T1;
		add(g, &ev);
	}
	{
		struct st_event ev = { .kind = ST_SYNC, .start = 30000300, .end = 30000400 };
		ev.sync.type = 3;
		ev.sync.stream = 7;
		ev.sync.thread = T1;
		ev.sync.correlation = 777;
		add(g, &ev);
	}
	bundle_writer_count_dropped(g->w, ST_KERNEL, 2);
}

/* Cheap deterministic jitter. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/*
 * A transformer-like step repeated until n kernels: step > forward|backward >
 * layer.N > attn|ffn > op, one launch per op range, plus the optimizer.
 */
static void scenario_bench(struct gen *g, uint64_t n)
{
	static const char *const attn_ops[] = { "rmsnorm", "q_proj", "k_proj", "v_proj", "rope",
						"scores", "softmax", "av", "output_proj", "residual" };
	static const char *const ffn_ops[] = { "rmsnorm", "w1", "w3", "silu_mul", "w2", "residual" };
	static const char *const kernels[] = {
		"rmsnorm_kernel", "sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64",
		"nvjet_tst_192x128_64x4_2x1_v_bz_TNT", "rope_kernel", "softmax_kernel",
		"void at::native::vectorized_elementwise_kernel<4, at::native::AddFunctor<float>>",
		"silu_mul_kernel", "cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8",
	};
	const uint32_t layers = 12;
	uint64_t t = 1000000, done = 0;
	uint32_t step = 0, op_id = 0;

	/* one op per (phase, layer, sub-op) */
	char path[256], kind[128];
	for (int ph = 0; ph < 2; ph++)
		for (uint32_t l = 0; l < layers; l++)
			for (int part = 0; part < 2; part++) {
				const char *const *names = part ? ffn_ops : attn_ops;
				int nn = part ? 6 : 10;
				for (int k = 0; k < nn; k++) {
					snprintf(path, sizeof(path), "step/%s/layer.%u/%s/%s",
						 ph ? "backward" : "forward", l, part ? "ffn" : "attn", names[k]);
					snprintf(kind, sizeof(kind), "%s/%s", part ? "ffn" : "attn", names[k]);
					op(g, ++op_id, names[k], path, kind, ph ? "backward" : "forward",
					   1000000ull * (k + 1), 4096ull * (k + 1));
				}
			}
	op(g, ++op_id, "adamw", "step/optimizer/adamw", "adamw", "optimizer", 1000, 1000);

	while (done < n && !g->failed) {
		uint64_t s0 = t;
		uint32_t id = 0;
		for (int ph = 0; ph < 2 && done < n; ph++) {
			uint64_t p0 = t;
			for (uint32_t l = 0; l < layers && done < n; l++) {
				uint64_t l0 = t;
				for (int part = 0; part < 2; part++) {
					const char *const *names = part ? ffn_ops : attn_ops;
					int nn = part ? 6 : 10;
					uint64_t a0 = t;
					for (int k = 0; k < nn; k++) {
						uint64_t o0 = t, c, ks;
						id++;
						t += 200 + rnd() % 50;
						c = api(g, "cudaLaunchKernel", T1, t, t + 2000 + rnd() % 300);
						ks = t + 5000 + rnd() % 1000;
						kernel(g, kernels[(k + part * 3) % 8], c, 7, id, ks,
						       ks + 3000 + rnd() % 20000);
						t += 2500 + rnd() % 400;
						range(g, names[k], T1, 4, o0, t);
						t += 100;
						done++;
					}
					range(g, part ? "ffn" : "attn", T1, 3, a0, t);
				}
				snprintf(path, sizeof(path), "layer.%u", l);
				range(g, path, T1, 2, l0, t);
				t += 100;
			}
			range(g, ph ? "backward" : "forward", T1, 1, p0, t);
		}
		if (done < n) {
			uint64_t o0 = t, c = api(g, "cudaLaunchKernel", T1, t + 100, t + 2100);
			kernel(g, "adam_kernel", c, 7, op_id, t + 5000, t + 90000);
			t += 3000;
			range(g, "optimizer", T1, 1, o0, t);
			done++;
		}
		t += 100000;
		range(g, "step", T1, 0, s0, t);
		struct st_event ev = { .kind = ST_STEP, .start = s0, .end = t };
		ev.step.index = step;
		ev.step.warmup = step < 1;
		ev.step.thread = T1;
		add(g, &ev);
		step++;
		t += 10000;
	}
}

static int usage(void)
{
	fprintf(stderr, "usage: st-gen basic|nosteps|truncated|bench [--events N] -o FILE\n");
	return 129;
}

int main(int argc, char **argv)
{
	const char *scenario = NULL, *out = NULL;
	uint64_t events = 1000000;
	Steptrace__Header hdr = STEPTRACE__HEADER__INIT;
	Steptrace__RunConfig cfg = STEPTRACE__RUN_CONFIG__INIT;
	Steptrace__DeviceInfo dev = STEPTRACE__DEVICE_INFO__INIT;
	struct gen g = { 0 };

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
			out = argv[++i];
		} else if (strcmp(argv[i], "--events") == 0 && i + 1 < argc) {
			char *end;
			events = strtoull(argv[++i], &end, 10);
			if (*end || events == 0)
				return usage();
		} else if (!scenario && argv[i][0] != '-') {
			scenario = argv[i];
		} else {
			return usage();
		}
	}
	if (!scenario || !out)
		return usage();

	cfg.model = "small";
	cfg.d_model = 768;
	cfg.d_ff = 3072;
	cfg.layers = 12;
	cfg.heads = 12;
	cfg.vocab = 10000;
	cfg.batch = 4;
	cfg.ctx = 128;
	cfg.precision = "bf16";
	cfg.mode = "train";
	cfg.attention = "naive";
	cfg.warmup_steps = 1;
	cfg.measured_steps = 2;
	cfg.parameters = 128625408;
	cfg.seed = 42;
	cfg.lr = 1e-3;
	dev.name = "Synthetic H100";
	dev.sm_count = 132;
	dev.cc_major = 9;
	dev.memory_bytes = 80ull << 30;
	dev.sm_clock_khz = 1980000;
	dev.peak_fp32_flops = 67e12;
	dev.peak_tf32_flops = 494e12;
	dev.peak_bf16_flops = 989e12;
	dev.peak_fp16_flops = 989e12;
	dev.peak_bandwidth = 3.35e12;
	dev.peak_source = STEPTRACE__PEAK_SOURCE__PEAK_DATASHEET;
	dev.peak_note = "H100 SXM datasheet";
	dev.cuda_runtime_version = 13000;
	dev.driver_version = "580.0";
	hdr.command_line = "st-gen synthetic";
	hdr.hostname = "gen";
	hdr.config = &cfg;
	hdr.device = &dev;
	hdr.clock = "synthetic";

	g.w = bundle_writer_open(out, &hdr, NULL);
	if (!g.w)
		return 1;
	if (strcmp(scenario, "basic") == 0 || strcmp(scenario, "truncated") == 0) {
		scenario_basic(&g, true);
	} else if (strcmp(scenario, "nosteps") == 0) {
		scenario_basic(&g, false);
	} else if (strcmp(scenario, "bench") == 0) {
		scenario_bench(&g, events);
	} else {
		bundle_writer_abort(g.w);
		return usage();
	}
	if (strcmp(scenario, "truncated") == 0) {
		bundle_writer_abort(g.w);
		return g.failed;
	}
	if (bundle_writer_close(g.w, "ok") < 0 || g.failed)
		return 1;
	return 0;
}
