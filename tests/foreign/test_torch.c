/*
 * test_torch.c: record/torch.c, the PyTorch mode, without a GPU or PyTorch.
 * The calls steptrace_torch.py makes (phases, module calls, optimizer
 * steps, memory tags) are made as a GPT-like training loop would make them,
 * with a fake at::sequence_number::peek that the "forward" advances as
 * autograd nodes are made; a helper thread plays autograd's, pushing the
 * ranges PyTorch's NVTX profiler opens around each backward node
 * ("AddmmBackward0, seq = N, op_id = M") in reverse order. The bundle is
 * read back through replay: steps per optimizer step (the first flagged
 * warm-up, each from the previous one's end), phases under "step", module
 * paths forward and, on the helper's thread, backward, op kinds summed over
 * layers, the profiler's own ranges not written, memory tags, and how the
 * steps were found.
 *
 *   test_torch MODE BUNDLE    MODE: train, accum (2 backward per step),
 *                             infer (no backward, no optimizer), ops (--torch ops),
 *                             sample (modules on every 2nd measured step, the
 *                             others phases only: Step.phases_only),
 *                             node (the backward's chains from autograd's current
 *                             node, a C++ stand-in for torch::autograd's, instead of
 *                             the profiler's ranges),
 *                             session (an armed process, modules on every 10th step:
 *                             idle, then two recordings into BUNDLE.1 and BUNDLE.2,
 *                             each whole, its first step with modules, a kernel and
 *                             its launch call of the same names decoded into both:
 *                             each bundle has the names its events name)
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "record/nvtx.h"
#include "record/session.h"
#include "record/torch.h"
#include "replay/replay.h"
#include "tests/lib/check.h"
#include "trace/bundle.h"

#define BASE 1000000ull
#define STEPS 3
#define SAMPLE_STEPS 6
#define LAYERS 2

static uint64_t clock_ns = BASE + 500;
static _Atomic uint64_t seq;            /* the forward thread's next autograd sequence number */
static const char *mode;
static int level = RANGES_LEVEL_MODULES;   /* what the step now running records, as the Python side follows it */

/* tests/foreign/fake_autograd.cc: nodes and get_current_node as libtorch has them (C++) */
void *fake_node_new(uint64_t seq);
void fake_node_free(void *node);
void fake_node_set(void *node);
long fake_node_use_count(void *node);
void *fake_get_current_node(void);

static uint64_t tick(void)
{
	return clock_ns += 1000;
}

static uint64_t fake_peek(void)
{
	return atomic_load(&seq);
}

/* Nodes the forward made, in order: their sequence numbers and the module path that made them. */
struct node_made {
	uint64_t seq;
	char path[128];
};
static struct node_made made[256];
static int n_made;

static void node(const char *path)
{
	if (n_made < 256) {
		made[n_made].seq = atomic_load(&seq);
		snprintf(made[n_made].path, sizeof(made[n_made].path), "%s", path);
		n_made++;
	}
	atomic_fetch_add(&seq, 1);
}

static void module(const char *name)
{
	if (level == RANGES_LEVEL_MODULES)
		ranges_torch_module(ranges_register(name), tick());
}

static void module_end(void)
{
	if (level == RANGES_LEVEL_MODULES)
		ranges_torch_module_end(tick());
}

static void phase(int p, bool begin)
{
	ranges_torch_phase(p, begin, tick());
}

/* The model's forward: GPT > transformer.h.N > (ln_1, attn > c_attn, c_proj, mlp > c_fc, c_proj) > lm_head. */
static void forward(void)
{
	char layer[64];

	phase(RANGES_PHASE_FORWARD, true);
	module("GPT");
	node("GPT");   /* the embeddings' add, in GPT.forward */
	for (int l = 0; l < LAYERS; l++) {
		snprintf(layer, sizeof(layer), "transformer.h.%d", l);
		module(layer);
		module("ln_1");
		node("ln_1");
		module_end();
		module("attn");
		module("c_attn");
		node("c_attn");
		module_end();
		node("attn");   /* the attention itself */
		module("c_proj");
		node("attn/c_proj");
		module_end();
		module_end();
		node("block");   /* the residual add */
		module("mlp");
		module("c_fc");
		node("c_fc");
		module_end();
		module("c_proj");
		node("mlp/c_proj");
		module_end();
		module_end();
		node("block");
		module_end();
	}
	module("lm_head");
	node("lm_head");
	module_end();
	module_end();
	phase(RANGES_PHASE_FORWARD, false);
	if (strcmp(mode, "infer"))
		node("loss");   /* the loss, computed after the model's call */
}

