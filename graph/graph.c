/*
 * graph.c: the dependency graph of a recorded run (graph.h): its nodes and
 * edges, which edge decided each node, and a topological order of the
 * nodes' starts and ends for re-timing (graph_retime.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

#include "lib/error.h"
#include "lib/grow.h"
#include "lib/memlimit.h"
#include "replay/nccl.h"

struct build {
	struct graph *g;
	size_t alloc_edges;
};

/* Claims `bytes` more for the graph from the analysis budget (lib/memlimit.h). 0, or -1 after one line. */
static int claim(struct graph *g, uint64_t bytes)
{
	char what[96];

	snprintf(what, sizeof(what), "explain's dependency graph of %zu rank%s", g->n_ranks, g->n_ranks == 1 ? "" : "s");
	if (memory_budget_claim(bytes, what) < 0)
		return -1;
	g->memory += bytes;
	return 0;
}

static int add_edge(struct build *b, int32_t from, int32_t to, int kind, bool to_end, int64_t delay)
{
	struct graph *g = b->g;
	size_t before = b->alloc_edges;

	if (ALLOC_GROW(g->edges, g->n_edges + 1, b->alloc_edges) < 0)
		return -1;
	if (b->alloc_edges > before && claim(g, (b->alloc_edges - before) * (sizeof(struct graph_edge) + 2 * sizeof(uint32_t))) < 0)
		return -1;   /* the edge, its place in in_edges and in order_events' lists */
	g->edges[g->n_edges++] = (struct graph_edge){
		.from = from, .to = to, .delay = delay, .kind = (uint8_t)kind, .to_end = to_end,
	};
	return 0;
}

/* The source time an edge counts from, as recorded. */
static uint64_t edge_source(const struct graph *g, const struct graph_edge *e)
{
	const struct graph_node *f = &g->nodes[e->from];

	if (f->kind == GN_COLL && e->to_end) {
		int32_t from;

		return graph_coll_source(g, e, &from);
	}
	return e->kind == GE_LAUNCH || e->kind == GE_COLL ? f->start : f->end;
}

uint64_t graph_coll_source(const struct graph *g, const struct graph_edge *e, int32_t *from)
{
	const struct graph_node *h = &g->nodes[e->from];

	*from = h->index == e->to ? h->poll : h->index;
	return *from >= 0 ? g->nodes[*from].start : UINT64_MAX;
}

/* True when the call's name says it waits for the GPU. */
static bool api_synchronises(const char *name)
{
	if (strstr(name, "Synchronize"))
		return true;
	/* blocking copies: cudaMemcpy, cudaMemcpy2D, cuMemcpyDtoH_v2 ..., not the Async ones */
	if ((!strncmp(name, "cudaMemcpy", 10) || !strncmp(name, "cuMemcpy", 8)) && !strstr(name, "Async") &&
	    !strstr(name, "Peer") && !strstr(name, "Symbol"))
		return true;
	return false;
}

/* 1: a query (cudaStreamQuery, cudaEventQuery, cu...) that found the work done; 2: not ready; 0: no query. */
static int api_query(const struct replay *rp, size_t i)
{
	const char *name = replay_str(rp, rp->apis[i].name);

	if (!strstr(name, "StreamQuery") && !strstr(name, "EventQuery"))
		return 0;
	return rp->apis[i].status == 0 ? 1 : rp->apis[i].status == 600 ? 2 : 0;   /* cudaErrorNotReady, CUDA_ERROR_NOT_READY */
}

