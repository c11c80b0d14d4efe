/*
 * test_flops.c: flops_compute and flops_report on a replay built by hand,
 * with FLOPs, bytes, times and peaks chosen so every column is known:
 *
 * peaks: fp32 50, tf32 400, bf16/fp16 800 TFLOP/s, 2 TB/s; run precision tf32.
 * Steps: 0 warm-up (every kernel 1 us), 1 and 2 measured (identical):
 *
 *   op  path                                  FLOPs  bytes  in    kernels (us)
 *   1   step/forward/layer.0/attn/scores      4e9    20e6   bf16  20
 *   2   step/forward/layer.1/attn/scores      4e9    20e6   bf16  30
 *   3   step/forward/layer.0/attn/softmax     50e6   40e6   bf16  15 + 25
 *   4   step/forward/layer.0/attn/av          4e9    8e6    bf16  10
 *   5   step/forward/layer.0/ffn/w1           2e9    4e6    f32   25   (tf32 run: tf32 peak)
 *   6   step/backward/layer.0/attn/softmax    60e6   60e6   f32   60
 *   7   step/optimizer/adamw                  0      100e6  f32   100
 *   -   nccl_orphan (no op)                                       10
 *
 * By kind, per measured step (by hand):
 *   optimizer/adamw        100 us  -      GB/s 1000  memory  50%
 *   backward/attn/softmax   60 us  1 TF/s  I 1     bound 2    memory  50%
 *   forward/attn/scores     50 us  160     I 200   bound 400  memory  40%
 *   forward/attn/softmax    40 us  1.25    I 1.25  bound 2.5  memory  50%
 *   forward/ffn/w1          25 us  80      I 500   bound 400  compute 20% (tf32)
 *   (no op)                 10 us
 *   forward/attn/av         10 us  400     I 500   bound 800  compute 50%
 * GEMM share 85/295; forward 85/125; softmax/(scores+av) time 40/60, FLOPs 0.05/12.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/flops.h"
#include "lib/error.h"
#include "render/roofline_svg.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

struct op_spec {
	const char *path, *kind, *phase, *name;
	uint64_t flops, bytes;
	uint8_t dtype;
};

static const struct op_spec ops[] = {   /* ids 1 to 7 */
	{ "step/forward/layer.0/attn/scores", "attn/scores", "forward", "scores", 4000000000ull, 20000000,
	  ST_DT_BF16 },
	{ "step/forward/layer.1/attn/scores", "attn/scores", "forward", "scores", 4000000000ull, 20000000,
	  ST_DT_BF16 },
	{ "step/forward/layer.0/attn/softmax", "attn/softmax", "forward", "softmax", 50000000, 40000000,
	  ST_DT_BF16 },
	{ "step/forward/layer.0/attn/av", "attn/av", "forward", "av", 4000000000ull, 8000000, ST_DT_BF16 },
	{ "step/forward/layer.0/ffn/w1", "ffn/w1", "forward", "w1", 2000000000ull, 4000000, ST_DT_F32 },
	{ "step/backward/layer.0/attn/softmax", "attn/softmax", "backward", "softmax", 60000000, 60000000,
	  ST_DT_F32 },
	{ "step/optimizer/adamw", "adamw", "optimizer", "adamw", 0, 100000000, ST_DT_F32 },
};

/* (op id, kernel name, duration in us) launched in order within each step */
static const struct { uint32_t op; const char *name; uint32_t us; } launches[] = {
	{ 1, "sm90_xmma_gemm_bf16", 20 }, { 2, "sm90_xmma_gemm_bf16", 30 }, { 3, "softmax_kernel", 15 },
	{ 3, "softmax_kernel", 25 }, { 4, "sm90_xmma_gemm_bf16", 10 }, { 5, "sm90_xmma_gemm_tf32", 25 },
	{ 6, "softmax_kernel", 60 }, { 7, "adamw_kernel", 100 }, { 0, "nccl_orphan", 10 },
};

