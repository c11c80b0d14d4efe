/*
 * capture.c: see capture.h.
 *
 * Threads. The launch callbacks run on the thread that calls CUDA and touch
 * only thread-local state, the lock-free correlation map and atomic
 * counters. CUPTI hands back full activity buffers on any thread it likes,
 * the application's included, so the completion callback only queues them:
 * a decoder thread of ours decodes them in order under the session lock,
 * which also guards the decode state (activity.c: name caches, open NVTX
 * ranges), and gives them back to the pool. A launch never waits for
 * decoding, compression or the disk. Buffers come from a pool that grows on
 * demand up to a cap, so a steady run allocates nothing per record.
 */
#define _GNU_SOURCE
#include "record/capture.h"

#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <pthread.h>
#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/error.h"
#include "lib/gpu_check.h"
#include "lib/grow.h"
#include "record/capture_internal.h"
#include "record/corr_map.h"
#include "record/cost.h"
#include "record/cupti_cost.h"

#define DEFAULT_CUPTI_PATH "/usr/local/cuda/lib64/libcupti.so"

/* The activity kinds recorded (SPEC.md, "Recording"). */
static const CUpti_ActivityKind activity_kinds[] = {
	CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL,
	CUPTI_ACTIVITY_KIND_MEMCPY,
	CUPTI_ACTIVITY_KIND_MEMCPY2,     /* peer to peer: --allreduce ce's, cudaMemcpyPeer */
	CUPTI_ACTIVITY_KIND_MEMSET,
	CUPTI_ACTIVITY_KIND_RUNTIME,
	CUPTI_ACTIVITY_KIND_DRIVER,
	CUPTI_ACTIVITY_KIND_MARKER,
	CUPTI_ACTIVITY_KIND_MEMORY2,
	CUPTI_ACTIVITY_KIND_OVERHEAD,
	CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,
};
#define N_ACTIVITY_KINDS (sizeof(activity_kinds) / sizeof(activity_kinds[0]))

/* What a subscribed API callback is for. */
/* CB_CALL: any other call but the queries, subscribed for its API event only (see cap.midway). */
enum cb_class { CB_NONE, CB_LAUNCH, CB_COPY, CB_ALLOC, CB_PROFILER_START, CB_PROFILER_STOP, CB_CALL };

struct capture cap = {
	.pool_lock = PTHREAD_MUTEX_INITIALIZER,
	.queue_lock = PTHREAD_MUTEX_INITIALIZER,
	.queue_filled = PTHREAD_COND_INITIALIZER,
};

/* Big and zero-initialised: kept apart from `cap` so it lives in .bss only. */
struct corr_map corrs;

/* --api launches: the queue (capture_internal.h), and each thread's call in progress. */
#define API_NEST 8
struct api_queue apiq = { .lock = PTHREAD_MUTEX_INITIALIZER };
static _Thread_local struct { uint64_t start; } api_open[API_NEST];
static _Thread_local uint64_t my_tid;

static _Thread_local uint32_t current_op;
static _Atomic uint32_t lead_op;   /* the op of threads without one (capture_set_lead_op) */
static _Thread_local int api_depth;
/*
 * Bumped each time tracing is turned on: a thread whose call began before
 * tracing was last turned off never saw its exit, so its depth starts over.
 */
static _Atomic uint32_t api_epoch;
static _Thread_local uint32_t my_epoch;
/*
 * The op open on the thread that drives the step, for launches from threads
 * of the libraries it calls: NCCL's non-blocking communicators may launch a
 * collective's kernel from a thread of their own while the op that started
 * it is open.
 */
static _Atomic uint32_t driving_op;

/*
 * The op of a launch or copy inside a compiled region (record/compiled.h),
 * from the kernel's name; hooked_op: what it gave the calling thread's
 * outermost launch or copy in progress (0: none), for the driver call that
 * call makes and the graph nodes a stream capture makes of it.
 */
static uint32_t (*_Atomic kernel_hook)(const char *symbol, bool launch, uint32_t op);
static _Thread_local uint32_t hooked_op;

/*
 * Graph node id -> op. A kernel, memcpy or memset a graph launches carries
 * the id of its node and the correlation id of the cudaGraphLaunch call,
 * which no op encloses; its op is the one open on the thread when the node
 * was made (CUPTI's GRAPHNODE_CREATED, during a stream capture), passed on
 * to the nodes cudaGraphInstantiate clones from it (GRAPHNODE_CLONED).
 * Nodes are made at capture and instantiation only, never in a replayed
 * step, so one lock serves the callbacks and the decoder thread.
 */
static struct {
	pthread_mutex_t lock;
	struct node_slot { uint64_t node; uint32_t op; } *slot;
	size_t n, cap;                  /* cap: 0 or a power of two */
} nodes = { .lock = PTHREAD_MUTEX_INITIALIZER };

static size_t node_hash(uint64_t node, size_t cap_)
{
	return (size_t)((node * 0x9E3779B97F4A7C15ull) >> 17) & (cap_ - 1);
}

/* Called with nodes.lock held; node != 0. */
static int node_put_locked(uint64_t node, uint32_t op)
{
	size_t j;

	if ((nodes.n + 1) * 2 > nodes.cap) {
		size_t ncap = nodes.cap ? nodes.cap * 2 : 1024;
		struct node_slot *fresh = calloc(ncap, sizeof(*fresh));

		if (!fresh)
			return -1;
		for (size_t i = 0; i < nodes.cap; i++) {
			if (!nodes.slot[i].node)
				continue;
			for (j = node_hash(nodes.slot[i].node, ncap); fresh[j].node; j = (j + 1) & (ncap - 1))
				;
			fresh[j] = nodes.slot[i];
		}
		free(nodes.slot);
		nodes.slot = fresh;
		nodes.cap = ncap;
	}
	for (j = node_hash(node, nodes.cap); nodes.slot[j].node; j = (j + 1) & (nodes.cap - 1))
		if (nodes.slot[j].node == node)
			break;
	if (!nodes.slot[j].node)
		nodes.n++;
	nodes.slot[j] = (struct node_slot){ node, op };
	return 0;
}

