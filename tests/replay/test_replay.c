/*
 * test_replay.c: replay's rules on hand-made events (NVTX projection with
 * ties, kernels without a launch call, several threads and streams, the
 * range tree, steps and the measured-step filter, --range patterns, the
 * footer's dropped records in words), and a round trip of every event
 * kind through the writer, the reader and replay.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/error.h"
#include "replay/replay.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"
#include "trace/bundle.h"

static const struct replay_activity *find_kernel(const struct replay *rp, uint64_t corr)
{
	for (size_t i = 0; i < rp->n_activities; i++)
		if (rp->activities[i].correlation == corr)
			return &rp->activities[i];
	return NULL;
}

static const char *kernel_path(const struct replay *rp, uint64_t corr)
{
	const struct replay_activity *a = find_kernel(rp, corr);
	return a ? replay_activity_path(rp, a) : "(missing)";
}

static int32_t range_by_path(const struct replay *rp, const char *path)
{
	for (size_t i = 0; i < rp->n_ranges; i++)
		if (strcmp(replay_range_path(rp, &rp->ranges[i]), path) == 0)
			return (int32_t)i;
	return -1;
}

static void test_projection(void)
{
	/* thread 1: step [0,1000] > forward [0,1000] (same span: depth decides) > layer.0 [100,500]
	 * > attn [100,500] > softmax [200,300], closed innermost first as a recorder writes them */
	static const struct builder_span ranges[] = {
		{ "softmax", 4, 200, 300 }, { "attn", 3, 100, 500 }, { "layer.0", 2, 100, 500 },
		{ "forward", 1, 0, 1000 }, { "step", 0, 0, 1000 },
	};
	struct replay rp;
	struct builder b;
	uint64_t c1, c2, c3, c4, c6, c7;
	int32_t r;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_ranges(&b, 0, ranges, sizeof(ranges) / sizeof(ranges[0]));
	b.thread = 2;   /* loader [0,1000] */
	builder_range(&b, "loader", 0, 0, 1000);
	b.thread = 1;
	/* 1: call starts exactly when softmax starts -> softmax covers it */
	c1 = builder_launch(&b, "k_a", 7, 0, 200, 210, 1000, 1100);
	/* 2: call starts at softmax's end but ends after it -> attn, not softmax */
	c2 = builder_launch(&b, "k_b", 8, 0, 300, 310, 1050, 1200);   /* overlaps 1 on another stream */
	/* 3: zero-length call at softmax's end -> softmax (inclusive end) */
	c3 = builder_launch(&b, "k_c", 7, 0, 300, 300, 1300, 1400);
	/* 4: a call on thread 2 inside thread 1's softmax time -> loader only */
	b.thread = 2;
	c4 = builder_launch(&b, "k_d", 9, 0, 250, 260, 1500, 1600);
	b.thread = 1;
	/* 5: a kernel no call launched -> no range */
	builder_kernel(&b, "k_d", 99, 9, 0, 1700, 1750);
	/* 6: a call just before every range on thread 1 started... at 0 the step starts */
	c6 = builder_launch(&b, "k_d", 7, 0, 0, 0, 1800, 1810);
	/* 7: a call after every range ended */
	c7 = builder_launch(&b, "k_d", 7, 0, 1001, 1002, 1900, 1910);
	CHECK(builder_close(&b, NULL) == 0, "build");

	CHECK(rp.n_ranges == 6 && rp.n_threads == 2 && rp.n_streams == 3, "%zu ranges %zu threads %zu streams",
	      rp.n_ranges, rp.n_threads, rp.n_streams);
	CHECK(!strcmp(kernel_path(&rp, c1), "step/forward/layer.0/attn/softmax"), "k1 %s", kernel_path(&rp, c1));
	CHECK(!strcmp(kernel_path(&rp, c2), "step/forward/layer.0/attn"), "k2 %s", kernel_path(&rp, c2));
	CHECK(!strcmp(kernel_path(&rp, c3), "step/forward/layer.0/attn/softmax"), "k3 %s", kernel_path(&rp, c3));
	CHECK(!strcmp(kernel_path(&rp, c4), "loader"), "k4 %s", kernel_path(&rp, c4));
	CHECK(!strcmp(kernel_path(&rp, 99), ""), "orphan %s", kernel_path(&rp, 99));
	CHECK(find_kernel(&rp, 99)->api == -1, "orphan has no call");
	CHECK(!strcmp(kernel_path(&rp, c6), "step/forward"), "k6 %s", kernel_path(&rp, c6));
	CHECK(!strcmp(kernel_path(&rp, c7), ""), "k7 %s", kernel_path(&rp, c7));

	/* softmax: kernels 1 and 3: span [1000,1400], busy 100+100 */
	r = range_by_path(&rp, "step/forward/layer.0/attn/softmax");
	CHECK(r >= 0 && rp.ranges[r].gpu_start == 1000 && rp.ranges[r].gpu_end == 1400 &&
	      rp.ranges[r].gpu_busy == 200 && rp.ranges[r].kernels == 2, "softmax projection");
	/* attn: kernels 1,2,3: [1000,1100]u[1050,1200]u[1300,1400] = 200 + 100 */
	r = range_by_path(&rp, "step/forward/layer.0/attn");
	CHECK(r >= 0 && rp.ranges[r].gpu_start == 1000 && rp.ranges[r].gpu_end == 1400 &&
	      rp.ranges[r].gpu_busy == 300 && rp.ranges[r].kernels == 3, "attn busy %llu",
	      r >= 0 ? (unsigned long long)rp.ranges[r].gpu_busy : 0ull);
	/* step: kernels 1,2,3,6 -> span [1000,1810], busy 300 + 10 */
	r = range_by_path(&rp, "step");
	CHECK(r >= 0 && rp.ranges[r].gpu_end == 1810 && rp.ranges[r].gpu_busy == 310 &&
	      rp.ranges[r].kernels == 4 && rp.ranges[r].depth == 0, "step projection");
	r = range_by_path(&rp, "step/forward");
	CHECK(r >= 0 && rp.ranges[r].depth == 1 && rp.ranges[r].parent == range_by_path(&rp, "step"),
	      "equal spans nest by recorded depth");
	r = range_by_path(&rp, "loader");
	CHECK(r >= 0 && rp.ranges[r].gpu_busy == 100 && rp.ranges[r].kernels == 1, "loader");

	/* range_at: innermost on a thread */
	r = replay_range_at(&rp, 1, 250);
	CHECK(r >= 0 && !strcmp(replay_range_path(&rp, &rp.ranges[r]), "step/forward/layer.0/attn/softmax"), "range_at 250");
	r = replay_range_at(&rp, 1, 400);
	CHECK(r >= 0 && !strcmp(replay_range_path(&rp, &rp.ranges[r]), "step/forward/layer.0/attn"), "range_at 400");
	CHECK(replay_range_at(&rp, 1, 5000) == -1 && replay_range_at(&rp, 3, 10) == -1, "range_at outside");

	/* filters */
	struct replay_filter f;
	CHECK(replay_filter_init(&f, &rp, "forward") == 0, "filter");
	CHECK(replay_filter_activity(&f, &rp, find_kernel(&rp, c1)) && replay_filter_activity(&f, &rp, find_kernel(&rp, c6)) &&
	      !replay_filter_activity(&f, &rp, find_kernel(&rp, c4)) && !replay_filter_activity(&f, &rp, find_kernel(&rp, 99)),
	      "forward filter");
	replay_filter_release(&f);
	CHECK(replay_filter_init(&f, &rp, "layer.*/attn/softmax") == 0, "filter");
	CHECK(replay_filter_activity(&f, &rp, find_kernel(&rp, c3)) && !replay_filter_activity(&f, &rp, find_kernel(&rp, c2)),
	      "softmax filter");
	replay_filter_release(&f);

	/* a pattern that keeps nothing: one line naming the nearest paths, the matched components as typed */
	{
		static const struct { const char *pat, *line; } none[] = {
			{ "forwrd", "error: --range 'forwrd' matches no range path; the nearest: 'forward'\n" },
			{ "layer.*/atn/softmax", "error: --range 'layer.*/atn/softmax' matches no range path; "
						 "the nearest: 'layer.*/attn/softmax'\n" },
			{ "/forward", "error: --range '/forward' matches no range path; the nearest: '/loader', '/step'\n" },
			/* and those about as near (2 edits more at most) */
			{ "atn", "error: --range 'atn' matches no range path; the nearest: 'attn', 'step'\n" },
		};
		struct capture ce;
		char *err;

		CHECK(replay_range_check(&rp, 1, NULL) == 0 && replay_range_check(&rp, 1, "softmax") == 0 &&
		      replay_range_check(&rp, 1, "loader") == 0, "patterns that match");
		for (size_t i = 0; i < sizeof(none) / sizeof(none[0]); i++) {
			capture_begin(&ce, stderr);
			CHECK(replay_range_check(&rp, 1, none[i].pat) == -1, "%s", none[i].pat);
			err = capture_end(&ce);
			CHECK_STR(err, none[i].line);
			free(err);
		}
	}
	replay_release(&rp);
}

