/*
 * explain_path.c: the critical path of explain's steps (see explain_path.h):
 * from a step's end back to its start along the dependency graph's binding
 * edges (graph/graph.h), each stretch totalled by what it was.
 */
#include "analyze/explain_path.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/common.h"
#include "lib/error.h"
#include "lib/grow.h"
#include "lib/hash.h"

static int cp_add(struct explain_path *cp, const char *kind, const char *label, double ns)
{
	uint64_t h = hash_fnv1a(hash_str(kind), label, strlen(label));
	size_t i;

	if (ns <= 0)
		return 0;
	if (2 * (cp->n + 1) > cp->n_slots) {
		size_t n_slots = cp->n_slots ? 2 * cp->n_slots : 256;
		int32_t *slot = malloc(n_slots * sizeof(*slot));

		if (!slot)
			return error("out of memory");
		memset(slot, 0xff, n_slots * sizeof(*slot));
		for (size_t k = 0; k < cp->n; k++) {
			uint64_t hk = hash_fnv1a(hash_str(cp->e[k].kind), cp->e[k].label, strlen(cp->e[k].label));

			for (i = hk & (n_slots - 1); slot[i] >= 0; i = (i + 1) & (n_slots - 1))
				;
			slot[i] = (int32_t)k;
		}
		free(cp->slot);
		cp->slot = slot;
		cp->n_slots = n_slots;
	}
	for (i = h & (cp->n_slots - 1); cp->slot[i] >= 0; i = (i + 1) & (cp->n_slots - 1)) {
		struct explain_path_entry *e = &cp->e[cp->slot[i]];

		if (!strcmp(e->kind, kind) && !strcmp(e->label, label)) {
			e->ns += ns;
			return 0;
		}
	}
	if (ALLOC_GROW(cp->e, cp->n + 1, cp->alloc) < 0)
		return -1;
	cp->e[cp->n] = (struct explain_path_entry){ strdup(kind), strdup(label), ns };
	if (!cp->e[cp->n].kind || !cp->e[cp->n].label)
		return error("out of memory");
	cp->slot[i] = (int32_t)cp->n++;
	return 0;
}

void explain_path_release(struct explain_path *cp)
{
	for (size_t i = 0; i < cp->n; i++) {
		free(cp->e[i].kind);
		free(cp->e[i].label);
	}
	free(cp->e);
	free(cp->slot);
}

/* A path with its layer numbers made globs: "step/forward/layer.3/attn" -> "step/forward/layer.*" "/attn". */
static const char *collapse(const char *path, char *buf, size_t len)
{
	size_t o = 0;

	for (const char *p = path; *p && o + 2 < len;) {
		if (isdigit((unsigned char)*p) && (p == path || p[-1] == '.' || p[-1] == '/')) {
			const char *q = p;

			while (isdigit((unsigned char)*q))
				q++;
			if (!*q || *q == '/' || *q == '.') {
				buf[o++] = '*';
				p = q;
				continue;
			}
		}
		buf[o++] = *p++;
	}
	buf[o] = 0;
	return buf;
}

/* What a GPU node is called on the path: its op, else its range, else its kernel's base name. */
static const char *gpu_label(const struct graph *g, const struct graph_node *n, char *buf, size_t len)
{
	const struct replay *rp = g->rp[n->rank];
	const struct replay_activity *a = &rp->activities[n->index];
	const struct replay_op *op = replay_op(rp, a->op);
	char tmp[512];

	if (op) {
		const char *phase = replay_str(rp, op->phase), *kind = replay_str(rp, op->kind ? op->kind : op->path);

		snprintf(tmp, sizeof(tmp), "%s%s%s", phase, *phase ? "/" : "", kind);
		return collapse(tmp, buf, len);
	}
	if (a->range >= 0)
		return collapse(replay_activity_path(rp, a), buf, len);
	return kernel_base_name(replay_str(rp, a->name), buf, len);
}

static const char *host_label(const struct graph *g, uint32_t rank, uint64_t thread, uint64_t t, char *buf,
			      size_t len)
{
	const struct replay *rp = g->rp[rank];
	uint64_t local = g->offset ? t - (uint64_t)g->offset[rank] : t;
	int32_t r = replay_range_at(rp, thread, local);

	if (r < 0)
		return "(outside ranges)";
	return collapse(replay_range_path(rp, &rp->ranges[r]), buf, len);
}

static const char *const work_kind[] = { "host call", "kernel", "collective", "copy" };

/*
 * The critical path of step st (of rank 0, rp) back from its end, into cp. Each node walked
 * costs one of *budget (shared by the steps: overlapping steps of hostile
 * input would walk the whole graph each); 1 when it ran out.
 */