static int cmp_u64_idx(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Sync records by correlation: (correlation, stream) pairs, sorted. */
static uint64_t *sync_streams(const struct replay *rp, size_t *n)
{
	uint64_t *v = NULL;
	size_t k = 0;

	*n = 0;
	for (size_t i = 0; i < rp->n_others; i++)
		k += rp->others[i].kind == ST_SYNC;
	if (!k)
		return NULL;
	v = malloc(2 * k * sizeof(*v));
	if (!v)
		return NULL;
	k = 0;
	for (size_t i = 0; i < rp->n_others; i++)
		if (rp->others[i].kind == ST_SYNC) {
			v[2 * k] = rp->others[i].sync.correlation;
			v[2 * k + 1] = rp->others[i].sync.stream;
			k++;
		}
	qsort(v, k, 2 * sizeof(*v), cmp_u64_idx);
	*n = k;
	return v;
}

static uint32_t sync_stream_of(const uint64_t *v, size_t n, uint64_t correlation)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (v[2 * mid] < correlation)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < n && v[2 * lo] == correlation ? (uint32_t)v[2 * lo + 1] : UINT32_MAX;
}

/* Activity node indices of one rank sorted by recorded end. */
static uint32_t *by_end(const struct graph *g, int32_t first, size_t n)
{
	uint64_t *keys = malloc(2 * n * sizeof(*keys));
	uint32_t *out = malloc(n * sizeof(*out) + 1);

	if (!keys || !out) {
		free(keys);
		free(out);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		keys[2 * i] = g->nodes[first + i].end;
		keys[2 * i + 1] = (uint64_t)first + i;
	}
	qsort(keys, n, 2 * sizeof(*keys), cmp_u64_idx);
	for (size_t i = 0; i < n; i++)
		out[i] = (uint32_t)keys[2 * i + 1];
	free(keys);
	return out;
}

/* Index of the last entry of ends (sorted by node end) with end <= t, -1 none. */
static ptrdiff_t last_end_at(const struct graph *g, const uint32_t *ends, size_t n, uint64_t t)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->nodes[ends[mid]].end <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (ptrdiff_t)lo - 1;
}

/* How far back a synchronisation or wait looks among activities by end. */
#define SCAN_BACK 64