static uint32_t node_get_locked(uint64_t node)
{
	if (!nodes.cap || !node)
		return 0;
	for (size_t j = node_hash(node, nodes.cap); nodes.slot[j].node; j = (j + 1) & (nodes.cap - 1))
		if (nodes.slot[j].node == node)
			return nodes.slot[j].op;
	return 0;
}

uint32_t node_op(uint64_t node)
{
	uint32_t op;

	pthread_mutex_lock(&nodes.lock);
	op = node_get_locked(node);
	pthread_mutex_unlock(&nodes.lock);
	return op;
}

static void node_release(void)
{
	pthread_mutex_lock(&nodes.lock);
	free(nodes.slot);
	nodes.slot = NULL;
	nodes.n = nodes.cap = 0;
	pthread_mutex_unlock(&nodes.lock);
}

/* GRAPHNODE_CREATED and _CLONED: the node takes the open op, or its original's. */
static void on_graph_node(CUpti_CallbackId cbid, const CUpti_GraphData *g)
{
	uint64_t node = 0, from = 0;
	uint32_t op = 0;

	if (!g || !g->node || cuptiGetGraphNodeId(g->node, &node) != CUPTI_SUCCESS || !node)
		return;
	pthread_mutex_lock(&nodes.lock);
	if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED) {
		if (g->originalNode && cuptiGetGraphNodeId(g->originalNode, &from) == CUPTI_SUCCESS)
			op = node_get_locked(from);
	} else if (!(op = hooked_op ? hooked_op : current_op)) {
		op = atomic_load_explicit(&driving_op, memory_order_acquire);
	}
	if (op && node_put_locked(node, op))
		cap.node_oom = true;
	pthread_mutex_unlock(&nodes.lock);
}

/* ---- NVTX injection and the clock ------------------------------------ */

int capture_nvtx_setup(void)
{
	const char *path = DEFAULT_CUPTI_PATH;
	const char *old = getenv("NVTX_INJECTION64_PATH");
	Dl_info info;

	if (dladdr((void *)cuptiActivityEnable, &info) && info.dli_fname && info.dli_fname[0] == '/')
		path = info.dli_fname;
	if (old && *old && strcmp(old, path))
		warning("NVTX_INJECTION64_PATH was '%s'; using '%s' so NVTX ranges reach CUPTI",
			   old, path);
	if (setenv("NVTX_INJECTION64_PATH", path, 1))
		return error("cannot set NVTX_INJECTION64_PATH: out of memory");
	return 0;
}

uint64_t capture_now(void)
{
	uint64_t t = 0;

	cuptiGetTimestamp(&t);
	return t;
}

uint64_t capture_thread_id(void)
{
	return (uint64_t)syscall(SYS_gettid);
}

/* ---- launch callbacks (launching threads) ---------------------------- */

void capture_lean(bool on, bool cupti_sync)
{
	cap.lean = on;
	cap.cupti_sync = cupti_sync;
}

void capture_op_begin(uint32_t op)
{
	current_op = op;
	atomic_store_explicit(&driving_op, op, memory_order_release);
}

void capture_op_end(void)
{
	current_op = 0;
	atomic_store_explicit(&driving_op, 0, memory_order_release);
}

void capture_set_kernel_hook(uint32_t (*hook)(const char *symbol, bool launch, uint32_t op))
{
	atomic_store_explicit(&kernel_hook, hook, memory_order_release);
}

void capture_measure_launch_cost(void)
{
	if (cap.active && api_depth == 0)   /* no CUDA call from inside one */
		cupti_cost_measure(cap.subscriber, !apiq.on, !cap.paused, capture_thread_id());
}

/*
 * STEPTRACE_KERNELS_EVERY=N: CUPTI's kernel records on steps whose index is
 * a multiple of N only, a diagnostic (issue 36: what kernel records cost a
 * step, measured inside one process; the steps without them have no kernel
 * in the bundle).
 */
static void kernels_for_step(uint32_t index)
{
	static int every = -1;
	static bool off;

	if (every < 0) {
		const char *env = getenv("STEPTRACE_KERNELS_EVERY");

		every = env ? atoi(env) : 0;
	}
	if (every <= 1 || !cap.active || cap.paused || (index % (uint32_t)every == 0) == !off)
		return;
	off = index % (uint32_t)every != 0;
	if (off)
		cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
	else
		cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
}

/*
 * STEPTRACE_CALLBACKS_EVERY=N: the runtime and driver callbacks on steps
 * whose index is a multiple of N only, a diagnostic (issue 36: what CUPTI's
 * callback layer and the recorder's callbacks cost a step, inside one
 * process; the other steps' kernels have no op and their API events,
 * where callbacks make them, are missing). Each switch goes over the same
 * subscribed calls either way, so on and off steps pay alike for it.
 */
static void callbacks_for_step(uint32_t index)
{
	static int every = -1;
	static bool off;

	if (every < 0) {
		const char *env = getenv("STEPTRACE_CALLBACKS_EVERY");

		every = env ? atoi(env) : 0;
	}
	if (every <= 1 || !cap.active || cap.paused || !cap.subscriber ||
	    (index % (uint32_t)every == 0) == !off)
		return;
	off = index % (uint32_t)every != 0;
	for (uint32_t i = 1; i < CUPTI_RUNTIME_TRACE_CBID_SIZE; i++)
		if (cap.rt_class[i] != CB_NONE)
			cuptiEnableCallback(!off, cap.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API, i);
	/* STEPTRACE_CALLBACKS_EVERY_DOMAINS=runtime: the runtime's alone (the driver's make the ops then) */
	if (getenv("STEPTRACE_CALLBACKS_EVERY_DOMAINS") && !strcmp(getenv("STEPTRACE_CALLBACKS_EVERY_DOMAINS"), "runtime"))
		return;
	for (uint32_t i = 1; i < CUPTI_DRIVER_TRACE_CBID_SIZE; i++)
		if (cap.drv_class[i] != CB_NONE)
			cuptiEnableCallback(!off, cap.subscriber, CUPTI_CB_DOMAIN_DRIVER_API, i);
}