static void test_patterns(void)
{
	static const struct { const char *pat, *path; bool match; } cases[] = {
		{ "forward", "step/forward/layer.3/attn", true },
		{ "forward", "step/forward", true },
		{ "forward", "step/backward", false },
		{ "forward", "step/forwards", false },
		{ "layer.*/attn/softmax", "step/forward/layer.3/attn/softmax", true },
		{ "layer.*/attn/softmax", "step/forward/layer.3/attn/softmax/x", true },
		{ "layer.*/attn/softmax", "step/forward/layer.3/attn", false },
		{ "layer.*/attn/softmax", "step/forward/layer.3/ffn/softmax", false },
		{ "/forward", "step/forward", false },
		{ "/step/forward", "step/forward/layer.0", true },
		{ "/step", "step", true },
		{ "layer.1?", "step/forward/layer.12/attn", true },
		{ "layer.1?", "step/forward/layer.1/attn", false },
		{ "*", "anything", true },
		{ "forward/", "step/forward", true },
		{ "attn", "", false },
	};
	struct range_pattern p;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(range_pattern_compile(&p, cases[i].pat) == 0, "compile %s", cases[i].pat);
		CHECK(range_pattern_match(&p, cases[i].path) == cases[i].match, "'%s' on '%s'",
		      cases[i].pat, cases[i].path);
		range_pattern_release(&p);
	}
	error_set_stream(fopen("/dev/null", "w"));
	CHECK(range_pattern_compile(&p, "") < 0, "empty pattern");
	CHECK(range_pattern_compile(&p, "a//b") < 0, "empty component");
	CHECK(range_pattern_compile(&p, "/") < 0, "just a slash");
	error_set_stream(NULL);
}

