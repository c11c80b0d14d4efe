/*
 * kineto.c: a torch.profiler trace (Kineto's Chrome trace JSON, as
 * tensorboard_trace_handler writes it) made into a bundle that reads like
 * a recording of `steptrace record -- COMMAND` (docs/import.md).
 *
 * Two passes over the file, each one event at a time (import/jstream.h):
 *
 * 1. kineto_scan: the metadata (distributedInfo, deviceProperties,
 *    baseTimeNanoseconds: Kineto writes some of them after traceEvents),
 *    the earliest time, and the CPU side's ranges (cpu_op, user_annotation),
 *    kept compact (the one part held in memory: ~64 bytes a range). From
 *    them: the range tree, the steps (ProfilerStep#N), the phases of each
 *    step, synthesised as the recorder's PyTorch mode names them
 *    (step/data, step/forward, step/backward, step/optimizer,
 *    step/zero_grad; the autograd thread's work under step/backward), and
 *    which range launched what (External id).
 * 2. kineto_write: the header, then the ranges and steps, then the GPU
 *    activities, API calls and allocator events as they are read, each GPU
 *    activity with the op of the CPU op that launched it; the ops last.
 *
 * What the trace lacks goes into Header.import_missing.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "import/kineto.h"
#include "import/jstream.h"
#include "lib/error.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/strpool.h"
#include "trace/bundle.h"

/* Ranges nested deeper are not written: a bundle's reader refuses them (trace/codec.c). */
#define RANGE_DEPTH_MAX 4096

/* Times past this many ns (146 years) are not a trace's. */
#define TIME_MAX_NS (INT64_C(1) << 62)

enum kcat {
	K_OTHER, K_CPU_OP, K_ANNOTATION, K_KERNEL, K_MEMCPY, K_MEMSET, K_RUNTIME, K_DRIVER, K_SYNC, K_MEMORY,
};

enum krange_kind { R_OP, R_ANNOTATION, R_STEP, R_SYNTH };

struct krange {
	int64_t start, end;   /* ns on the trace's own scale */
	uint64_t tid, ext;    /* thread; External id (0 none) */
	uint32_t name, sig;   /* string ids (st); sig: name with Input Dims and types, 0 none */
	uint32_t parent;      /* index + 1 of the enclosing range, 0 a root */
	uint32_t depth;
	uint8_t kind, phase, prio;
};

struct kmem {
	int64_t ts, bytes, total;   /* total: Total Allocated, -1 when the trace has none */
	uint64_t addr;
	uint32_t device;
	size_t order;               /* in the file: ties keep it */
};


struct device_props {
	int64_t id;
	char name[128];
	uint64_t memory;
	uint32_t cc_major, cc_minor, sms;
};

struct kineto_trace {
	char *path;
	struct strpool st;             /* own */
	struct krange *r;
	size_t n_r, alloc_r;
	/* metadata */
	bool has_dist, has_base;
	uint32_t rank, world_size;
	char backend[32], nccl_version[32], host[128];
	int64_t base_ns;
	uint32_t cuda_driver, cuda_runtime, cupti;   /* versions, 0 unknown */
	struct device_props *dev;
	size_t n_dev, alloc_dev;
	/* what the events held */
	int64_t t0;           /* the earliest time: the bundle's 0 */
	bool any_time;
	uint64_t pid;
	uint64_t kernels, copies, memsets, api, memory_events, shapes, cpu_ops, steps;
	uint64_t device_kernels[16];
	bool steps_on_threads;  /* ProfilerStep# on several threads: the main one kept */
	uint64_t main_tid;
	/* the allocator's [memory] events, written in time order */
	struct kmem *mem;
	size_t n_mem, alloc_mem;
	uint64_t other_devices;
	/* after structure(): External id -> range index + 1 */
	uint64_t *ext_keys;
	uint32_t *ext_vals;
	size_t ext_slots;
};

/* ---- strings -------------------------------------------------------------- */

/* The id of s (>= 1); 0 after one line (out of memory). */
static uint32_t intern(struct strpool *t, const char *s)
{
	uint32_t id;

	if (!strpool_intern(t, s, &id, NULL))
		return id;
	error("out of memory");
	return 0;
}

static const char *sname(const struct kineto_trace *t, uint32_t id)
{
	return strpool_str(&t->st, id);
}

/* ---- one event --------------------------------------------------------------- */

struct kev {
	int cat;
	char ph;
	const char *name;
	uint64_t tid, pid;
	int64_t ts, dur;      /* ns */
	json_t *args;         /* an object, or NULL */
};

static int bad(const char *path, uint64_t at, const char *what)
{
	return error("'%s' is not a trace this reads: %s (the event before byte %" PRIu64 ")", path, what, at);
}

/* A time in µs (Kineto's unit, ns as three decimals) as ns. 0, or -1 when not a finite time in range. */
static int micros(json_t *v, int64_t *ns)
{
	if (json_is_integer(v)) {
		json_int_t us = json_integer_value(v);

		if (us < -TIME_MAX_NS / 1000 || us > TIME_MAX_NS / 1000)
			return -1;
		*ns = (int64_t)us * 1000;
		return 0;
	}
	if (json_is_real(v)) {
		double x = json_real_value(v) * 1000.0;

		if (!isfinite(x) || x < -(double)TIME_MAX_NS || x > (double)TIME_MAX_NS)
			return -1;
		*ns = llround(x);
		return 0;
	}
	return -1;
}

/* An unsigned integer argument; `def` when absent. -1 when present and not one in [0, max]. */
static int arg_u64(json_t *args, const char *key, uint64_t max, uint64_t def, uint64_t *out)
{
	json_t *v = args ? json_object_get(args, key) : NULL;

	*out = def;
	if (!v)
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0 && (uint64_t)json_integer_value(v) <= max) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (json_is_real(v) && json_real_value(v) >= 0 && json_real_value(v) <= (double)max &&
	    json_real_value(v) == floor(json_real_value(v))) {   /* "blocks per SM" is a real; ints are sometimes written so */
		*out = (uint64_t)json_real_value(v);
		return 0;
	}
	return -1;
}

static int cat_of(const char *cat)
{
	static const struct { const char *name; int cat; } cats[] = {
		{ "cpu_op", K_CPU_OP }, { "user_annotation", K_ANNOTATION }, { "kernel", K_KERNEL },
		{ "gpu_memcpy", K_MEMCPY }, { "gpu_memset", K_MEMSET }, { "cuda_runtime", K_RUNTIME },
		{ "cuda_driver", K_DRIVER }, { "cuda_sync", K_SYNC }, { "cpu_instant_event", K_MEMORY },
		{ "Kernel", K_KERNEL }, { "Memcpy", K_MEMCPY }, { "Memset", K_MEMSET }, { "Runtime", K_RUNTIME },
		{ "Operator", K_CPU_OP },
	};

	for (size_t i = 0; i < sizeof(cats) / sizeof(cats[0]); i++)
		if (!strcmp(cat, cats[i].name))
			return cats[i].cat;
	return K_OTHER;
}

/*
 * The fields every event of a kind this reads has, checked. 1 for such an
 * event, 0 for one of another kind (metadata, flows, spans: skipped), -1
 * after one line.
 */
