/*
 * capture.h: everything `steptrace record` does through CUPTI (SPEC.md,
 * "Recording"): NVTX injection, CUPTI's clock, the activity buffers decoded
 * into bundle events, and the launch callbacks that attribute every kernel,
 * memcpy and memset to the op that launched it by correlation id.
 *
 * One capture per process (CUPTI allows one subscriber). Order:
 * capture_nvtx_setup -> (calibration, header) -> capture_start -> model and
 * steps, with capture_op_* and capture_step_* from the observer ->
 * capture_stop -> close the session.
 */
#ifndef STEPTRACE_RECORD_CAPTURE_H
#define STEPTRACE_RECORD_CAPTURE_H

#include <stdbool.h>
#include <stdint.h>

#include "record/session.h"

/*
 * Points NVTX_INJECTION64_PATH at the libcupti this program is linked
 * against, so the model's NVTX ranges reach CUPTI. Must run before the first
 * NVTX call of the process. -1 when the variable cannot be set.
 */
int capture_nvtx_setup(void);

/* CUPTI's clock, ns (the clock of every event in the bundle). */
uint64_t capture_now(void);

/* The calling thread's id as CUPTI reports it in activity records (gettid). */
uint64_t capture_thread_id(void);

/*
 * Which runtime and driver calls get an activity record. Queries (every call
 * whose name holds "Get", and cudaPeekAtLastError) do no work on the device
 * and make most of the calls: cuBLAS asks cudaGetDevice and
 * cuKernelGetAttribute twice per launch. Leaving them out is the default;
 * kernel launches, copies, memsets, allocations and synchronisation are
 * always recorded.
 *
 * CAPTURE_API_LAUNCHES records only the calls that put work on the device
 * (launches, copies, memsets, allocations and frees) and takes them from
 * the launch callbacks (times from CUPTI's clock at their entry and exit)
 * instead of CUPTI's RUNTIME and DRIVER activity, which intercepts every
 * call of the process: the cheapest on a program that makes many calls
 * (PyTorch: ~10 runtime calls per kernel).
 */
enum capture_api { CAPTURE_API_WORK, CAPTURE_API_ALL, CAPTURE_API_LAUNCHES };
/* Their names for --api, NULL-terminated: "work", "all", "launches". */
extern const char *const capture_api_names[];
/* The rule as the header's api_calls states it. */
const char *capture_api_rule(enum capture_api which);

/*
 * Subscribes the launch, memcpy, memset and allocation callbacks, registers
 * the buffer pool and enables the activity kinds; decoded events go to `s`
 * (NULL: to the session capture_attach names later).
 * `steps` sizes the per-step launch counters. -1 (one error line) on failure,
 * with CUPTI left as it was.
 */
int capture_start(struct rec_session *s, uint32_t steps, enum capture_api api);

/*
 * A capture that opens its session late (record/inject.c, in a program
 * steptrace did not write): capture_start(NULL, ...) enables everything at
 * once, and the decoder thread holds completed buffers until
 * capture_attach() names the session. Hooks, set before capture_start:
 * on_context runs on the thread that created a CUDA context (CUPTI's
 * resource callback) with its device; drain runs on the decoder thread,
 * session lock held, after each buffer, after capture_kick() and at
 * capture_stop().
 */
void capture_set_hooks(void (*on_context)(void *ctx, uint32_t device),
		       void (*drain)(struct rec_session *s));
void capture_attach(struct rec_session *s);
/*
 * The lead thread's op (record/nvtx.c: the training loop's innermost
 * range): launches and allocations on a thread that has no op of its own
 * are attributed to it, and `stackless` (set before capture_start) runs on
 * that thread. 0: none (the built-in step never sets it).
 */
void capture_set_lead(void (*stackless)(void));
/*
 * cudaProfilerStart/Stop (and the driver's cuProfilerStart/Stop) returned
 * on some thread at CUPTI time t (set before capture_start; record/inject.c
 * makes capture ranges step candidates of them, record/nvtx.h).
 */
void capture_set_profiler_hook(void (*on_profiler)(bool start, uint64_t t));
/*
 * Runs on the calling thread at the entry of each launch, copy, memset or
 * allocation call the callbacks see, before its op is picked (record/
 * torch.h: the backward's module chains from autograd's current node).
 */
