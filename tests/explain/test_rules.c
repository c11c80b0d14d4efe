/*
 * test_rules.c: the rules of graph/rules.c on a hand-built step whose
 * re-timings are worked out by hand below. Times in us (x1000).
 *
 * One stream, its kernels back to back (launched well ahead: the stream
 * decides each), an FP32 run on an H100's datasheet peaks (BF16 989.4,
 * FP32 67.0 TFLOP/s: ratio 14.767):
 *   gemm_a [100, 200]  elementwise_x [200, 220]  elementwise_y [220, 250]
 *   elementwise_z [250, 260]  gemm_b [260, 360]
 * The fixed cost: the shortest kernel, 10 us.
 *   fuse=elementwise: the chain x, y, z between the two products is one
 *     kernel of its largest member's time (no bytes registered): y's 30,
 *     x and z removed: gemm_b [230, 330]
 *   precision=bf16: products 10 + 90 / 14.767, the rest 10 + (t - 10) / 2:
 *     16.095 + 15 + 20 + 10 + 16.095 = 77.190: gemm_b ends at 177.190
 *   batch=x2: 10 + (t - 10) x 2: 190 + 30 + 50 + 10 + 190 = 470: ends at 570
 *   batch=x1: as recorded
 * Named softmax_x, gemm_m, elementwise_z instead: fuse=elementwise removes
 *   the softmax alone between two products (attention): gemm_b [240, 340]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/whatif.h"
#include "graph/graph.h"
#include "graph/rules.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

#define US 1000ull

/* The step above, its three middle kernels named `mid`. */
static void build_named(struct replay *rp, const char *precision, const char *const mid[3])
{
	const struct {
		const char *name;
		uint64_t start, end;
	} k[] = {
		{ "gemm_a", 100, 200 }, { mid[0], 200, 220 }, { mid[1], 220, 250 },
		{ mid[2], 250, 260 }, { "gemm_b", 260, 360 },
	};
	struct builder b;

	builder_init(&b);
	builder_open_replay(&b, rp);
	builder_push(&b, "step", 0);
	for (uint64_t i = 0; i < 5; i++)
		builder_launch(&b, k[i].name, 7, 0, 2 * i * US, (2 * i + 1) * US, k[i].start * US, k[i].end * US);
	builder_pop(&b, 400 * US);
	builder_step(&b, 0, false, 0, 400 * US);
	CHECK(builder_close(&b, "ok") == 0);
	/* a replay in memory has no header: its precision and peaks set here */
	rp->run.has_config = rp->run.has_device = true;
	rp->run.config.precision = strcmp(precision, "bf16") ? ST_FP32 : ST_BF16;
	rp->run.device.peak_fp32_flops = 67.0e12;
	rp->run.device.peak_tf32_flops = 494.7e12;
	rp->run.device.peak_bf16_flops = 989.4e12;
}

static void build(struct replay *rp, const char *precision)
{
	static const char *const plain[3] = { "elementwise_x", "elementwise_y", "elementwise_z" };

	build_named(rp, precision, plain);
}

/* The end of the last kernel (gemm_b) re-timed under `text`, ns; -1 when the rule is refused. */
static double last_end(const struct replay *rp, const char *text)
{
	const struct replay *rps[1] = { rp };
	struct graph g;
	struct graph_rule rule;
	struct graph_facts f;
	struct graph_times t;
	double end = -1;

	CHECK(graph_build(&g, rps, 1, NULL) == 0);
	CHECK(graph_rule_parse(&rule, text) == 0, "%s", text);
	CHECK(whatif_facts(&g, &rule, 1, &f) == 0, "%s", text);
	if (graph_retime(&g, &rule, 1, NULL, &t) == 0) {
		end = (double)t.end[g.act_node[0][4]];
		graph_times_release(&t);
	}
	whatif_facts_release(&f);
	free((char *)rule.pattern);
	graph_release(&g);
	return end;
}

