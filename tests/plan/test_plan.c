/*
 * test_plan.c: `steptrace plan` from a bundle (analyze/plan.h): what
 * plan_measure takes from a synthetic run with answers worked out by hand
 * (P, the bytes per category at the memory peak, the achieved FLOP/s), the
 * options it fills from the run's configuration, and the TP, PP and bubble
 * formulas.
 *
 * `test_plan --write PATH` writes the run as a bundle for bundle.sh, which
 * checks the tables of `steptrace plan PATH`.
 *
 * The run: rank 1 of 4 (bucketed DDP), the small model's sizes (d_model
 * 768, d_ff 3072, 12 blocks) at batch 8 × 2048 tokens in bf16, P =
 * 1,000,000,000. One measured step [1000, 10,000,000] ns (a warm-up step
 * before it):
 *   parameters 4 GB, gradients 4 GB, optimizer state 8 GB (allocated before
 *   the steps, never freed); in the measured step activations 3 GB and a
 *   temporary 0.5 GB, then both freed: the peak is 19.5 GB, W 4, G 4, O 8,
 *   A 3, R 0.5 (GB = 10^9 B).
 *   One op of 2e9 FLOPs whose kernel runs 1 ms in the measured step: the
 *   achieved rate is 2e9 / 1e-3 s = 2e12 FLOP/s (the warm-up's kernel,
 *   2 ms, does not count).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/plan.h"
#include "replay/replay.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

#define GB 1000000000ull

static void run(struct builder *b)
{
	builder_init(b);
	builder_small_model(b, "bf16");
	b->config.batch = 8;
	b->config.ctx = 2048;
	b->config.parameters = 1000000000ull;
	builder_h100(b, "NVIDIA H100 80GB HBM3");
	builder_peaks(b, 51.6e12, 373e12, 725e12, 3e12);
	builder_rank(b, 1, 4, 0x5eed, "bucket");
}

static void events(struct builder *b)
{
	builder_op(b, &(struct builder_op){ .id = 1, .path = "step/forward/layer.0/ffn/w1", .kind = "w1",
		   .phase = "forward", .flops = 2000000000ull, .bytes = 1000,
		   .inputs = { ST_DT_BF16 }, .outputs = { ST_DT_BF16 } });
	builder_alloc(b, 10, 0x100000000000, 4 * GB, ST_MEM_PARAMETER, 0);
	builder_alloc(b, 20, 0x200000000000, 4 * GB, ST_MEM_GRADIENT, 0);
	builder_alloc(b, 30, 0x300000000000, 8 * GB, ST_MEM_OPTIMIZER, 0);
	/* warm-up step: its kernel takes 2 ms, and counts not */
	builder_push(b, "step", 100);
	builder_launch(b, "gemm_kernel", 7, 1, 110, 120, 200, 2000200);
	builder_pop(b, 2100000);
	builder_step(b, 0, true, 100, 2100000);
	/* the measured step */
	builder_push(b, "step", 3000000);
	builder_alloc(b, 3000100, 0x400000000000, 3 * GB, ST_MEM_ACTIVATION, 1);
	builder_alloc(b, 3000200, 0x500000000000, GB / 2, ST_MEM_TEMPORARY, 1);
	builder_launch(b, "gemm_kernel", 7, 1, 3000300, 3000400, 3001000, 4001000);
	builder_free(b, 5000000, 0x500000000000, 0, 0, 1);
	builder_free(b, 5000100, 0x400000000000, 0, 0, 1);
	builder_pop(b, 9000000);
	builder_step(b, 1, false, 3000000, 9000000);
}

static int write_bundle(const char *path)
{
	struct builder b;

	run(&b);
	if (builder_open(&b, path) < 0)
		return 1;
	events(&b);
	return builder_close(&b, "ok") < 0;
}