void capture_set_before_launch(void (*before_launch)(void));
void capture_set_lead_op(uint32_t op);

/*
 * Before capture_start, for a program steptrace did not write (record/
 * inject.c), whose host side is what CUPTI's tracing slows (issue 15;
 * docs/measurements.md, "Recording overhead of record -- COMMAND"). With the default API
 * filter: the records of the calls it keeps are enabled call by call
 * (CUPTI then traces those calls only, not every query), and, unless
 * `cupti_sync`, synchronisation events are made from the API records of
 * the synchronising calls (cudaStreamSynchronize, cudaDeviceSynchronize,
 * cudaEventSynchronize, cudaStreamWaitEvent and their driver forms: same
 * type, thread, correlation and times; stream UINT32_MAX, not known)
 * instead of CUPTI's SYNCHRONIZATION activity, which costs a host-bound
 * PyTorch step about a fifth of its time. The built-in step keeps CUPTI's
 * ways: it makes few calls, and in its recorder calls enabled one by one
 * were not recorded at all (seen on an H100; the cause is not known).
 */
void capture_lean(bool on, bool cupti_sync);
/* Asks the decoder thread to run the drain hook soon. */
void capture_kick(void);
/* In the child of a fork: drop the parent's capture without touching it. */
void capture_forget(void);

/* The observer's op_begin/op_end: the op later launches on this thread belong to. */
void capture_op_begin(uint32_t op);
void capture_op_end(void);
/*
 * The op of each kernel launch (symbol: the kernel's name) and copy or
 * memset (symbol NULL) that would take `op`, asked of `hook` on the
 * launching thread at the outermost call (record/compiled.h: kernels of
 * compiled regions); the driver call a runtime call makes, and the graph
 * nodes a stream capture makes of it, take the same. NULL: none.
 */
void capture_set_kernel_hook(uint32_t (*hook)(const char *symbol, bool launch, uint32_t op));

/*
 * CUPTI's own host time per kernel launch (record/cupti_cost.c, format
 * 1.10): once per process, on the calling thread, which needs a CUDA
 * context current (without one it does nothing and a later call tries
 * again). About 2,300 launches of an empty kernel, some milliseconds: call
 * it where that time is the recorder's in a step that does not count (the
 * start of a warm-up step) or in no recorded step. STEPTRACE_LAUNCH_COST=off
 * skips it.
 */
void capture_measure_launch_cost(void);

/* Launch counting per step (see capture_counts_of). */
void capture_step_begin(uint32_t index);
void capture_step_end(void);

/*
 * An armed capture (`record --armed`, record/inject.c): capture_armed(true)
 * before capture_start makes it start with nothing traced (the resource
 * callbacks alone: contexts and graph nodes, which cost a launch nothing)
 * and no decoder thread. capture_resume(s) turns on what capture_start
 * turns on and decodes into s from then; capture_pause() synchronises the
 * device, flushes and decodes every buffer into that session, drains it
 * (the drain hook) and turns tracing off again, leaving the session to the
 * caller to close. Several resume/pause pairs may follow; capture_stop
 * ends the capture in either state. -1 (one error line) on failure.
 */
void capture_armed(bool on);
int capture_resume(struct rec_session *s);
int capture_pause(void);

/*
 * Synchronises the current context (through the driver), flushes every buffer (forced), disables the
 * activity kinds, unsubscribes, and counts CUPTI's dropped records into the
 * session. Safe to call more than once and on every exit path. -1 if a
 * flush failed (events may be missing; said in one line).
 */
int capture_stop(void);

struct capture_counts {
	uint64_t launches;   /* kernel launch API calls (outermost, so a runtime call that calls the driver counts once) */
	uint64_t copies;     /* memcpy and memset API calls */
};
/* Counts of step `index`; index < 0 for calls outside any step. -1 if out of range. */
int capture_counts_of(int64_t index, struct capture_counts *out);

struct capture_totals {
	uint64_t dropped;         /* records CUPTI lost */
	uint64_t unattributed;    /* kernels, memcpys, memsets with no op */
	uint64_t open_ranges;     /* NVTX ranges still open at the end (not written) */
	uint64_t unpaired_ends;   /* NVTX range ends without a start */
};
void capture_totals(struct capture_totals *t);

#endif