static void test_steps(void)
{
	struct replay rp;
	struct builder b;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	for (uint32_t i = 0; i < 3; i++)   /* steps touch: the shared instant goes to the later */
		builder_step(&b, i, i == 0, 1000 * i, 1000 * i + 1000);
	/* 1: launched at the 0/1 boundary -> step 1 */
	builder_launch(&b, "k_a", 7, 0, 1000, 1005, 1500, 1600);
	/* 2: launched in warm-up step 0, runs in step 1's time */
	builder_launch(&b, "k_b", 7, 0, 999, 1001, 1100, 1200);
	builder_kernel(&b, "k_c", 77, 7, 0, 2500, 2600);   /* no call: its own start -> step 2 */
	builder_kernel(&b, "k_d", 78, 7, 0, 5000, 5100);   /* after every step */
	CHECK(builder_close(&b, NULL) == 0, "build");
	CHECK(rp.n_steps == 3 && rp.n_measured_steps == 2, "steps");
	CHECK(find_kernel(&rp, 1)->step == 1 && find_kernel(&rp, 2)->step == 0 &&
	      find_kernel(&rp, 77)->step == 2 && find_kernel(&rp, 78)->step == -1, "step assignment");
	CHECK(!replay_counts(&rp, 0, false) && replay_counts(&rp, 1, false) &&
	      !replay_counts(&rp, -1, false) && replay_counts(&rp, 0, true) && replay_counts(&rp, -1, true),
	      "measured filter");
	CHECK(replay_step_divisor(&rp, false) == 2 && replay_step_divisor(&rp, true) == 3, "divisor");
	CHECK(rp.steps[1].gpu_busy == 100 && rp.steps[1].kernels == 1 && rp.steps[0].gpu_start == 1100,
	      "step GPU time");
	replay_release(&rp);

	/* no steps: everything counts */
	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_kernel(&b, NULL, 0, 7, 0, 10, 20);
	CHECK(builder_close(&b, NULL) == 0, "build");
	CHECK(replay_counts(&rp, -1, false) && replay_step_divisor(&rp, false) == 1, "no steps");
	replay_release(&rp);
}

