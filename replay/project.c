/*
 * project.c: the NVTX range tree per thread, the range paths, the launch
 * links (correlation ids), the steps of a launch period (period.c), the
 * projection of GPU work onto ranges and steps, and the per-stream and
 * per-thread orderings. The rules are in replay.h. One file of over 1,000
 * lines: these are the passes of one pipeline (replay_project, at the end),
 * run in an order that matters and handing each other the arrays they
 * build; what stands alone is apart (period.c, sort.c).
 *
 * Everything here is a sort (radix, O(n)) plus linear sweeps; attributing an
 * activity to its ranges costs its range depth.
 */
#include "replay/internal.h"

#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "replay/period.h"

static int32_t thread_index(const struct replay *rp, uint64_t thread)
{
	size_t lo = 0, hi = rp->n_threads;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rp->threads[mid].thread < thread)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rp->n_threads && rp->threads[lo].thread == thread ? (int32_t)lo : -1;
}

/* Distinct threads of API calls and ranges, each with its calls and ranges in order. */
static int build_threads(struct replay *rp)
{
	size_t n = rp->n_apis + rp->n_ranges, nt = 0;
	uint64_t *ids = malloc((n + 1) * sizeof(*ids));
	uint32_t *api_t = malloc((rp->n_apis + 1) * sizeof(*api_t));
	uint32_t *range_t = malloc((rp->n_ranges + 1) * sizeof(*range_t));
	struct replay_key *keys = malloc((n + 1) * sizeof(*keys));
	struct replay_key *tmp = malloc((n + 1) * sizeof(*tmp));
	int rc = -1;

	if (!ids || !api_t || !range_t || !keys || !tmp)
		goto out;
	for (size_t i = 0; i < rp->n_apis; i++)
		keys[i].key = rp->apis[i].thread, keys[i].idx = 0;
	for (size_t i = 0; i < rp->n_ranges; i++)
		keys[rp->n_apis + i].key = rp->ranges[i].thread, keys[rp->n_apis + i].idx = 0;
	replay_sort_keys(keys, tmp, n);
	for (size_t i = 0; i < n; i++)
		if (nt == 0 || ids[nt - 1] != keys[i].key)
			ids[nt++] = keys[i].key;
	rp->threads = calloc(nt + 1, sizeof(*rp->threads));
	if (!rp->threads)
		goto out;
	rp->n_threads = nt;
	for (size_t i = 0; i < nt; i++)
		rp->threads[i].thread = ids[i];
	for (size_t i = 0; i < rp->n_apis; i++) {
		api_t[i] = (uint32_t)thread_index(rp, rp->apis[i].thread);
		rp->threads[api_t[i]].n_apis++;
	}
	for (size_t i = 0; i < rp->n_ranges; i++) {
		range_t[i] = (uint32_t)thread_index(rp, rp->ranges[i].thread);
		rp->threads[range_t[i]].n_ranges++;
	}
	for (size_t i = 0; i < nt; i++) {
		struct replay_thread *t = &rp->threads[i];
		t->apis = malloc((t->n_apis + 1) * sizeof(*t->apis));
		t->ranges = malloc((t->n_ranges + 1) * sizeof(*t->ranges));
		if (!t->apis || !t->ranges)
			goto out;
		t->n_apis = t->n_ranges = 0;
	}
	for (size_t i = 0; i < rp->n_apis; i++) {
		struct replay_thread *t = &rp->threads[api_t[i]];
		t->apis[t->n_apis++] = (uint32_t)i;
	}
	for (size_t i = 0; i < rp->n_ranges; i++) {
		struct replay_thread *t = &rp->threads[range_t[i]];
		t->ranges[t->n_ranges++] = (uint32_t)i;
	}
	rc = 0;
out:
	free(ids);
	free(api_t);
	free(range_t);
	free(keys);
	free(tmp);
	return rc;
}

/* Parents: the nearest earlier range on the thread, recorded depth smaller, not yet ended. */
static int build_tree(struct replay *rp)
{
	int32_t *stack = malloc((rp->n_ranges + 1) * sizeof(*stack));

	if (!stack)
		return -1;
	for (size_t ti = 0; ti < rp->n_threads; ti++) {
		const struct replay_thread *t = &rp->threads[ti];
		size_t sp = 0;

		for (size_t k = 0; k < t->n_ranges; k++) {
			int32_t ri = (int32_t)t->ranges[k];
			struct replay_range *r = &rp->ranges[ri];

			while (sp > 0) {
				const struct replay_range *top = &rp->ranges[stack[sp - 1]];
				if (top->recorded_depth < r->recorded_depth && top->end >= r->start)
					break;
				sp--;
			}
			r->parent = sp ? stack[sp - 1] : -1;
			r->depth = sp ? rp->ranges[r->parent].depth + 1 : 0;
			stack[sp++] = ri;
		}
	}
	free(stack);
	return 0;
}

/*
 * Distinct paths, interned by (parent path, name): a node each, no string
 * (replay_path_str builds one when asked); parents precede children in
 * range order, so a path's parent has a smaller index. -1 after an error line.
 */
