/*
 * hooks.c: see hooks.h. Every hook's time is the recorder's own
 * (record/cost.h, part "hook"): t0 at entry, cost_end at exit.
 */
#include "record/hooks.h"

#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/grow.h"
#include "record/capture.h"
#include "record/cost.h"

/* Past this many queued events the hooks wait for the writer rather than grow further. */
#define QUEUE_SOFT_LIMIT (1u << 16)

void rec_hooks_init(struct rec_hooks *h, struct rec_session *s)
{
	memset(h, 0, sizeof(*h));
	h->s = s;
	h->thread = capture_thread_id();
	h->step = REC_NO_STEP;
}

void rec_hooks_drain(struct rec_hooks *h, bool wait)
{
	size_t i;

	if (!h->n_queue)
		return;
	if (wait)
		rec_session_lock(h->s);
	else if (!rec_session_trylock(h->s))
		return;
	for (i = 0; i < h->n_queue; i++)
		rec_session_add_locked(h->s, &h->queue[i]);
	rec_session_unlock(h->s);
	h->n_queue = 0;
}

void rec_hooks_release(struct rec_hooks *h)
{
	free(h->queue);
	h->queue = NULL;
	h->n_queue = h->queue_cap = 0;
}

/* A slot for one event at CUPTI time `t` (start and end), or NULL. */
static struct st_event *queue_event(struct rec_hooks *h, int kind, uint64_t t)
{
	struct st_event *ev;

	if (h->n_queue >= QUEUE_SOFT_LIMIT)
		rec_hooks_drain(h, true);
	/* once growing failed, the queue keeps its size: it empties at step boundaries */
	if (h->n_queue == h->queue_cap &&
	    (h->queue_failed || ALLOC_GROW(h->queue, h->n_queue + 1, h->queue_cap))) {
		if (!h->queue_failed)
			warning("out of memory queueing recorder events; some are lost");
		h->queue_failed = true;
		return NULL;
	}
	ev = &h->queue[h->n_queue++];
	memset(ev, 0, sizeof(*ev));
	ev->kind = kind;
	ev->start = ev->end = rec_session_time(h->s, t);
	return ev;
}

static void on_op_register(void *ctx, const struct model_op *op)
{
	uint64_t t0 = cost_ticks();
	struct rec_hooks *h = ctx;
	struct st_event ev = { .kind = ST_OP };
	uint8_t i;

	ev.start = ev.end = rec_session_time(h->s, capture_now());
	ev.op.id = op->id;
	ev.op.flops = op->flops;
	ev.op.bytes = op->bytes;
	ev.op.n_inputs = op->n_inputs < ST_OP_MAX_INPUTS ? op->n_inputs : ST_OP_MAX_INPUTS;
	ev.op.n_outputs = op->n_outputs < ST_OP_MAX_OUTPUTS ? op->n_outputs : ST_OP_MAX_OUTPUTS;
	for (i = 0; i < ev.op.n_inputs; i++)
		ev.op.inputs[i] = op->inputs[i];
	for (i = 0; i < ev.op.n_outputs; i++)
		ev.op.outputs[i] = op->outputs[i];
	rec_session_lock(h->s);
	ev.op.name = rec_session_intern_locked(h->s, op->name);
	ev.op.path = rec_session_intern_locked(h->s, op->path);
	ev.op.kind = rec_session_intern_locked(h->s, op->kind);
	ev.op.phase = rec_session_intern_locked(h->s, op->phase);
	rec_session_add_locked(h->s, &ev);
	rec_session_unlock(h->s);
	cost_end(COST_HOOK, t0, 0);
}

static void on_op_begin(void *ctx, uint32_t op_id)
{
	uint64_t t0 = cost_ticks();

	capture_op_begin(op_id);
	cost_end(COST_HOOK, t0, 0);
}

static void on_op_end(void *ctx, uint32_t op_id)
{
	uint64_t t0 = cost_ticks();

	capture_op_end();
	cost_end(COST_HOOK, t0, 0);
}

static void on_mem(struct rec_hooks *h, int kind, uint64_t address, uint64_t size,
		   int category, uint32_t op_id)
{
	struct st_event *ev = queue_event(h, kind, capture_now());

	if (!ev)
		return;
	ev->mem.address = address;
	ev->mem.size = size;
	ev->mem.category = (uint32_t)category;
	ev->mem.op = op_id;
	ev->mem.source = ST_SRC_MODEL;
	ev->mem.device = h->device;   /* the model runs on the current device, the header's */
}

static void on_alloc(void *ctx, uint64_t address, uint64_t size, int category, uint32_t op_id)
{
	uint64_t t0 = cost_ticks();

	on_mem(ctx, ST_ALLOC, address, size, category, op_id);
	cost_end(COST_HOOK, t0, 0);
}

static void on_free(void *ctx, uint64_t address, uint64_t size, int category, uint32_t op_id)
{
	uint64_t t0 = cost_ticks();

	on_mem(ctx, ST_FREE, address, size, category, op_id);
	cost_end(COST_HOOK, t0, 0);
}

static void on_oom(void *ctx, uint64_t requested, int category, uint32_t op_id,
		   uint64_t live, uint64_t capacity)
{
	struct rec_hooks *h = ctx;
	struct st_event *ev = queue_event(h, ST_OOM, capture_now());

	if (!ev)
		return;
	ev->oom.requested = requested;
	ev->oom.category = (uint32_t)category;
	ev->oom.op = op_id;
	ev->oom.live_bytes = live;
	ev->oom.capacity = capacity;
	ev->oom.step = h->step;   /* REC_NO_STEP: while the model was being created */
}

static void on_step_begin(void *ctx, uint32_t index, bool warmup)
{
	uint64_t t0 = cost_ticks();
	struct rec_hooks *h = ctx;

	/* Setup events of the model and the previous step go to the writer
	 * now, before this step's clock matters, if nobody holds the lock. */
	rec_hooks_drain(h, false);
	if (warmup)
		capture_measure_launch_cost();   /* once, before the first warm-up step begins */
	cost_end(COST_HOOK, t0, 0);   /* before the step: its time is not the step's */
	t0 = cost_ticks();
	h->step = index;
	capture_step_begin(index);
	h->step_start = capture_now();
	cost_end(COST_HOOK, t0, 0);
}

static void on_step_end(void *ctx, uint32_t index, bool warmup)
{
	uint64_t t0 = cost_ticks();
	struct rec_hooks *h = ctx;
	uint64_t end = capture_now();
	struct st_event *ev;

	capture_step_end();
	ev = queue_event(h, ST_STEP, h->step_start);
	if (ev) {
		ev->end = rec_session_time(h->s, end);
		ev->step.index = index;
		ev->step.warmup = warmup;
		ev->step.thread = h->thread;
	}
	h->step = REC_NO_STEP;
	rec_hooks_drain(h, false);
	cost_end(COST_HOOK, t0, 0);
}

void rec_hooks_step_abandoned(struct rec_hooks *h)
{
	if (h->step == REC_NO_STEP)
		return;
	capture_step_end();
	capture_op_end();
	h->step = REC_NO_STEP;
}

struct model_observer rec_hooks_observer(struct rec_hooks *h)
{
	return (struct model_observer){
		.ctx = h,
		.op_register = on_op_register,
		.op_begin = on_op_begin,
		.op_end = on_op_end,
		.alloc = on_alloc,
		.free = on_free,
		.oom = on_oom,
		.step_begin = on_step_begin,
		.step_end = on_step_end,
	};
}
