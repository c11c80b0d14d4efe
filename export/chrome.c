/*
 * chrome.c: the layout's marks as the JSON Trace Event Format
 * (chrome://tracing, Perfetto too): complete "X" events in microseconds with
 * the nanoseconds kept, "M" names, "C" memory counters, "s"/"f" launch flows.
 *
 * A trace of one bundle opens with the metadata torch.profiler's Kineto
 * writes (schemaVersion, distributedInfo, deviceProperties,
 * baseTimeNanoseconds), so that Holistic Trace Analysis finds its rank.
 * The Kineto flavour (export_write_chrome_kineto, `export --per-rank`)
 * also has Kineto's categories (kernel, gpu_memcpy, gpu_memset,
 * cuda_runtime, cuda_driver, user_annotation), its names of copies
 * ("Memcpy HtoD (Pageable -> Device)"), which HTA's kernel types are
 * read from, its "ProfilerStep#N" iterations and its "ac2g" flows. Those
 * flows bind in Perfetto, which joins a flow to the slice around it, and
 * not in Chrome DevTools, which binds a flow only to slices of its own
 * category: the default flavour keeps one category, "cuda", for launch
 * calls, GPU work and flows.
 */
#include "export/chrome.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <string.h>

#include "export/layout.h"
#include "lib/error.h"
#include "lib/utf8.h"

/* µs with the ns kept: 15 significant digits print any ns below 10^15 exactly. */
#define CHROME_DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

static json_t *us(uint64_t ns)
{
	return json_real((double)ns / 1000.0);
}

/* A time of L as written: moved onto the run's time line for a rank of several. */
static json_t *ts(const struct layout *L, uint64_t ns)
{
	return us(ns + (uint64_t)L->shift);   /* unsigned: a bundle's times reach 2^63 */
}

struct chrome_writer {
	FILE *out;
	bool first;
	bool failed;
	bool kineto;           /* Kineto's categories, names, steps and flows (see the top) */
};

/* CUPTI's copy and memory kinds as Kineto spells them in a copy's name. */
static const char *const kineto_copy_kinds[] = { "Unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA", "AtoD",
						 "DtoA", "DtoD", "HtoH", "PtoP" };
static const char *const kineto_mem_kinds[] = { "Unknown", "Pageable", "Pinned", "Device", "Array",
						"Managed", "Device Static", "Managed Static" };

#define KINDS(t, i) ((i) < sizeof(t) / sizeof((t)[0]) ? (t)[(i)] : (t)[0])

static const char *kineto_category(const struct layout *L, const struct xslice *s)
{
	const struct replay *rp = L->rp;

	switch (s->what) {
	case SL_ACTIVITY:
		switch (rp->activities[s->idx].kind) {
		case ST_KERNEL:
			return "kernel";
		case ST_MEMCPY:
			return "gpu_memcpy";
		default:
			return "gpu_memset";
		}
	case SL_API:
		return rp->apis[s->idx].domain ? "cuda_driver" : "cuda_runtime";
	default:
		return "user_annotation";
	}
}

/* A slice's name in the Kineto flavour: copies and steps as Kineto names them, the rest as recorded. */
static const char *kineto_name(const struct layout *L, const struct xslice *s, char *buf, size_t len)
{
	const struct replay *rp = L->rp;

	if (s->what == SL_STEP) {
		snprintf(buf, len, "ProfilerStep#%" PRIu32, rp->steps[s->idx].index);
		return buf;
	}
	if (s->what == SL_ACTIVITY && rp->activities[s->idx].kind == ST_MEMCPY) {
		const struct replay_activity *a = &rp->activities[s->idx];
		const struct replay_copy *c = a->detail < rp->n_copies ? &rp->copies[a->detail] : NULL;
		snprintf(buf, len, "Memcpy %s (%s -> %s)", KINDS(kineto_copy_kinds, c ? c->copy_kind : 0),
			 KINDS(kineto_mem_kinds, c ? c->src_kind : 0), KINDS(kineto_mem_kinds, c ? c->dst_kind : 0));
		return buf;
	}
	if (s->what == SL_ACTIVITY && rp->activities[s->idx].kind == ST_MEMSET)
		return "Memset (Unknown)";   /* the bundle does not say the memory's kind */
	return export_slice_name(L, s, buf, len);
}

