/*
 * perfetto.c: the layout's marks as Perfetto's own protobuf trace
 * (proto/perfetto_trace.proto), on one packet sequence: a first packet
 * that starts the sequence's state (its clock and interned annotation
 * names), track descriptors, then begin/end track events with interned
 * names and annotations, counter values, flows.
 *
 * Time: packets carry the bundle's times (ns since its time base) on a
 * clock of the sequence's own (BUNDLE_CLOCK_ID), which the first packet's
 * clock snapshot pairs with CLOCK_REALTIME: time base = the header's
 * created_unix_ns, read right after it (format 1.2; close to it before).
 * Perfetto then shows events at their wall-clock time and lines them up
 * with other traces that know CLOCK_REALTIME (their own snapshots). The
 * ranks of a run are one sequence each, their times moved onto the run's
 * time line (layout.shift) and all snapshots naming its one real time, so
 * Perfetto places them as replay/ranks.h does, not by their own clocks.
 */
#include "export/perfetto.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "export/intern.h"
#include "export/layout.h"
#include "lib/error.h"
#include "lib/grow.h"
#include "perfetto_trace.pb-c.h"

/* Clock ids 64-127 are the writer's own, valid on its sequence. */
#define BUNDLE_CLOCK_ID 64

struct pf_writer {
	FILE *out;
	uint8_t *buf;
	size_t cap;
	struct export_interner names, strings;
	uint32_t seq;                 /* trusted_packet_sequence_id */
	bool failed;
};

/* Every packet after the first: on the sequence, needing its state. */
static void pf_packet_init(const struct pf_writer *w, Perfetto__Protos__TracePacket *p)
{
	perfetto__protos__trace_packet__init(p);
	p->has_trusted_packet_sequence_id = 1;
	p->trusted_packet_sequence_id = w->seq;
	p->has_sequence_flags = 1;
	p->sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
}

/* Writes one packet as Trace.packet (field 1, length-delimited): the file is a Trace. */
static int pf_write(struct pf_writer *w, const Perfetto__Protos__TracePacket *p)
{
	size_t len = perfetto__protos__trace_packet__get_packed_size(p);
	uint8_t head[11];
	size_t h = 0;

	if (ALLOC_GROW(w->buf, len + 1, w->cap) < 0)
		return -1;
	perfetto__protos__trace_packet__pack(p, w->buf);
	head[h++] = 0x0a;
	for (uint64_t v = len; ; v >>= 7) {
		head[h++] = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
		if (v < 0x80)
			break;
	}
	if (fwrite(head, 1, h, w->out) != h || fwrite(w->buf, 1, len, w->out) != len) {
		w->failed = true;
		return error("cannot write the trace: %s", strerror(errno));
	}
	return 0;
}

/*
 * The first packet: clears the sequence's state and sets it up again (as
 * Perfetto's own SDK does): packets' timestamps default to the bundle's
 * clock, a snapshot pairs that clock with CLOCK_REALTIME, the trace's clock
 * is CLOCK_REALTIME, and the annotation names are interned.
 */
static int pf_sequence_start(struct pf_writer *w, const struct layout *L)
{
	Perfetto__Protos__TracePacket p;
	Perfetto__Protos__TracePacketDefaults defaults = PERFETTO__PROTOS__TRACE_PACKET_DEFAULTS__INIT;
	Perfetto__Protos__ClockSnapshot snap = PERFETTO__PROTOS__CLOCK_SNAPSHOT__INIT;
	Perfetto__Protos__ClockSnapshot__Clock clocks[2], *clock_ptrs[2];
	Perfetto__Protos__InternedData id = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__DebugAnnotationName names[ANN_COUNT];
	Perfetto__Protos__DebugAnnotationName *name_ptrs[ANN_COUNT];
	for (int i = 0; i < ANN_COUNT; i++) {
		perfetto__protos__debug_annotation_name__init(&names[i]);
		names[i].has_iid = 1;
		names[i].iid = (uint64_t)i + 1;
		names[i].name = (char *)export_ann_names[i];
		name_ptrs[i] = &names[i];
	}
	for (int i = 0; i < 2; i++) {
		perfetto__protos__clock_snapshot__clock__init(&clocks[i]);
		clocks[i].has_clock_id = clocks[i].has_timestamp = 1;
		clock_ptrs[i] = &clocks[i];
	}
	clocks[0].clock_id = BUNDLE_CLOCK_ID;
	clocks[0].timestamp = 0;                               /* the time base */
	clocks[1].clock_id = PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_REALTIME;
	clocks[1].timestamp = L->realtime_base > 0 ? (uint64_t)L->realtime_base : 0;
	snap.n_clocks = 2;
	snap.clocks = clock_ptrs;
	snap.has_primary_trace_clock = 1;
	snap.primary_trace_clock = PERFETTO__PROTOS__BUILTIN_CLOCK__BUILTIN_CLOCK_REALTIME;
	defaults.has_timestamp_clock_id = 1;
	defaults.timestamp_clock_id = BUNDLE_CLOCK_ID;
	id.n_debug_annotation_names = ANN_COUNT;
	id.debug_annotation_names = name_ptrs;

	pf_packet_init(w, &p);
	p.sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED |
			   PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
	p.has_first_packet_on_sequence = 1;
	p.first_packet_on_sequence = 1;
	p.trace_packet_defaults = &defaults;
	p.interned_data = &id;
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_CLOCK_SNAPSHOT;
	p.clock_snapshot = &snap;
	return pf_write(w, &p);
}