static int build_paths(struct replay *rp)
{
	size_t cap = 16, cap_paths = 0;
	int32_t *table;
	int rc = -1;

	while (cap < 2 * rp->n_ranges)
		cap *= 2;
	table = malloc(cap * sizeof(*table));
	if (!table)
		return error("out of memory while rebuilding the timeline");
	memset(table, 0xff, cap * sizeof(*table));
	for (size_t i = 0; i < rp->n_ranges; i++) {
		struct replay_range *r = &rp->ranges[i];
		int32_t ppath = r->parent >= 0 ? (int32_t)rp->ranges[r->parent].path : -1;
		uint64_t h = ((uint64_t)(uint32_t)ppath << 32 | r->name) * 0x9e3779b97f4a7c15ull;
		size_t slot = (size_t)(h >> 20) & (cap - 1);

		for (;;) {
			int32_t p = table[slot];
			if (p < 0)
				break;
			if (rp->paths[p].parent == ppath && rp->paths[p].name == r->name)
				break;
			slot = (slot + 1) & (cap - 1);
		}
		if (table[slot] < 0) {
			struct replay_path *p;

			if (ALLOC_GROW(rp->paths, rp->n_paths + 1, cap_paths) < 0)
				goto out;
			p = &rp->paths[rp->n_paths];
			p->name = r->name;
			p->parent = ppath;
			p->depth = ppath >= 0 ? rp->paths[ppath].depth + 1 : 0;
			table[slot] = (int32_t)rp->n_paths++;
		}
		r->path = (uint32_t)table[slot];
	}
	rc = 0;
out:
	free(table);
	return rc;
}

/*
 * Jump pointers (Myers' skew-binary ones): a range's jump is its parent, or
 * its parent's jump's jump when the parent's two jumps span equal depths;
 * so a jump's depth depends only on the range's, and a search up the tree
 * for a depth, or for the first range passing a test that holds from some
 * ancestor up, takes O(log depth) steps. Parents come before children.
 */
static int build_jumps(struct replay *rp)
{
	struct replay_priv *pv = rp->priv;

	pv->jump = malloc((rp->n_ranges + 1) * sizeof(*pv->jump));
	pv->jump_end = malloc((rp->n_ranges + 1) * sizeof(*pv->jump_end));
	if (!pv->jump || !pv->jump_end)
		return -1;
	for (size_t i = 0; i < rp->n_ranges; i++) {
		const struct replay_range *r = &rp->ranges[i];
		int32_t p = r->parent, j = p >= 0 ? pv->jump[p] : -1;
		int64_t dp = p >= 0 ? (int64_t)rp->ranges[p].depth : -1;
		int64_t dj = j >= 0 ? (int64_t)rp->ranges[j].depth : -1;
		int64_t djj = j >= 0 && pv->jump[j] >= 0 ? (int64_t)rp->ranges[pv->jump[j]].depth : -1;

		if (j >= 0 && dp - dj == dj - djj) {
			uint64_t e = pv->jump_end[p] > pv->jump_end[j] ? pv->jump_end[p] : pv->jump_end[j];
			pv->jump[i] = pv->jump[j];
			pv->jump_end[i] = r->end > e ? r->end : e;
		} else {
			pv->jump[i] = p;
			pv->jump_end[i] = r->end;
		}
	}
	return 0;
}

static int64_t depth_of(const struct replay *rp, int32_t r)
{
	return r >= 0 ? (int64_t)rp->ranges[r].depth : -1;
}

/* The innermost range, from `last` up, whose span reaches `end`: the first that ends at or after it. */
static int32_t covering(const struct replay *rp, int32_t last, uint64_t end)
{
	const struct replay_priv *pv = rp->priv;

	while (last >= 0 && rp->ranges[last].end < end)
		last = pv->jump_end[last] < end ? pv->jump[last] : rp->ranges[last].parent;
	return last;
}

/* The ancestor of r (r included) at depth d. */
static int32_t ancestor_at(const struct replay *rp, const int32_t *jump, int32_t r, int64_t d)
{
	while (r >= 0 && depth_of(rp, r) > d)
		r = depth_of(rp, jump[r]) >= d ? jump[r] : rp->ranges[r].parent;
	return r;
}

/* The lowest common ancestor of two ranges, -1 when they have none (other trees, other threads). */
static int32_t common_ancestor(const struct replay *rp, const int32_t *jump, int32_t u, int32_t v)
{
	if (u < 0 || v < 0)
		return -1;
	u = ancestor_at(rp, jump, u, depth_of(rp, v));
	v = ancestor_at(rp, jump, v, depth_of(rp, u));
	while (u != v) {
		if (jump[u] != jump[v])
			u = jump[u], v = jump[v];
		else
			u = rp->ranges[u].parent, v = rp->ranges[v].parent;
	}
	return u;
}

