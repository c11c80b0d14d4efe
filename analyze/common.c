/* common.c: see common.h. */
#include "analyze/common.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/grow.h"

void dur_collect_init(struct dur_collect *c)
{
	memset(c, 0, sizeof(*c));
}

int dur_collect_add(struct dur_collect *c, uint64_t key, uint64_t dur)
{
	if (ALLOC_GROW(c->keys, c->n + 1, c->alloc_keys) < 0 ||
	    ALLOC_GROW(c->durs, c->n + 1, c->alloc_durs) < 0)
		return -1;
	if (c->n >= UINT32_MAX)
		return error("too many durations");
	c->keys[c->n].key = key;
	c->keys[c->n].idx = (uint32_t)c->n;
	c->durs[c->n++] = dur;
	return 0;
}

int dur_collect_groups(struct dur_collect *c, struct dur_groups *out)
{
	struct replay_key *tmp = malloc((c->n + 1) * sizeof(*tmp));
	uint64_t *sorted = malloc((c->n + 1) * sizeof(*sorted));
	size_t ng = 0;

	memset(out, 0, sizeof(*out));
	if (!tmp || !sorted)
		goto oom;
	replay_sort_keys(c->keys, tmp, c->n);
	for (size_t i = 0; i < c->n; i++) {
		sorted[i] = c->durs[c->keys[i].idx];
		if (i == 0 || c->keys[i].key != c->keys[i - 1].key)
			ng++;
	}
	out->g = calloc(ng + 1, sizeof(*out->g));
	if (!out->g)
		goto oom;
	for (size_t i = 0; i < c->n;) {
		size_t j = i;
		while (j < c->n && c->keys[j].key == c->keys[i].key)
			j++;
		struct dur_group *g = &out->g[out->n++];
		g->key = c->keys[i].key;
		dur_stats_compute(sorted + i, j - i, &g->s);
		out->total += g->s.total;
		i = j;
	}
	free(tmp);
	free(sorted);
	c->n = 0;
	return 0;
oom:
	free(tmp);
	free(sorted);
	return error("out of memory");
}

void dur_collect_release(struct dur_collect *c)
{
	free(c->keys);
	free(c->durs);
	memset(c, 0, sizeof(*c));
}

static int cmp_group(const void *a, const void *b)
{
	const struct dur_group *x = a, *y = b;

	if (x->s.total != y->s.total)
		return x->s.total < y->s.total ? 1 : -1;
	return strcmp(x->name ? x->name : "", y->name ? y->name : "");
}

void dur_groups_sort(struct dur_groups *g)
{
	if (g->n > 1)
		qsort(g->g, g->n, sizeof(*g->g), cmp_group);
}

void dur_groups_release(struct dur_groups *g)
{
	free(g->g);
	memset(g, 0, sizeof(*g));
}

void nsys_stat_columns(struct table *t, double per_step)
{
	bool div = per_step > 1.0;

	table_add_column(t, "Time (%)", COL_FLOAT, 1);
	table_add_column(t, "Total Time (ns)", div ? COL_FLOAT : COL_INT, div ? 1 : 0);
	table_add_column(t, "Instances", div ? COL_FLOAT : COL_INT, div ? 2 : 0);
	table_add_column(t, "Avg (ns)", COL_FLOAT, 1);
	table_add_column(t, "Med (ns)", COL_FLOAT, 1);
	table_column_droppable(t, 2);   /* the first to go, after a report's own, when the table is too wide */
	table_add_column(t, "Min (ns)", COL_INT, 0);
	table_add_column(t, "Max (ns)", COL_INT, 0);
	table_add_column(t, "StdDev (ns)", COL_FLOAT, 1);
}