void capture_step_begin(uint32_t index)
{
	kernels_for_step(index);
	callbacks_for_step(index);
	atomic_store_explicit(&cap.bucket, index < cap.n_steps ? &cap.steps[index] : &cap.outside,
			      memory_order_release);
	cost_boundary();
}

void capture_step_end(void)
{
	atomic_store_explicit(&cap.bucket, &cap.outside, memory_order_release);
	cost_boundary();
}

/* The outermost call just ended: queue its API event. */
static void api_event(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const CUpti_CallbackData *cb)
{
	struct st_event *ev;
	uint64_t end = capture_now();
	int32_t status = cb->functionReturnValue ? *(const int32_t *)cb->functionReturnValue : 0;

	if (!my_tid)
		my_tid = capture_thread_id();
	pthread_mutex_lock(&apiq.lock);
	if (apiq.n < (1u << 22) && !ALLOC_GROW(apiq.q, apiq.n + 1, apiq.cap)) {
		ev = &apiq.q[apiq.n++];
		memset(ev, 0, sizeof(*ev));
		ev->kind = ST_API;
		ev->start = api_open[0].start;
		ev->end = end;
		ev->api.domain = domain == CUPTI_CB_DOMAIN_DRIVER_API ? 1 : 0;
		ev->api.cbid = cbid;
		ev->api.status = status;
		ev->api.thread = my_tid;
		ev->api.correlation = cb->correlationId;
	}
	pthread_mutex_unlock(&apiq.lock);
}

static void api_callback(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	const CUpti_CallbackData *cb = data;
	enum cb_class cls = CB_NONE;
	struct counters *c;
	uint32_t op;

	if (domain == CUPTI_CB_DOMAIN_RESOURCE) {
		const CUpti_ResourceData *rd = data;
		uint32_t device = 0;

		if (cbid == CUPTI_CBID_RESOURCE_CONTEXT_CREATED && cap.on_context &&
		    cuptiGetDeviceId(rd->context, &device) == CUPTI_SUCCESS)
			cap.on_context(rd->context, device);
		else if (cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED ||
			 cbid == CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED)
			on_graph_node(cbid, rd->resourceDescriptor);
		return;
	}
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
		cls = cap.rt_class[cbid];
	else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		cls = cap.drv_class[cbid];
	if (cls == CB_NONE)
		return;
	if (my_epoch != atomic_load_explicit(&api_epoch, memory_order_relaxed)) {
		my_epoch = atomic_load_explicit(&api_epoch, memory_order_relaxed);
		api_depth = 0;
		hooked_op = 0;
		if (cb->callbackSite == CUPTI_API_EXIT)
			return;   /* its entry was in an earlier window */
	}
	if (cls == CB_LAUNCH && cb->callbackSite == CUPTI_API_ENTER && api_depth == 0)
		cupti_cost_foreign_launch();
	if (cls == CB_PROFILER_START || cls == CB_PROFILER_STOP) {
		if (cb->callbackSite == CUPTI_API_EXIT && cap.on_profiler)
			cap.on_profiler(cls == CB_PROFILER_START, capture_now());
		return;
	}
	if (cls == CB_CALL && cb->callbackSite == CUPTI_API_ENTER) {
		if (api_depth++ == 0)
			api_open[0].start = capture_now();
		return;
	}
	if (cb->callbackSite == CUPTI_API_EXIT) {
		if (api_depth > 0)
			api_depth--;
		if (api_depth == 0)
			hooked_op = 0;
		if (apiq.on && api_depth == 0)
			api_event(domain, cbid, cb);
		return;
	}
	if (apiq.on && api_depth == 0)
		api_open[0].start = capture_now();
	if (cap.before_launch)
		cap.before_launch();
	/* Both the runtime call and the driver call it makes (if CUPTI reports
	 * it) get the op: the activity record carries one of their ids. A
	 * thread with no op of its own works for the thread that drives the
	 * step (NCCL's own threads for the built-in step's op), or for the lead
	 * thread (autograd's thread for the training loop's): that op. */
	op = current_op;
	if (!op)
		op = atomic_load_explicit(&driving_op, memory_order_acquire);
	if (!op && (op = atomic_load_explicit(&lead_op, memory_order_relaxed)) && cap.stackless)
		cap.stackless();
	if (cls == CB_LAUNCH || cls == CB_COPY) {
		uint32_t (*hook)(const char *, bool, uint32_t) =
			atomic_load_explicit(&kernel_hook, memory_order_acquire);

		if (hook && api_depth == 0)
			hooked_op = hook(cls == CB_LAUNCH ? cb->symbolName : NULL, cls == CB_LAUNCH, op);
		if (hooked_op)
			op = hooked_op;
	}
	if (op)
		corr_map_put(&corrs, cb->correlationId, op);
	if (api_depth++ > 0 || cls == CB_ALLOC)
		return;
	c = atomic_load_explicit(&cap.bucket, memory_order_acquire);
	if (cls == CB_LAUNCH) {
		atomic_fetch_add_explicit(&c->launches, 1, memory_order_relaxed);
		cost_count_launch();
	} else {
		atomic_fetch_add_explicit(&c->copies, 1, memory_order_relaxed);
	}
}

/*
 * STEPTRACE_CALLBACK_COUNTS=1, a diagnostic (issue 36: which calls a
 * window's callbacks spend their time on): every runtime and driver
 * callback's entries, outermost and nested apart, printed at exit.
 */
static bool cb_counting;
#define CB_COUNT_IDS 2048   /* above both domains' CBID_SIZE; ids past it are not counted */
static _Atomic uint64_t cb_counts[2][2][CB_COUNT_IDS];
static _Atomic uint64_t cb_same_corr, cb_other_corr;   /* nested calls with the outermost call's id, or another */
static _Atomic uint64_t cb_work[2];   /* launches, copies, allocations: runtime outermost, driver nested */
static _Thread_local uint32_t cb_outer_corr;