/* The nodes and the edges every run has: thread, launch, stream; and the calls' syncs. */
static int build_rank(struct build *b, uint32_t r)
{
	struct graph *g = b->g;
	const struct replay *rp = g->rp[r];
	int32_t first_api = (int32_t)g->n_nodes, first_act = first_api + (int32_t)rp->n_apis;
	size_t n_sync = 0;
	uint64_t *syncs;
	uint32_t *ends;

	g->api_node[r] = malloc((rp->n_apis + 1) * sizeof(int32_t));
	g->act_node[r] = malloc((rp->n_activities + 1) * sizeof(int32_t));
	if (!g->api_node[r] || !g->act_node[r])
		return error("out of memory");
	for (size_t i = 0; i < rp->n_apis; i++) {
		const struct replay_api *a = &rp->apis[i];
		struct graph_node *n = &g->nodes[g->n_nodes];

		*n = (struct graph_node){
			.start = graph_time(g, r, a->start), .end = graph_time(g, r, a->end < a->start ? a->start : a->end),
			.rank = r, .kind = GN_API, .work = GW_HOST, .index = (int32_t)i, .bind = -1, .bind_end = -1,
			.poll = -1,
		};
		n->own = n->end - n->start;
		n->sync = api_synchronises(replay_str(rp, a->name));
		g->api_node[r][i] = (int32_t)g->n_nodes++;
	}
	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];
		struct graph_node *n = &g->nodes[g->n_nodes];

		*n = (struct graph_node){
			.start = graph_time(g, r, a->start), .end = graph_time(g, r, a->end < a->start ? a->start : a->end),
			.rank = r, .kind = GN_GPU, .index = (int32_t)i, .bind = -1, .bind_end = -1, .poll = -1,
		};
		n->work = a->kind != ST_KERNEL ? GW_COPY : nccl_collective(rp, a) ? GW_COMM : GW_KERNEL;
		n->own = n->end - n->start;
		g->act_node[r][i] = (int32_t)g->n_nodes++;
	}

	/*
	 * Thread order. A query that found the work done after queries that
	 * found it not ready (a polling loop) follows the call before the first
	 * of them: the polls wait for the GPU (its GE_SYNC edge, below), they
	 * are not the host's work.
	 */
	for (size_t t = 0; t < rp->n_threads; t++) {
		const struct replay_thread *th = &rp->threads[t];

		for (size_t k = 1; k < th->n_apis; k++) {
			int32_t from = g->api_node[r][th->apis[k - 1]], to = g->api_node[r][th->apis[k]];

			if (api_query(rp, th->apis[k]) == 1 && api_query(rp, th->apis[k - 1]) == 2) {
				size_t j = k - 1;

				while (j > 0 && api_query(rp, th->apis[j - 1]) == 2)
					j--;
				/*
				 * a loop: two polls or more, over GRAPH_POLL_GAP at least (a
				 * caching allocator's one look at an event is no wait)
				 */
				if (k - j >= 2 && rp->apis[th->apis[k]].start - rp->apis[th->apis[j]].start >= GRAPH_POLL_GAP) {
					g->nodes[to].poll = g->api_node[r][th->apis[j]];   /* the first poll */
					if (j == 0)
						continue;
					from = g->api_node[r][th->apis[j - 1]];
				}
			}
			if (add_edge(b, from, to, GE_THREAD, false,
				     (int64_t)(g->nodes[g->nodes[to].poll >= 0 ? g->nodes[to].poll : to].start -
					       g->nodes[from].end)) < 0)
				return -1;
		}
	}
	/* launches */
	for (size_t i = 0; i < rp->n_activities; i++) {
		int32_t api = rp->activities[i].api;

		if (api >= 0 && (size_t)api < rp->n_apis) {
			int32_t from = g->api_node[r][api], to = first_act + (int32_t)i;

			if (add_edge(b, from, to, GE_LAUNCH, false,
				     (int64_t)(g->nodes[to].start - g->nodes[from].start)) < 0)
				return -1;
		}
	}
	/*
	 * Work no recorded call launched (its call was not recorded) and the
	 * first call of a thread other than the first: after the latest call
	 * of the rank that started before them, so that they move with the
	 * host rather than stay at their recorded instants.
	 */
	{
		uint32_t *start_order = malloc((rp->n_apis + 1) * sizeof(uint32_t));
		size_t at = 0;

		if (!start_order)
			return error("out of memory");
		for (size_t i = 0; i < rp->n_apis; i++)
			start_order[i] = (uint32_t)i;   /* apis are by start already */
		for (size_t i = 0; i < rp->n_activities; i++) {
			const struct replay_activity *a = &rp->activities[i];

			if (a->api >= 0 && (size_t)a->api < rp->n_apis)
				continue;
			while (at < rp->n_apis && rp->apis[start_order[at]].start <= a->start)
				at++;
			if (at > 0 && add_edge(b, g->api_node[r][start_order[at - 1]], first_act + (int32_t)i, GE_LAUNCH,
					       false, (int64_t)(a->start - rp->apis[start_order[at - 1]].start)) < 0) {
				free(start_order);
				return -1;
			}
		}
		for (size_t t = 0; t < rp->n_threads; t++) {
			const struct replay_thread *th = &rp->threads[t];
			size_t k;

			if (!th->n_apis)
				continue;
			/* the latest call of another thread starting before this thread's first */
			for (k = th->apis[0]; k-- > 0;)
				if (rp->apis[k].thread != th->thread)
					break;
			if (k != (size_t)-1 && add_edge(b, g->api_node[r][k], g->api_node[r][th->apis[0]], GE_LAUNCH, false,
							(int64_t)(rp->apis[th->apis[0]].start - rp->apis[k].start)) < 0) {
				free(start_order);
				return -1;
			}
		}
		free(start_order);
	}
	/* stream order */
	for (size_t s = 0; s < rp->n_streams; s++) {
		const struct replay_stream *st = &rp->streams[s];

		for (size_t k = 1; k < st->n; k++) {
			int32_t from = first_act + (int32_t)st->acts[k - 1], to = first_act + (int32_t)st->acts[k];

			if (add_edge(b, from, to, GE_STREAM, false,
				     (int64_t)(g->nodes[to].start - g->nodes[from].end)) < 0)
				return -1;
		}
	}

	/* synchronisations: a call that returned once the latest work it covers ended */
	syncs = sync_streams(rp, &n_sync);
	ends = by_end(g, first_act, rp->n_activities);
	if (!ends && rp->n_activities) {
		free(syncs);
		return error("out of memory");
	}
	for (size_t i = 0; i < rp->n_apis; i++) {
		const struct replay_api *a = &rp->apis[i];
		struct graph_node *n = &g->nodes[first_api + (int32_t)i];
		uint32_t stream = UINT32_MAX;
		ptrdiff_t k;
		int scanned = 0;

		if (n_sync && sync_stream_of(syncs, n_sync, a->correlation) != UINT32_MAX) {
			n->sync = true;
			stream = sync_stream_of(syncs, n_sync, a->correlation);
		}
		if (!n->sync)
			continue;
		for (k = last_end_at(g, ends, rp->n_activities, n->end); k >= 0 && scanned < SCAN_BACK; k--, scanned++) {
			const struct graph_node *w = &g->nodes[ends[k]];
			const struct replay_activity *act = &rp->activities[w->index];

			if (w->end <= n->start)
				break;
			if (stream != UINT32_MAX && act->stream != stream)
				continue;
			/* work launched before the call, or by the call itself (a blocking copy) */
			if (act->api < 0 || (size_t)act->api >= rp->n_apis ||
			    (rp->apis[act->api].start > a->start && (size_t)act->api != i))
				continue;
			if (add_edge(b, (int32_t)ends[k], first_api + (int32_t)i, GE_SYNC, true,
				     (int64_t)(n->end - w->end)) < 0)
				goto fail;
			n->own = n->end - w->end;
			break;
		}
	}
	/* a polling loop's last query: after the work that ended while it polled */
	for (size_t i = 0; i < rp->n_apis; i++) {
		const struct graph_node *q = &g->nodes[first_api + (int32_t)i];
		ptrdiff_t w;

		if (q->poll < 0)
			continue;
		w = last_end_at(g, ends, rp->n_activities, q->start);
		if (w >= 0 && g->nodes[ends[w]].end > g->nodes[q->poll].start &&
		    add_edge(b, (int32_t)ends[w], first_api + (int32_t)i, GE_SYNC, false,
			     (int64_t)(q->start - g->nodes[ends[w]].end)) < 0)
			goto fail;
	}
	free(syncs);
	free(ends);
	return 0;