void nsys_stat_cells(struct table *t, const struct dur_stats *s, uint64_t grand_total, double per_step)
{
	table_float(t, grand_total ? 100.0 * (double)s->total / (double)grand_total : 0.0);
	if (per_step > 1.0) {
		table_float(t, (double)s->total / per_step);
		table_count(t, (double)s->n / per_step);
	} else {
		table_int(t, (int64_t)s->total);
		table_int(t, (int64_t)s->n);
	}
	table_float(t, s->mean);
	table_float(t, s->median);
	table_int(t, (int64_t)s->min);
	table_int(t, (int64_t)s->max);
	table_float(t, s->stddev);
}

double ns_to_ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* The file name of a bundle without its folder and ".stb"; its length. */
static int bundle_stem(const char *path, const char **stem)
{
	const char *base = strrchr(path, '/');
	size_t n;

	base = base ? base + 1 : path;
	n = strlen(base);
	if (n > 4 && strcmp(base + n - 4, ".stb") == 0)
		n -= 4;
	*stem = base;
	return (int)n;
}

char *bundle_output_name(const char *a, const char *b, const char *ext)
{
	const char *sa, *sb;
	int la = bundle_stem(a, &sa);
	char buf[4096];

	if (b) {
		int lb = bundle_stem(b, &sb);
		snprintf(buf, sizeof(buf), "%.*s-vs-%.*s%s", la, sa, lb, sb, ext);
	} else {
		snprintf(buf, sizeof(buf), "%.*s%s", la, sa, ext);
	}
	return strdup(buf);
}

const char **step_labels(const struct replay *rp, bool *differ)
{
	const char **label = calloc(rp->n_steps + 1, sizeof(*label));

	*differ = false;
	if (!label) {
		error("out of memory");
		return NULL;
	}
	for (size_t i = 0; i < rp->n_ranges; i++) {
		const struct replay_range *g = &rp->ranges[i];

		if (g->parent < 0 && g->step >= 0 && (size_t)g->step < rp->n_steps &&
		    !label[g->step] && g->thread == rp->steps[g->step].thread)
			label[g->step] = replay_str(rp, g->name);
	}
	for (size_t s = 0; s < rp->n_steps; s++) {
		if (!label[s])
			label[s] = "";
		*differ |= strcmp(label[s], label[0]) != 0;
	}
	return label;
}

void module_steps_note(const struct replay *rp, bool include_warmup, bool phases_all, struct report *r)
{
	size_t all = include_warmup ? rp->n_steps : rp->n_measured_steps;
	size_t with = include_warmup ? rp->n_steps - rp->n_phases_only : rp->n_measured_modules;

	if (!rp->n_phases_only)
		return;
	report_note(r, "module ranges were recorded on %zu of the %zu %s steps (the others have phases only): "
		    "%s of those %zu", with, all, include_warmup ? "recorded" : "measured",
		    phases_all ? "steps, phases and ranges other than modules (NCCL's, the program's own) are of "
				 "every step, the module ranges" : "these rows are", with);
}

/* ---- kernel names for people -------------------------------------------- */

static bool opens(char c)
{
	return c == '<' || c == '(' || c == '[' || c == '{';
}

static bool closes(char c)
{
	return c == '>' || c == ')' || c == ']' || c == '}';
}

/* The end of the bracket group that opens at s[0]: the character after its closing one. */
static const char *group_end(const char *s, const char *end)
{
	int depth = 0;

	for (; s < end; s++) {
		if (opens(*s))
			depth++;
		else if (closes(*s) && --depth == 0)
			return s + 1;
	}
	return end;
}

/*
 * The qualified name of a demangled signature, s[0..*len): after the
 * return type, before the parameter list. false when the name has no
 * parameter list (it is not a signature).
 */
static bool signature_name(const char *name, const char **s, size_t *len)
{
	const char *end = name + strlen(name), *p, *start = name;
	int depth = 0;

	while (end > name && end[-1] == ' ')
		end--;
	if (end - name > 6 && !strncmp(end - 6, " const", 6))
		end -= 6;
	if (end == name || end[-1] != ')')
		return false;
	/* back to the '(' that opens the parameter list */
	for (p = end - 1; p >= name; p--) {
		if (*p == ')')
			depth++;
		else if (*p == '(' && --depth == 0)
			break;
	}
	if (p <= name)
		return false;
	end = p;
	/* the return type ends at the last space outside brackets */
	for (p = name; p < end; p++) {
		if (opens(*p))
			p = group_end(p, end) - 1;
		else if (*p == ' ')
			start = p + 1;
	}
	*s = start;
	*len = (size_t)(end - start);
	return *len > 0;
}