/* Each API call's innermost covering range: one forward pass per thread. */
static void project_apis(struct replay *rp)
{
	for (size_t ti = 0; ti < rp->n_threads; ti++) {
		const struct replay_thread *t = &rp->threads[ti];
		size_t k = 0;

		for (size_t j = 0; j < t->n_apis; j++) {
			struct replay_api *c = &rp->apis[t->apis[j]];
			while (k < t->n_ranges && rp->ranges[t->ranges[k]].start <= c->start)
				k++;
			c->range = covering(rp, k ? (int32_t)t->ranges[k - 1] : -1, c->end);
		}
	}
}

/* activity.api through correlation ids: both sides sorted, then merged. */
static int link_launches(struct replay *rp)
{
	size_t na = 0, nk = 0, n = rp->n_apis > rp->n_activities ? rp->n_apis : rp->n_activities;
	struct replay_key *ak = malloc((rp->n_apis + 1) * sizeof(*ak));
	struct replay_key *kk = malloc((rp->n_activities + 1) * sizeof(*kk));
	struct replay_key *tmp = malloc((n + 1) * sizeof(*tmp));
	int rc = -1;

	if (!ak || !kk || !tmp)
		goto out;
	for (size_t i = 0; i < rp->n_apis; i++)
		if (rp->apis[i].correlation)
			ak[na].key = rp->apis[i].correlation, ak[na++].idx = (uint32_t)i;
	for (size_t i = 0; i < rp->n_activities; i++)
		if (rp->activities[i].correlation)
			kk[nk].key = rp->activities[i].correlation, kk[nk++].idx = (uint32_t)i;
	replay_sort_keys(ak, tmp, na);
	replay_sort_keys(kk, tmp, nk);
	for (size_t i = 0, j = 0; i < nk; i++) {
		while (j < na && ak[j].key < kk[i].key)
			j++;
		if (j == na)
			break;
		if (ak[j].key == kk[i].key) {
			/* a duplicate id keeps the earliest call (keys are stable by start) */
			struct replay_activity *a = &rp->activities[kk[i].idx];
			struct replay_api *c = &rp->apis[ak[j].idx];
			a->api = (int32_t)ak[j].idx;
			if (c->activity < 0 || (uint32_t)c->activity > kk[i].idx)
				c->activity = (int32_t)kk[i].idx;
		}
	}
	rc = 0;
out:
	free(ak);
	free(kk);
	free(tmp);
	return rc;
}

/* One interval of a union being summed in start order. */
struct span_sum {
	uint64_t cur_start, cur_end;
};

static void span_add(struct span_sum *s, uint64_t *busy, uint64_t *gstart, uint64_t *gend,
		     uint32_t seen, uint64_t start, uint64_t end)
{
	if (seen == 0) {
		s->cur_start = start;
		s->cur_end = end;
		*gstart = start;
		*gend = end;
		return;
	}
	if (start > s->cur_end) {
		*busy += s->cur_end - s->cur_start;
		s->cur_start = start;
		s->cur_end = end;
	} else if (end > s->cur_end) {
		s->cur_end = end;
	}
	if (end > *gend)
		*gend = end;
}

/* Ranges' GPU span, busy time and counts, walking each activity's chain of ranges. */
static int ranges_by_walk(struct replay *rp)
{
	struct span_sum *rs = calloc(rp->n_ranges + 1, sizeof(*rs));

	if (!rs)
		return -1;
	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];

		for (int32_t r = a->range; r >= 0; r = rp->ranges[r].parent) {
			struct replay_range *g = &rp->ranges[r];
			span_add(&rs[r], &g->gpu_busy, &g->gpu_start, &g->gpu_end, g->activities,
				 a->start, a->end);
			g->activities++;
			g->kernels += a->kind == ST_KERNEL;
		}
	}
	for (size_t r = 0; r < rp->n_ranges; r++)
		if (rp->ranges[r].activities)
			rp->ranges[r].gpu_busy += rs[r].cur_end - rs[r].cur_start;
	free(rs);
	return 0;
}

/* A Fenwick tree of counts over positions 1..n. */
struct fenwick {
	uint32_t *t;
	size_t n, top;          /* top: the highest power of two <= n */
	uint32_t total;
};

static void fenwick_add(struct fenwick *f, size_t i, int d)
{
	f->total += (uint32_t)d;
	for (; i <= f->n; i += i & -i)
		f->t[i] += (uint32_t)d;
}

static uint32_t fenwick_prefix(const struct fenwick *f, size_t i)
{
	uint32_t s = 0;

	for (; i > 0; i -= i & -i)
		s += f->t[i];
	return s;
}

/* The position of the k-th counted one (k >= 1). */
static size_t fenwick_kth(const struct fenwick *f, uint32_t k)
{
	size_t i = 0;

	for (size_t step = f->top; step; step >>= 1)
		if (i + step <= f->n && f->t[i + step] < k) {
			i += step;
			k -= f->t[i];
		}
	return i + 1;
}

/* The sweep's state: weights and their integrals per range, the running ranges in preorder. */
struct sweep {
	struct replay *rp;
	const int32_t *jump;
	uint32_t *pos, *at;     /* range -> preorder position (1-based), and back */
	uint32_t *running;      /* per range: running activities whose innermost range it is */
	int64_t *weight;
	uint64_t *since, *busy; /* when the weight last changed; its integral (mod 2^64) */
	struct fenwick set;     /* positions of ranges with running activities */
};

