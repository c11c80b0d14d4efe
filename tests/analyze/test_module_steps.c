/*
 * test_module_steps.c: a recording with module ranges on a sample of its
 * steps (format 1.8, Step.phases_only): step 0 warm-up, steps 1 and 3 with
 * the model's module range "GPT" under "forward", step 2 phases only (its
 * kernel under "forward" itself). summary --by op counts steps 1 and 3
 * alone (no "forward/forward" row, two GPT kernels, per-step totals over
 * two steps) and says so, and so does flops; ranges counts "step" and "step/forward" in every
 * measured step, "step/forward/GPT" in steps 1 and 3, and NCCL's range
 * under "forward", which every step has, in every measured step; steps
 * lists the steps that have modules.
 */
#include <stdio.h>
#include <string.h>

#include "analyze/flops.h"
#include "analyze/ranges.h"
#include "analyze/steps.h"
#include "analyze/summary.h"
#include "lib/table.h"
#include "replay/replay.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

/* A report as CSV text (static buffer). */
static const char *csv(struct report *r)
{
	static char buf[8192];
	FILE *f = fmemopen(buf, sizeof(buf) - 1, "w");

	buf[0] = '\0';
	CHECK(f && report_print(r, OUT_CSV, f) == 0);
	if (f)
		fclose(f);
	return buf;
}

static void build(struct builder *b, struct replay *rp)
{
	uint32_t gpt, fwd;

	builder_init(b);
	builder_open_replay(b, rp);
	gpt = builder_op(b, &(struct builder_op){ .path = "step/forward/GPT", .kind = "GPT", .phase = "forward" });
	fwd = builder_op(b, &(struct builder_op){ .path = "step/forward", .kind = "forward", .phase = "forward" });
	for (uint32_t i = 0; i < 4; i++) {
		uint64_t t = 1000 * i;
		bool modules = i != 2;
		struct st_event ev = { .kind = ST_STEP, .start = t, .end = t + 1000 };

		builder_push(b, "step", t);
		builder_push(b, "forward", t + 10);
		if (modules)
			builder_push(b, "GPT", t + 20);
		builder_launch(b, "gemm", 7, modules ? gpt : fwd, t + 30, t + 40, t + 100, t + 200);
		if (modules)
			builder_pop(b, t + 300);
		builder_nccl_range(b, "ncclAllReduce", 2, t + 310, t + 350, 1, 4096);   /* every step has it */
		builder_pop(b, t + 400);
		builder_pop(b, t + 900);
		ev.step.index = i;
		ev.step.warmup = i == 0;
		ev.step.phases_only = !modules;
		ev.step.thread = b->thread;
		builder_add(b, &ev);
	}
	CHECK(builder_close(b, NULL) == 0);
}

int main(void)
{
	struct builder b;
	struct replay rp;
	struct report *r;
	const char *out;

	build(&b, &rp);

	r = report_new();
	CHECK(summary_run(&rp, &(struct summary_opts){ .by = 1 /* op */, .per_step = true }, r) == 0);
	out = csv(r);
	CHECK(strstr(out, "forward/GPT") != NULL, "%s", out);
	CHECK(strstr(out, "forward/forward") == NULL, "a phases-only step's kernel counted: %s", out);
	CHECK(strstr(out, "100.0,100.0,1,100.0,") != NULL, "100 ns and 1 GPT kernel per step of 2: %s", out);
	report_free(r);

	r = report_new();
	CHECK(ranges_run(&rp, &(struct ranges_opts){ 0 }, r) == 0);
	out = csv(r);
	{
		char line[256];
		int fwd = -1, gpt = -1, step = -1, nccl = -1;
		FILE *f = fmemopen((void *)out, strlen(out), "r");

		while (f && fgets(line, sizeof(line), f)) {
			int n = -1;

			if (sscanf(line, "%*[^,],%*[^,],%d,", &n) != 1)
				continue;
			if (strstr(line, ",step/forward/GPT,"))
				gpt = n;
			else if (strstr(line, ",step/forward/ncclAllReduce,"))
				nccl = n;
			else if (strstr(line, ",step/forward,"))
				fwd = n;
			else if (strstr(line, ",step,"))
				step = n;
		}
		if (f)
			fclose(f);
		CHECK(step == 3 && fwd == 3 && gpt == 2, "instances: step %d, step/forward %d, GPT %d: %s", step, fwd,
		      gpt, out);
		/* not a module range: a phases-only step has it too, and it counts there */
		CHECK(nccl == 3, "instances: ncclAllReduce %d: %s", nccl, out);
	}
	report_free(r);

	{
		struct flops_result fr;
		bool phase_row = false;

		CHECK(flops_compute(&rp, &(struct flops_options){ 0 }, &fr) == 0);
		for (size_t i = 0; i < fr.n_rows; i++)
			phase_row |= strstr(fr.rows[i].name, "forward/forward") != NULL;
		CHECK(!phase_row && fr.divisor == 2 && fr.module_steps == 2 && fr.of_steps == 3,
		      "flops: divisor %g, %zu of %zu steps", fr.divisor, fr.module_steps, fr.of_steps);
		flops_result_release(&fr);
	}

	r = report_new();
	CHECK(steps_run(&rp, false, r) == 0);
	{
		char text[8192];
		FILE *f = fmemopen(text, sizeof(text) - 1, "w");

		text[0] = '\0';
		CHECK(f && report_print(r, OUT_TABLE, f) == 0);
		if (f)
			fclose(f);
		CHECK(strstr(text, "module ranges on 3 of the 4 steps (0, 1, 3; the others have phases only)") != NULL,
		      "%s", text);
	}
	report_free(r);
	replay_release(&rp);
	return check_done("test_module_steps");
}