/* Appends s[0..n) to buf (used of len), cut to fit. */
static void put(char *buf, size_t len, size_t *used, const char *s, size_t n)
{
	if (*used + 1 >= len)
		return;
	if (n > len - 1 - *used)
		n = len - 1 - *used;
	memcpy(buf + *used, s, n);
	*used += n;
	buf[*used] = '\0';
}

/* s[0..n) without its template argument lists into buf ("(anonymous namespace)" kept). */
static void strip_templates(const char *s, size_t n, char *buf, size_t len, size_t *used)
{
	const char *end = s + n;

	while (s < end) {
		const char *next = s + 1;

		if (*s == '<') {
			s = group_end(s, end);
			continue;
		}
		if (opens(*s))
			next = group_end(s, end);
		put(buf, len, used, s, (size_t)(next - s));
		s = next;
	}
}

const char *kernel_base_name(const char *name, char *buf, size_t len)
{
	const char *s;
	size_t n, used = 0;

	if (len)
		buf[0] = '\0';
	if (!signature_name(name, &s, &n)) {
		put(buf, len, &used, name, strlen(name));
		return buf;
	}
	strip_templates(s, n, buf, len, &used);
	return buf;
}

/*
 * A template argument's base name: its last component that is neither a
 * lambda nor an operator, without template arguments or parameters
 * ("at::native::CUDAFunctor_add<float>" -> "CUDAFunctor_add",
 * "at::native::silu_kernel(at::TensorIteratorBase&)::{lambda()#1}::..." ->
 * "silu_kernel", "8" -> "8").
 */
static void argument_base(const char *s, size_t n, char *buf, size_t len, size_t *used)
{
	const char *end = s + n, *best = NULL, *comp = s;
	size_t best_n = 0;

	while (s < end && *s == ' ')
		s++, comp = s;
	while (end > s && end[-1] == ' ')
		end--;
	for (const char *p = s; p <= end; p++) {
		if (p < end && opens(*p)) {
			p = group_end(p, end) - 1;
			continue;
		}
		if (p == end || (p + 1 < end && p[0] == ':' && p[1] == ':')) {
			if (*comp != '{' && strncmp(comp, "operator", 8) && p > comp) {
				best = comp;
				best_n = (size_t)(p - comp);
			}
			comp = p + 2;
			p++;
		}
	}
	if (!best) {
		best = s;
		best_n = (size_t)(end - s);
	}
	/* without its own brackets: "CUDAFunctor_add<float>" -> "CUDAFunctor_add" */
	for (const char *p = best; p < best + best_n; p++)
		if (opens(*p) && p > best) {
			best_n = (size_t)(p - best);
			break;
		}
	put(buf, len, used, best, best_n);
}

/* The base name with its last template argument list, each argument reduced to its base name. */
static const char *kernel_mid_name(const char *name, char *buf, size_t len)
{
	const char *s, *end, *args = NULL;
	size_t n, used = 0;

	if (!signature_name(name, &s, &n))
		return kernel_base_name(name, buf, len);
	end = s + n;
	/* the last component's template arguments */
	for (const char *p = s; p < end; p++) {
		if (*p == '<') {
			const char *e = group_end(p, end);

			if (e == end)
				args = p;
			p = e - 1;
		} else if (opens(*p)) {
			p = group_end(p, end) - 1;
		}
	}
	strip_templates(s, n, buf, len, &used);
	if (!args)
		return buf;
	put(buf, len, &used, "<", 1);
	/* the arguments between args[0] ('<') and end[-1] ('>'), split at the commas outside brackets */
	for (const char *a = args + 1, *p = a, *stop = end - 1;; p++) {
		if (p < stop && opens(*p)) {
			p = group_end(p, stop) - 1;
			continue;
		}
		if (p < stop && *p != ',')
			continue;
		if (a > args + 1)
			put(buf, len, &used, ", ", 2);
		argument_base(a, (size_t)(p - a), buf, len, &used);
		if (p == stop)
			break;
		a = p + 1;
	}
	put(buf, len, &used, ">", 1);
	return buf;
}