/* Writes ev (and drops the reference) as the next element of traceEvents. */
static int chrome_emit(struct chrome_writer *w, json_t *ev)
{
	char buf[2048];
	size_t len;
	int rc;

	if (!ev)
		return error("out of memory");
	if (!w->first)
		fputs(",\n", w->out);
	w->first = false;
	/* one write an event: json_dumpf writes each token on its own, a third of the time */
	len = json_dumpb(ev, buf, sizeof(buf), CHROME_DUMP_FLAGS);
	if (len && len <= sizeof(buf))
		rc = fwrite(buf, 1, len, w->out) == len ? 0 : -1;
	else
		rc = json_dumpf(ev, w->out, CHROME_DUMP_FLAGS);
	json_decref(ev);
	if (rc < 0 || ferror(w->out)) {
		w->failed = true;
		return error("cannot write the trace: %s", strerror(errno));
	}
	return 0;
}

static int chrome_metadata(struct chrome_writer *w, const struct layout *L)
{
	for (size_t i = 0; i < L->n_tracks; i++) {
		const struct xtrack *t = &L->tracks[i];
		bool process = t->kind == TK_PROCESS || t->kind == TK_DEVICE;
		const char *what = process ? "process_name" : "thread_name";
		if (t->kind == TK_COUNTER)
			continue;
		json_t *ev = json_pack("{s:s, s:s, s:i, s:i, s:{s:o}}", "name", what, "ph", "M",
				       "pid", (json_int_t)t->pid, "tid", (json_int_t)t->tid,
				       "args", "name", json_string_utf8(t->name));
		if (chrome_emit(w, ev) < 0)
			return -1;
		if (process) {
			/* the host first, then the GPUs in device order (rank by rank) */
			json_int_t order = (L->rank > 0 ? L->rank * 0x10000 : 0) +
					   (t->kind == TK_PROCESS ? 0 : 1 + t->pid - L->gpu_pid_base);
			ev = json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name", "process_sort_index",
				       "ph", "M", "pid", (json_int_t)t->pid, "tid", (json_int_t)0,
				       "args", "sort_index", order);
			if (chrome_emit(w, ev) < 0)
				return -1;
		}
	}
	return 0;
}

static json_t *chrome_args(const struct layout *L, const struct xslice *s, bool kineto)
{
	struct ann ann[MAX_ANN];
	char bufs[4][256];
	size_t n = export_slice_annotations(L, s, ann, bufs);
	json_t *args = json_object();

	for (size_t i = 0; args && i < n; i++) {
		/* Kineto: no correlation is -1 (absent); HTA would join every 0 with every other */
		if (kineto && ann[i].key == ANN_CORRELATION && !ann[i].is_str && ann[i].u == 0)
			continue;
		json_object_set_new(args, export_ann_names[ann[i].key],
				    ann[i].is_str ? json_string_utf8(ann[i].str)
						  : json_integer((json_int_t)ann[i].u));
	}
	return args;
}

static int chrome_slice(struct chrome_writer *w, const struct layout *L, const struct xslice *s)
{
	const struct xtrack *t = &L->tracks[s->track];
	char namebuf[512];
	uint64_t flow = 0;
	json_t *ev;

	ev = json_pack("{s:o, s:s, s:s, s:o, s:o, s:i, s:i, s:o}",
		       "name", json_string_utf8(w->kineto ? kineto_name(L, s, namebuf, sizeof(namebuf))
							   : export_slice_name(L, s, namebuf, sizeof(namebuf))),
		       "cat", w->kineto ? kineto_category(L, s) : export_slice_category[s->what], "ph", "X",
		       "ts", ts(L, s->start), "dur", us(s->end - s->start), "pid", (json_int_t)t->pid,
		       "tid", (json_int_t)t->tid, "args", chrome_args(L, s, w->kineto));
	if (chrome_emit(w, ev) < 0)
		return -1;
	if (s->what == SL_API)
		flow = export_launch_flow(L, &L->rp->apis[s->idx]);
	else if (s->what == SL_ACTIVITY)
		flow = export_activity_flow(L, &L->rp->activities[s->idx], s->idx);
	if (!flow)
		return 0;
	/* the flow's category is its slices' (see export_slice_category); Kineto's is ac2g */
	ev = json_pack("{s:s, s:s, s:s, s:I, s:o, s:i, s:i}", "name", w->kineto ? "ac2g" : "launch",
		       "cat", w->kineto ? "ac2g" : export_slice_category[s->what], "ph", s->what == SL_API ? "s" : "f",
		       "id", (json_int_t)flow, "ts", ts(L, s->start),
		       "pid", (json_int_t)t->pid, "tid", (json_int_t)t->tid);
	if (ev && s->what != SL_API)
		json_object_set_new(ev, "bp", json_string("e"));
	return chrome_emit(w, ev);
}

