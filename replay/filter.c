/*
 * filter.c: --range PATH. A pattern is '/'-separated fnmatch globs matched
 * against a contiguous run of a path's components (anywhere, or at the root
 * when the pattern starts with '/'). Paths are matched once each, over the
 * tree of paths (no path string is built); activities and ranges then test
 * a flag.
 */
#include "replay/replay.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/options.h"

int range_pattern_compile(struct range_pattern *p, const char *pattern)
{
	size_t len;
	char *s;
	int n = 0;

	memset(p, 0, sizeof(*p));
	if (!pattern)
		return error("empty range pattern");
	p->anchored = pattern[0] == '/';
	while (*pattern == '/')
		pattern++;
	len = strlen(pattern);
	while (len && pattern[len - 1] == '/')
		len--;
	if (len == 0)
		return error("empty range pattern");
	p->storage = malloc(len + 1);
	p->comp = malloc((len / 2 + 2) * sizeof(*p->comp));
	if (!p->storage || !p->comp) {
		range_pattern_release(p);
		return error("out of memory");
	}
	memcpy(p->storage, pattern, len);
	p->storage[len] = '\0';
	s = p->storage;
	for (;;) {
		char *slash = strchr(s, '/');
		if (slash)
			*slash = '\0';
		if (*s == '\0') {
			range_pattern_release(p);
			return error("range pattern '%.*s' has an empty component", (int)len, pattern);
		}
		if (n == RANGE_PATTERN_MAX) {
			range_pattern_release(p);
			return error("range pattern '%.*s' has more than %d components", (int)len, pattern,
				     RANGE_PATTERN_MAX);
		}
		p->comp[n++] = s;
		if (!slash)
			break;
		s = slash + 1;
	}
	p->n = n;
	return 0;
}

void range_pattern_release(struct range_pattern *p)
{
	free(p->storage);
	free(p->comp);
	memset(p, 0, sizeof(*p));
}

/* Does the glob match the component s[0..len)? */
static bool glob_match(const char *glob, const char *s, size_t len)
{
	char buf[256], *comp = len < sizeof(buf) ? buf : malloc(len + 1);
	bool match;

	if (!comp)
		return false;
	memcpy(comp, s, len);
	comp[len] = '\0';
	match = fnmatch(glob, comp, 0) == 0;
	if (comp != buf)
		free(comp);
	return match;
}

/* Does the pattern match the components starting at `s`? */
static bool match_at(const struct range_pattern *p, const char *s)
{
	for (int i = 0; i < p->n; i++) {
		const char *end = strchr(s, '/');
		size_t len = end ? (size_t)(end - s) : strlen(s);

		if (*s == '\0' && !end)
			return false; /* ran out of components */
		if (!glob_match(p->comp[i], s, len))
			return false;
		if (!end) {
			if (i + 1 < p->n)
				return false;
			break;
		}
		s = end + 1;
	}
	return true;
}

bool range_pattern_match(const struct range_pattern *p, const char *path)
{
	const char *s = path;

	if (p->n == 0)
		return true;
	if (*path == '\0')
		return false;
	for (;;) {
		if (match_at(p, s))
			return true;
		if (p->anchored)
			return false;
		s = strchr(s, '/');
		if (!s)
			return false;
		s++;
	}
}

/*
 * The pattern over the tree of paths: a path's components are its parent's,
 * then its name split at '/', so each path is matched from its parent's
 * state (paths come parent first). Bit i of `bits`: the pattern's
 * components 0..i match the components ending at the last one seen
 * (shift-and); `found`: a whole match ended before the path's last
 * component. The answers are range_pattern_match()'s on the path's string,
 * in time linear in the names' lengths.
 */
struct match_state {
	uint64_t bits;
	bool found;
};

/* Which of the pattern's components match the component s[0..len). */
static uint64_t component_mask(const struct range_pattern *p, const char *s, size_t len)
{
	uint64_t m = 0;

	for (int i = 0; i < p->n; i++)
		if (glob_match(p->comp[i], s, len))
			m |= UINT64_C(1) << i;
	return m;
}

static bool match_path(const struct range_pattern *p, const struct replay *rp, size_t i,
		       struct match_state *states)
{
	const struct replay_path *path = &rp->paths[i];
	const char *name = replay_str(rp, path->name);
	uint64_t whole = UINT64_C(1) << (p->n - 1);
	struct match_state s = { 0, false };
	bool first = path->parent < 0;

	if (path->parent >= 0) {
		s = states[path->parent];
		s.found = s.found || (s.bits & whole); /* its last component is not the last here */
	}
	for (;;) {
		const char *slash = strchr(name, '/');
		size_t len = slash ? (size_t)(slash - name) : strlen(name);

		s.bits = ((s.bits << 1) | (!p->anchored || first)) & component_mask(p, name, len);
		first = false;
		if (!slash)
			break;
		s.found = s.found || (s.bits & whole);
		name = slash + 1;
	}
	states[i] = s;
	/* an empty last component ends no match (match_at) */
	return s.found || ((s.bits & whole) && *name);
}