fail:
	free(syncs);
	free(ends);
	return -1;
}

/*
 * The collectives of the ranks: the k-th NCCL kernel of each rank, as
 * replay/ranks.c matches them, meet at a GN_COLL node of their own (graph.h).
 */
static int build_collectives(struct build *b)
{
	struct graph *g = b->g;
	int32_t **coll = calloc(g->n_ranks, sizeof(*coll));
	size_t *n_coll = calloc(g->n_ranks, sizeof(*n_coll)), common = SIZE_MAX, most = 0;
	struct graph_node *nodes;
	int ret = -1;

	if (!coll || !n_coll)
		goto oom;
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		const struct replay *rp = g->rp[r];

		coll[r] = malloc((rp->n_activities + 1) * sizeof(int32_t));
		if (!coll[r])
			goto oom;
		for (size_t i = 0; i < rp->n_activities; i++)
			if (g->nodes[g->act_node[r][i]].work == GW_COMM)
				coll[r][n_coll[r]++] = g->act_node[r][i];
		if (n_coll[r] < common) {
			common = n_coll[r];
			g->coll_fewest_rank = r;
		}
		if (n_coll[r] > most) {
			most = n_coll[r];
			g->coll_most_rank = r;
		}
	}
	if (most > common) {
		g->coll_fewest = common;
		g->coll_most = most;
	}
	if (!common) {
		ret = 0;
		goto out;
	}
	if (claim(g, common * (sizeof(struct graph_node) + 2 * sizeof(uint32_t))) < 0)
		goto out;
	nodes = realloc(g->nodes, (g->n_nodes + common + 1) * sizeof(*g->nodes));
	if (!nodes)
		goto oom;
	g->nodes = nodes;
	for (size_t k = 0; k < common; k++) {
		int32_t hub = (int32_t)g->n_nodes;
		struct graph_node *h = &g->nodes[g->n_nodes++];
		uint64_t last = 0, second = 0;
		int32_t arg = -1, arg2 = -1;

		/* the rank that arrived last (the first of them), and the last of the others */
		for (uint32_t r = 0; r < g->n_ranks; r++) {
			uint64_t t = g->nodes[coll[r][k]].start;

			if (arg < 0 || t > last) {
				second = last;
				arg2 = arg;
				last = t;
				arg = coll[r][k];
			} else if (arg2 < 0 || t > second) {
				second = t;
				arg2 = coll[r][k];
			}
		}
		*h = (struct graph_node){
			.start = last, .end = last, .rank = GRAPH_NO_RANK, .kind = GN_COLL, .work = GW_COMM,
			.index = arg, .bind = -1, .bind_end = -1, .poll = arg2,
		};
		g->n_colls++;
		for (uint32_t r = 0; r < g->n_ranks; r++) {
			struct graph_node *n = &g->nodes[coll[r][k]];
			int64_t xfer = n->end > last ? (int64_t)(n->end - last) : 0;

			if (add_edge(b, coll[r][k], hub, GE_COLL, false, 0) < 0 ||
			    add_edge(b, hub, coll[r][k], GE_COLL, true, xfer) < 0)
				goto out;
			n->own = (uint64_t)xfer < n->own ? (uint64_t)xfer : n->own;
		}
	}
	ret = 0;
	goto out;