static int critical_path(const struct graph *g, const struct replay *rp, const struct replay_step *st,
			 struct explain_path *cp, size_t *budget)
{
	uint64_t S = graph_time(g, 0, st->start), t = graph_time(g, 0, st->end);
	const struct replay_thread *th = graph_thread(rp, st->thread);
	char buf[512];
	int32_t n = -1;
	bool at_end = true;

	if (th) {
		/* the last call ending by the step's end: among the last few starting before it */
		size_t lo = 0, hi = th->n_apis;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (g->nodes[g->api_node[0][th->apis[mid]]].start <= t)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo, looked = 0; k-- > 0 && looked < 64; looked++) {
			const struct graph_node *x = &g->nodes[g->api_node[0][th->apis[k]]];

			if (x->end <= S)
				break;
			if (x->end <= t) {
				n = g->api_node[0][th->apis[k]];
				break;
			}
		}
	}
	if (n < 0)
		return cp_add(cp, "host work", host_label(g, 0, st->thread, t, buf, sizeof(buf)), (double)(t - S));
	if (cp_add(cp, "host work", host_label(g, 0, st->thread, g->nodes[n].end, buf, sizeof(buf)),
		   (double)(t - g->nodes[n].end)) < 0)
		return -1;
	t = g->nodes[n].end;
	while (t > S) {
		const struct graph_node *x = &g->nodes[n];
		const struct graph_edge *e;
		uint64_t src;
		int32_t from;
		const char *kind, *label;
		int r;

		if (!*budget)
			return 1;
		--*budget;
		if (at_end && x->bind_end < 0) {
			uint64_t a = x->start > S ? x->start : S;

			label = x->kind == GN_API ? replay_str(g->rp[x->rank], g->rp[x->rank]->apis[x->index].name)
						  : gpu_label(g, x, buf, sizeof(buf));
			if (cp_add(cp, work_kind[x->work], label, (double)(t - a)) < 0)
				return -1;
			t = x->start;
			at_end = false;
			continue;
		}
		e = &g->edges[at_end ? x->bind_end : x->bind];
		if (!at_end && x->bind < 0)
			break;
		from = e->from;
		if (g->nodes[from].kind == GN_COLL)   /* the ranks' meeting point: on to the rank that arrived last */
			src = graph_coll_source(g, e, &from);
		else
			src = e->kind == GE_LAUNCH || e->kind == GE_COLL ? g->nodes[from].start : g->nodes[from].end;
		if (from < 0)
			break;
		if (src > t)
			src = t;
		{
			uint64_t a = src > S ? src : S;

			switch (e->kind) {
			case GE_THREAD:
				kind = "host work";
				label = host_label(g, x->rank, g->rp[x->rank]->apis[x->index].thread, a, buf, sizeof(buf));
				break;
			case GE_LAUNCH: kind = "launch"; label = "launch latency"; break;
			case GE_STREAM: kind = "GPU gap"; label = "between a stream's work"; break;
			case GE_WAIT: kind = "wait"; label = "for another stream"; break;
			case GE_SYNC:
				kind = "sync";
				label = replay_str(g->rp[x->rank], g->rp[x->rank]->apis[x->index].name);
				if (!at_end) {
					snprintf(buf, sizeof(buf), "polled until done: %s", label);
					label = buf;
				}
				break;
			default: kind = "wait for ranks"; label = gpu_label(g, x, buf, sizeof(buf)); break;
			}
			r = cp_add(cp, kind, label, (double)(t - a));
			if (r < 0)
				return -1;
		}
		at_end = e->kind != GE_LAUNCH && e->kind != GE_COLL;
		n = from;
		t = src;
	}
	if (t > S)
		return cp_add(cp, "before", "(nothing recorded decides it)", (double)(t - S));
	return 0;
}

static int cmp_cp(const void *x, const void *y)
{
	const struct explain_path_entry *a = x, *b = y;

	if (a->ns != b->ns)
		return a->ns > b->ns ? -1 : 1;
	return strcmp(a->label, b->label);
}

int explain_paths(const struct graph *g, const struct replay *rp, const struct replay_step *steps,
		  const uint32_t *counted, size_t n, struct explain_path *cp, size_t *walked)
{
	size_t budget = 8 * g->n_nodes + 1000000;
	int ret = 0;

	for (*walked = 0; *walked < n && ret == 0; ++*walked)
		ret = critical_path(g, rp, &steps[counted[*walked]], cp, &budget);
	if (ret >= 0 && cp->n)
		qsort(cp->e, cp->n, sizeof(*cp->e), cmp_cp);
	return ret;
}