int replay_filter_init(struct replay_filter *f, const struct replay *rp, const char *pattern)
{
	struct match_state *states;
	struct range_pattern p;

	memset(f, 0, sizeof(*f));
	if (!pattern) {
		f->all = true;
		return 0;
	}
	if (range_pattern_compile(&p, pattern) < 0)
		return -1;
	f->path_ok = calloc(rp->n_paths + 1, 1);
	f->op_ok = calloc(rp->n_ops + 1, 1);
	states = malloc((rp->n_paths + 1) * sizeof(*states));
	if (!f->path_ok || !f->op_ok || !states) {
		free(states);
		range_pattern_release(&p);
		replay_filter_release(f);
		return error("out of memory");
	}
	for (size_t i = 0; i < rp->n_paths; i++)
		f->path_ok[i] = match_path(&p, rp, i, states);
	free(states);
	for (size_t i = 0; i < rp->n_ops; i++)
		f->op_ok[i] = range_pattern_match(&p, replay_str(rp, rp->ops[i].path));
	range_pattern_release(&p);
	return 0;
}

bool replay_filter_activity(const struct replay_filter *f, const struct replay *rp,
			    const struct replay_activity *a)
{
	if (f->all)
		return true;
	if (rp->n_ranges == 0) {
		/* no NVTX in this bundle: the launching op's path stands in */
		const struct replay_op *op = replay_op(rp, a->op);
		return op && f->op_ok[op - rp->ops];
	}
	return a->range >= 0 && f->path_ok[rp->ranges[a->range].path];
}

bool replay_filter_range(const struct replay_filter *f, const struct replay_range *r)
{
	return f->all || f->path_ok[r->path];
}

void replay_filter_release(struct replay_filter *f)
{
	free(f->path_ok);
	free(f->op_ok);
	memset(f, 0, sizeof(*f));
}

/* ---- a pattern that keeps nothing ---------------------------------------- */

/* A suggestion for a pattern that matched nothing: what to type, and how far it is. */
struct near_path {
	char *text;
	size_t cost;
};

#define NEAR_MAX 5
/*
 * The suggestions' work, in edit-distance cells over every component
 * compared (some milliseconds): a hostile bundle of thousands of
 * paths thousands of ranges deep would otherwise take minutes; past it the
 * nearest found so far are suggested.
 */
#define NEAR_BUDGET (UINT64_C(1) << 23)

/* How far component c[0..len) is from the glob: 0 when it matches, else the edits. */
static size_t component_cost(const char *glob, const char *c, size_t len)
{
	char *s;
	size_t d;

	if (glob_match(glob, c, len))
		return 0;
	s = strndup(c, len);
	d = s ? edit_distance(glob, s) : SIZE_MAX;
	free(s);
	return d;
}

static int cmp_near(const void *x, const void *y)
{
	const struct near_path *a = x, *b = y;

	if (a->cost != b->cost)
		return a->cost < b->cost ? -1 : 1;
	return strcmp(a->text, b->text);
}

/* Keeps (text, cost) when among the NEAR_MAX nearest of near[0..*n), sorted, no text twice; owns text. */
static void keep_near(struct near_path *near, size_t *n, char *text, size_t cost)
{
	struct near_path c = { text, cost };

	for (size_t k = 0; k < *n; k++)
		if (!strcmp(near[k].text, text)) {
			if (cost < near[k].cost)
				near[k].cost = cost;
			free(text);
			goto sort;
		}
	if (*n < NEAR_MAX) {
		near[(*n)++] = c;
	} else if (cmp_near(&c, &near[NEAR_MAX - 1]) < 0) {
		free(near[NEAR_MAX - 1].text);
		near[NEAR_MAX - 1] = c;
	} else {
		free(text);
	}
sort:
	qsort(near, *n, sizeof(*near), cmp_near);
}

/*
 * Offers each run of `path`'s components as long as the pattern (the first
 * only when it is anchored) as a suggestion: the components its glob
 * matches as the user typed them, the others as the path has them; its cost
 * is the edits of those others.
 */