/* Through a bundle on disk: the run's facts (configuration, device, rank) live in its header. */
static void test_measure(void)
{
	struct replay rp;
	struct plan_measured m;
	struct plan_opts o = { .chip = PLAN_CHIP_H100, .tp = 1, .pp = 1, .mesh_x = 1, .mesh_y = 1 };
	const char *dir = getenv("TMPDIR");
	char path[512];

	snprintf(path, sizeof(path), "%s/test_plan.%ld.stb", dir && *dir ? dir : "/tmp", (long)getpid());
	CHECK(write_bundle(path) == 0);
	if (replay_load(&rp, path, NULL) < 0) {
		CHECK(!"the bundle loads");
		unlink(path);
		return;
	}
	unlink(path);
	CHECK(plan_measure(&rp, &m) == 0);
	CHECK_U64(m.params, 1000000000ull);
	CHECK(!m.params_from_bytes);
	CHECK_U64(m.peak, 19 * GB + GB / 2);
	CHECK_U64(m.weights, 4 * GB);
	CHECK_U64(m.gradients, 4 * GB);
	CHECK_U64(m.optimizer, 8 * GB);
	CHECK_U64(m.activations, 3 * GB);
	CHECK_U64(m.other, GB / 2);
	CHECK_NEAR(m.flops, 2e9, 1e-12);
	CHECK_NEAR(m.kernel_ns, 1e6, 1e-12);
	CHECK_NEAR(m.achieved, 2e12, 1e-12);
	CHECK_NEAR(m.peak_flops, 725e12, 1e-12);
	CHECK_U64(m.rank, 1);
	CHECK_U64(m.world_size, 4);
	CHECK(m.act_bytes == 2);

	CHECK(plan_opts_from_bundle(&rp, &m, &o) == 0);
	CHECK(o.d_model == 768 && o.d_ff == 3072 && o.blocks == 12);
	CHECK(o.batch == 8 && o.seq == 2048);
	CHECK_U64(plan_params(&o), 1000000000ull);
	/* D: the run's world size, 4, unless --dp or --fsdp */
	CHECK(plan_dp_degree(&o) == 4);
	o.dp = 2;
	CHECK(plan_dp_degree(&o) == 2);
	o.dp = 0;
	/* FSDP: (W + G + O)/N + A/2 + A/(2N) + R; at N = 4: 4 + 1.5 + 0.375 + 0.5 = 6.375 GB */
	CHECK_NEAR(plan_fsdp_bytes(&o, 4), 6.375e9, 1e-12);
	/* the smallest N on a 7 GB device: ⌈(16 + 1.5) / (7 − 1.5 − 0.5)⌉ = ⌈3.5⌉ = 4 */
	CHECK(plan_fsdp_min(&o, 7e9) == 4);
	/* TP 2: 12 × 4 × 2·1/2 × 8 × 2048 × 768 × 2 B = 48 × 25,165,824 = 1,207,959,552 B */
	o.tp = 2;
	CHECK_NEAR(plan_tp_bytes(&o), 1207959552.0, 1e-12);
	/* its activations: A × (768 + 3072/2)/(768 + 3072) = 3 GB × 0.6 = 1.8 GB */
	CHECK_NEAR(plan_parallel_activation_bytes(&o), 1.8e9, 1e-12);
	/* PP 4 (T 2): 12/4 blocks; PP sends 2 × 8 × 2048 × 768 × 2 B = 50,331,648 B */
	o.pp = 4;
	CHECK_NEAR(plan_tp_bytes(&o), 301989888.0, 1e-12);
	CHECK_NEAR(plan_pp_bytes(&o), 50331648.0, 1e-12);
	/* bubble (PP−1)/(M+PP−1): M = 1: 3/4; M = 8: 3/11 */
	CHECK_NEAR(plan_bubble(&o), 0.75, 1e-12);
	o.microbatches = 8;
	CHECK_NEAR(plan_bubble(&o), 3.0 / 11, 1e-12);
	o.pp = 1;
	CHECK_NEAR(plan_pp_bytes(&o), 0, 0);
	CHECK_NEAR(plan_bubble(&o), 0, 0);
	replay_release(&rp);
}

