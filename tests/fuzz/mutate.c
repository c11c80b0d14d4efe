/*
 * mutate.c: the structure-aware mutator of fuzz_commands (libFuzzer's
 * LLVMFuzzerCustomMutator and LLVMFuzzerCustomCrossOver). An input is
 * decoded into its bundles' messages (edit.h), changed in one to four
 * places, made consistent again where the reader checks (most of the
 * time), and written back as valid bundles, so that the commands get past
 * the reader's checks and into the analyses. What it changes:
 *
 *   - any field of any message (header, device, run config, string table,
 *     event, footer), by reflection on the schema: interesting numbers,
 *     small steps, bit flips, enum values, strings;
 *   - what analyses join on, copied from another event: launches'
 *     correlation ids (a kernel on another call's, a graph launch's),
 *     allocation addresses (a free of a live block, a double free, an
 *     address reused), op ids, threads, streams, step indices, string
 *     references;
 *   - times: an event's start or end onto another's, ranges that overlap
 *     without nesting, steps that cross, huge and zero durations;
 *   - NVTX ranges: depths, push/pop order (ranges swapped, moved, doubled);
 *   - events deleted, doubled, moved, swapped, given another kind, made
 *     from nothing; a run of events repeated later in time (more steps,
 *     a longer launch period);
 *   - members: chunks split and merged, string tables split, strings
 *     changed, added and removed, members dropped, doubled, reordered,
 *     renamed, or changed byte by byte (libFuzzer's own mutation);
 *   - ranks: a bundle doubled into the ranks of a run, or copied into as
 *     many as a set holds (EDIT_MAX_BUNDLES), ranks dropped, their rank,
 *     world size and run id changed (two runs: diff's sides), their time
 *     bases moved (a day, 146 years apart);
 *   - what issue 39's paths read: nests of up to 1,500 ranges of
 *     one-letter names (long paths), NCCL kernels and NCCL ranges with a
 *     communicator and a message size (2^64 - 1 among them), MemTags on
 *     live blocks and allocations overlapping them, the header's parameter
 *     count and bucket size;
 *   - the file: cut short, or bytes after the frame.
 *
 * A bundle keeps at most MUTATE_MAX_EVENTS events (a window of a larger
 * seed's, edit_window) so that every command on it runs in milliseconds,
 * and a string grows to at most MUTATE_MAX_STRING bytes.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/edit.h"
#include "tests/fuzz/fuzz.h"

#define MUTATE_MAX_EVENTS 2048
#define MUTATE_MAX_STRING 1024

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed);
size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1, const uint8_t *d2, size_t s2,
				 uint8_t *out, size_t max, unsigned int seed);

struct mut {
	uint64_t rng;
	struct edit_set *s;
	struct edit_bundle *b;        /* the bundle being changed */
};

static uint64_t next(struct mut *m)
{
	uint64_t z = (m->rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t below(struct mut *m, uint64_t n)
{
	return n ? next(m) % n : 0;
}

static bool chance(struct mut *m, unsigned percent)
{
	return below(m, 100) < percent;
}

/* ---- values ---------------------------------------------------------------------------- */

static const uint64_t interesting[] = {
	0, 1, 2, 3, 4, 7, 8, 16, 31, 32, 64, 100, 127, 128, 255, 256, 1000, 1023, 1024, 4095, 4096,
	4097, 65535, 65536, 1u << 20, 1000000, 0x7fffffff, 0x80000000u, 0xfffffffeu, 0xffffffffu,
	1ull << 32, 1ull << 53, 1ull << 56, (1ull << 56) + 1, 1ull << 62, (1ull << 62) + 1,
	0x7fffffffffffffffull, 1ull << 63, ~1ull, ~0ull,
};
#define N_INTERESTING (sizeof(interesting) / sizeof(interesting[0]))

static uint64_t mutate_number(struct mut *m, uint64_t v)
{
	switch (below(m, 7)) {
	case 0:
		return interesting[below(m, N_INTERESTING)];
	case 1:
		return v + 1 + below(m, 16);
	case 2:
		return v - 1 - below(m, 16);
	case 3:
		return v ^ (1ull << below(m, 64));
	case 4:
		return chance(m, 50) ? v * 2 : v / 2;
	case 5:
		return v + (chance(m, 50) ? 1 : -1) * (below(m, 1000000000) + 1);
	default:
		return next(m) >> below(m, 64);
	}
}

/*
 * A time or duration: mostly one the reader takes (up to 2^62 ns), near
 * what it was or on the edge; now and then past it.
 */
static uint64_t mutate_time(struct mut *m, uint64_t v)
{
	const uint64_t max = 1ull << 62;

	if (chance(m, 5))
		return mutate_number(m, v);
	switch (below(m, 5)) {
	case 0:
		return chance(m, 50) ? 0 : max - below(m, 2);
	case 1:
		v += below(m, 1000000);
		break;
	case 2:
		v -= below(m, v < 1000000 ? v + 1 : 1000000);
		break;
	case 3:
		v = chance(m, 50) ? v * 2 : v / 2;
		break;
	default:
		v = next(m) >> (2 + below(m, 62));
		break;
	}
	return v > max ? max : v;
}

static double mutate_double(struct mut *m, double v)
{
	static const double values[] = { 0, -0.0, 1, -1, 0.5, 1e-300, 1e300, 1e15, 4.9e-324 };

	switch (below(m, 4)) {
	case 0:
		return values[below(m, sizeof(values) / sizeof(values[0]))];
	case 1:
		return chance(m, 50) ? NAN : (chance(m, 50) ? INFINITY : -INFINITY);
	case 2:
		return v * (chance(m, 50) ? 2 : 0.5);
	default:
		return -v;
	}
}

/* What analyses look for in names, and what breaks printers. */
static const char *const words[] = {
	"cudaLaunchKernel", "cudaGraphLaunch", "cuGraphLaunch", "cudaMemcpyAsync", "cudaMemsetAsync",
	"cudaMalloc", "cudaFree", "cudaStreamSynchronize", "cudaDeviceSynchronize", "cuLaunchKernel",
	"step", "forward", "backward", "optimizer", "zero_grad", "data", "comm", "other",
	"step/forward/layer.0/attn/softmax", "attn/softmax", "ffn/w1", "lm_head", "layer.0", "layer.11",
	"comm/allreduce/bucket.0", "allreduce/bucket.0", "allreduce", "allgather", "reducescatter",
	"broadcast", "reduce", "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
	"flash_fwd_kernel", "sm90_xmma_gemm_bf16bf16_bf16f32", "ampere_sgemm_128x64_nn", "adamw_kernel",
	"softmax_kernel", "rmsnorm_kernel", "cross_entropy_backward_kernel", "void at::native::add<float>()",
	"aten::mm", "aten::linear", "nccl:all_reduce", "[CUDA memcpy Host-to-Device]", "[CUDA memset]",
	"small", "custom", "bf16", "fp32", "tf32", "fp16", "train", "fwdbwd", "naive", "flash",
	"bucket", "flat", "overlap", "plain", "fused", "cupti", "synthetic", "all", "ok", "oom",
	"error", "interrupted", "whole run", "built-in step", "NVTX range 'step'",
	"optimizer steps (PyTorch)", "outermost module calls (PyTorch, no optimizer step)",
	"cudaProfilerStart/Stop", "1.5", "2.28.9", "", " ", "/", "//", "a/", "/a", "*", "?", "[",
	"[!a]", "\\", "%s%n%d", "\"", "'", "<script>alert(1)</script>", "&amp;", "a,b", "\"a\",\"b\"",
	"line\nbreak", "tab\there", "\r", "\x01\x7f", "\xc3\xa9t\xc3\xa9", "\xe2\x80\xae", "\xff\xfe",
	"\xc0\x80", "\xed\xa0\x80", "\xf4\x90\x80\x80", "\xe2\x82", "nan", "inf", "-1", "0x10",
	"1e309", "layer.4294967295", "layer.-1", "layer.99999999999999999999",
};
#define N_WORDS (sizeof(words) / sizeof(words[0]))

/* A changed copy of s: malloc'd (NULL on out of memory). */
static char *mutate_text(struct mut *m, const char *s)
{
	size_t n = strlen(s), cap;
	char *p;

	switch (below(m, 6)) {
	case 0:
		return strdup(words[below(m, N_WORDS)]);
	case 1: {                                   /* a word appended or put in front */
		const char *w = words[below(m, N_WORDS)];
		const char *sep = chance(m, 50) ? "/" : "";
		if (n + strlen(w) + 1 > MUTATE_MAX_STRING)
			return strdup(w);
		cap = n + strlen(w) + 2;
		if ((p = malloc(cap)))
			snprintf(p, cap, chance(m, 50) ? "%s%s%s" : "%3$s%2$s%1$s", s, sep, w);
		return p;
	}
	case 2:                                     /* cut */
		return strndup(s, below(m, n + 1));
	case 3: {                                   /* doubled, up to the limit */
		size_t k = n ? n : 1;
		cap = k * 2 < MUTATE_MAX_STRING ? k * 2 : MUTATE_MAX_STRING;
		if (!(p = malloc(cap + 1)))
			return NULL;
		for (size_t i = 0; i < cap; i++)
			p[i] = n ? s[i % n] : 'a';
		p[cap] = '\0';
		return p;
	}
	case 4:                                     /* a byte changed (a NUL would shorten it) */
		if (!(p = strdup(s)) || !n)
			return p;
		p[below(m, n)] = (char)(1 + below(m, 255));
		return p;
	default: {                                  /* a byte put in */
		if (!(p = malloc(n + 2)))
			return NULL;
		size_t at = below(m, n + 1);
		memcpy(p, s, at);
		p[at] = (char)(1 + below(m, 255));
		memcpy(p + at + 1, s + at, n - at + 1);
		return p;
	}
	}
}

static void mutate_string(struct mut *m, char **s)
{
	char *p = mutate_text(m, *s ? *s : "");

	if (!p)
		return;
	if (*s && *s != protobuf_c_empty_string)
		free(*s);
	*s = p;
}

/* ---- any field, by reflection --------------------------------------------------------- */

static void mutate_message(struct mut *m, ProtobufCMessage *msg, int depth);
static uint32_t intern(struct edit_bundle *b, const char *s);

static size_t element_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	default:
		return 4;
	}
}

