/*
 * nvtx.h: steps and ops of a program steptrace did not write, from its
 * NVTX ranges (`steptrace record -- COMMAND`, issue 15).
 *
 * The NVTX entry points of the injection library (record/inject.c) call
 * ranges_push/pop/start/end/mark on the application's threads. Each thread
 * keeps its stack of open ranges; the innermost range of the launching
 * thread plays the part of the built-in step's op: every range is a node
 * of a tree (parent range, name), and its k-th execution within a step is
 * one Op of the bundle, registered with the node's path, kind, phase and,
 * for the ops PyTorch's emit_nvtx(record_shapes=True) names, FLOPs and
 * minimum bytes (record/aten.h). capture_op_begin() hands that op to the
 * launch callbacks, so each kernel, copy and allocation is attributed by
 * correlation id, as for the built-in step. An op per execution keeps
 * `flops` right: its report counts an op's cost once per step it ran in.
 *
 * Threads: the lead thread (the step range's, else the first to push a
 * range) runs the loop; another thread (autograd's, for the backward pass)
 * is its helper: a helper's root ranges are children of the lead's
 * innermost range (so their ops' paths and phases are the lead's:
 * "train_step/backward/autograd::engine::evaluate_function: MmBackward0"),
 * its launches outside any range of its own take the lead's op, and every
 * lead range open while the helper worked is copied onto the helper's
 * thread (domain "steptrace.mirror"), so that NVTX projection puts the
 * helper's kernels under it as well.
 *
 * Steps, by the first rule that gives any (ranges_totals says which):
 * every range named `step_range` (after normalisation, any thread, not
 * nested in another); else, for a PyTorch program (record/torch.h), each
 * step of the primary optimizer ends one, and without an optimizer step in
 * the whole run each outermost module call does; else each
 * cudaProfilerStart/Stop capture range; else the whole run is one step,
 * written by ranges_finish. The first `warmup` steps are flagged warm-up.
 *
 * Range names are written normalised (aten_normalize: without emit_nvtx's
 * per-call seq, op_id and input_op_ids), so the string table stays small.
 *
 * Events wait in a queue until the capture's decoder thread drains it into
 * the session (ranges_drain_locked, registered with capture_set_drain), so
 * an application thread never encodes, compresses or writes.
 */
#ifndef STEPTRACE_RECORD_NVTX_H
#define STEPTRACE_RECORD_NVTX_H

#include <stdbool.h>
#include <stdint.h>

#include "record/session.h"

struct ranges_config {
	const char *step_range;   /* NVTX range marking a step; NULL or "": the run is one step */
	int32_t warmup;           /* the first N steps are warm-up; -1: 1 for PyTorch's steps, else 0 */
	unsigned elem_bytes;      /* bytes per element for op bytes: 2 under bf16/fp16, else 4 */
};

/* Copies the configuration; the first call wins. -1 when out of memory. */
int ranges_init(const struct ranges_config *c);

/* Keeps the mutex whole across fork(); the child records nothing. Call once. */
void ranges_atfork(void);

/* An NVTX domain (NULL: the default domain) and a registered string. */
struct ranges_domain;
struct ranges_domain *ranges_domain_create(const char *name);
/* The id of a registered string; 0 when out of memory. */
uint32_t ranges_register(const char *s);

/*
 * Range stack of the calling thread. `name` is NVTX's message, `reg` a
 * registered string id used instead when non-zero. Times are CUPTI ns.
 * ranges_push returns the new range's depth (0 = outermost); ranges_pop
 * the depth of the range it closed, -1 when the thread had none open in
 * that domain.
 */
int ranges_push(struct ranges_domain *d, const char *name, uint32_t reg, uint64_t t);
/* ranges_push with NCCL's payload: the call's communicator id and message size in bytes. */
int ranges_push_payload(struct ranges_domain *d, const char *name, uint32_t reg, uint64_t t, uint64_t comm,
			uint64_t bytes);
/* Domain d is NCCL's (named "NCCL"): its ranges' payloads say what each collective moves. */
bool ranges_domain_nccl(const struct ranges_domain *d);
int ranges_pop(struct ranges_domain *d, uint64_t t);
/* ranges_pop with a payload given at the pop (nvtxRangePopPayload): what the range has not, it takes. */
int ranges_pop_payload(struct ranges_domain *d, uint64_t t, uint64_t comm, uint64_t bytes);
/* A launch on a thread with no range open took the lead's op (capture_set_lead's hook). */
void ranges_stackless(void);
/* Start/end ranges (any thread may end one) and instantaneous marks. */
uint64_t ranges_start(struct ranges_domain *d, const char *name, uint32_t reg, uint64_t t);
void ranges_end(uint64_t id, uint64_t t);
void ranges_mark(struct ranges_domain *d, const char *name, uint32_t reg, uint64_t t);

/*
 * The phases: a range named so (any case) gives its node's phase, and the
 * PyTorch mode's Python side passes them by number (record/torch.h);
 * ranges_phase_names[p] is the range's name.
 */
enum ranges_phase {
	RANGES_PHASE_DATA = 1, RANGES_PHASE_ZERO_GRAD, RANGES_PHASE_FORWARD,
	RANGES_PHASE_BACKWARD, RANGES_PHASE_OPTIMIZER, RANGES_PHASE_COUNT
};
extern const char *const ranges_phase_names[];   /* [0] "", "data", "zero_grad", ... */

/* cudaProfilerStart (start) or cudaProfilerStop at t: a capture range, a step candidate. */
void ranges_capture_range(bool start, uint64_t t);

/*
 * Writes queued events, and Op registrations not yet written, into s
 * (whose lock the caller holds). The capture's decoder thread calls it
 * after each buffer and at the end.
 */
void ranges_drain_locked(struct rec_session *s);

/*
 * Ends the recording of ranges at CUPTI time t_end: later calls do
 * nothing; without a step range, queues the one step [0, t_end] (bundle
 * time `t0` CUPTI ns is its start). Call before capture_stop.
 */
void ranges_finish(uint64_t t0, uint64_t t_end);

/*
 * Recording in sessions (`record --armed`, issue 36). Between sessions the
 * ranges are idle (ranges_session_idle): nothing is recorded, and the
 * injection library does not call in at all. ranges_session_begin(t)
 * starts a recording at CUPTI time t as a bundle of its own needs it: no
 * step written yet and none warm-up, every op registered so far written
 * again into the session it drains into next, every thread's range stack
 * empty (a range open before t is not in it; its pop is not counted
 * unpaired), and under the PyTorch rule a step open from t. Its steps
 * are numbered from first_index (Step.index: the program's own count of
 * its steps, the same on every rank). ranges_finish ends a session as it
 * ends a run.
 */
void ranges_session_idle(void);
void ranges_session_begin(uint64_t t, uint32_t first_index);

struct ranges_totals {
	uint64_t ranges;          /* range events queued */
	uint32_t steps, warmup;   /* steps written and how many of them warm-up */
	uint32_t ops;             /* ops registered */
	uint64_t open;            /* ranges still open at the end (not written) */
	uint64_t unpaired;        /* pops and ends without their push or start */
	uint64_t lost;            /* events lost: out of memory, too deep, or after the end */
	bool ops_capped;          /* the op table reached its cap; later executions share ops */
	const char *steps_from;   /* how the steps were found (after ranges_finish), for the footer */
};
void ranges_totals(struct ranges_totals *t);

#endif