static int pf_tracks(struct pf_writer *w, const struct layout *L)
{
	for (size_t i = 0; i < L->n_tracks; i++) {
		const struct xtrack *t = &L->tracks[i];
		Perfetto__Protos__TracePacket p;
		Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
		Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
		Perfetto__Protos__ThreadDescriptor thd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
		Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;

		pf_packet_init(w, &p);
		p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
		p.track_descriptor = &td;
		td.has_uuid = 1;
		td.uuid = t->uuid;
		if (t->parent) {
			td.has_parent_uuid = 1;
			td.parent_uuid = t->parent;
		}
		switch (t->kind) {
		case TK_PROCESS:
			pd.has_pid = 1;
			pd.pid = t->pid;
			pd.process_name = t->name;
			td.process = &pd;
			break;
		case TK_THREAD:
			thd.has_pid = 1;
			thd.pid = t->pid;
			thd.has_tid = 1;
			thd.tid = t->tid;
			thd.thread_name = t->name;
			td.thread = &thd;
			break;
		case TK_COUNTER:
			cd.has_unit = 1;
			cd.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES;
			td.counter = &cd;
			td.name = t->name;
			break;
		default:      /* devices (no pid of their own here), streams, lanes, steps */
			td.name = t->name;
			break;
		}
		if (pf_write(w, &p) < 0)
			return -1;
	}
	return 0;
}

/* Interns s (from `from`, EXPORT_ID_*) in `in`; a fresh string is appended to the packet's interned entries. */
static uint64_t pf_intern(struct export_interner *in, uint64_t from, const char *s,
			  Perfetto__Protos__InternedString *fresh_out, size_t *n_fresh)
{
	bool fresh = false;
	uint64_t iid = export_intern(in, from, s, &fresh);

	if (iid && fresh) {
		Perfetto__Protos__InternedString *e = &fresh_out[(*n_fresh)++];
		perfetto__protos__interned_string__init(e);
		e->has_iid = 1;
		e->iid = iid;
		e->has_str = 1;
		e->str.data = (uint8_t *)s;
		e->str.len = strlen(s);
	}
	return iid;
}