static void build(struct replay *rp)
{
	struct builder b;

	builder_init(&b);
	builder_open_replay(&b, rp);
	for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		const struct op_spec *o = &ops[i];
		builder_op(&b, &(struct builder_op){ .id = (uint32_t)i + 1, .name = o->name, .path = o->path,
			   .kind = o->kind, .phase = o->phase, .flops = o->flops, .bytes = o->bytes,
			   .inputs = { o->dtype, o->dtype }, .outputs = { o->dtype } });
	}
	for (uint32_t s = 0; s < 3; s++) {
		uint64_t t0 = 1000000ull * (s + 1), t = t0 + 1000;

		builder_step(&b, s, s == 0, t0, t0 + 900000);
		for (size_t i = 0; i < sizeof(launches) / sizeof(launches[0]); i++) {
			uint64_t start = t + 1000, end = start + (s == 0 ? 1000 : launches[i].us * 1000ull);

			if (launches[i].op)
				builder_launch(&b, launches[i].name, 7, launches[i].op, t, t + 500, start, end);
			else   /* the orphan has no launching call */
				builder_kernel(&b, launches[i].name, 0, 7, 0, start, end);
			t = end + 1000;
		}
	}
	if (builder_close(&b, NULL) < 0)
		exit(2);
}

static const struct flops_row *find(const struct flops_result *res, const char *name)
{
	for (size_t i = 0; i < res->n_rows; i++)
		if (!strcmp(res->rows[i].name, name))
			return &res->rows[i];
	CHECK(!"missing row", "no row '%s'", name);
	return NULL;
}

/* name, time us, instances, kernels, GFLOP, MB, TFLOP/s, GB/s, FLOP/B, bound TFLOP/s, percent, bound */
struct want {
	const char *name;
	double us, inst, kern, gflop, mb, tflops, gbs, intensity, bound, pct;
	enum flops_bound by;
	const char *prec;
};

static void check_row(const struct flops_result *res, const struct want *w)
{
	const struct flops_row *r = find(res, w->name);

	if (!r)
		return;
	CHECK_NEAR(r->time_ns, w->us * 1e3, 1e-9);
	CHECK_NEAR(r->instances, w->inst, 1e-9);
	CHECK_NEAR(r->kernels, w->kern, 1e-9);
	CHECK_NEAR(r->flops, w->gflop * 1e9, 1e-9);
	CHECK_NEAR(r->bytes, w->mb * 1e6, 1e-9);
	CHECK_NEAR(flops_row_tflops(r), w->tflops, 1e-9);
	CHECK_NEAR(flops_row_gbs(r), w->gbs, 1e-9);
	CHECK_NEAR(flops_row_intensity(r), w->intensity, 1e-9);
	CHECK_NEAR(flops_row_bound_tflops(r), w->bound, 1e-9);
	CHECK_NEAR(flops_row_percent(r), w->pct, 1e-9);
	CHECK(r->bound == w->by);
	if (w->prec)
		CHECK_STR(flops_precision_name(r->precision), w->prec);
}

/*
 * The report as `steptrace flops` prints it (with the dtype columns); in
 * CSV, with what went to stderr (the notes) after a line "[stderr]".
 */
static char *render(const struct flops_result *res, int top, enum out_format fmt)
{
	struct report *r = report_new();
	char *buf = NULL, *err, *all;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct capture c;
	struct flops_result shown = *res;

	shown.dtypes = true;
	flops_report(r, &shown, top, NULL);
	capture_begin(&c, stderr);
	if (!f || report_print(r, fmt, f) < 0)
		exit(2);
	err = capture_end(&c);
	fclose(f);
	report_free(r);
	if (fmt != OUT_CSV) {
		free(err);
		return buf;
	}
	all = malloc(strlen(buf) + strlen(err) + 16);
	if (!all)
		exit(2);
	sprintf(all, "%s[stderr]\n%s", buf, err);
	free(buf);
	free(err);
	return all;
}

