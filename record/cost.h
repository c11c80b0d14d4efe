/*
 * cost.h: the recorder's own host time (bundle format 1.8, RecorderCost),
 * what recording adds to a step beside the program's own work (issue 36).
 *
 * Each of the recorder's handlers that runs on a thread of the program --
 * its CUPTI callbacks (record/capture.c), its NVTX handlers and its entry
 * points for the Python side (record/inject.c, record/payload.c), the
 * built-in step's observer (record/hooks.c) -- reads a cycle counter at
 * entry and exit and adds the difference to its thread's accumulator:
 * thread-local, nothing shared, no lock (two reads of the time stamp
 * counter, about 10 ns each). The Python side adds its own time through
 * cost_python (steptrace_py_cost), once per step.
 *
 * Stretches: a step boundary (capture_step_begin, capture_step_end, a
 * cudaProfilerStart/Stop capture range) starts a new stretch; the next time
 * a thread records, it first hands what it accrued in the stretch before
 * over to a queue (one short lock per thread and stretch), which the
 * decoder thread writes into the bundle (cost_drain_locked): an event per
 * thread and stretch, over the stretch, so that the step it lies in is the
 * one the time was spent in. cost_finish hands over what every thread holds
 * at the end.
 */
#ifndef STEPTRACE_RECORD_COST_H
#define STEPTRACE_RECORD_COST_H

#include <stdint.h>

#include "record/session.h"

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#else
#include <time.h>
#endif

/* Where the recorder spent the time (RecorderCost's parts). */
enum cost_part { COST_CALLBACK, COST_NVTX, COST_HOOK, COST_PARTS };

/*
 * What a handler handled, counted with its time (cost_end's `what`, or'ed).
 * COST_UNTIMED: an entry point the Python side calls outside the time it
 * reports (the optimizer hook's steptrace_py_step), so cost_python must not
 * take it out of that report.
 */
enum cost_what { COST_LAUNCH = 1, COST_RANGE = 2, COST_MODULE = 4, COST_UNTIMED = 8 };

/* A cycle counter for the handlers' entry and exit; cost.c converts it to ns. */
static inline uint64_t cost_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
	return __rdtsc();
#elif defined(__aarch64__)
	uint64_t v;

	__asm__ volatile("mrs %0, cntvct_el0" : "=r"(v));
	return v;
#else
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
#endif
}

/* A handler that began at t0 (cost_ticks) ends now: its time goes to `part`, with what it handled. */
void cost_end(enum cost_part part, uint64_t t0, unsigned what);
/*
 * COST_SCOPE(part, what) at a handler's top: its time from there to its
 * return, whichever return, goes to `part` (cost_end when the scope ends).
 */
struct cost_scope {
	uint64_t t0;
	enum cost_part part;
	unsigned what;
};
static inline void cost_scope_end(const struct cost_scope *c)
{
	cost_end(c->part, c->t0, c->what);
}
#define COST_SCOPE(part_, what_)                                                            \
	const struct cost_scope cost_scope_ __attribute__((cleanup(cost_scope_end))) = {    \
		cost_ticks(), (part_), (what_) }

/* A kernel launch the current CUPTI callback saw (counted when it ends). */
void cost_count_launch(void);
/*
 * The Python side's own time, ns, since its previous report on this
 * thread; it includes its calls of the entry points, whose time the
 * recorder measured itself (COST_HOOK): only the rest is added.
 */
void cost_python(uint64_t ns);

/* A step begins or ends: each thread's next handler starts a new stretch. */
void cost_boundary(void);
/* Writes the stretches handed over into s (its lock held). */
void cost_drain_locked(struct rec_session *s);
/* Hands over what every thread still holds; later time is not written. */
void cost_finish(void);
/* In the child of a fork: record nothing. */
void cost_forget(void);
/*
 * A session begins again after cost_finish (an armed process's trigger,
 * capture_resume): stretches are written again, those from before the
 * stretch under way now dropped (the idle steps before the trigger).
 */
void cost_resume(void);
/*
 * An armed process between recordings: the recorder's time every thread
 * has accrued since the last call (or cost_finish), ns, and it starts
 * again from 0; a handler under way when it is called (the step boundary
 * that calls it, with the window it wrote or the joining it did) counts
 * only its time after the call. Racy as cost_finish is: a handler running
 * meanwhile may lose its time.
 */
uint64_t cost_idle_take(void);

#endif
