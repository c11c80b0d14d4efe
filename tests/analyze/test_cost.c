/*
 * test_cost.c: what the reports make of format 1.8's recorder cost and
 * parameter groups, on a bundle written here (a PyTorch program's, as
 * `record -- COMMAND` writes it: no parameter count in its header, no
 * gradient memory):
 *
 * - steps: a "Recorder (ms)" column, each step's cost records summed
 *   (both threads'), and notes: the time per step by part, per kernel
 *   launch (callbacks / launches), per NVTX range (handlers / ranges), per
 *   module call (entry points and Python side / module calls);
 * - info: the footer's parameter groups, and a "cost" row among the kinds;
 * - explain --what-if ranks=2: the gradients sized by the groups (no longer
 *   "the run's gradients have no size");
 * - a bundle without them: no column, no notes, no row (the samples'
 *   outputs are checked byte for byte by scripts/golden.sh).
 *
 *   test_cost DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/explain.h"
#include "analyze/info.h"
#include "analyze/steps.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

#define MS 1000000ull

/* Step 1 of write_bundle's has phases only (module ranges on a sample of the steps, 1.8). */
static bool phases_only_step1;

/* Two steps of 10 ms on thread 1, a launch each; the recorder's time in each, on threads 1 and 2. */
static int write_bundle(const char *path, bool with_cost, bool with_launch_cost, const uint64_t *before,
			size_t n_before)
{
	const struct st_param_group groups[] = {
		{ .tensors = 3, .elements = 1000000, .bytes = 2000000, .dtype = ST_DT_BF16 },
		{ .tensors = 1, .elements = 500000, .bytes = 2000000, .dtype = ST_DT_F32 },
	};
	struct builder b;

	builder_init(&b);
	if (with_launch_cost)   /* (1.10) 15 us per launch: 2,560 us traced, 640 us untraced per 128 */
		b.launch_cost = (struct st_launch_cost){ .launches = 128, .rounds = 9, .traced_ns = 2560000,
							 .untraced_ns = 640000 };
	b.config.model = "program";
	b.header.clock = "cupti";
	b.thread = 1;
	if (builder_open(&b, path) < 0)
		return -1;
	for (uint64_t s = 0; s < 2; s++) {
		uint64_t t = 10 * MS * s;

		b.thread = 1;
		builder_launch(&b, "k", 7, 0, t + 1 * MS, t + 1 * MS + 5000, t + 2 * MS, t + 3 * MS);
		builder_call(&b, "cudaStreamSynchronize", t + 9 * MS, t + 9 * MS + 1000);
		if (phases_only_step1 && s == 1) {
			struct st_event ev = { .kind = ST_STEP, .start = t, .end = t + 10 * MS };

			ev.step.index = 1;
			ev.step.phases_only = true;
			ev.step.thread = b.thread;
			builder_add(&b, &ev);
		} else {
			builder_step(&b, (uint32_t)s, false, t, t + 10 * MS);
		}
		if (!with_cost)
			continue;
		/* step 0: 1 ms on thread 1 and 0.5 ms on thread 2; step 1: 0.5 ms on thread 1 */
		builder_cost(&b, t, t + 10 * MS, s == 0 ? &(struct builder_cost){ .callback_ns = 200000,
			     .nvtx_ns = 100000, .hook_ns = 300000, .python_ns = 400000, .launches = 100, .ranges = 50,
			     .modules = 10 } : &(struct builder_cost){ .callback_ns = 500000, .launches = 100 });
		if (s == 0) {
			b.thread = 2;
			builder_cost(&b, t, t + 10 * MS, &(struct builder_cost){ .nvtx_ns = 500000, .ranges = 150 });
		}
	}
	if (with_cost && bundle_writer_set_param_groups(b.writer, groups, 2) < 0)
		return -1;
	bundle_writer_set_unrecorded_steps(b.writer, before, n_before);
	if (n_before)   /* (1.11) armed: 0.6 ms of the recorder's over 2 s; 0 over 0: not measured */
		bundle_writer_set_armed_cost(b.writer, n_before > 2 ? 600000 : 0, n_before > 2 ? 2000 * MS : 0);
	return builder_close(&b, "ok");
}

/* What a report prints as a table, its notes included. */
static char *printed(struct report *r)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	CHECK(f && report_print(r, OUT_TABLE, f) == 0);
	if (f)
		fclose(f);
	report_free(r);
	return buf ? buf : strdup("");
}