static void test_rules(void)
{
	struct replay rp;

	build(&rp, "fp32");
	CHECK_NEAR(last_end(&rp, "batch=x1"), 360.0 * US, 1e-9);
	CHECK_NEAR(last_end(&rp, "fuse=elementwise"), 330.0 * US, 1e-9);
	/* each kernel's time whole ns: within 5 ns */
	CHECK_NEAR(last_end(&rp, "precision=bf16"), (100 + 2 * (10 + 90 / (989.4 / 67.0)) + 15 + 20 + 10) * US, 3e-5);
	CHECK_NEAR(last_end(&rp, "batch=x2"), 570.0 * US, 1e-9);
	CHECK_NEAR(last_end(&rp, "batch=x0.5"), (100 + 55 + 15 + 20 + 10 + 55) * US, 1e-9);
	replay_release(&rp);

	/* attention: a softmax alone between two products removed; an elementwise kernel alone stays */
	{
		static const char *const attn[3] = { "softmax_x", "gemm_m", "elementwise_z" };

		build_named(&rp, "fp32", attn);
		CHECK_NEAR(last_end(&rp, "fuse=elementwise"), 340.0 * US, 1e-9);
		replay_release(&rp);
	}

	/* a BF16 run: precision=bf16 refused */
	build(&rp, "bf16");
	fprintf(stderr, "(an error line expected next)\n");
	CHECK_NEAR(last_end(&rp, "precision=bf16"), -1, 0);
	replay_release(&rp);
}

/*
 * bucket-mb=M on a naive step: a backward of two kernels on stream 7,
 * bw_0 [100, 200] and bw_1 [200, 300], then two all-reduces of 1,000 bytes
 * each on stream 9, issued after it: [301, 321] (its stream waited for
 * the backward's end: an inferred wait, the typical one of 1 us) and [410,
 * 430] (each 20 us: 20 ns a byte, no latency). bucket-mb=0.001 (1,000 bytes): one a
 * bucket, the first ready once the backward's first half of its time is
 * done (its bytes, half the step's): after bw_0's end, [200, 220] (+ the
 * typical wait), the second after bw_1's, [300, 320]; one bucket of both
 * (bucket-mb=1): after bw_1's end, 40 us, [300, 340].
 */
static void test_bucket(void)
{
	struct builder b;
	struct replay rp;
	const struct replay *rps[1] = { &rp };
	uint32_t op[2];
	static const char *const text[2] = { "bucket-mb=0.001", "bucket-mb=1" };

	builder_init(&b);
	builder_open_replay(&b, &rp);
	op[0] = builder_comm_op(&b, "step/comm/allreduce/a", 1000);
	op[1] = builder_comm_op(&b, "step/comm/allreduce/b", 1000);
	builder_push(&b, "step", 0);
	builder_push(&b, "backward", 90 * US);
	builder_launch(&b, "bw_0", 7, 0, 95 * US, 96 * US, 100 * US, 200 * US);
	builder_launch(&b, "bw_1", 7, 0, 97 * US, 98 * US, 200 * US, 300 * US);
	builder_pop(&b, 99 * US);
	builder_push(&b, "comm", 250 * US);
	builder_launch(&b, BUILDER_NCCL_ALLREDUCE, 9, op[0], 250 * US, 251 * US, 301 * US, 321 * US);
	builder_launch(&b, BUILDER_NCCL_ALLREDUCE, 9, op[1], 402 * US, 403 * US, 410 * US, 430 * US);
	builder_pop(&b, 500 * US);
	builder_pop(&b, 500 * US);
	builder_step(&b, 0, false, 0, 500 * US);
	CHECK(builder_close(&b, "ok") == 0);
	for (int k = 0; k < 2; k++) {
		struct graph g;
		struct graph_rule rule;
		struct graph_times t;
		int32_t a0, a1;
		double w;

		CHECK(graph_build(&g, rps, 1, NULL) == 0);
		CHECK(graph_rule_parse(&rule, text[k]) == 0);
		w = g.typical[GE_WAIT] > 0 ? (double)g.typical[GE_WAIT] : 0;
		a0 = g.act_node[0][2];
		a1 = g.act_node[0][3];
		CHECK(g.nodes[a0].work == GW_COMM && g.nodes[a1].work == GW_COMM);
		if (graph_retime(&g, &rule, 1, NULL, &t) == 0) {
			if (k == 0) {
				CHECK_NEAR((double)t.end[a0], 220.0 * US + w, 1e-6);
				CHECK_NEAR((double)t.end[a1], 320.0 * US + w, 1e-6);
			} else {
				CHECK_NEAR((double)t.end[a1], 340.0 * US + w, 1e-6);
			}
			graph_times_release(&t);
		} else {
			CHECK(0, "%s refused", text[k]);
		}
		graph_release(&g);
	}
	replay_release(&rp);
}

