/*
 * activity.c: CUPTI's activity records decoded into the session's events
 * (record/capture.h has the capture; capture_internal.h what the two files
 * share). Runs on the capture's decoder thread, or where a buffer
 * completes without one, always under the session lock, which guards the
 * decode state: the kernel and API name caches, the NVTX ranges still
 * open, each thread's depth. Every kernel, memcpy and memset takes the op
 * its launch call (by correlation id) or its graph node was given.
 */
#define _GNU_SOURCE
#include <cupti.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "record/capture_internal.h"
#include "record/corr_map.h"
#include "record/cupti_cost.h"
#include "record/session.h"

extern char *__cxa_demangle(const char *mangled, char *buf, size_t *len, int *status)
	__attribute__((weak));

static uint32_t intern_demangled(const char *name)
{
	char *plain = NULL;
	uint32_t id;
	int status = -1;

	if (__cxa_demangle && name[0] == '_' && name[1] == 'Z')
		plain = __cxa_demangle(name, NULL, NULL, &status);
	id = rec_session_intern_locked(cap.s, status == 0 && plain ? plain : name);
	free(plain);
	return id;
}

/*
 * The name caches hold string ids of one bundle: a later session (an armed
 * process's next trigger, record/inject.c) has a string table of its own, so
 * they are emptied when the session changes and its names interned again.
 */
static void names_for_session(void)
{
	if (!cap.s || cap.names_serial == cap.s->serial)
		return;
	memset(cap.rt_names, 0, sizeof(cap.rt_names));
	memset(cap.drv_names, 0, sizeof(cap.drv_names));
	if (cap.kernel_names)
		memset(cap.kernel_names, 0, cap.kernel_names_cap * sizeof(*cap.kernel_names));
	cap.kernel_names_n = 0;
	cap.names_serial = cap.s->serial;
}

static size_t name_hash(const char *p, size_t cap_mask)
{
	uint64_t h = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;

	return (size_t)(h >> 20) & cap_mask;
}

static int kernel_names_grow(void)
{
	size_t ncap = cap.kernel_names_cap ? cap.kernel_names_cap * 2 : 1024, i;
	struct name_slot *slots = calloc(ncap, sizeof(*slots));

	if (!slots)
		return -1;
	for (i = 0; i < cap.kernel_names_cap; i++) {
		struct name_slot *o = &cap.kernel_names[i];
		size_t j = name_hash(o->key, ncap - 1);

		if (!o->key)
			continue;
		while (slots[j].key)
			j = (j + 1) & (ncap - 1);
		slots[j] = *o;
	}
	free(cap.kernel_names);
	cap.kernel_names = slots;
	cap.kernel_names_cap = ncap;
	return 0;
}

/* Kernel name id by CUPTI's name pointer: one hash probe per record, demangling once per kernel. */
static uint32_t kernel_name(const char *name)
{
	size_t j;

	if (!name)
		return 0;
	names_for_session();
	if ((cap.kernel_names_n + 1) * 2 > cap.kernel_names_cap && kernel_names_grow())
		return intern_demangled(name);
	j = name_hash(name, cap.kernel_names_cap - 1);
	while (cap.kernel_names[j].key) {
		if (cap.kernel_names[j].key == name)
			return cap.kernel_names[j].id;
		j = (j + 1) & (cap.kernel_names_cap - 1);
	}
	cap.kernel_names[j].key = name;
	cap.kernel_names[j].id = intern_demangled(name);
	cap.kernel_names_n++;
	return cap.kernel_names[j].id;
}

static uint32_t api_name(CUpti_CallbackDomain domain, uint32_t cbid)
{
	uint32_t *slot = NULL;
	const char *name = NULL;
	char buf[128];

	names_for_session();
	if (domain == CUPTI_CB_DOMAIN_RUNTIME_API && cbid < CUPTI_RUNTIME_TRACE_CBID_SIZE)
		slot = &cap.rt_names[cbid];
	else if (domain == CUPTI_CB_DOMAIN_DRIVER_API && cbid < CUPTI_DRIVER_TRACE_CBID_SIZE)
		slot = &cap.drv_names[cbid];
	if (slot && *slot)
		return *slot;
	if (cuptiGetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name)
		snprintf(buf, sizeof(buf), "%s cbid %u",
			 domain == CUPTI_CB_DOMAIN_DRIVER_API ? "driver" : "runtime", cbid);
	else
		api_base_name(name, buf, sizeof(buf));
	if (!slot)
		return rec_session_intern_locked(cap.s, buf);
	*slot = rec_session_intern_locked(cap.s, buf);
	return *slot;
}

