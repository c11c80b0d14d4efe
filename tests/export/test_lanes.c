/*
 * test_lanes.c: export's lanes, on random replays where kernels, steps,
 * ranges and calls overlap without nesting. Every track's slices nest (its
 * marks, in time order, open and close as a stack); a slice on a track's
 * k-th extra lane found each lane before it taken by a slice it does not
 * nest in (first fit); a stream's or the steps' lanes are as many as the
 * most slices open at once.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export/layout.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

static uint64_t rng = 0x2545f4914f6cdd1dull;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? rng % n : 0;
}

enum { T = 20000 };

static void build(struct replay *rp, int n)
{
	static const char *const names[] = { "a", "b", "forward", "layer.0" };
	struct builder b;

	builder_init(&b);
	builder_open_replay(&b, rp);
	for (int i = 0; i < n; i++) {
		uint64_t s = rnd(T), e = s + rnd(i % 3 ? 300 : 3000);

		switch (rnd(4)) {
		case 0:
			builder_kernel(&b, "k", 0, 7 + (uint32_t)rnd(2), 0, s, e);
			break;
		case 1:
			builder_step(&b, (uint32_t)i, false, s, e);
			break;
		case 2:
			b.thread = 1 + rnd(2);
			builder_range(&b, names[rnd(4)], (uint32_t)rnd(4), s, e);
			break;
		default:
			b.thread = 1 + rnd(2);
			builder_launch(&b, "k", 9, 0, s, s + rnd(50), e, e + rnd(200));
		}
	}
	CHECK(builder_close(&b, "ok") == 0, "the replay");
}

/* A track's lane: 0 for the track itself, k for "NAME (overlap k)"; *base: NAME's length. */
static size_t lane_of(const char *name, size_t *base)
{
	const char *o = strstr(name, " (overlap ");

	*base = o ? (size_t)(o - name) : strlen(name);
	return o ? strtoul(o + 10, NULL, 10) : 0;
}

/* Range slice s is an NVTX ancestor of slice t: it stays open when t starts as it ends. */
static bool ancestor(const struct replay *rp, const struct xslice *s, const struct xslice *t)
{
	int32_t p = t->what == SL_RANGE ? rp->ranges[t->idx].parent : t->what == SL_API ? rp->apis[t->idx].range : -1;

	for (; s->what == SL_RANGE && p >= 0; p = rp->ranges[p].parent)
		if ((uint32_t)p == s->idx)
			return true;
	return false;
}

/* Slice s was open when t began, and t does not nest in it (flat: any overlap). */
static bool blocks(const struct replay *rp, const struct xslice *s, const struct xslice *t, bool flat)
{
	return s->start <= t->start && (s->end > t->start || (s->end == t->start && ancestor(rp, s, t))) &&
	       (flat || s->end < t->end);
}

static void check_layout(const struct layout *L, const char *what)
{
	uint32_t **stack = calloc(L->n_tracks, sizeof(*stack));
	size_t *depth = calloc(L->n_tracks, sizeof(*depth)), *lane = calloc(L->n_tracks, sizeof(*lane));
	uint32_t *group = calloc(L->n_tracks, sizeof(*group));
	int bad = 0;

	/* each track's marks open and close as a stack */
	for (size_t t = 0; t < L->n_tracks; t++)
		stack[t] = malloc((L->n_slices + 1) * sizeof(**stack));
	for (size_t i = 0; i < L->n_marks && bad < 5; i++) {
		const struct xmark *m = &L->marks[L->keys[i].idx];
		uint32_t t;

		if (m->type != MK_BEGIN && m->type != MK_END)
			continue;
		t = L->slices[m->ref].track;
		if (m->type == MK_BEGIN) {
			stack[t][depth[t]++] = m->ref;
		} else if (!depth[t] || stack[t][--depth[t]] != m->ref) {
			CHECK(0, "%s: track '%s' closes slice %u out of order", what, L->tracks[t].name, m->ref);
			bad++;
		}
	}
	/* each track's group: the track its name derives from */
	for (size_t t = 0; t < L->n_tracks; t++) {
		size_t base;
		lane[t] = lane_of(L->tracks[t].name, &base);
		group[t] = (uint32_t)t;
		for (size_t u = 0; lane[t] && u < L->n_tracks; u++)
			if (strlen(L->tracks[u].name) == base && !strncmp(L->tracks[u].name, L->tracks[t].name, base))
				group[t] = (uint32_t)u;
	}
	/* first fit: every lane before a slice's has a slice that kept it out */
	for (size_t i = 0; i < L->n_slices && bad < 5; i++) {
		const struct xslice *s = &L->slices[i];
		const char *g = L->tracks[group[s->track]].name;
		bool flat = !strncmp(g, "stream", 6) || !strcmp(g, "steps");

		for (size_t k = 0; k < lane[s->track]; k++) {
			bool taken = false;
			for (size_t j = 0; j < L->n_slices && !taken; j++) {
				const struct xslice *o = &L->slices[j];
				taken = o != s && group[o->track] == group[s->track] && lane[o->track] == k &&
					blocks(L->rp, o, s, flat);
			}
			if (!taken) {
				CHECK(0, "%s: a slice of '%s' on lane %zu would have fit lane %zu", what, g,
				      lane[s->track], k);
				bad++;
				break;
			}
		}
	}
	for (size_t t = 0; t < L->n_tracks; t++)
		free(stack[t]);
	free(stack);
	free(depth);
	free(lane);
	free(group);
}

/* The most slices of a stream (or the steps) open at once: [start, end), as lanes see them. */
static size_t most_open(const struct layout *L, const char *group)
{
	size_t most = 0;

	for (size_t i = 0; i < L->n_slices; i++) {
		size_t open = 0;
		for (size_t j = 0; j < L->n_slices; j++) {
			const struct xslice *s = &L->slices[j];
			size_t base;
			lane_of(L->tracks[s->track].name, &base);
			open += base == strlen(group) && !strncmp(L->tracks[s->track].name, group, base) &&
				s->start <= L->slices[i].start && s->end > L->slices[i].start;
		}
		most = open > most ? open : most;
	}
	return most;
}

static size_t lanes(const struct layout *L, const char *group)
{
	size_t n = 0, base;

	for (size_t t = 0; t < L->n_tracks; t++) {
		lane_of(L->tracks[t].name, &base);
		n += base == strlen(group) && !strncmp(L->tracks[t].name, group, base);
	}
	return n;
}

int main(void)
{
	struct export_options opt = { .step = -1 };

	for (int round = 0; round < 30; round++) {
		struct replay rp;
		struct layout L;
		char what[32];

		snprintf(what, sizeof(what), "round %d", round);
		build(&rp, 50 + (int)rnd(400));
		CHECK(export_layout_build(&L, &rp, &opt) == 0, "%s: the layout", what);
		check_layout(&L, what);
		CHECK(L.extra_lanes > 0, "%s: no slice needed a lane of its own", what);
		for (size_t i = 0; i < 2; i++) {
			const char *g = i ? "stream 7" : "steps";
			if (lanes(&L, g))
				CHECK_U64(lanes(&L, g), most_open(&L, g));
		}
		export_layout_release(&L);
		replay_release(&rp);
	}
	return check_done("test_lanes");
}