/* One value of field f at p (an element of a repeated field, or the field). */
static void mutate_value(struct mut *m, const ProtobufCFieldDescriptor *f, void *p, int depth)
{
	if (f->type == PROTOBUF_C_TYPE_SINT64 || f->type == PROTOBUF_C_TYPE_UINT64) {
		/* an event's times, and the times of header, chunk and footer */
		if (!strcmp(f->name, "t") || !strcmp(f->name, "dur") || strstr(f->name, "_ns")) {
			*(uint64_t *)p = mutate_time(m, *(uint64_t *)p);
			return;
		}
	}
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
		*(uint64_t *)p = mutate_number(m, *(uint64_t *)p);
		break;
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumDescriptor *e = f->descriptor;
		if (chance(m, 70) && e->n_values)
			*(uint32_t *)p = (uint32_t)e->values[below(m, e->n_values)].value;
		else
			*(uint32_t *)p = (uint32_t)mutate_number(m, *(uint32_t *)p);
		break;
	}
	case PROTOBUF_C_TYPE_BOOL:
		*(protobuf_c_boolean *)p = !*(protobuf_c_boolean *)p;
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		*(float *)p = (float)mutate_double(m, *(float *)p);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		*(double *)p = mutate_double(m, *(double *)p);
		break;
	case PROTOBUF_C_TYPE_STRING:
		mutate_string(m, (char **)p);
		break;
	case PROTOBUF_C_TYPE_MESSAGE: {
		ProtobufCMessage **sub = p;
		if (!*sub)
			*sub = edit_new(f->descriptor);
		if (*sub)
			mutate_message(m, *sub, depth + 1);
		break;
	}
	case PROTOBUF_C_TYPE_BYTES:
		break;
	default:
		*(uint32_t *)p = (uint32_t)mutate_number(m, *(uint32_t *)p);
		break;
	}
}

static void free_element(const ProtobufCFieldDescriptor *f, void *p)
{
	if (f->type == PROTOBUF_C_TYPE_STRING)
		free(*(char **)p);
	else if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(ProtobufCMessage **)p)
		protobuf_c_message_free_unpacked(*(ProtobufCMessage **)p, NULL);
}

/* A repeated field: an element changed, removed or doubled, or one added. */
static void mutate_repeated(struct mut *m, const ProtobufCFieldDescriptor *f, char *base, int depth)
{
	size_t *n = (size_t *)(base + f->quantifier_offset), size = element_size(f->type);
	char **arr = (char **)(base + f->offset);
	size_t i = below(m, *n);
	char *grown;

	if (*n && chance(m, 60)) {
		mutate_value(m, f, *arr + i * size, depth);
	} else if (*n && chance(m, 50)) {
		free_element(f, *arr + i * size);
		memmove(*arr + i * size, *arr + (i + 1) * size, (*n - i - 1) * size);
		(*n)--;
	} else if (*n < 4096 && (grown = realloc(*arr, (*n + 1) * size))) {
		*arr = grown;
		memset(grown + *n * size, 0, size);
		if (*n && f->type == PROTOBUF_C_TYPE_MESSAGE)
			*(ProtobufCMessage **)(grown + *n * size) = edit_copy(*(ProtobufCMessage **)(grown + i * size));
		else if (*n && f->type == PROTOBUF_C_TYPE_STRING)
			*(char **)(grown + *n * size) = strdup(*(char **)(grown + i * size));
		else if (*n && f->type != PROTOBUF_C_TYPE_BYTES)
			memcpy(grown + *n * size, grown + i * size, size);
		else if (f->type == PROTOBUF_C_TYPE_STRING)
			*(char **)(grown + *n * size) = strdup(words[below(m, N_WORDS - 1)]);
		else if (f->type == PROTOBUF_C_TYPE_MESSAGE)
			*(ProtobufCMessage **)(grown + *n * size) = edit_new(f->descriptor);
		if ((f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE) &&
		    !*(void **)(grown + *n * size))
			return;
		(*n)++;
	}
}

