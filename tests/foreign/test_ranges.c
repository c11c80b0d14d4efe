/*
 * test_ranges.c: record/nvtx.c without a GPU. NVTX pushes and pops as
 * PyTorch makes them (a step range, emit_nvtx names whose seq and op_id
 * change every step, autograd's backward on a thread of its own, the
 * optimizer's record_function range, a domain with a registered string,
 * start/end ranges and marks) are drained into a real session; the bundle
 * read back must hold one op per execution per step, reused across steps,
 * with path, kind, phase and aten cost; steps with their warm-up flags;
 * every range closed, normalised, at its depth; and the counts of what was
 * unpaired.
 */
#include <pthread.h>

#include "lib/grow.h"
#include "record/capture.h"
#include "record/nvtx.h"
#include "record/session.h"
#include "tests/lib/check.h"
#include "trace/bundle.h"

#define BASE 1000000ull   /* the session's time base, CUPTI ns */
#define STEPS 3

static uint64_t clock_ns = BASE + 500;

/*
 * Helpers live on after their work, as autograd's thread does: each waits
 * here until the step range has closed (a helper that has ended gets no
 * copies of the lead's ranges).
 */
static pthread_barrier_t step_closed;
static pthread_mutex_t work_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work_done = PTHREAD_COND_INITIALIZER;
static int works_done;

static void work_finished(void)
{
	pthread_mutex_lock(&work_lock);
	works_done++;
	pthread_cond_signal(&work_done);
	pthread_mutex_unlock(&work_lock);
}

static void wait_work(int n)
{
	pthread_mutex_lock(&work_lock);
	while (works_done < n)
		pthread_cond_wait(&work_done, &work_lock);
	pthread_mutex_unlock(&work_lock);
}

static uint64_t tick(void)
{
	return clock_ns += 1000;
}

struct step_args {
	int step;
};

/* a helper that launches without a range of its own while the optimizer runs */
static void *stackless_thread(void *arg)
{
	ranges_stackless();
	work_finished();
	pthread_barrier_wait(&step_closed);
	return arg;
}

/* autograd's device thread: a helper of the lead; its phase comes from the node's name */
static void *backward_thread(void *arg)
{
	const struct step_args *a = arg;
	char name[128];

	snprintf(name, sizeof(name), "autograd::engine::evaluate_function: MmBackward0, seq = %d", 40 + a->step);
	ranges_push(NULL, name, 0, tick());
	snprintf(name, sizeof(name), "aten::mm, seq = %d, op_id = %d, sizes = [[8, 16], [16, 8]], "
		 "input_op_ids = [(1,0), (2,0)]", 40 + a->step, 900 + a->step);
	CHECK(ranges_push(NULL, name, 0, tick()) == 1);   /* its own depth */
	CHECK(ranges_pop(NULL, tick()) == 1);
	CHECK(ranges_pop(NULL, tick()) == 0);
	work_finished();
	pthread_barrier_wait(&step_closed);
	return NULL;
}

static void one_step(int step)
{
	struct step_args a = { step };
	pthread_t t, u;
	char name[160];

	works_done = 0;
	pthread_barrier_init(&step_closed, NULL, 3);
	CHECK(ranges_push(NULL, "train_step", 0, tick()) == 0);
	ranges_push(NULL, "forward", 0, tick());
	for (int i = 0; i < 2; i++) {   /* one path, two executions: two ops */
		snprintf(name, sizeof(name), "aten::linear, op_id = %d, sizes = [[4, 8], [16, 8], []], "
			 "input_op_ids = [(3,0), (4,0), (0,-1)]", 100 * step + i);
		CHECK(ranges_push(NULL, name, 0, tick()) == 2);
		ranges_pop(NULL, tick());
	}
	ranges_pop(NULL, tick());
	CHECK(pthread_create(&t, NULL, backward_thread, &a) == 0);
	wait_work(1);
	ranges_push(NULL, "Optimizer.step#AdamW.step", 0, tick());
	ranges_push(NULL, "aten::_foreach_add_, op_id = 5, sizes = [[10, 10], [10, 10], []]", 0, tick());
	ranges_pop(NULL, tick());
	CHECK(pthread_create(&u, NULL, stackless_thread, NULL) == 0);
	wait_work(2);
	ranges_pop(NULL, tick());
	CHECK(ranges_pop(NULL, tick()) == 0);
	pthread_barrier_wait(&step_closed);
	pthread_join(t, NULL);
	pthread_join(u, NULL);
	pthread_barrier_destroy(&step_closed);
}