/* autograd's thread lives on between backward calls, as PyTorch's does: jobs come through these. */
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_cond = PTHREAD_COND_INITIALIZER;
static int jobs_posted, jobs_done;
static bool quit;

/* node mode: autograd runs each node made (its C++ Node current), launching a kernel in it. */
static void run_backward_nodes(void)
{
	void *acc = fake_node_new(UINT64_MAX);   /* AccumulateGrad: no sequence number */

	for (int i = n_made - 1; i >= 0; i--) {
		void *n = fake_node_new(made[i].seq);

		fake_node_set(n);
		ranges_torch_launch_at(tick);   /* what the launch callbacks do before picking the op */
		ranges_torch_launch_at(tick);   /* a second kernel of the same node: nothing moves */
		fake_node_set(NULL);
		CHECK(fake_node_use_count(n) == 1, "node %d: use count %ld after the launches", i,
		      fake_node_use_count(n));
		fake_node_free(n);
		if (i % 3 == 0) {
			fake_node_set(acc);
			ranges_torch_launch_at(tick);
			fake_node_set(NULL);
		}
	}
	fake_node_free(acc);
}

/* One backward: a profiler range per node made, last first, and AccumulateGrad without seq. */
static void run_backward(void)
{
	char name[128];

	if (!strcmp(mode, "node")) {
		run_backward_nodes();
		return;
	}
	if (level != RANGES_LEVEL_MODULES)
		return;   /* no profiler: the helper's kernels take the lead's op, under backward */
	for (int i = n_made - 1; i >= 0; i--) {
		snprintf(name, sizeof(name), "AddmmBackward0, seq = %llu, op_id = %d",
			 (unsigned long long)made[i].seq, 1000 + i);
		ranges_push(NULL, name, 0, tick());
		if (!strcmp(mode, "ops")) {   /* the aten op inside the node, with shapes */
			ranges_push(NULL, "aten::mm, seq = 1, op_id = 3, sizes = [[8, 16], [16, 8]]", 0, tick());
			ranges_pop(NULL, tick());
		}
		ranges_pop(NULL, tick());
		if (i % 3 == 0) {
			ranges_push(NULL, "torch::autograd::AccumulateGrad, op_id = 7", 0, tick());
			ranges_pop(NULL, tick());
		}
	}
}

static void *autograd_thread(void *arg)
{
	pthread_mutex_lock(&job_lock);
	for (;;) {
		while (!quit && jobs_done == jobs_posted)
			pthread_cond_wait(&job_cond, &job_lock);
		if (jobs_done == jobs_posted)
			break;
		pthread_mutex_unlock(&job_lock);
		run_backward();
		pthread_mutex_lock(&job_lock);
		jobs_done++;
		pthread_cond_broadcast(&job_cond);
	}
	pthread_mutex_unlock(&job_lock);
	return arg;
}

static void backward(void)
{
	uint64_t grads[4] = { 0x7000000, 4096, 0x7100000, 8192 };

	phase(RANGES_PHASE_BACKWARD, true);
	/* auto: the Python side's own profiler, on steps with modules; none with the node chains */
	ranges_torch_profiler(strcmp(mode, "ops") && strcmp(mode, "node") && level == RANGES_LEVEL_MODULES);
	pthread_mutex_lock(&job_lock);
	jobs_posted++;
	pthread_cond_broadcast(&job_cond);
	while (jobs_done < jobs_posted)
		pthread_cond_wait(&job_cond, &job_lock);
	pthread_mutex_unlock(&job_lock);
	ranges_torch_profiler(false);
	ranges_torch_tag(grads, 2, ST_MEM_GRADIENT, 0, tick());
	phase(RANGES_PHASE_BACKWARD, false);
}

static void iteration(int step)
{
	int micro = !strcmp(mode, "accum") ? 2 : 1;

	for (int m = 0; m < micro; m++) {
		phase(RANGES_PHASE_DATA, true);
		phase(RANGES_PHASE_DATA, false);
		if (!strcmp(mode, "infer")) {
			forward();
			continue;
		}
		n_made = 0;
		forward();
		backward();
	}
	if (!strcmp(mode, "infer"))
		return;
	phase(RANGES_PHASE_OPTIMIZER, true);
	phase(RANGES_PHASE_OPTIMIZER, false);
	ranges_torch_step(tick());
	level = ranges_torch_level();   /* the Python side installs its hooks to match */
	phase(RANGES_PHASE_ZERO_GRAD, true);
	phase(RANGES_PHASE_ZERO_GRAD, false);
	(void)step;
}