/* The op of an activity: its graph node's when a graph launched it, else its launch call's. */
static uint32_t op_of(uint32_t correlation, uint64_t graph_node)
{
	uint32_t op = graph_node ? node_op(graph_node) : 0;

	if (!op)
		op = corr_map_get(&corrs, correlation);

	if (!op)
		cap.unattributed++;
	return op;
}

/*
 * CUPTI gives a kernel, copy or memset 0 for both its start and end when it
 * could not take its timestamps (its device buffers full, or kernel records
 * off while the copy ran): placed at 0 it would stretch its step over the
 * whole run, so it is counted as a dropped record of its kind instead.
 */
static bool untimed(int kind, uint64_t start, uint64_t end)
{
	if (start || end)
		return false;
	rec_session_count_dropped_locked(cap.s, kind, 1);
	return true;
}

static void add(struct st_event *ev, uint64_t start, uint64_t end)
{
	ev->start = rec_session_time(cap.s, start);
	ev->end = end > start ? rec_session_time(cap.s, end) : ev->start;
	rec_session_add_locked(cap.s, ev);
}

static void decode_kernel(const CUpti_ActivityKernel10 *k)
{
	struct st_event ev = { .kind = ST_KERNEL };

	if (k->name && cupti_cost_owns(0, 0, k->name))
		return;   /* the launch cost's own (record/cupti_cost.c) */
	if (untimed(ST_KERNEL, k->start, k->end))
		return;

	ev.kernel.name = kernel_name(k->name);
	ev.kernel.grid[0] = (uint32_t)k->gridX;
	ev.kernel.grid[1] = (uint32_t)k->gridY;
	ev.kernel.grid[2] = (uint32_t)k->gridZ;
	ev.kernel.block[0] = (uint32_t)k->blockX;
	ev.kernel.block[1] = (uint32_t)k->blockY;
	ev.kernel.block[2] = (uint32_t)k->blockZ;
	ev.kernel.registers = k->registersPerThread;
	ev.kernel.static_smem = (uint32_t)k->staticSharedMemory;
	ev.kernel.dynamic_smem = (uint32_t)k->dynamicSharedMemory;
	ev.kernel.stream = k->streamId;
	ev.kernel.device = k->deviceId;
	ev.kernel.correlation = k->correlationId;
	ev.kernel.op = op_of(k->correlationId, k->graphNodeId);
	add(&ev, k->start, k->end);
}

static void decode_memcpy(const CUpti_ActivityMemcpy6 *m)
{
	struct st_event ev = { .kind = ST_MEMCPY };

	if (untimed(ST_MEMCPY, m->start, m->end))
		return;
	ev.memcpy.copy_kind = m->copyKind;
	ev.memcpy.src_kind = m->srcKind;
	ev.memcpy.dst_kind = m->dstKind;
	ev.memcpy.bytes = m->bytes;
	ev.memcpy.stream = m->streamId;
	ev.memcpy.device = m->deviceId;
	ev.memcpy.correlation = m->correlationId;
	ev.memcpy.op = op_of(m->correlationId, m->graphNodeId);
	add(&ev, m->start, m->end);
}

/* A copy between two devices (CUPTI's MEMCPY2): a memcpy of kind peer to peer, on the device that ran it. */
static void decode_memcpy_ptop(const CUpti_ActivityMemcpyPtoP4 *m)
{
	struct st_event ev = { .kind = ST_MEMCPY };

	if (untimed(ST_MEMCPY, m->start, m->end))
		return;
	ev.memcpy.copy_kind = m->copyKind;
	ev.memcpy.src_kind = m->srcKind;
	ev.memcpy.dst_kind = m->dstKind;
	ev.memcpy.bytes = m->bytes;
	ev.memcpy.stream = m->streamId;
	ev.memcpy.device = m->deviceId;
	ev.memcpy.correlation = m->correlationId;
	ev.memcpy.op = op_of(m->correlationId, m->graphNodeId);
	add(&ev, m->start, m->end);
}