struct op_seen {
	uint32_t id;
	char path[256], kind[64], phase[32], name[160];
	uint64_t flops, bytes;
};

static struct op_seen *find_op(struct op_seen *ops, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(ops[i].path, path))
			return &ops[i];
	return NULL;
}

static void read_back(const char *path)
{
	struct bundle_reader *r = bundle_reader_open(path);
	struct op_seen ops[32];
	size_t n_ops = 0, n_ranges = 0, n_steps = 0, linear = 0, marks = 0, domain_ranges = 0, loads = 0;
	size_t mirrors_step = 0, mirrors_opt = 0, mirrors_other = 0;
	int warmup[STEPS] = { -1, -1, -1 };
	struct st_event ev;
	bool normalised = true, depths = true;

	CHECK(r != NULL);
	if (!r)
		return;
	while (bundle_reader_next(r, &ev) == 1) {
		if (ev.kind == ST_OP && n_ops < 32) {
			struct op_seen *o = &ops[n_ops++];

			o->id = ev.op.id;
			snprintf(o->path, sizeof(o->path), "%s", bundle_reader_string(r, ev.op.path));
			snprintf(o->kind, sizeof(o->kind), "%s", bundle_reader_string(r, ev.op.kind));
			snprintf(o->phase, sizeof(o->phase), "%s", bundle_reader_string(r, ev.op.phase));
			snprintf(o->name, sizeof(o->name), "%s", bundle_reader_string(r, ev.op.name));
			o->flops = ev.op.flops;
			o->bytes = ev.op.bytes;
		} else if (ev.kind == ST_STEP) {
			CHECK(ev.step.index < STEPS, "step %u", ev.step.index);
			if (ev.step.index < STEPS)
				warmup[ev.step.index] = ev.step.warmup;
			CHECK(ev.end > ev.start && ev.start >= 500, "step %u at %llu..%llu", ev.step.index,
			      (unsigned long long)ev.start, (unsigned long long)ev.end);
			n_steps++;
		} else if (ev.kind == ST_RANGE) {
			const char *name = bundle_reader_string(r, ev.range.name);
			const char *dom = bundle_reader_string(r, ev.range.domain);

			if (!strncmp(name, "aten::add,", 10))
				continue;   /* the timing loop's */
			n_ranges++;
			normalised &= !strstr(name, "seq =") && !strstr(name, "op_id") && !strstr(name, "input_op_ids");
			if (!strncmp(name, "aten::linear", 12)) {
				linear++;
				depths &= ev.range.depth == 2;
			}
			if (!strncmp(name, "aten::mm", 8))
				depths &= ev.range.depth == 2;   /* under the lead's train_step (0) */
			if (!strcmp(dom, "steptrace.mirror")) {
				if (!strcmp(name, "train_step"))
					mirrors_step++, depths &= ev.range.depth == 0;
				else if (!strcmp(name, "Optimizer.step#AdamW.step"))
					mirrors_opt++, depths &= ev.range.depth == 1;
				else
					mirrors_other++;
			}
			if (!strcmp(name, "train_step"))
				depths &= ev.range.depth == 0;
			marks += !strcmp(name, "checkpoint") && ev.start == ev.end;
			loads += !strcmp(name, "load") && ev.end > ev.start;
			domain_ranges += !strcmp(dom, "mydomain") && !strcmp(name, "custom") && ev.end > ev.start;
		}
	}
	CHECK(!bundle_reader_truncated(r));
	bundle_reader_free(r);

	/* the timing loop's add, train_step, forward, linear x2, evaluate_function, mm,
	 * Optimizer.step, foreach, custom, left open */
	CHECK_U64(n_ops, 11);
	CHECK_U64(n_steps, STEPS);
	CHECK(warmup[0] == 1 && warmup[1] == 0 && warmup[2] == 0, "warm-up flags %d %d %d", warmup[0],
	      warmup[1], warmup[2]);
	/* 8 per step, 3 mirrors per step (train_step on both helpers, Optimizer.step on
	 * the stackless one), the domain range, the start/end range and the mark */
	CHECK_U64(n_ranges, 11 * STEPS + 3);
	CHECK_U64(mirrors_step, 2 * STEPS);
	CHECK_U64(mirrors_opt, STEPS);
	CHECK_U64(mirrors_other, 0);
	CHECK_U64(linear, 2 * STEPS);
	CHECK(normalised, "a range name kept emit_nvtx's seq, op_id or input_op_ids");
	CHECK(depths, "a range has the wrong depth");
	CHECK_U64(marks, 1);
	CHECK_U64(loads, 1);
	CHECK_U64(domain_ranges, 1);

	struct op_seen *o = find_op(ops, n_ops, "train_step/forward/aten::linear, sizes = [[4, 8], [16, 8], []]");
	CHECK(o != NULL);
	if (o) {
		CHECK_STR(o->kind, "matmul/aten::linear");
		CHECK_STR(o->phase, "forward");
		CHECK_STR(o->name, "aten::linear, sizes = [[4, 8], [16, 8], []]");
		CHECK_U64(o->flops, 2 * 4 * 8 * 16);
		CHECK_U64(o->bytes, 2 * (4 * 8 + 16 * 8 + 4 * 16));   /* elem_bytes 2 */
	}
	o = find_op(ops, n_ops, "train_step/autograd::engine::evaluate_function: MmBackward0/aten::mm, sizes = [[8, 16], [16, 8]]");
	CHECK(o != NULL);
	if (o) {
		CHECK_STR(o->kind, "matmul/aten::mm");
		CHECK_STR(o->phase, "backward");
		CHECK_U64(o->flops, 2 * 8 * 16 * 8);
	}
	o = find_op(ops, n_ops, "train_step/Optimizer.step#AdamW.step/aten::_foreach_add_, sizes = [[10, 10], [10, 10], []]");
	CHECK(o != NULL);
	if (o) {
		CHECK_STR(o->kind, "elementwise/aten::_foreach_add_");
		CHECK_STR(o->phase, "optimizer");
		CHECK_U64(o->bytes, 2 * (200 + 100));
	}
	o = find_op(ops, n_ops, "train_step");
	CHECK(o != NULL && !strcmp(o->phase, ""), "the step range's op has phase '%s'", o ? o->phase : "?");
	o = find_op(ops, n_ops, "train_step/forward");
	CHECK(o != NULL && !strcmp(o->phase, "forward") && !strcmp(o->kind, "forward"));
}

