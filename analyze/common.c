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