static void decode_memset(const CUpti_ActivityMemset4 *m)
{
	struct st_event ev = { .kind = ST_MEMSET };

	if (untimed(ST_MEMSET, m->start, m->end))
		return;
	ev.memset.bytes = m->bytes;
	ev.memset.value = m->value;
	ev.memset.stream = m->streamId;
	ev.memset.device = m->deviceId;
	ev.memset.correlation = m->correlationId;
	ev.memset.op = op_of(m->correlationId, m->graphNodeId);
	add(&ev, m->start, m->end);
}

static void decode_api(const CUpti_ActivityAPI *a)
{
	struct st_event ev = { .kind = ST_API };
	bool driver = a->kind == CUPTI_ACTIVITY_KIND_DRIVER;

	if (cupti_cost_owns(a->start, a->threadId, NULL))
		return;   /* the launch cost's own (record/cupti_cost.c) */

	ev.api.name = api_name(driver ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API,
			       a->cbid);
	ev.api.domain = driver ? 1 : 0;
	ev.api.cbid = a->cbid;
	ev.api.status = (int32_t)a->returnValue;
	ev.api.thread = a->threadId;
	ev.api.correlation = a->correlationId;
	add(&ev, a->start, a->end);

	const uint8_t *sync = driver ? cap.drv_sync : cap.rt_sync;
	uint32_t n = driver ? CUPTI_DRIVER_TRACE_CBID_SIZE : CUPTI_RUNTIME_TRACE_CBID_SIZE;

	if (cap.sync_derived && a->cbid < n && sync[a->cbid]) {
		struct st_event y = { .kind = ST_SYNC };

		y.sync.type = sync[a->cbid];
		y.sync.stream = UINT32_MAX;   /* not known from the call: see capture_lean */
		y.sync.thread = a->threadId;
		y.sync.correlation = a->correlationId;
		add(&y, a->start, a->end);
	}
}

static struct thread_depth *thread_depth(uint64_t thread)
{
	size_t i;

	for (i = 0; i < cap.n_threads; i++)
		if (cap.threads[i].thread == thread)
			return &cap.threads[i];
	if (ALLOC_GROW(cap.threads, cap.n_threads + 1, cap.threads_cap))
		return NULL;
	cap.threads[cap.n_threads] = (struct thread_depth){ .thread = thread };
	return &cap.threads[cap.n_threads++];
}

/* A new slot at the end of a range array, or NULL. */
static struct open_range *range_push(struct open_range **arr, size_t *n, size_t *cap_)
{
	if (ALLOC_GROW(*arr, *n + 1, *cap_))
		return NULL;
	return &(*arr)[(*n)++];
}

/* Index + 1 of the range with `id`, searching from the back (push/pop ends are last); 0 if none. */
static size_t range_find(const struct open_range *arr, size_t n, uint32_t id)
{
	while (n > 0 && arr[n - 1].id != id)
		n--;
	return n;
}

static void range_remove(struct open_range *arr, size_t *n, size_t i)
{
	memmove(&arr[i], &arr[i + 1], (*n - i - 1) * sizeof(*arr));
	(*n)--;
}

static void range_emit(const struct open_range *r, uint64_t end)
{
	struct st_event ev = { .kind = ST_RANGE };

	ev.range.name = r->name;
	ev.range.thread = r->thread;
	ev.range.depth = r->depth;
	ev.range.domain = r->domain;
	add(&ev, r->start, end);
}

static void range_open(const CUpti_ActivityMarker2 *m, uint64_t thread)
{
	struct thread_depth *td = thread_depth(thread);
	struct open_range r = { .id = m->id, .start = m->timestamp, .thread = thread }, *slot;
	size_t early = range_find(cap.early_ends, cap.n_early, m->id);

	if (!td)
		return;
	r.name = rec_session_intern_locked(cap.s, m->name);
	r.domain = rec_session_intern_locked(cap.s, m->domain);
	r.depth = td->open;
	if (early) {
		/* Its end came first (buffers completed out of order): close it now. */
		range_emit(&r, cap.early_ends[early - 1].start);
		range_remove(cap.early_ends, &cap.n_early, early - 1);
		return;
	}
	slot = range_push(&cap.ranges, &cap.n_ranges, &cap.ranges_cap);
	if (!slot)
		return;
	*slot = r;
	td->open++;
}