static void weigh(struct sweep *s, int32_t r, int d, uint64_t t)
{
	if (r < 0)
		return;
	s->busy[r] += (uint64_t)s->weight[r] * (t - s->since[r]);
	s->since[r] = t;
	s->weight[r] += d;
}

/* Range r's running count goes from 0 to 1 (d = 1) or from 1 to 0 (d = -1) at t. */
static void sweep_toggle(struct sweep *s, int32_t r, int d, uint64_t t)
{
	size_t x = s->pos[r];
	uint32_t before;
	int32_t p = -1, n = -1;

	if (d < 0)
		fenwick_add(&s->set, x, -1);
	before = fenwick_prefix(&s->set, x - 1);
	if (before)
		p = (int32_t)s->at[fenwick_kth(&s->set, before)];
	if (before < s->set.total)
		n = (int32_t)s->at[fenwick_kth(&s->set, before + 1)];
	if (d > 0)
		fenwick_add(&s->set, x, 1);
	weigh(s, r, d, t);
	if (p >= 0)
		weigh(s, common_ancestor(s->rp, s->jump, p, r), -d, t);
	if (n >= 0)
		weigh(s, common_ancestor(s->rp, s->jump, r, n), -d, t);
	if (p >= 0 && n >= 0)
		weigh(s, common_ancestor(s->rp, s->jump, p, n), d, t);
}

/*
 * Ranges' GPU span, busy time and counts by a sweep over time. A range's
 * busy time is the measure of the union of its subtree's activities. At any
 * instant, with the innermost ranges of the running activities in preorder
 * (v1 < ... < vk, each once), a subtree holds a running activity exactly
 * when the sum over it of +1 per vi and -1 per common ancestor of vi and
 * vi+1 is 1 (a subtree's vi are a run in preorder, and the common ancestors
 * of consecutive ones in it are in it too). So each range keeps its own term
 * of that sum (a weight) and the weight's integral over time, and a range's
 * busy time is the integrals summed over its subtree. Starting or ending an
 * activity changes the weights of at most four ranges: its range and the
 * common ancestors with its neighbours in preorder (a Fenwick tree over
 * positions finds them, the jump pointers their ancestors). Spans and counts
 * are sums over subtrees too.
 */
static int ranges_by_sweep(struct replay *rp)
{
	struct replay_priv *pv = rp->priv;
	size_t nr = rp->n_ranges, na = rp->n_activities, ne = 0, p = 0;
	struct sweep s = { .rp = rp, .jump = pv->jump };
	struct replay_key *ends = malloc((na + 1) * sizeof(*ends));
	struct replay_key *tmp = malloc((na + 1) * sizeof(*tmp));
	int rc = -1;

	s.pos = malloc((nr + 1) * sizeof(*s.pos));
	s.at = malloc((nr + 1) * sizeof(*s.at));
	s.running = calloc(nr + 1, sizeof(*s.running));
	s.weight = calloc(nr + 1, sizeof(*s.weight));
	s.since = calloc(nr + 1, sizeof(*s.since));
	s.busy = calloc(nr + 1, sizeof(*s.busy));
	s.set.t = calloc(nr + 1, sizeof(*s.set.t));
	s.set.n = nr;
	if (!ends || !tmp || !s.pos || !s.at || !s.running || !s.weight || !s.since || !s.busy || !s.set.t)
		goto out;
	for (s.set.top = 1; s.set.top * 2 <= nr; s.set.top *= 2)
		;
	/* each thread's ranges, in order, are a preorder of its trees */
	for (size_t ti = 0; ti < rp->n_threads; ti++)
		for (size_t k = 0; k < rp->threads[ti].n_ranges; k++) {
			s.pos[rp->threads[ti].ranges[k]] = (uint32_t)++p;
			s.at[p] = rp->threads[ti].ranges[k];
		}

	/* own counts and spans; ends in time order */
	for (size_t i = 0; i < na; i++) {
		const struct replay_activity *a = &rp->activities[i];
		struct replay_range *g;

		if (a->range < 0)
			continue;
		g = &rp->ranges[a->range];
		if (!g->activities++)
			g->gpu_start = a->start;
		if (a->end > g->gpu_end)
			g->gpu_end = a->end;
		g->kernels += a->kind == ST_KERNEL;
		ends[ne].key = a->end;
		ends[ne++].idx = (uint32_t)i;
	}
	replay_sort_keys(ends, tmp, ne);

	/* starts (activities are by start) before ends at the same instant */
	for (size_t i = 0, j = 0; j < ne;) {
		while (i < na && rp->activities[i].range < 0)
			i++;
		if (i < na && rp->activities[i].start <= ends[j].key) {
			int32_t r = rp->activities[i].range;
			if (s.running[r]++ == 0)
				sweep_toggle(&s, r, 1, rp->activities[i].start);
			i++;
		} else {
			int32_t r = rp->activities[ends[j].idx].range;
			if (--s.running[r] == 0)
				sweep_toggle(&s, r, -1, ends[j].key);
			j++;
		}
	}

	/* subtree sums: children come after their parents */
	for (size_t r = nr; r-- > 0;) {
		struct replay_range *g = &rp->ranges[r], *up;

		g->gpu_busy = s.busy[r];
		if (g->parent < 0 || !g->activities)
			continue;
		up = &rp->ranges[g->parent];
		if (!up->activities || g->gpu_start < up->gpu_start)
			up->gpu_start = g->gpu_start;
		if (g->gpu_end > up->gpu_end)
			up->gpu_end = g->gpu_end;
		up->activities += g->activities;
		up->kernels += g->kernels;
		s.busy[g->parent] += s.busy[r];
	}
	rc = 0;
out:
	free(ends);
	free(tmp);
	free(s.pos);
	free(s.at);
	free(s.running);
	free(s.weight);
	free(s.since);
	free(s.busy);
	free(s.set.t);
	return rc;
}

