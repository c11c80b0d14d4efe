/*
 * cupti_cost.c: what tracing costs a kernel launch inside CUPTI (bundle
 * format 1.10, Footer.launch_cost; issue 36).
 *
 * The recorder times its own handlers (record/cost.h), but not CUPTI's work
 * inside each launch call: the kernel's timestamps (on Hopper CUPTI adds
 * work to every launch to time it on the GPU) and the launch's API record.
 * On a host-bound loop that is most of what recording adds. So once per
 * process, on a thread with a CUDA context current, at a moment the caller
 * picks (the start of a warm-up step, or when an armed process joins its
 * run), this launches an empty kernel of its own on a stream of its own in
 * batches, alternately with that tracing on (kernel records and the
 * launch's API record, as the recording has them) and off, and keeps the
 * median batch time of each: (traced - untraced) / launches is CUPTI's cost
 * per launch, which `explain`'s unrecorded estimate takes out with the
 * recorder's own time.
 *
 * Its own launches leave nothing in the bundle: the launch callbacks return
 * at once on the measuring thread (noting the correlation ids), and the
 * decoder drops the kernel records of its kernel and the API records of
 * that thread within those ids (cupti_cost_owns). The recorder's callbacks
 * stay on throughout, so a launch another thread makes while tracing is off
 * is seen, and counted as a dropped kernel record, never lost silently.
 *
 * The driver API only, through dlsym of the libcuda the process has loaded
 * (as capture.c's sync_device), and a PTX kernel the driver compiles.
 */
#define _GNU_SOURCE
#include "record/cupti_cost.h"

#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/stats.h"
#include "trace/bundle.h"

#define LC_KERNEL "steptrace_launch_cost"
#define LC_LAUNCHES 128    /* per batch */
#define LC_ROUNDS 9        /* batches of each state */

static const char lc_ptx[] =
	".version 6.0\n"
	".target sm_50\n"
	".address_size 64\n"
	".visible .entry " LC_KERNEL "()\n"
	"{\n"
	"\tret;\n"
	"}\n";

_Thread_local bool cupti_cost_measuring;

static struct {
	bool tried;                        /* measured, or given up: once per process */
	_Atomic uint32_t lo, hi;           /* correlation ids of its launches (lo 0: none yet) */
	_Atomic uint32_t last;             /* the last id a callback noted */
	_Atomic uint64_t thread;           /* the measuring thread */
	_Atomic bool untraced;             /* tracing is off for a batch */
	_Atomic uint64_t foreign;          /* launches of other threads while it was off */
	struct st_launch_cost result;
} LC;

struct lc_driver {
	CUresult (*ctx_get_current)(CUcontext *);
	CUresult (*module_load_data)(CUmodule *, const void *);
	CUresult (*module_get_function)(CUfunction *, CUmodule, const char *);
	CUresult (*stream_create)(CUstream *, unsigned int);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			   CUstream, void **, void **);
};

