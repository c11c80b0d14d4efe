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

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write"))
		return write_bundle(argv[2]);
	test_measure();
	test_no_sizes();
	return check_done("test_plan");
}
