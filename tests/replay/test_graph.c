/*
 * test_graph.c: kernels a CUDA graph launches (one cudaGraphLaunch call, no
 * op's NVTX range around it) land in their op's range path and in the step
 * of the launch, as an eager step's kernels do: an eager warm-up step with
 * ranges, then two replayed steps whose kernels, memcpy and memset carry only
 * their ops (as the recorder maps graph nodes to ops), one kernel with no op.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "replay/replay.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

static const char *const paths[] = {
	"step/forward/layer.0/attn/softmax",
	"step/forward/layer.0/ffn/w1",
	"step/forward/layer.1/ffn/w1",
	"step/backward/layer.1/ffn/w1",
	"step/optimizer/adamw",
};
#define N_OPS 5

/*
 * Each op's range pushed in turn from t, around its one launch (launch) or
 * with nothing in it, as under a stream capture, where the launches make no
 * kernel. Returns the time after the last pop.
 */
static uint64_t op_ranges(struct builder *b, const uint32_t *ops, uint64_t t, bool launch)
{
	char open[8][16];
	int depth = 0;

	for (int i = 0; i < N_OPS; i++) {
		char buf[64], *save = NULL, *c;
		int k = 0;

		snprintf(buf, sizeof(buf), "%s", paths[i]);
		/* close what the next path does not share, open the rest */
		for (c = strtok_r(buf, "/", &save); c; c = strtok_r(NULL, "/", &save), k++) {
			if (k < depth && !strcmp(open[k], c))
				continue;
			while (depth > k)
				builder_pop(b, t), depth--;
			builder_push(b, c, t);
			snprintf(open[depth++], sizeof(open[0]), "%s", c);
			t += 2;
		}
		while (depth > k)
			builder_pop(b, t), depth--;
		if (launch)
			builder_launch(b, "k", 7, ops[i], t, t + 5, t + 10, t + 60);
		t += launch ? 100 : 10;
	}
	while (depth > 0)
		builder_pop(b, t), depth--;
	return t;
}

/* The eager step: each op's range pushed around its one launch. */
static void eager_step(struct builder *b, const uint32_t *ops, uint64_t t)
{
	builder_step(b, 0, true, t, t + 900);
	op_ranges(b, ops, t, true);
}

/*
 * A replay: one launch; op i's kernels (op 1 twice), adamw's memcpy and
 * memset, an orphan. With capture, the step first captures the graph: the
 * ops' ranges pushed between cudaStreamBeginCapture and EndCapture, with no
 * GPU work, as the model's capture step does.
 */
static void graph_step(struct builder *b, const uint32_t *ops, uint32_t index, uint64_t t, bool capture)
{
	uint64_t corr, g = t + 50, launch = t + 10;

	builder_step(b, index, false, t, t + 2000);
	if (capture) {
		uint64_t end;

		builder_call(b, "cudaStreamBeginCapture", t + 5, t + 8);
		end = op_ranges(b, ops, t + 10, false);
		builder_call(b, "cudaStreamEndCapture", end + 2, end + 4);
		launch = end + 10;
		g = end + 50;
	}
	corr = builder_call(b, "cudaGraphLaunch", launch, launch + 10);
	for (int i = 0; i < N_OPS; i++) {
		builder_kernel(b, "k", corr, 7, ops[i], g, g + 40);
		g += 50;
		if (i == 1) {
			builder_kernel(b, "k2", corr, 7, ops[i], g, g + 40);
			g += 50;
		}
	}
	builder_memcpy(b, 1, 8, corr, 7, ops[4], g, g + 5);
	builder_memset(b, 64, corr, 7, ops[4], g + 10, g + 15);
	builder_kernel(b, "stray", corr, 7, 0, g + 20, g + 30);
}