/*
 * data=K with a second thread (PyTorch's autograd engine thread): thread 1
 * calls a [0, 1], loads for 40 us, then copies the batch to the device
 * (cudaMemcpyAsync [41, 42], its copy [43, 44] on stream 7); thread 2 calls
 * b [0, 1], is idle over the whole loading, and launches k [50, 51] (the
 * kernel [60, 70] on stream 7). data=0.5: the loading's 20 us saved on
 * thread 1, and thread 2's gap spanning it shorter by as much: k's call at
 * 30, its kernel at 40 (10 after the call's start, as recorded; the copy
 * now ends at 24). data=1: as recorded.
 */
static void test_data(void)
{
	struct builder b;
	struct replay rp;
	const struct replay *rps[1] = { &rp };
	static const char *const text[2] = { "data=0.5", "data=1" };
	static const double want[2] = { 40, 60 };
	uint64_t c;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_call(&b, "a", 0, 1 * US);
	b.thread = 2;
	builder_call(&b, "b", 0, 1 * US);
	b.thread = 1;
	c = builder_call(&b, "cudaMemcpyAsync", 41 * US, 42 * US);
	builder_memcpy(&b, 1, 1000, c, 7, 0, 43 * US, 44 * US);
	b.thread = 2;
	builder_launch(&b, "k", 7, 0, 50 * US, 51 * US, 60 * US, 70 * US);
	b.thread = 1;
	builder_step(&b, 0, false, 0, 100 * US);
	CHECK(builder_close(&b, "ok") == 0);
	for (int k = 0; k < 2; k++) {
		struct graph g;
		struct graph_rule rule;
		struct graph_times t;

		CHECK(graph_build(&g, rps, 1, NULL) == 0);
		CHECK(graph_rule_parse(&rule, text[k]) == 0);
		if (graph_retime(&g, &rule, 1, NULL, &t) == 0) {
			CHECK_NEAR((double)t.start[g.act_node[0][1]], want[k] * US, 1e-9);
			graph_times_release(&t);
		} else {
			CHECK(0, "%s refused", text[k]);
		}
		graph_release(&g);
	}
	replay_release(&rp);
}