oom:
	error("out of memory");
out:
	for (uint32_t r = 0; coll && r < g->n_ranks; r++)
		free(coll[r]);
	free(coll);
	free(n_coll);
	return ret;
}

static int group_in_edges(struct graph *g)
{
	uint32_t *fill;

	free(g->in_edges);   /* grouped again once the inferred waits are in */
	g->in_edges = malloc((g->n_edges + 1) * sizeof(uint32_t));
	fill = calloc(g->n_nodes + 1, sizeof(uint32_t));
	if (!g->in_edges || !fill) {
		free(fill);
		return error("out of memory");
	}
	for (size_t i = 0; i < g->n_nodes; i++)
		g->nodes[i].n_in = 0;
	for (size_t e = 0; e < g->n_edges; e++)
		g->nodes[g->edges[e].to].n_in++;
	for (size_t i = 0, at = 0; i < g->n_nodes; i++) {
		g->nodes[i].in = (uint32_t)at;
		at += g->nodes[i].n_in;
	}
	for (size_t e = 0; e < g->n_edges; e++) {
		struct graph_node *n = &g->nodes[g->edges[e].to];

		g->in_edges[n->in + fill[g->edges[e].to]++] = (uint32_t)e;
	}
	free(fill);
	return 0;
}

/* Decides each node's binding start edge, with the delays each kind needs at least (`floor`). */
static void bind_starts(struct graph *g, const int64_t *floor)
{
	for (size_t i = 0; i < g->n_nodes; i++) {
		struct graph_node *n = &g->nodes[i];
		uint64_t best = 0;

		n->bind = -1;
		for (uint32_t k = 0; k < n->n_in; k++) {
			const struct graph_edge *e = &g->edges[g->in_edges[n->in + k]];
			int64_t d = e->delay < floor[e->kind] ? e->delay : floor[e->kind];
			uint64_t t;

			if (e->to_end)
				continue;
			t = graph_add(edge_source(g, e), d);
			if (n->bind < 0 || t > best || (t == best && e->kind == GE_WAIT)) {
				best = t;
				n->bind = (int32_t)g->in_edges[n->in + k];
			}
		}
		n->bind_end = -1;
		for (uint32_t k = 0; k < n->n_in; k++) {
			const struct graph_edge *e = &g->edges[g->in_edges[n->in + k]];

			if (e->to_end && edge_source(g, e) != UINT64_MAX &&
			    graph_add(edge_source(g, e), e->delay) >= n->end &&
			    (n->bind_end < 0 || edge_source(g, e) > edge_source(g, &g->edges[n->bind_end])))
				n->bind_end = (int32_t)g->in_edges[n->in + k];
		}
	}
}