static bool lc_driver(struct lc_driver *d)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);

	if (!h)
		return false;
	*(void **)&d->ctx_get_current = dlsym(h, "cuCtxGetCurrent");
	*(void **)&d->module_load_data = dlsym(h, "cuModuleLoadData");
	*(void **)&d->module_get_function = dlsym(h, "cuModuleGetFunction");
	*(void **)&d->stream_create = dlsym(h, "cuStreamCreate");
	*(void **)&d->launch = dlsym(h, "cuLaunchKernel");
	dlclose(h);   /* NOLOAD: the process keeps it loaded */
	return d->ctx_get_current && d->module_load_data && d->module_get_function && d->stream_create &&
	       d->launch;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Tracing of a launch on (kernel records, the launch's API record where the recording keeps API records) or off. */
static int lc_tracing(bool on, bool api_records)
{
	atomic_store(&LC.untraced, !on);
	if (on ? cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS
	       : cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
		return -1;
	if (api_records && cuptiActivityEnableDriverApi(CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, on) != CUPTI_SUCCESS)
		return -1;
	return 0;
}

void cupti_cost_measure(CUpti_SubscriberHandle subscriber, bool api_records, bool tracing, uint64_t thread)
{
	struct lc_driver d;
	CUcontext ctx = NULL;
	CUmodule mod;
	CUfunction fn;
	CUstream st;
	uint64_t traced[LC_ROUNDS], untraced[LC_ROUNDS];
	const char *env = getenv("STEPTRACE_LAUNCH_COST");
	bool was_on = tracing, ok = true;

	if (LC.tried || !subscriber || getenv("STEPTRACE_CUPTI_OFF") || (env && !strcmp(env, "off")))
		return;
	if (!lc_driver(&d) || d.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx)
		return;   /* no context on this thread yet: a later call may have one */
	LC.tried = true;
	if (d.module_load_data(&mod, lc_ptx) != CUDA_SUCCESS ||
	    d.module_get_function(&fn, mod, LC_KERNEL) != CUDA_SUCCESS ||
	    d.stream_create(&st, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
		return;   /* the module or stream stays: once per process, and small */
	/* armed: no launch callback is on; its own is, for the measurement (the ids of its launches) */
	if (!was_on && cuptiEnableCallback(1, subscriber, CUPTI_CB_DOMAIN_DRIVER_API,
					   CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel) != CUPTI_SUCCESS)
		return;
	atomic_store(&LC.thread, thread);
	atomic_store(&LC.hi, UINT32_MAX);
	cupti_cost_measuring = true;
	for (int r = 0; r < LC_ROUNDS && ok; r++) {
		for (int k = 0; k < 2 && ok; k++) {
			bool on = (r + k) % 2 == 0;   /* each round starts with the other state */
			uint64_t t0, t1;

			if (lc_tracing(on, api_records)) {
				ok = false;
				break;
			}
			t0 = mono_ns();
			for (int i = 0; i < LC_LAUNCHES && ok; i++)
				ok = d.launch(fn, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL) == CUDA_SUCCESS;
			t1 = mono_ns();
			(on ? traced : untraced)[r] = t1 - t0;
		}
	}
	cupti_cost_measuring = false;
	lc_tracing(was_on, api_records);   /* as it was: on while recording, off while armed */
	if (!was_on)
		cuptiEnableCallback(0, subscriber, CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel);
	atomic_store(&LC.untraced, false);
	atomic_store(&LC.hi, atomic_load(&LC.last));
	if (!ok)
		return;
	LC.result.launches = LC_LAUNCHES;
	LC.result.rounds = LC_ROUNDS;
	qsort(traced, LC_ROUNDS, sizeof(*traced), stats_cmp_u64);
	qsort(untraced, LC_ROUNDS, sizeof(*untraced), stats_cmp_u64);
	LC.result.traced_ns = traced[LC_ROUNDS / 2];      /* LC_ROUNDS odd: the median */
	LC.result.untraced_ns = untraced[LC_ROUNDS / 2];
}

void cupti_cost_note(uint32_t correlation)
{
	uint32_t lo = atomic_load_explicit(&LC.lo, memory_order_relaxed);

	if (!lo || correlation < lo)
		atomic_store_explicit(&LC.lo, correlation, memory_order_relaxed);
	if (correlation > atomic_load_explicit(&LC.last, memory_order_relaxed))
		atomic_store_explicit(&LC.last, correlation, memory_order_relaxed);
	/* hi stays UINT32_MAX while measuring, then takes `last` */
}

void cupti_cost_foreign_launch(void)
{
	if (atomic_load_explicit(&LC.untraced, memory_order_relaxed) && !cupti_cost_measuring)
		atomic_fetch_add_explicit(&LC.foreign, 1, memory_order_relaxed);
}

bool cupti_cost_owns(uint32_t correlation, uint64_t thread, const char *kernel)
{
	uint32_t lo = atomic_load_explicit(&LC.lo, memory_order_relaxed);

	if (kernel)   /* its kernel's name is its own */
		return kernel[0] == 's' && !strcmp(kernel, LC_KERNEL);
	return lo && correlation >= lo && correlation <= atomic_load_explicit(&LC.hi, memory_order_relaxed) &&
	       thread == atomic_load_explicit(&LC.thread, memory_order_relaxed);
}

void cupti_cost_drain_locked(struct rec_session *s)
{
	uint64_t foreign = atomic_exchange(&LC.foreign, 0);

	if (foreign)
		rec_session_count_dropped_locked(s, ST_KERNEL, foreign);
	if (LC.result.launches && s->w)
		bundle_writer_set_launch_cost(s->w, &LC.result);
}