/* ---- graph launches ---------------------------------------------------- */

/* Range names of one op's path: "step/forward/layer.3/attn/softmax" as string ids. */
struct op_comps {
	uint32_t *id;
	uint32_t n;
	bool done;
};

/*
 * The replay's strings by text, for the ids of ops' path components: open
 * addressing over ids, the lowest id of a text only (the one a scan from id
 * 1 finds). Built once, when a graph's launch needs it: looking each
 * component up among every string made 100,000 ops of their own paths
 * cost 10 billion comparisons.
 */
struct str_index {
	uint32_t *slot;               /* id, 0 empty */
	size_t cap, n;
};

/* Where s[0..len) is in the index, or the empty slot it would take. */
static size_t str_index_find(const struct replay *rp, const struct str_index *x, const char *s, size_t len)
{
	size_t i = hash_fnv1a(HASH_FNV1A_INIT, s, len) & (x->cap - 1);

	for (; x->slot[i]; i = (i + 1) & (x->cap - 1)) {
		const char *t = rp->strings[x->slot[i]];
		if (!strncmp(t, s, len) && t[len] == '\0')
			break;
	}
	return i;
}

/* Adds id unless its text is there (ids added in order: the lowest stays), growing at half full. */
static int str_index_add(const struct replay *rp, struct str_index *x, uint32_t id)
{
	size_t i;

	if ((x->n + 1) * 2 > x->cap) {
		struct str_index y = { NULL, x->cap ? x->cap * 2 : 1024, 0 };
		if (!(y.slot = calloc(y.cap, sizeof(*y.slot))))
			return -1;
		for (size_t k = 0; k < x->cap; k++) {
			const char *t = x->slot[k] ? rp->strings[x->slot[k]] : NULL;
			if (t) {
				y.slot[str_index_find(rp, &y, t, strlen(t))] = x->slot[k];
				y.n++;
			}
		}
		free(x->slot);
		*x = y;
	}
	i = str_index_find(rp, x, rp->strings[id], strlen(rp->strings[id]));
	if (!x->slot[i]) {
		x->slot[i] = id;
		x->n++;
	}
	return 0;
}

/* The string id of s[0..len), added to the strings when new; 0 when out of memory. */
static uint32_t intern(struct replay *rp, struct str_index *x, const char *s, size_t len)
{
	struct replay_priv *pv = rp->priv;
	size_t i;
	char *copy;

	if (!x->cap) {   /* the first time: every string, and room to look in */
		if (!(x->slot = calloc(1024, sizeof(*x->slot))))
			return 0;
		x->cap = 1024;
		for (uint32_t id = 1; id < rp->n_strings; id++)
			if (str_index_add(rp, x, id) < 0)
				return 0;
	}
	i = str_index_find(rp, x, s, len);
	if (x->slot[i])
		return x->slot[i];
	if (ALLOC_GROW(rp->strings, rp->n_strings + 1, pv->cap_strings) < 0 ||
	    !(copy = replay_arena_strdup(rp, s, len)))
		return 0;
	rp->strings[rp->n_strings] = copy;
	if (str_index_add(rp, x, (uint32_t)rp->n_strings) < 0)
		return 0;
	return rp->n_strings++;
}

/* Splits the op's path into names once; -1 when out of memory. */
static int op_comps(struct replay *rp, const struct replay_op *op, struct op_comps *c, struct str_index *x)
{
	const char *path = replay_str(rp, op->path), *p = path;

	c->done = true;
	while (*p) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);

		if (len) {
			uint32_t id = intern(rp, x, p, len), *grown;
			if (!id || !(grown = realloc(c->id, (c->n + 1) * sizeof(*c->id))))
				return -1;
			c->id = grown;
			c->id[c->n++] = id;
		}
		p += len + (slash != NULL);
	}
	return 0;
}

static bool api_named(const struct replay *rp, size_t api, const char *what)
{
	return strstr(replay_str(rp, rp->apis[api].name), what) != NULL;
}

static bool graph_launch(const struct replay *rp, int32_t api)
{
	return api >= 0 && api_named(rp, (size_t)api, "GraphLaunch");
}

