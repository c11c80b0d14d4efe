/*
 * torch.c: see torch.h. Its state (T) and the range stacks it pushes onto
 * (record/nvtx_internal.h) are under one mutex, nvtx.c's R.lock.
 */
#define _GNU_SOURCE
#include "record/torch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "lib/grow.h"
#include "record/aten.h"
#include "record/capture.h"
#include "record/compiled.h"
#include "record/nvtx_internal.h"

#define TORCH_DOMAIN "steptrace.torch"
#define CALLS_CAP (1u << 20)      /* module calls kept per step for the backward's chains */
#define CHAIN_MAX 64              /* module nesting the backward copies */

/* A module call of the lead thread: the autograd sequence numbers its forward used. */
struct call {
	uint64_t begin, end;             /* [begin, end); end UINT64_MAX while open */
	uint32_t name, parent;           /* its range's name; the enclosing call, CALL_NONE */
};

/*
 * tsteps: its step rule gives the steps (no --step-range). A step frame is
 * always open on the lead once the Python side has spoken; `opt_steps`:
 * steps the optimizer ended (then held outermost-module steps are
 * dropped); `held`: the steps of the outermost module calls before any
 * optimizer step, written at the end if nothing else gave steps;
 * `trains`: the program's steps are known to end at optimizer steps (a
 * recording session of an armed process begins at one), so no outermost
 * module call is taken for a step of its own, not even before the
 * session's first optimizer step.
 */
static struct {
	bool tsteps;
	uint64_t (*peek)(void);
	uint32_t every;                  /* module ranges on every Nth measured step (ranges_torch_sample); <= 1 all */
	uint32_t step_index;             /* the open step's index in the bundle */
	uint8_t step_level;              /* what it records: enum ranges_torch_level */
	bool step_modules;               /* a module call was pushed in it */
	bool any_modules;                /* ... in any step of this recording */
	struct ranges_domain *tdom;
	uint32_t tdom_name, step_word;   /* string ids: "steptrace.torch", "step" */
	uint32_t phase_word[RANGES_PHASE_COUNT];
	uint64_t step_start;             /* the open step frame's start */
	uint32_t opt_steps;
	bool trains;
	bool backward_since_clear;       /* a backward began since the module calls were cleared */
	_Atomic bool own_profiler;       /* the Python side's backward profiler is on: its ranges are not written */
	struct held_step *held;          /* outermost module calls before any optimizer step */
	size_t n_held, cap_held;
	struct call *calls;              /* this step's module calls, by begin */
	size_t n_calls, cap_calls;
} T;

/* ---- the backward's module chains (PyTorch) --------------------------------------- */