/* Kernels on the forward thread under each op would need CUDA; the ranges and ops say where they go. */
static void check_replay(const char *path)
{
	struct replay rp;
	size_t fwd_cfc = 0, bwd_cfc = 0, bwd_ln = 0, bwd_root = 0, profiler_ranges = 0, steps_ok = 0, tags = 0;
	size_t phases[RANGES_PHASE_COUNT] = { 0 }, compiled_kind = 0, aten_under_module = 0;
	bool train = strcmp(mode, "infer") != 0, sample = !strcmp(mode, "sample");
	size_t want_steps = sample ? SAMPLE_STEPS : STEPS, with_modules = 0;

	CHECK(replay_load(&rp, path, NULL) == 0);
	if (rp.n_steps == 0 && rp.n_ranges == 0)
		return;
	if (!strcmp(mode, "infer")) {
		CHECK_STR(rp.run.footer.steps_from, "outermost module calls (PyTorch, no optimizer step)");
		want_steps = STEPS;
	} else {
		CHECK_STR(rp.run.footer.steps_from, "optimizer steps (PyTorch)");
	}
	CHECK_U64(rp.n_steps, want_steps);
	for (size_t i = 0; i < rp.n_steps; i++) {
		CHECK(rp.steps[i].warmup == (i == 0), "step %zu warm-up %d", i, rp.steps[i].warmup);
		steps_ok += i == 0 || rp.steps[i].start == rp.steps[i - 1].end;
		/* every 2nd: the warm-up step, the first measured one, then 3 and 5 have modules */
		CHECK(rp.steps[i].phases_only == (sample && (i == 2 || i == 4)), "step %zu phases only %d", i,
		      rp.steps[i].phases_only);
		with_modules += !rp.steps[i].phases_only;
	}
	CHECK_U64(steps_ok, rp.n_steps);   /* each from the previous one's end */
	for (size_t i = 0; i < rp.n_ranges; i++) {
		const struct replay_range *r = &rp.ranges[i];
		const char *p = replay_range_path(&rp, r), *name = replay_str(&rp, r->name);

		for (int ph = 1; ph < RANGES_PHASE_COUNT; ph++) {
			char want[64];

			snprintf(want, sizeof(want), "step/%s", ranges_phase_names[ph]);
			phases[ph] += !strcmp(p, want) && r->thread == rp.main_thread;
		}
		fwd_cfc += !strcmp(p, "step/forward/GPT/transformer.h.1/mlp/c_fc");
		if (r->thread != rp.main_thread) {
			bwd_cfc += !strcmp(p, "step/backward/GPT/transformer.h.1/mlp/c_fc");
			bwd_ln += !strcmp(p, "step/backward/GPT/transformer.h.0/ln_1");
			bwd_root += !strcmp(p, "step/backward/GPT");
			aten_under_module += !strncmp(name, "aten::mm", 8) &&
					     strstr(p, "step/backward/GPT/transformer.h.") != NULL;
		}
		profiler_ranges += strstr(name, "Backward0") != NULL || strstr(name, "AccumulateGrad") != NULL;
	}
	for (size_t i = 0; i < rp.n_ops; i++) {
		const struct replay_op *o = &rp.ops[i];

		if (!strcmp(replay_str(&rp, o->path), "step/backward/GPT/transformer.h.0/mlp/c_fc")) {
			CHECK_STR(replay_str(&rp, o->kind), "transformer.h.*/mlp/c_fc");
			CHECK_STR(replay_str(&rp, o->phase), "backward");
			compiled_kind++;
		}
		if (!strcmp(replay_str(&rp, o->path), "step/forward/GPT")) {
			CHECK_STR(replay_str(&rp, o->kind), "GPT");
			CHECK_STR(replay_str(&rp, o->phase), "forward");
		}
		if (!strcmp(replay_str(&rp, o->path), "step/zero_grad"))
			CHECK_STR(replay_str(&rp, o->phase), "zero_grad");
		if (!strcmp(replay_str(&rp, o->path), "step/data"))
			CHECK_STR(replay_str(&rp, o->phase), "data");
	}
	for (size_t i = 0; i < rp.n_mem; i++)
		tags += rp.mem[i].ev.kind == ST_MEMTAG && rp.mem[i].ev.mem.category == ST_MEM_GRADIENT;
	/* forward: one c_fc call per layer per micro-batch per step */
	int micro = !strcmp(mode, "accum") ? 2 : 1;
	CHECK_U64(fwd_cfc, (uint64_t)with_modules * micro);
	CHECK(phases[RANGES_PHASE_FORWARD] > 0 && phases[RANGES_PHASE_DATA] > 0, "no step/forward or step/data range");
	CHECK_U64(phases[RANGES_PHASE_FORWARD], (uint64_t)want_steps * micro);   /* every step has its phases */
	if (train) {
		CHECK_U64(bwd_cfc, (uint64_t)with_modules * micro);
		CHECK_U64(bwd_ln, (uint64_t)with_modules * micro);
		CHECK(bwd_root >= (uint64_t)with_modules * micro, "no backward range of the root module");
		CHECK(compiled_kind == (size_t)micro, "the backward ops of layer 0's c_fc: %zu", compiled_kind);
		CHECK_U64(tags, (uint64_t)2 * want_steps * micro);
		CHECK_U64(phases[RANGES_PHASE_BACKWARD], (uint64_t)want_steps * micro);
		CHECK(phases[RANGES_PHASE_BACKWARD] > 0 && phases[RANGES_PHASE_OPTIMIZER] > 0 &&
		      phases[RANGES_PHASE_ZERO_GRAD] > 0, "a phase is missing");
	}
	if (!strcmp(mode, "ops")) {
		CHECK(profiler_ranges > 0, "--torch ops dropped the profiler's node ranges");
		CHECK(aten_under_module > 0, "no aten op under a backward module");
	} else {
		CHECK_U64(profiler_ranges, 0);   /* the profiler's ranges are not written in auto mode */
	}
	replay_release(&rp);
}

