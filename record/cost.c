/*
 * cost.c: see cost.h.
 *
 * Threads. A handler touches only its thread's accumulator (struct acc),
 * which the thread allocates and registers the first time. C.lock guards
 * the registry and the queue of stretches handed over; a thread takes it
 * once per stretch (when it hands over), the decoder thread once per drain,
 * and cost_finish once. A stretch is handed over under the lock and reset
 * there, so that cost_finish, which reads every thread's under it, never
 * counts one twice; what a thread adds while cost_finish reads it is lost
 * (only at the end of the run, and a handler's worth).
 *
 * Clock. Handlers read cost_ticks (the time stamp counter); ticks become ns
 * by the ratio of CLOCK_MONOTONIC to ticks since the first handler. A
 * stretch's span is read on CUPTI's clock (the bundle's) at the boundaries
 * that make it (boundary[]), so that where it lies among the steps does not
 * depend on converting one clock into the other.
 */
#define _GNU_SOURCE
#include "record/cost.h"

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/grow.h"

#define QUEUE_MAX (1u << 20)     /* stretches waiting to be written; past it they are lost */
#define BOUNDARIES 4096          /* the last stretches' starts kept */

struct acc {
	uint64_t gen;                    /* the stretch it accrues in */
	uint64_t first, last;            /* ticks: first entry, last exit; first 0: nothing yet */
	uint64_t ticks[COST_PARTS];
	uint64_t python_ns;
	uint64_t launches, ranges, modules, pending_launches;
	uint64_t hook_unreported;        /* hook ticks since the Python side last reported */
	uint64_t thread;
};

static struct {
	pthread_mutex_t lock;
	struct acc **threads;            /* registered accumulators */
	size_t n_threads, cap_threads;
	struct st_event *q;              /* stretches handed over, times CUPTI ns */
	size_t n_q, cap_q;
	uint64_t lost;
	bool finished;
	bool forgotten;                  /* a fork's child: never again */
	uint64_t floor;                  /* stretches of an earlier generation are dropped (cost_resume) */
} C = { .lock = PTHREAD_MUTEX_INITIALIZER };

static _Atomic uint64_t gen = 1;
/* ticks when cost_idle_take last took the idle time: a handler under way then counts from here */
static _Atomic uint64_t idle_mark;
static pthread_mutex_t boundary_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t boundary[BOUNDARIES];    /* [g % BOUNDARIES]: CUPTI ns when stretch g began; 0 for the first */
static _Thread_local struct acc *mine;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static pthread_key_t key;
static uint64_t ticks0, mono0, cupti0;   /* read together at the first use */

/* CUPTI's clock, the bundle's (as capture_now reads it: capture.c uses this file). */
static uint64_t cupti_now(void)
{
	uint64_t t = 0;

	cuptiGetTimestamp(&t);
	return t;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The monotonic clock and the counter read together: of three tries, the
 * one whose counter moved least around the clock's read (a thread
 * preempted between the two would skew the ratio below).
 */
static void read_pair(uint64_t *m, uint64_t *t)
{
	uint64_t best = UINT64_MAX;

	*m = *t = 0;
	for (int i = 0; i < 3; i++) {
		uint64_t a = cost_ticks(), mm = mono_ns(), b = cost_ticks();

		if (b - a < best) {
			best = b - a;
			*m = mm;
			*t = a + (b - a) / 2;
		}
	}
}

/* ns per tick, from the first use to now (at least a millisecond apart: the first call may wait for it). */
static double ns_per_tick(void)
{
	uint64_t m = 0, t = 0;

	do
		read_pair(&m, &t);
	while (m - mono0 < 1000000);
	return t > ticks0 ? (double)(m - mono0) / (double)(t - ticks0) : 1.0;
}

static uint64_t to_ns(uint64_t ticks, double k)
{
	return (uint64_t)((double)ticks * k + 0.5);
}

/* An instant in ticks on CUPTI's clock. */
static uint64_t to_cupti(uint64_t ticks, double k)
{
	double d = ((double)ticks - (double)ticks0) * k;

	return d < 0 && (uint64_t)-d > cupti0 ? 0 : (uint64_t)((double)cupti0 + d);
}

