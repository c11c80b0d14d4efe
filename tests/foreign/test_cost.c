/*
 * test_cost.c: record/cost.c, the recorder's own host time, without a GPU.
 * Handlers of known length (busy loops timed with CLOCK_MONOTONIC) on two
 * threads, across a step boundary, with the Python side's report, are
 * drained into a real session beside two steps; read back through replay,
 * each step holds what was spent in it, part by part (within what the
 * clock allows), what the handlers handled, one record per thread and
 * stretch, and the Python side's time less the entry points' it included
 * (not those it calls outside its report, COST_UNTIMED). Then an armed
 * process's idle time (cost_idle_take): what accrued since the last take,
 * a handler under way at the take counted from it only.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "record/capture.h"
#include "record/cost.h"
#include "record/session.h"
#include "replay/replay.h"
#include "tests/lib/check.h"
#include "trace/bundle.h"

static uint64_t mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A handler of `part` that runs about ns; returns how long it ran by the monotonic clock. */
static uint64_t handler(enum cost_part part, uint64_t ns, unsigned what)
{
	uint64_t m0 = mono(), t0 = cost_ticks(), m1;

	while (mono() - m0 < ns)
		;
	m1 = mono();
	cost_end(part, t0, what);
	return m1 - m0;
}

/*
 * ns as recorded against ns as run: never less (the ticks bracket the
 * loop; 2% for the counter's ratio to the clock), more by what a busy
 * machine's preemption adds between the loop's end and the handler's exit.
 */
static void check_near(const char *what, uint64_t got, uint64_t ran)
{
	CHECK(got + ran / 50 >= ran && got <= ran + 50000000, "%s: recorded %llu ns, ran %llu ns", what,
	      (unsigned long long)got, (unsigned long long)ran);
}

static uint64_t helper_ran;

/* Another thread: a callback in the second step, then it ends (its time is handed over then). */
static void *helper(void *arg)
{
	cost_count_launch();
	helper_ran = handler(COST_CALLBACK, 80000, 0);
	return arg;
}

int main(int argc, char **argv)
{
	const char *path = argc > 1 ? argv[1] : "test_cost.stb";
	Steptrace__Header hdr = STEPTRACE__HEADER__INIT;
	struct st_event step = { .kind = ST_STEP };
	struct rec_session s;
	struct replay rp;
	struct replay_cost per[2], outside;
	uint64_t t_start, t_mid, t_end, hook, untimed, cb, nvtx1, nvtx2, python, threads[2] = { 0, 0 };
	uint64_t idle_ran, idle, t0, m0, after_ran;
	size_t n_threads = 0;
	pthread_t t;

	hdr.clock = "cupti";
	hdr.time_base_ns = capture_now() - 1000;
	CHECK(rec_session_open(&s, path, &hdr) == 0);

	handler(COST_NVTX, 20000, COST_RANGE);          /* before the first step: outside */
	cost_boundary();
	t_start = capture_now();
	hook = handler(COST_HOOK, 200000, COST_MODULE);
	untimed = handler(COST_HOOK, 100000, COST_UNTIMED);   /* outside the Python side's report */
	cost_python(500000);                             /* 500 us, the 200 us of the hook included */
	cost_count_launch();
	cb = handler(COST_CALLBACK, 100000, 0);
	t_mid = capture_now();
	cost_boundary();
	nvtx1 = handler(COST_NVTX, 50000, COST_RANGE);
	CHECK(pthread_create(&t, NULL, helper, NULL) == 0);
	pthread_join(t, NULL);
	nvtx2 = handler(COST_NVTX, 30000, COST_RANGE);
	t_end = capture_now();
	cost_boundary();
	cost_finish();
	handler(COST_NVTX, 10000, COST_RANGE);           /* after the end: not written */

	rec_session_lock(&s);
	step.step.index = 0;
	step.start = rec_session_time(&s, t_start);
	step.end = rec_session_time(&s, t_mid);
	rec_session_add_locked(&s, &step);
	step.step.index = 1;
	step.start = step.end;
	step.end = rec_session_time(&s, t_end);
	rec_session_add_locked(&s, &step);
	cost_drain_locked(&s);
	rec_session_unlock(&s);
	CHECK(rec_session_close(&s, "ok") == 0);
	rec_session_release(&s);

	CHECK(replay_load(&rp, path, NULL) == 0);
	CHECK_U64(rp.n_steps, 2);
	/* outside, the first step's main thread, the second step's main thread and helper */
	CHECK_U64(rp.n_costs, 4);
	for (size_t i = 0; i < rp.n_costs; i++) {
		bool seen = false;

		CHECK(rp.costs[i].end >= rp.costs[i].start, "record %zu ends before it starts", i);
		for (size_t k = 0; k < n_threads; k++)
			seen |= threads[k] == rp.costs[i].thread;
		if (!seen && n_threads < 2)
			threads[n_threads++] = rp.costs[i].thread;
	}
	CHECK_U64(n_threads, 2);
	CHECK(replay_step_costs(&rp, per, &outside));
	check_near("outside, nvtx", outside.nvtx_ns, 20000);
	CHECK_U64(outside.ranges, 1);
	check_near("step 0, hook", per[0].hook_ns, hook + untimed);
	check_near("step 0, callback", per[0].callback_ns, cb);
	CHECK_U64(per[0].nvtx_ns, 0);
	/* the report less the timed hook's (the untimed one's 100 us stay in it) */
	python = per[0].hook_ns < 500000 ? 500000 - per[0].hook_ns : 0;
	CHECK(per[0].python_ns >= python + untimed - untimed / 10 && per[0].python_ns <= 500000 - hook + 1000,
	      "python: %llu ns recorded, %llu ns expected (the untimed hook's %llu ns not taken out)",
	      (unsigned long long)per[0].python_ns, (unsigned long long)(500000 - hook),
	      (unsigned long long)untimed);
	CHECK_U64(per[0].launches, 1);
	CHECK_U64(per[0].modules, 1);
	CHECK_U64(per[0].ranges, 0);
	check_near("step 1, nvtx", per[1].nvtx_ns, nvtx1 + nvtx2);
	check_near("step 1, callback (the helper's)", per[1].callback_ns, helper_ran);
	CHECK_U64(per[1].ranges, 2);
	CHECK_U64(per[1].launches, 1);
	CHECK_U64(per[1].hook_ns + per[1].python_ns, 0);
	replay_release(&rp);

	/* Armed and idle: the time since the last take; the take inside a handler splits it. */
	(void)cost_idle_take();
	idle_ran = handler(COST_NVTX, 40000, COST_RANGE);
	t0 = cost_ticks();
	m0 = mono();
	while (mono() - m0 < 300000)   /* a step boundary's work before the take (a window's bundle) */
		;
	idle = cost_idle_take();
	check_near("idle", idle, idle_ran);
	m0 = mono();
	while (mono() - m0 < 60000)    /* and after it */
		;
	after_ran = mono() - m0;
	cost_end(COST_HOOK, t0, COST_UNTIMED);
	idle = cost_idle_take();
	CHECK(idle + after_ran / 50 >= after_ran && idle < after_ran + 100000,
	      "the handler under way at the take: %llu ns counted, %llu ns after the take (300 us before it)",
	      (unsigned long long)idle, (unsigned long long)after_ran);
	return check_done("test_cost");
}