static void cb_count(CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void *data)
{
	const CUpti_CallbackData *cb = data;
	int d = domain == CUPTI_CB_DOMAIN_DRIVER_API;

	if ((d || domain == CUPTI_CB_DOMAIN_RUNTIME_API) && cb->callbackSite == CUPTI_API_ENTER &&
	    cbid < sizeof(cb_counts[0][0]) / sizeof(cb_counts[0][0][0])) {
		uint8_t cls = d ? (cbid < CUPTI_DRIVER_TRACE_CBID_SIZE ? cap.drv_class[cbid] : CB_NONE)
				: (cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE ? cap.rt_class[cbid] : CB_NONE);

		atomic_fetch_add_explicit(&cb_counts[d][api_depth > 0][cbid], 1, memory_order_relaxed);
		if ((cls == CB_LAUNCH || cls == CB_COPY || cls == CB_ALLOC) && (d == 0) == (api_depth == 0))
			atomic_fetch_add_explicit(&cb_work[d], 1, memory_order_relaxed);
		if (api_depth == 0)
			cb_outer_corr = cb->correlationId;
		else
			atomic_fetch_add_explicit(cb->correlationId == cb_outer_corr ? &cb_same_corr : &cb_other_corr, 1,
						  memory_order_relaxed);
	}
}

static void cb_counts_print(void)
{
	fprintf(stderr, "steptrace: callbacks nested: %llu with the outermost call's correlation id, %llu with another\n",
		(unsigned long long)atomic_load(&cb_same_corr), (unsigned long long)atomic_load(&cb_other_corr));
	fprintf(stderr, "steptrace: callbacks launches, copies, allocations: %llu runtime outermost, %llu driver nested\n",
		(unsigned long long)atomic_load(&cb_work[0]), (unsigned long long)atomic_load(&cb_work[1]));
	for (int d = 0; d < 2; d++)
		for (uint32_t i = 0; i < sizeof(cb_counts[0][0]) / sizeof(cb_counts[0][0][0]); i++) {
			const char *name = NULL;
			uint64_t top = atomic_load(&cb_counts[d][0][i]), nested = atomic_load(&cb_counts[d][1][i]);

			if (top + nested < 100)
				continue;
			cuptiGetCallbackName(d ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API, i, &name);
			fprintf(stderr, "steptrace: callbacks %s %-40s outermost %10llu nested %10llu\n",
				d ? "driver " : "runtime", name ? name : "?", (unsigned long long)top,
				(unsigned long long)nested);
		}
}

/* Every callback, its time the recorder's own (record/cost.h). */
static void CUPTIAPI on_api_callback(void *userdata, CUpti_CallbackDomain domain,
				     CUpti_CallbackId cbid, const void *data)
{
	uint64_t t0;

	if (cupti_cost_measuring)   /* its own launches (record/cupti_cost.c): nothing recorded, nothing counted */
		return;
	if (cb_counting)
		cb_count(domain, cbid, data);
	t0 = cost_ticks();
	api_callback(domain, cbid, data);
	cost_end(COST_CALLBACK, t0, 0);
}

/* "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" into buf. */
const char *api_base_name(const char *name, char *buf, size_t len)
{
	size_t n = strlen(name), i = n;

	while (i > 0 && name[i - 1] >= '0' && name[i - 1] <= '9')
		i--;
	if (i < n && i >= 2 && name[i - 1] == 'v' && name[i - 2] == '_')
		n = i - 2;
	if (n >= len)
		n = len - 1;
	memcpy(buf, name, n);
	buf[n] = '\0';
	return buf;
}

static enum cb_class classify(const char *name)
{
	if (!strcmp(name, "cudaProfilerStart") || !strcmp(name, "cuProfilerStart"))
		return CB_PROFILER_START;   /* a capture range: a step where nothing else says */
	if (!strcmp(name, "cudaProfilerStop") || !strcmp(name, "cuProfilerStop"))
		return CB_PROFILER_STOP;
	if (strstr(name, "HostFunc"))
		return CB_NONE;
	if (strstr(name, "Launch"))
		return CB_LAUNCH;           /* cudaLaunchKernel*, cuLaunchKernel(Ex), graphs */
	if (strstr(name, "Graph"))
		return CB_NONE;             /* cudaGraphAddMemcpyNode and friends build, not copy */
	if (strstr(name, "Memcpy") || strstr(name, "Memset"))
		return CB_COPY;
	if (strstr(name, "Malloc") || strstr(name, "MemAlloc") || strstr(name, "Free"))
		return CB_ALLOC;            /* so MEMORY2 records get the op too */
	return CB_NONE;
}

/* ---- which API calls get a record ------------------------------------ */

const char *capture_api_rule(enum capture_api which)
{
	return which == CAPTURE_API_ALL ? "all" :
	       which == CAPTURE_API_LAUNCHES ? "launches, copies, memsets, allocations and frees only (from callbacks)" :
	       "all but queries (names holding 'Get', and cudaPeekAtLastError)";
}

const char *const capture_api_names[] = {
	[CAPTURE_API_WORK] = "work", [CAPTURE_API_ALL] = "all", [CAPTURE_API_LAUNCHES] = "launches", NULL,
};

static bool api_is_query(const char *base)
{
	return strstr(base, "Get") || !strcmp(base, "cudaPeekAtLastError");
}

