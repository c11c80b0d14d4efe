/*
 * test_builder.c: the builder's own promises, on a replay: strings interned
 * once, ops named after their path and numbered on, ranges pushed and popped
 * at the depth and on the thread they were opened, launches numbered and
 * carrying the geometry, and a close that fails on what went wrong.
 */
#include <stdio.h>
#include <string.h>

#include "lib/error.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

static int32_t range_named(const struct replay *rp, const char *path)
{
	for (size_t i = 0; i < rp->n_ranges; i++)
		if (!strcmp(replay_range_path(rp, &rp->ranges[i]), path))
			return (int32_t)i;
	return -1;
}

static void test_events(void)
{
	struct replay rp;
	struct builder b;
	const struct replay_op *op;
	int32_t r;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	CHECK(builder_string(&b, NULL) == 0 && builder_string(&b, "") == 0);
	CHECK(builder_string(&b, "a") == 1 && builder_string(&b, "b") == 2 && builder_string(&b, "a") == 1);

	CHECK(builder_op(&b, &(struct builder_op){ .path = "step/forward/w1", .kind = "w1",
		.phase = "forward", .inputs = { ST_DT_BF16, ST_DT_F32 }, .outputs = { ST_DT_BF16 } }) == 1);
	CHECK(builder_op(&b, &(struct builder_op){ .id = 7, .name = "x", .path = "step/x" }) == 7);
	CHECK(builder_op(&b, &(struct builder_op){ .path = "y" }) == 8);

	builder_push(&b, "step", 0);
	builder_push(&b, "forward", 10);
	b.thread = 2;   /* where it is popped does not matter: the range stays on thread 1 */
	builder_pop(&b, 500);
	b.thread = 1;
	builder_pop(&b, 1000);
	b.geometry = (struct builder_geometry){ .grid = { 4, 2, 1 }, .block = { 128, 1, 1 }, .registers = 9 };
	CHECK(builder_launch(&b, "k", 7, 1, 20, 30, 100, 200) == 1);
	CHECK(builder_call(&b, "cudaMemcpyAsync", 40, 50) == 2);
	builder_memcpy(&b, 8, 4096, 2, 8, 1, 300, 400);
	builder_alloc(&b, 60, 0x1000, 64, ST_MEM_ACTIVATION, 1);
	builder_step(&b, 0, false, 0, 1000);
	CHECK(builder_close(&b, NULL) == 0);

	op = replay_op(&rp, 1);
	CHECK(op && !strcmp(replay_str(&rp, op->name), "w1") && op->n_inputs == 2 && op->n_outputs == 1 &&
	      op->inputs[1] == ST_DT_F32, "op 1 as registered");
	op = replay_op(&rp, 7);
	CHECK(op && !strcmp(replay_str(&rp, op->name), "x") && op->n_inputs == 0, "op 7 as registered");
	op = replay_op(&rp, 8);
	CHECK(op && !strcmp(replay_str(&rp, op->name), "y"), "a path without '/' names itself");
	r = range_named(&rp, "step/forward");
	CHECK(r >= 0 && rp.ranges[r].depth == 1 && rp.ranges[r].thread == 1 && rp.ranges[r].start == 10 &&
	      rp.ranges[r].end == 500, "forward pushed and popped");
	r = range_named(&rp, "step");
	CHECK(r >= 0 && rp.ranges[r].depth == 0 && rp.ranges[r].end == 1000, "step pushed and popped");
	CHECK(rp.n_activities == 2 && rp.activities[0].correlation == 1 && rp.activities[0].op == 1 &&
	      rp.kernel_cfg[rp.activities[0].detail].grid[0] == 4 &&
	      rp.kernel_cfg[rp.activities[0].detail].registers == 9, "the kernel as launched");
	CHECK(rp.n_activities == 2 && rp.activities[1].kind == ST_MEMCPY && rp.activities[1].correlation == 2 &&
	      rp.activities[1].bytes == 4096, "the copy as called");
	CHECK(rp.n_mem == 1 && rp.mem[0].ev.mem.size == 64 && rp.mem[0].ev.mem.source == ST_SRC_MODEL);
	replay_release(&rp);
}

/* Unbalanced ranges are the test's mistake: close says so. */
static void test_failures(void)
{
	struct replay rp;
	struct builder b;

	error_set_stream(fopen("/dev/null", "w"));
	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_push(&b, "step", 0);
	CHECK(builder_close(&b, NULL) < 0, "a range left open");
	replay_release(&rp);

	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_pop(&b, 10);
	CHECK(builder_close(&b, NULL) < 0, "a pop with nothing open");
	replay_release(&rp);

	builder_init(&b);
	builder_open_replay(&b, &rp);
	for (int i = 0; i <= BUILDER_MAX_DEPTH; i++)
		builder_push(&b, "deep", (uint64_t)i);
	CHECK(builder_close(&b, NULL) < 0, "ranges nested too deep");
	replay_release(&rp);
	error_set_stream(NULL);
}

int main(void)
{
	test_events();
	test_failures();
	return check_done("test_builder");
}