static void set_header(struct replay *rp, double tf32_peak)
{
	struct replay_run *run = &rp->run;

	memset(run, 0, sizeof(*run));
	run->has_header = run->has_config = run->has_device = true;
	run->config.precision = ST_TF32;
	run->config.precision_name = "tf32";
	run->device.peak_fp32_flops = 50e12;
	run->device.peak_tf32_flops = tf32_peak;
	run->device.peak_bf16_flops = 800e12;
	run->device.peak_fp16_flops = 800e12;
	run->device.peak_bandwidth = 2e12;
	run->device.peak_source = ST_PEAK_DATASHEET;
}

/* No header at all, as a replay built without a file. */
static void clear_header(struct replay *rp)
{
	memset(&rp->run, 0, sizeof(rp->run));
}

static void test_by_kind(struct replay *rp)
{
	struct flops_options opt = { .by = FLOPS_BY_KIND };
	struct flops_result res;
	static const struct want want[] = {
		{ "optimizer/adamw", 100, 1, 1, 0, 100, NAN, 1000, NAN, NAN, 50, BOUND_MEMORY, "fp32" },
		{ "backward/attn/softmax", 60, 1, 1, 0.06, 60, 1, 1000, 1, 2, 50, BOUND_MEMORY, "fp32" },
		{ "forward/attn/scores", 50, 2, 2, 8, 40, 160, 800, 200, 400, 40, BOUND_MEMORY, "bf16" },
		{ "forward/attn/softmax", 40, 1, 2, 0.05, 40, 1.25, 1000, 1.25, 2.5, 50, BOUND_MEMORY, "fp32" },
		{ "forward/ffn/w1", 25, 1, 1, 2, 4, 80, 160, 500, 400, 20, BOUND_COMPUTE, "tf32" },
		{ "forward/attn/av", 10, 1, 1, 4, 8, 400, 800, 500, 800, 50, BOUND_COMPUTE, "bf16" },
	};
	static const char *const order[] = {
		"optimizer/adamw", "backward/attn/softmax", "forward/attn/scores", "forward/attn/softmax",
		"forward/ffn/w1", "(no op)", "forward/attn/av",
	};

	CHECK(flops_compute(rp, &opt, &res) == 0);
	CHECK(res.n_rows == 7);
	for (size_t i = 0; i < 7 && i < res.n_rows; i++)
		CHECK_STR(res.rows[i].name, order[i]);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		check_row(&res, &want[i]);
	const struct flops_row *noop = find(&res, "(no op)");
	if (noop) {
		CHECK(noop->no_op);
		CHECK_NEAR(noop->time_ns, 10e3, 1e-9);
		CHECK_NEAR(noop->kernels, 1, 1e-9);
		CHECK(isnan(flops_row_percent(noop)));
	}
	CHECK_NEAR(res.divisor, 2, 1e-9);
	CHECK_NEAR(res.kernel_ns, 295e3, 1e-9);
	CHECK_NEAR(res.gemm_ns, 85e3, 1e-9);
	CHECK_NEAR(res.phase_kernel_ns[0], 125e3, 1e-9);
	CHECK_NEAR(res.phase_gemm_ns[0], 85e3, 1e-9);
	CHECK_NEAR(res.phase_kernel_ns[1], 60e3, 1e-9);
	CHECK_NEAR(res.phase_gemm_ns[1], 0, 1e-9);
	CHECK(res.attention[0].present);
	CHECK_NEAR(res.attention[0].softmax_ns, 40e3, 1e-9);
	CHECK_NEAR(res.attention[0].matmul_ns, 60e3, 1e-9);
	CHECK_NEAR(res.attention[0].softmax_flops, 50e6, 1e-9);
	CHECK_NEAR(res.attention[0].matmul_flops, 12e9, 1e-9);

	char *text = render(&res, 0, OUT_CSV);
	CHECK_STR(text,
		"Time (%),Time (ms),Instances,Kernels,GFLOP,Min MB,TFLOP/s,GB/s,FLOP/B,Peak Used,Bound (TFLOP/s),Bound by,"
		"Of Bound (%),Inputs,Outputs,Name\n"
		/* no FLOPs: no peak used, whatever the dtype */
		"33.9,0.100,1,1,0.000,100.000,,1000.0,,,,memory,50.0,\"f32,f32\",f32,optimizer/adamw\n"
		"20.3,0.060,1,1,0.060,60.000,1.00,1000.0,1.00,fp32,2.00,memory,50.0,\"f32,f32\",f32,backward/attn/softmax\n"
		"16.9,0.050,2,2,8.000,40.000,160.00,800.0,200.00,bf16,400.00,memory,40.0,\"bf16,bf16\",bf16,forward/attn/scores\n"
		/* bf16 data off the matrix units: the fp32 peak, and Inputs says bf16 */
		"13.6,0.040,1,2,0.050,40.000,1.25,1000.0,1.25,fp32,2.50,memory,50.0,\"bf16,bf16\",bf16,forward/attn/softmax\n"
		"8.5,0.025,1,1,2.000,4.000,80.00,160.0,500.00,tf32,400.00,compute,20.0,\"f32,f32\",f32,forward/ffn/w1\n"
		"3.4,0.010,,1,,,,,,,,,,,,(no op)\n"
		"3.4,0.010,1,1,4.000,8.000,400.00,800.0,500.00,bf16,800.00,compute,50.0,\"bf16,bf16\",bf16,forward/attn/av\n"
		"[stderr]\n"
		"device peaks (datasheet): fp32 50.0, tf32 400.0, bf16 800.0, fp16 800.0 TFLOP/s; bandwidth 2000 GB/s\n"
		"Bound = min(the peak of Peak Used, FLOP/B x bandwidth): a matrix product's input dtype's (fp32 inputs: "
		"tf32 in a tf32 run), fp32's for every other op whatever its dtype, none for a row without FLOPs "
		"(bandwidth alone); Of Bound = roofline time / measured time\n"
		"GEMM share of GPU time: 28.8% (0.085 of 0.295 ms of kernels per step); forward 68.0%, backward 0.0%, optimizer 0.0%\n"
		"attention forward: softmax takes 0.667x the time of scores+av (0.040 vs 0.060 ms) for 0.0042x their FLOPs (0.050 vs 12.000 GFLOP): 160.0x the time per FLOP\n");
	free(text);

	/* flops_compute by kind leaves the dtypes out (the HTML report's table): as wide as it was */
	{
		struct report *r = report_new();
		char *buf = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&buf, &len);

		CHECK(!res.dtypes);
		flops_report(r, &res, 0, NULL);
		CHECK(f && report_print(r, OUT_MD, f) == 0);
		fclose(f);
		CHECK(strstr(buf, "| Peak Used |") && !strstr(buf, "| Inputs |"), "%s", buf);
		free(buf);
		report_free(r);
	}

	text = render(&res, 2, OUT_TABLE);
	CHECK(strstr(text, "2 of 7 rows shown (--top 2)") != NULL);
	CHECK(strstr(text, "forward/attn/scores") == NULL);
	free(text);
	flops_result_release(&res);
}