/* A cudaStreamBeginCapture or EndCapture call: its thread, index and time (its start, or its end). */
struct capture_call {
	uint64_t thread, t;
	size_t api;
	bool begin;
};

/* A thread's capture: from a Begin's start to the end of the thread's next End. */
struct capture {
	uint64_t thread, start, end;
	uint64_t latest_end;          /* the latest end of its thread's captures that start before or with it */
};

static int cmp_capture_call(const void *a, const void *b)
{
	const struct capture_call *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return (x->api > y->api) - (x->api < y->api);
}

static int cmp_capture(const void *a, const void *b)
{
	const struct capture *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return (x->start > y->start) - (x->start < y->start);
}

/* Range r lies within one of the captures (sorted, latest_end filled) of its thread. */
static bool in_capture(const struct capture *cap, size_t n, const struct replay_range *r)
{
	size_t lo = 0, hi = n;   /* the first capture after (r's thread, r's start) */

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (cap[mid].thread < r->thread || (cap[mid].thread == r->thread && cap[mid].start <= r->start))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && cap[lo - 1].thread == r->thread && cap[lo - 1].latest_end >= r->end;
}

/*
 * The ranges a thread pushed while it captured a stream into a graph
 * (between its cudaStreamBeginCapture and cudaStreamEndCapture): the
 * launches under them made no kernel, so they hold no GPU work, and the
 * graph's launch gets its own ranges (graph_ranges). Kept, they would count
 * each range of the capturing step twice. Removed here, before anything
 * refers to a range by its index. The calls are sorted by thread once and
 * each range looked up among its thread's captures: 100,000 captures are
 * not 100,000 passes over every call and range. -1 when out of memory.
 */
static int drop_capture_ranges(struct replay *rp)
{
	struct capture_call *call = malloc((rp->n_apis + 1) * sizeof(*call));
	struct capture *cap = malloc((rp->n_apis + 1) * sizeof(*cap));
	size_t n_calls = 0, n = 0, w = 0;
	uint64_t next_end = 0;
	bool has_end = false;

	if (!call || !cap) {
		free(call);
		free(cap);
		return -1;
	}
	for (size_t i = 0; i < rp->n_apis; i++) {
		const struct replay_api *c = &rp->apis[i];
		bool begin = api_named(rp, i, "StreamBeginCapture");

		if (begin || api_named(rp, i, "StreamEndCapture"))
			call[n_calls++] = (struct capture_call){ c->thread, begin ? c->start : c->end, i, begin };
	}
	qsort(call, n_calls, sizeof(*call), cmp_capture_call);   /* by thread, then as called */
	for (size_t i = n_calls; i-- > 0;) {   /* from each thread's last call back: its next End */
		if (i + 1 == n_calls || call[i + 1].thread != call[i].thread)
			has_end = false;
		if (!call[i].begin) {
			next_end = call[i].t;
			has_end = true;
		} else if (has_end) {
			cap[n++] = (struct capture){ call[i].thread, call[i].t, next_end, next_end };
		}
	}
	qsort(cap, n, sizeof(*cap), cmp_capture);
	for (size_t i = 1; i < n; i++)
		if (cap[i - 1].thread == cap[i].thread && cap[i - 1].latest_end > cap[i].latest_end)
			cap[i].latest_end = cap[i - 1].latest_end;
	for (size_t k = 0; k < rp->n_ranges; k++)
		if (!in_capture(cap, n, &rp->ranges[k]))
			rp->ranges[w++] = rp->ranges[k];
	rp->n_ranges = w;
	free(call);
	free(cap);
	return 0;
}

/*
 * A CUDA graph's kernels share one launching call (cudaGraphLaunch), which
 * no NVTX range of an op encloses: the host ran the ops' code when the
 * graph was captured, not when it is replayed. Their ranges are made here
 * from their ops' paths instead, as the host would have pushed them had it
 * launched each kernel in turn: on the launching thread, spanning the GPU
 * time of their activities (in start order, consecutive activities sharing
 * a path prefix share its ranges). *graph_range gets each such activity's
 * innermost range (old index), -1 elsewhere; NULL when there is none.
 * Bundles without NVTX ranges keep none (ops' paths stand in, filter.c).
 */
