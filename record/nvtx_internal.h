/*
 * nvtx_internal.h: private to record/nvtx.c and record/torch.c. The range
 * stacks of the NVTX path (nvtx.c), onto which the PyTorch mode (torch.c)
 * pushes its steps, phases and module calls and moves the backward's
 * module chains: their frames, the per-thread stacks, R (the NVTX path's
 * state, under R.lock, which torch.c's state shares), and the calls each
 * file makes of the other. Hidden: neither library exports any of it.
 */
#ifndef STEPTRACE_RECORD_NVTX_INTERNAL_H
#define STEPTRACE_RECORD_NVTX_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/aten.h"
#include "record/nvtx.h"
#include "record/session.h"

#pragma GCC visibility push(hidden)

#define MAX_DEPTH 256             /* per thread; deeper pushes are counted, not recorded */
#define CALL_NONE UINT32_MAX

struct ranges_domain {
	uint32_t name;
	bool nccl;                       /* NCCL's: its ranges carry a communicator and a message size */
};

/* What a frame is, beyond an NVTX range of the program. */
enum frame_flag {
	FR_ELIDED = 1,       /* not written: its node, op and depth are its parent's */
	FR_STEP = 2,         /* a step of the PyTorch rule ("step", domain steptrace.torch) */
	FR_PHASE = 4,        /* a phase of the Python side */
	FR_PERSIST = 8,      /* ... at the top of a step: open until the next phase begins */
	FR_MODULE = 16,      /* an nn.Module call (call: its sequence numbers) */
	FR_SYNTH = 32,       /* a helper's copy of a forward module call, for the backward */
	FR_ENDED = 64,       /* a persistent phase whose call has returned */
};

struct frame {
	uint32_t node, op, name, domain_name;
	int32_t depth;                   /* written depth: a helper thread's sit under the lead's;
					  * an elided frame has its parent's */
	struct ranges_domain *domain;
	uint64_t start, epoch;
	uint32_t call;                   /* FR_MODULE, FR_SYNTH: index into torch.c's calls, else CALL_NONE */
	uint8_t flags;                   /* enum frame_flag */
	uint8_t phase;                   /* FR_PHASE: enum ranges_phase */
	bool step;                       /* a step of --step-range */
	uint64_t comm, bytes;            /* NCCL's payload: communicator id, message size; 0 none */
};

/* A step found, not yet written: held until the end decides which rule gives the steps. */
struct held_step {
	uint64_t start, end, thread;
};

struct tstate {
	uint64_t thread;
	uint32_t sess_gen;               /* R.sess_gen its stack belongs to (ranges_session_begin) */
	int depth, too_deep;
	bool adopted;                    /* a helper of the lead thread (R.adopted) */
	_Atomic uint64_t active;         /* R.epoch when it last pushed a root range or launched without one */
	struct frame f[MAX_DEPTH];
};

struct nvtx_state {
	pthread_mutex_t lock;
	bool init, finished;
	uint32_t step_name, warmup;
	unsigned elem_bytes;

	char **str;                      /* id -> string; id 0 is "" */
	size_t n_str, cap_str;
	uint32_t *str_hash;              /* open addressing, slot -> id (0 empty) */
	size_t str_hash_cap;
	uint32_t *sess;                  /* id -> session string id, 0 not yet interned there */
	size_t cap_sess;
	const struct rec_session *sess_of;

	struct node *nodes;              /* index 0: the root (no range) */
	size_t n_nodes, cap_nodes;
	uint32_t *node_hash;
	size_t node_hash_cap;

	uint32_t *op_node;               /* op id i + 1 -> node */
	size_t n_ops, cap_ops, ops_written;
	bool ops_capped;

	uint32_t gen, n_steps, n_warmup, step_index;
	uint32_t step_base;              /* the first step's index (a triggered recording's: the program's count) */
	bool warmup_default;             /* no --warmup: PyTorch's steps flag their first */
	bool step_open;

	/*
	 * The lead thread: the one with the step range (else the first to
	 * push a range). Other threads (autograd's, which runs the backward
	 * pass) are its helpers: their root ranges are children of the lead's
	 * innermost range, their launches outside any range of theirs take the
	 * lead's op (capture_set_lead_op), and each lead range open while a
	 * helper worked is copied onto the helper's thread, in domain
	 * MIRROR_DOMAIN, so that NVTX projection puts the helper's kernels
	 * under it too ("train_step/backward").
	 */
	struct tstate *lead;
	uint32_t lead_node, mirror_domain;
	int32_t lead_depth;              /* depth a helper's root range is written at */
	_Atomic uint64_t epoch;          /* lead pushes so far */
	struct tstate **adopted;
	size_t n_adopted, cap_adopted;
	uint64_t open;                   /* ranges pushed and not popped, every thread */