/* No run configuration's sizes (a foreign program's): P from the parameter bytes, no sizes. */
static void test_no_sizes(void)
{
	struct builder b;
	struct replay rp;
	struct plan_measured m;
	struct plan_opts o = { .tp = 1, .pp = 1, .mesh_x = 1, .mesh_y = 1 };

	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_alloc(&b, 10, 0x1000, 4000, ST_MEM_PARAMETER, 0);
	CHECK(builder_close(&b, "ok") == 0);
	CHECK(plan_measure(&rp, &m) == 0);
	/* no parameter count: the parameter bytes / 4 B */
	CHECK_U64(m.params, 1000);
	CHECK(m.params_from_bytes);
	CHECK(m.achieved == 0);
	CHECK(plan_opts_from_bundle(&rp, &m, &o) == 0);
	CHECK(o.d_model == 0 && o.d_ff == 0 && o.blocks == 0 && o.batch == 0 && o.seq == 0);
	CHECK_U64(plan_params(&o), 1000);
	replay_release(&rp);
}

/*
 * A PyTorch recording without allocation categories (record's default):
 * P from the optimizer's parameter groups (1.8), counted exactly, where
 * there is no parameter byte to divide; with parameter bytes too, the
 * groups still win (they count what requires a gradient, not what was
 * tagged).
 */
static void test_param_groups(void)
{
	const struct st_param_group groups[] = { { 50, 21000000, 84000000, ST_DT_F32 },
						  { 3, 130240, 520960, ST_DT_F32 } };

	for (int tagged = 0; tagged <= 1; tagged++) {
		struct builder b;
		struct replay rp;
		struct plan_measured m;
		struct plan_opts o = { .tp = 1, .pp = 1, .mesh_x = 1, .mesh_y = 1 };

		char path[] = "/tmp/st-plan-groups-XXXXXX";
		int fd = mkstemp(path);

		CHECK(fd >= 0);
		close(fd);
		builder_init(&b);
		CHECK(builder_open(&b, path) == 0);
		if (tagged)
			builder_alloc(&b, 10, 0x1000, 4000, ST_MEM_PARAMETER, 0);
		CHECK(bundle_writer_set_param_groups(b.writer, groups, 2) == 0);
		CHECK(builder_close(&b, "ok") == 0);
		CHECK(replay_load(&rp, path, NULL) == 0);
		unlink(path);
		CHECK(plan_measure(&rp, &m) == 0);
		CHECK_U64(m.params, 21130240);
		CHECK(m.params_from_groups && !m.params_from_bytes);
		CHECK(plan_opts_from_bundle(&rp, &m, &o) == 0);
		CHECK_U64(plan_params(&o), 21130240);
		replay_release(&rp);
	}
}

/*
 * From the sizes, the formulas the tables print, each against a published
 * or hand-derived number (tests/plan/plan.sh names the sources in full).
 */