static int decode_event(const char *path, uint64_t at, json_t *e, struct kev *k)
{
	json_t *cat, *ph, *name, *v;
	const char *p;

	memset(k, 0, sizeof(*k));
	if (!json_is_object(e))
		return bad(path, at, "an element of traceEvents that is not an object");
	cat = json_object_get(e, "cat");
	ph = json_object_get(e, "ph");
	if (!json_is_string(ph) || !(p = json_string_value(ph))[0] || p[1])
		return ph ? bad(path, at, "an event whose \"ph\" is not one letter") : 0;
	k->ph = p[0];
	if (!cat && k->ph == 'i' && json_is_string(json_object_get(e, "name")) &&
	    !strcmp(json_string_value(json_object_get(e, "name")), "[memory]"))
		k->cat = K_MEMORY;   /* older PyTorch wrote its [memory] instants without a category */
	else if (!json_is_string(cat))
		return 0;
	else
		k->cat = cat_of(json_string_value(cat));
	if (k->cat == K_OTHER || (k->ph != 'X' && k->ph != 'i'))
		return 0;
	name = json_object_get(e, "name");
	if (!json_is_string(name))
		return bad(path, at, "an event without a \"name\" string");
	k->name = json_string_value(name);
	if (k->cat == K_MEMORY) {
		if (k->ph != 'i' || strcmp(k->name, "[memory]"))
			return 0;
	} else if (k->ph != 'X') {
		return 0;
	}
	if (micros(json_object_get(e, "ts"), &k->ts) || k->ts < 0)
		return bad(path, at, "an event whose \"ts\" is not a time in microseconds (a number from 0 to 2^62 ns)");
	if (k->ph == 'X') {
		if (micros(json_object_get(e, "dur"), &k->dur))
			return bad(path, at, "an event whose \"dur\" is not a duration in microseconds");
		if (k->dur < 0)
			return bad(path, at, "an event of a negative duration");
		if (k->ts > TIME_MAX_NS - k->dur)
			return bad(path, at, "an event that ends past 2^62 ns");
	}
	v = json_object_get(e, "tid");
	if (json_is_integer(v))
		k->tid = json_integer_value(v) < 0 ? (uint64_t)-(json_integer_value(v) + 1) + 1 : (uint64_t)json_integer_value(v);
	else if (v && !json_is_string(v))
		return bad(path, at, "an event whose \"tid\" is neither a number nor a string");
	v = json_object_get(e, "pid");
	if (json_is_integer(v) && json_integer_value(v) > 0)
		k->pid = (uint64_t)json_integer_value(v);
	k->args = json_object_get(e, "args");
	if (k->args && !json_is_object(k->args))
		return bad(path, at, "an event whose \"args\" is not an object");
	return 1;
}

/* ---- pass 1 ------------------------------------------------------------------- */

static bool prefix(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

static int add_range(struct kineto_trace *t, const struct kev *k, uint64_t at)
{
	struct krange *r;
	uint64_t ext;

	if (arg_u64(k->args, "External id", INT64_MAX, 0, &ext))
		return bad(t->path, at, "a CPU op whose \"External id\" is not a number");
	if (ALLOC_GROW(t->r, t->n_r + 1, t->alloc_r))
		return -1;
	r = &t->r[t->n_r];
	memset(r, 0, sizeof(*r));
	r->start = k->ts;
	r->end = k->ts + k->dur;
	r->tid = k->tid;
	r->ext = ext;
	r->kind = prefix(k->name, "ProfilerStep#") ? R_STEP : k->cat == K_CPU_OP ? R_OP : R_ANNOTATION;
	r->prio = r->kind == R_STEP ? 0 : 2;   /* of equal spans: a step, then a phase made here, then the rest */
	if (!(r->name = intern(&t->st, k->name)))
		return -1;
	if (k->cat == K_CPU_OP && !strcmp(k->name, "record_param_comms")) {
		/* a collective of torch.distributed: its message, for the communication op */
		json_t *coll = json_object_get(k->args, "Collective name"), *dt = json_object_get(k->args, "dtype");
		uint64_t nel;
		char sig[256];

		if (arg_u64(k->args, "In msg nelems", UINT64_C(1) << 50, 0, &nel))
			return bad(t->path, at, "a record_param_comms whose \"In msg nelems\" is not a count");
		snprintf(sig, sizeof(sig), "%s %" PRIu64 " %s", json_is_string(coll) ? json_string_value(coll) : "?", nel,
			 json_is_string(dt) ? json_string_value(dt) : "?");
		if (!(r->sig = intern(&t->st, sig)))
			return -1;
	} else if (k->cat == K_CPU_OP) {
		json_t *dims = json_object_get(k->args, "Input Dims");
		json_t *types = json_object_get(k->args, "Input type");

		t->cpu_ops++;
		if (dims) {
			char *d = json_dumps(dims, JSON_COMPACT | JSON_ENCODE_ANY);
			char *ty = types ? json_dumps(types, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
			size_t len = strlen(k->name) + (d ? strlen(d) : 0) + (ty ? strlen(ty) : 0) + 3;
			char *sig = malloc(len);

			if (sig) {
				snprintf(sig, len, "%s %s %s", k->name, d ? d : "", ty ? ty : "");
				r->sig = intern(&t->st, sig);
			}
			free(sig);
			free(d);
			free(ty);
			if (!r->sig)
				return error("out of memory");
			t->shapes++;
		}
	}
	t->n_r++;
	return 0;
}

static void see_time(struct kineto_trace *t, int64_t ts)
{
	if (!t->any_time || ts < t->t0)
		t->t0 = ts;
	t->any_time = true;
}

struct writer;
static int write_event(struct kineto_trace *t, json_t *e, uint64_t at, void *ctx);

static int scan_event(struct kineto_trace *t, json_t *e, uint64_t at, struct writer *check)
{
	struct kev k;
	int rc = decode_event(t->path, at, e, &k);
	uint64_t dev;

	if (rc <= 0)
		return rc;
	see_time(t, k.ts);
	/* what the second pass will read, checked now: it cannot fail but for the file's changing */
	if (k.cat != K_CPU_OP && k.cat != K_ANNOTATION && write_event(t, e, at, check) < 0)
		return -1;
	if (!t->pid && k.pid && (k.cat == K_CPU_OP || k.cat == K_RUNTIME))
		t->pid = k.pid;
	switch (k.cat) {
	case K_CPU_OP:
	case K_ANNOTATION:
		if (prefix(k.name, "ProfilerStep#"))
			t->steps++;
		return add_range(t, &k, at);
	case K_KERNEL:
	case K_MEMCPY:
	case K_MEMSET:
		if (arg_u64(k.args, "device", UINT32_MAX, 0, &dev))
			return bad(t->path, at, "a GPU activity whose \"device\" is not a number");
		if (k.cat == K_KERNEL) {
			t->kernels++;
			if (dev < 16)
				t->device_kernels[dev]++;
		}
		t->copies += k.cat == K_MEMCPY;
		t->memsets += k.cat == K_MEMSET;
		return 0;
	case K_RUNTIME:
	case K_DRIVER:
		t->api++;
		return 0;
	case K_MEMORY:
		t->memory_events++;
		return 0;
	default:
		return 0;
	}
}

static int scan_devices(struct kineto_trace *t, json_t *v)
{
	size_t i;
	json_t *d;

	if (!json_is_array(v))
		return error("'%s': \"deviceProperties\" is not an array", t->path);
	json_array_foreach(v, i, d) {
		struct device_props p = { 0 };
		json_t *name = json_object_get(d, "name");
		uint64_t x;

		if (!json_is_object(d))
			return error("'%s': an element of \"deviceProperties\" is not an object", t->path);
		p.id = json_is_integer(json_object_get(d, "id")) ? json_integer_value(json_object_get(d, "id")) : -1;
		snprintf(p.name, sizeof(p.name), "%s", json_is_string(name) ? json_string_value(name) : "");
		if (arg_u64(d, "totalGlobalMem", UINT64_MAX >> 1, 0, &p.memory) ||
		    arg_u64(d, "computeMajor", 1000, 0, &x) || (p.cc_major = (uint32_t)x, 0) ||
		    arg_u64(d, "computeMinor", 1000, 0, &x) || (p.cc_minor = (uint32_t)x, 0) ||
		    arg_u64(d, "numSms", 1u << 20, 0, &x) || (p.sms = (uint32_t)x, 0))
			return error("'%s': \"deviceProperties\" holds a value that is not a count", t->path);
		if (ALLOC_GROW(t->dev, t->n_dev + 1, t->alloc_dev))
			return -1;
		t->dev[t->n_dev++] = p;
	}
	return 0;
}

static int scan_dist(struct kineto_trace *t, json_t *v)
{
	uint64_t rank, size;
	json_t *b, *nv;

	if (!json_is_object(v))
		return error("'%s': \"distributedInfo\" is not an object", t->path);
	if (arg_u64(v, "rank", UINT32_MAX - 1, 0, &rank) || arg_u64(v, "world_size", UINT32_MAX, 0, &size))
		return error("'%s': distributedInfo's rank or world_size is not a count", t->path);
	if (size && rank >= size)
		return error("'%s': distributedInfo's rank %" PRIu64 " is not below its world_size %" PRIu64,
			     t->path, rank, size);
	t->has_dist = true;
	t->rank = (uint32_t)rank;
	t->world_size = (uint32_t)size;
	b = json_object_get(v, "backend");
	nv = json_object_get(v, "nccl_version");
	snprintf(t->backend, sizeof(t->backend), "%s", json_is_string(b) ? json_string_value(b) : "");
	snprintf(t->nccl_version, sizeof(t->nccl_version), "%s",
		 json_is_string(nv) && strcmp(json_string_value(nv), "unknown") ? json_string_value(nv) : "");
	return 0;
}

/*
 * Walks the top-level object; `each` takes every element of traceEvents,
 * `meta` every other key's value. 0, or -1 after one line.
 */
static int walk(struct kineto_trace *t, int (*each)(struct kineto_trace *, json_t *, uint64_t, void *),
		int (*meta)(struct kineto_trace *, const char *, json_t *), void *ctx)
{
	struct jstream s;
	char key[256];
	bool seen_events = false;
	int more, rc = -1;

	if (jstream_open(&s, t->path))
		return -1;
	if (jstream_expect(&s, '{', "a torch.profiler trace (a JSON object)"))
		goto out;
	more = jstream_peek(&s) == '}' ? (s.pos++, 0) : 1;
	while (more > 0) {
		if (jstream_key(&s, key, sizeof(key)))
			goto out;
		if (!strcmp(key, "traceEvents")) {
			if (seen_events) {
				error("'%s' has two \"traceEvents\"", t->path);
				goto out;
			}
			seen_events = true;
			if (jstream_expect(&s, '[', "traceEvents (an array)"))
				goto out;
			more = jstream_peek(&s) == ']' ? (s.pos++, 0) : 1;
			while (more > 0) {
				json_t *e = jstream_value(&s, "traceEvents");

				if (!e)
					goto out;
				rc = each(t, e, jstream_offset(&s), ctx);
				json_decref(e);
				if (rc < 0)
					goto out;
				rc = -1;
				more = jstream_more(&s, ']', "traceEvents");
			}
			if (more < 0)
				goto out;
		} else {
			json_t *v = jstream_value(&s, "the top-level object");

			if (!v)
				goto out;
			rc = meta ? meta(t, key, v) : 0;
			json_decref(v);
			if (rc < 0)
				goto out;
			rc = -1;
		}
		more = jstream_more(&s, '}', "the top-level object");
	}
	if (more < 0)
		goto out;
	if (jstream_peek(&s) >= 0) {
		error("'%s' has more after its top-level object, at byte %" PRIu64, t->path, jstream_offset(&s));
		goto out;
	}
	if (s.failed)
		goto out;
	if (!seen_events) {
		error("'%s' is not a torch.profiler trace: it has no \"traceEvents\"", t->path);
		goto out;
	}
	rc = 0;
out:
	jstream_close(&s);
	return rc;
}

static int scan_each(struct kineto_trace *t, json_t *e, uint64_t at, void *ctx)
{
	return scan_event(t, e, at, ctx);
}

static int scan_meta(struct kineto_trace *t, const char *key, json_t *v)
{
	if (!strcmp(key, "distributedInfo"))
		return scan_dist(t, v);
	if (!strcmp(key, "deviceProperties"))
		return scan_devices(t, v);
	if (!strcmp(key, "baseTimeNanoseconds")) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > TIME_MAX_NS)
			return error("'%s': \"baseTimeNanoseconds\" is not a time in ns", t->path);
		t->has_base = true;
		t->base_ns = (int64_t)json_integer_value(v);
	}
	if (json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) <= UINT32_MAX) {
		if (!strcmp(key, "cuda_driver_version"))
			t->cuda_driver = (uint32_t)json_integer_value(v);
		else if (!strcmp(key, "cuda_runtime_version"))
			t->cuda_runtime = (uint32_t)json_integer_value(v);
		else if (!strcmp(key, "cupti_version"))
			t->cupti = (uint32_t)json_integer_value(v);
	}
	if (!strcmp(key, "host_name") && json_is_string(v))
		snprintf(t->host, sizeof(t->host), "%s", json_string_value(v));
	return 0;
}

