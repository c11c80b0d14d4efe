/*
 * test_rank_flows.c: the flows of a Perfetto trace of several ranks
 * (`steptrace export RUN.rank0.stb RUN.rank1.stb`) stay within a rank.
 *
 *   test_rank_flows TRACE.pftrace RANKS
 *
 * Decodes the trace with protobuf-c (proto/perfetto_trace.proto). A
 * track's rank is its root track's ("rank R host", "GPU n ... (rank R, pid
 * P)"). Perfetto joins every flow_ids with the terminating_flow_ids of the
 * same id anywhere in the trace, so: each id begins once and ends once, on
 * tracks of one rank, and every one of RANKS ranks has flows.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "perfetto_trace.pb-c.h"
#include "tests/lib/check.h"

struct track {
	uint64_t uuid, parent;
	const char *name;
};

/* One end of a flow: its id, the rank of its slice's track, begin or end. */
struct flow_end {
	uint64_t id;
	int rank;
	int begin;
};

static struct track *tracks;
static size_t n_tracks;

static const struct track *track_by_uuid(uint64_t uuid)
{
	for (size_t i = 0; i < n_tracks; i++)
		if (tracks[i].uuid == uuid)
			return &tracks[i];
	return NULL;
}

/* The rank its root track names; -1 when it names none. */
static int track_rank(uint64_t uuid)
{
	const struct track *t = track_by_uuid(uuid);
	const char *at;
	size_t hops = 0;

	while (t && t->parent && hops++ < n_tracks)
		t = track_by_uuid(t->parent);
	if (!t || !t->name || !(at = strstr(t->name, "rank ")))
		return -1;
	return atoi(at + 5);
}

static int cmp_end(const void *a, const void *b)
{
	const struct flow_end *x = a, *y = b;

	if (x->id != y->id)
		return x->id < y->id ? -1 : 1;
	return y->begin - x->begin;   /* the begin first */
}

/* Every begin and end of a flow in tr, with its rank; *n of them. */
static struct flow_end *flow_ends(const Perfetto__Protos__Trace *tr, size_t *n)
{
	struct flow_end *ends = NULL;
	size_t cap = 0;

	*n = 0;
	for (size_t i = 0; i < tr->n_packet; i++) {
		const Perfetto__Protos__TracePacket *p = tr->packet[i];
		const Perfetto__Protos__TrackEvent *e = p->track_event;

		if (p->data_case != PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT)
			continue;
		if (*n + e->n_flow_ids + e->n_terminating_flow_ids > cap) {
			cap = 2 * cap + e->n_flow_ids + e->n_terminating_flow_ids;
			ends = realloc(ends, cap * sizeof(*ends));
			if (!ends)
				return NULL;
		}
		for (size_t k = 0; k < e->n_flow_ids; k++)
			ends[(*n)++] = (struct flow_end){ e->flow_ids[k], track_rank(e->track_uuid), 1 };
		for (size_t k = 0; k < e->n_terminating_flow_ids; k++)
			ends[(*n)++] = (struct flow_end){ e->terminating_flow_ids[k], track_rank(e->track_uuid), 0 };
	}
	return ends;
}

int main(int argc, char **argv)
{
	Perfetto__Protos__Trace *tr;
	struct flow_end *ends;
	size_t len = 0, n = 0, flows = 0;
	int ranks, *per_rank;
	bool paired = true;
	uint8_t *buf;

	if (argc != 3 || (ranks = atoi(argv[2])) < 1) {
		fprintf(stderr, "usage: test_rank_flows TRACE.pftrace RANKS\n");
		return 2;
	}
	buf = check_slurp(argv[1], &len);
	tr = buf ? perfetto__protos__trace__unpack(NULL, len, buf) : NULL;
	free(buf);
	CHECK(tr != NULL, "'%s' does not decode as perfetto.protos.Trace", argv[1]);
	tracks = tr ? calloc(tr->n_packet + 1, sizeof(*tracks)) : NULL;
	per_rank = calloc((size_t)ranks, sizeof(*per_rank));
	if (!tr || !tracks || !per_rank)
		return check_done("test_rank_flows");
	for (size_t i = 0; i < tr->n_packet; i++) {
		const Perfetto__Protos__TrackDescriptor *d = tr->packet[i]->track_descriptor;

		if (tr->packet[i]->data_case != PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR)
			continue;
		tracks[n_tracks++] = (struct track){ d->uuid, d->has_parent_uuid ? d->parent_uuid : 0,
			d->name ? d->name : d->process && d->process->process_name ? d->process->process_name : NULL };
	}
	ends = flow_ends(tr, &n);
	CHECK(ends != NULL && n > 0, "no flows in '%s'", argv[1]);
	if (ends)
		qsort(ends, n, sizeof(*ends), cmp_end);
	for (size_t i = 0; ends && i < n; i += 2, flows++) {
		const struct flow_end *b = &ends[i], *e = i + 1 < n ? &ends[i + 1] : NULL;

		if (!e || e->id != b->id || !b->begin || e->begin || (i + 2 < n && ends[i + 2].id == b->id)) {
			CHECK(0, "flow id %" PRIu64 " does not begin once and end once", b->id);
			paired = false;
			break;
		}
		CHECK(b->rank >= 0 && b->rank < ranks, "flow %" PRIu64 " begins on a track of no rank", b->id);
		CHECK(b->rank == e->rank, "flow %" PRIu64 " begins in rank %d and ends in rank %d", b->id, b->rank,
		      e->rank);
		if (b->rank >= 0 && b->rank < ranks)
			per_rank[b->rank]++;
	}
	for (int r = 0; paired && r < ranks; r++)
		CHECK(per_rank[r] > 0, "rank %d has no flows", r);
	if (!check_failures)
		printf("test_rank_flows: %zu flows, each within one of %d ranks\n", flows, ranks);
	free(ends);
	free(per_rank);
	free(tracks);
	perfetto__protos__trace__free_unpacked(tr, NULL);
	return check_done("test_rank_flows");
}