/*
 * s fitted to `width` characters with a suffix after it: a name too wide
 * loses its namespaces ("at::native::(anonymous namespace)::layer_norm_
 * grad_input_kernel_vectorized" -> "layer_norm_grad_input_kernel_
 * vectorized"), then, still too wide, its middle ("head...tail"). Where
 * s[differ] is what tells it from a name alike (SIZE_MAX: nothing), that
 * character stays in sight: in the namespaces, they stay; past the head,
 * the head grows to show it. Owned; NULL when out of memory.
 */
static char *fitted(const char *s, size_t width, const char *suffix, size_t differ)
{
	size_t n = strlen(s), k = strlen(suffix), room = width > k + 20 ? width - k : 20;
	size_t head = (room - 3) * 2 / 3, tail;
	char buf[1024];

	if (n > room) {
		const char *last = s;

		for (const char *p = s; *p && *p != '<'; p++) {
			if (opens(*p))
				p = group_end(p, s + n) - 1;
			else if (p[0] == ':' && p[1] == ':')
				last = p + 2;
		}
		if (differ == SIZE_MAX || differ >= (size_t)(last - s)) {
			n -= (size_t)(last - s);
			differ -= differ == SIZE_MAX ? 0 : (size_t)(last - s);
			s = last;
		}
	}
	if (n <= room) {
		snprintf(buf, sizeof(buf), "%s%s", s, suffix);
		return strdup(buf);
	}
	if (differ != SIZE_MAX && differ + 8 > head)
		head = differ + 8 < room - 3 - 6 ? differ + 8 : room - 3 - 6;   /* 6 of the tail stay */
	tail = room - 3 - head;
	snprintf(buf, sizeof(buf), "%.*s...%s%s", (int)head, s, s + n - tail, suffix);
	return strdup(buf);
}