/*
 * Memory: one "C" event per view and instant carrying every series of that
 * view (Chrome stacks the series of one counter); values are carried over
 * from the last event.
 */
static int chrome_counter(struct chrome_writer *w, const struct layout *L, const struct xcount *c,
			  int64_t values[2][ST_MEM_CATEGORY_COUNT + 1], bool last_of_instant)
{
	const uint32_t *tr = L->mem_track[c->group];
	json_t *args, *ev;
	bool any = false;

	values[c->group][c->series] = c->value;
	if (!last_of_instant)
		return 0;
	/* a view's categories stack up to its total; the driver view without tags has only the total */
	args = json_object();
	for (int k = 0; args && k < ST_MEM_CATEGORY_COUNT; k++)
		if (tr[k] != UINT32_MAX) {
			json_object_set_new(args, st_mem_category_name(k), json_integer(values[c->group][k]));
			any = true;
		}
	if (args && !any)
		json_object_set_new(args, "total", json_integer(values[c->group][ST_MEM_CATEGORY_COUNT]));
	ev = json_pack("{s:s, s:s, s:o, s:i, s:i, s:o}", "name",
		       c->group == MEM_VIEW_MODEL ? "live memory (model allocator)"
						  : "live memory (cudaMalloc)",
		       "ph", "C", "ts", ts(L, c->t), "pid", (json_int_t)export_gpu_pid(L, (uint32_t)L->mem_device),
		       "tid", (json_int_t)0, "args", args);
	return chrome_emit(w, ev);
}

/*
 * Kineto's metadata of one bundle: distributedInfo on the first line, with a
 * space after each colon (HTA finds a file's rank with the pattern
 * '"rank":\s+(\d+)', line by line), then deviceProperties and
 * baseTimeNanoseconds (the Unix time of ts 0, in ns).
 */
static void chrome_kineto_metadata(FILE *out, const struct layout *L)
{
	const struct replay_run *r = &L->rp->run;
	const struct replay_device *d = &r->device;

	fputs("{\"schemaVersion\": 1", out);
	if (!r->has_header)
		goto done;
	/* a single process is rank 0 of 1; the backend only when the bundle names NCCL's version */
	fprintf(out, ", \"distributedInfo\": {%s\"rank\": %" PRIu32 ", \"world_size\": %" PRIu32 "}",
		*r->nccl_version ? "\"backend\": \"nccl\", " : "", r->world_size > 1 ? r->rank : 0,
		r->world_size > 1 ? r->world_size : 1);
	if (r->has_device) {
		json_t *dev = json_pack("[{s:i, s:o, s:I, s:i, s:i, s:i}]", "id", (json_int_t)d->index,
					"name", json_string_utf8(d->name ? d->name : ""),
					"totalGlobalMem", (json_int_t)d->memory_bytes,
					"computeMajor", (json_int_t)d->cc_major, "computeMinor", (json_int_t)d->cc_minor,
					"numSms", (json_int_t)d->sm_count);
		if (dev) {
			fputs(",\n\"deviceProperties\": ", out);
			json_dumpf(dev, out, CHROME_DUMP_FLAGS);
			json_decref(dev);
		}
	}
	if (r->created_unix_ns > 0)
		fprintf(out, ",\n\"baseTimeNanoseconds\": %" PRId64, r->created_unix_ns - L->shift);
done:
	fputs(",\n", out);
}