/*
 * The k-th smallest of v[0 .. n) (Hoare's selection, the middle of three
 * as pivot), v reordered: linear on average, where sorting a graph of 1,024
 * ranks' delays to take a median cost n log n.
 */
static int64_t select_kth(int64_t *v, size_t n, size_t k)
{
	ptrdiff_t lo = 0, hi = (ptrdiff_t)n - 1, want = (ptrdiff_t)k;

	while (lo < hi) {
		ptrdiff_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
		int64_t a = v[lo], b = v[mid], c = v[hi];
		int64_t pivot = a < b ? (b < c ? b : a < c ? c : a) : (a < c ? a : b < c ? c : b);

		while (i <= j) {   /* v[lo .. j] <= pivot <= v[i .. hi], v[j + 1 .. i - 1] the pivot */
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i <= j) {
				int64_t t = v[i];

				v[i++] = v[j];
				v[j--] = t;
			}
		}
		if (want <= j)
			hi = j;
		else if (want >= i)
			lo = i;
		else
			break;
	}
	return v[want];
}

/* The median delay of the deciding edges of each kind. */
static int typical_delays(struct graph *g)
{
	int64_t *v = malloc((g->n_nodes + 1) * sizeof(*v));

	if (!v)
		return error("out of memory");
	for (int kind = 0; kind < GE_KIND_COUNT; kind++) {
		size_t n = 0;

		for (size_t i = 0; i < g->n_nodes; i++) {
			int32_t b = g->nodes[i].bind;

			if (b >= 0 && g->edges[b].kind == kind)
				v[n++] = g->edges[b].delay;
		}
		if (n) {
			int64_t med = select_kth(v, n, (n - 1) / 2);   /* the lower median */

			g->typical[kind] = med > 0 ? med : 0;
		} else {
			g->typical[kind] = 0;
		}
	}
	free(v);
	return 0;
}

/*
 * Inferred waits: an activity that started well after what its stream and
 * launch explain, right when another stream's work ended.
 */
static int infer_waits(struct build *b)
{
	struct graph *g = b->g;
	size_t n_before = g->n_edges;

	for (uint32_t r = 0; r < g->n_ranks; r++) {
		const struct replay *rp = g->rp[r];
		int32_t first_act = rp->n_activities ? g->act_node[r][0] : 0;
		uint32_t *ends = rp->n_activities ? by_end(g, first_act, rp->n_activities) : NULL;

		if (rp->n_activities && !ends)
			return error("out of memory");
		for (size_t i = 0; i < rp->n_activities; i++) {
			const struct graph_node *n = &g->nodes[first_act + (int32_t)i];
			const struct replay_activity *a = &rp->activities[i];
			uint64_t explained = 0;
			int scanned = 0;

			for (uint32_t k = 0; k < n->n_in; k++) {
				const struct graph_edge *e = &g->edges[g->in_edges[n->in + k]];
				int64_t d = e->delay < g->typical[e->kind] ? e->delay : g->typical[e->kind];
				uint64_t t = graph_add(edge_source(g, e), d);

				if (!e->to_end && t > explained)
					explained = t;
			}
			if (n->start < explained + 2000 + 2 * (uint64_t)g->typical[GE_STREAM])
				continue;
			for (ptrdiff_t k = last_end_at(g, ends, rp->n_activities, n->start);
			     k >= 0 && scanned < SCAN_BACK; k--, scanned++) {
				const struct graph_node *w = &g->nodes[ends[k]];
				const struct replay_activity *wa = &rp->activities[w->index];

				if (w->end + GRAPH_WAIT_WINDOW < n->start || w->end <= explained)
					break;
				if (wa->stream == a->stream || wa->device != a->device || (int32_t)ends[k] == first_act + (int32_t)i)
					continue;
				if (add_edge(b, (int32_t)ends[k], first_act + (int32_t)i, GE_WAIT, false,
					     (int64_t)(n->start - w->end)) < 0) {
					free(ends);
					return -1;
				}
				break;
			}
		}
		free(ends);
	}
	return g->n_edges == n_before ? 0 : group_in_edges(g);
}