static int offer_path(const struct range_pattern *p, const char *path, struct near_path *near, size_t *n,
		      uint64_t *budget)
{
	size_t m = 1, k = (size_t)p->n;
	const char **comp;
	size_t *len, *dist;
	const char *s;

	for (s = path; (s = strchr(s, '/')); s++)
		m++;
	comp = malloc(m * sizeof(*comp));
	len = malloc(m * sizeof(*len));
	dist = malloc((k ? k : 1) * sizeof(*dist));
	if (!comp || !len || !dist) {
		free(comp);
		free(len);
		free(dist);
		return error("out of memory");
	}
	m = 0;
	for (s = path;; s++) {
		const char *slash = strchr(s, '/');

		comp[m] = s;
		len[m++] = slash ? (size_t)(slash - s) : strlen(s);
		if (!slash)
			break;
		s = slash;
	}
	for (size_t at = 0; at + k <= m && (at == 0 || !p->anchored) && *budget; at++) {
		size_t cost = 0, size = 2;
		char *text, *t;

		for (size_t i = 0; i < k; i++) {
			uint64_t cells = (uint64_t)(len[at + i] + 1) * (strlen(p->comp[i]) + 1);

			*budget = cells < *budget ? *budget - cells : 0;
			dist[i] = component_cost(p->comp[i], comp[at + i], len[at + i]);
			cost = cost + dist[i] < cost ? SIZE_MAX : cost + dist[i];
			size += (dist[i] ? len[at + i] : strlen(p->comp[i])) + 1;
		}
		if (*n == NEAR_MAX && cost > near[NEAR_MAX - 1].cost)
			continue;   /* farther than the five kept: no text to make */
		text = t = malloc(size);
		if (!text) {
			free(comp);
			free(len);
			free(dist);
			return error("out of memory");
		}
		if (p->anchored)
			*t++ = '/';
		for (size_t i = 0; i < k; i++) {
			bool typed = dist[i] == 0;
			size_t l = typed ? strlen(p->comp[i]) : len[at + i];

			memcpy(t, typed ? p->comp[i] : comp[at + i], l);
			t += l;
			*t++ = '/';
		}
		t[-1] = '\0';
		keep_near(near, n, text, cost);
	}
	free(comp);
	free(len);
	free(dist);
	return 0;
}

/* Does the filter keep anything of rp: a range path, or, in a bundle without ranges, an op's path? */
static bool filter_keeps_any(const struct replay_filter *f, const struct replay *rp)
{
	if (f->all)
		return true;
	if (rp->n_ranges == 0) {
		for (size_t i = 0; i < rp->n_ops; i++)
			if (f->op_ok[i])
				return true;
		return false;
	}
	for (size_t i = 0; i < rp->n_paths; i++)
		if (f->path_ok[i])
			return true;
	return false;
}

/* The suggestions from one replay's paths (its ops' paths when it has no ranges), within *budget. */
static int offer_replay(const struct range_pattern *p, const struct replay *rp, struct near_path *near,
			size_t *n, uint64_t *budget)
{
	if (rp->n_ranges == 0) {
		for (size_t i = 0; i < rp->n_ops && *budget; i++)
			if (offer_path(p, replay_str(rp, rp->ops[i].path), near, n, budget) < 0)
				return -1;
		return 0;
	}
	for (size_t i = 0; i < rp->n_paths && *budget; i++)
		if (offer_path(p, replay_path_str(rp, (uint32_t)i), near, n, budget) < 0)
			return -1;
	return 0;
}

int replay_range_check(const struct replay *rps, size_t n_rps, const char *pattern)
{
	struct near_path near[NEAR_MAX];
	struct range_pattern p;
	char list[1024];
	size_t n = 0, used = 0;
	uint64_t budget = NEAR_BUDGET;
	int rc = -1;

	if (!pattern)
		return 0;
	for (size_t i = 0; i < n_rps; i++) {
		struct replay_filter f;
		bool any;

		if (replay_filter_init(&f, &rps[i], pattern) < 0)
			return -1;
		any = filter_keeps_any(&f, &rps[i]);
		replay_filter_release(&f);
		if (any)
			return 0;
	}
	if (range_pattern_compile(&p, pattern) < 0)
		return -1;
	for (size_t i = 0; i < n_rps; i++)
		if (offer_replay(&p, &rps[i], near, &n, &budget) < 0)
			goto out;
	list[0] = '\0';
	/* the nearest, and those about as near: not five names far from it */
	for (size_t k = 0; k < n && used < sizeof(list) && near[k].cost <= near[0].cost + 2; k++) {
		int w = snprintf(list + used, sizeof(list) - used, "%s'%s'", k ? ", " : "", near[k].text);

		if (w < 0)
			break;
		used += (size_t)w;
	}
	if (n)
		error("--range '%s' matches no range path%s; the nearest: %s", pattern,
		      n_rps > 1 ? " in the bundles given" : "", list);
	else
		error("--range '%s' matches no range path: %s", pattern,
		      n_rps > 1 ? "the bundles given have no NVTX ranges" : "the bundle has no NVTX ranges");
out:
	for (size_t k = 0; k < n; k++)
		free(near[k].text);
	range_pattern_release(&p);
	return rc;
}