static int pf_event(struct pf_writer *w, const struct layout *L, const struct xmark *m, uint64_t t)
{
	Perfetto__Protos__TracePacket p;
	Perfetto__Protos__TrackEvent ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__InternedData id = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__EventName en = PERFETTO__PROTOS__EVENT_NAME__INIT, *en_ptr = &en;
	Perfetto__Protos__InternedString istr[MAX_ANN], *istr_ptrs[MAX_ANN];
	Perfetto__Protos__DebugAnnotation da[MAX_ANN], *da_ptrs[MAX_ANN];
	struct ann ann[MAX_ANN];
	char bufs[4][256], namebuf[512];
	uint64_t flow;
	size_t n_istr = 0;

	pf_packet_init(w, &p);
	p.has_timestamp = 1;
	p.timestamp = t + (uint64_t)L->shift;   /* unsigned: a bundle's times reach 2^63 */
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	p.track_event = &ev;
	ev.has_type = 1;
	ev.has_track_uuid = 1;

	if (m->type == MK_COUNTER) {
		const struct xcount *c = &L->counts[m->ref];
		ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
		ev.track_uuid = L->tracks[c->track].uuid;
		ev.counter_value_field_case = PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE;
		ev.counter_value = c->value;
		return pf_write(w, &p);
	}
	if (m->type == MK_INSTANT) {
		export_oom_name(L->rp, m->ref, namebuf, sizeof(namebuf));
		ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
		ev.track_uuid = L->tracks[L->steps_track].uuid;
		ev.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
		ev.name = namebuf;
		return pf_write(w, &p);
	}

	const struct xslice *s = &L->slices[m->ref];
	ev.track_uuid = L->tracks[s->track].uuid;
	if (m->type == MK_END) {
		ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
		return pf_write(w, &p);
	}
	ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;

	/* name: interned (kernel names are long and repeat) */
	const char *name = export_slice_name(L, s, namebuf, sizeof(namebuf));
	bool fresh = false;
	uint64_t iid = export_intern(&w->names, export_slice_name_id(L, s), name, &fresh);
	if (!iid)
		return error("out of memory");
	ev.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
	ev.name_iid = iid;
	if (fresh) {
		en.has_iid = 1;
		en.iid = iid;
		en.name = (char *)name;
		id.n_event_names = 1;
		id.event_names = &en_ptr;
	}

	size_t n_ann = export_slice_annotations(L, s, ann, bufs);
	for (size_t i = 0; i < n_ann; i++) {
		Perfetto__Protos__DebugAnnotation *d = &da[i];
		perfetto__protos__debug_annotation__init(d);
		d->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID;
		d->name_iid = (uint64_t)ann[i].key + 1;
		if (ann[i].is_str) {
			uint64_t sid = pf_intern(&w->strings, ann[i].id, ann[i].str, istr, &n_istr);
			if (!sid)
				return error("out of memory");
			d->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID;
			d->string_value_iid = sid;
		} else {
			d->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE;
			d->uint_value = ann[i].u;
		}
		da_ptrs[i] = d;
	}
	ev.n_debug_annotations = n_ann;
	ev.debug_annotations = da_ptrs;
	for (size_t i = 0; i < n_istr; i++)
		istr_ptrs[i] = &istr[i];
	if (n_istr) {
		id.n_debug_annotation_string_values = n_istr;
		id.debug_annotation_string_values = istr_ptrs;
	}
	if (fresh || n_istr)
		p.interned_data = &id;

	flow = 0;
	if (s->what == SL_API)
		flow = export_launch_flow(L, &L->rp->apis[s->idx]);
	else if (s->what == SL_ACTIVITY)
		flow = export_activity_flow(L, &L->rp->activities[s->idx], s->idx);
	if (flow && s->what == SL_API) {
		ev.n_flow_ids = 1;
		ev.flow_ids = &flow;
	} else if (flow) {
		ev.n_terminating_flow_ids = 1;
		ev.terminating_flow_ids = &flow;
	}
	return pf_write(w, &p);
}

static void pf_writer_release(struct pf_writer *w)
{
	free(w->buf);
	export_interner_release(&w->names);
	export_interner_release(&w->strings);
}

struct pf_estimate {
	const struct layout *L;
	struct pf_writer w;
};

static int pf_estimate_begin(void *ctx, FILE *f)
{
	struct pf_estimate *e = ctx;

	e->w.out = f;
	return pf_sequence_start(&e->w, e->L) < 0 || pf_tracks(&e->w, e->L) < 0 ? -1 : 0;
}

static int pf_estimate_mark(void *ctx, size_t i)
{
	struct pf_estimate *e = ctx;

	return pf_event(&e->w, e->L, &e->L->marks[e->L->keys[i].idx], e->L->keys[i].key);
}

int export_estimate_perfetto(const struct layout *L, uint64_t *bytes)
{
	struct pf_estimate e = { .L = L, .w = { .seq = export_sequence_id(L) } };
	int rc = export_estimate(L, &e, pf_estimate_begin, pf_estimate_mark, bytes);

	pf_writer_release(&e.w);
	return rc;
}

int export_write_perfetto(const struct layout *L, FILE *out)
{
	struct pf_writer w = { .out = out, .seq = export_sequence_id(L) };
	int rc = -1;

	if (pf_sequence_start(&w, L) < 0 || pf_tracks(&w, L) < 0)
		goto out;
	for (size_t i = 0; i < L->n_marks; i++) {
		const struct replay_key *k = &L->keys[i];
		if (pf_event(&w, L, &L->marks[k->idx], k->key) < 0)
			goto out;
	}
	rc = 0;
out:
	pf_writer_release(&w);
	return rc;
}