static void test_by_op_and_filters(struct replay *rp)
{
	struct flops_options opt = { .by = FLOPS_BY_OP };
	struct flops_result res;

	CHECK(flops_compute(rp, &opt, &res) == 0);
	CHECK(res.n_rows == 8);
	check_row(&res, &(struct want){ "step/forward/layer.1/attn/scores", 30, 1, 1, 4, 20, 4e9 / 30e-6 / 1e12,
					20e6 / 30e-6 / 1e9, 200, 400, 100.0 * 10 / 30, BOUND_MEMORY, "bf16" });
	flops_result_release(&res);

	opt = (struct flops_options){ .by = FLOPS_BY_KIND, .phase = "backward" };
	CHECK(flops_compute(rp, &opt, &res) == 0);
	CHECK(res.n_rows == 1);            /* the orphan has no range, so no phase */
	if (res.n_rows)
		CHECK_STR(res.rows[0].name, "backward/attn/softmax");
	CHECK_NEAR(res.kernel_ns, 60e3, 1e-9);
	flops_result_release(&res);

	/* no ranges in this replay: --range matches the op's path */
	opt = (struct flops_options){ .by = FLOPS_BY_KIND, .range = "layer.*/attn/softmax" };
	CHECK(flops_compute(rp, &opt, &res) == 0);
	CHECK(res.n_rows == 2);
	CHECK(!res.attention[0].present || res.attention[0].matmul_ns == 0);
	flops_result_release(&res);

	/* warm-up included: 3 steps, the warm-up's kernels last 1 us each */
	opt = (struct flops_options){ .by = FLOPS_BY_KIND, .include_warmup = true };
	CHECK(flops_compute(rp, &opt, &res) == 0);
	CHECK_NEAR(res.divisor, 3, 1e-9);
	check_row(&res, &(struct want){ "forward/attn/scores", 102.0 / 3, 2, 2, 8, 40, 24e9 / 102e-6 / 1e12,
					120e6 / 102e-6 / 1e9, 200, 24e9 / 60e-6 / 1e12, 100.0 * 60 / 102,
					BOUND_MEMORY, "bf16" });
	flops_result_release(&res);
}

