/*
 * unrecorded.c: see unrecorded.h. Pieces of host work are cut at every
 * step start and end of their replay, so each lies in one step (or none);
 * a thread with no recorder time keeps all its work as it is.
 */
#include "graph/unrecorded.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/stats.h"

struct hs_thread {
	uint64_t thread;
	double *work, *cost;           /* [s + 1]: ns of host work, of the recorder's time in step s (-1: none) */
	double *k;                     /* [s + 1]: what its host work in step s shrinks by */
};

struct hs_rank {
	const struct replay *rp;
	int64_t offset;                /* run time = replay time + offset */
	uint64_t *bounds;              /* every step start and end, sorted */
	size_t n_bounds;
	struct hs_thread *threads;     /* the threads the recorder spent time on, by id */
	size_t n_threads;
};

struct graph_host_scale {
	struct hs_rank *rank;
	size_t n_ranks;
};

static struct hs_thread *find_thread(const struct hs_rank *R, uint64_t thread)
{
	size_t lo = 0, hi = R->n_threads;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (R->threads[mid].thread < thread)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < R->n_threads && R->threads[lo].thread == thread ? &R->threads[lo] : NULL;
}

/*
 * The pieces of [a, b) (replay times) between step boundaries: each one's
 * length added to T->work of its step when `add`, and the sum of their
 * lengths times their steps' factors returned.
 */