/* A field of msg, or of a message inside it. */
static void mutate_message(struct mut *m, ProtobufCMessage *msg, int depth)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	char *base = (char *)msg;

	if (depth > 4 || !d->n_fields)
		return;
	for (int tries = 0; tries < 8; tries++) {
		const ProtobufCFieldDescriptor *f = &d->fields[below(m, d->n_fields)];
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(uint32_t *)(base + f->quantifier_offset) != f->id)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED)
			mutate_repeated(m, f, base, depth);
		else
			mutate_value(m, f, base + f->offset, depth);
		return;
	}
}

/* ---- events ------------------------------------------------------------------------------ */

static size_t n_events(struct mut *m)
{
	return edit_event_count(m->b);
}

/* A random event of the bundle, of `kind` (0: any); NULL when none. */
static Steptrace__Event *pick(struct mut *m, Steptrace__Event__KindCase kind)
{
	size_t n = n_events(m), start = below(m, n);

	for (size_t k = 0; k < n; k++) {
		Steptrace__Event *e = edit_event(m->b, (start + k) % n, NULL, NULL);
		if (e && (!kind || e->kind_case == kind))
			return e;
	}
	return NULL;
}

static bool is_activity(const Steptrace__Event *e)
{
	return e->kind_case == STEPTRACE__EVENT__KIND_KERNEL || e->kind_case == STEPTRACE__EVENT__KIND_MEMCPY ||
	       e->kind_case == STEPTRACE__EVENT__KIND_MEMSET;
}

/* The string ids an event names, up to 4 into refs; how many. */
static size_t string_refs(Steptrace__Event *e, uint32_t **refs)
{
	switch (e->kind_case) {
	case STEPTRACE__EVENT__KIND_KERNEL:
		refs[0] = &e->kernel->name;
		return 1;
	case STEPTRACE__EVENT__KIND_API:
		refs[0] = &e->api->name;
		return 1;
	case STEPTRACE__EVENT__KIND_RANGE:
		refs[0] = &e->range->name;
		refs[1] = &e->range->domain;
		return 2;
	case STEPTRACE__EVENT__KIND_OP:
		refs[0] = &e->op->name;
		refs[1] = &e->op->path;
		refs[2] = &e->op->kind;
		refs[3] = &e->op->phase;
		return 4;
	default:
		return 0;
	}
}

/* The op id an event names (its own for an op), NULL for none. */
static uint32_t *op_ref(Steptrace__Event *e)
{
	switch (e->kind_case) {
	case STEPTRACE__EVENT__KIND_KERNEL:
		return &e->kernel->op;
	case STEPTRACE__EVENT__KIND_MEMCPY:
		return &e->memcpy->op;
	case STEPTRACE__EVENT__KIND_MEMSET:
		return &e->memset->op;
	case STEPTRACE__EVENT__KIND_ALLOC:
		return &e->alloc->op;
	case STEPTRACE__EVENT__KIND_FREE:
		return &e->free->op;
	case STEPTRACE__EVENT__KIND_OOM:
		return &e->oom->op;
	case STEPTRACE__EVENT__KIND_OP:
		return &e->op->id;
	default:
		return NULL;
	}
}

/* The host thread of an event, NULL for GPU work. */
static uint64_t *thread_ref(Steptrace__Event *e)
{
	switch (e->kind_case) {
	case STEPTRACE__EVENT__KIND_API:
		return &e->api->thread;
	case STEPTRACE__EVENT__KIND_RANGE:
		return &e->range->thread;
	case STEPTRACE__EVENT__KIND_STEP:
		return &e->step->thread;
	case STEPTRACE__EVENT__KIND_OVERHEAD:
		return &e->overhead->thread;
	case STEPTRACE__EVENT__KIND_SYNC:
		return &e->sync->thread;
	default:
		return NULL;
	}
}

/* The stream of GPU work, NULL for the rest. */
static uint32_t *stream_ref(Steptrace__Event *e)
{
	switch (e->kind_case) {
	case STEPTRACE__EVENT__KIND_KERNEL:
		return &e->kernel->stream;
	case STEPTRACE__EVENT__KIND_MEMCPY:
		return &e->memcpy->stream;
	case STEPTRACE__EVENT__KIND_MEMSET:
		return &e->memset->stream;
	case STEPTRACE__EVENT__KIND_SYNC:
		return &e->sync->stream;
	default:
		return NULL;
	}
}

/* Address and size of a memory event, NULL for the rest. */
static uint64_t *address_ref(Steptrace__Event *e, uint64_t **size)
{
	switch (e->kind_case) {
	case STEPTRACE__EVENT__KIND_ALLOC:
		*size = &e->alloc->size;
		return &e->alloc->address;
	case STEPTRACE__EVENT__KIND_FREE:
		*size = &e->free->size;
		return &e->free->address;
	case STEPTRACE__EVENT__KIND_MEM_TAG:
		*size = &e->mem_tag->size;
		return &e->mem_tag->address;
	default:
		return NULL;
	}
}

static uint64_t start_of(const Steptrace__Event *e)
{
	return (uint64_t)e->t;
}

/* A string id: mostly one the bundle defines, at times the first it does not, or any. */
static uint32_t string_id(struct mut *m)
{
	uint32_t n = edit_string_count(m->b);

	if (chance(m, 90))
		return (uint32_t)below(m, n);
	return chance(m, 50) ? n : (uint32_t)mutate_number(m, n);
}

/* What analyses join on, taken from another event. */
static void link_event(struct mut *m)
{
	Steptrace__Event *e = pick(m, 0), *o;
	uint32_t *refs[4], *op, *stream;
	uint64_t *thread, *addr, *size, *oaddr, *osize;
	int64_t *corr;
	size_t n;

	if (!e)
		return;
	switch (below(m, 7)) {
	case 0:                                     /* a launch's call, or another's work */
		if (!(corr = edit_correlation(e)))
			return;
		o = chance(m, 70) ? pick(m, is_activity(e) ? STEPTRACE__EVENT__KIND_API : 0) : pick(m, 0);
		if (o && edit_correlation(o))
			*corr = *edit_correlation(o);
		break;
	case 1:                                     /* a string */
		if ((n = string_refs(e, refs)))
			*refs[below(m, n)] = string_id(m);
		break;
	case 2:                                     /* a block: freed, freed twice, reused */
		if (!(addr = address_ref(e, &size)))
			return;
		o = pick(m, chance(m, 70) ? STEPTRACE__EVENT__KIND_ALLOC : STEPTRACE__EVENT__KIND_FREE);
		if (o && (oaddr = address_ref(o, &osize))) {
			*addr = *oaddr;
			if (chance(m, 60))
				*size = *osize;
		}
		break;
	case 3:                                     /* an op */
		if (!(op = op_ref(e)))
			return;
		o = pick(m, STEPTRACE__EVENT__KIND_OP);
		*op = o && chance(m, 85) ? o->op->id : (uint32_t)mutate_number(m, *op);
		break;
	case 4:                                     /* a thread */
		if (!(thread = thread_ref(e)))
			return;
		o = pick(m, 0);
		if (o && thread_ref(o))
			*thread = *thread_ref(o);
		break;
	case 5:                                     /* a stream */
		if (!(stream = stream_ref(e)))
			return;
		o = pick(m, 0);
		if (o && stream_ref(o))
			*stream = *stream_ref(o);
		break;
	default:                                    /* a step's index and kind */
		if (e->kind_case != STEPTRACE__EVENT__KIND_STEP || !(o = pick(m, STEPTRACE__EVENT__KIND_STEP)))
			return;
		if (chance(m, 50))
			e->step->index = o->step->index;
		else
			e->step->warmup = !e->step->warmup;
		break;
	}
}