/* A step with phases only (format 1.8): written, read back, and left out by the module filter. */
static void module_step(struct builder *b, uint32_t index, bool warmup, bool phases_only)
{
	struct st_event ev = { .kind = ST_STEP, .start = 1000 * index, .end = 1000 * index + 1000 };

	ev.step.index = index;
	ev.step.warmup = warmup;
	ev.step.phases_only = phases_only;
	ev.step.thread = b->thread;
	builder_add(b, &ev);
}

static void test_module_steps(const char *dir)
{
	struct replay rp;
	struct builder b;
	char path[512];

	snprintf(path, sizeof(path), "%s/modules.stb", dir);
	builder_init(&b);
	CHECK(builder_open(&b, path) == 0, "open");
	for (uint32_t i = 0; i < 5; i++)   /* 0 warm-up, 1 measured with modules, 2 and 3 phases only, 4 modules */
		module_step(&b, i, i == 0, i == 2 || i == 3);
	CHECK(builder_close(&b, NULL) == 0, "build");
	CHECK(replay_load(&rp, path, NULL) == 0, "load");
	CHECK(rp.n_steps == 5 && rp.n_phases_only == 2 && rp.n_measured_modules == 2, "counts");
	CHECK(rp.steps[2].phases_only && rp.steps[3].phases_only && !rp.steps[1].phases_only, "read back");
	CHECK(replay_counts_modules(&rp, 1, false) && !replay_counts_modules(&rp, 2, false) &&
	      !replay_counts_modules(&rp, 0, false) && replay_counts_modules(&rp, 0, true) &&
	      !replay_counts_modules(&rp, 3, true) && !replay_counts_modules(&rp, -1, true) &&
	      replay_counts(&rp, 2, false), "module filter");
	CHECK(replay_module_step_divisor(&rp, false) == 2 && replay_module_step_divisor(&rp, true) == 3 &&
	      replay_step_divisor(&rp, false) == 4, "module divisor");
	replay_release(&rp);

	/* every step with modules (any bundle before 1.8): the filter is replay_counts */
	builder_init(&b);
	builder_open_replay(&b, &rp);
	for (uint32_t i = 0; i < 3; i++)
		module_step(&b, i, i == 0, false);
	CHECK(builder_close(&b, NULL) == 0, "build");
	CHECK(rp.n_phases_only == 0 && replay_counts_modules(&rp, 1, false) && !replay_counts_modules(&rp, 0, false) &&
	      replay_module_step_divisor(&rp, false) == 2, "no phases-only steps");
	replay_release(&rp);
}

/*
 * Ids given twice (docs/FORMAT.md, 6.1 and 2): a correlation id on two calls
 * links to the call that started first, whatever their order in the file;
 * an op id defined twice keeps its first definition in the file.
 */