/* ---- the range tree, steps and phases ---------------------------------------------- */

static int cmp_range(const void *a, const void *b)
{
	const struct krange *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;   /* the outer first */
	if (x->prio != y->prio)
		return x->prio < y->prio ? -1 : 1;
	return 0;
}

/* Depths and parents by nesting, on each thread: a range inside the one before it is its child. */
static int nest(struct kineto_trace *t)
{
	uint32_t *stack = NULL;
	size_t n = 0, alloc = 0;

	if (t->n_r)
		qsort(t->r, t->n_r, sizeof(*t->r), cmp_range);
	for (size_t i = 0; i < t->n_r; i++) {
		struct krange *r = &t->r[i];

		if (i && t->r[i - 1].tid != r->tid)
			n = 0;
		while (n && (t->r[stack[n - 1]].end <= r->start || t->r[stack[n - 1]].end < r->end) &&
		       !(t->r[stack[n - 1]].start == r->start && t->r[stack[n - 1]].end >= r->end))
			n--;
		r->depth = (uint32_t)n;
		r->parent = n ? stack[n - 1] + 1 : 0;
		r->phase = n ? t->r[stack[n - 1]].phase : ST_PHASE_OTHER;
		if (r->kind == R_SYNTH && st_phase_from_name(sname(t, r->name)) >= 0)
			r->phase = (uint8_t)st_phase_from_name(sname(t, r->name));
		if (ALLOC_GROW(stack, n + 1, alloc)) {
			free(stack);
			return -1;
		}
		stack[n++] = (uint32_t)i;
	}
	free(stack);
	return 0;
}

static int add_synth(struct kineto_trace *t, uint64_t tid, int64_t start, int64_t end, const char *name, uint8_t prio)
{
	struct krange *r;

	if (ALLOC_GROW(t->r, t->n_r + 1, t->alloc_r))
		return -1;
	r = &t->r[t->n_r++];
	memset(r, 0, sizeof(*r));
	r->tid = tid;
	r->start = start;
	r->end = end;
	r->kind = R_SYNTH;
	r->prio = prio;
	if (!(r->name = intern(&t->st, name)))
		return -1;
	return 0;
}

struct span {
	int64_t start, end;
	bool any;
};

static void widen(struct span *s, const struct krange *r)
{
	if (!s->any || r->start < s->start)
		s->start = r->start;
	if (!s->any || r->end > s->end)
		s->end = r->end;
	s->any = true;
}

/* The main thread's steps, in start order: indices into t->r. */
static int main_steps(struct kineto_trace *t, uint32_t **out, size_t *n_out)
{
	uint32_t *v = NULL;
	size_t n = 0, alloc = 0, best = 0, run = 0;
	uint64_t best_tid = 0;

	for (size_t i = 0; i < t->n_r; i++) {
		if (i && t->r[i].tid != t->r[i - 1].tid)
			run = 0;
		if (t->r[i].kind == R_STEP && ++run > best) {
			best = run;
			best_tid = t->r[i].tid;
		}
	}
	for (size_t i = 0; i < t->n_r; i++) {
		if (t->r[i].kind != R_STEP)
			continue;
		if (t->r[i].tid != best_tid) {
			t->r[i].kind = R_ANNOTATION;
			t->steps_on_threads = true;
			continue;
		}
		if (ALLOC_GROW(v, n + 1, alloc)) {
			free(v);
			return -1;
		}
		v[n++] = (uint32_t)i;
	}
	t->main_tid = best_tid;
	*out = v;
	*n_out = n;
	return 0;
}