/* An event's start or end put on another's, or far away. */
static void time_event(struct mut *m)
{
	Steptrace__Event *e = pick(m, 0), *o = pick(m, 0);
	uint64_t t, end;

	if (!e || !o)
		return;
	t = start_of(e);
	end = start_of(o) + o->dur;
	switch (below(m, 8)) {
	case 0:
		e->t = o->t;
		break;
	case 1:                                     /* starts where the other ends */
		e->t = (int64_t)end;
		break;
	case 2:                                     /* ends where the other ends */
		e->dur = end - t;
		break;
	case 3:                                     /* from inside the other to past its end: no nesting */
		if (o->dur > 1) {
			e->t = (int64_t)(start_of(o) + 1 + below(m, o->dur - 1));
			e->dur = end - start_of(e) + 1 + below(m, o->dur);
		}
		break;
	case 4:
		e->dur = chance(m, 50) ? 0 : mutate_time(m, e->dur);
		break;
	case 5:
		e->t = (int64_t)mutate_time(m, t);
		break;
	case 6:
		e->dur = o->dur;
		break;
	default:                                    /* the same span as the other */
		e->t = o->t;
		e->dur = o->dur;
		break;
	}
}

/* NVTX: a depth changed, or two ranges' places swapped (the order they closed in). */
static void nest_ranges(struct mut *m)
{
	Steptrace__Event *e = pick(m, STEPTRACE__EVENT__KIND_RANGE), *o;
	uint32_t depths[] = { 0, 1, 2, 4095, 4096, 4097 };

	if (!e)
		return;
	if (chance(m, 50)) {
		if (chance(m, 20))
			e->range->depth = depths[below(m, chance(m, 90) ? 5 : 6)];
		else if (e->range->depth && chance(m, 50))
			e->range->depth--;
		else
			e->range->depth++;
	} else if ((o = pick(m, STEPTRACE__EVENT__KIND_RANGE))) {
		Steptrace__Range *r = e->range;
		e->range = o->range;
		o->range = r;
	}
}

/* Where an event sits: its chunk and index. */
static Steptrace__EventChunk *place(struct mut *m, size_t *at)
{
	size_t member, n = n_events(m);

	if (!n || !edit_event(m->b, below(m, n), &member, at))
		return NULL;
	return edit_chunk(&m->b->m[member]);
}

static void insert_event(Steptrace__EventChunk *c, size_t at, Steptrace__Event *e)
{
	Steptrace__Event **p = realloc(c->events, (c->n_events + 1) * sizeof(*p));

	if (!p) {
		protobuf_c_message_free_unpacked(&e->base, NULL);
		return;
	}
	c->events = p;
	memmove(p + at + 1, p + at, (c->n_events - at) * sizeof(*p));
	p[at] = e;
	c->n_events++;
}

static Steptrace__Event *remove_event(Steptrace__EventChunk *c, size_t at)
{
	Steptrace__Event *e = c->events[at];

	memmove(c->events + at, c->events + at + 1, (c->n_events - at - 1) * sizeof(*c->events));
	c->n_events--;
	return e;
}

/* A new event of a random kind: mostly a copy of one of that kind at another time, or one of zeros. */
static Steptrace__Event *new_event(struct mut *m)
{
	const ProtobufCMessageDescriptor *d = &steptrace__event__descriptor;
	/* t and dur come first: an event of no kind, now and then */
	const ProtobufCFieldDescriptor *f = &d->fields[chance(m, 3) ? below(m, 2) : 2 + below(m, d->n_fields - 2)];
	bool oneof = f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF;
	ProtobufCMessage **sub;
	Steptrace__Event *e, *o;

	if (oneof && chance(m, 70) && (o = pick(m, (Steptrace__Event__KindCase)f->id))) {
		if ((e = (Steptrace__Event *)edit_copy(&o->base)))
			e->t = (int64_t)mutate_time(m, (uint64_t)e->t);
		return e;
	}
	if (!(e = (Steptrace__Event *)edit_new(d)))
		return NULL;
	if ((o = pick(m, 0)))
		e->t = o->t;
	if (!oneof)                                 /* t or dur: an event of no kind */
		return e;
	sub = (ProtobufCMessage **)((char *)e + f->offset);
	if (!(*sub = edit_new(f->descriptor)))
		return e;
	*(uint32_t *)((char *)e + f->quantifier_offset) = f->id;
	for (int i = (int)below(m, 4); i > 0; i--)
		mutate_message(m, *sub, 0);
	return e;
}

/* Events deleted, doubled, moved, swapped, made anew, or given another kind. */
static void shuffle_events(struct mut *m)
{
	size_t at, at2;
	Steptrace__EventChunk *c = place(m, &at), *c2 = place(m, &at2);
	Steptrace__Event *e;

	if (!c) {
		for (size_t i = 0; i < m->b->n; i++)
			if (m->b->m[i].type == EDIT_EVENTS && m->b->m[i].msg && (e = new_event(m))) {
				insert_event(edit_chunk(&m->b->m[i]), 0, e);
				break;
			}
		return;
	}
	switch (below(m, 6)) {
	case 0:
		protobuf_c_message_free_unpacked(&remove_event(c, at)->base, NULL);
		break;
	case 1:
		if ((e = (Steptrace__Event *)edit_copy(&c->events[at]->base)))
			insert_event(c2, at2, e);
		break;
	case 2:                                     /* moved (another chunk perhaps) */
		e = remove_event(c, at);
		insert_event(c2, c == c2 && at2 > c2->n_events ? c2->n_events : at2, e);
		break;
	case 3:
		e = c->events[at];
		c->events[at] = c2->events[at2];
		c2->events[at2] = e;
		break;
	case 4:
		if ((e = new_event(m)))
			insert_event(c2, at2, e);
		break;
	default: {                                  /* another kind at the same time */
		Steptrace__Event *o = pick(m, 0);
		if (!o || o == c->events[at] || !(e = (Steptrace__Event *)edit_copy(&o->base)))
			return;
		e->t = c->events[at]->t;
		e->dur = c->events[at]->dur;
		protobuf_c_message_free_unpacked(&c->events[at]->base, NULL);
		c->events[at] = e;
		break;
	}
	}
}

/*
 * A run of events repeated after its end, times and correlation ids
 * shifted: another step, another period of launches.
 */