static void test_missing_peaks(struct replay *rp)
{
	struct flops_options opt = { .by = FLOPS_BY_KIND };
	struct flops_result res;
	const struct flops_row *r;
	char *text;

	set_header(rp, 0);                 /* no tf32 peak: only the tf32 row loses its bound */
	CHECK(flops_compute(rp, &opt, &res) == 0);
	CHECK(!res.peaks_missing);
	if ((r = find(&res, "forward/ffn/w1")) != NULL) {
		CHECK(r->roof_ns < 0);
		CHECK(isnan(flops_row_percent(r)));
	}
	if ((r = find(&res, "forward/attn/av")) != NULL)
		CHECK_NEAR(flops_row_percent(r), 50, 1e-9);
	text = render(&res, 0, OUT_CSV);
	CHECK(strstr(text, "8.5,0.025,1,1,2.000,4.000,80.00,160.0,500.00,tf32,,,,\"f32,f32\",f32,forward/ffn/w1\n") != NULL);
	free(text);
	flops_result_release(&res);

	clear_header(rp);
	CHECK(flops_compute(rp, &opt, &res) == 0);
	CHECK(res.peaks_missing);
	text = render(&res, 0, OUT_CSV);
	CHECK(strstr(text, "the header has no device peaks") != NULL);
	CHECK(strstr(text, "16.9,0.050,2,2,8.000,40.000,160.00,800.0,200.00,bf16,,,,\"bf16,bf16\",bf16,forward/attn/scores\n") != NULL);
	free(text);
	flops_result_release(&res);
	set_header(rp, 400e12);
}