static void test_duplicate_ids(void)
{
	struct replay rp;
	struct builder b;
	const struct replay_activity *k;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_op(&b, &(struct builder_op){ .id = 5, .path = "step/forward/first", .kind = "first" });
	builder_op(&b, &(struct builder_op){ .id = 5, .path = "step/backward/second", .kind = "second" });
	builder_step(&b, 0, false, 0, 200);
	builder_step(&b, 1, false, 200, 1000);
	builder_call(&b, "later_call", 500, 510);   /* id 1, first in the file */
	b.correlation = 0;
	builder_call(&b, "earlier_call", 100, 110); /* id 1 again, started earlier */
	builder_kernel(&b, "k", 1, 7, 5, 600, 700);
	CHECK(builder_close(&b, NULL) == 0, "build");
	k = find_kernel(&rp, 1);
	CHECK(k && k->api >= 0 && !strcmp(replay_str(&rp, rp.apis[k->api].name), "earlier_call"),
	      "a repeated correlation id links the earliest call");
	CHECK(k && k->step == 0, "the kernel's step is the earliest call's");
	CHECK(rp.n_ops == 1 && replay_op(&rp, 5) && !strcmp(replay_str(&rp, replay_op(&rp, 5)->path), "step/forward/first"),
	      "an op id defined twice keeps its first definition");
	replay_release(&rp);
}

/* ---- round trip ---------------------------------------------------------- */

static int same_event(const struct st_event *a, const struct st_event *b)
{
	return a->kind == b->kind && a->start == b->start && a->end == b->end;
}