/* The innermost module call whose sequence numbers hold seq, CALL_NONE if none. */
static uint32_t call_of_locked(uint64_t seq)
{
	size_t lo = 0, hi = T.n_calls;
	uint32_t c;

	while (lo < hi) {   /* the last call that began at or before seq */
		size_t mid = lo + (hi - lo) / 2;

		if (T.calls[mid].begin <= seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return CALL_NONE;
	for (c = (uint32_t)(lo - 1); c != CALL_NONE && seq >= T.calls[c].end; c = T.calls[c].parent)
		;
	return c;
}

/* Frames of s that are its copies of module calls: they are at the bottom of its stack. */
static int synth_count(const struct tstate *s)
{
	int k = 0;

	while (k < s->depth && (s->f[k].flags & FR_SYNTH))
		k++;
	return k;
}

/*
 * Moves helper s onto the module chain of forward sequence number seq at t:
 * its copies of the module calls that are not on that chain end when its
 * first open range of its own began (or t), the missing ones begin then,
 * and its open ranges move on top of them. Mutex held.
 */
static void chain_switch_locked(struct tstate *s, uint64_t seq, uint64_t t)
{
	uint32_t chain[CHAIN_MAX], c = call_of_locked(seq);
	struct frame real[8];
	int n = 0, k = synth_count(s), same = 0, n_real = s->depth - k;

	for (; c != CALL_NONE; c = T.calls[c].parent)
		if (n < CHAIN_MAX)
			chain[n++] = c;
	for (int i = 0; i < n / 2; i++) {   /* root first */
		uint32_t x = chain[i];

		chain[i] = chain[n - 1 - i];
		chain[n - 1 - i] = x;
	}
	while (same < k && same < n && s->f[same].call == chain[same])
		same++;
	if (same == k && same == n)
		return;
	if (n_real > (int)(sizeof(real) / sizeof(real[0])))
		return;   /* deep reentrant work: leave it where it is */
	if (n_real > 0)
		t = s->f[k].start;
	memcpy(real, &s->f[k], (size_t)n_real * sizeof(real[0]));
	s->depth = k;
	while (s->depth > same) {
		const struct frame *f = &s->f[s->depth - 1];

		range_event_locked(f->name, f->domain_name, s->thread, (uint32_t)f->depth, f->start, t);
		s->depth--;
		if (R.open)
			R.open--;
	}
	for (int i = same; i < n && s->depth < MAX_DEPTH; i++) {
		struct frame f = { .name = T.calls[chain[i]].name, .domain_name = T.tdom_name,
				   .domain = T.tdom, .start = t, .call = chain[i], .flags = FR_SYNTH };
		uint32_t parent;
		int32_t pdepth;

		parent_of_locked(s, &parent, &pdepth);
		frame_place_locked(&f, parent, pdepth, 0);
		s->f[s->depth++] = f;
		R.open++;
	}
	for (int i = 0; i < n_real && s->depth < MAX_DEPTH; i++) {
		struct frame f = real[i];
		const struct frame *top = s->depth ? &s->f[s->depth - 1] : NULL;
		uint32_t parent;
		int32_t pdepth;

		parent_of_locked(s, &parent, &pdepth);
		frame_place_locked(&f, parent, pdepth, top ? top->op : 0);
		s->f[s->depth++] = f;
	}
	adopt_locked(s);
	atomic_store_explicit(&s->active, atomic_load_explicit(&R.epoch, memory_order_relaxed),
			      memory_order_relaxed);
}

/* The backward ended at t: each helper's copies of module calls end (its own ranges stay). */
static void chains_close_locked(uint64_t t)
{
	for (size_t i = 0; i < R.n_adopted; i++) {
		struct tstate *h = R.adopted[i];
		int k = synth_count(h);

		if (h == R.lead || !k || h->depth != k)
			continue;
		while (h->depth > 0)
			pop_at_locked(h, h->depth - 1, t);
	}
}

/* Is a range with these tags one of the Python side's own profiler, not written? */
bool elided_profiler_range_locked(const struct aten_tags *tags)
{
	return tags->profiled && R.torch == RANGES_TORCH_AUTO &&
	       atomic_load_explicit(&T.own_profiler, memory_order_relaxed);
}

/*
 * A profiler range pushed on a helper (autograd's thread): a node with
 * "seq = N" moves the helper to N's module chain, when nothing of the
 * helper's own is open but autograd's evaluate_function wrapper; under
 * the automatic mode the profiler's ranges are not written. Mutex held.
 */
void torch_helper_range_locked(struct tstate *s, const struct aten_tags *tags, struct frame *f,
			       uint64_t t)
{
	int k, n_real;

	if (tags->seq >= 0 && T.n_calls) {
		k = synth_count(s);
		n_real = s->depth - k;
		if (n_real == 0 ||
		    (n_real == 1 && !strncmp(R.str[s->f[k].name], "autograd::engine::evaluate_function", 35)))
			chain_switch_locked(s, (uint64_t)tags->seq, t);
	}
	if (elided_profiler_range_locked(tags))
		f->flags |= FR_ELIDED;
}

/* ---- the backward's module chains from autograd's current node ------------------ */

/*
 * torch::autograd::get_current_node() returns a std::shared_ptr<Node>, a
 * class C++ returns through memory: the caller passes the result's address
 * as C does for a struct too large for registers (x86-64: the first
 * argument's register; AArch64: x8), so a C function type returning a
 * struct of three pointers calls it right; it fills the first two, the
 * node and its control block, whose use count (an int after the control
 * block's vtable pointer) it raised by one. The engine keeps its own
 * reference to the node while it runs, so dropping ours never frees it.
 */
struct node_ref {
	void *node, *ctrl, *unused;
};

static struct {
	struct node_ref (*get)(void);
	size_t offset;                   /* of Node::sequence_nr_, found by ranges_torch_node_probe */
	_Atomic bool on;                 /* a backward of a step with module calls is running */
	_Atomic uint32_t gen;            /* backward calls so far */
} N;

static _Thread_local struct { uint32_t gen; uint64_t seq; } node_last;

static void node_release(const struct node_ref *r)
{
	if (r->ctrl)
		__atomic_fetch_sub((int *)((char *)r->ctrl + sizeof(void *)), 1, __ATOMIC_ACQ_REL);
}

int ranges_torch_node_probe(void *get_current_node, uint64_t want)
{
	struct node_ref r;
	int found = -1;

	if (get_current_node)
		*(void **)&N.get = get_current_node;
	if (!N.get)
		return -1;
	r = N.get();
	for (size_t off = sizeof(void *); r.node && off < 128 && found < 0; off += sizeof(uint64_t)) {
		uint64_t v;

		memcpy(&v, (char *)r.node + off, sizeof(v));
		if (v == want)
			found = (int)off;
	}
	node_release(&r);
	return found;
}

void ranges_torch_nodes(int offset)
{
	pthread_mutex_lock(&R.lock);
	N.offset = offset > 0 && N.get ? (size_t)offset : 0;
	pthread_mutex_unlock(&R.lock);
}

/* The sequence number of the node autograd runs on this thread, UINT64_MAX for none (or AccumulateGrad). */
static uint64_t current_seq(void)
{
	struct node_ref r = N.get();
	uint64_t seq = UINT64_MAX;

	if (r.node)
		memcpy(&seq, (char *)r.node + N.offset, sizeof(seq));
	node_release(&r);
	return seq;
}

/* A backward begins (on) or ends: node chains while it runs, when the step has module calls. Mutex held. */
static void nodes_backward_locked(bool on)
{
	if (on && N.offset && R.torch == RANGES_TORCH_AUTO && T.n_calls) {
		atomic_fetch_add_explicit(&N.gen, 1, memory_order_relaxed);
		atomic_store_explicit(&N.on, true, memory_order_release);
	} else if (!on) {
		atomic_store_explicit(&N.on, false, memory_order_release);
	}
}

void ranges_torch_launch_at(uint64_t (*now)(void))
{
	struct tstate *s;
	uint64_t seq;
	uint32_t gen;

	if (!atomic_load_explicit(&N.on, memory_order_acquire))
		return;
	s = tstate();
	if (!s || s == R.lead)
		return;
	seq = current_seq();
	gen = atomic_load_explicit(&N.gen, memory_order_relaxed);
	if (seq == UINT64_MAX || (node_last.gen == gen && node_last.seq == seq))
		return;
	pthread_mutex_lock(&R.lock);
	/* as a profiler range would: only where nothing of the helper's own is open (else at a later launch) */
	if (R.torch && !R.finished && T.n_calls && s->depth == synth_count(s)) {
		chain_switch_locked(s, seq, now());
		node_last.gen = gen;
		node_last.seq = seq;
	}
	pthread_mutex_unlock(&R.lock);
	current_op(s);
}

void ranges_torch_launch(void)
{
	ranges_torch_launch_at(capture_now);
}

/* ---- PyTorch: steps, phases, modules, tags ------------------------------------- */

void ranges_torch_attach(enum ranges_torch_mode mode, uint64_t (*peek)(void))
{
	struct ranges_domain *d = ranges_domain_create(TORCH_DOMAIN);
	struct tstate *s = tstate();

	pthread_mutex_lock(&R.lock);
	if (!R.torch && d && s) {
		R.torch = mode;
		atomic_store(&R.torch_on, true);
		T.peek = peek;
		T.tdom = d;
		T.tdom_name = d->name;
		T.step_word = intern_locked("step");
		for (int p = 1; p < RANGES_PHASE_COUNT; p++)
			T.phase_word[p] = intern_locked(ranges_phase_names[p]);
		T.tsteps = !R.step_name;
		if (T.tsteps)
			capture_step_end();   /* launches before the first step are outside it */
		R.lead = s;           /* the training loop's thread leads */
	}
	pthread_mutex_unlock(&R.lock);
}

/* Index of the innermost frame of s with all of `flags`, -1 if none. */
static int find_flags(const struct tstate *s, uint8_t flags)
{
	int i = s->depth - 1;

	while (i >= 0 && (s->f[i].flags & flags) != flags)
		i--;
	return i;
}

/* Pushes a frame of the domain steptrace.torch; with the mutex held. */
static struct frame *torch_push_locked(struct tstate *s, uint32_t name, uint8_t flags, uint64_t t)
{
	struct frame f = { .name = name, .domain_name = T.tdom_name, .domain = T.tdom, .start = t,
			   .call = CALL_NONE, .flags = flags };

	return push_locked(s, &f) ? NULL : &s->f[s->depth - 1];
}

/*
 * What step `index` of the bundle records (ranges_torch_level): the warm-up
 * steps, the first measured one and every Nth after it have module ranges,
 * the others phases only; every step has them under --torch ops, with
 * --step-range (the Python side's steps are not the bundle's), and with
 * `every` <= 1. Mutex held.
 */
static int level_of_locked(uint32_t index)
{
	uint32_t warm = ranges_warmup_locked();

	if (T.every <= 1 || R.torch == RANGES_TORCH_OPS || !T.tsteps || index <= warm ||
	    (index - warm) % T.every == 0)
		return RANGES_LEVEL_MODULES;
	return RANGES_LEVEL_PHASES;
}

/* The lead is in a step (the PyTorch rule): one begins at t if none is open. Mutex held. */
static void open_step_locked(struct tstate *s, uint64_t t)
{
	if (!T.tsteps || s != R.lead || R.finished || find_flags(s, FR_STEP) >= 0)
		return;
	R.gen++;
	R.step_open = true;
	T.step_start = t;
	T.step_index = R.n_steps + (uint32_t)T.n_held;
	T.step_level = (uint8_t)level_of_locked(T.step_index);
	T.step_modules = false;
	capture_step_begin(T.step_index);
	if (T.step_index < ranges_warmup_locked())
		capture_measure_launch_cost();   /* once, in a warm-up step: its time is the recorder's there */
	torch_push_locked(s, T.step_word, FR_STEP, t);
}

/* Ends the lead's step frame and what of ours is above it at t; returns its start. Mutex held. */
static uint64_t close_step_locked(struct tstate *s, uint64_t t)
{
	int i = find_flags(s, FR_STEP);
	uint64_t start = T.step_start;

	if (i < 0)
		return t;
	for (int j = s->depth - 1; j >= i; j--)
		if (s->f[j].domain == T.tdom)
			pop_at_locked(s, j, t);
	R.step_open = false;
	capture_step_end();
	return start;
}

/* Is there a range named `word` open on s (the program's or ours)? */
static bool open_named(const struct tstate *s, uint32_t word)
{
	for (int i = s->depth - 1; i >= 0; i--)
		if (s->f[i].name == word && !(s->f[i].flags & FR_ELIDED))
			return true;
	return false;
}

void ranges_torch_phase(int phase, bool begin, uint64_t t)
{
	struct tstate *s = tstate();
	int i;

	if (!s || phase < 1 || phase >= RANGES_PHASE_COUNT)
		return;
	pthread_mutex_lock(&R.lock);
	if (!R.torch || R.finished) {
		pthread_mutex_unlock(&R.lock);
		return;
	}
	if (begin) {
		const struct frame *top;
		uint8_t flags = FR_PHASE;

		open_step_locked(s, t);
		if (phase == RANGES_PHASE_BACKWARD) {
			T.backward_since_clear = true;
			nodes_backward_locked(true);
		}
		if (phase == RANGES_PHASE_FORWARD && s == R.lead && !T.backward_since_clear)
			T.n_calls = 0;   /* forward after forward (inference): the older calls are not needed */
		top = s->depth ? &s->f[s->depth - 1] : NULL;
		if (top && (top->flags & FR_PERSIST)) {   /* the step's phase ends where the next begins */
			if (top->phase == RANGES_PHASE_BACKWARD)
				chains_close_locked(t);
			pop_at_locked(s, s->depth - 1, t);
			top = s->depth ? &s->f[s->depth - 1] : NULL;
		}
		if (open_named(s, T.phase_word[phase]))
			flags |= FR_ELIDED;          /* the program's own range says it already */
		else if (s == R.lead && (!top || (top->flags & FR_STEP)))
			flags |= FR_PERSIST;
		if (torch_push_locked(s, T.phase_word[phase], flags, t))
			s->f[s->depth - 1].phase = (uint8_t)phase;
	} else {
		for (i = s->depth - 1; i >= 0; i--)
			if ((s->f[i].flags & FR_PHASE) && s->f[i].phase == phase && !(s->f[i].flags & FR_ENDED))
				break;
		if (phase == RANGES_PHASE_BACKWARD) {
			nodes_backward_locked(false);
			chains_close_locked(t);
		}
		if (i >= 0 && (s->f[i].flags & FR_PERSIST)) {
			s->f[i].flags |= FR_ENDED;
			/* before any optimizer step, each outermost module call may be a step (inference) */
			if (phase == RANGES_PHASE_FORWARD && T.tsteps && !T.opt_steps && !T.trains && s == R.lead) {
				uint64_t start = close_step_locked(s, t);

				hold_locked(&T.held, &T.n_held, &T.cap_held, s->thread, start, t);
				open_step_locked(s, t);
			}
		} else if (i >= 0) {
			pop_at_locked(s, i, t);
		}
	}
	pthread_mutex_unlock(&R.lock);
	current_op(s);
}

void ranges_torch_profiler(bool on)
{
	pthread_mutex_lock(&R.lock);
	T.own_profiler = on;
	pthread_mutex_unlock(&R.lock);
}

void ranges_torch_module(uint32_t name, uint64_t t)
{
	struct tstate *s = tstate();
	struct frame *f;
	bool kick;

	if (!s)
		return;
	pthread_mutex_lock(&R.lock);
	if (!R.torch || R.finished || !name || name >= R.n_str) {
		pthread_mutex_unlock(&R.lock);
		return;
	}
	open_step_locked(s, t);
	T.step_modules = T.any_modules = true;
	f = torch_push_locked(s, name, FR_MODULE, t);
	if (f)
		compiled_push_locked(s, s->depth - 1);   /* a compiled graph's region: its kernels' modules */
	if (f && s == R.lead && T.peek && T.n_calls < CALLS_CAP &&
	    !ALLOC_GROW(T.calls, T.n_calls + 1, T.cap_calls)) {
		uint32_t parent = CALL_NONE;
		int outer;

		for (outer = s->depth - 2; outer >= 0 && !(s->f[outer].flags & FR_MODULE); outer--)
			;
		if (outer >= 0)
			parent = s->f[outer].call;
		f->call = (uint32_t)T.n_calls;
		T.calls[T.n_calls++] = (struct call){ .begin = T.peek(), .end = UINT64_MAX, .name = name,
						      .parent = parent };
	}
	kick = want_kick_locked();
	pthread_mutex_unlock(&R.lock);
	current_op(s);
	if (kick)
		capture_kick();
}

void ranges_torch_module_end(uint64_t t)
{
	struct tstate *s = tstate();
	int i;

	if (!s)
		return;
	pthread_mutex_lock(&R.lock);
	i = R.torch ? find_flags(s, FR_MODULE) : -1;
	if (i >= 0 && !(s->f[i].flags & FR_SYNTH))
		pop_at_locked(s, i, t);
	pthread_mutex_unlock(&R.lock);
	current_op(s);
}

void torch_call_end_locked(uint32_t call)
{
	if (call < T.n_calls && T.peek)
		T.calls[call].end = T.peek();
}

void ranges_torch_step(uint64_t t)
{
	struct tstate *s = tstate();

	if (!s)
		return;
	pthread_mutex_lock(&R.lock);
	if (R.torch && T.tsteps && !R.finished && s == R.lead && find_flags(s, FR_STEP) >= 0) {
		uint64_t start = close_step_locked(s, t);

		if (!T.opt_steps && T.n_held)   /* the first: the outermost module calls before it are in it */
			start = T.held[0].start;
		T.n_held = 0;
		T.n_calls = 0;   /* the backward's chains refer to this step's module calls only */
		T.backward_since_clear = false;
		T.opt_steps++;
		/* phases only as planned, in a run whose other steps have modules */
		write_step_locked(s->thread, start, t,
				  T.step_level == RANGES_LEVEL_PHASES && !T.step_modules && T.any_modules);
		open_step_locked(s, t);
	}
	pthread_mutex_unlock(&R.lock);
	current_op(s);
}

void ranges_torch_tag(const uint64_t *pairs, size_t n, uint32_t category, uint32_t device, uint64_t t)
{
	bool kick;

	pthread_mutex_lock(&R.lock);
	for (size_t i = 0; R.torch && i < n; i++) {
		struct st_event *ev = queue_locked(ST_MEMTAG, t, t);

		if (!ev)
			break;
		ev->mem.address = pairs[2 * i];
		ev->mem.size = pairs[2 * i + 1];
		ev->mem.category = category;
		ev->mem.device = device;
		ev->mem.source = ST_SRC_DRIVER;
	}
	kick = want_kick_locked();
	pthread_mutex_unlock(&R.lock);
	if (kick)
		capture_kick();
}

/* ---- modules on a sample of the steps, recording sessions ---------------------- */

void ranges_torch_sample(uint32_t every)
{
	pthread_mutex_lock(&R.lock);
	T.every = every;
	pthread_mutex_unlock(&R.lock);
}

int ranges_torch_level(void)
{
	int level = RANGES_LEVEL_MODULES;

	pthread_mutex_lock(&R.lock);
	if (R.finished)
		level = RANGES_LEVEL_OFF;
	else if (R.torch && T.tsteps && R.step_open)
		level = T.step_level;
	pthread_mutex_unlock(&R.lock);
	return level;
}

void torch_session_begin_locked(uint64_t t)
{
	T.opt_steps = 0;
	T.n_held = 0;
	T.n_calls = 0;
	T.backward_since_clear = false;
	T.step_modules = T.any_modules = false;
	T.trains = true;   /* the session begins at an optimizer step (record/inject.c) */
	if (T.tsteps && R.lead)
		open_step_locked(R.lead, t);
}

/* ---- the end of the run (ranges_finish) ---------------------------------------- */

/* Drops what of ours is still open on s at the end (a step not ended by an optimizer step, its phases). */
void drop_torch_frames_locked(struct tstate *s)
{
	int n = 0;

	for (int i = 0; i < s->depth; i++) {
		if (s->f[i].domain == T.tdom) {
			if (R.open)
				R.open--;
			continue;
		}
		s->f[n++] = s->f[i];
	}
	s->depth = n;
}

const char *torch_steps_locked(void)
{
	if (T.opt_steps)
		return "optimizer steps (PyTorch)";
	if (T.n_held) {
		write_held_locked(T.held, T.n_held);
		return "outermost module calls (PyTorch, no optimizer step)";
	}
	return NULL;
}