static void test_svg(struct replay *rp)
{
	struct flops_options opt = { .by = FLOPS_BY_KIND };
	struct flops_result res;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(flops_compute(rp, &opt, &res) == 0);
	CHECK(f && flops_svg(f, &res, 1000, 700) == 0);
	fclose(f);
	CHECK(!strncmp(buf, "<svg ", 5));
	CHECK(strstr(buf, "</svg>\n") != NULL);
	CHECK(strstr(buf, "bf16/fp16 peak 800.0 TFLOP/s") || strstr(buf, "fp16/bf16 peak 800.0 TFLOP/s"));
	CHECK(strstr(buf, "tf32 peak 400.0 TFLOP/s") != NULL);
	CHECK(strstr(buf, "fp32 peak 50.0 TFLOP/s") != NULL);
	CHECK(strstr(buf, "memory 2.00 TB/s") != NULL);
	CHECK(strstr(buf, "forward/attn/scores: 160.000 TFLOP/s at 200.00 FLOP/B") != NULL);
	/* the five rows with FLOPs and bytes are points (adamw has no FLOPs, (no op) nothing) */
	int circles = 0;
	for (const char *p = buf; (p = strstr(p, "<circle cx")) != NULL; p++)
		circles++;
	CHECK(circles == 5 + 2);           /* and two legend dots: forward, backward */
	free(buf);
	flops_result_release(&res);

	clear_header(rp);
	buf = NULL;
	f = open_memstream(&buf, &len);
	CHECK(flops_compute(rp, &opt, &res) == 0);
	CHECK(f && flops_svg(f, &res, 600, 400) == 0);
	fclose(f);
	CHECK(strstr(buf, "no device peaks in the header") != NULL);
	CHECK(strstr(buf, " peak ") == NULL);   /* no ceiling labels */
	free(buf);
	flops_result_release(&res);
	set_header(rp, 400e12);
}

/*
 * The phases beyond forward, backward and optimizer, as `record -- python3
 * train.py` writes them: one measured step [0, 100 us] with NVTX ranges
 * data [1, 10], zero_grad [10, 20], forward [20, 50], backward [50, 90]
 * and, as steptrace's own model nests it, a zero_grad range inside the
 * backward [85, 89] (us). Kernels (us): the data op's copy 2 and one of no
 * op under "data" 1; the zero_grad op's 3 and one of no op under
 * "step/zero_grad" 1; the forward's GEMM 10; one of no op under
 * "step/backward/zero_grad" 4, which is the backward's.
 */
