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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/builder.h"

#define T1 100
#define T2 200

/* Each step's NVTX ranges on T1, innermost first as they close, times after the step's start. */
static const struct builder_span step_ranges[] = {
	{ "q_proj", 4, 10, 60 }, { "softmax", 4, 60, 100 }, { "attn", 3, 10, 200 },
	{ "layer.0", 2, 10, 200 }, { "q_proj", 4, 210, 250 }, { "attn", 3, 200, 400 },
	{ "layer.1", 2, 200, 400 }, { "forward", 1, 10, 400 }, { "softmax", 4, 400, 700 },
	{ "attn", 3, 400, 700 }, { "layer.0", 2, 400, 700 }, { "backward", 1, 400, 700 },
	{ "optimizer", 1, 700, 1000 }, { "step", 0, 0, 1000 },
};

static void step_content(struct builder *b, uint64_t t0, uint32_t index)
{
	struct st_event copy = { .kind = ST_MEMCPY, .start = t0 + 500, .end = t0 + 520 };
	uint64_t c;

	builder_ranges(b, t0, step_ranges, sizeof(step_ranges) / sizeof(step_ranges[0]));
	b->thread = T2;
	builder_range(b, "loader", 0, t0 + 50, t0 + 300);
	b->thread = T1;

	builder_launch(b, "ampere_sgemm_128x64_nn", 7, 1, t0 + 10, t0 + 15, t0 + 100,
		       t0 + (index == 2 ? 200 : 180));
	builder_launch(b, "softmax_kernel", 7, 2, t0 + 60, t0 + 65, t0 + 200, t0 + 260);
	builder_launch(b, "elementwise_add_kernel", 8, 0, t0 + 100, t0 + 100, t0 + 210, t0 + 250);
	builder_launch(b, "ampere_sgemm_128x64_nn", 7, 3, t0 + 210, t0 + 215, t0 + 300, t0 + 400);
	builder_launch(b, "vectorized_elementwise_kernel", 8, 0, t0 + 300, t0 + 305, t0 + 380, t0 + 420);
	builder_launch(b, "softmax_backward_kernel", 7, 4, t0 + 450, t0 + 455, t0 + 500, t0 + 600);
	c = builder_call(b, "cudaMemcpyAsync", t0 + 460, t0 + 470);
	copy.memcpy.copy_kind = 8;   /* device to device, with the memory kinds saying so */
	copy.memcpy.src_kind = 3;
	copy.memcpy.dst_kind = 3;
	copy.memcpy.bytes = 4096;
	copy.memcpy.stream = 8;
	copy.memcpy.correlation = c;
	copy.memcpy.op = 4;
	builder_add(b, &copy);
	builder_launch(b, "adam_kernel", 7, 5, t0 + 720, t0 + 725, t0 + 800, t0 + 900);
	c = builder_call(b, "cudaMemsetAsync", t0 + 730, t0 + 735);
	builder_memset(b, 1024, c, 8, 0, t0 + 900, t0 + 910);
	builder_kernel(b, "nccl_kernel_orphan", 1000000 + index, 9, 0, t0 + 950, t0 + 990);
	b->thread = T2;
	builder_launch(b, "vectorized_elementwise_kernel", 8, 0, t0 + 100, t0 + 105, t0 + 600, t0 + 650);
	b->thread = T1;

	builder_alloc(b, t0 + 20, 0x10000 + index * 0x1000, 4096, ST_MEM_ACTIVATION, 1);
	builder_free(b, t0 + 600, 0x10000 + index * 0x1000, 4096, ST_MEM_ACTIVATION, 1);
}

/* Every op reads a bf16 and an f32 tensor and writes a bf16 one. */
#define OP_DTYPES .inputs = { ST_DT_BF16, ST_DT_F32 }, .outputs = { ST_DT_BF16 }