static const char fake_kernel_name[] = "ampere_bf16_gemm_fake";   /* one pointer, as CUPTI's */

/* CUPTI's records of a kernel and its launch call, and of an untimed memset, decoded into s (fake_decode.c). */
void fake_kernel(struct rec_session *s, uint64_t t, const char *name);

/* A recording of an armed process: its steps numbered from `first`, none warm-up, its ops and modules. */
static void check_session(const char *path, uint32_t first, size_t want_steps, uint64_t begin)
{
	struct replay rp;
	size_t fwd_cfc = 0, bwd_cfc = 0;

	CHECK(replay_load(&rp, path, NULL) == 0);
	CHECK_STR(rp.run.footer.steps_from, "optimizer steps (PyTorch)");
	CHECK_U64(rp.n_steps, want_steps);
	CHECK_U64(rp.n_measured_steps, want_steps);
	for (size_t i = 0; i < rp.n_steps; i++) {
		CHECK(rp.steps[i].index == first + i, "step %zu has index %u", i, rp.steps[i].index);
		CHECK(i ? rp.steps[i].start == rp.steps[i - 1].end : rp.steps[i].start == begin - BASE,
		      "step %zu starts at %" PRIu64, i, rp.steps[i].start);
	}
	for (size_t i = 0; i < rp.n_ranges; i++) {
		const char *p = replay_range_path(&rp, &rp.ranges[i]);

		fwd_cfc += !strcmp(p, "step/forward/GPT/transformer.h.1/mlp/c_fc");
		bwd_cfc += rp.ranges[i].thread != rp.main_thread &&
			   !strcmp(p, "step/backward/GPT/transformer.h.1/mlp/c_fc");
	}
	/* modules on every 10th step (record's default) counted from the recording's first */
	CHECK_U64(fwd_cfc, 1);
	CHECK_U64(bwd_cfc, 1);
	for (size_t i = 0; i < rp.n_steps; i++)
		CHECK(rp.steps[i].phases_only == (i % 10 != 0), "step %zu: phases only %d", i, rp.steps[i].phases_only);
	CHECK(rp.n_ops > 10, "the ops registered before this recording are in it: %zu", rp.n_ops);
	CHECK(rp.n_activities == 1 && rp.n_apis == 1, "%zu activities, %zu API calls", rp.n_activities,
	      rp.n_apis);
	/* fake_kernel's memset had no timestamps: dropped, not placed at 0 */
	CHECK_U64(replay_dropped(&rp, ST_MEMSET), 1);
	if (rp.n_activities == 1 && rp.n_apis == 1) {
		CHECK_STR(replay_str(&rp, rp.activities[0].name), fake_kernel_name);
		CHECK_STR(replay_str(&rp, rp.apis[0].name), "cudaLaunchKernel");
	}
	replay_release(&rp);
}