static void repeat_events(struct mut *m)
{
	size_t at, len;
	Steptrace__EventChunk *c = place(m, &at);
	uint64_t first = UINT64_MAX, last = 0, corr_lo = UINT64_MAX, corr_hi = 0;

	if (!c)
		return;
	len = 1 + below(m, c->n_events - at < 512 ? c->n_events - at : 512);
	for (size_t i = at; i < at + len; i++) {
		Steptrace__Event *e = c->events[i];
		int64_t *corr = edit_correlation(e);
		if (start_of(e) < first)
			first = start_of(e);
		if (start_of(e) + e->dur > last)
			last = start_of(e) + e->dur;
		if (corr && (uint64_t)*corr < corr_lo)
			corr_lo = (uint64_t)*corr;
		if (corr && (uint64_t)*corr > corr_hi)
			corr_hi = (uint64_t)*corr;
	}
	for (size_t i = 0; i < len; i++) {
		Steptrace__Event *e = (Steptrace__Event *)edit_copy(&c->events[at + i]->base);
		int64_t *corr;
		if (!e)
			return;
		e->t = (int64_t)(start_of(e) + (last - first) + (chance(m, 90) ? 1 : 0));
		if ((corr = edit_correlation(e)) && corr_hi >= corr_lo)
			*corr += (int64_t)(corr_hi - corr_lo + 1);
		insert_event(c, c->n_events, e);
	}
}

/* ---- issue 39's paths: deep paths, NCCL payloads, MemTags, many ranks -------------------------- */

/* The chunk events are appended to: the bundle's last decoded one, NULL when none. */
static Steptrace__EventChunk *last_chunk(struct mut *m)
{
	for (size_t i = m->b->n; i-- > 0;)
		if (m->b->m[i].type == EDIT_EVENTS && m->b->m[i].msg)
			return edit_chunk(&m->b->m[i]);
	return NULL;
}

/* An event of `kind` made anew (fields zero), or NULL. */
static Steptrace__Event *event_of(Steptrace__Event__KindCase kind)
{
	const ProtobufCMessageDescriptor *d = &steptrace__event__descriptor;
	const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)kind);
	Steptrace__Event *e = (Steptrace__Event *)edit_new(d);

	if (!e || !f)
		return e;
	*(ProtobufCMessage **)((char *)e + f->offset) = edit_new(f->descriptor);
	e->kind_case = kind;
	return e;
}

/*
 * A nest of up to 1,500 ranges of one-letter names on one thread around the
 * bundle's events: paths of kilobytes, whose every tail kernels:GLOB
 * matches, that the report's layers and NCCL's calls walk.
 */
static void deep_ranges(struct mut *m)
{
	static const uint32_t depths[] = { 8, 64, 511, 1023, 1500 };
	Steptrace__EventChunk *c = last_chunk(m);
	Steptrace__Event *o = pick(m, STEPTRACE__EVENT__KIND_API);
	uint64_t lo = UINT64_MAX, hi = 0, thread = o ? o->api->thread : 1;
	uint32_t depth = depths[below(m, 5)], base = chance(m, 50) ? 0 : (uint32_t)below(m, 4);
	size_t n = n_events(m);

	if (!c)
		return;
	for (size_t i = 0; i < n; i++) {
		Steptrace__Event *e = edit_event(m->b, i, NULL, NULL);

		if (e && start_of(e) < lo)
			lo = start_of(e);
		if (e && start_of(e) + e->dur > hi)
			hi = start_of(e) + e->dur;
	}
	if (lo == UINT64_MAX)
		lo = hi = 0;
	for (uint32_t d = depth; d-- > 0;) {   /* written as they close: innermost first */
		char name[2] = { (char)('a' + d % 26), 0 };
		Steptrace__Event *e = event_of(STEPTRACE__EVENT__KIND_RANGE);

		if (!e || !e->range)
			return;
		e->t = (int64_t)(lo > d ? lo - d : 0);
		e->dur = hi - (uint64_t)e->t + d;
		e->range->name = intern(m->b, chance(m, 90) ? name : "layer.3");
		e->range->thread = thread;
		e->range->depth = base + d;
		insert_event(c, c->n_events, e);
	}
}

/*
 * NCCL: a kernel renamed as one of NCCL's (its collective in the name, or
 * the generic kernel that leaves it to the range), and an NCCL range
 * (domain "NCCL") around its launch, with a communicator and a message
 * size: interesting numbers, 2^53 and 2^64 - 1 among them.
 */
static void nccl_payload(struct mut *m)
{
	static const char *const kernels[] = {
		"ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
		"ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
		"ncclKernel_ReduceScatter_RING_SIMPLE_Sum_bf16(ncclWorkElem)",
		"ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
		"ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
	};
	static const char *const calls[] = { "ncclAllReduce", "ncclAllGather", "ncclReduceScatter", "ncclBroadcast",
					     "ncclSend", "ncclGroupEnd" };
	Steptrace__Event *k = pick(m, STEPTRACE__EVENT__KIND_KERNEL), *api = NULL, *e;
	Steptrace__EventChunk *c = last_chunk(m);
	size_t n = n_events(m);

	if (!k || !c)
		return;
	k->kernel->name = intern(m->b, kernels[below(m, 5)]);
	for (size_t i = 0; i < n && !api; i++) {
		Steptrace__Event *x = edit_event(m->b, i, NULL, NULL);

		if (x && x->kind_case == STEPTRACE__EVENT__KIND_API && x->api->correlation == k->kernel->correlation)
			api = x;
	}
	if (!api || chance(m, 10))
		return;
	if (!(e = event_of(STEPTRACE__EVENT__KIND_RANGE)) || !e->range)
		return;
	e->t = api->t - (int64_t)below(m, 100);
	e->dur = api->dur + 200;
	e->range->name = intern(m->b, calls[below(m, 6)]);
	e->range->domain = intern(m->b, "NCCL");
	e->range->thread = api->api->thread;
	e->range->depth = (uint32_t)below(m, 4);
	e->range->comm = chance(m, 60) ? 1 + below(m, 3) : mutate_number(m, 1);
	e->range->bytes = chance(m, 60) ? 4096ull << below(m, 20) : interesting[below(m, N_INTERESTING)];
	insert_event(c, c->n_events, e);
}

/*
 * MemTags (the program naming a block's category): at a live allocation's
 * address, with its size or another, or anywhere; and an allocation
 * overlapping a live one at another address.
 */
static void mem_tags(struct mut *m)
{
	Steptrace__Event *a = pick(m, STEPTRACE__EVENT__KIND_ALLOC), *e;
	Steptrace__EventChunk *c = last_chunk(m);

	if (!c)
		return;
	if (a && chance(m, 30)) {                   /* a block overlapping it */
		if (!(e = (Steptrace__Event *)edit_copy(&a->base)))
			return;
		e->alloc->address += chance(m, 50) ? a->alloc->size / 2 : 1;
		e->t = a->t + 1 + (int64_t)below(m, 1000);
		insert_event(c, c->n_events, e);
		return;
	}
	if (!(e = event_of(STEPTRACE__EVENT__KIND_MEM_TAG)) || !e->mem_tag)
		return;
	e->t = a ? a->t + (int64_t)below(m, 1000) : (int64_t)below(m, 1000000);
	e->mem_tag->address = a && chance(m, 80) ? a->alloc->address + (chance(m, 80) ? 0 : below(m, 4096))
						 : mutate_number(m, 0x10000);
	e->mem_tag->size = a && chance(m, 70) ? a->alloc->size : mutate_number(m, 4096);
	e->mem_tag->category = (Steptrace__MemCategory)below(m, 9);
	e->mem_tag->device = a && chance(m, 90) ? a->alloc->device : (uint32_t)below(m, 3);
	insert_event(c, c->n_events, e);
}