/* Push and pop cost on the application's thread outside a step, for the record (not a check). */
static void timing(void)
{
	struct timespec a, b;
	const int n = 200000;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (int i = 0; i < n; i++) {
		ranges_push(NULL, "aten::add, seq = 7, op_id = 9, sizes = [[4, 512, 768], [4, 512, 768], []]", 0, tick());
		ranges_pop(NULL, tick());
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	printf("push + pop of an emit_nvtx name: %.0f ns\n",
	       ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / n);
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "test_ranges.stb";
	struct ranges_config cfg = { .step_range = "train_step", .warmup = 1, .elem_bytes = 2 };
	Steptrace__Header hdr = STEPTRACE__HEADER__INIT;
	struct ranges_totals t;
	struct rec_session s;
	struct ranges_domain *d;
	uint32_t reg;
	uint64_t id;

	CHECK(ranges_init(&cfg) == 0);
	timing();
	/* ranges pushed before the session exists are kept */
	id = ranges_start(NULL, "load, op_id = 3", 0, tick());
	ranges_mark(NULL, "checkpoint", 0, tick());
	hdr.clock = "cupti";
	hdr.time_base_ns = BASE;
	CHECK(rec_session_open(&s, path, &hdr) == 0);
	ranges_end(id, tick());
	for (int step = 0; step < STEPS; step++)
		one_step(step);
	d = ranges_domain_create("mydomain");
	reg = ranges_register("custom, op_id = 77");
	CHECK(d != NULL && reg != 0);
	CHECK(ranges_push(d, NULL, reg, tick()) == 0);
	CHECK(ranges_pop(NULL, tick()) == -1);   /* the default domain has none open */
	CHECK(ranges_pop(d, tick()) == 0);
	ranges_end(12345, tick());               /* never started */
	ranges_push(NULL, "left open", 0, tick());
	ranges_finish(BASE, tick());
	rec_session_lock(&s);
	ranges_drain_locked(&s);
	rec_session_unlock(&s);
	CHECK(rec_session_close(&s, "ok") == 0);
	rec_session_release(&s);

	ranges_totals(&t);
	CHECK_U64(t.steps, STEPS);
	CHECK_U64(t.warmup, 1);
	CHECK_U64(t.ops, 11);
	CHECK_U64(t.unpaired, 2);
	CHECK_U64(t.open, 1);
	CHECK(!t.ops_capped);
	read_back(path);
	return check_done("test_ranges");
}