static void test_more_phases(void)
{
	static const struct builder_span ranges[] = {
		{ "step", 0, 0, 100000 },        { "data", 1, 1000, 10000 },      { "zero_grad", 1, 10000, 20000 },
		{ "forward", 1, 20000, 50000 },  { "zero_grad", 2, 85000, 89000 }, { "backward", 1, 50000, 90000 },
	};
	struct replay rp;
	struct builder b;
	struct flops_options opt = { .by = FLOPS_BY_KIND };
	struct flops_result res;
	char *text;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_op(&b, &(struct builder_op){ .id = 1, .path = "step/data/copy", .kind = "copy", .phase = "data",
		   .bytes = 1000000 });
	builder_op(&b, &(struct builder_op){ .id = 2, .path = "step/zero_grad/zero", .kind = "zero",
		   .phase = "zero_grad", .bytes = 1000000 });
	builder_op(&b, &(struct builder_op){ .id = 3, .path = "step/forward/ffn/w1", .kind = "ffn/w1",
		   .phase = "forward", .flops = 1000000000, .bytes = 1000000, .inputs = { ST_DT_BF16 } });
	builder_ranges(&b, 0, ranges, sizeof(ranges) / sizeof(ranges[0]));
	builder_step(&b, 0, false, 0, 100000);
	builder_launch(&b, "copy_kernel", 7, 1, 2000, 2100, 3000, 5000);
	builder_launch(&b, "fill_kernel", 7, 0, 5000, 5100, 6000, 7000);
	builder_launch(&b, "zero_kernel", 7, 2, 12000, 12100, 13000, 16000);
	builder_launch(&b, "fill_kernel", 7, 0, 17000, 17100, 18000, 19000);
	builder_launch(&b, "sm90_xmma_gemm_bf16", 7, 3, 25000, 25100, 30000, 40000);
	builder_launch(&b, "fill_kernel", 7, 0, 86000, 86100, 87000, 91000);
	CHECK(builder_close(&b, NULL) == 0);

	CHECK(flops_compute(&rp, &opt, &res) == 0);
	CHECK_NEAR(res.kernel_ns, 21e3, 1e-9);
	CHECK_NEAR(res.phase_kernel_ns[ST_PHASE_DATA], 2e3, 1e-9);
	CHECK_NEAR(res.phase_kernel_ns[ST_PHASE_ZERO_GRAD], 3e3, 1e-9);
	CHECK_NEAR(res.phase_kernel_ns[ST_PHASE_FORWARD], 10e3, 1e-9);
	CHECK_NEAR(res.phase_gemm_ns[ST_PHASE_FORWARD], 10e3, 1e-9);
	CHECK_NEAR(res.phase_kernel_ns[ST_PHASE_BACKWARD], 0, 1e-9);   /* by op phase: no backward op */
	CHECK(find(&res, "zero_grad/zero") && find(&res, "data/copy"));
	CHECK(find(&res, "zero_grad/zero") && find(&res, "zero_grad/zero")->phase == ST_PHASE_ZERO_GRAD);
	text = render(&res, 0, OUT_CSV);
	CHECK(strstr(text, "\nGEMM share of GPU time: 47.6% (0.010 of 0.021 ms of kernels per step); "
		      "forward 100.0%, zero_grad 0.0%, data 0.0%\n") != NULL, "%s", text);
	free(text);
	flops_result_release(&res);

	/* --phase forward: the share is the forward's, said so, with no breakdown by phase */
	opt.phase = "forward";
	CHECK(flops_compute(&rp, &opt, &res) == 0);
	text = render(&res, 0, OUT_CSV);
	CHECK(strstr(text, "\nGEMM share of the forward phase's GPU time: 100.0% (0.010 of 0.010 ms of its kernels "
		      "per step)\n") != NULL, "%s", text);
	free(text);
	flops_result_release(&res);
	opt.phase = NULL;
	opt.range = "step/zero_grad";
	CHECK(flops_compute(&rp, &opt, &res) == 0);
	text = render(&res, 0, OUT_CSV);
	CHECK(strstr(text, "\nGEMM share of GPU time under 'step/zero_grad': 0.0% (0.000 of 0.004 ms of its kernels "
		      "per step); zero_grad 0.0%\n") != NULL, "%s", text);
	free(text);
	flops_result_release(&res);
	opt.range = NULL;

	/* --phase zero_grad: its op, and the kernel of no op under "step/zero_grad" but not the backward's */
	opt.phase = "zero_grad";
	CHECK(flops_compute(&rp, &opt, &res) == 0);
	CHECK(res.n_rows == 2);
	CHECK_NEAR(res.kernel_ns, 4e3, 1e-9);
	CHECK(find(&res, "zero_grad/zero") && find(&res, "(no op)") && find(&res, "(no op)")->time_ns == 1e3);
	flops_result_release(&res);
	opt.phase = "data";
	CHECK(flops_compute(&rp, &opt, &res) == 0);
	CHECK(res.n_rows == 2);
	CHECK_NEAR(res.kernel_ns, 3e3, 1e-9);
	CHECK(find(&res, "data/copy") && find(&res, "data/copy")->time_ns == 2e3);
	flops_result_release(&res);

	/* a communication op's phase is none of the phases */
	opt.phase = ST_OP_PHASE_COMM;
	{
		struct capture c;
		char *err;

		capture_begin(&c, stderr);
		CHECK(flops_compute(&rp, &opt, &res) < 0);
		err = capture_end(&c);
		CHECK_STR(err, "error: 'comm' is not a phase\n");
		free(err);
	}
	replay_release(&rp);
}

int main(void)
{
	struct replay rp;

	build(&rp);
	set_header(&rp, 400e12);
	test_by_kind(&rp);
	test_by_op_and_filters(&rp);
	test_missing_peaks(&rp);
	test_svg(&rp);
	replay_release(&rp);
	test_more_phases();
	return check_done("test_flops");
}