/* The step (index into steps) whose span holds instant ts, or -1. */
static ssize_t step_at(const struct kineto_trace *t, const uint32_t *steps, size_t n, int64_t ts)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (t->r[steps[mid]].start <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || ts > t->r[steps[lo - 1]].end)
		return -1;
	return (ssize_t)lo - 1;
}

/*
 * The phases of each step, synthesised as ranges: on the steps' thread,
 * data (the DataLoader's next), forward (the rest until the backward
 * starts), backward, optimizer (Optimizer.step#...), zero_grad
 * (Optimizer.zero_grad#...), each over its step's children of that phase;
 * on every other thread with work in a step, a range "step" over the step,
 * and "backward" over the autograd engine's work in it.
 */
static int phases(struct kineto_trace *t)
{
	uint32_t *steps = NULL;
	size_t n_steps = 0, n_real;
	int64_t *bwd = NULL, *bwd_end = NULL;
	int rc = -1;

	if (nest(t) || main_steps(t, &steps, &n_steps))
		goto out;
	if (!n_steps) {
		rc = 0;
		goto out;
	}
	n_real = t->n_r;
	/* when the backward starts in each step: the autograd engine's first work on another thread */
	bwd = malloc(n_steps * sizeof(*bwd));
	if (!bwd) {
		error("out of memory");
		goto out;
	}
	bwd_end = malloc(n_steps * sizeof(*bwd_end));
	if (!bwd_end) {
		error("out of memory");
		goto out;
	}
	for (size_t s = 0; s < n_steps; s++) {
		bwd[s] = INT64_MAX;
		bwd_end[s] = INT64_MIN;
	}
	for (size_t i = 0; i < n_real; i++) {
		const struct krange *r = &t->r[i];
		ssize_t s;

		if (r->depth || !prefix(sname(t, r->name), "autograd::engine::"))
			continue;
		if ((s = step_at(t, steps, n_steps, r->start)) < 0 || r->tid == t->main_tid)
			continue;
		if (r->start < bwd[s])
			bwd[s] = r->start;
		if (r->end > bwd_end[s])
			bwd_end[s] = r->end;
	}
	/* the steps' thread: its steps' children by phase */
	for (size_t s = 0; s < n_steps; s++) {
		const struct krange *st = &t->r[steps[s]];
		struct span ph[ST_PHASE_COUNT] = { 0 };
		uint64_t tid = st->tid;
		int64_t st_start = st->start, st_end = st->end;

		for (size_t i = steps[s] + 1; i < n_real && t->r[i].tid == tid && t->r[i].start <= st_end; i++) {
			const struct krange *c = &t->r[i];
			const char *name = sname(t, c->name);
			int p;

			if (c->parent != steps[s] + 1)
				continue;
			if (prefix(name, "enumerate(DataLoader)"))
				p = ST_PHASE_DATA;
			else if (prefix(name, "Optimizer.step#") || prefix(name, "Optimizer.step"))
				p = ST_PHASE_OPTIMIZER;
			else if (prefix(name, "Optimizer.zero_grad#"))
				p = ST_PHASE_ZERO_GRAD;
			else if (c->start >= bwd[s] || prefix(name, "autograd::engine::") ||
				 (c->kind == R_ANNOTATION && strstr(name, "backward")))
				p = ST_PHASE_BACKWARD;
			else if (c->kind == R_ANNOTATION && strstr(name, "optimizer"))
				p = ST_PHASE_OPTIMIZER;
			else
				p = ST_PHASE_FORWARD;
			widen(&ph[p], c);
		}
		if (bwd[s] != INT64_MAX) {
			/*
			 * The steps' thread waits in backward() while the autograd
			 * engine's thread runs it: its backward is that wait, from
			 * the end of its forward to the engine's last work, before
			 * its optimizer.
			 */
			struct krange w = { .start = bwd[s], .end = bwd_end[s] };

			if (ph[ST_PHASE_FORWARD].any && w.start < ph[ST_PHASE_FORWARD].end)
				w.start = ph[ST_PHASE_FORWARD].end;
			if (ph[ST_PHASE_OPTIMIZER].any && w.end > ph[ST_PHASE_OPTIMIZER].start)
				w.end = ph[ST_PHASE_OPTIMIZER].start;
			if (w.end > st_end)
				w.end = st_end;
			if (w.start < w.end)
				widen(&ph[ST_PHASE_BACKWARD], &w);
		}
		for (int p = 0; p < ST_PHASE_OTHER; p++)
			if (ph[p].any && add_synth(t, tid, ph[p].start, ph[p].end, st_phase_names[p], 1))
				goto out;
		t->r[steps[s]].name = intern(&t->st, "step");
		if (!t->r[steps[s]].name)
			goto out;
		(void)st_start;
	}
	/* other threads: "step", and "backward" over the autograd engine's work */
	for (size_t i = 0; i < n_real; ) {
		uint64_t tid = t->r[i].tid;
		ssize_t s;
		struct span all = { 0 }, grad = { 0 };
		size_t j;

		if (tid == t->main_tid || t->r[i].depth || (s = step_at(t, steps, n_steps, t->r[i].start)) < 0) {
			i++;
			continue;
		}
		for (j = i; j < n_real && t->r[j].tid == tid && step_at(t, steps, n_steps, t->r[j].start) == s; j++) {
			if (t->r[j].depth)
				continue;
			widen(&all, &t->r[j]);
			if (prefix(sname(t, t->r[j].name), "autograd::engine::"))
				widen(&grad, &t->r[j]);
		}
		if (add_synth(t, tid, t->r[steps[s]].start, t->r[steps[s]].end, "step", 0))
			goto out;
		if (grad.any && add_synth(t, tid, grad.start, grad.end, "backward", 1))
			goto out;
		i = j;
	}
	if (nest(t))
		goto out;
	rc = 0;
out:
	free(steps);
	free(bwd);
	free(bwd_end);
	return rc;
}

static int ext_index(struct kineto_trace *t)
{
	size_t n = 0;

	for (size_t i = 0; i < t->n_r; i++)
		n += t->r[i].ext != 0;
	for (t->ext_slots = 16; t->ext_slots < 2 * n; t->ext_slots *= 2)
		;
	t->ext_keys = calloc(t->ext_slots, sizeof(*t->ext_keys));
	t->ext_vals = calloc(t->ext_slots, sizeof(*t->ext_vals));
	if (!t->ext_keys || !t->ext_vals)
		return error("out of memory");
	for (size_t i = 0; i < t->n_r; i++) {
		size_t j;

		if (!t->r[i].ext)
			continue;
		for (j = hash_mix64(t->r[i].ext) & (t->ext_slots - 1); t->ext_keys[j] && t->ext_keys[j] != t->r[i].ext;
		     j = (j + 1) & (t->ext_slots - 1))
			;
		/* the innermost of several with one id (a record_function and its op) */
		if (!t->ext_keys[j] || t->r[t->ext_vals[j] - 1].depth < t->r[i].depth || t->r[t->ext_vals[j] - 1].tid != t->r[i].tid) {
			t->ext_keys[j] = t->r[i].ext;
			t->ext_vals[j] = (uint32_t)i + 1;
		}
	}
	return 0;
}

/* The range whose External id is ext: index + 1, 0 none. */
static uint32_t ext_lookup(const struct kineto_trace *t, uint64_t ext)
{
	if (!ext || !t->ext_slots)
		return 0;
	for (size_t j = hash_mix64(ext) & (t->ext_slots - 1); t->ext_keys[j]; j = (j + 1) & (t->ext_slots - 1))
		if (t->ext_keys[j] == ext)
			return t->ext_vals[j];
	return 0;
}

static struct writer *checker(struct kineto_trace *t);

struct kineto_trace *kineto_scan(const char *path)
{
	struct kineto_trace *t = calloc(1, sizeof(*t));

	if (!t || !(t->path = strdup(path))) {
		free(t);
		error("out of memory");
		return NULL;
	}
	t->st.own = true;
	struct writer *check = checker(t);