/* One recording of an armed process into path: `steps` steps from a step boundary, the first numbered `first`. */
static void session(const char *path, uint32_t first, int steps, uint64_t *begin)
{
	Steptrace__Header hdr = STEPTRACE__HEADER__INIT;
	struct ranges_totals t;
	struct rec_session s;

	hdr.clock = "cupti";
	hdr.time_base_ns = BASE;
	CHECK(rec_session_open(&s, path, &hdr) == 0);
	*begin = tick();
	ranges_session_begin(*begin, first);
	level = ranges_torch_level();
	CHECK(level == RANGES_LEVEL_MODULES, "a recording's first step has modules: %d", level);
	for (int step = 0; step < steps; step++)
		iteration(step);
	fake_kernel(&s, *begin + 1, fake_kernel_name);
	ranges_finish(BASE, tick());
	level = ranges_torch_level();
	CHECK(level == RANGES_LEVEL_OFF, "between recordings nothing is recorded: %d", level);
	rec_session_lock(&s);
	ranges_drain_locked(&s);
	rec_session_unlock(&s);
	ranges_totals(&t);
	rec_session_set_steps_from(&s, t.steps_from);
	CHECK(rec_session_close(&s, "ok") == 0);
	rec_session_release(&s);
	CHECK_U64(t.steps, (uint64_t)steps);
	CHECK_U64(t.unpaired, 0);
	CHECK_U64(t.lost, 0);
}

static void run_sessions(const char *path)
{
	char one[4096], two[4096];
	uint64_t b1, b2;

	snprintf(one, sizeof(one), "%s.1", path);
	snprintf(two, sizeof(two), "%s.2", path);
	ranges_torch_sample(10);
	ranges_session_idle();
	CHECK(ranges_torch_level() == RANGES_LEVEL_OFF, "an armed process records nothing at first");
	tick();   /* steps go by unrecorded: the Python side calls nothing but the step count */
	session(one, 12, 2, &b1);
	tick();
	session(two, 40, 3, &b2);
	check_session(one, 12, 2, b1);
	check_session(two, 40, 3, b2);
}

int main(int argc, char **argv)
{
	struct ranges_config cfg = { .warmup = -1, .elem_bytes = 2 };
	Steptrace__Header hdr = STEPTRACE__HEADER__INIT;
	struct ranges_totals t;
	struct rec_session s;
	pthread_t autograd;
	const char *path;
	int steps = STEPS;

	if (argc < 3) {
		fprintf(stderr, "usage: test_torch train|accum|infer|ops|sample|node|session BUNDLE\n");
		return 2;
	}
	mode = argv[1];
	path = argv[2];
	CHECK(ranges_init(&cfg) == 0);
	ranges_torch_attach(!strcmp(mode, "ops") ? RANGES_TORCH_OPS : RANGES_TORCH_AUTO, fake_peek);
	CHECK(pthread_create(&autograd, NULL, autograd_thread, NULL) == 0);
	if (!strcmp(mode, "sample")) {
		ranges_torch_sample(2);
		steps = SAMPLE_STEPS;
	}
	if (!strcmp(mode, "node")) {   /* the Python side's check: where a node keeps its number */
		void *n = fake_node_new(4242);
		int off;

		fake_node_set(n);
		off = ranges_torch_node_probe(fake_get_current_node(), 4242);
		fake_node_set(NULL);
		CHECK(off == 3 * (int)sizeof(void *), "Node::sequence_nr_ found at %d", off);
		CHECK(fake_node_use_count(n) == 1, "the probe kept a reference: %ld", fake_node_use_count(n));
		fake_node_free(n);
		ranges_torch_nodes(off);
	}
	if (!strcmp(mode, "session")) {
		run_sessions(path);
	} else {
		hdr.clock = "cupti";
		hdr.time_base_ns = BASE;
		CHECK(rec_session_open(&s, path, &hdr) == 0);
		for (int step = 0; step < steps; step++)
			iteration(step);
		phase(RANGES_PHASE_DATA, true);   /* the tail after the last step: not a step */
		phase(RANGES_PHASE_DATA, false);
		ranges_finish(BASE, tick());
	}
	pthread_mutex_lock(&job_lock);
	quit = true;
	pthread_cond_broadcast(&job_cond);
	pthread_mutex_unlock(&job_lock);
	pthread_join(autograd, NULL);
	if (!strcmp(mode, "session"))
		return check_done("test_torch");
	rec_session_lock(&s);
	ranges_drain_locked(&s);
	rec_session_unlock(&s);
	ranges_totals(&t);
	rec_session_set_steps_from(&s, t.steps_from);
	CHECK(rec_session_close(&s, "ok") == 0);
	rec_session_release(&s);
	CHECK_U64(t.open, 0);
	CHECK_U64(t.unpaired, 0);
	CHECK_U64(t.lost, 0);
	check_replay(path);
	return check_done("test_torch");
}