/* The forms, and the refusals, of the rules' texts. */
static void test_parse(void)
{
	static const struct {
		const char *text;
		int kind;
		double factor;
	} ok[] = {
		{ "precision=bf16", GR_PRECISION, 1 }, { "batch=x2", GR_BATCH, 2 }, { "batch=3", GR_BATCH, 3 },
		{ "batch\xc3\x97" "4", GR_BATCH, 4 }, { "fuse=elementwise", GR_FUSE, 1 }, { "bucket-mb=100", GR_BUCKET, 100 },
		{ "fuse=compile", GR_FUSE, 1 },
		{ "data=0.5", GR_DATA, 0.5 }, { "data=0", GR_DATA, 0 },
	};
	static const char *const bad[] = { "precision=fp16", "batch=x0", "batch=", "batch=x1001", "fuse=all",
					   "bucket-mb=0", "bucket-mb=-1", "data=-1", "data=x" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		struct graph_rule r;

		CHECK(graph_rule_parse(&r, ok[i].text) == 0, "%s", ok[i].text);
		CHECK(r.kind == ok[i].kind, "%s: kind %d", ok[i].text, r.kind);
		CHECK_NEAR(r.factor, ok[i].factor, 1e-12);
	}
	fprintf(stderr, "(%zu error lines expected next)\n", sizeof(bad) / sizeof(bad[0]));
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct graph_rule r;

		CHECK(graph_rule_parse(&r, bad[i]) < 0, "%s accepted", bad[i]);
	}
}

/*
 * The built FP32 run (an H200's peaks; `parameters` in its header when not
 * 0) under the first `retimed` of the n rules `texts`, their facts taken
 * over all n as explain takes them once for every --what-if row: where its
 * activity `act` ends, ns; -1 when the re-timing failed.
 */
static double fp32_retimed_end(struct builder *b, struct replay *rp, uint64_t parameters, const char *const *texts,
			       size_t n, size_t retimed, size_t act)
{
	const struct replay *rps[1] = { rp };
	struct graph g;
	struct graph_rule rules[2];
	struct graph_facts f;
	struct graph_times t;
	double end = -1;

	CHECK(builder_close(b, "ok") == 0);
	rp->run.has_config = rp->run.has_device = true;
	rp->run.config.precision = ST_FP32;
	rp->run.config.parameters = parameters;
	rp->run.device.peak_fp32_flops = 67.0e12;
	rp->run.device.peak_tf32_flops = 494.7e12;
	rp->run.device.peak_bf16_flops = 989.4e12;
	CHECK(graph_build(&g, rps, 1, NULL) == 0);
	for (size_t i = 0; i < n && i < 2; i++)
		CHECK(graph_rule_parse(&rules[i], texts[i]) == 0, "%s", texts[i]);
	CHECK(whatif_facts(&g, rules, n, &f) == 0);
	if (graph_retime(&g, rules, retimed, NULL, &t) == 0) {
		end = (double)t.end[g.act_node[0][act]];
		graph_times_release(&t);
	}
	whatif_facts_release(&f);
	graph_release(&g);
	replay_release(rp);
	return end;
}

/*
 * precision=bf16's casts of the FP32 weights to BF16, once a step: a step
 * of 1,000 parameters whose forward launches elementwise_f [100, 110]
 * (the run's shortest kernel, 10 us: unchanged) then gemm_f [110, 210],
 * and whose optimizer launches adamw_kernel [210, 238] (no bytes
 * registered: AdamW's 28 bytes a parameter in its 28 us, 1 byte a ns).
 * The casts, 6 bytes a parameter at that bandwidth, 6 us, are added to the
 * forward's first kernel: adamw ends at 100 + 16 + (10 + 90 / 14.767) +
 * 28; beside fuse=elementwise they are folded into the optimizer (its
 * write of the BF16 copy stays, 2 bytes a parameter): 2 us.
 */
static double casts_end(const char *const *texts, size_t n, size_t retimed)
{
	struct builder b;
	struct replay rp;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_push(&b, "step", 0);
	builder_push(&b, "forward", 0);
	builder_launch(&b, "elementwise_f", 7, 0, 0, 1 * US, 100 * US, 110 * US);
	builder_launch(&b, "gemm_f", 7, 0, 2 * US, 3 * US, 110 * US, 210 * US);
	builder_pop(&b, 10 * US);
	builder_push(&b, "optimizer", 20 * US);
	builder_launch(&b, "adamw_kernel", 7, 0, 20 * US, 21 * US, 210 * US, 238 * US);
	builder_pop(&b, 30 * US);
	builder_pop(&b, 400 * US);
	builder_step(&b, 0, false, 0, 400 * US);
	return fp32_retimed_end(&b, &rp, 1000, texts, n, retimed, 2);
}