	if (!check || walk(t, scan_each, scan_meta, check) || phases(t) || ext_index(t)) {
		free(check);
		kineto_free(t);
		return NULL;
	}
	free(check);
	if (!t->has_base)
		t->base_ns = 0;
	return t;
}

void kineto_rank(const struct kineto_trace *t, uint32_t *rank, uint32_t *world_size)
{
	*rank = t->has_dist ? t->rank : 0;
	*world_size = t->has_dist ? t->world_size : 0;
}

void kineto_free(struct kineto_trace *t)
{
	if (!t)
		return;
	strpool_release(&t->st);
	free(t->r);
	free(t->mem);
	free(t->dev);
	free(t->ext_keys);
	free(t->ext_vals);
	free(t->path);
	free(t);
}

/* ---- pass 2 ------------------------------------------------------------------------------ */

struct kop {
	uint32_t key;         /* sig, or the name without shapes */
	uint8_t phase;
	uint32_t id;
	uint32_t range;       /* index + 1 of its first instance */
};

struct live {
	uint64_t addr, size;
	uint32_t device;
	bool used;
};

struct writer {
	struct kineto_trace *t;
	struct bundle_writer *w;
	uint32_t *wid;                 /* st id -> writer id, 0 not yet */
	struct kop *ops;
	size_t n_ops, alloc_ops;
	uint32_t *op_slots;            /* index + 1 into ops */
	size_t n_op_slots;
	/* the allocator's blocks live, by (device, address) */
	struct live *live;
	size_t n_live_slots, n_live;
	uint64_t baseline[16];         /* per device: bytes allocated before the trace, as one block */
	bool seen_device[16];
	uint64_t live_sum[16];         /* per device: what the events written so far leave live */
	uint64_t frees_before;         /* frees of blocks allocated before the trace */
	uint64_t adjusted;             /* events after which the block of before was resized to Total Allocated */
};

/* A writer without a bundle: write_event only checks. */
static struct writer *checker(struct kineto_trace *t)
{
	struct writer *x = calloc(1, sizeof(*x));

	if (!x)
		error("out of memory");
	else
		x->t = t;
	return x;
}

#define BASELINE_ADDR UINT64_C(0xffffffffffff0000)

static uint32_t wstr(struct writer *x, uint32_t id)
{
	if (!id)
		return 0;
	if (!x->wid[id])
		x->wid[id] = bundle_writer_intern(x->w, sname(x->t, id));
	return x->wid[id];
}

static uint64_t rel(const struct kineto_trace *t, int64_t ts)
{
	return (uint64_t)(ts - t->t0);
}

static int dtype_of(const char *s)
{
	if (!strcmp(s, "float"))
		return ST_DT_F32;
	if (!strcmp(s, "c10::BFloat16"))
		return ST_DT_BF16;
	if (!strcmp(s, "c10::Half"))
		return ST_DT_F16;
	if (!strcmp(s, "int"))
		return ST_DT_I32;
	if (!strcmp(s, "long int") || !strcmp(s, "long"))
		return ST_DT_I64;
	if (!strcmp(s, "double"))
		return ST_DT_F64;
	if (!strcmp(s, "unsigned char"))
		return ST_DT_U8;
	return ST_DT_UNKNOWN;
}

/* Dimension d of input i of a dims array, 0 when absent. */
static uint64_t dim(json_t *dims, size_t i, size_t d)
{
	json_t *v = json_array_get(json_array_get(dims, i), d);

	return json_is_integer(v) && json_integer_value(v) > 0 && json_integer_value(v) < (INT64_C(1) << 31) ?
	       (uint64_t)json_integer_value(v) : 0;
}

static size_t rank_of(json_t *dims, size_t i)
{
	return json_array_size(json_array_get(dims, i));
}

/* FLOPs of one execution of the matrix products and attention, from their input shapes; 0 others. */
static uint64_t op_flops(const char *name, json_t *dims)
{
	if (!strcmp(name, "aten::mm") && rank_of(dims, 0) == 2 && rank_of(dims, 1) == 2)
		return 2 * dim(dims, 0, 0) * dim(dims, 0, 1) * dim(dims, 1, 1);
	if (!strcmp(name, "aten::addmm") && rank_of(dims, 1) == 2 && rank_of(dims, 2) == 2)
		return 2 * dim(dims, 1, 0) * dim(dims, 1, 1) * dim(dims, 2, 1);
	if (!strcmp(name, "aten::bmm") && rank_of(dims, 0) == 3 && rank_of(dims, 1) == 3)
		return 2 * dim(dims, 0, 0) * dim(dims, 0, 1) * dim(dims, 0, 2) * dim(dims, 1, 2);
	if (!strcmp(name, "aten::baddbmm") && rank_of(dims, 1) == 3 && rank_of(dims, 2) == 3)
		return 2 * dim(dims, 1, 0) * dim(dims, 1, 1) * dim(dims, 1, 2) * dim(dims, 2, 2);
	if (prefix(name, "aten::_scaled_dot_product_") && !strstr(name, "backward") &&
	    rank_of(dims, 0) == 4 && rank_of(dims, 1) == 4)   /* q [B, H, L, D], k [B, H, S, D]: QK^T and PV */
		return 4 * dim(dims, 0, 0) * dim(dims, 0, 1) * dim(dims, 0, 2) * dim(dims, 1, 2) * dim(dims, 0, 3);
	return 0;
}

/* The path of range ri (index), root first, into buf. */
static void range_path(const struct kineto_trace *t, size_t ri, char *buf, size_t len)
{
	uint32_t chain[64];
	size_t n = 0, at = 0;

	for (uint32_t p = (uint32_t)ri + 1; p && n < 64; p = t->r[p - 1].parent)
		chain[n++] = p - 1;
	buf[0] = '\0';
	while (n-- && at + 1 < len) {
		int k = snprintf(buf + at, len - at, "%s%s", at ? "/" : "", sname(t, t->r[chain[n]].name));

		at = k < 0 || (size_t)k >= len - at ? len - 1 : at + (size_t)k;
	}
}

/* The op of range ri (index + 1): its id, registering it at first use; 0 none, -1 out of memory. */
static int64_t op_of(struct writer *x, uint32_t ri)
{
	const struct krange *r;
	uint32_t key;
	size_t j;

	if (!ri || !x->w)
		return 0;
	r = &x->t->r[ri - 1];
	if (r->kind != R_OP)
		return 0;
	key = r->sig ? r->sig : r->name;
	if ((x->n_ops + 1) * 2 > x->n_op_slots) {
		size_t n = x->n_op_slots ? x->n_op_slots * 2 : 256;
		uint32_t *s = calloc(n, sizeof(*s));

		if (!s)
			return error("out of memory");
		for (size_t i = 0; i < x->n_ops; i++) {
			for (j = hash_mix64(((uint64_t)x->ops[i].key << 8) | x->ops[i].phase) & (n - 1); s[j]; j = (j + 1) & (n - 1))
				;
			s[j] = (uint32_t)i + 1;
		}
		free(x->op_slots);
		x->op_slots = s;
		x->n_op_slots = n;
	}
	for (j = hash_mix64(((uint64_t)key << 8) | r->phase) & (x->n_op_slots - 1); x->op_slots[j];
	     j = (j + 1) & (x->n_op_slots - 1)) {
		const struct kop *o = &x->ops[x->op_slots[j] - 1];

		if (o->key == key && o->phase == r->phase)
			return o->id;
	}
	if (x->n_ops >= UINT32_MAX - 1 || ALLOC_GROW(x->ops, x->n_ops + 1, x->alloc_ops))
		return -1;
	x->ops[x->n_ops] = (struct kop){ .key = key, .phase = r->phase, .id = (uint32_t)x->n_ops + 1, .range = ri };
	x->op_slots[j] = (uint32_t)++x->n_ops;
	return x->n_ops;
}