static void test_round_trip(const char *dir)
{
	char path[512];
	Steptrace__Header hdr = STEPTRACE__HEADER__INIT;
	struct bundle_writer *w;
	struct replay rp;
	struct st_event k = { .kind = ST_KERNEL, .start = 5000, .end = 6000 };
	struct st_event mc = { .kind = ST_MEMCPY, .start = 6000, .end = 6100 };
	struct st_event ms = { .kind = ST_MEMSET, .start = 6200, .end = 6250 };
	struct st_event api = { .kind = ST_API, .start = 4000, .end = 4100 };
	struct st_event rg = { .kind = ST_RANGE, .start = 3000, .end = 9000 };
	struct st_event al = { .kind = ST_ALLOC, .start = 3500, .end = 3500 };
	struct st_event fr = { .kind = ST_FREE, .start = 8000, .end = 8000 };
	struct st_event op = { .kind = ST_OP };
	struct st_event st = { .kind = ST_STEP, .start = 2000, .end = 10000 };
	struct st_event oom = { .kind = ST_OOM, .start = 8500, .end = 8500 };
	struct st_event ov = { .kind = ST_OVERHEAD, .start = 8600, .end = 8700 };
	struct st_event sy = { .kind = ST_SYNC, .start = 8800, .end = 8900 };
	struct st_event tg = { .kind = ST_MEMTAG, .start = 3600, .end = 3600 };
	struct st_event co = { .kind = ST_COST, .start = 2000, .end = 10000 };

	snprintf(path, sizeof(path), "%s/rt.stb", dir);
	hdr.command_line = "test";
	w = bundle_writer_open(path, &hdr, NULL);
	CHECK(w != NULL, "writer");
	if (!w)
		return;
	k.kernel.name = bundle_writer_intern(w, "my_kernel");
	k.kernel.grid[0] = 1, k.kernel.grid[1] = 2, k.kernel.grid[2] = 3;
	k.kernel.block[0] = 4, k.kernel.block[1] = 5, k.kernel.block[2] = 6;
	k.kernel.registers = 7, k.kernel.static_smem = 8, k.kernel.dynamic_smem = 9;
	k.kernel.stream = 10, k.kernel.device = 1, k.kernel.op = 1, k.kernel.correlation = 42;
	mc.memcpy.copy_kind = 1, mc.memcpy.src_kind = 2, mc.memcpy.dst_kind = 3;
	mc.memcpy.bytes = 1 << 20, mc.memcpy.stream = 11, mc.memcpy.device = 1;
	mc.memcpy.correlation = 43, mc.memcpy.op = 1;
	ms.memset.value = 0xab, ms.memset.bytes = 4096, ms.memset.stream = 12, ms.memset.device = 1;
	ms.memset.correlation = 44, ms.memset.op = 1;
	api.api.name = bundle_writer_intern(w, "cudaLaunchKernel");
	api.api.domain = 1, api.api.cbid = 211, api.api.status = -3, api.api.thread = 77;
	api.api.correlation = 42;
	rg.range.name = bundle_writer_intern(w, "forward");
	rg.range.thread = 77, rg.range.depth = 0, rg.range.domain = bundle_writer_intern(w, "dom");
	al.mem.address = 0x7f0000, al.mem.size = 12345, al.mem.category = ST_MEM_GRADIENT;
	al.mem.op = 1, al.mem.source = ST_SRC_DRIVER, al.mem.device = 1;
	fr.mem = al.mem;
	fr.mem.size = 0;
	op.op.id = 1, op.op.name = bundle_writer_intern(w, "w1");
	op.op.path = bundle_writer_intern(w, "step/forward/layer.0/ffn/w1");
	op.op.kind = bundle_writer_intern(w, "ffn/w1"), op.op.phase = bundle_writer_intern(w, "forward");
	op.op.flops = 1ull << 40, op.op.bytes = 1ull << 33;
	op.op.n_inputs = 3, op.op.inputs[0] = ST_DT_BF16, op.op.inputs[1] = ST_DT_F32, op.op.inputs[2] = ST_DT_I64;
	op.op.n_outputs = 2, op.op.outputs[0] = ST_DT_F16, op.op.outputs[1] = ST_DT_U8;
	st.step.index = 3, st.step.warmup = true, st.step.thread = 77;
	oom.oom.requested = 1ull << 36, oom.oom.live_bytes = 1ull << 35, oom.oom.capacity = 1ull << 34;
	oom.oom.category = ST_MEM_ACTIVATION, oom.oom.op = 1, oom.oom.step = 3;
	ov.overhead.kind = 2, ov.overhead.thread = 77;
	sy.sync.type = 3, sy.sync.stream = 10, sy.sync.thread = 77, sy.sync.correlation = 99;
	tg.mem.address = al.mem.address, tg.mem.size = al.mem.size, tg.mem.category = ST_MEM_PARAMETER;
	tg.mem.source = ST_SRC_DRIVER, tg.mem.device = 1;
	co.cost.thread = 77, co.cost.callback_ns = 11, co.cost.nvtx_ns = 22, co.cost.hook_ns = 33;
	co.cost.python_ns = 44, co.cost.launches = 5, co.cost.ranges = 6, co.cost.modules = 7;
	const struct st_event *all[] = { &op, &st, &rg, &api, &k, &mc, &ms, &al, &tg, &fr, &oom, &ov, &sy, &co };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		CHECK(bundle_writer_add(w, all[i]) == 0, "add %zu", i);
	CHECK(bundle_writer_close(w, "ok") == 0, "close");

	CHECK(replay_load(&rp, path, NULL) == 0, "load");
	if (!rp.priv)
		return;
	CHECK(!rp.truncated && rp.run.has_footer && rp.run.footer.complete && rp.events_read == 14, "complete");
	for (int kind = ST_KIND_FIRST; kind <= ST_KIND_LAST; kind++)
		CHECK(rp.counts[kind] == 1, "count of %s", st_kind_name(kind));
	CHECK(rp.n_activities == 3, "activities");
	const struct replay_activity *a = &rp.activities[0];
	const struct replay_kernel_cfg *kc = &rp.kernel_cfg[a->detail];
	CHECK(a->kind == ST_KERNEL && a->start == 5000 && a->end == 6000 &&
	      !strcmp(replay_str(&rp, a->name), "my_kernel") && a->stream == 10 && a->device == 1 &&
	      a->op == 1 && a->correlation == 42 && a->api == 0 && a->step == 0 &&
	      a->range == 0, "kernel fields");
	CHECK(kc->grid[0] == 1 && kc->grid[1] == 2 && kc->grid[2] == 3 && kc->block[0] == 4 &&
	      kc->block[1] == 5 && kc->block[2] == 6 && kc->registers == 7 && kc->static_smem == 8 &&
	      kc->dynamic_smem == 9, "kernel config");
	a = &rp.activities[1];
	CHECK(a->kind == ST_MEMCPY && a->bytes == 1 << 20 && a->stream == 11 && a->device == 1 &&
	      a->correlation == 43 && a->op == 1 && rp.copies[a->detail].copy_kind == 1 &&
	      rp.copies[a->detail].src_kind == 2 && rp.copies[a->detail].dst_kind == 3 &&
	      !strcmp(replay_str(&rp, a->name), "[CUDA memcpy Host-to-Device]"), "memcpy fields");
	a = &rp.activities[2];
	CHECK(a->kind == ST_MEMSET && a->bytes == 4096 && a->detail == 0xab && a->stream == 12 &&
	      a->correlation == 44 && !strcmp(replay_str(&rp, a->name), "[CUDA memset]"), "memset fields");
	const struct replay_api *c = &rp.apis[0];
	CHECK(c->start == 4000 && c->end == 4100 && c->domain == 1 && c->cbid == 211 && c->status == -3 &&
	      c->thread == 77 && c->correlation == 42 && c->activity == 0 && c->range == 0 &&
	      !strcmp(replay_str(&rp, c->name), "cudaLaunchKernel"), "api fields");
	const struct replay_range *g = &rp.ranges[0];
	CHECK(g->start == 3000 && g->end == 9000 && g->thread == 77 && !strcmp(replay_str(&rp, g->domain), "dom") &&
	      !strcmp(replay_range_path(&rp, g), "forward") && g->kernels == 1 && g->activities == 1 &&
	      g->gpu_busy == 1000, "range fields");
	const struct replay_op *o = replay_op(&rp, 1);
	CHECK(o && o->flops == 1ull << 40 && o->bytes == 1ull << 33 && o->n_inputs == 3 &&
	      o->inputs[2] == ST_DT_I64 && o->n_outputs == 2 && o->outputs[1] == ST_DT_U8 &&
	      !strcmp(replay_str(&rp, o->path), "step/forward/layer.0/ffn/w1") &&
	      !strcmp(replay_str(&rp, o->kind), "ffn/w1") && !strcmp(replay_str(&rp, o->phase), "forward") &&
	      !strcmp(replay_str(&rp, o->name), "w1"), "op fields");
	CHECK(rp.n_steps == 1 && rp.steps[0].index == 3 && rp.steps[0].warmup && rp.steps[0].thread == 77 &&
	      rp.steps[0].start == 2000 && rp.steps[0].end == 10000 && rp.steps[0].kernels == 1 &&
	      rp.steps[0].gpu_busy == 1000 + 100 + 50, "step fields");
	CHECK(rp.n_mem == 4 && same_event(&rp.mem[0].ev, &al) && !memcmp(&rp.mem[0].ev.mem, &al.mem, sizeof(al.mem)) &&
	      same_event(&rp.mem[1].ev, &tg) && !memcmp(&rp.mem[1].ev.mem, &tg.mem, sizeof(tg.mem)) &&
	      same_event(&rp.mem[2].ev, &fr) && !memcmp(&rp.mem[2].ev.mem, &fr.mem, sizeof(fr.mem)) &&
	      same_event(&rp.mem[3].ev, &oom) && !memcmp(&rp.mem[3].ev.oom, &oom.oom, sizeof(oom.oom)) &&
	      rp.mem[0].step == 0 && rp.mem[0].range == 0 && rp.mem[1].step == 0 && rp.mem[1].range == 0,
	      "memory events");
	CHECK(rp.n_others == 2 && same_event(&rp.others[0], &ov) && rp.others[0].overhead.kind == 2 &&
	      rp.others[0].overhead.thread == 77 && same_event(&rp.others[1], &sy) &&
	      rp.others[1].sync.type == 3 && rp.others[1].sync.stream == 10 &&
	      rp.others[1].sync.thread == 77 && rp.others[1].sync.correlation == 99, "overhead and sync");
	CHECK(rp.n_costs == 1 && rp.costs[0].start == 2000 && rp.costs[0].end == 10000 && rp.costs[0].thread == 77 &&
	      rp.costs[0].callback_ns == 11 && rp.costs[0].nvtx_ns == 22 && rp.costs[0].hook_ns == 33 &&
	      rp.costs[0].python_ns == 44 && rp.costs[0].launches == 5 && rp.costs[0].ranges == 6 &&
	      rp.costs[0].modules == 7 && rp.costs[0].step == 0 && replay_cost_ns(&rp.costs[0]) == 110, "cost");
	replay_release(&rp);

	/* not a bundle: one error, -1 */
	snprintf(path, sizeof(path), "%s/junk.stb", dir);
	FILE *f = fopen(path, "w");
	if (f) {
		fputs("this is not a bundle\n", f);
		fclose(f);
	}
	error_set_stream(fopen("/dev/null", "w"));
	CHECK(replay_load(&rp, path, NULL) == -1, "junk refused");
	snprintf(path, sizeof(path), "%s/missing.stb", dir);
	CHECK(replay_load(&rp, path, NULL) == -1, "missing refused");
	error_set_stream(NULL);
}

