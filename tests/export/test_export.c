/*
 * test_export.c: `steptrace export` on a small bundle with known contents.
 *
 *   test_export STEPTRACE DIR     writes DIR/x.stb, runs the program, checks
 *                                 the Perfetto file (decoded with protobuf-c
 *                                 against proto/perfetto_trace.proto) and the
 *                                 Chrome JSON (parsed with jansson)
 *   test_export --write FILE      only writes the bundle (for the shell tests)
 *
 * The header: pid 4242, created at CREATED (Unix ns), time base above 2^53.
 * Variants: the same run recorded 1 ns later (another identity), and a
 * bundle from before format 1.2 (no pid).
 *
 * The bundle (thread 100 unless said; times in ns):
 *   ranges  step [1000,9000] > forward [1000,5000] > layer.0 [1000,3000]
 *           > attn [1000,3000] (same span as its parent) > softmax [2000,3000]
 *           (ends with its parents); step > backward [5000,9000] (starts when
 *           forward ends); thread 200: loader [1500,4000] in the NVTX domain "io"
 *   calls   c1 [1100,1200] -> kernel gemm (7) [1501,2499]
 *           c2 [2000,2000] (zero length, inside softmax) -> softmax_kernel (7) [2499,2600]
 *           c3 [5000,5100] -> memcpy DtoD 4096 B (8) [5200,5300]
 *           c4 [6000,6050] -> memset 1024 B (8) [6100,6150]
 *           c5 [7000,7100] -> adam_kernel (7) [7200,8000]
 *           c6 [7150,7160] -> late_kernel (7) [7900,8500]  overlaps adam: an extra lane
 *           none           -> orphan_kernel (9) [8600,8700]
 *           thread 200: c7 [1600,1700] -> memcpy HtoD 64 B (8) [1800,1900]
 *   memory  model: parameter 1 MiB at 500; activation 4096 B at 1200 (op 1),
 *           freed at 6000; temporary 2048 B at 2000, freed at 2100.
 *           driver: 2 MiB at 400.
 *   step    0, [1000,9000], measured
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

/* ---- the bundle ---------------------------------------------------------- */

#define PID 4242
#define CREATED 1767225600123456789ll
#define TIME_BASE 1795232136753811151ull

static int write_bundle_as(const char *path, int64_t created, uint32_t pid)
{
	static const struct builder_span ranges[] = {   /* thread 100, closed innermost first */
		{ "softmax", 4, 2000, 3000 }, { "attn", 3, 1000, 3000 }, { "layer.0", 2, 1000, 3000 },
		{ "forward", 1, 1000, 5000 }, { "backward", 1, 5000, 9000 }, { "step", 0, 1000, 9000 },
	};
	struct builder b;

	builder_init(&b);
	b.config.model = "tiny";
	b.config.precision = "bf16";
	b.config.mode = "train";
	b.device.name = "Synthetic GPU";
	b.header.command_line = "test_export";
	b.header.hostname = "testhost";
	b.header.created_unix_ns = created;
	b.header.pid = pid;
	b.header.time_base_ns = TIME_BASE;   /* above 2^53, as real ones are */
	b.thread = 100;
	b.geometry = (struct builder_geometry){ .grid = { 128, 2, 1 }, .block = { 256, 1, 1 }, .registers = 64 };
	if (builder_open(&b, path) < 0)
		return 1;

	builder_op(&b, &(struct builder_op){ .id = 1, .path = "step/forward/layer.0/attn/q_proj",
		   .kind = "attn/q_proj", .phase = "forward", .inputs = { ST_DT_BF16 }, .outputs = { ST_DT_F32 } });

	b.source = ST_SRC_DRIVER;
	builder_alloc(&b, 400, 0x7000000, 2u << 20, ST_MEM_UNKNOWN, 0);
	b.source = ST_SRC_MODEL;
	builder_alloc(&b, 500, 0x1000, 1u << 20, ST_MEM_PARAMETER, 0);
	builder_ranges(&b, 0, ranges, sizeof(ranges) / sizeof(ranges[0]));
	b.thread = 200;
	builder_add(&b, &(struct st_event){ .kind = ST_RANGE, .start = 1500, .end = 4000,
		    .range = { .name = builder_string(&b, "loader"), .domain = builder_string(&b, "io"), .thread = 200 } });
	b.thread = 100;
	builder_call(&b, "cudaLaunchKernel", 1100, 1200);   /* c1 */
	builder_call(&b, "cudaLaunchKernel", 2000, 2000);
	builder_call(&b, "cudaLaunchKernel", 5000, 5100);
	builder_call(&b, "cudaLaunchKernel", 6000, 6050);
	builder_call(&b, "cudaLaunchKernel", 7000, 7100);
	builder_call(&b, "cudaLaunchKernel", 7150, 7160);
	b.thread = 200;
	builder_call(&b, "cudaLaunchKernel", 1600, 1700);   /* c7 */
	b.thread = 100;
	builder_kernel(&b, "gemm_kernel", 1, 7, 1, 1501, 2499);
	builder_kernel(&b, "softmax_kernel", 2, 7, 0, 2499, 2600);
	builder_kernel(&b, "adam_kernel", 5, 7, 0, 7200, 8000);
	builder_kernel(&b, "late_kernel", 6, 7, 0, 7900, 8500);
	builder_kernel(&b, "orphan_kernel", 0, 9, 0, 8600, 8700);
	builder_memcpy(&b, 8 /* DtoD */, 4096, 3, 8, 0, 5200, 5300);
	builder_memcpy(&b, 1 /* HtoD */, 64, 7, 8, 0, 1800, 1900);
	builder_memset(&b, 1024, 4, 8, 0, 6100, 6150);
	builder_alloc(&b, 1200, 0x2000, 4096, ST_MEM_ACTIVATION, 1);
	builder_alloc(&b, 2000, 0x3000, 2048, ST_MEM_TEMPORARY, 0);
	builder_free(&b, 2100, 0x3000, 0, ST_MEM_UNKNOWN, 0);
	builder_free(&b, 6000, 0x2000, 4096, ST_MEM_ACTIVATION, 0);
	builder_step(&b, 0, false, 1000, 9000);
	return builder_close(&b, "ok") < 0;
}