/* What --what-if ranks=N reads: the header's parameter count and bucket size, anything. */
static void change_ddp(struct mut *m, Steptrace__Header *h)
{
	static const double buckets[] = { 0, 1e-300, 1e-6, 0.5, 25, 1e6, 1e300, 1e308 };

	if (!h->config)
		return;
	if (chance(m, 50))
		h->config->parameters = chance(m, 50) ? interesting[below(m, N_INTERESTING)] : 1000000ull << below(m, 40);
	else
		h->config->bucket_mb = chance(m, 80) ? buckets[below(m, 8)] : mutate_double(m, h->config->bucket_mb);
}

/* Ranks' clocks apart: a time base moved by a day, 146 years, or a little. */
static void change_clock(struct mut *m, Steptrace__Header *h)
{
	static const uint64_t by[] = { 1, 1000000, 86400000000000ull, 86401000000000ull, 1ull << 62, (1ull << 62) + 1 };

	h->time_base_ns += chance(m, 80) ? by[below(m, 6)] : mutate_number(m, 0);
	if (chance(m, 30))
		h->created_unix_ns += (int64_t)by[below(m, 5)];
}

/* ---- strings, members, the header and footer ---------------------------------------------- */

/* A random member of `type`, its index; -1 when none. */
static long pick_member(struct mut *m, enum edit_type type)
{
	size_t n = m->b->n, start = below(m, n);

	for (size_t k = 0; k < n; k++) {
		size_t i = (start + k) % n;
		if (m->b->m[i].type == type && m->b->m[i].msg)
			return (long)i;
	}
	return -1;
}

/* A member put in at `at` (the ones after it move up); NULL when full. */
static struct edit_member *insert_member(struct edit_bundle *b, size_t at)
{
	if (b->n == EDIT_MAX_MEMBERS)
		return NULL;
	memmove(&b->m[at + 1], &b->m[at], (b->n - at) * sizeof(b->m[0]));
	memset(&b->m[at], 0, sizeof(b->m[0]));
	b->n++;
	return &b->m[at];
}

static void remove_member(struct edit_bundle *b, size_t at)
{
	edit_member_clear(&b->m[at]);
	memmove(&b->m[at], &b->m[at + 1], (b->n - at - 1) * sizeof(b->m[0]));
	b->n--;
}

static void change_strings(struct mut *m)
{
	long i = pick_member(m, EDIT_STRINGS);
	Steptrace__StringTable *t;
	struct edit_member *n;
	size_t k;

	if (i < 0)
		return;
	t = edit_strings(&m->b->m[i]);
	k = below(m, t->n_strings);
	switch (below(m, 8)) {
	case 0:
	case 1:
	case 2:
	case 3:
	case 4:
		if (t->n_strings)
			mutate_string(m, &t->strings[k]);
		break;
	case 5:                                     /* another string's text */
		if (t->n_strings) {
			const char *o = edit_string(m->b, string_id(m));
			if (o)
				edit_set_string(&t->strings[k], o);
		}
		break;
	case 6:                                     /* removed: the ids after it move down */
		if (t->n_strings) {
			free(t->strings[k]);
			memmove(t->strings + k, t->strings + k + 1, (t->n_strings - k - 1) * sizeof(char *));
			t->n_strings--;
		}
		break;
	default:                                    /* the table split in two */
		if (t->n_strings < 2 || !(n = insert_member(m->b, (size_t)i + 1)))
			return;
		n->type = EDIT_STRINGS;
		snprintf(n->name, sizeof(n->name), "strings-x.pb");
		if (!(n->msg = edit_new(&steptrace__string_table__descriptor)) ||
		    !(edit_strings(n)->strings = malloc((t->n_strings - k) * sizeof(char *)))) {
			remove_member(m->b, (size_t)i + 1);
			return;
		}
		k = k ? k : 1;
		memcpy(edit_strings(n)->strings, t->strings + k, (t->n_strings - k) * sizeof(char *));
		edit_strings(n)->n_strings = t->n_strings - k;
		t->n_strings = k;
		break;
	}
}

/* Chunks split and merged. */
static void change_chunks(struct mut *m)
{
	long i = pick_member(m, EDIT_EVENTS);
	Steptrace__EventChunk *c, *nc;
	struct edit_member *n;
	size_t k;

	if (i < 0)
		return;
	c = edit_chunk(&m->b->m[i]);
	if (chance(m, 50) || (size_t)i + 1 == m->b->n || m->b->m[i + 1].type != EDIT_EVENTS ||
	    !m->b->m[i + 1].msg) {
		if (c->n_events < 2 || !(n = insert_member(m->b, (size_t)i + 1)))
			return;
		c = edit_chunk(&m->b->m[i]);
		n->type = EDIT_EVENTS;
		snprintf(n->name, sizeof(n->name), "events-x.pb");
		if (!(n->msg = edit_new(&steptrace__event_chunk__descriptor)) ||
		    !(edit_chunk(n)->events = malloc(c->n_events * sizeof(*c->events)))) {
			remove_member(m->b, (size_t)i + 1);
			return;
		}
		k = 1 + below(m, c->n_events - 1);
		memcpy(edit_chunk(n)->events, c->events + k, (c->n_events - k) * sizeof(*c->events));
		edit_chunk(n)->n_events = c->n_events - k;
		edit_chunk(n)->base_ns = c->base_ns;
		c->n_events = k;
		return;
	}
	nc = edit_chunk(&m->b->m[i + 1]);
	Steptrace__Event **p = realloc(c->events, (c->n_events + nc->n_events) * sizeof(*p));
	if (!p)
		return;
	if (nc->n_events)   /* an empty chunk's events may be NULL, which memcpy may not take */
		memcpy(p + c->n_events, nc->events, nc->n_events * sizeof(*p));
	c->events = p;
	c->n_events += nc->n_events;
	nc->n_events = 0;
	remove_member(m->b, (size_t)i + 1);
}

/* Members dropped, doubled, swapped, renamed, or changed byte by byte. */
static void change_members(struct mut *m)
{
	static const char *const names[] = { "header.pb", "footer.pb", "strings-000000.pb",
					     "events-000000.pb", "events-000001.pb", "extra.pb" };
	struct edit_bundle *b = m->b;
	size_t i = below(m, b->n), j = below(m, b->n);
	struct edit_member tmp, *n;

	if (!b->n)
		return;
	switch (below(m, 5)) {
	case 0:
		if (b->n > 1)
			remove_member(b, i);
		break;
	case 1: {
		size_t len;
		uint8_t *p = edit_member_bytes(&b->m[i], &len);
		if (!p || !(n = insert_member(b, j))) {
			free(p);
			return;
		}
		*n = b->m[i < j ? i : i + 1];
		n->msg = NULL;
		n->raw = p;
		n->len = len;
		edit_member_decode(n);
		break;
	}
	case 2:
		tmp = b->m[i];
		b->m[i] = b->m[j];
		b->m[j] = tmp;
		break;
	case 3:
		edit_member_rename(&b->m[i], names[below(m, 6)]);
		break;
	default: {                                  /* libFuzzer's mutation of the member's bytes */
		size_t len, max;
		uint8_t *p = edit_member_bytes(&b->m[i], &len), *q;
		max = len + 64;
		if (!p || !(q = realloc(p, max))) {
			free(p);
			return;
		}
		len = LLVMFuzzerMutate(q, len, max);
		free(b->m[i].raw);
		if (b->m[i].msg)
			protobuf_c_message_free_unpacked(b->m[i].msg, NULL);
		b->m[i].msg = NULL;
		b->m[i].raw = q;
		b->m[i].len = len;
		edit_member_decode(&b->m[i]);
		break;
	}
	}
}