/* The synchronisation a call's name says it makes (CUpti_ActivitySynchronizationType), or 0. */
static uint8_t sync_type_of(const char *base)
{
	static const struct { const char *name; uint8_t type; } calls[] = {
		{ "cudaEventSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE },
		{ "cuEventSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE },
		{ "cudaStreamWaitEvent", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT },
		{ "cuStreamWaitEvent", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT },
		{ "cudaStreamSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE },
		{ "cuStreamSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE },
		{ "cudaDeviceSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE },
		{ "cudaThreadSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE },
		{ "cuCtxSynchronize", CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE },
	};

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (!strcmp(base, calls[i].name))
			return calls[i].type;
	return 0;
}

/*
 * Sets the activity records of the query calls (`queries`) or of every
 * other call (not `queries`) to `enable`, one call at a time, and notes
 * which calls synchronise. Two ways to the default filter: the built-in
 * step enables the RUNTIME and DRIVER kinds and then turns the queries
 * off; capture_lean leaves the kinds off and enables the other calls,
 * so CUPTI traces those only: a PyTorch step makes about ten query calls
 * (cudaGetDevice, cudaStreamGetCaptureInfo, ...) per kernel, and tracing
 * them only to throw their records away cost it about as much as
 * recording every call (issue 15). Quiet when switching calls off at the
 * end of a capture.
 */
static int api_calls(CUpti_CallbackDomain domain, uint32_t size, bool queries, uint8_t enable)
{
	uint8_t *sync = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? cap.rt_sync : cap.drv_sync;
	uint32_t cbid;
	char buf[128];

	for (cbid = 1; cbid < size; cbid++) {
		const char *name = NULL;
		CUptiResult r;

		if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name)
			continue;
		api_base_name(name, buf, sizeof(buf));
		sync[cbid] = sync_type_of(buf);
		if (api_is_query(buf) != queries)
			continue;
		r = domain == CUPTI_CB_DOMAIN_RUNTIME_API ? cuptiActivityEnableRuntimeApi(cbid, enable)
							  : cuptiActivityEnableDriverApi(cbid, enable);
		if (r != CUPTI_SUCCESS && (enable || queries) && CUPTI_CHECK(r))
			return -1;
	}
	return 0;
}

/*
 * Subscribes the calls the recording needs, and with `calls` every other
 * call but the queries too (CB_CALL), for the API events of the work filter.
 */
static int subscribe_domain(CUpti_CallbackDomain domain, uint8_t *classes, uint32_t size, bool calls)
{
	uint32_t cbid;
	char buf[128];
	/* Launches, copies and allocations from the driver's callbacks alone (issue 36: the
	 * runtime's call makes one, nested, with the same correlation id; on an H200 all 17,994
	 * of a GPT-2 run did), half the callbacks a launch, +1.4-2.1% of a host-bound step
	 * saved; not where the callbacks make the API events (a window's, --api launches),
	 * which name the runtime's calls. STEPTRACE_LAUNCH_CALLBACKS=both: the runtime's too,
	 * as before (the way back, and the A/B switch of record.md's measurement). */
	const char *lc = getenv("STEPTRACE_LAUNCH_CALLBACKS");
	bool driver_only = domain == CUPTI_CB_DOMAIN_RUNTIME_API && !calls && !apiq.on && !(lc && !strcmp(lc, "both"));

	for (cbid = 1; cbid < size; cbid++) {
		const char *name = NULL;

		if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name)
			continue;
		classes[cbid] = classify(api_base_name(name, buf, sizeof(buf)));
		if (driver_only && (classes[cbid] == CB_LAUNCH || classes[cbid] == CB_COPY || classes[cbid] == CB_ALLOC))
			classes[cbid] = CB_NONE;
		if (calls && classes[cbid] == CB_NONE && !api_is_query(buf))
			classes[cbid] = CB_CALL;
		if (classes[cbid] != CB_NONE &&
		    CUPTI_CHECK(cuptiEnableCallback(1, cap.subscriber, domain, cbid)))
			return -1;
	}
	return 0;
}

/* ---- activity buffers ------------------------------------------------ */

static uint8_t *pool_get(void)
{
	uint8_t *b = NULL;

	pthread_mutex_lock(&cap.pool_lock);
	if (cap.pool_free > 0) {
		b = cap.pool[--cap.pool_free];
	} else if (cap.pool_allocated < BUFFER_MAX) {
		b = calloc(1, BUFFER_BYTES);   /* zeroed: see ZEROED_OUT_ACTIVITY_BUFFER */
		if (b)
			cap.pool_allocated++;
	}
	pthread_mutex_unlock(&cap.pool_lock);
	return b;
}

static void pool_put(uint8_t *b)
{
	pthread_mutex_lock(&cap.pool_lock);
	if (cap.pool_free < BUFFER_MAX)
		cap.pool[cap.pool_free++] = b;
	else
		free(b);   /* not ours; cannot happen */
	pthread_mutex_unlock(&cap.pool_lock);
}

/* Frees the pooled buffers; buffers CUPTI still holds are left to it. */
static void pool_release(void)
{
	pthread_mutex_lock(&cap.pool_lock);
	while (cap.pool_free > 0) {
		free(cap.pool[--cap.pool_free]);
		cap.pool_allocated--;
	}
	pthread_mutex_unlock(&cap.pool_lock);
}

/* Buffer traffic, for STEPTRACE_DEBUG_BUFFERS (issue 23: where --ddp naive's drops come from). */
static struct {
	_Atomic uint64_t requested, denied, completed, empty, records_valid;
	_Atomic uint64_t ctx_dropped;    /* dropped in a context's queue (kernels, copies), not yet booked */
	_Atomic uint64_t global_dropped, ctx_dropped_all;
} bufstat;

static void CUPTIAPI on_buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
	uint64_t t0 = cost_ticks();

	*buffer = pool_get();
	*size = *buffer ? BUFFER_BYTES : 0;
	*max_records = 0;
	bufstat.requested++;
	if (!*buffer)
		bufstat.denied++;
	cost_end(COST_CALLBACK, t0, 0);
}

/* ---- the decoder thread (activity.c decodes) ------------------------ */

/*
 * CUPTI cannot say which kind a dropped record was; the bundle's footer
 * counts drops per kind, so they are booked under "kernel", by far the most
 * numerous kind, and the loud warning at the end says so.
 */
static void count_drops_locked(void)
{
	size_t dropped = 0;

	if (cuptiActivityGetNumDroppedRecords(NULL, 0, &dropped) == CUPTI_SUCCESS && dropped) {
		bufstat.global_dropped += dropped;
		cap.dropped += dropped;
		rec_session_count_dropped_locked(cap.s, ST_KERNEL, dropped);
	}
	dropped = (size_t)atomic_exchange(&bufstat.ctx_dropped, 0);
	bufstat.ctx_dropped_all += dropped;
	if (dropped) {
		cap.dropped += dropped;
		rec_session_count_dropped_locked(cap.s, ST_KERNEL, dropped);
	}
}

/*
 * Decodes one completed buffer into the session and gives it back to the
 * pool zeroed: CUPTI is told our buffers come zeroed, or it would zero each
 * new buffer itself on the launching thread, a stall inside a step.
 */
static void decode_buffer(uint8_t *buffer, size_t valid)
{
	struct rec_session *s = cap.s;
	CUpti_Activity *rec = NULL;

	if (s) {
		rec_session_lock(s);
		while (valid && cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS)
			decode(rec);
		count_drops_locked();
		api_drain_locked(s);
		cost_drain_locked(s);
		cupti_cost_drain_locked(s);
		if (cap.drain)
			cap.drain(s);
		rec_session_unlock(s);
	}
	memset(buffer, 0, BUFFER_BYTES);
	pool_put(buffer);
}

/* Runs the drain hook alone (capture_kick). */
static void drain_only(void)
{
	struct rec_session *s = cap.s;

	if (!s)
		return;
	rec_session_lock(s);
	api_drain_locked(s);
	cost_drain_locked(s);
	if (cap.drain)
		cap.drain(s);
	rec_session_unlock(s);
}

/* Decodes buffers in completion order once a session is attached. */
static void *decoder_main(void *arg)
{
	pthread_mutex_lock(&cap.queue_lock);
	for (;;) {
		struct done_buffer d = { NULL, 0 };
		bool kick;

		while (!cap.decoder_stop && (!cap.attached || (!cap.q_len && !cap.kick)))
			pthread_cond_wait(&cap.queue_filled, &cap.queue_lock);
		if (!cap.q_len && !cap.kick)
			break;              /* stopping, and nothing left */
		kick = cap.kick;
		cap.kick = false;
		if (cap.q_len) {
			d = cap.queue[cap.q_head];
			cap.q_head = (cap.q_head + 1) % BUFFER_MAX;
			cap.q_len--;
		}
		pthread_mutex_unlock(&cap.queue_lock);
		if (d.buf)
			decode_buffer(d.buf, d.valid);
		else if (kick)
			drain_only();
		pthread_mutex_lock(&cap.queue_lock);
	}
	pthread_mutex_unlock(&cap.queue_lock);
	return arg;
}

/* Decodes what is queued, then ends the thread. */
static void decoder_end(void)
{
	if (!cap.decoder_running)
		return;
	pthread_mutex_lock(&cap.queue_lock);
	cap.decoder_stop = true;
	pthread_cond_signal(&cap.queue_filled);
	pthread_mutex_unlock(&cap.queue_lock);
	pthread_join(cap.decoder, NULL);
	cap.decoder_running = false;
	cap.decoder_stop = false;
}

static void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer,
					 size_t size, size_t valid)
{
	uint64_t t0 = cost_ticks();
	bool queued = false;

	if (!buffer)
		return;
	bufstat.completed++;
	bufstat.records_valid += valid;
	if (!valid)
		bufstat.empty++;
	if (ctx) {   /* a context's queue: its drops are counted there, not in the global one */
		size_t d = 0;
		if (cuptiActivityGetNumDroppedRecords(ctx, stream, &d) == CUPTI_SUCCESS && d)
			bufstat.ctx_dropped += d;
	}
	pthread_mutex_lock(&cap.queue_lock);
	if (cap.decoder_running && cap.q_len < BUFFER_MAX) {
		cap.queue[(cap.q_head + cap.q_len) % BUFFER_MAX] = (struct done_buffer){ buffer, valid };
		cap.q_len++;
		queued = true;
		pthread_cond_signal(&cap.queue_filled);
	}
	pthread_mutex_unlock(&cap.queue_lock);
	if (!queued)
		decode_buffer(buffer, valid);   /* no decoder thread (start failed, or stopped) */
	cost_end(COST_CALLBACK, t0, 0);
}

/* ---- start and stop -------------------------------------------------- */

/*
 * Lets the current context's work finish, through the driver, which is
 * loaded by then: the capture itself needs no CUDA runtime.
 */
static void sync_device(void)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	CUresult (*get_current)(CUcontext *) = NULL;
	CUresult (*synchronize)(void) = NULL;
	CUcontext ctx = NULL;

	if (!h)
		return;
	*(void **)&get_current = dlsym(h, "cuCtxGetCurrent");
	*(void **)&synchronize = dlsym(h, "cuCtxSynchronize");
	if (get_current && synchronize && get_current(&ctx) == CUDA_SUCCESS && ctx)
		synchronize();
	dlclose(h);
}

void capture_set_hooks(void (*on_context)(void *ctx, uint32_t device),
		       void (*drain)(struct rec_session *s))
{
	cap.on_context = on_context;
	cap.drain = drain;
}

void capture_set_profiler_hook(void (*on_profiler)(bool start, uint64_t t))
{
	cap.on_profiler = on_profiler;
}

void capture_set_lead(void (*stackless)(void))
{
	cap.stackless = stackless;
}

void capture_set_before_launch(void (*before_launch)(void))
{
	cap.before_launch = before_launch;
}

void capture_set_lead_op(uint32_t op)
{
	atomic_store_explicit(&lead_op, op, memory_order_relaxed);
}

void capture_attach(struct rec_session *s)
{
	pthread_mutex_lock(&cap.queue_lock);
	cap.s = s;
	cap.attached = true;
	pthread_cond_signal(&cap.queue_filled);
	pthread_mutex_unlock(&cap.queue_lock);
}

void capture_kick(void)
{
	pthread_mutex_lock(&cap.queue_lock);
	if (cap.decoder_running) {
		cap.kick = true;
		pthread_cond_signal(&cap.queue_filled);
	}
	pthread_mutex_unlock(&cap.queue_lock);
}

static void capture_atexit(void)
{
	if (cb_counting)
		cb_counts_print();
	/* A path that exits without capture_stop (a library calling exit()):
	 * save what CUPTI holds; the bundle ends without a footer. */
	if (!cap.active)
		return;
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	decoder_end();
	cap.active = false;
	if (cap.s)
		rec_session_abort(cap.s);
}

void capture_forget(void)
{
	/* The child of a fork: no decoder thread, and the bundle is the parent's. */
	cap.active = false;
	cap.decoder_running = false;
	cost_forget();
	cap.s = NULL;
	cap.attached = false;
	cap.q_len = 0;
}

/* Switches off what tracing_on switched on: activity kinds, API records, API callbacks. */
static void tracing_off(void)
{
	uint32_t i;

	for (i = 0; i < cap.enabled; i++)
		cuptiActivityDisable(activity_kinds[i]);
	cap.enabled = 0;
	if (cap.api_work) {
		(void)api_calls(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, false, 0);
		(void)api_calls(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, false, 0);
		cap.api_work = false;
	}
	if (cap.subscriber) {
		cuptiEnableDomain(0, cap.subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
		cuptiEnableDomain(0, cap.subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
	}
}

static void disable_all(void)
{
	tracing_off();
	if (cap.subscriber) {
		cuptiUnsubscribe(cap.subscriber);
		cap.subscriber = NULL;
	}
}

/*
 * The tracing a recording needs, on: the API callbacks (launches, copies,
 * allocations: their ops), the activity kinds and the API records the
 * filter keeps. 0, or -1 (one error line) with what it enabled left on.
 */
static int tracing_on(void)
{
	const char *off = getenv("STEPTRACE_CUPTI_OFF");
	bool callbacks = !off || !strstr(off, "callbacks");
	enum capture_api api = (enum capture_api)cap.api;
	bool lean = cap.lean && !cap.midway;
	/* midway, the work filter's API events come from the callbacks (see cap.midway);
	 * STEPTRACE_MIDWAY_API=kinds: from CUPTI's API records, as before (a diagnostic, for A/B runs) */
	const char *mid = getenv("STEPTRACE_MIDWAY_API");
	bool calls = callbacks && cap.midway && api == CAPTURE_API_WORK && !(mid && !strcmp(mid, "kinds"));
	uint32_t i;

	cap.sync_derived = false;
	atomic_fetch_add(&api_epoch, 1);
	apiq.on = api == CAPTURE_API_LAUNCHES || calls;
	if (callbacks &&
	    (subscribe_domain(CUPTI_CB_DOMAIN_RUNTIME_API, cap.rt_class, CUPTI_RUNTIME_TRACE_CBID_SIZE, calls) ||
	     subscribe_domain(CUPTI_CB_DOMAIN_DRIVER_API, cap.drv_class, CUPTI_DRIVER_TRACE_CBID_SIZE, calls)))
		return -1;
	for (i = 0; i < N_ACTIVITY_KINDS; i++) {
		static const char *const names[] = { "kernel", "memcpy", "peer", "memset", "runtime", "driver",
						     "marker", "memory2", "overhead", "sync" };
		cap.enabled = i + 1;
		if (off && strstr(off, names[i]))
			continue;
		if ((apiq.on || (api == CAPTURE_API_WORK && lean)) &&
		    (activity_kinds[i] == CUPTI_ACTIVITY_KIND_RUNTIME ||
		     activity_kinds[i] == CUPTI_ACTIVITY_KIND_DRIVER)) {
			bool rt = activity_kinds[i] == CUPTI_ACTIVITY_KIND_RUNTIME;

			/* launches, or work midway: the callbacks make the API events; work: call by call */
			cap.api_work = !apiq.on;
			if (cap.api_work &&
			    api_calls(rt ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API,
				      rt ? CUPTI_RUNTIME_TRACE_CBID_SIZE : CUPTI_DRIVER_TRACE_CBID_SIZE, false, 1))
				return -1;
			continue;
		}
		/* see capture_lean; needs the API records of the work filter */
		if (activity_kinds[i] == CUPTI_ACTIVITY_KIND_SYNCHRONIZATION && lean && !cap.cupti_sync &&
		    api == CAPTURE_API_WORK && (!off || !strstr(off, "runtime"))) {
			cap.sync_derived = true;
			continue;
		}
		if (CUPTI_CHECK(cuptiActivityEnable(activity_kinds[i])))
			return -1;
	}
	/* After the kinds: enabling RUNTIME or DRIVER resets per-call settings. */
	if (api == CAPTURE_API_WORK && !lean && !apiq.on &&
	    (api_calls(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, true, 0) ||
	     api_calls(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, true, 0)))
		return -1;
	return 0;
}

static int decoder_start(void)
{
	cap.q_head = cap.q_len = 0;
	if (pthread_create(&cap.decoder, NULL, decoder_main, NULL))
		return error("cannot start the recorder's decoder thread");
	cap.decoder_running = true;
	return 0;
}

void capture_armed(bool on)
{
	cap.armed = on;
}

int capture_start(struct rec_session *s, uint32_t steps, enum capture_api api)
{
	static bool atexit_registered;
	uint32_t i;

	if (cap.active)
		return error("CUPTI capture is already running");
	cap.s = s;
	cap.attached = s != NULL;
	cap.sync_derived = false;
	cap.api = api;
	cb_counting = getenv("STEPTRACE_CALLBACK_COUNTS") != NULL;
	apiq.on = api == CAPTURE_API_LAUNCHES;
	cap.steps = calloc(steps ? steps : 1, sizeof(*cap.steps));
	if (!cap.steps)
		return error("out of memory for %u step counters", steps);
	cap.n_steps = steps;
	atomic_store(&cap.bucket, &cap.outside);

	uint8_t *pre[BUFFER_PREALLOC];
	for (i = 0; i < BUFFER_PREALLOC; i++) {
		pre[i] = pool_get();
		if (pre[i])
			memset(pre[i], 0, BUFFER_BYTES);   /* fault its pages in now, not in a step */
	}
	for (i = 0; i < BUFFER_PREALLOC; i++)
		if (pre[i])
			pool_put(pre[i]);
	if (!cap.armed && decoder_start())
		goto fail;
	/* STEPTRACE_CUPTI_OFF=callbacks,driver,marker,...: a diagnostic for
	 * finding where recording overhead goes; bundles made with it are
	 * incomplete by design. */
	const char *off = getenv("STEPTRACE_CUPTI_OFF");
	bool callbacks = !off || !strstr(off, "callbacks");
	if (callbacks || cap.on_context) {
		if (CUPTI_CHECK(cuptiSubscribe(&cap.subscriber, (CUpti_CallbackFunc)on_api_callback, NULL)))
			goto fail;
		if (cap.on_context &&
		    CUPTI_CHECK(cuptiEnableCallback(1, cap.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
						    CUPTI_CBID_RESOURCE_CONTEXT_CREATED)))
			goto fail;
	}
	/* graph nodes take the op open when they are made (see `nodes`) */
	if (callbacks &&
	    (CUPTI_CHECK(cuptiEnableCallback(1, cap.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
					     CUPTI_CBID_RESOURCE_GRAPHNODE_CREATED)) ||
	     CUPTI_CHECK(cuptiEnableCallback(1, cap.subscriber, CUPTI_CB_DOMAIN_RESOURCE,
					     CUPTI_CBID_RESOURCE_GRAPHNODE_CLONED))))
		goto fail;
	uint8_t zeroed = 1;
	size_t zeroed_size = sizeof(zeroed);
	if (CUPTI_CHECK(cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_ZEROED_OUT_ACTIVITY_BUFFER,
						  &zeroed_size, &zeroed)) ||
	    CUPTI_CHECK(cuptiSetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM)) ||
	    CUPTI_CHECK(cuptiActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed)))
		goto fail;
	/* armed: nothing traced until capture_resume (resource callbacks alone cost no launch) */
	cap.paused = cap.armed;
	if (!cap.armed && tracing_on())
		goto fail;
	cap.active = true;
	if (!atexit_registered && atexit(capture_atexit) == 0)
		atexit_registered = true;
	return 0;
fail:
	disable_all();
	cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
	decoder_end();
	cap.s = NULL;
	cap.attached = false;
	free(cap.steps);
	cap.steps = NULL;
	cap.n_steps = 0;
	return -1;
}

