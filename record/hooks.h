/*
 * hooks.h: the recorder's model_observer (model/observer.h). It turns op
 * registrations, allocator events, steps and OOM into bundle events on
 * CUPTI's clock, and tells capture.c which op and step the launching thread
 * is in.
 *
 * The hooks run on the thread that drives the step, in the middle of it, so
 * they never wait for the writer: events go to a private queue that is
 * handed to the session at step boundaries when the lock is free (and
 * always at rec_hooks_drain(wait = true)). Op registrations are the
 * exception: they intern strings, happen before the steps, and write at once.
 */
#ifndef STEPTRACE_RECORD_HOOKS_H
#define STEPTRACE_RECORD_HOOKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/observer.h"
#include "record/session.h"

#define REC_NO_STEP UINT32_MAX

struct rec_hooks {
	struct rec_session *s;
	uint64_t thread;             /* the driving thread (gettid) */
	struct st_event *queue;
	size_t n_queue, queue_cap;
	bool queue_failed;           /* the queue could not grow (out of memory) */
	uint32_t step;               /* REC_NO_STEP outside a step */
	uint32_t device;             /* the model's device, for its allocations (0 unless set) */
	uint64_t step_start;         /* CUPTI ns */
};

void rec_hooks_init(struct rec_hooks *h, struct rec_session *s);
/* The observer to pass to model_create; its ctx is `h`. */
struct model_observer rec_hooks_observer(struct rec_hooks *h);
/* Hands queued events to the session; without `wait` only if the lock is free now. */
void rec_hooks_drain(struct rec_hooks *h, bool wait);
/* After a step that failed (OOM) before its step_end: no Step event, counting stops. */
void rec_hooks_step_abandoned(struct rec_hooks *h);
/* Frees the queue (drain first). */
void rec_hooks_release(struct rec_hooks *h);

#endif