static int graph_ranges(struct replay *rp, int32_t **graph_range)
{
	struct op_comps *comps = NULL;
	struct { uint32_t name; int32_t range; } stack[RANGE_PATTERN_MAX * 4];
	struct str_index names = { NULL, 0, 0 };
	size_t depth = 0;
	int32_t call = -1, *out = NULL;
	int rc = -1;

	*graph_range = NULL;
	if (!rp->n_ranges)
		return 0;
	for (size_t i = 0; i < rp->n_activities; i++)
		if (rp->activities[i].op && graph_launch(rp, rp->activities[i].api)) {
			if (drop_capture_ranges(rp) < 0)
				return -1;
			break;
		}
	/* sorting may have left the array exactly n_ranges long (replay.c's permute) */
	((struct replay_priv *)rp->priv)->cap_ranges = rp->n_ranges;
	for (size_t i = 0; i < rp->n_activities; i++) {
		struct replay_activity *a = &rp->activities[i];
		const struct replay_op *op = replay_op(rp, a->op);
		struct op_comps *c;
		size_t k = 0;

		if (!op || !graph_launch(rp, a->api))
			continue;
		if (!out) {
			if (!(out = malloc(rp->n_activities * sizeof(*out))) ||
			    !(comps = calloc(rp->n_ops, sizeof(*comps))))
				goto out;
			for (size_t j = 0; j < rp->n_activities; j++)
				out[j] = -1;
		}
		c = &comps[op - rp->ops];
		if (!c->done && op_comps(rp, op, c, &names) < 0)
			goto out;
		if (!c->n || c->n > sizeof(stack) / sizeof(stack[0]))
			continue;
		if (a->api != call)
			depth = 0;     /* another launch: its own ranges */
		call = a->api;
		while (k < depth && k < c->n && stack[k].name == c->id[k])
			k++;
		for (depth = k; depth < c->n; depth++) {
			struct replay_range *r;

			if (ALLOC_GROW(rp->ranges, rp->n_ranges + 1, ((struct replay_priv *)rp->priv)->cap_ranges) < 0)
				goto out;
			r = &rp->ranges[rp->n_ranges];
			memset(r, 0, sizeof(*r));
			r->start = a->start;
			r->end = a->end;
			r->thread = rp->apis[a->api].thread;
			r->name = c->id[depth];
			r->recorded_depth = (uint32_t)depth;
			r->parent = r->step = -1;
			stack[depth].name = c->id[depth];
			stack[depth].range = (int32_t)rp->n_ranges++;
		}
		for (size_t j = 0; j < depth; j++)
			if (rp->ranges[stack[j].range].end < a->end)
				rp->ranges[stack[j].range].end = a->end;
		out[i] = stack[depth - 1].range;
	}
	*graph_range = out;
	out = NULL;
	rc = 0;
out:
	for (size_t j = 0; comps && j < rp->n_ops; j++)
		free(comps[j].id);
	free(comps);
	free(names.slot);
	free(out);
	return rc;
}

/* Activities' ranges and steps; ranges' and steps' GPU span, busy time and counts. */
static int project_activities(struct replay *rp, const int32_t *graph_range)
{
	struct span_sum *ss = calloc(rp->n_steps + 1, sizeof(*ss));
	uint64_t walk = 0;

	if (!ss)
		return -1;
	for (size_t i = 0; i < rp->n_activities; i++) {
		struct replay_activity *a = &rp->activities[i];

		if (a->api >= 0) {
			a->range = graph_range && graph_range[i] >= 0 ? graph_range[i]
								     : rp->apis[a->api].range;
			a->step = replay_step_at(rp, rp->apis[a->api].start);
		} else {
			a->step = replay_step_at(rp, a->start);
		}
		if (a->range >= 0)
			walk += rp->ranges[a->range].depth + 1;
		if (a->step >= 0) {
			struct replay_step *s = &rp->steps[a->step];
			span_add(&ss[a->step], &s->gpu_busy, &s->gpu_start, &s->gpu_end, s->activities,
				 a->start, a->end);
			s->activities++;
			s->kernels += a->kind == ST_KERNEL;
		}
	}
	for (size_t s = 0; s < rp->n_steps; s++)
		if (rp->steps[s].activities)
			rp->steps[s].gpu_busy += ss[s].cur_end - ss[s].cur_start;
	free(ss);
	if (walk <= WALK_STEPS_PER_ITEM * (uint64_t)(rp->n_activities + rp->n_ranges))
		return ranges_by_walk(rp);
	return ranges_by_sweep(rp);
}

static int build_streams(struct replay *rp)
{
	size_t n = rp->n_activities, ns = 0;
	struct replay_key *keys = malloc((n + 1) * sizeof(*keys));
	struct replay_key *tmp = malloc((n + 1) * sizeof(*tmp));
	int rc = -1;

	if (!keys || !tmp)
		goto out;
	for (size_t i = 0; i < n; i++) {
		keys[i].key = (uint64_t)rp->activities[i].device << 32 | rp->activities[i].stream;
		keys[i].idx = (uint32_t)i;
	}
	replay_sort_keys(keys, tmp, n);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || keys[i].key != keys[i - 1].key)
			ns++;
	rp->streams = calloc(ns + 1, sizeof(*rp->streams));
	if (!rp->streams)
		goto out;
	for (size_t i = 0, s = 0; i < n; s++) {
		size_t j = i;
		while (j < n && keys[j].key == keys[i].key)
			j++;
		struct replay_stream *st = &rp->streams[s];
		st->device = (uint32_t)(keys[i].key >> 32);
		st->stream = (uint32_t)keys[i].key;
		st->acts = malloc((j - i) * sizeof(*st->acts));
		if (!st->acts)
			goto out;
		for (size_t k = i; k < j; k++)
			st->acts[st->n++] = keys[k].idx;
		rp->n_streams = s + 1;
		i = j;
	}
	rc = 0;
out:
	free(keys);
	free(tmp);
	return rc;
}