static int write_bundle(const char *path)
{
	return write_bundle_as(path, CREATED, PID);
}

/* ---- running the program ----------------------------------------------------- */

static bool expect_failure;

static int run(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int run(const char *fmt, ...)
{
	char cmd[4096];
	va_list ap;
	int rc;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	rc = system(cmd);
	if (rc != 0 && !expect_failure)
		fprintf(stderr, "command failed (%d): %s\n", rc, cmd);
	return rc;
}

/* ---- checking the Perfetto file ---------------------------------------------- */

#define MAX_TRACKS 64
#define MAX_SLICES 256

struct pslice {
	char name[128];
	char parent[128];
	uint64_t start, end;
	int track;
	char op[128];
};

struct ptrack {
	uint64_t uuid, parent;
	int32_t pid;                     /* process and thread descriptors; -1 none */
	char name[128];
	int open[64];       /* stack of slice indices */
	int depth;
	uint64_t last_ts;
	int slices;
	int counters;
	int64_t counter_max, counter_last;
};

struct perfetto_view {
	struct ptrack tracks[MAX_TRACKS];
	int n_tracks;
	struct pslice slices[MAX_SLICES];
	int n_slices;
	char *names[512];                  /* event names by iid */
	char *strings[512];                /* annotation strings by iid */
	char *ann_names[64];
	int flows_out, flows_in;
	uint32_t seq;                      /* the packets' sequence id */
	const Perfetto__Protos__ClockSnapshot *clock;   /* of the first packet */
	uint32_t default_clock;            /* its defaults' timestamp_clock_id */
};

static struct ptrack *track_by_uuid(struct perfetto_view *v, uint64_t uuid)
{
	for (int i = 0; i < v->n_tracks; i++)
		if (v->tracks[i].uuid == uuid)
			return &v->tracks[i];
	return NULL;
}

static struct ptrack *track_by_name(struct perfetto_view *v, const char *name)
{
	for (int i = 0; i < v->n_tracks; i++)
		if (strcmp(v->tracks[i].name, name) == 0)
			return &v->tracks[i];
	return NULL;
}

static struct pslice *slice_named(struct perfetto_view *v, const char *name)
{
	for (int i = 0; i < v->n_slices; i++)
		if (strcmp(v->slices[i].name, name) == 0)
			return &v->slices[i];
	return NULL;
}

static void intern_all(struct perfetto_view *v, const Perfetto__Protos__InternedData *id)
{
	for (size_t i = 0; i < id->n_event_names; i++) {
		uint64_t iid = id->event_names[i]->iid;
		CHECK(iid > 0 && iid < 512 && !v->names[iid], "event name iid %" PRIu64 " bad or reused", iid);
		if (iid > 0 && iid < 512)
			v->names[iid] = id->event_names[i]->name;
	}
	for (size_t i = 0; i < id->n_debug_annotation_string_values; i++) {
		uint64_t iid = id->debug_annotation_string_values[i]->iid;
		CHECK(iid > 0 && iid < 512 && !v->strings[iid], "string iid %" PRIu64 " bad or reused", iid);
		if (iid > 0 && iid < 512)   /* bytes: not NUL-terminated */
			v->strings[iid] = strndup((const char *)id->debug_annotation_string_values[i]->str.data,
						  id->debug_annotation_string_values[i]->str.len);
	}
	for (size_t i = 0; i < id->n_debug_annotation_names; i++) {
		uint64_t iid = id->debug_annotation_names[i]->iid;
		if (iid > 0 && iid < 64)
			v->ann_names[iid] = id->debug_annotation_names[i]->name;
	}
}

static void track_event(struct perfetto_view *v, const Perfetto__Protos__TracePacket *p)
{
	const Perfetto__Protos__TrackEvent *e = p->track_event;
	struct ptrack *t = track_by_uuid(v, e->track_uuid);

	CHECK(t != NULL, "event on undeclared track %" PRIu64, e->track_uuid);
	CHECK(p->has_timestamp, "track event without timestamp");
	if (!t)
		return;
	CHECK(p->timestamp >= t->last_ts, "time goes back on track '%s'", t->name);
	t->last_ts = p->timestamp;
	switch (e->type) {
	case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN: {
		CHECK(v->n_slices < MAX_SLICES, "too many slices");
		if (v->n_slices >= MAX_SLICES)
			return;
		struct pslice *s = &v->slices[v->n_slices];
		CHECK(e->name_field_case == PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID,
		      "slice without interned name");
		const char *name = e->name_iid < 512 ? v->names[e->name_iid] : NULL;
		CHECK(name != NULL, "name iid %" PRIu64 " used before it was interned", e->name_iid);
		snprintf(s->name, sizeof(s->name), "%s", name ? name : "?");
		snprintf(s->parent, sizeof(s->parent), "%s",
			 t->depth ? v->slices[t->open[t->depth - 1]].name : "");
		s->start = p->timestamp;
		s->track = (int)(t - v->tracks);
		for (size_t i = 0; i < e->n_debug_annotations; i++) {
			const Perfetto__Protos__DebugAnnotation *d = e->debug_annotations[i];
			const char *an = d->name_iid < 64 ? v->ann_names[d->name_iid] : NULL;
			CHECK(an != NULL, "annotation name iid %" PRIu64 " unknown", d->name_iid);
			if (an && strcmp(an, "op") == 0 &&
			    d->value_case == PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID &&
			    d->string_value_iid < 512 && v->strings[d->string_value_iid])
				snprintf(s->op, sizeof(s->op), "%s", v->strings[d->string_value_iid]);
		}
		v->flows_out += (int)e->n_flow_ids;
		v->flows_in += (int)e->n_terminating_flow_ids;
		t->open[t->depth++] = v->n_slices++;
		t->slices++;
		break;
	}
	case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END: {
		CHECK(t->depth > 0, "end without begin on '%s'", t->name);
		if (t->depth == 0)
			return;
		struct pslice *s = &v->slices[t->open[--t->depth]];
		s->end = p->timestamp;
		if (t->depth) {
			struct pslice *parent = &v->slices[t->open[t->depth - 1]];
			CHECK(s->start >= parent->start, "'%s' starts before its parent '%s'", s->name, parent->name);
		}
		break;
	}
	case PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER:
		CHECK(e->counter_value_field_case == PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE,
		      "counter without value");
		t->counters++;
		t->counter_last = e->counter_value;
		if (e->counter_value > t->counter_max)
			t->counter_max = e->counter_value;
		break;
	default:
		break;
	}
}

static int decode_perfetto(const char *path, struct perfetto_view *v, Perfetto__Protos__Trace **out)
{
	size_t len = 0;
	uint8_t *buf = check_slurp(path, &len);
	Perfetto__Protos__Trace *tr;

	memset(v, 0, sizeof(*v));
	CHECK(buf != NULL, "cannot read '%s'", path);
	if (!buf)
		return -1;
	tr = perfetto__protos__trace__unpack(NULL, len, buf);
	free(buf);
	CHECK(tr != NULL, "'%s' does not decode as perfetto.protos.Trace", path);
	if (!tr)
		return -1;
	for (size_t i = 0; i < tr->n_packet; i++) {
		const Perfetto__Protos__TracePacket *p = tr->packet[i];
		if (i == 0)
			v->seq = p->trusted_packet_sequence_id;
		CHECK(p->has_trusted_packet_sequence_id && p->trusted_packet_sequence_id == v->seq && v->seq,
		      "packet %zu is not on the first packet's sequence", i);
		if (i == 0) {
			/* SEQ_INCREMENTAL_STATE_CLEARED | SEQ_NEEDS_INCREMENTAL_STATE */
			CHECK(p->sequence_flags == 3, "first packet's flags are %" PRIu32 ", expected 3",
			      p->sequence_flags);
			CHECK(p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT,
			      "first packet is not a clock snapshot");
			if (p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT)
				v->clock = p->clock_snapshot;
			CHECK(p->trace_packet_defaults && p->trace_packet_defaults->has_timestamp_clock_id,
			      "first packet sets no default clock");
			if (p->trace_packet_defaults)
				v->default_clock = p->trace_packet_defaults->timestamp_clock_id;
		} else {
			CHECK(p->sequence_flags == 2, "packet %zu without SEQ_NEEDS_INCREMENTAL_STATE", i);
			CHECK(!p->has_timestamp_clock_id, "packet %zu overrides the default clock", i);
		}
		if (p->interned_data)
			intern_all(v, p->interned_data);
		if (p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR) {
			const Perfetto__Protos__TrackDescriptor *d = p->track_descriptor;
			struct ptrack *t = &v->tracks[v->n_tracks];
			CHECK(v->n_tracks < MAX_TRACKS, "too many tracks");
			if (v->n_tracks >= MAX_TRACKS)
				break;
			CHECK(!track_by_uuid(v, d->uuid), "track uuid %" PRIu64 " declared twice", d->uuid);
			t->uuid = d->uuid;
			t->parent = d->has_parent_uuid ? d->parent_uuid : 0;
			t->pid = d->process && d->process->has_pid ? d->process->pid
				 : d->thread && d->thread->has_pid ? d->thread->pid : -1;
			snprintf(t->name, sizeof(t->name), "%s",
				 d->name ? d->name
				 : d->thread && d->thread->thread_name ? d->thread->thread_name
				 : d->process && d->process->process_name ? d->process->process_name : "");
			v->n_tracks++;
		} else if (p->data_case == PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT) {
			track_event(v, p);
		}
	}
	for (int i = 0; i < v->n_tracks; i++)
		CHECK(v->tracks[i].depth == 0, "track '%s' ends with %d open slices", v->tracks[i].name,
		      v->tracks[i].depth);
	*out = tr;
	return 0;
}

/* A new view of the trace in `path`; NULL after a failed check. */
static struct perfetto_view *view_open(const char *path, Perfetto__Protos__Trace **tr)
{
	struct perfetto_view *v = calloc(1, sizeof(*v));

	CHECK(v != NULL, "out of memory");
	if (v && decode_perfetto(path, v, tr) < 0) {   /* decode_perfetto said why */
		free(v);
		return NULL;
	}
	return v;
}

static void view_release(struct perfetto_view *v, Perfetto__Protos__Trace *tr)
{
	for (int i = 0; i < 512; i++)
		free(v->strings[i]);
	perfetto__protos__trace__free_unpacked(tr, NULL);
	free(v);
}

static void check_span(struct perfetto_view *v, const char *name, uint64_t start, uint64_t end,
		       const char *parent, const char *track)
{
	struct pslice *s = slice_named(v, name);

	CHECK(s != NULL, "no slice '%s'", name);
	if (!s)
		return;
	CHECK(s->start == start && s->end == end, "'%s' spans [%" PRIu64 ", %" PRIu64 "], expected [%"
	      PRIu64 ", %" PRIu64 "]", name, s->start, s->end, start, end);
	CHECK(strcmp(s->parent, parent) == 0, "'%s' nests in '%s', expected '%s'", name, s->parent, parent);
	CHECK(strcmp(v->tracks[s->track].name, track) == 0, "'%s' is on track '%s', expected '%s'", name,
	      v->tracks[s->track].name, track);
}

static void check_perfetto(const char *path)
{
	Perfetto__Protos__Trace *tr = NULL;
	struct perfetto_view *v = view_open(path, &tr);
	struct ptrack *t;

	if (!v)
		return;
	/* slices per stream = activities per stream (plus the lane the overlap needed) */
	t = track_by_name(v, "stream 7");
	CHECK(t && t->slices == 3, "stream 7 has %d slices, expected 3", t ? t->slices : -1);
	t = track_by_name(v, "stream 7 (overlap 1)");
	CHECK(t && t->slices == 1, "stream 7's overlap lane has %d slices, expected 1", t ? t->slices : -1);
	t = track_by_name(v, "stream 8");
	CHECK(t && t->slices == 3, "stream 8 has %d slices, expected 3", t ? t->slices : -1);
	t = track_by_name(v, "stream 9");
	CHECK(t && t->slices == 1, "stream 9 has %d slices, expected 1", t ? t->slices : -1);
	/* ranges and calls per thread */
	t = track_by_name(v, "thread 100 (main)");
	CHECK(t && t->slices == 6 + 6, "thread 100 has %d slices, expected 6 ranges + 6 calls",
	      t ? t->slices : -1);
	t = track_by_name(v, "thread 200");
	CHECK(t && t->slices == 2, "thread 200 has %d slices, expected 2", t ? t->slices : -1);
	t = track_by_name(v, "steps");
	CHECK(t && t->slices == 1, "steps has %d slices, expected 1", t ? t->slices : -1);

	/* nesting, exact times, ties */
	check_span(v, "step", 1000, 9000, "", "thread 100 (main)");
	check_span(v, "forward", 1000, 5000, "step", "thread 100 (main)");
	check_span(v, "layer.0", 1000, 3000, "forward", "thread 100 (main)");
	check_span(v, "attn", 1000, 3000, "layer.0", "thread 100 (main)");
	check_span(v, "softmax", 2000, 3000, "attn", "thread 100 (main)");
	check_span(v, "backward", 5000, 9000, "step", "thread 100 (main)");
	check_span(v, "loader", 1500, 4000, "", "thread 200");
	check_span(v, "gemm_kernel", 1501, 2499, "", "stream 7");
	check_span(v, "softmax_kernel", 2499, 2600, "", "stream 7");
	check_span(v, "late_kernel", 7900, 8500, "", "stream 7 (overlap 1)");
	check_span(v, "[CUDA memset]", 6100, 6150, "", "stream 8");
	check_span(v, "step 0", 1000, 9000, "", "steps");
	{
		int calls_in_softmax = 0, calls_in_attn = 0;
		for (int i = 0; i < v->n_slices; i++) {
			if (strcmp(v->slices[i].name, "cudaLaunchKernel") != 0)
				continue;
			calls_in_softmax += strcmp(v->slices[i].parent, "softmax") == 0;
			calls_in_attn += strcmp(v->slices[i].parent, "attn") == 0;
		}
		CHECK(calls_in_softmax == 1, "%d calls nest in softmax, expected 1 (the zero-length one)",
		      calls_in_softmax);
		CHECK(calls_in_attn == 1, "%d calls nest in attn, expected 1", calls_in_attn);
	}
	{
		struct pslice *g = slice_named(v, "gemm_kernel");
		CHECK(g && strcmp(g->op, "step/forward/layer.0/attn/q_proj") == 0, "gemm_kernel's op is '%s'",
		      g ? g->op : "?");
	}
	/* one flow per launch call with an activity: c1..c7 */
	CHECK(v->flows_out == 7 && v->flows_in == 7, "flows: %d out, %d in, expected 7 and 7",
	      v->flows_out, v->flows_in);
	/* memory */
	t = track_by_name(v, "live memory, model allocator: total");
	CHECK(t && t->counter_max == (1 << 20) + 4096 + 2048 && t->counter_last == 1 << 20,
	      "model total: max %" PRId64 ", last %" PRId64, t ? t->counter_max : -1, t ? t->counter_last : -1);
	t = track_by_name(v, "live memory, model allocator: activation");
	CHECK(t && t->counter_max == 4096 && t->counter_last == 0, "activation counter wrong");
	t = track_by_name(v, "live memory, driver (cudaMalloc): total");
	CHECK(t && t->counter_max == 2 << 20, "driver total counter wrong");

	/* the real process id; the GPU a named track without a pid, streams under it */
	t = track_by_name(v, "host");
	CHECK(t && t->pid == PID, "host process has pid %d, expected %d", t ? t->pid : -1, PID);
	t = track_by_name(v, "thread 100 (main)");
	CHECK(t && t->pid == PID, "thread 100 has pid %d", t ? t->pid : -1);
	t = track_by_name(v, "GPU 0 Synthetic GPU (pid 4242)");
	CHECK(t && t->pid == -1 && t->parent == 0, "no top-level GPU track without a pid");
	{
		struct ptrack *st = track_by_name(v, "stream 7");
		CHECK(t && st && st->parent == t->uuid, "stream 7 is not under the GPU track");
	}
	/* uuids: 64-bit, not counters */
	for (int i = 0; i < v->n_tracks; i++)
		CHECK(v->tracks[i].uuid >> 32, "track '%s' has a small uuid %" PRIu64, v->tracks[i].name,
		      v->tracks[i].uuid);
	/* the clock: the bundle's (id 64, what packets use) is the time base at created_unix_ns */
	CHECK(v->default_clock == 64, "packets default to clock %" PRIu32 ", expected 64", v->default_clock);
	if (v->clock) {
		const Perfetto__Protos__ClockSnapshot *c = v->clock;
		CHECK(c->n_clocks == 2 && c->clocks[0]->clock_id == 64 && c->clocks[0]->timestamp == 0 &&
		      c->clocks[1]->clock_id == PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_REALTIME &&
		      c->clocks[1]->timestamp == (uint64_t)CREATED,
		      "clock snapshot does not pair clock 64 at 0 with REALTIME at the creation time");
		CHECK(c->has_primary_trace_clock &&
		      c->primary_trace_clock == PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_REALTIME,
		      "trace clock is not REALTIME");
	}
	view_release(v, tr);
}

/* Another identity: no track uuid or sequence id shared; the host's pid as given. */
static void check_identity(const char *a_path, const char *b_path, int32_t b_pid)
{
	Perfetto__Protos__Trace *ta = NULL, *tb = NULL;
	struct perfetto_view *a = view_open(a_path, &ta), *b = view_open(b_path, &tb);
	int shared = 0;
	struct ptrack *host;

	if (a && b) {
		for (int i = 0; i < a->n_tracks; i++)
			shared += track_by_uuid(b, a->tracks[i].uuid) != NULL;
		CHECK(a->n_tracks == b->n_tracks, "%d and %d tracks", a->n_tracks, b->n_tracks);
		CHECK(shared == 0 && a->seq != b->seq, "%d track uuids (or the sequence id) shared by "
		      "two bundles", shared);
		host = track_by_name(b, "host");
		CHECK(host && host->pid == b_pid, "host pid %d, expected %d", host ? host->pid : -1, b_pid);
	}
	if (a)
		view_release(a, ta);
	if (b)
		view_release(b, tb);
}

/* Only step 0 and no API calls: the calls and flows go, the rest stays. */
static void check_perfetto_filtered(const char *path)
{
	Perfetto__Protos__Trace *tr = NULL;
	struct perfetto_view *v = view_open(path, &tr);
	struct ptrack *t;

	if (!v)
		return;
	t = track_by_name(v, "thread 100 (main)");
	CHECK(t && t->slices == 6, "--no-api: thread 100 has %d slices, expected 6", t ? t->slices : -1);
	t = track_by_name(v, "stream 9");
	CHECK(t && t->slices == 1, "--step 0: stream 9 has %d slices", t ? t->slices : -1);
	CHECK(v->flows_out == 0 && v->flows_in == 0, "--no-api still has flows");
	t = track_by_name(v, "live memory, model allocator: total");
	CHECK(t && t->counter_max == (1 << 20) + 4096 + 2048, "--step 0 lost the memory live before it");
	view_release(v, tr);
}

/* --range attn: attn and softmax with their two calls and kernels, memory from when attn opens. */
static void check_perfetto_range(const char *path)
{
	Perfetto__Protos__Trace *tr = NULL;
	struct perfetto_view *v = view_open(path, &tr);
	struct ptrack *t;

	if (!v)
		return;
	t = track_by_name(v, "thread 100 (main)");
	CHECK(t && t->slices == 4, "--range attn: thread 100 has %d slices, expected attn, softmax "
	      "and 2 calls", t ? t->slices : -1);
	check_span(v, "softmax", 2000, 3000, "attn", "thread 100 (main)");
	CHECK(slice_named(v, "layer.0") == NULL && slice_named(v, "backward") == NULL,
	      "--range attn kept ranges outside attn");
	t = track_by_name(v, "stream 7");
	CHECK(t && t->slices == 2, "--range attn: stream 7 has %d slices, expected 2", t ? t->slices : -1);
	t = track_by_name(v, "stream 8");
	CHECK(!t || t->slices == 0, "--range attn kept the memcpy and memset of backward");
	t = track_by_name(v, "thread 200");
	CHECK(!t || t->slices == 0, "--range attn kept thread 200's loader");
	CHECK(v->flows_out == 2 && v->flows_in == 2, "--range attn: %d/%d flows, expected 2/2",
	      v->flows_out, v->flows_in);
	/* the window [1000, 3000]: 1 MiB live at 1000, +4096 at 1200, +2048 at 2000, -2048 at 2100 */
	t = track_by_name(v, "live memory, model allocator: total");
	CHECK(t && t->counters == 4 && t->counter_max == (1 << 20) + 4096 + 2048 &&
	      t->counter_last == (1 << 20) + 4096, "--range attn: model total %d values, max %" PRId64
	      ", last %" PRId64, t ? t->counters : -1, t ? t->counter_max : -1, t ? t->counter_last : -1);
	view_release(v, tr);
}

/* ---- checking the Chrome JSON ----------------------------------------------- */

static json_t *find_x(json_t *events, const char *name)
{
	size_t i;
	json_t *e;

	json_array_foreach(events, i, e) {
		if (strcmp(json_string_value(json_object_get(e, "ph")) ?: "", "X") == 0 &&
		    strcmp(json_string_value(json_object_get(e, "name")) ?: "", name) == 0)
			return e;
	}
	return NULL;
}

static void check_chrome(const char *path)
{
	json_error_t err;
	json_t *root = json_load_file(path, 0, &err), *events, *e;
	int x = 0, meta = 0, counters = 0, flow_s = 0, flow_f = 0;
	size_t i;

	CHECK(root != NULL, "'%s' is not JSON: %s (line %d)", path, err.text, err.line);
	if (!root)
		return;
	events = json_object_get(root, "traceEvents");
	CHECK(json_is_array(events), "no traceEvents array");
	json_array_foreach(events, i, e) {
		const char *ph = json_string_value(json_object_get(e, "ph"));
		CHECK(ph != NULL, "event %zu without ph", i);
		if (!ph)
			continue;
		x += strcmp(ph, "X") == 0;
		meta += strcmp(ph, "M") == 0;
		counters += strcmp(ph, "C") == 0;
		flow_s += strcmp(ph, "s") == 0;
		flow_f += strcmp(ph, "f") == 0;
	}
	/* 7 ranges + 7 calls + 8 activities + 1 step */
	CHECK(x == 23, "%d complete events, expected 23", x);
	CHECK(meta >= 8, "%d metadata events", meta);
	CHECK(counters >= 5, "%d counter events", counters);
	CHECK(flow_s == 7 && flow_f == 7, "flows %d/%d, expected 7/7", flow_s, flow_f);

	e = find_x(events, "gemm_kernel");
	CHECK(e != NULL, "no gemm_kernel event");
	if (e) {
		/* ns kept: 1501 ns is 1.501 us, 998 ns is 0.998 us */
		double ts = json_number_value(json_object_get(e, "ts"));
		double dur = json_number_value(json_object_get(e, "dur"));
		CHECK(ts == 1.501 && dur == 0.998, "gemm_kernel ts %.17g dur %.17g", ts, dur);
		CHECK(strcmp(json_string_value(json_object_get(json_object_get(e, "args"), "op")) ?: "",
			     "step/forward/layer.0/attn/q_proj") == 0, "gemm_kernel has no op argument");
	}
	e = find_x(events, "softmax");
	CHECK(e && json_integer_value(json_object_get(e, "tid")) == 100, "softmax is not on thread 100");
	json_decref(root);
}

/* Rank `rank` of a two-rank run recorded without a pid (PyTorch's bundles of format 1.5 and 1.6). */
static int write_rank_pid0(const char *path, uint32_t rank)
{
	struct builder b;

	builder_init(&b);
	b.device.name = "Synthetic GPU";
	b.header.command_line = "test_export";
	b.header.hostname = "testhost";
	b.header.created_unix_ns = CREATED;
	b.header.time_base_ns = TIME_BASE;
	b.header.pid = 0;
	builder_rank(&b, rank, 2, 0x5eed, NULL);
	b.thread = 100;
	if (builder_open(&b, path) < 0)
		return 1;
	builder_launch(&b, "gemm_kernel", 7, 0, 1000, 1100, 1200, 2000);
	builder_step(&b, 0, false, 900, 2100);
	return builder_close(&b, "ok") < 0;
}

/* The ranks of a run without pids: their processes and GPUs named by rank, never "pid 0". */
static void check_pid0(const char *st, const char *dir)
{
	char r0[4096], r1[4096];

	snprintf(r0, sizeof(r0), "%s/pid0.rank0.stb", dir);
	snprintf(r1, sizeof(r1), "%s/pid0.rank1.stb", dir);
	CHECK(write_rank_pid0(r0, 0) == 0 && write_rank_pid0(r1, 1) == 0, "cannot write the pid-0 bundles");
	if (run("'%s' export '%s' '%s' --format chrome -o '%s/pid0.json' 2>/dev/null", st, r0, r1, dir) != 0)
		return;
	CHECK(run("grep -q 'GPU 1 Synthetic GPU (rank 1)' '%s/pid0.json'", dir) == 0, "GPU 1 is not named by its rank");
	expect_failure = true;
	CHECK(run("grep -q 'pid 0' '%s/pid0.json'", dir) != 0, "a track of the pid-0 ranks names 'pid 0'");
	expect_failure = false;
	if (run("'%s' export '%s' '%s' -o '%s/pid0.pftrace' 2>/dev/null", st, r0, r1, dir) != 0)
		return;
	expect_failure = true;
	CHECK(run("grep -q 'pid 0' '%s/pid0.pftrace'", dir) != 0, "a Perfetto track of the pid-0 ranks names 'pid 0'");
	expect_failure = false;
}

int main(int argc, char **argv)
{
	char path[4096], pf[4096], js[4096], pf2[4096], pf3[4096], other[4096], old[4096];

	if (argc == 3 && strcmp(argv[1], "--write") == 0)
		return write_bundle(argv[2]);
	if (argc != 3) {
		fprintf(stderr, "usage: test_export STEPTRACE DIR | --write FILE\n");
		return 2;
	}
	snprintf(path, sizeof(path), "%s/x.stb", argv[2]);
	snprintf(pf, sizeof(pf), "%s/x.pftrace", argv[2]);
	snprintf(pf2, sizeof(pf2), "%s/x-step0.pftrace", argv[2]);
	snprintf(js, sizeof(js), "%s/x.json", argv[2]);
	snprintf(pf3, sizeof(pf3), "%s/x-attn.pftrace", argv[2]);
	if (write_bundle(path) != 0) {
		fprintf(stderr, "cannot write the test bundle\n");
		return 1;
	}
	if (run("'%s' export '%s' -o '%s'", argv[1], path, pf) != 0 ||
	    run("'%s' export '%s' --format chrome -o '%s'", argv[1], path, js) != 0 ||
	    run("'%s' export '%s' --step 0 --no-api -o '%s'", argv[1], path, pf2) != 0 ||
	    run("'%s' export '%s' --range attn -o '%s'", argv[1], path, pf3) != 0)
		return 1;
	check_perfetto(pf);
	check_perfetto_filtered(pf2);
	check_perfetto_range(pf3);
	check_chrome(js);
	/* identity: the same bundle twice, the same run 1 ns later, an old bundle without a pid */
	snprintf(other, sizeof(other), "%s/other.stb", argv[2]);
	snprintf(old, sizeof(old), "%s/old.stb", argv[2]);
	CHECK(write_bundle_as(other, CREATED + 1, PID) == 0 && write_bundle_as(old, CREATED, 0) == 0,
	      "cannot write the variant bundles");
	if (run("'%s' export '%s' -o '%s/again.pftrace' 2>/dev/null", argv[1], path, argv[2]) == 0 &&
	    run("cmp -s '%s' '%s/again.pftrace'", pf, argv[2]) != 0)
		CHECK(0, "exporting the same bundle twice gives different bytes");
	if (run("'%s' export '%s' -o '%s/other.pftrace' 2>/dev/null", argv[1], other, argv[2]) == 0 &&
	    run("'%s' export '%s' -o '%s/old.pftrace' 2>/dev/null", argv[1], old, argv[2]) == 0) {
		snprintf(other, sizeof(other), "%s/other.pftrace", argv[2]);
		snprintf(old, sizeof(old), "%s/old.pftrace", argv[2]);
		check_identity(pf, other, PID);
		check_identity(pf, old, 1);   /* before 1.2: the fixed pid */
	}
	check_pid0(argv[1], argv[2]);
	/* bad input: one error line and a non-zero status, no output left behind */
	expect_failure = true;
	CHECK(run("'%s' export '%s' --step 5 -o '%s/bad.pftrace' 2>/dev/null", argv[1], path, argv[2]) != 0,
	      "--step 5 accepted");
	CHECK(run("'%s' export '%s' --format xml -o '%s/bad.x' 2>/dev/null", argv[1], path, argv[2]) != 0,
	      "--format xml accepted");
	expect_failure = false;
	CHECK(run("test ! -e '%s/bad.pftrace'", argv[2]) == 0, "a failed export left its file");
	return check_done("test_export");
}