/* The measured delays on the deciding edges, the typical ones (or less) elsewhere. */
static void settle_delays(struct graph *g)
{
	for (size_t i = 0; i < g->n_nodes; i++) {
		const struct graph_node *n = &g->nodes[i];

		for (uint32_t k = 0; k < n->n_in; k++) {
			uint32_t ei = g->in_edges[n->in + k];
			struct graph_edge *e = &g->edges[ei];

			if (e->to_end || (int32_t)ei == n->bind)
				continue;
			/* never later than the recorded start: the recorded run replays exactly */
			if (e->delay > g->typical[e->kind])
				e->delay = g->typical[e->kind];
		}
	}
}

/*
 * Kahn's order over the 2n events; edges in cycles (equal times of hostile
 * input) are cut. The events ready are taken last in, first out: an event's
 * successors, mostly its own rank's next, come right after it, so that
 * re-timing walks one rank's nodes at a time (a queue took them in turns
 * over every rank, from every part of a graph of 1,024 ranks: a cache miss
 * each). Any order of the ready events is a topological one, and the
 * re-timing is the same in all.
 */
static int order_events(struct graph *g)
{
	size_t n_ev = 2 * g->n_nodes, tail = 0, sp = 0;
	uint32_t *deg = calloc(n_ev + 1, sizeof(uint32_t));
	uint32_t *out_start = calloc(n_ev + 2, sizeof(uint32_t));
	uint32_t *out = malloc((g->n_edges + 1) * sizeof(uint32_t));
	uint32_t *fill = calloc(n_ev + 1, sizeof(uint32_t));
	uint32_t *stack = malloc((n_ev + 1) * sizeof(uint32_t));
	int ret = -1;

	g->order = malloc((n_ev + 1) * sizeof(uint32_t));
	if (!deg || !out_start || !out || !fill || !stack || !g->order) {
		error("out of memory");
		goto done;
	}
	/* event of an edge's source and target */
#define SRC_EV(e) (2 * (size_t)(e)->from + ((e)->kind == GE_LAUNCH || (e)->kind == GE_COLL ? 0 : 1))
#define DST_EV(e) (2 * (size_t)(e)->to + ((e)->to_end ? 1 : 0))
	for (size_t e = 0; e < g->n_edges; e++) {
		out_start[SRC_EV(&g->edges[e]) + 1]++;
		deg[DST_EV(&g->edges[e])]++;
	}
	for (size_t v = 0; v < n_ev; v++)
		out_start[v + 1] += out_start[v];
	for (size_t e = 0; e < g->n_edges; e++) {
		size_t s = SRC_EV(&g->edges[e]);

		out[out_start[s] + fill[s]++] = (uint32_t)e;
	}
	for (size_t i = 0; i < g->n_nodes; i++)
		deg[2 * i + 1]++;   /* a node's end follows its start */
	for (size_t v = n_ev; v-- > 0;)   /* the first ready on top */
		if (deg[v] == 0)
			stack[sp++] = (uint32_t)v;
	while (sp) {
		uint32_t v = stack[--sp];

		g->order[tail++] = v;
		for (uint32_t k = out_start[v + 1]; k-- > out_start[v];)
			if (--deg[DST_EV(&g->edges[out[k]])] == 0)
				stack[sp++] = (uint32_t)DST_EV(&g->edges[out[k]]);
		if (!(v & 1) && --deg[v + 1] == 0)
			stack[sp++] = v + 1;   /* its own end next */
	}
	if (tail < n_ev) {
		/*
		 * Cycles: only events of equal times can form them (every edge
		 * runs forward in recorded time), so hostile input alone. The
		 * events left follow in recorded time, their edges in the
		 * cycles not honoured (g->cut says how many events).
		 */
		size_t at = tail;
		uint64_t *keys = malloc(2 * (n_ev - tail) * sizeof(*keys));

		if (!keys) {
			error("out of memory");
			goto done;
		}
		for (size_t v = 0, k = 0; v < n_ev; v++)
			if (deg[v] != 0) {
				const struct graph_node *n = &g->nodes[v / 2];

				keys[2 * k] = (v & 1 ? n->end : n->start);
				keys[2 * k + 1] = v;
				k++;
			}
		qsort(keys, n_ev - tail, 2 * sizeof(*keys), cmp_u64_idx);
		for (size_t k = 0; k < n_ev - at; k++)
			g->order[tail++] = (uint32_t)keys[2 * k + 1];
		g->cut = n_ev - at;
		free(keys);
	}
#undef SRC_EV
#undef DST_EV
	ret = 0;
done:
	free(deg);
	free(out_start);
	free(out);
	free(fill);
	free(stack);
	return ret;
}

