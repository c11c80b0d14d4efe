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
 * at once on the measuring thread, and the decoder drops the kernel records
 * of its kernel and the API records of that thread that began within the
 * measurement's window (cupti_cost_owns). The recorder's callbacks stay as
 * they are, so while recording, a launch another thread makes while tracing
 * is off is seen and counted as a dropped kernel record, never lost silently.
 *
 * What it does not see: on the H200, PyTorch's launches cost ~2.7 us more
 * each with kernel tracing on (docs/record.md, measured inside one process
 * with scripts/armed_ab.py), the empty kernel's 0.5-0.8 us; timing the
 * batch with its synchronisation (0.76 us) or behind a spinning kernel, so
 * that the launches queue (0.36 us), came no nearer.
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
	_Atomic uint64_t from, to;         /* CUPTI's clock: the measurement's window (from 0: none) */
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
	CUresult (*stream_sync)(CUstream);
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
	*(void **)&d->stream_sync = dlsym(h, "cuStreamSynchronize");
	*(void **)&d->launch = dlsym(h, "cuLaunchKernel");
	dlclose(h);   /* NOLOAD: the process keeps it loaded */
	return d->ctx_get_current && d->module_load_data && d->module_get_function && d->stream_create &&
	       d->stream_sync && d->launch;
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

/* One batch's host time, ns: its launches alone; 0 when a call failed. */
static uint64_t lc_batch(const struct lc_driver *d, CUfunction fn, CUstream st)
{
	uint64_t t0, t1;
	bool ok = true;

	t0 = mono_ns();
	for (int i = 0; i < LC_LAUNCHES && ok; i++)
		ok = d->launch(fn, 1, 1, 1, 32, 1, 1, 0, st, NULL, NULL) == CUDA_SUCCESS;
	t1 = mono_ns();
	return ok ? (t1 > t0 ? t1 - t0 : 1) : 0;
}

/* LC_ROUNDS rounds, traced and untraced alternately, into *out (medians); -1 when a call failed. */
static int lc_rounds(const struct lc_driver *d, CUfunction fn, CUstream st, bool api_records,
		     struct st_launch_cost *out)
{
	uint64_t traced[LC_ROUNDS], untraced[LC_ROUNDS];

	for (int r = 0; r < LC_ROUNDS; r++) {
		for (int k = 0; k < 2; k++) {
			bool on = (r + k) % 2 == 0;   /* each round starts with the other state */
			uint64_t ns;

			if (lc_tracing(on, api_records) || !(ns = lc_batch(d, fn, st)))
				return -1;
			(on ? traced : untraced)[r] = ns;
		}
	}
	qsort(traced, LC_ROUNDS, sizeof(*traced), stats_cmp_u64);
	qsort(untraced, LC_ROUNDS, sizeof(*untraced), stats_cmp_u64);
	out->launches = LC_LAUNCHES;
	out->rounds = LC_ROUNDS;
	out->traced_ns = traced[LC_ROUNDS / 2];      /* LC_ROUNDS odd: the median */
	out->untraced_ns = untraced[LC_ROUNDS / 2];
	return 0;
}

static uint64_t lc_now(void)
{
	uint64_t t = 0;

	cuptiGetTimestamp(&t);
	return t;
}

void cupti_cost_measure(CUpti_SubscriberHandle subscriber, bool api_records, bool tracing, uint64_t thread)
{
	struct lc_driver d;
	CUcontext ctx = NULL;
	CUmodule mod;
	CUfunction fn;
	CUstream st;
	struct st_launch_cost got = { 0 };
	const char *env = getenv("STEPTRACE_LAUNCH_COST");
	bool ok;

	if (LC.tried || !subscriber || getenv("STEPTRACE_CUPTI_OFF") || (env && !strcmp(env, "off")))
		return;
	if (!lc_driver(&d) || d.ctx_get_current(&ctx) != CUDA_SUCCESS || !ctx)
		return;   /* no context on this thread yet: a later call may have one */
	LC.tried = true;
	if (d.module_load_data(&mod, lc_ptx) != CUDA_SUCCESS ||
	    d.module_get_function(&fn, mod, LC_KERNEL) != CUDA_SUCCESS ||
	    d.stream_create(&st, CU_STREAM_NON_BLOCKING) != CUDA_SUCCESS)
		return;   /* the module or stream stays: once per process, and small */
	atomic_store(&LC.thread, thread);
	atomic_store(&LC.to, UINT64_MAX);
	atomic_store(&LC.from, lc_now());
	cupti_cost_measuring = true;
	ok = lc_rounds(&d, fn, st, api_records, &got) == 0;
	cupti_cost_measuring = false;
	lc_tracing(tracing, api_records);   /* as it was: on while recording, off while armed */
	atomic_store(&LC.untraced, false);
	d.stream_sync(st);
	atomic_store(&LC.to, lc_now());
	if (ok)
		LC.result = got;
}

void cupti_cost_foreign_launch(void)
{
	if (atomic_load_explicit(&LC.untraced, memory_order_relaxed) && !cupti_cost_measuring)
		atomic_fetch_add_explicit(&LC.foreign, 1, memory_order_relaxed);
}

bool cupti_cost_owns(uint64_t start, uint64_t thread, const char *kernel)
{
	uint64_t from = atomic_load_explicit(&LC.from, memory_order_relaxed);

	if (kernel)   /* its kernels' names are its own */
		return kernel[0] == 's' && !strncmp(kernel, LC_KERNEL, sizeof(LC_KERNEL) - 1);
	return from && start >= from && start <= atomic_load_explicit(&LC.to, memory_order_relaxed) &&
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