static void test_casts(void)
{
	static const char *const bf16[] = { "precision=bf16" }, *const fused[] = { "fuse=elementwise", "precision=bf16" };
	double gemm = 10 + 90 / (989.4 / 67.0);

	static const char *const rows[] = { "precision=bf16", "fuse=elementwise" };

	CHECK_NEAR(casts_end(bf16, 1, 1), (100 + 10 + 6 + gemm + 28) * US, 3e-5);
	CHECK_NEAR(casts_end(fused, 2, 2), (100 + 10 + 2 + gemm + 28) * US, 3e-5);
	/* fuse=elementwise another row's rule: this prediction's casts are not folded */
	CHECK_NEAR(casts_end(rows, 2, 1), (100 + 10 + 6 + gemm + 28) * US, 3e-5);
}

/*
 * precision=bf16's floor on a product: its bytes, halved, at the bandwidth
 * the forward's and backward's memory-bound kernels achieved. A forward of
 * elementwise_m [100, 110] (10,000 bytes: 1 byte a ns; the fixed cost,
 * unchanged), gemm_s [110, 210] (100,000 bytes), softmax_x [210, 230]
 * (20,000 bytes: 1 byte a ns as well) and gemm_v [230, 330] (100,000
 * bytes). In BF16 each product takes 10 + 90 / 14.767 = 16.095 us by its
 * rate, but its 50,000 bytes take 50 us: gemm_s [110, 160], the softmax
 * 10 + 10 / 2 = 15, gemm_v [175, 225]. Beside fuse=elementwise the softmax
 * goes and the products beside it keep their scores on chip (no floor):
 * gemm_v ends at 100 + 10 + 16.095 + 16.095.
 */
static double floor_end(const char *const *texts, size_t n, size_t retimed)
{
	static const struct {
		const char *name;
		uint64_t bytes, start, end;
	} k[] = {
		{ "elementwise_m", 10000, 100, 110 }, { "gemm_s", 100000, 110, 210 },
		{ "softmax_x", 20000, 210, 230 }, { "gemm_v", 100000, 230, 330 },
	};
	struct builder b;
	struct replay rp;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	for (uint32_t i = 0; i < 4; i++)
		builder_op(&b, &(struct builder_op){ .id = i + 1, .path = k[i].name, .kind = k[i].name,
						     .phase = "forward", .bytes = k[i].bytes });
	builder_push(&b, "step", 0);
	builder_push(&b, "forward", 0);
	for (uint32_t i = 0; i < 4; i++)
		builder_launch(&b, k[i].name, 7, i + 1, 2 * i * US, (2 * i + 1) * US, k[i].start * US, k[i].end * US);
	builder_pop(&b, 10 * US);
	builder_pop(&b, 400 * US);
	builder_step(&b, 0, false, 0, 400 * US);
	return fp32_retimed_end(&b, &rp, 0, texts, n, retimed, 3);
}

static void test_floor(void)
{
	static const char *const bf16[] = { "precision=bf16" }, *const fused[] = { "precision=bf16", "fuse=elementwise" };
	double gemm = 10 + 90 / (989.4 / 67.0);

	CHECK_NEAR(floor_end(bf16, 1, 1), 225.0 * US, 3e-5);
	CHECK_NEAR(floor_end(fused, 2, 2), (100 + 10 + 2 * gemm) * US, 3e-5);
	/* fuse=elementwise another row's rule: this prediction's products keep their floor */
	CHECK_NEAR(floor_end(fused, 2, 1), 225.0 * US, 3e-5);
}

int main(void)
{
	test_parse();
	test_rules();
	test_bucket();
	test_data();
	test_casts();
	test_floor();
	return check_done("test_rules");
}
