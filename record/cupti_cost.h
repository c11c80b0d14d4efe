/*
 * cupti_cost.h: what tracing costs a kernel launch inside CUPTI (bundle
 * format 1.10, Footer.launch_cost; issue 36), measured once per process.
 * Private to record/: capture.c drives it (capture_measure_launch_cost)
 * and its callbacks feed it; activity.c asks it which records are its own.
 */
#ifndef STEPTRACE_RECORD_CUPTI_COST_H
#define STEPTRACE_RECORD_CUPTI_COST_H

#include <cupti.h>
#include <stdbool.h>
#include <stdint.h>

#include "record/session.h"

#pragma GCC visibility push(hidden)

/* This thread is measuring: the launch callbacks return at once. */
extern _Thread_local bool cupti_cost_measuring;

/*
 * Measures, on the calling thread (a CUDA context current, outside any
 * CUDA call), with the recorder's subscriber (its callbacks stay as they
 * are; their handlers return at once on this thread); `api_records`: the recording
 * keeps the launch's API record; `tracing`: tracing is on now (recording)
 * rather than off (armed), and is left so; `thread`: the calling thread's
 * id as CUPTI's records carry it. Once per process: a call after the first
 * that found a context does nothing.
 */
void cupti_cost_measure(CUpti_SubscriberHandle subscriber, bool api_records, bool tracing, uint64_t thread);

/* A launch callback's entry on a thread that is not measuring (counted while tracing is off). */
void cupti_cost_foreign_launch(void);
/* Is this record the measurement's own (a kernel by its name; an API record by its thread and start, CUPTI's clock)? */
bool cupti_cost_owns(uint64_t start, uint64_t thread, const char *kernel);
/* Into s (its lock held): the foreign launches as dropped kernel records, and the result for the footer. */
void cupti_cost_drain_locked(struct rec_session *s);

#pragma GCC visibility pop

#endif