/*
 * What a footer's drops read as: per kind, the footer's total when it says
 * more (the rest "other"), one record, none.
 */
static void test_dropped(void)
{
	struct replay rp;
	struct replay_footer *f = &rp.run.footer;
	char buf[512];

	memset(&rp, 0, sizeof(rp));
	CHECK(replay_dropped(&rp, -1) == 0 && !*replay_dropped_text(&rp, buf, sizeof(buf)), "none: '%s'", buf);
	rp.run.has_footer = true;
	f->has_count[ST_KERNEL] = f->has_count[ST_RANGE] = f->has_count[ST_ALLOC] = true;
	f->count_dropped[ST_KERNEL] = 2637;
	f->count_dropped[ST_RANGE] = 3;
	f->dropped = 2640;
	CHECK(replay_dropped(&rp, ST_KERNEL) == 2637 && replay_dropped(&rp, ST_ALLOC) == 0 &&
	      replay_dropped(&rp, -1) == 2640, "per kind");
	replay_dropped_text(&rp, buf, sizeof(buf));
	CHECK(!strcmp(buf, "2,637 kernel and 3 range records were dropped while recording (CUPTI's buffers were "
		      "full; it does not say of which kind: copies and memsets may be among them): kernel and "
		      "range totals undercount"), "two kinds: '%s'", buf);
	f->count_dropped[ST_ALLOC] = 1;
	f->dropped = 2645;   /* the total says more than the kinds */
	CHECK(replay_dropped(&rp, -1) == 2645, "total %llu", (unsigned long long)replay_dropped(&rp, -1));
	replay_dropped_text(&rp, buf, sizeof(buf));
	CHECK(!strcmp(buf, "2,637 kernel, 3 range, 1 alloc and 4 other records were dropped while recording "
		      "(CUPTI's buffers were full; it does not say of which kind: copies and memsets may be among "
		      "them): kernel, range, alloc and other totals undercount"), "other: '%s'", buf);
	memset(f, 0, sizeof(*f));
	f->dropped = 1;      /* a footer that names no kind */
	replay_dropped_text(&rp, buf, sizeof(buf));
	CHECK(!strcmp(buf, "1 record was dropped while recording: totals undercount"), "one: '%s'", buf);
}

int main(void)
{
	char dir[] = "/tmp/st-replay-XXXXXX";

	if (!mkdtemp(dir))
		return 1;
	test_patterns();
	test_projection();
	test_steps();
	test_duplicate_ids();
	test_dropped();
	test_round_trip(dir);
	test_module_steps(dir);
	{
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
	}
	return check_done("test_replay");
}