static int cmp_str_ptr(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

struct shown_at {
	const char *shown;
	size_t at;                  /* index into kernel_names.full */
	char *mid;                  /* its kernel_mid_name, while telling names apart */
	size_t differ;              /* where mid differs from its neighbours' */
};

/* By what they print, then by full name (the order of kernel_names.full). */
static int cmp_shown(const void *x, const void *y)
{
	const struct shown_at *a = x, *b = y;
	int c = strcmp(a->shown, b->shown);

	return c ? c : a->at < b->at ? -1 : a->at > b->at;
}

static int cmp_mid(const void *x, const void *y)
{
	const struct shown_at *a = x, *b = y;

	return strcmp(a->mid, b->mid);
}

static size_t common_prefix(const char *a, const char *b)
{
	size_t i = 0;

	while (a[i] && a[i] == b[i])
		i++;
	return i;
}

/*
 * The names of g[0..n), which print alike, told apart: at level 1 by their
 * template arguments reduced to base names (kernel_mid_name), at level 2
 * keeping in sight where those differ, at level 3 with " #k" as well (in
 * the order of those names). -1 when out of memory.
 */
static int rename_alike(struct kernel_names *kn, struct shown_at *g, size_t n, int level)
{
	char buf[1024], suffix[32] = "";
	int rc = -1;

	for (size_t k = 0; k < n; k++) {
		g[k].mid = strdup(kernel_mid_name(kn->full[g[k].at], buf, sizeof(buf)));
		g[k].differ = SIZE_MAX;
		if (!g[k].mid)
			goto out;
	}
	if (level >= 2) {
		qsort(g, n, sizeof(*g), cmp_mid);
		for (size_t k = 0; k < n; k++) {
			size_t before = k ? common_prefix(g[k].mid, g[k - 1].mid) : 0;
			size_t after = k + 1 < n ? common_prefix(g[k].mid, g[k + 1].mid) : 0;

			g[k].differ = before > after ? before : after;
		}
	}
	for (size_t k = 0; k < n; k++) {
		char *s;

		if (level == 3)
			snprintf(suffix, sizeof(suffix), " #%zu", k + 1);
		s = fitted(g[k].mid, kn->width, suffix, g[k].differ);
		if (!s)
			goto out;
		free(kn->shown[g[k].at]);
		kn->shown[g[k].at] = s;
	}
	rc = 0;
out:
	for (size_t k = 0; k < n; k++) {
		free(g[k].mid);
		g[k].mid = NULL;
	}
	return rc;
}

/*
 * Renames every group of names that print alike (rename_alike); *alike:
 * whether there was one. -1 when out of memory.
 */
static int tell_apart(struct kernel_names *kn, int level, bool *alike)
{
	struct shown_at *order = malloc((kn->n + 1) * sizeof(*order));

	*alike = false;
	if (!order)
		return -1;
	for (size_t i = 0; i < kn->n; i++)
		order[i] = (struct shown_at){ kn->shown[i], i, NULL, SIZE_MAX };
	qsort(order, kn->n, sizeof(*order), cmp_shown);
	for (size_t i = 0; i < kn->n;) {
		size_t j = i + 1;

		while (j < kn->n && !strcmp(order[j].shown, order[i].shown))
			j++;
		/* the group's shown strings are freed as it is renamed: j first */
		*alike |= j - i > 1;
		if (j - i > 1 && rename_alike(kn, order + i, j - i, level) < 0) {
			free(order);
			return -1;
		}
		i = j;
	}
	free(order);
	return 0;
}

int kernel_names_init(struct kernel_names *kn, const char *const *names, size_t n, size_t width,
		      bool whole)
{
	char buf[1024];
	size_t k = 0;
	bool alike = true;

	memset(kn, 0, sizeof(*kn));
	kn->width = width;
	kn->full = malloc((n + 1) * sizeof(*kn->full));
	kn->shown = calloc(n + 1, sizeof(*kn->shown));
	if (!kn->full || !kn->shown)
		goto oom;
	if (n)
		memcpy(kn->full, names, n * sizeof(*names));
	qsort(kn->full, n, sizeof(*kn->full), cmp_str_ptr);
	for (size_t i = 0; i < n; i++)
		if (k == 0 || strcmp(kn->full[i], kn->full[k - 1]))
			kn->full[k++] = kn->full[i];
	kn->n = k;
	for (size_t i = 0; i < k; i++) {
		kn->shown[i] = whole ? strdup(kn->full[i])
				     : fitted(kernel_base_name(kn->full[i], buf, sizeof(buf)), width, "", SIZE_MAX);
		if (!kn->shown[i])
			goto oom;
	}
	/* level 3 again while numbered names, cut, still meet others: each time fewer */
	for (int level = 1, tries = 0; !whole && alike && tries < 8; level += level < 3, tries++)
		if (tell_apart(kn, level, &alike) < 0)
			goto oom;
	return 0;
oom:
	kernel_names_release(kn);
	return error("out of memory");
}

const char *kernel_names_get(const struct kernel_names *kn, const char *name)
{
	const char **at = kn->n ? bsearch(&name, kn->full, kn->n, sizeof(*kn->full), cmp_str_ptr) : NULL;

	return at ? kn->shown[at - kn->full] : name;
}

bool kernel_names_shortened(const struct kernel_names *kn)
{
	for (size_t i = 0; i < kn->n; i++)
		if (strcmp(kn->shown[i], kn->full[i]))
			return true;
	return false;
}

void kernel_names_release(struct kernel_names *kn)
{
	for (size_t i = 0; kn->shown && i < kn->n; i++)
		free(kn->shown[i]);
	free(kn->shown);
	free(kn->full);
	memset(kn, 0, sizeof(*kn));
}