static int write_ops(struct writer *x)
{
	char path[2048];

	for (size_t i = 0; i < x->n_ops; i++) {
		const struct kop *o = &x->ops[i];
		const struct krange *r = &x->t->r[o->range - 1];
		const char *name = sname(x->t, r->name);
		struct st_event ev = { .kind = ST_OP, .start = rel(x->t, r->start) };

		range_path(x->t, o->range - 1, path, sizeof(path));
		ev.op.id = o->id;
		ev.op.name = wstr(x, r->name);
		ev.op.path = bundle_writer_intern(x->w, path);
		ev.op.kind = ev.op.name;
		ev.op.phase = bundle_writer_intern(x->w, st_phase_name(r->phase));
		if (r->sig && !strcmp(name, "record_param_comms")) {
			/* a communication op (FORMAT.md): phase comm, kind COLLECTIVE/NAME, bytes its message's */
			char coll[64] = "", dt[64] = "", kind[160];
			unsigned long long nel = 0;
			static const struct { const char *name; unsigned size; } sizes[] = {
				{ "Float", 4 }, { "BFloat16", 2 }, { "Half", 2 }, { "Double", 8 }, { "Long", 8 }, { "Int", 4 },
				{ "Byte", 1 }, { "Char", 1 }, { "Bool", 1 },
			};
			unsigned size = 0;

			if (sscanf(sname(x->t, r->sig), "%63s %llu %63s", coll, &nel, dt) == 3)
				for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
					if (!strcmp(dt, sizes[i].name))
						size = sizes[i].size;
			snprintf(kind, sizeof(kind), "%s/%s", coll, name);
			ev.op.kind = bundle_writer_intern(x->w, kind);
			ev.op.phase = bundle_writer_intern(x->w, ST_OP_PHASE_COMM);
			ev.op.bytes = (uint64_t)nel * size;
		} else if (r->sig) {
			/* the signature: "NAME DIMS TYPES" */
			const char *sig = sname(x->t, r->sig) + strlen(name) + 1;
			json_error_t err;
			json_t *dims = json_loadb(sig, strlen(sig), JSON_DISABLE_EOF_CHECK | JSON_DECODE_ANY, &err);
			const char *types = dims ? sig + err.position : "";
			json_t *ty = *types ? json_loads(types, JSON_DECODE_ANY, &err) : NULL;
			size_t k;
			json_t *v;

			ev.op.flops = dims ? op_flops(name, dims) : 0;
			json_array_foreach(ty, k, v) {
				if (!json_is_string(v) || !*json_string_value(v))
					continue;
				if (ev.op.n_inputs < ST_OP_MAX_INPUTS)
					ev.op.inputs[ev.op.n_inputs++] = (uint8_t)dtype_of(json_string_value(v));
			}
			json_decref(dims);
			json_decref(ty);
		}
		if (bundle_writer_add(x->w, &ev))
			return -1;
	}
	return 0;
}

static int write_ranges(struct writer *x)
{
	const struct kineto_trace *t = x->t;
	uint32_t index = 0;

	for (size_t i = 0; i < t->n_r; i++) {
		const struct krange *r = &t->r[i];
		struct st_event ev = { .kind = ST_RANGE, .start = rel(t, r->start), .end = rel(t, r->end) };

		if (r->depth > RANGE_DEPTH_MAX)
			continue;   /* the format's limit (import_missing says how many) */
		ev.range.name = wstr(x, r->name);
		ev.range.thread = r->tid;
		ev.range.depth = r->depth;
		if (bundle_writer_add(x->w, &ev))
			return -1;
	}
	/* the steps, in start order (the ranges are sorted by thread, then start) */
	for (size_t i = 0; i < t->n_r; i++) {
		const struct krange *r = &t->r[i];
		struct st_event ev = { .kind = ST_STEP, .start = rel(t, r->start), .end = rel(t, r->end) };

		if (r->kind != R_STEP)
			continue;
		ev.step.index = index++;
		ev.step.thread = r->tid;
		if (bundle_writer_add(x->w, &ev))
			return -1;
	}
	return 0;
}

/* The live-block table: the slot of (device, addr). */
static struct live *live_slot(struct writer *x, uint32_t device, uint64_t addr)
{
	size_t j;

	if ((x->n_live + 1) * 2 > x->n_live_slots) {
		size_t n = x->n_live_slots ? x->n_live_slots * 2 : 4096;
		struct live *s = calloc(n, sizeof(*s));

		if (!s) {
			error("out of memory");
			return NULL;
		}
		for (size_t i = 0; i < x->n_live_slots; i++) {
			if (!x->live[i].used)
				continue;
			for (j = hash_mix64(x->live[i].addr ^ ((uint64_t)x->live[i].device << 56)) & (n - 1); s[j].used;
			     j = (j + 1) & (n - 1))
				;
			s[j] = x->live[i];
		}
		free(x->live);
		x->live = s;
		x->n_live_slots = n;
	}
	for (j = hash_mix64(addr ^ ((uint64_t)device << 56)) & (x->n_live_slots - 1); x->live[j].used;
	     j = (j + 1) & (x->n_live_slots - 1))
		if (x->live[j].addr == addr && x->live[j].device == device)
			return &x->live[j];
	return &x->live[j];
}

/* Removes a slot of the table (linear probing: the ones after it move up). */
static void live_remove(struct writer *x, struct live *s)
{
	size_t i = (size_t)(s - x->live), j = i;

	x->live[i].used = false;
	x->n_live--;
	for (;;) {
		size_t k;

		j = (j + 1) & (x->n_live_slots - 1);
		if (!x->live[j].used)
			return;
		k = hash_mix64(x->live[j].addr ^ ((uint64_t)x->live[j].device << 56)) & (x->n_live_slots - 1);
		if ((j > i && (k <= i || k > j)) || (j < i && (k <= i && k > j))) {
			x->live[i] = x->live[j];
			x->live[j].used = false;
			i = j;
		}
	}
}

/*
 * A [memory] instant, checked and kept (the first pass): the allocator's
 * events are written in time order, from t->mem, before the rest.
 */
static int mem_event(struct writer *x, const struct kev *k, uint64_t at)
{
	struct kineto_trace *t = x->t;
	json_t *bytes_v = json_object_get(k->args, "Bytes"), *total_v = json_object_get(k->args, "Total Allocated");
	uint64_t dtype, device, addr;
	int64_t bytes, total;

	if (x->w)
		return 0;   /* written from t->mem */
	if (arg_u64(k->args, "Device Type", 1000, 1, &dtype))
		return bad(t->path, at, "a [memory] event whose \"Device Type\" is not a number");
	if (json_is_integer(json_object_get(k->args, "Device Id")) &&
	    json_integer_value(json_object_get(k->args, "Device Id")) < 0)
		return 0;   /* the host's */
	if (arg_u64(k->args, "Device Id", UINT32_MAX, 0, &device) || arg_u64(k->args, "Addr", UINT64_MAX >> 1, 0, &addr) ||
	    !json_is_integer(bytes_v) || (total_v && !json_is_integer(total_v)))
		return bad(t->path, at, "a [memory] event without its Addr, Bytes and Device Id as integers");
	if (dtype != 1)   /* c10::DeviceType: 0 the CPU, 1 CUDA */
		return 0;
	bytes = json_integer_value(bytes_v);
	total = total_v ? json_integer_value(total_v) : -1;   /* older traces: no total */
	if (bytes == 0 || bytes < -(INT64_C(1) << 56) || bytes > (INT64_C(1) << 56) || total < -1 ||
	    total > (INT64_C(1) << 56))
		return bad(t->path, at, "a [memory] event of 0 bytes, or of more than 2^56");
	if (device >= 16) {
		t->other_devices++;
		return 0;
	}
	if (ALLOC_GROW(t->mem, t->n_mem + 1, t->alloc_mem))
		return -1;
	t->mem[t->n_mem] = (struct kmem){ .ts = k->ts, .addr = addr, .bytes = bytes, .total = total,
					  .device = (uint32_t)device, .order = t->n_mem };
	t->n_mem++;
	return 0;
}