/* Which rank of how many, of which run. */
static void change_rank(struct mut *m, Steptrace__Header *h)
{
	static const uint32_t worlds[] = { 0, 1, 2, 3, 4, 8, 1024, 65536, 0x7fffffff, 0xffffffff };

	switch (below(m, 4)) {
	case 0:
		h->rank = chance(m, 80) ? (uint32_t)below(m, 5) : (uint32_t)mutate_number(m, h->rank);
		break;
	case 1:
		h->world_size = chance(m, 85) ? (uint32_t)below(m, 6) : worlds[below(m, 10)];
		break;
	case 2:
		h->run_id = chance(m, 50) ? 0 : mutate_number(m, h->run_id);
		break;
	default:
		h->local_rank = (uint32_t)mutate_number(m, h->local_rank);
		break;
	}
}

static void change_header(struct mut *m)
{
	long i = pick_member(m, EDIT_HEADER);
	Steptrace__Header *h;

	if (i < 0)
		return;
	h = edit_header(&m->b->m[i]);
	switch (below(m, 6)) {
	case 0:
		change_rank(m, h);
		break;
	case 4:
		change_ddp(m, h);
		break;
	case 5:
		change_clock(m, h);
		break;
	case 1:                                     /* mostly a version this reader reads */
		h->format_major = chance(m, 90) ? 1 : (uint32_t)below(m, 3);
		h->format_minor = (uint32_t)below(m, chance(m, 90) ? 6 : 8);
		break;
	default:
		mutate_message(m, &h->base, 0);
		break;
	}
}

static void change_footer(struct mut *m)
{
	static const char *const steps_from[] = { "whole run", "built-in step", "NVTX range 'step'",
						  "optimizer steps (PyTorch)", "cudaProfilerStart/Stop", "" };
	long i = pick_member(m, EDIT_FOOTER);
	Steptrace__Footer *f;

	if (i < 0)
		return;
	f = edit_footer(&m->b->m[i]);
	switch (below(m, 3)) {
	case 0:
		edit_set_string(&f->steps_from, steps_from[below(m, 6)]);
		break;
	case 1:
		f->complete = !f->complete;
		break;
	default:
		mutate_message(m, &f->base, 0);
		break;
	}
}

/* ---- the set: ranks and runs --------------------------------------------------------------- */

static Steptrace__Header *header_of(struct edit_bundle *b)
{
	for (size_t i = 0; i < b->n; i++)
		if (b->m[i].type == EDIT_HEADER && b->m[i].msg)
			return edit_header(&b->m[i]);
	return NULL;
}

/* A bundle's copy (its messages copied); 0, or -1. */
static int copy_bundle(struct edit_bundle *to, struct edit_bundle *from)
{
	memset(to, 0, sizeof(*to));
	for (size_t i = 0; i < from->n; i++) {
		struct edit_member *m = &to->m[to->n];
		*m = from->m[i];
		m->msg = NULL;
		if (!(m->raw = edit_member_bytes(&from->m[i], &m->len)))
			break;
		to->n++;
		edit_member_decode(m);
	}
	return to->n == from->n ? 0 : -1;
}

/* The ranks of one run, numbered in order: the world as large as the set, or not. */
static void number_ranks(struct mut *m, uint64_t run_id)
{
	uint32_t world = chance(m, 80) ? (uint32_t)m->s->n : (uint32_t)below(m, 6);

	for (size_t i = 0; i < m->s->n; i++) {
		Steptrace__Header *h = header_of(&m->s->b[i]);
		if (!h)
			continue;
		h->rank = (uint32_t)i;
		h->local_rank = (uint32_t)i;
		h->world_size = world;
		h->run_id = run_id;
	}
}

static void change_set(struct mut *m)
{
	struct edit_set *s = m->s;
	Steptrace__Header *h;
	size_t i = below(m, s->n);

	switch (below(m, 6)) {
	case 5:                                     /* many ranks: copies of one up to the set's room */
		while (s->n < EDIT_MAX_BUNDLES && copy_bundle(&s->b[s->n], &s->b[i]) == 0)
			s->n++;
		s->tar = true;
		h = header_of(&s->b[i]);
		number_ranks(m, h && h->run_id ? h->run_id : 1 + below(m, 1000));
		m->b = &s->b[below(m, s->n)];
		break;
	case 0:                                     /* one more rank: a copy of one */
		if (s->n == EDIT_MAX_BUNDLES || copy_bundle(&s->b[s->n], &s->b[i]) < 0)
			return;
		s->n++;
		s->tar = true;
		h = header_of(&s->b[i]);
		number_ranks(m, h && h->run_id ? h->run_id : 1 + below(m, 1000));
		m->b = &s->b[s->n - 1];
		break;
	case 1:                                     /* one rank fewer */
		if (s->n < 2)
			return;
		for (size_t k = 0; k < s->b[i].n; k++)
			edit_member_clear(&s->b[i].m[k]);
		memmove(&s->b[i], &s->b[i + 1], (s->n - i - 1) * sizeof(s->b[0]));
		s->n--;
		m->b = &s->b[0];
		break;
	case 2:                                     /* two runs: the second half another run id */
		for (size_t k = s->n / 2; s->n > 1 && k < s->n; k++)
			if ((h = header_of(&s->b[k])))
				h->run_id ^= 1 + below(m, 7);
		break;
	case 3:
		if ((h = header_of(&s->b[0])))
			number_ranks(m, h->run_id ? h->run_id : 1);
		break;
	default:
		s->tar = s->n > 1 || !s->tar;
		break;
	}
}

/* ---- consistency --------------------------------------------------------------------------- */

/*
 * What the reader checks made true again (each part most of the time):
 * the header first and the footer last, chunks and string tables named and
 * numbered in order, the footer's counts.
 */