static void scenario_basic(struct builder *b, bool steps)
{
	static const uint64_t base[3] = { 1000000, 10000000, 20000000 };
	static const uint64_t wall[3] = { 5000000, 2000000, 2400000 };
	static const struct builder_op ops[] = {
		{ .path = "step/forward/layer.0/attn/q_proj", .kind = "attn/q_proj", .phase = "forward",
		  .flops = 1000, .bytes = 100, OP_DTYPES },
		{ .path = "step/forward/layer.0/attn/softmax", .kind = "attn/softmax", .phase = "forward",
		  .flops = 50, .bytes = 200, OP_DTYPES },
		{ .path = "step/forward/layer.1/attn/q_proj", .kind = "attn/q_proj", .phase = "forward",
		  .flops = 1000, .bytes = 100, OP_DTYPES },
		{ .path = "step/backward/layer.0/attn/softmax", .kind = "attn/softmax", .phase = "backward",
		  .flops = 75, .bytes = 300, OP_DTYPES },
		{ .path = "step/optimizer/adamw", .kind = "adamw", .phase = "optimizer",
		  .flops = 400, .bytes = 800, OP_DTYPES },
	};
	struct st_event ev;

	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++)
		builder_op(b, &ops[i]);   /* ids 1 to 5 */

	builder_range(b, "setup", 0, 100000, 100100);
	builder_launch(b, "init_kernel", 7, 0, 100010, 100015, 100050, 100080);

	for (uint32_t i = 0; i < 3; i++) {
		step_content(b, base[i], i);
		if (steps)
			builder_step(b, i, i == 0, base[i], base[i] + wall[i]);
	}
	builder_oom(b, 30000000, 1ull << 30, ST_MEM_ACTIVATION, 2, 4096, 1ull << 29, 2);
	ev = (struct st_event){ .kind = ST_OVERHEAD, .start = 30000100, .end = 30000200 };
	ev.overhead.kind = 1;
	ev.overhead.thread = T1;
	builder_add(b, &ev);
	ev = (struct st_event){ .kind = ST_SYNC, .start = 30000300, .end = 30000400 };
	ev.sync.type = 3;
	ev.sync.stream = 7;
	ev.sync.thread = T1;
	ev.sync.correlation = 777;
	builder_add(b, &ev);
	bundle_writer_count_dropped(b->writer, ST_KERNEL, 2);
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
static void scenario_bench(struct builder *b, uint64_t n)
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
	static const char *const phases[] = { "forward", "backward" }, *const parts[] = { "attn", "ffn" };
	const uint32_t layers = 12;
	uint64_t t = 1000000, done = 0;
	uint32_t step = 0, adamw;
	char path[256], kind[128];

	/* one op per (phase, layer, sub-op), ids from 1 in this order */
	for (int ph = 0; ph < 2; ph++)
		for (uint32_t l = 0; l < layers; l++)
			for (int part = 0; part < 2; part++) {
				const char *const *names = part ? ffn_ops : attn_ops;
				int nn = part ? 6 : 10;
				for (int k = 0; k < nn; k++) {
					snprintf(path, sizeof(path), "step/%s/layer.%u/%s/%s", phases[ph], l,
						 parts[part], names[k]);
					snprintf(kind, sizeof(kind), "%s/%s", parts[part], names[k]);
					builder_op(b, &(struct builder_op){ .path = path, .kind = kind,
						   .phase = phases[ph], .flops = 1000000ull * (k + 1),
						   .bytes = 4096ull * (k + 1), OP_DTYPES });
				}
			}
	adamw = builder_op(b, &(struct builder_op){ .path = "step/optimizer/adamw", .kind = "adamw",
			   .phase = "optimizer", .flops = 1000, .bytes = 1000, OP_DTYPES });

	while (done < n && !b->failed) {
		uint64_t s0 = t;
		uint32_t id = 0;

		builder_push(b, "step", s0);
		for (int ph = 0; ph < 2 && done < n; ph++) {
			builder_push(b, phases[ph], t);
			for (uint32_t l = 0; l < layers && done < n; l++) {
				snprintf(path, sizeof(path), "layer.%u", l);
				builder_push(b, path, t);
				for (int part = 0; part < 2; part++) {
					const char *const *names = part ? ffn_ops : attn_ops;
					int nn = part ? 6 : 10;
					builder_push(b, parts[part], t);
					for (int k = 0; k < nn; k++) {
						uint64_t call_start, call_end, start, end;
						builder_push(b, names[k], t);
						id++;
						t += 200 + rnd() % 50;
						call_start = t;
						call_end = t + 2000 + rnd() % 300;
						start = t + 5000 + rnd() % 1000;
						end = start + 3000 + rnd() % 20000;
						builder_launch(b, kernels[(k + part * 3) % 8], 7, id, call_start, call_end,
							       start, end);
						t += 2500 + rnd() % 400;
						builder_pop(b, t);
						t += 100;
						done++;
					}
					builder_pop(b, t);
				}
				builder_pop(b, t);
				t += 100;
			}
			builder_pop(b, t);
		}
		if (done < n) {
			builder_push(b, "optimizer", t);
			builder_launch(b, "adam_kernel", 7, adamw, t + 100, t + 2100, t + 5000, t + 90000);
			t += 3000;
			builder_pop(b, t);
			done++;
		}
		t += 100000;
		builder_pop(b, t);
		builder_step(b, step, step < 1, s0, t);
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
	struct builder b;

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
	if (!scenario || !out || (strcmp(scenario, "basic") && strcmp(scenario, "nosteps") &&
				  strcmp(scenario, "truncated") && strcmp(scenario, "bench")))
		return usage();

	builder_init(&b);
	builder_small_model(&b, "bf16");
	b.config.warmup_steps = 1;
	b.config.measured_steps = 2;
	b.config.parameters = 128625408;
	b.config.seed = 42;
	b.config.lr = 1e-3;
	builder_h100(&b, "Synthetic H100");
	b.device.driver_version = "580.0";
	b.header.command_line = "st-gen synthetic";
	b.header.hostname = "gen";
	b.thread = T1;
	b.cbid = 211;   /* CUPTI's cudaLaunchKernel, written on every call */
	b.geometry = (struct builder_geometry){ .grid = { 128, 1, 1 }, .block = { 256, 1, 1 },
						.registers = 64, .static_smem = 1024, .dynamic_smem = 4096 };

	if (builder_open(&b, out) < 0)
		return 1;
	if (strcmp(scenario, "bench") == 0)
		scenario_bench(&b, events);
	else
		scenario_basic(&b, strcmp(scenario, "nosteps") != 0);
	if (strcmp(scenario, "truncated") == 0) {
		int failed = b.failed;
		builder_abort(&b);
		return failed;
	}
	return builder_close(&b, "ok") < 0;
}