/*
 * What a node costs besides its edges, in bytes: itself, its place in the
 * node maps and in the order of events, and what one re-timing
 * (graph_retime) and the critical path take per node.
 */
#define NODE_BYTES (sizeof(struct graph_node) + sizeof(int32_t) + 2 * sizeof(uint32_t) + 8 * sizeof(uint32_t) + \
		    sizeof(int64_t) + GRAPH_RETIME_NODE_BYTES)

int graph_build(struct graph *g, const struct replay *const *rp, size_t n, const int64_t *offset)
{
	struct build b = { .g = g };
	size_t total = 0;
	int64_t zero[GE_KIND_COUNT] = { 0 };

	memset(g, 0, sizeof(*g));
	g->rp = rp;
	g->n_ranks = n;
	g->offset = offset;
	for (size_t r = 0; r < n; r++)
		total += rp[r]->n_apis + rp[r]->n_activities;
	if (claim(g, (total + 1) * NODE_BYTES) < 0) {
		memset(g, 0, sizeof(*g));
		return -1;
	}
	g->nodes = malloc((total + 1) * sizeof(*g->nodes));
	g->api_node = calloc(n + 1, sizeof(*g->api_node));
	g->act_node = calloc(n + 1, sizeof(*g->act_node));
	if (!g->nodes || !g->api_node || !g->act_node) {
		graph_release(g);
		return error("out of memory");
	}
	for (uint32_t r = 0; r < n; r++)
		if (build_rank(&b, r) < 0)
			goto fail;
	if (n > 1 && build_collectives(&b) < 0)
		goto fail;
	if (group_in_edges(g) < 0)
		goto fail;
	bind_starts(g, zero);
	if (typical_delays(g) < 0 || infer_waits(&b) < 0)
		goto fail;
	bind_starts(g, g->typical);
	if (typical_delays(g) < 0)
		goto fail;
	bind_starts(g, g->typical);
	settle_delays(g);
	if (order_events(g) < 0)
		goto fail;
	return 0;
fail:
	graph_release(g);
	return -1;
}

const struct replay_thread *graph_thread(const struct replay *rp, uint64_t thread)
{
	size_t lo = 0, hi = rp->n_threads;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (rp->threads[mid].thread < thread)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rp->n_threads && rp->threads[lo].thread == thread ? &rp->threads[lo] : NULL;
}

int graph_activity_phase(const struct replay *rp, const uint8_t *path_phase, const struct replay_activity *a)
{
	const struct replay_op *op;

	if (a->range >= 0 && (size_t)a->range < rp->n_ranges)
		return path_phase[rp->ranges[a->range].path];
	op = replay_op(rp, a->op);
	return op ? st_phase_of_path(replay_str(rp, op->phase)) : ST_PHASE_OTHER;
}

void graph_release(struct graph *g)
{
	for (size_t r = 0; r < g->n_ranks; r++) {
		if (g->api_node)
			free(g->api_node[r]);
		if (g->act_node)
			free(g->act_node[r]);
	}
	free(g->api_node);
	free(g->act_node);
	free(g->nodes);
	free(g->edges);
	free(g->in_edges);
	free(g->order);
	memory_budget_release(g->memory);
	memset(g, 0, sizeof(*g));
}