static void fix_bundle(struct mut *m, struct edit_bundle *b)
{
	uint32_t chunks = 0, tables = 0, strings = 1;
	uint64_t events = 0;
	Steptrace__Footer *f = NULL;

	for (size_t i = 1; i < b->n && chance(m, 90); i++)
		if (b->m[i].type == EDIT_HEADER) {
			struct edit_member h = b->m[i];
			memmove(&b->m[1], &b->m[0], i * sizeof(b->m[0]));
			b->m[0] = h;
			break;
		}
	for (size_t i = 0; i + 1 < b->n && chance(m, 90); i++)
		if (b->m[i].type == EDIT_FOOTER) {
			struct edit_member t = b->m[i];
			memmove(&b->m[i], &b->m[i + 1], (b->n - i - 1) * sizeof(b->m[0]));
			b->m[b->n - 1] = t;
			break;
		}
	if (chance(m, 5))
		return;
	for (size_t i = 0; i < b->n; i++) {
		struct edit_member *e = &b->m[i];
		if (e->type == EDIT_EVENTS) {
			snprintf(e->name, sizeof(e->name), "events-%06u.pb", chunks);
			if (e->msg)
				edit_chunk(e)->index = chunks;
			if (e->msg)
				events += edit_chunk(e)->n_events;
			chunks++;
		} else if (e->type == EDIT_STRINGS) {
			snprintf(e->name, sizeof(e->name), "strings-%06u.pb", tables++);
			if (e->msg) {
				edit_strings(e)->first_id = strings;
				strings += (uint32_t)edit_strings(e)->n_strings;
			}
		} else if (e->type == EDIT_FOOTER && e->msg) {
			f = edit_footer(e);
		}
	}
	if (f) {
		f->chunks = chunks;
		f->strings = strings - 1;
		f->events = events;
	}
}

/* At most `max` events: a window of them (from the start at times). */
static void cap_events(struct mut *m, struct edit_bundle *b, size_t max)
{
	size_t n = edit_event_count(b), len;

	if (n <= max)
		return;
	len = max / 2 + below(m, max / 2);
	edit_window(b, chance(m, 25) ? 0 : below(m, n - len), len);
}

/* ---- the mutator ----------------------------------------------------------------------------- */

static void mutate_once(struct mut *m)
{
	struct edit_bundle *b = m->b;

	switch (below(m, 23)) {
	case 20:
		deep_ranges(m);
		break;
	case 21:
		nccl_payload(m);
		break;
	case 22:
		mem_tags(m);
		break;
	case 0: case 1: case 2: {                   /* any field of an event */
		Steptrace__Event *e = pick(m, 0);
		if (e)
			mutate_message(m, &e->base, 0);
		break;
	}
	case 3: case 4: case 5:
		link_event(m);
		break;
	case 6: case 7:
		time_event(m);
		break;
	case 8:
		nest_ranges(m);
		break;
	case 9: case 10:
		shuffle_events(m);
		break;
	case 11:
		repeat_events(m);
		break;
	case 12: case 13:
		change_strings(m);
		break;
	case 14:
		change_chunks(m);
		break;
	case 15:
		change_members(m);
		break;
	case 16:
		change_header(m);
		break;
	case 17:
		change_footer(m);
		break;
	case 18:
		change_set(m);
		break;
	default:                                    /* the file cut short, or bytes after it */
		if (chance(m, 50)) {
			b->cut_after = 1 + below(m, b->n);
			b->cut_delta = chance(m, 50) ? 0 : (int)below(m, 64) - 32;
		} else {
			b->n_tail = 1 + below(m, sizeof(b->tail));
			for (size_t i = 0; i < b->n_tail; i++)
				b->tail[i] = (uint8_t)next(m);
		}
		break;
	}
}

/* The set written into data, fixed up and capped; its size, 0 when it does not fit. */
static size_t finish(struct mut *m, uint8_t *data, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < m->s->n; i++) {
		if (chance(m, 90))
			fix_bundle(m, &m->s->b[i]);
		cap_events(m, &m->s->b[i], MUTATE_MAX_EVENTS);
	}
	for (size_t cap = MUTATE_MAX_EVENTS; cap >= 64 && !(n = edit_pack(m->s, data, max)); cap /= 4)
		for (size_t i = 0; i < m->s->n; i++)
			cap_events(m, &m->s->b[i], cap / 4);
	return n;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed)
{
	struct edit_set s;
	struct mut m = { .rng = seed, .s = &s };
	size_t n;

	if (chance(&m, 3) || edit_parse(&s, data, size) < 0)
		return LLVMFuzzerMutate(data, size, max);
	m.b = &s.b[below(&m, s.n)];
	for (int k = 1 + (int)below(&m, 4); k > 0; k--) {
		mutate_once(&m);
		if (chance(&m, 20))
			m.b = &s.b[below(&m, s.n)];
	}
	n = finish(&m, data, max);
	edit_free(&s);
	return n ? n : LLVMFuzzerMutate(data, size, max);
}

/* The id of string s in b, added to its last table when absent; 0 when it cannot be. */
static uint32_t intern(struct edit_bundle *b, const char *s)
{
	uint32_t n = edit_string_count(b);
	Steptrace__StringTable *t = NULL;
	char **p, *c;

	if (!s || !*s)
		return 0;
	for (uint32_t id = 1; id < n; id++)
		if (!strcmp(edit_string(b, id), s))
			return id;
	for (size_t i = 0; i < b->n; i++)
		if (b->m[i].type == EDIT_STRINGS && b->m[i].msg)
			t = edit_strings(&b->m[i]);
	if (!t || !(c = strdup(s)) || !(p = realloc(t->strings, (t->n_strings + 1) * sizeof(*p))))
		return 0;
	t->strings = p;
	p[t->n_strings++] = c;
	return n;
}

/*
 * Two inputs crossed: the second's first bundle as another rank of the
 * first's, or its header put in, or a run of its events (string ids
 * carried over by text) put into the first.
 */
size_t LLVMFuzzerCustomCrossOver(const uint8_t *d1, size_t s1, const uint8_t *d2, size_t s2,
				 uint8_t *out, size_t max, unsigned int seed)
{
	struct edit_set a, b;
	struct mut m = { .rng = seed, .s = &a };
	size_t n = 0;
	long i, j;

	if (edit_parse(&a, d1, s1) < 0)
		return 0;
	if (edit_parse(&b, d2, s2) < 0) {
		edit_free(&a);
		return 0;
	}
	m.b = &a.b[0];
	switch (below(&m, 3)) {
	case 0:
		if (a.n < EDIT_MAX_BUNDLES) {
			a.b[a.n++] = b.b[0];
			memmove(&b.b[0], &b.b[1], (b.n - 1) * sizeof(b.b[0]));
			b.n--;
			a.tar = true;
		}
		break;
	case 1: {
		struct mut mb = m;
		mb.b = &b.b[0];
		if ((i = pick_member(&m, EDIT_HEADER)) >= 0 && (j = pick_member(&mb, EDIT_HEADER)) >= 0) {
			struct edit_member t = a.b[0].m[i];
			a.b[0].m[i] = b.b[0].m[j];
			b.b[0].m[j] = t;
		}
		break;
	}
	default: {
		struct mut mb = m;
		size_t at, from, len;
		Steptrace__EventChunk *c = place(&m, &at), *o;
		mb.b = &b.b[0];
		if (!c || !(o = place(&mb, &from)))
			break;
		len = 1 + below(&m, o->n_events - from < 256 ? o->n_events - from : 256);
		for (size_t k = 0; k < len; k++) {
			Steptrace__Event *e = (Steptrace__Event *)edit_copy(&o->events[from + k]->base);
			uint32_t *refs[4];
			if (!e)
				break;
			for (size_t r = string_refs(e, refs); r > 0; r--)
				*refs[r - 1] = intern(&a.b[0], edit_string(&b.b[0], *refs[r - 1]));
			insert_event(c, at + k, e);
		}
		break;
	}
	}
	n = finish(&m, out, max);
	edit_free(&a);
	edit_free(&b);
	return n;
}