	struct ranges_domain **domains;  /* every domain made: its name may be in queued events */
	size_t n_domains, cap_domains;

	struct open_se *se;
	size_t n_se, cap_se;
	uint64_t next_id;

	struct st_event *q;              /* string ids are ours until drained */
	size_t n_q, cap_q;
	struct st_event *spare;          /* the queue drained last, kept for reuse */
	size_t cap_spare;
	bool kicked;

	uint64_t ranges, unpaired, lost;

	_Atomic uint32_t sess_gen;       /* recording sessions begun (ranges_session_begin) */
	int torch;                       /* the PyTorch mode (torch.c): enum ranges_torch_mode, 0 off */
	_Atomic bool torch_on;           /* torch != 0, read without the mutex */
	struct held_step *captures;      /* cudaProfilerStart/Stop ranges */
	size_t n_captures, cap_captures;
	uint64_t capture_open;           /* start of an open capture range + 1, 0 none */
	const char *steps_from;
};
extern struct nvtx_state R;

/* ---- nvtx.c, for torch.c (the mutex held where _locked) ---- */

/* The id of s (0 for NULL or ""; 0 too when out of memory). */
uint32_t intern_locked(const char *s);
/* The calling thread's range stack, made on first use; NULL when out of memory. */
struct tstate *tstate(void);
/* Hands the innermost open range's op to the launch callbacks. */
void current_op(const struct tstate *t);
/* Registers a helper thread of the lead. */
void adopt_locked(struct tstate *s);
/* Where a new frame on s sits: its parent's node and depth (a helper's roots sit under the lead's top). */
void parent_of_locked(const struct tstate *s, uint32_t *node, int32_t *depth);
/* Fills f's depth, node and op as a frame above `parent`/`pdepth`. */
void frame_place_locked(struct frame *f, uint32_t parent, int32_t pdepth, uint32_t parent_op);
/* Pushes f (name, domain, start and flags set) on s. -1 when too deep. */
int push_locked(struct tstate *s, struct frame *f);
/* Removes frame i of s, ending at t (see nvtx.c). */
void pop_at_locked(struct tstate *s, int i, uint64_t t);
/* Queues an event, a range's; NULL (counted lost) when the queue is full or finished. */
struct st_event *queue_locked(int kind, uint64_t start, uint64_t end);
void range_event_locked(uint32_t name, uint32_t domain, uint64_t thread, uint32_t depth,
			uint64_t start, uint64_t end);
/* Wakes the decoder when the queue is long: true when the caller should capture_kick(). */
bool want_kick_locked(void);
/* Steps flagged warm-up at the start of the recording (--warmup, or 1 for PyTorch's steps). */
uint32_t ranges_warmup_locked(void);
/* Writes the next step (phases_only: its module ranges were left out, format 1.8); holds a step
 * candidate until the end; writes the steps held. */
void write_step_locked(uint64_t thread, uint64_t start, uint64_t end, bool phases_only);
void hold_locked(struct held_step **v, size_t *n, size_t *cap, uint64_t thread, uint64_t start,
		 uint64_t end);
void write_held_locked(const struct held_step *v, size_t n);

/* ---- torch.c, for nvtx.c ---- */

/* Is a range with these tags one of the Python side's own profiler, not written? */
bool elided_profiler_range_locked(const struct aten_tags *tags);
/* A profiler range pushed on a helper (autograd's thread): see torch.c. */
void torch_helper_range_locked(struct tstate *s, const struct aten_tags *tags, struct frame *f,
			       uint64_t t);
/* A module call's frame was popped: its forward's sequence numbers end here. */
void torch_call_end_locked(uint32_t call);
/* Drops what of ours is still open on s at the end (a step not ended by an optimizer step, its phases). */
void drop_torch_frames_locked(struct tstate *s);
/* A recording session begins at t (ranges_session_begin): the PyTorch mode's state starts again. */
void torch_session_begin_locked(uint64_t t);
/*
 * At the end, without --step-range: PyTorch's steps, if its rule found any
 * (the optimizer's are written; the outermost module calls' are written
 * now); how they were found, else NULL.
 */
const char *torch_steps_locked(void);

#pragma GCC visibility pop

#endif