static void test_sizes(void)
{
	struct plan_opts o = { .chip = PLAN_CHIP_H100, .tp = 1, .pp = 1, .mesh_x = 1, .mesh_y = 1 };
	struct plan_split s[16];
	struct plan_bound b;
	int n, best;

	/* ZeRO (Rajbhandari et al.) Figure 1: Ψ = 7.5e9, N_d = 64, K = 12: 120, 31.4, 16.6, 1.9 GB */
	o.params = 7500000000ull;
	o.params_given = true;
	o.dp = 64;
	CHECK_NEAR(plan_zero_state_bytes(&o, PLAN_DP, PLAN_MIXED), 120e9, 1e-12);
	CHECK_NEAR(plan_zero_state_bytes(&o, PLAN_ZERO1, PLAN_MIXED), 31.40625e9, 1e-12);
	CHECK_NEAR(plan_zero_state_bytes(&o, PLAN_ZERO2, PLAN_MIXED), 16.640625e9, 1e-12);
	CHECK_NEAR(plan_zero_state_bytes(&o, PLAN_ZERO3, PLAN_MIXED), 1.875e9, 1e-12);
	/* autocast, FP32 weights used directly: 8Ψ + 8Ψ/64, 4Ψ + 12Ψ/64 */
	CHECK_NEAR(plan_zero_state_bytes(&o, PLAN_ZERO1, PLAN_AUTOCAST), 60.9375e9, 1e-12);
	CHECK_NEAR(plan_zero_state_bytes(&o, PLAN_ZERO2, PLAN_AUTOCAST), 31.40625e9, 1e-12);

	/* the 70B-class FFN-only model: 128 × 2 × 8192 × 32768, TP 8 × PP 4, 16 × 4096 tokens in 16 micro-batches */
	memset(&o, 0, sizeof(o));
	o.chip = PLAN_CHIP_H100;
	o.d_model = 8192;
	o.d_ff = 32768;
	o.blocks = 128;
	o.ffn_only = true;
	o.tp = 8;
	o.pp = 4;
	o.dp = 8;
	o.batch = 16;
	o.seq = 4096;
	o.microbatches = 16;
	o.mesh_x = o.mesh_y = 1;
	CHECK_U64(plan_params(&o), 68719476736ull);
	/* GPipe: 32 × 16 × 4096 × (8192 + 4096) × 2 B; 1F1B (Narayanan et al. §2.2.1): × min(4, 16)/16 */
	CHECK_NEAR(plan_schedule_activation_bytes(&o, PLAN_GPIPE), 51539607552.0, 1e-12);
	CHECK_NEAR(plan_schedule_activation_bytes(&o, PLAN_1F1B), 12884901888.0, 1e-12);
	/* Megatron: one all-reduce forward and one backward per FFN-only block: 32 × 2 × 2 × 7/8 × 65,536 × 8192 × 2 B */
	CHECK_NEAR(plan_tp_bytes(&o), 120259084288.0, 1e-12);
	CHECK_NEAR(plan_pp_bytes(&o), 2147483648.0, 1e-12);
	CHECK_NEAR(plan_bubble(&o), 3.0 / 19, 1e-12);
	/* FSDP after the T·PP split at N = 2: 16·P/32/2 + A/2 + A/4 with A the 1F1B activations */
	CHECK_NEAR(plan_fsdp_bytes(&o, 2), 16.0 * 68719476736.0 / 64 + 0.75 * 12884901888.0, 1e-12);

	/* the seeds' (c): XXL on v5p, X = 16, Y = 4, M_X = 2, M_Y = 1, α = 2,555.56 (Scaling Book) */
	memset(&o, 0, sizeof(o));
	o.chip = PLAN_CHIP_TPU_V5P;
	o.d_model = 16384;
	o.d_ff = 53248;
	o.blocks = 126;
	o.ffn_only = true;
	o.tp = o.pp = 1;
	o.mesh_x = o.mesh_y = 1;
	b = plan_compute_bound(&o, 16, 4, 2, 1, 4.6e14, 1.8e11, 1.8e11);
	CHECK_NEAR(b.fsdp_only, 4.6e14 / 1.8e11 / 8, 1e-12);
	CHECK_NEAR(b.tp_share, 4.6e14 / 1.8e11 * 4 / 53248, 1e-12);
	CHECK(b.tp_ok);
	CHECK_NEAR(b.summed, 395.3392281629617, 1e-9);
	/* Y = 32 > M_Y·F/α = 20.84: TP-bound */
	b = plan_compute_bound(&o, 2, 32, 1, 1, 4.6e14, 1.8e11, 1.8e11);
	CHECK(!b.tp_ok);
	/* SwiGLU's three matrices: the TP bound 3·F/(2α) */
	o.ffn_matrices = 3;
	b = plan_compute_bound(&o, 16, 4, 2, 1, 4.6e14, 1.8e11, 1.8e11);
	CHECK_NEAR(b.tp_max, 3 * 53248 / (2 * 4.6e14 / 1.8e11), 1e-12);
	o.ffn_matrices = 0;

	/* (d) on 64 v5p: the smallest overlapped batch at X = 4 × Y = 16 (M_X = 2, M_Y = 1), 80 tokens per device */
	o.devices = 64;
	CHECK(plan_devices_search(&o, s, 16, &n, &best) == 0);
	CHECK(n == 7);
	CHECK(best >= 0 && s[best].x == 4 && s[best].y == 16 && s[best].mx == 2 && s[best].my == 1);
	CHECK(best >= 0 && s[best].per_device == 80);
	/* too few rows for the splits: refused, not overrun */
	CHECK(plan_devices_search(&o, s, 3, &n, &best) < 0);
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write"))
		return write_bundle(argv[2]);
	test_measure();
	test_no_sizes();
	test_param_groups();
	test_sizes();
	return check_done("test_plan");
}
