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