/* a's sums start over (its stretch handed over or its idle time taken); C.lock held. */
static void acc_reset(struct acc *a)
{
	a->first = 0;
	memset(a->ticks, 0, sizeof(a->ticks));
	a->python_ns = a->launches = a->ranges = a->modules = 0;
}

/*
 * Queues a's stretch and resets it; C.lock held. Its span: from the
 * boundary that began it to the one that ended it (or now, when none has),
 * else, when those are no longer kept, its handlers' first entry and last
 * exit.
 */
static void hand_over_locked(struct acc *a, double k)
{
	uint64_t cur = atomic_load_explicit(&gen, memory_order_acquire);
	struct st_event *ev;

	if ((!a->first && !a->python_ns) || a->gen < C.floor)
		goto reset;   /* nothing, or time from before the session (an armed process's idle steps) */
	if (C.finished || C.n_q >= QUEUE_MAX || ALLOC_GROW(C.q, C.n_q + 1, C.cap_q)) {
		C.lost++;
		goto reset;
	}
	ev = &C.q[C.n_q++];
	memset(ev, 0, sizeof(*ev));
	ev->kind = ST_COST;
	if (cur - a->gen < BOUNDARIES - 1) {
		ev->start = boundary[a->gen % BOUNDARIES];
		ev->end = cur == a->gen ? cupti_now() : boundary[(a->gen + 1) % BOUNDARIES];
	} else {
		ev->start = to_cupti(a->first ? a->first : a->last, k);
		ev->end = to_cupti(a->last, k);
	}
	ev->cost.thread = a->thread;
	ev->cost.callback_ns = to_ns(a->ticks[COST_CALLBACK], k);
	ev->cost.nvtx_ns = to_ns(a->ticks[COST_NVTX], k);
	ev->cost.hook_ns = to_ns(a->ticks[COST_HOOK], k);
	ev->cost.python_ns = a->python_ns;
	ev->cost.launches = a->launches;
	ev->cost.ranges = a->ranges;
	ev->cost.modules = a->modules;
reset:
	acc_reset(a);
}

/* A thread ends: what it holds is handed over, and it leaves the registry. */
static void thread_end(void *p)
{
	struct acc *a = p;
	double k = ns_per_tick();

	pthread_mutex_lock(&C.lock);
	hand_over_locked(a, k);
	for (size_t i = 0; i < C.n_threads; i++)
		if (C.threads[i] == a) {
			C.threads[i] = C.threads[--C.n_threads];
			break;
		}
	pthread_mutex_unlock(&C.lock);
	if (mine == a)
		mine = NULL;
	free(a);
}

/* Both locks whole across fork(); the child records nothing (its bundle is the parent's). */
static void fork_prepare(void)
{
	pthread_mutex_lock(&boundary_lock);
	pthread_mutex_lock(&C.lock);
}

static void fork_parent(void)
{
	pthread_mutex_unlock(&C.lock);
	pthread_mutex_unlock(&boundary_lock);
}

static void fork_child(void)
{
	C.finished = C.forgotten = true;
	fork_parent();
}

static void init_once(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	pthread_key_create(&key, thread_end);
	cupti0 = cupti_now();
	read_pair(&mono0, &ticks0);
}

/* The calling thread's accumulator, made and registered on first use; NULL when out of memory. */
static struct acc *acc_get(void)
{
	struct acc *a = mine;

	if (a)
		return a;
	pthread_once(&once, init_once);
	a = calloc(1, sizeof(*a));
	if (!a)
		return NULL;
	a->thread = (uint64_t)syscall(SYS_gettid);   /* capture_thread_id's */
	a->gen = atomic_load_explicit(&gen, memory_order_relaxed);
	pthread_mutex_lock(&C.lock);
	if (ALLOC_GROW(C.threads, C.n_threads + 1, C.cap_threads)) {
		pthread_mutex_unlock(&C.lock);
		free(a);
		return NULL;
	}
	C.threads[C.n_threads++] = a;
	pthread_mutex_unlock(&C.lock);
	pthread_setspecific(key, a);
	mine = a;
	return a;
}