int capture_resume(struct rec_session *s)
{
	if (!cap.active || !cap.paused)
		return error("CUPTI capture is not paused");
	if (decoder_start())
		return -1;
	pthread_mutex_lock(&cap.queue_lock);
	cap.s = s;
	cap.attached = true;
	pthread_mutex_unlock(&cap.queue_lock);
	cost_resume();   /* the recorder's time counts again, from the session's first step */
	cap.paused = false;
	cap.midway = true;
	if (tracing_on()) {
		capture_pause();
		return -1;
	}
	return 0;
}

/* Every buffer CUPTI holds decoded into cap.s, then drained (the session lock taken here). */
static int flush_and_drain(void)
{
	struct rec_session *s;
	int rc = 0;

	/* Let every kernel finish so its record is complete, then take them all. */
	sync_device();
	if (CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)))
		rc = -1;
	tracing_off();
	if (CUPTI_CHECK(cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED)))
		rc = -1;
	decoder_end();   /* every buffer CUPTI handed back is decoded now */
	s = cap.s;
	cost_finish();   /* every thread's time so far, for the drain below */
	if (s) {
		rec_session_lock(s);
		count_drops_locked();
		api_drain_locked(s);
		cost_drain_locked(s);
		cupti_cost_drain_locked(s);
		if (cap.drain)
			cap.drain(s);
		/* Ends whose start never came: their starts were lost. */
		cap.unpaired_ends = cap.n_early;
		rec_session_count_dropped_locked(s, ST_RANGE, cap.n_early);
		cap.s = NULL;   /* a buffer CUPTI hands back after this is not decoded */
		rec_session_unlock(s);
	}
	cap.attached = false;
	capture_op_end();
	return rc;
}