#define HAS(text, s) CHECK(strstr(text, s) != NULL, "no '%s' in:\n%s", s, text)
#define HAS_NOT(text, s) CHECK(strstr(text, s) == NULL, "'%s' in:\n%s", s, text)

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : ".";
	char path[4096], plain[4096], table[4096];
	struct replay rp, rq;
	const struct replay *rps[1] = { &rp };
	int64_t zero[1] = { 0 };
	struct replay_ranks rs = { .rank = rps, .n = 1, .offset = zero, .world_size = 1 };
	struct explain_opts o = { .rules = { "ranks=2" }, .n_rules = 1, .allreduce = table };
	struct info_opts io = { 0 };
	struct report *r;
	FILE *f;
	char *out;

	snprintf(path, sizeof(path), "%s/cost.stb", dir);
	snprintf(plain, sizeof(plain), "%s/plain.stb", dir);
	snprintf(table, sizeof(table), "%s/allreduce.csv", dir);
	CHECK(write_bundle(path, true, false, NULL, 0) == 0 && write_bundle(plain, false, false, NULL, 0) == 0);
	f = fopen(table, "w");
	CHECK(f != NULL);
	if (f) {
		fputs("Bytes,Busbw (GB/s)\n1000,10\n100000000,100\n", f);
		fclose(f);
	}
	CHECK(replay_load(&rp, path, NULL) == 0);
	CHECK(replay_load(&rq, plain, NULL) == 0);

	r = report_new();
	CHECK(steps_run(&rp, false, r) == 0);
	out = printed(r);
	HAS(out, "Recorder (ms)");
	HAS(out, "   1.500\n");   /* step 0: 1 + 0.5 ms, the last column */
	HAS(out, "   0.500\n");
	HAS(out, "recorder: its own host time 1.000 ms per step (10.0% of the wall time): CUPTI callbacks 0.350, "
		 "NVTX handlers 0.300, entry points 0.150, Python side 0.200 ms");
	HAS(out, "recorder: 3500 ns per kernel launch (its CUPTI callbacks over 100 launches per step)");
	HAS_NOT(out, "with phases only");   /* every step has its modules: no split */
	HAS(out, "recorder: 3000 ns per NVTX range (its NVTX handlers over 100 ranges per step)");
	HAS(out, "recorder: 70.0 us per module call (the entry points and the Python side over 5 calls per step)");
	free(out);

	/* Step 1 with phases only: the callbacks' time a launch also for each kind of step (2 us, 5 us) */
	{
		char split[4096];
		struct replay rs;

		snprintf(split, sizeof(split), "%s/cost-split.stb", dir);
		phases_only_step1 = true;
		CHECK(write_bundle(split, true, false, NULL, 0) == 0);
		phases_only_step1 = false;
		CHECK(replay_load(&rs, split, NULL) == 0);
		r = report_new();
		CHECK(steps_run(&rs, false, r) == 0);
		out = printed(r);
		HAS(out, "recorder: 3500 ns per kernel launch (its CUPTI callbacks over 100 launches per step; 2000 ns "
			 "on the 1 step with module ranges, 5000 on the 1 with phases only)");
		free(out);
		replay_release(&rs);
	}

	r = report_new();
	CHECK(info_run(&rp, &io, r) == 0);
	out = printed(r);
	HAS(out, "parameters  1,500,000 in 4 tensors that require a gradient, 2 groups, 3.81 MiB (several dtypes)");
	HAS(out, "cost ");
	free(out);

	r = report_new();
	CHECK(explain_run(&rs, &o, r, NULL) == 0, "explain --what-if ranks=2 on a program's bundle");
	out = printed(r);
	HAS(out, "ranks=N: 4.0 MB of gradients");
	free(out);

	/* without the 1.8 fields: nothing of them */
	r = report_new();
	CHECK(steps_run(&rq, false, r) == 0);
	out = printed(r);
	HAS_NOT(out, "Recorder");
	HAS_NOT(out, "recorder:");
	free(out);
	r = report_new();
	CHECK(info_run(&rq, &io, r) == 0);
	out = printed(r);
	HAS_NOT(out, "parameters");
	HAS_NOT(out, "cost ");
	free(out);
	rps[0] = &rq;
	r = report_new();
	CHECK(explain_run(&rs, &o, r, NULL) != 0, "ranks=2 without a gradients' size");
	report_free(r);

	replay_release(&rp);
	replay_release(&rq);

	/*
	 * (1.10) CUPTI's cost per launch in the footer: 100 launches a step at
	 * 15 us are 1.5 ms more of the recorder's time in each step, and the
	 * notes and info say what it is.
	 */
	snprintf(path, sizeof(path), "%s/launch.stb", dir);
	CHECK(write_bundle(path, true, true, NULL, 0) == 0);
	CHECK(replay_load(&rp, path, NULL) == 0);
	r = report_new();
	CHECK(steps_run(&rp, false, r) == 0);
	out = printed(r);
	HAS(out, "   3.000\n");   /* step 0: 1 + 0.5 + 1.5 ms */
	HAS(out, "   2.000\n");
	/* (the notes wrap at 160 columns) */
	HAS(out, "recorder: its own host time 2.500 ms per step (25.0% of the wall time): CUPTI callbacks 0.350, "
		 "NVTX handlers 0.300, entry points 0.150, Python side 0.200 ms,\n  CUPTI inside the launches 1.500 ms");
	HAS(out, "recorder: CUPTI's work inside the launch calls 1.500 ms per step: 15000 ns per launch, measured in "
		 "the process (9 x 128 launches of an empty kernel, traced\n  2560.0 us and untraced 640.0 us a batch, "
		 "medians)");
	free(out);
	r = report_new();
	CHECK(info_run(&rp, &io, r) == 0);
	out = printed(r);
	HAS(out, "CUPTI 15000 ns per kernel launch (9 rounds of 128 launches: traced 2560.0 us, untraced 640.0 us a "
		 "batch)");
	HAS_NOT(out, "unrecorded");
	free(out);
	replay_release(&rp);

	/*
	 * (1.11) An armed window's unrecorded steps before it: the writer keeps
	 * the last 32 (the eight 50 ms ones go), the reader leaves out 0 and
	 * over an hour, so 30 of 8 ms against the window's two of 10 ms: +25%.
	 */
	{
		uint64_t before[40];

		for (size_t i = 0; i < 40; i++)
			before[i] = i < 8 ? 50 * MS : 8 * MS;
		before[20] = 0;
		before[30] = 7200ull * 1000 * MS;
		snprintf(path, sizeof(path), "%s/window.stb", dir);
		CHECK(write_bundle(path, true, false, before, 40) == 0);
		CHECK(replay_load(&rp, path, NULL) == 0);
		CHECK(rp.run.n_unrecorded_steps == 30, "%zu unrecorded steps", rp.run.n_unrecorded_steps);
		r = report_new();
		CHECK(steps_run(&rp, false, r) == 0);
		out = printed(r);
		HAS(out, "recorder: measured in the process: the program's 30 unrecorded steps just before this window took "
			 "8.000 ms (median; 8.000-8.000), its 2 recorded steps here");
		HAS(out, "10.000 ms: recording cost it +25.0%");
		/* 0.6 ms in 2 s: 0.03%, of an 8 ms step 2.4 us */
		HAS(out, "recorder: armed, recording nothing, over the 2.000 s of the run before this window: its own host time "
			 "0.600 ms (0.030%, 2.4 us per unrecorded step)");
		free(out);
		r = report_new();
		CHECK(info_run(&rp, &io, r) == 0);
		out = printed(r);
		HAS(out, "30 steps of the program just before this window, unrecorded: 8.000 ms (median)");
		HAS(out, "the recorder's own host time while armed, over the 2.000 s before this window: 0.600 ms (0.030%)");
		free(out);
		rps[0] = &rp;
		o.n_rules = 0;
		r = report_new();
		CHECK(explain_run(&rs, &o, r, NULL) == 0);
		out = printed(r);
		/* the estimate's median, 9.25 ms, is above the 8 ms measured: calibrated to it */
		HAS(out, "unrecorded: calibrated on the program's 30 unrecorded steps just before this window (median 8.000 "
			 "ms): from the recorder's own time alone the column's median");
		HAS(out, "was 9.250 ms (+15.6%); 12500 ns more of the recorder's per kernel launch");
		HAS(out, "mean        10.000");
		HAS(out, "      8.000\n");   /* the Unrecorded column's mean, the last */
		free(out);
		o.estimate_unrecorded = true;   /* the estimate alone */
		r = report_new();
		CHECK(explain_run(&rs, &o, r, NULL) == 0);
		out = printed(r);
		HAS(out, "unrecorded: measured in the process: the program's 30 unrecorded steps just before this window "
			 "took 8.000 ms (median); the");
		HAS(out, "column's median 9.250 ms is +15.6%");
		HAS_NOT(out, "calibrated");
		free(out);
		o.estimate_unrecorded = false;
		replay_release(&rp);

		/* two are too few to say a cost by */
		snprintf(path, sizeof(path), "%s/window2.stb", dir);
		CHECK(write_bundle(path, true, false, before + 38, 2) == 0);
		CHECK(replay_load(&rp, path, NULL) == 0);
		r = report_new();
		CHECK(steps_run(&rp, false, r) == 0);
		out = printed(r);
		HAS_NOT(out, "measured in the process");
		HAS_NOT(out, "armed, recording nothing");   /* a span of 0: not measured */
		free(out);
		r = report_new();
		CHECK(info_run(&rp, &io, r) == 0);
		out = printed(r);
		HAS(out, "2 steps of the program just before this window, unrecorded (too few to use)");
		free(out);
		replay_release(&rp);

		/* hostile armed costs: more than 64 threads' worth of the span, a span over a year */
		for (int k = 0; k < 2; k++) {
			struct builder b;

			snprintf(path, sizeof(path), "%s/hostile%d.stb", dir, k);
			builder_init(&b);
			b.header.clock = "cupti";
			CHECK(builder_open(&b, path) == 0);
			builder_launch(&b, "k", 7, 0, 1 * MS, 1 * MS + 5000, 2 * MS, 3 * MS);
			builder_step(&b, 0, false, 0, 10 * MS);
			bundle_writer_set_armed_cost(b.writer, k ? 1000 : UINT64_MAX, k ? UINT64_MAX / 2 : 1 * MS);
			CHECK(builder_close(&b, "ok") == 0);
			CHECK(replay_load(&rp, path, NULL) == 0);
			CHECK(rp.run.armed_span_ns == 0 && rp.run.armed_recorder_ns == 0, "hostile %d kept", k);
			r = report_new();
			CHECK(info_run(&rp, &io, r) == 0);
			out = printed(r);
			HAS_NOT(out, "armed cost");
			free(out);
			replay_release(&rp);
		}
	}
	return check_done("test_cost");
}