/* A new stretch began since a last recorded: hand the old one over. */
static void stretch_check(struct acc *a)
{
	uint64_t g = atomic_load_explicit(&gen, memory_order_relaxed);
	double k;

	if (a->gen == g)
		return;
	k = ns_per_tick();
	pthread_mutex_lock(&C.lock);
	hand_over_locked(a, k);
	pthread_mutex_unlock(&C.lock);
	a->gen = g;
}

void cost_end(enum cost_part part, uint64_t t0, unsigned what)
{
	uint64_t t1 = cost_ticks(), mark = atomic_load_explicit(&idle_mark, memory_order_relaxed);
	struct acc *a = acc_get();

	if (!a)
		return;
	/* The handler that took the idle time (a step boundary: joining the run, writing
	 * the window before) is not the idle time that follows: only its rest counts. */
	if (t0 < mark)
		t0 = mark < t1 ? mark : t1;
	stretch_check(a);
	if (!a->first)
		a->first = t0;
	a->last = t1;
	a->ticks[part] += t1 - t0;
	if (part == COST_HOOK && !(what & COST_UNTIMED))
		a->hook_unreported += t1 - t0;
	a->launches += a->pending_launches;
	a->pending_launches = 0;
	a->ranges += (what & COST_RANGE) != 0;
	a->modules += (what & COST_MODULE) != 0;
	a->launches += (what & COST_LAUNCH) != 0;
}

void cost_count_launch(void)
{
	struct acc *a = acc_get();

	if (a)
		a->pending_launches++;
}

void cost_python(uint64_t ns)
{
	struct acc *a = acc_get();
	uint64_t hooks;

	if (!a)
		return;
	stretch_check(a);
	hooks = to_ns(a->hook_unreported, ns_per_tick());
	a->hook_unreported = 0;
	a->python_ns += ns > hooks ? ns - hooks : 0;
	if (!a->first)
		a->last = cost_ticks();   /* a stretch of Python time alone ends here */
}

void cost_boundary(void)
{
	uint64_t g;

	pthread_mutex_lock(&boundary_lock);
	g = atomic_load_explicit(&gen, memory_order_relaxed) + 1;
	boundary[g % BOUNDARIES] = cupti_now();   /* before g is seen */
	atomic_store_explicit(&gen, g, memory_order_release);
	pthread_mutex_unlock(&boundary_lock);
}

void cost_drain_locked(struct rec_session *s)
{
	struct st_event *q;
	size_t n;

	pthread_mutex_lock(&C.lock);
	q = C.q;
	n = C.n_q;
	C.q = NULL;
	C.n_q = C.cap_q = 0;
	pthread_mutex_unlock(&C.lock);
	for (size_t i = 0; i < n; i++) {
		q[i].start = rec_session_time(s, q[i].start);
		q[i].end = rec_session_time(s, q[i].end);
		rec_session_add_locked(s, &q[i]);
	}
	free(q);
}

void cost_finish(void)
{
	double k;

	pthread_once(&once, init_once);
	k = ns_per_tick();
	pthread_mutex_lock(&C.lock);
	for (size_t i = 0; i < C.n_threads; i++)
		hand_over_locked(C.threads[i], k);
	C.finished = true;
	pthread_mutex_unlock(&C.lock);
}

void cost_forget(void)
{
	C.finished = C.forgotten = true;
}

uint64_t cost_idle_take(void)
{
	double k, sum = 0;

	pthread_once(&once, init_once);
	k = ns_per_tick();
	pthread_mutex_lock(&C.lock);
	for (size_t i = 0; i < C.n_threads; i++) {
		struct acc *a = C.threads[i];

		for (int p = 0; p < COST_PARTS; p++)
			sum += (double)a->ticks[p] * k;
		sum += (double)a->python_ns;
		acc_reset(a);
		a->hook_unreported = 0;
	}
	atomic_store_explicit(&idle_mark, cost_ticks(), memory_order_relaxed);
	pthread_mutex_unlock(&C.lock);
	return (uint64_t)(sum + 0.5);
}

void cost_resume(void)
{
	pthread_once(&once, init_once);
	pthread_mutex_lock(&C.lock);
	if (!C.forgotten) {
		C.finished = false;
		C.floor = atomic_load_explicit(&gen, memory_order_acquire);
		C.n_q = 0;   /* what was queued before: not this session's */
	}
	pthread_mutex_unlock(&C.lock);
}