static double pieces(const struct hs_rank *R, struct hs_thread *T, uint64_t a, uint64_t b, bool add)
{
	size_t lo = 0, hi = R->n_bounds;
	double sum = 0;

	while (lo < hi) {   /* the first boundary after a */
		size_t mid = (lo + hi) / 2;

		if (R->bounds[mid] <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	while (a < b) {
		uint64_t c = lo < R->n_bounds && R->bounds[lo] < b ? R->bounds[lo] : b;
		int32_t s = replay_step_at(R->rp, a + (c - a) / 2);

		if (add)
			T->work[s + 1] += (double)(c - a);
		else
			sum += T->k[s + 1] * (double)(c - a);
		a = c;
		lo++;
	}
	return sum;
}

/* The recorder's threads of one replay, its step boundaries and its costs by thread and step. */
static int rank_init(struct hs_rank *R, const struct replay *rp, int64_t offset, double extra_per_launch,
		     uint64_t *recorded)
{
	size_t n = rp->n_steps + 1;
	uint64_t *ids = malloc((rp->n_costs + 1) * sizeof(*ids));

	R->rp = rp;
	R->offset = offset;
	R->bounds = malloc((2 * rp->n_steps + 1) * sizeof(*R->bounds));
	if (!ids || !R->bounds) {
		free(ids);
		return error("out of memory");
	}
	for (size_t i = 0; i < rp->n_steps; i++) {
		R->bounds[2 * i] = rp->steps[i].start;
		R->bounds[2 * i + 1] = rp->steps[i].end;
	}
	qsort(R->bounds, 2 * rp->n_steps, sizeof(*R->bounds), stats_cmp_u64);
	R->n_bounds = 2 * rp->n_steps;
	for (size_t i = 0; i < rp->n_costs; i++)
		ids[i] = rp->costs[i].thread;
	qsort(ids, rp->n_costs, sizeof(*ids), stats_cmp_u64);
	R->threads = calloc(rp->n_costs + 1, sizeof(*R->threads));
	if (!R->threads) {
		free(ids);
		return error("out of memory");
	}
	for (size_t i = 0; i < rp->n_costs; i++) {
		struct hs_thread *T;

		if (i && ids[i] == ids[i - 1])
			continue;
		T = &R->threads[R->n_threads++];
		T->thread = ids[i];
		T->work = calloc(n, sizeof(double));
		T->cost = calloc(n, sizeof(double));
		T->k = calloc(n, sizeof(double));
		if (!T->work || !T->cost || !T->k) {
			free(ids);
			return error("out of memory");
		}
	}
	free(ids);
	for (size_t i = 0; i < rp->n_costs; i++) {
		const struct replay_cost *c = &rp->costs[i];
		double own = (double)replay_cost_ns(c), span = c->end > c->start ? (double)(c->end - c->start) : 0;
		double extra = extra_per_launch * (double)c->launches;

		if (extra > span - own)   /* a hostile count stays bounded */
			extra = span > own ? span - own : 0;
		find_thread(R, c->thread)->cost[c->step + 1] += own + extra;
		*recorded += (uint64_t)(own + extra);
	}
	return 0;
}

/*
 * The host work at a step's edges that no thread edge holds, on its own
 * thread: from its start to the thread's first call when it has none
 * before, from its last call to its end when it has none after (what
 * graph_instant measures the step's ends from).
 */
static void step_edges(struct hs_rank *R, const struct replay_step *st)
{
	const struct replay *rp = R->rp;
	const struct replay_thread *th = graph_thread(rp, st->thread);
	struct hs_thread *T = find_thread(R, st->thread);
	size_t lo = 0, hi;

	if (!T || !th || !th->n_apis)
		return;
	if (rp->apis[th->apis[0]].start > st->start)
		pieces(R, T, st->start, rp->apis[th->apis[0]].start, true);
	hi = th->n_apis;
	while (lo < hi) {   /* the first call starting after the step's end */
		size_t mid = (lo + hi) / 2;

		if (rp->apis[th->apis[mid]].start <= st->end)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < th->n_apis || lo == 0)
		return;
	for (size_t k = lo, looked = 0; k-- > 0 && looked < 64; looked++)
		if (rp->apis[th->apis[k]].end > st->end)
			return;   /* the step ends inside a call */
	pieces(R, T, rp->apis[th->apis[lo - 1]].end, st->end, true);
}

/* The host work a thread edge holds: [its source's end, + its delay), replay times. */
static bool edge_work(const struct graph *g, const struct graph_host_scale *hs, const struct graph_edge *e,
		      struct hs_rank **R, struct hs_thread **T, uint64_t *a)
{
	const struct graph_node *to = &g->nodes[e->to];

	if (e->kind != GE_THREAD || e->delay <= 0 || to->kind != GN_API)
		return false;
	*R = &hs->rank[to->rank];
	if (!(*R)->n_threads)
		return false;
	*T = find_thread(*R, (*R)->rp->apis[to->index].thread);
	*a = g->nodes[e->from].end - (uint64_t)(*R)->offset;
	return *T != NULL;
}

int graph_unrecorded_build(const struct graph *g, struct graph_host_scale **out, int64_t *delay,
			   uint64_t *recorded, uint64_t *taken)
{
	struct graph_host_scale *hs = calloc(1, sizeof(*hs));
	bool any = false;

	*out = NULL;
	*recorded = *taken = 0;
	for (size_t i = 0; i < g->n_edges; i++)
		delay[i] = g->edges[i].delay;
	if (!hs || !(hs->rank = calloc(g->n_ranks + 1, sizeof(*hs->rank)))) {
		free(hs);
		return error("out of memory");
	}
	hs->n_ranks = g->n_ranks;
	for (uint32_t r = 0; r < g->n_ranks; r++) {
		if (!g->rp[r]->n_costs)
			continue;
		any = true;
		if (rank_init(&hs->rank[r], g->rp[r], g->offset ? g->offset[r] : 0, g->unrecorded_launch_ns, recorded) < 0) {
			graph_host_scale_free(hs);
			return -1;
		}
	}
	if (!any) {
		graph_host_scale_free(hs);
		return 0;
	}
	for (size_t i = 0; i < g->n_edges; i++) {
		struct hs_rank *R;
		struct hs_thread *T;
		uint64_t a;

		if (edge_work(g, hs, &g->edges[i], &R, &T, &a))
			pieces(R, T, a, a + (uint64_t)g->edges[i].delay, true);
	}
	for (size_t r = 0; r < hs->n_ranks; r++) {
		struct hs_rank *R = &hs->rank[r];

		for (size_t s = 0; R->n_threads && s < R->rp->n_steps; s++)
			step_edges(R, &R->rp->steps[s]);
		for (size_t t = 0; t < R->n_threads; t++)
			for (size_t s = 0; s <= R->rp->n_steps; s++) {
				struct hs_thread *T = &R->threads[t];
				double G = T->work[s], C = T->cost[s];

				T->k[s] = G <= 0 ? 1 : G > C ? (G - C) / G : 0;
				*taken += (uint64_t)(G < C ? G : C);
			}
	}
	for (size_t i = 0; i < g->n_edges; i++) {
		struct hs_rank *R;
		struct hs_thread *T;
		uint64_t a;

		if (edge_work(g, hs, &g->edges[i], &R, &T, &a))
			delay[i] = (int64_t)llround(pieces(R, T, a, a + (uint64_t)g->edges[i].delay, false));
	}
	*out = hs;
	return 0;
}

double graph_host_span(const struct graph_host_scale *hs, const struct graph *g, uint32_t rank, uint64_t thread,
		       uint64_t a, uint64_t b)
{
	const struct hs_rank *R = hs && rank < hs->n_ranks ? &hs->rank[rank] : NULL;
	struct hs_thread *T = R && R->n_threads ? find_thread(R, thread) : NULL;

	if (b <= a)
		return 0;
	if (!T)
		return (double)(b - a);
	return pieces(R, T, a - (uint64_t)R->offset, b - (uint64_t)R->offset, false);
}

void graph_host_scale_free(struct graph_host_scale *hs)
{
	if (!hs)
		return;
	for (size_t r = 0; hs->rank && r < hs->n_ranks; r++) {
		struct hs_rank *R = &hs->rank[r];

		for (size_t t = 0; t < R->n_threads; t++) {
			free(R->threads[t].work);
			free(R->threads[t].cost);
			free(R->threads[t].k);
		}
		free(R->threads);
		free(R->bounds);
	}
	free(hs->rank);
	free(hs);
}
