/*
 * capture_internal.h: private to record/capture.c and record/activity.c.
 * The capture's state, which the callbacks and the session control
 * (capture.c) fill and the decoding of activity records (activity.c)
 * reads and keeps its caches in, and the calls each file makes of the
 * other. Hidden: neither library exports any of it.
 */
#ifndef STEPTRACE_RECORD_CAPTURE_INTERNAL_H
#define STEPTRACE_RECORD_CAPTURE_INTERNAL_H

#include <cupti.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/corr_map.h"
#include "record/session.h"

#pragma GCC visibility push(hidden)

/*
 * CUPTI keeps a buffer of its own for each queue it fills (a stream's
 * kernels, a thread's calls) until it is full or flushed: a run with many
 * queues holds many half-empty buffers at once. `--ddp naive` held 128
 * of 8 MiB (the old cap) with 1 MB of records in all, and CUPTI dropped
 * the 2,600 records it had no buffer for. Small buffers, many of them.
 */
#define BUFFER_BYTES (512u << 10)
#define BUFFER_PREALLOC 128      /* 64 MiB, touched before the run: no page faults in a step */
#define BUFFER_MAX 2048          /* 1 GiB; past it CUPTI drops records and we say so */

struct counters {
	_Atomic uint64_t launches, copies;
};

struct open_range {
	uint32_t id, name, domain, depth;
	uint64_t start, thread;
};

struct thread_depth {
	uint64_t thread;
	uint32_t open;
};

struct name_slot {
	const char *key;   /* CUPTI's string; stable for the run */
	uint32_t id;
};

struct capture {
	bool active;
	struct rec_session *s;
	CUpti_SubscriberHandle subscriber;
	uint32_t enabled;                       /* activity kinds enabled so far */
	bool api_work;                          /* API records enabled call by call */
	bool lean, cupti_sync;                  /* capture_lean() */
	/*
	 * tracing turned on after the process began (an armed process's
	 * window): CUPTI then writes no record for calls enabled one by one
	 * with their kind off (an --every window held 0 API records, 542 with
	 * the callbacks' events, 11,298 with --api all), and enabling the
	 * RUNTIME and DRIVER kinds instead makes CUPTI wrap every call, queries
	 * included (GPT-2 8 x 512's window steps cost x1.50). So there the
	 * work filter's API events come from the callbacks (apiq): every call
	 * but the queries subscribed, each outermost one an event
	 */
	bool midway;
	bool sync_derived;                      /* ... and it is in force */
	uint8_t rt_sync[CUPTI_RUNTIME_TRACE_CBID_SIZE];   /* cbid -> synchronisation type, 0: none */
	uint8_t drv_sync[CUPTI_DRIVER_TRACE_CBID_SIZE];

	uint8_t rt_class[CUPTI_RUNTIME_TRACE_CBID_SIZE];
	uint8_t drv_class[CUPTI_DRIVER_TRACE_CBID_SIZE];

	/* Launch counting: written by launching threads, read after stop. */
	struct counters *steps;
	uint32_t n_steps;
	struct counters outside;
	_Atomic(struct counters *) bucket;

	/* Buffer pool (its own lock: CUPTI asks for buffers on launching threads). */
	pthread_mutex_t pool_lock;
	uint8_t *pool[BUFFER_MAX];
	int pool_free, pool_allocated;

	/* Completed buffers waiting for the decoder thread, in completion order. */
	pthread_mutex_t queue_lock;
	pthread_cond_t queue_filled;
	struct done_buffer { uint8_t *buf; size_t valid; } queue[BUFFER_MAX];
	uint32_t q_head, q_len;
	bool decoder_stop, decoder_running;
	bool kick;                              /* drain requested without a buffer */
	pthread_t decoder;

	/* Hooks of a capture that opens its session late (record/inject.c). */
	void (*drain)(struct rec_session *s);   /* after each buffer, under the session lock */
	void (*on_context)(void *ctx, uint32_t device);
	void (*stackless)(void);                /* a launch on a thread without an op took the lead's */
	void (*before_launch)(void);            /* before a launch, copy or allocation picks its op */
	bool armed;                             /* capture_armed(): start with tracing off */
	bool paused;                            /* tracing off, the decoder stopped (capture_pause) */
	int api;                                /* enum capture_api, as capture_start was given it */
	void (*on_profiler)(bool start, uint64_t t);   /* cudaProfilerStart/Stop returned */
	bool attached;                          /* s is set: the decoder may decode */

	/* Decode state, under the session lock. */
	uint64_t names_serial;                  /* the session (rec_session.serial) the names are ids of */
	uint32_t rt_names[CUPTI_RUNTIME_TRACE_CBID_SIZE];
	uint32_t drv_names[CUPTI_DRIVER_TRACE_CBID_SIZE];
	struct name_slot *kernel_names;
	size_t kernel_names_cap, kernel_names_n;
	struct open_range *ranges;
	size_t n_ranges, ranges_cap;
	struct open_range *early_ends;          /* ends whose start is in a later buffer */
	size_t n_early, early_cap;
	struct thread_depth *threads;
	size_t n_threads, threads_cap;
	uint64_t dropped, unattributed, unpaired_ends;
	bool node_oom;                          /* a graph node could not be mapped */
};
extern struct capture cap;

/* Correlation id -> op, written by the launch callbacks (capture.c). */
extern struct corr_map corrs;

/* --api launches: API events made in the callbacks, queued for the decoder thread. */
struct api_queue {
	bool on;
	pthread_mutex_t lock;
	struct st_event *q;          /* api.name holds the domain's cbid until drained */
	size_t n, cap;
};
extern struct api_queue apiq;

/* ---- capture.c, for activity.c ---- */

/* The op of the graph node a kernel, memcpy or memset came from; 0 if none. */
uint32_t node_op(uint64_t node);
/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" into buf. */
const char *api_base_name(const char *name, char *buf, size_t len);

/* ---- activity.c, for capture.c (under the session lock) ---- */

/* Decodes one activity record into cap.s. */
void decode(const CUpti_Activity *rec);
/* Writes the API events the callbacks queued (--api launches). */
void api_drain_locked(struct rec_session *s);

#pragma GCC visibility pop

#endif