/* Pairs an end with its start; an end without one waits for it (see range_open). */
static void range_close(const CUpti_ActivityMarker2 *m)
{
	struct thread_depth *td;
	struct open_range r, *early;
	size_t i = range_find(cap.ranges, cap.n_ranges, m->id);

	if (i == 0) {
		early = range_push(&cap.early_ends, &cap.n_early, &cap.early_cap);
		if (early)
			*early = (struct open_range){ .id = m->id, .start = m->timestamp };
		return;
	}
	r = cap.ranges[i - 1];
	range_remove(cap.ranges, &cap.n_ranges, i - 1);
	td = thread_depth(r.thread);
	if (td && td->open > 0)
		td->open--;
	range_emit(&r, m->timestamp);
}

static void decode_marker(const CUpti_ActivityMarker2 *m)
{
	uint64_t thread = m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? m->objectId.pt.threadId : 0;

	if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START) {
		range_open(m, thread);
	} else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END) {
		range_close(m);
	} else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS) {
		struct st_event ev = { .kind = ST_RANGE };
		struct thread_depth *td = thread_depth(thread);

		ev.range.name = rec_session_intern_locked(cap.s, m->name);
		ev.range.domain = rec_session_intern_locked(cap.s, m->domain);
		ev.range.thread = thread;
		ev.range.depth = td ? td->open : 0;
		add(&ev, m->timestamp, m->timestamp);
	}
}

static void decode_memory(const CUpti_ActivityMemory4 *m)
{
	struct st_event ev = { 0 };

	/* Device memory only: the bundle's memory timeline is the GPU's. */
	if (m->memoryKind != CUPTI_ACTIVITY_MEMORY_KIND_DEVICE)
		return;
	if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION)
		ev.kind = ST_ALLOC;
	else if (m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE)
		ev.kind = ST_FREE;
	else
		return;
	ev.mem.address = m->address;
	ev.mem.size = m->bytes;
	ev.mem.category = ST_MEM_UNKNOWN;
	ev.mem.op = corr_map_get(&corrs, m->correlationId);
	ev.mem.source = ST_SRC_DRIVER;
	ev.mem.device = m->deviceId;
	add(&ev, m->timestamp, m->timestamp);
}

static void decode_overhead(const CUpti_ActivityOverhead3 *o)
{
	struct st_event ev = { .kind = ST_OVERHEAD };

	ev.overhead.kind = o->overheadKind;
	ev.overhead.thread = o->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD ? o->objectId.pt.threadId : 0;
	add(&ev, o->start, o->end);
}

static void decode_sync(const CUpti_ActivitySynchronization2 *y)
{
	struct st_event ev = { .kind = ST_SYNC };

	ev.sync.type = y->type;
	ev.sync.stream = y->streamId;
	ev.sync.thread = 0;   /* not in the record; its API call (same correlation) has it */
	ev.sync.correlation = y->correlationId;
	add(&ev, y->start, y->end);
}

void decode(const CUpti_Activity *rec)
{
	switch (rec->kind) {
	case CUPTI_ACTIVITY_KIND_KERNEL:
	case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
		decode_kernel((const CUpti_ActivityKernel10 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY:
		decode_memcpy((const CUpti_ActivityMemcpy6 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMCPY2:
		decode_memcpy_ptop((const CUpti_ActivityMemcpyPtoP4 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMSET:
		decode_memset((const CUpti_ActivityMemset4 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_RUNTIME:
	case CUPTI_ACTIVITY_KIND_DRIVER:
		decode_api((const CUpti_ActivityAPI *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MARKER:
		decode_marker((const CUpti_ActivityMarker2 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_MEMORY2:
		decode_memory((const CUpti_ActivityMemory4 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_OVERHEAD:
		decode_overhead((const CUpti_ActivityOverhead3 *)rec);
		break;
	case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
		decode_sync((const CUpti_ActivitySynchronization2 *)rec);
		break;
	default:
		break;
	}
}

/* Writes the API events the callbacks queued (--api launches); the session lock is held. */
void api_drain_locked(struct rec_session *s)
{
	struct st_event *q;
	size_t n;

	if (!apiq.on)
		return;
	pthread_mutex_lock(&apiq.lock);
	q = apiq.q;
	n = apiq.n;
	apiq.q = NULL;
	apiq.n = apiq.cap = 0;
	pthread_mutex_unlock(&apiq.lock);
	for (size_t i = 0; i < n; i++) {
		struct st_event *ev = &q[i];
		uint64_t start = ev->start, end = ev->end;

		ev->api.name = api_name(ev->api.domain ? CUPTI_CB_DOMAIN_DRIVER_API : CUPTI_CB_DOMAIN_RUNTIME_API,
					ev->api.cbid);
		add(ev, start, end);
	}
	free(q);
}