/* Everything before the events: Kineto's metadata for one bundle, otherData, then the array's opening. */
static int chrome_prologue(FILE *out, const struct layout *L, bool one)
{
	const struct replay *rp = L->rp;
	json_t *other;

	if (one)
		chrome_kineto_metadata(out, L);
	else
		fputc('{', out);
	fputs("\"otherData\":", out);
	other = json_pack("{s:s, s:o}", "generator", "steptrace export --format chrome",
			  "bundle", json_string_utf8(rp->path ? rp->path : ""));
	if (other && rp->run.has_header) {
		char base[24];
		/* a string: the value exceeds 2^53, which JavaScript's numbers would round */
		snprintf(base, sizeof(base), "%" PRIu64, rp->run.time_base_ns);
		json_object_set_new(other, "time_base_ns", json_string(base));
		json_object_set_new(other, "command_line", json_string_utf8(rp->run.command_line));
	}
	if (!other)
		return error("out of memory");
	if (json_dumpf(other, out, CHROME_DUMP_FLAGS) < 0) {
		json_decref(other);
		return error("cannot write the trace: %s", strerror(errno));
	}
	json_decref(other);
	fputs(",\"traceEvents\":[\n", out);
	return 0;
}

#define CHROME_EPILOGUE "\n]}\n"

/* The events of mark i (in time order): a slice and its flow, a counter, an OOM. */
static int chrome_mark(struct chrome_writer *w, const struct layout *L, size_t i,
		       int64_t values[2][ST_MEM_CATEGORY_COUNT + 1])
{
	const struct replay_key *k = &L->keys[i];
	const struct xmark *m = &L->marks[k->idx];
	char namebuf[512];

	if (m->type == MK_BEGIN)
		return chrome_slice(w, L, &L->slices[m->ref]);
	if (m->type == MK_COUNTER) {
		const struct xcount *c = &L->counts[m->ref];
		bool last = true;
		if (i + 1 < L->n_marks) {
			const struct xmark *nx = &L->marks[L->keys[i + 1].idx];
			last = !(nx->type == MK_COUNTER && L->keys[i + 1].key == k->key &&
				 L->counts[nx->ref].group == c->group);
		}
		return chrome_counter(w, L, c, values, last);
	}
	if (m->type == MK_INSTANT) {
		export_oom_name(L->rp, m->ref, namebuf, sizeof(namebuf));
		return chrome_emit(w, json_pack("{s:o, s:s, s:s, s:o, s:i, s:i}", "name", json_string_utf8(namebuf),
						"ph", "i", "s", "g", "ts", ts(L, k->key),
						"pid", (json_int_t)L->host_pid, "tid", (json_int_t)STEPS_TID));
	}
	return 0;
}

static int chrome_write(const struct layout *const *L, size_t n, FILE *out, bool kineto)
{
	struct chrome_writer w = { out, true, false, kineto };

	if (chrome_prologue(out, L[0], n == 1) < 0)
		return -1;
	for (size_t r = 0; r < n; r++) {
		int64_t values[2][ST_MEM_CATEGORY_COUNT + 1] = { { 0 } };

		if (chrome_metadata(&w, L[r]) < 0)
			return -1;
		for (size_t i = 0; i < L[r]->n_marks; i++)
			if (chrome_mark(&w, L[r], i, values) < 0)
				return -1;
	}
	fputs(CHROME_EPILOGUE, out);
	return ferror(out) ? error("cannot write the trace: %s", strerror(errno)) : 0;
}

int export_write_chrome_ranks(const struct layout *const *L, size_t n, FILE *out)
{
	return chrome_write(L, n, out, false);
}

int export_write_chrome(const struct layout *L, FILE *out)
{
	return chrome_write(&L, 1, out, false);
}

int export_write_chrome_kineto(const struct layout *L, FILE *out)
{
	return chrome_write(&L, 1, out, true);
}

struct chrome_estimate {
	const struct layout *L;
	struct chrome_writer w;
	int64_t values[2][ST_MEM_CATEGORY_COUNT + 1];
};

static int chrome_estimate_begin(void *ctx, FILE *f)
{
	struct chrome_estimate *e = ctx;

	e->w.out = f;
	if (chrome_prologue(f, e->L, true) < 0 || chrome_metadata(&e->w, e->L) < 0)
		return -1;
	fputs(CHROME_EPILOGUE, f);
	return 0;
}

static int chrome_estimate_mark(void *ctx, size_t i)
{
	struct chrome_estimate *e = ctx;

	return chrome_mark(&e->w, e->L, i, e->values);
}

int export_estimate_chrome(const struct layout *L, bool kineto, uint64_t *bytes)
{
	struct chrome_estimate e = { .L = L, .w = { NULL, true, false, kineto } };

	return export_estimate(L, &e, chrome_estimate_begin, chrome_estimate_mark, bytes);
}