static int cmp_mem(const void *a, const void *b)
{
	const struct kmem *x = a, *y = b;

	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

/* The block of what was allocated before the trace (and what the events miss) on `device` made `size`. */
static int set_baseline(struct writer *x, uint32_t device, uint64_t start, uint64_t size)
{
	struct st_event ev = { .start = start, .mem = { .address = BASELINE_ADDR + device, .device = device,
							 .source = ST_SRC_MODEL } };

	if (size == x->baseline[device])
		return 0;
	if (x->baseline[device]) {
		ev.kind = ST_FREE;
		ev.mem.size = x->baseline[device];
		if (bundle_writer_add(x->w, &ev))
			return -1;
	}
	x->live_sum[device] += size - x->baseline[device];
	x->baseline[device] = size;
	if (!size)
		return 0;
	ev.kind = ST_ALLOC;
	ev.mem.size = size;
	return bundle_writer_add(x->w, &ev);
}

/*
 * The allocator's events in time order. A free of a block the trace did
 * not see allocated shrinks the block of what was allocated before; where
 * the trace gives Total Allocated, that block is what makes the live total
 * equal it (events lost or out of order), so memory's peak is the trace's.
 */
static int write_memory(struct writer *x)
{
	struct kineto_trace *t = x->t;

	if (t->n_mem)
		qsort(t->mem, t->n_mem, sizeof(*t->mem), cmp_mem);
	for (size_t i = 0; i < t->n_mem; i++) {
		const struct kmem *m = &t->mem[i];
		uint32_t d = m->device;
		struct st_event ev = { .start = rel(t, m->ts), .mem = { .address = m->addr, .device = d,
									.source = ST_SRC_MODEL } };
		struct live *s;

		if (!x->seen_device[d]) {
			x->seen_device[d] = true;
			if (m->total >= 0 && m->total - m->bytes > 0 && set_baseline(x, d, 0, (uint64_t)(m->total - m->bytes)))
				return -1;
		}
		if (!(s = live_slot(x, d, m->addr)))
			return -1;
		if (m->bytes > 0) {
			ev.kind = ST_ALLOC;
			ev.mem.size = (uint64_t)m->bytes;
			if (!s->used) {
				*s = (struct live){ .addr = m->addr, .size = (uint64_t)m->bytes, .device = d, .used = true };
				x->n_live++;
			} else {
				s->size = (uint64_t)m->bytes;   /* its free was lost: replay keeps the older block live */
			}
			x->live_sum[d] += (uint64_t)m->bytes;
			if (bundle_writer_add(x->w, &ev))
				return -1;
		} else if (s->used) {
			x->live_sum[d] -= s->size;
			live_remove(x, s);
			ev.kind = ST_FREE;
			ev.mem.size = (uint64_t)-m->bytes;
			if (bundle_writer_add(x->w, &ev))
				return -1;
		} else {
			x->frees_before++;
			if (m->total < 0 && set_baseline(x, d, ev.start, x->baseline[d] > (uint64_t)-m->bytes ?
							 x->baseline[d] - (uint64_t)-m->bytes : 0))
				return -1;
		}
		if (m->total >= 0 && x->live_sum[d] != (uint64_t)m->total) {
			int64_t size = (int64_t)x->baseline[d] + (m->total - (int64_t)x->live_sum[d]);

			x->adjusted++;
			if (size >= 0 && set_baseline(x, d, ev.start, (uint64_t)size))
				return -1;
		}
	}
	return 0;
}

/* "Memcpy HtoD (Pageable -> Device)": CUPTI's copy kind and the two memory kinds. */
static void copy_kinds(const char *name, struct st_event *ev)
{
	static const char *const kinds[] = { "?", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD", "DtoA", "DtoD",
					     "HtoH", "PtoP", NULL };
	static const char *const mem[] = { "Unknown", "Pageable", "Pinned", "Device", "Array", "Managed",
					   "Device Static", "Managed Static", NULL };
	const char *p = prefix(name, "Memcpy ") ? name + 7 : name;
	const char *open = strchr(p, '('), *arrow = open ? strstr(open, " -> ") : NULL;

	for (uint32_t i = 1; kinds[i]; i++)
		if (prefix(p, kinds[i]))
			ev->memcpy.copy_kind = i;
	if (!open || !arrow)
		return;
	for (uint32_t i = 0; mem[i]; i++) {
		size_t n = strlen(mem[i]);

		if (!strncmp(open + 1, mem[i], n) && open + 1 + n == arrow)
			ev->memcpy.src_kind = i;
		if (!strncmp(arrow + 4, mem[i], n) && arrow[4 + n] == ')')
			ev->memcpy.dst_kind = i;
	}
}

static int write_event(struct kineto_trace *t, json_t *e, uint64_t at, void *ctx)
{
	struct writer *x = ctx;
	struct kev k;
	struct st_event ev = { 0 };
	uint64_t corr, stream, device, ext, v;
	int rc = decode_event(t->path, at, e, &k);
	int64_t op;

	if (rc <= 0)
		return rc;
	ev.start = rel(t, k.ts);
	ev.end = ev.start + (uint64_t)k.dur;
	if (k.cat == K_MEMORY)
		return mem_event(x, &k, at);
	if (k.cat == K_CPU_OP || k.cat == K_ANNOTATION || k.cat == K_OTHER)
		return 0;
	if (json_is_integer(json_object_get(k.args, "stream")) && json_integer_value(json_object_get(k.args, "stream")) == -1)
		json_object_set_new(k.args, "stream", json_integer(UINT32_MAX));   /* a context's synchronisation: no stream */
	if (arg_u64(k.args, "correlation", INT64_MAX, 0, &corr) || arg_u64(k.args, "stream", UINT32_MAX, 0, &stream) ||
	    arg_u64(k.args, "device", UINT32_MAX, 0, &device) || arg_u64(k.args, "External id", INT64_MAX, 0, &ext))
		return bad(t->path, at, "an event whose correlation, stream, device or External id is not a count");
	switch (k.cat) {
	case K_KERNEL: {
		json_t *grid = json_object_get(k.args, "grid"), *block = json_object_get(k.args, "block");

		ev.kind = ST_KERNEL;
		ev.kernel.name = x->w ? bundle_writer_intern(x->w, k.name) : 0;
		for (size_t i = 0; i < 3; i++) {
			json_t *g = json_array_get(grid, i), *b = json_array_get(block, i);

			ev.kernel.grid[i] = json_is_integer(g) && json_integer_value(g) > 0 &&
					    json_integer_value(g) <= UINT32_MAX ? (uint32_t)json_integer_value(g) : 0;
			ev.kernel.block[i] = json_is_integer(b) && json_integer_value(b) > 0 &&
					     json_integer_value(b) <= UINT32_MAX ? (uint32_t)json_integer_value(b) : 0;
		}
		if (arg_u64(k.args, "registers per thread", UINT32_MAX, 0, &v))
			return bad(t->path, at, "a kernel whose \"registers per thread\" is not a count");
		ev.kernel.registers = (uint32_t)v;
		if (arg_u64(k.args, "shared memory", UINT32_MAX, 0, &v))
			return bad(t->path, at, "a kernel whose \"shared memory\" is not a count");
		ev.kernel.static_smem = (uint32_t)v;
		ev.kernel.stream = (uint32_t)stream;
		ev.kernel.device = (uint32_t)device;
		ev.kernel.correlation = corr;
		if ((op = op_of(x, ext_lookup(t, ext))) < 0)
			return -1;
		ev.kernel.op = (uint32_t)op;
		break;
	}
	case K_MEMCPY:
		ev.kind = ST_MEMCPY;
		copy_kinds(k.name, &ev);
		if (arg_u64(k.args, "bytes", UINT64_MAX >> 1, 0, &ev.memcpy.bytes))
			return bad(t->path, at, "a copy whose \"bytes\" is not a count");
		ev.memcpy.stream = (uint32_t)stream;
		ev.memcpy.device = (uint32_t)device;
		ev.memcpy.correlation = corr;
		if ((op = op_of(x, ext_lookup(t, ext))) < 0)
			return -1;
		ev.memcpy.op = (uint32_t)op;
		break;
	case K_MEMSET:
		ev.kind = ST_MEMSET;
		if (arg_u64(k.args, "bytes", UINT64_MAX >> 1, 0, &ev.memset.bytes))
			return bad(t->path, at, "a memset whose \"bytes\" is not a count");
		ev.memset.stream = (uint32_t)stream;
		ev.memset.device = (uint32_t)device;
		ev.memset.correlation = corr;
		if ((op = op_of(x, ext_lookup(t, ext))) < 0)
			return -1;
		ev.memset.op = (uint32_t)op;
		break;
	case K_RUNTIME:
	case K_DRIVER:
		ev.kind = ST_API;
		ev.api.name = x->w ? bundle_writer_intern(x->w, k.name) : 0;
		ev.api.domain = k.cat == K_DRIVER;
		ev.api.thread = k.tid;
		ev.api.correlation = corr;
		if (arg_u64(k.args, "cbid", UINT32_MAX, 0, &v))
			return bad(t->path, at, "an API call whose \"cbid\" is not a count");
		ev.api.cbid = (uint32_t)v;
		break;
	case K_SYNC: {
		json_t *kind = json_object_get(k.args, "cuda_sync_kind");
		const char *s = json_is_string(kind) ? json_string_value(kind) : "";

		ev.kind = ST_SYNC;
		/* CUpti_ActivitySynchronizationType */
		ev.sync.type = !strcmp(s, "Event Sync") ? 1 : !strcmp(s, "Stream Wait Event") ? 2 :
			       !strcmp(s, "Stream Sync") ? 3 : !strcmp(s, "Context Sync") ? 4 : 0;
		ev.sync.stream = (uint32_t)stream;
		ev.sync.correlation = corr;
		break;
	}
	default:
		return 0;
	}
	return x->w ? bundle_writer_add(x->w, &ev) : 0;
}

/* The device the trace's kernels ran on most, and its properties (NULL when the trace has none). */
static const struct device_props *main_device(const struct kineto_trace *t, uint32_t *index)
{
	uint64_t best = 0;

	*index = 0;
	for (uint32_t d = 0; d < 16; d++)
		if (t->device_kernels[d] > best) {
			best = t->device_kernels[d];
			*index = d;
		}
	for (size_t i = 0; i < t->n_dev; i++)
		if (t->dev[i].id == (int64_t)*index)
			return &t->dev[i];
	return t->n_dev && !best ? &t->dev[0] : NULL;
}

#define MISSING_MAX 16

static void missing(const struct kineto_trace *t, char lines[][160], size_t *n)
{
	size_t deep = 0;

	*n = 0;
	if (!t->memory_events)
		snprintf(lines[(*n)++], 160, "no allocations (profile_memory was off): memory reports empty");
	else
		snprintf(lines[(*n)++], 160, "allocations are PyTorch's caching allocator's tensors, not cudaMalloc's "
			 "blocks; what was allocated before the trace is one block");
	if (!t->steps)
		snprintf(lines[(*n)++], 160, "no ProfilerStep#N ranges (no profiler schedule): steps cut by replay");
	if (!t->kernels)
		snprintf(lines[(*n)++], 160, "no GPU kernels (ProfilerActivity.CUDA was off)");
	if (t->cpu_ops && !t->shapes)
		snprintf(lines[(*n)++], 160, "no input shapes (record_shapes was off): ops have no FLOPs");
	else if (t->cpu_ops)
		snprintf(lines[(*n)++], 160, "FLOPs only for matrix products and attention, from their input shapes");
	snprintf(lines[(*n)++], 160, "no module ranges (nn.Module calls): paths are of CPU ops and annotations");
	snprintf(lines[(*n)++], 160, "no peak FLOP/s or bandwidth of the device: flops has no roofline");
	snprintf(lines[(*n)++], 160, "no model sizes or parameter count: plan takes them as options, not from the bundle");
	snprintf(lines[(*n)++], 160, "kernels' shared memory not split into static and dynamic: all as static");
	if (t->api)
		snprintf(lines[(*n)++], 160, "runtime calls Kineto leaves out (cudaGetDevice and other queries, its blocklist)");
	if (!t->n_dev)
		snprintf(lines[(*n)++], 160, "no deviceProperties: the device is unknown");
	for (size_t i = 0; i < t->n_r; i++)
		deep += t->r[i].depth > RANGE_DEPTH_MAX;
	if (deep)
		snprintf(lines[(*n)++], 160, "%zu CPU ops nested more than %d deep left out (the bundle format's limit)", deep,
			 RANGE_DEPTH_MAX);
	if (t->steps_on_threads)
		snprintf(lines[(*n)++], 160, "ProfilerStep#N on several threads: the steps are the thread with most");
}

int kineto_write(struct kineto_trace *t, const char *out, uint64_t run_id, const char *command_line)
{
	Steptrace__Header h = STEPTRACE__HEADER__INIT;
	Steptrace__DeviceInfo d = STEPTRACE__DEVICE_INFO__INIT;
	struct writer x = { .t = t };
	char lines[MISSING_MAX][160], *line_ptrs[MISSING_MAX], from[1024], host[128];
	const char *base = strrchr(t->path, '/') ? strrchr(t->path, '/') + 1 : t->path;
	const struct device_props *dp;
	uint32_t dev_index;
	size_t n_lines;
	int rc = -1;

	h.command_line = (char *)command_line;
	snprintf(host, sizeof(host), "%s", t->host);
	if (!*host) {
		/* tensorboard_trace_handler's worker name: HOST_PID.TIME.pt.trace.json */
		const char *us = strrchr(base, '_'), *dot = strchr(base, '.');

		if (us && dot && us < dot)
			snprintf(host, sizeof(host), "%.*s", (int)(us - base), base);
	}
	h.hostname = host;
	h.time_base_ns = (uint64_t)t->base_ns + (uint64_t)(t->any_time ? t->t0 : 0);
	/* Kineto's times are the system clock's (baseTimeNanoseconds: ns since the epoch) */
	h.created_unix_ns = h.time_base_ns > UINT64_C(1000000000000000000) ? (int64_t)h.time_base_ns : 0;
	h.clock = (char *)"imported";
	h.pid = t->pid <= UINT32_MAX ? (uint32_t)t->pid : 0;
	if (t->has_dist && t->world_size > 1) {
		h.rank = t->rank;
		h.world_size = t->world_size;
		h.local_rank = t->rank;
		h.run_id = run_id;
		h.nccl_version = t->nccl_version;
	}
	dp = main_device(t, &dev_index);
	if (dp) {
		d.name = (char *)dp->name;
		d.index = dev_index;
		d.sm_count = dp->sms;
		d.cc_major = dp->cc_major;
		d.cc_minor = dp->cc_minor;
		d.memory_bytes = dp->memory;
		d.peak_note = (char *)"not in a torch.profiler trace";
		d.cuda_driver_version = t->cuda_driver;
		d.cuda_runtime_version = t->cuda_runtime;
		d.cupti_version = t->cupti;
		h.device = &d;
	}
	snprintf(from, sizeof(from), "torch.profiler: %s", base);
	h.imported_from = from;
	missing(t, lines, &n_lines);
	for (size_t i = 0; i < n_lines; i++)
		line_ptrs[i] = lines[i];
	h.n_import_missing = n_lines;
	h.import_missing = line_ptrs;

	x.wid = calloc(t->st.n + 1, sizeof(*x.wid));
	if (!x.wid)
		return error("out of memory");
	x.w = bundle_writer_open(out, &h, NULL);
	if (!x.w)
		goto out;
	if (write_ranges(&x) || write_memory(&x) || walk(t, write_event, NULL, &x) || write_ops(&x)) {
		bundle_writer_abort(x.w);
		/* the bundle's temporary file was renamed onto out: a failed import leaves nothing */
		remove(out);
		goto out;
	}
	if (t->steps)
		bundle_writer_set_steps_from(x.w, "ProfilerStep#N ranges (torch.profiler)");
	rc = bundle_writer_close(x.w, "ok");
out:
	free(x.wid);
	free(x.ops);
	free(x.op_slots);
	free(x.live);
	return rc;
}