int capture_pause(void)
{
	int rc;

	if (!cap.active || cap.paused)
		return 0;
	rc = flush_and_drain();
	cap.paused = true;
	cap.n_early = 0;
	cap.n_ranges = 0;
	return rc;
}

int capture_stop(void)
{
	int rc = 0;

	if (!cap.active)
		return 0;
	if (!cap.paused)
		rc = flush_and_drain();
	cap.active = false;
	cap.paused = false;
	disable_all();
	if (getenv("STEPTRACE_DEBUG_BUFFERS"))
		fprintf(stderr, "steptrace: CUPTI buffers: %" PRIu64 " requested (%" PRIu64 " denied), %" PRIu64
			" completed (%" PRIu64 " empty, %" PRIu64 " bytes of records), %d allocated; dropped so far: %"
			PRIu64 " global, %" PRIu64 " in contexts\n",
			(uint64_t)bufstat.requested, (uint64_t)bufstat.denied, (uint64_t)bufstat.completed,
			(uint64_t)bufstat.empty, (uint64_t)bufstat.records_valid, cap.pool_allocated,
			(uint64_t)bufstat.global_dropped, (uint64_t)bufstat.ctx_dropped_all);
	pool_release();
	corr_map_release(&corrs);   /* unsubscribed and decoded: nothing reads or writes it now */
	node_release();
	if (cap.node_oom)
		rc = error("out of memory mapping graph nodes to ops: some graph kernels have no op");
	cap.node_oom = false;
	return rc;
}

int capture_counts_of(int64_t index, struct capture_counts *out)
{
	struct counters *c;

	if (index < 0)
		c = &cap.outside;
	else if (index < (int64_t)cap.n_steps)
		c = &cap.steps[index];
	else
		return -1;
	out->launches = atomic_load(&c->launches);
	out->copies = atomic_load(&c->copies);
	return 0;
}

void capture_totals(struct capture_totals *t)
{
	t->dropped = cap.dropped;
	t->unattributed = cap.unattributed;
	t->open_ranges = cap.n_ranges;
	t->unpaired_ends = cap.unpaired_ends;
}