int main(void)
{
	struct builder b;
	struct replay rp;
	uint32_t ops[N_OPS];
	int per_op[3][N_OPS + 1] = { { 0 } };
	struct replay_filter f;
	int kept = 0, step_ranges[3] = { 0 };

	builder_init(&b);
	builder_open_replay(&b, &rp);
	for (int i = 0; i < N_OPS; i++)
		ops[i] = builder_op(&b, &(struct builder_op){
			.path = paths[i], .phase = i < 3 ? "forward" : i == 3 ? "backward" : "optimizer" });
	eager_step(&b, ops, 1000);
	graph_step(&b, ops, 1, 10000, true);
	graph_step(&b, ops, 2, 20000, false);
	CHECK(builder_close(&b, "done") == 0, "the replay builds");

	for (size_t i = 0; i < rp.n_activities; i++) {
		const struct replay_activity *a = &rp.activities[i];
		const struct replay_op *op = replay_op(&rp, a->op);
		const char *path = replay_activity_path(&rp, a);

		CHECK(a->step >= 0 && a->step <= 2, "activity %zu at %llu is in a step (%d)", i,
		      (unsigned long long)a->start, a->step);
		if (!op) {
			CHECK_STR(path, "");   /* no op: no range path */
			continue;
		}
		CHECK(!strcmp(path, replay_str(&rp, op->path)), "activity %zu (step %d) is under '%s', not its op's '%s'",
		      i, a->step, path, replay_str(&rp, op->path));
		if (a->step >= 0 && a->kind == ST_KERNEL)
			per_op[a->step][a->op - 1]++;
	}
	for (int s = 1; s <= 2; s++) {
		const struct replay_step *st = &rp.steps[s];

		CHECK(st->index == (uint32_t)s && !st->warmup, "step %d is measured", s);
		CHECK_U64(st->kernels, 7);   /* the graph's kernels, the orphan too */
		for (int i = 0; i < N_OPS; i++)
			CHECK(per_op[s][i] == per_op[0][i] + (i == 1), "step %d: op %d has %d kernels, want %d",
			      s, i + 1, per_op[s][i], per_op[0][i] + (i == 1));
	}

	/* the ranges made for a replay nest like the eager step's; the capture's are gone */
	for (size_t i = 0; i < rp.n_ranges; i++) {
		const struct replay_range *r = &rp.ranges[i];
		const char *p = replay_range_path(&rp, r);

		if (!strcmp(p, "step") && r->step >= 0 && r->step <= 2)
			step_ranges[r->step]++;
		if (r->step == 1 && !strcmp(p, "step/optimizer/adamw"))
			CHECK(r->kernels == 1, "adamw's range in the capture step (at %llu) is the launch's, "
			      "with its kernel, not the capture's (%llu kernels)", (unsigned long long)r->start,
			      (unsigned long long)r->kernels);

		if (r->step == 1 && !strcmp(p, "step"))
			CHECK_U64(r->kernels, 6);   /* the replayed step's range: its ops' kernels */
		if (r->step == 2 && !strcmp(p, "step/forward/layer.0/ffn/w1"))
			CHECK_U64(r->kernels, 2);   /* w1's range: both its kernels */
		if (r->step == 2 && !strcmp(p, "step/forward"))
			CHECK(r->gpu_start == 20050 && r->gpu_end == 20240,
			      "forward's GPU span is its kernels' (%llu-%llu)",
			      (unsigned long long)r->gpu_start, (unsigned long long)r->gpu_end);
	}

	for (int s = 0; s <= 2; s++)
		CHECK(step_ranges[s] == 1, "step %d has one 'step' range, not %d", s, step_ranges[s]);

	/* --range forward keeps the forward kernels of every step */
	CHECK(replay_filter_init(&f, &rp, "forward") == 0, "the filter compiles");
	for (size_t i = 0; i < rp.n_activities; i++)
		kept += replay_filter_activity(&f, &rp, &rp.activities[i]);
	CHECK(kept == 3 + 4 + 4, "--range forward keeps 11 activities, not %d", kept);
	replay_filter_release(&f);
	replay_release(&rp);
	return check_done("test_graph");
}