int32_t replay_range_at(const struct replay *rp, uint64_t thread, uint64_t t)
{
	int32_t ti = thread_index(rp, thread);
	const struct replay_thread *th;
	size_t lo = 0, hi;

	if (ti < 0)
		return -1;
	th = &rp->threads[ti];
	hi = th->n_ranges;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rp->ranges[th->ranges[mid]].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return covering(rp, lo ? (int32_t)th->ranges[lo - 1] : -1, t);
}

static void time_bounds(struct replay *rp)
{
	uint64_t lo = UINT64_MAX, hi = 0;
#define BOUND(s, e) do { if ((s) < lo) lo = (s); if ((e) > hi) hi = (e); } while (0)
	for (size_t i = 0; i < rp->n_activities; i++)
		BOUND(rp->activities[i].start, rp->activities[i].end);
	for (size_t i = 0; i < rp->n_apis; i++)
		BOUND(rp->apis[i].start, rp->apis[i].end);
	for (size_t i = 0; i < rp->n_ranges; i++)
		BOUND(rp->ranges[i].start, rp->ranges[i].end);
	for (size_t i = 0; i < rp->n_steps; i++)
		BOUND(rp->steps[i].start, rp->steps[i].end);
	for (size_t i = 0; i < rp->n_mem; i++)
		BOUND(rp->mem[i].ev.start, rp->mem[i].ev.end);
	for (size_t i = 0; i < rp->n_others; i++)
		BOUND(rp->others[i].start, rp->others[i].end);
#undef BOUND
	rp->t_min = lo == UINT64_MAX ? 0 : lo;
	rp->t_max = hi;
}

/*
 * The step a cost record's stretch lies in: the one holding its middle,
 * when it covers at least half the stretch (a stretch the recorder did not
 * cut at the steps, such as a whole run that replay cut by its launch
 * period, belongs to none); -1 none.
 */
static int32_t cost_step(const struct replay *rp, const struct replay_cost *c)
{
	int32_t s = replay_step_at(rp, c->start + (c->end - c->start) / 2);
	uint64_t a, b;

	if (s < 0)
		return -1;
	a = c->start > rp->steps[s].start ? c->start : rp->steps[s].start;
	b = c->end < rp->steps[s].end ? c->end : rp->steps[s].end;
	return b >= a && 2 * (b - a) >= c->end - c->start ? s : -1;
}

int replay_project(struct replay *rp)
{
	int32_t *graph_range = NULL, *remap = NULL;
	size_t n_recorded = rp->n_ranges;

	if (link_launches(rp) < 0 || graph_ranges(rp, &graph_range) < 0)
		goto oom;
	if (rp->n_ranges > n_recorded) {
		if (!(remap = malloc(rp->n_ranges * sizeof(*remap))) || replay_sort_ranges(rp, remap) < 0)
			goto oom;
		for (size_t i = 0; i < rp->n_activities; i++)
			if (graph_range[i] >= 0)
				graph_range[i] = remap[graph_range[i]];
		free(remap);
		remap = NULL;
	}
	if (build_threads(rp) < 0 || build_tree(rp) < 0 || build_jumps(rp) < 0)
		goto oom;
	if (build_paths(rp) < 0) {
		free(graph_range);
		return -1;
	}
	project_apis(rp);
	if (replay_period_steps(rp) < 0) {
		free(graph_range);
		return -1;
	}
	if (project_activities(rp, graph_range) < 0 || build_streams(rp) < 0)
		goto oom;
	free(graph_range);
	graph_range = NULL;

	for (size_t i = 0; i < rp->n_ranges; i++)
		rp->ranges[i].step = replay_step_at(rp, rp->ranges[i].start +
					     (rp->ranges[i].end - rp->ranges[i].start) / 2);

	/* the main thread: the steps', else the one with most ranges */
	if (rp->n_steps) {
		rp->main_thread = rp->steps[0].thread;
	} else {
		size_t best = 0;
		for (size_t i = 0; i < rp->n_threads; i++)
			if (rp->threads[i].n_ranges > best) {
				best = rp->threads[i].n_ranges;
				rp->main_thread = rp->threads[i].thread;
			}
	}
	double per_launch = replay_launch_cost_ns(&rp->run);

	for (size_t i = 0; i < rp->n_costs; i++) {
		struct replay_cost *c = &rp->costs[i];

		c->step = cost_step(rp, c);
		if (per_launch > 0) {   /* at most its stretch: a hostile count stays bounded */
			double ns = per_launch * (double)c->launches;
			double span = c->end > c->start ? (double)(c->end - c->start) : 0;

			c->cupti_ns = (uint64_t)(ns < span ? ns : span);
		}
	}
	for (size_t i = 0; i < rp->n_mem; i++) {
		rp->mem[i].step = replay_step_at(rp, rp->mem[i].ev.start);
		rp->mem[i].range = replay_range_at(rp, rp->main_thread, rp->mem[i].ev.start);
	}
	time_bounds(rp);
	return 0;
oom:
	free(graph_range);
	free(remap);
	return error("out of memory while rebuilding the timeline");
}
