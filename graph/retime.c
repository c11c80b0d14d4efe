/*
 * retime.c: the graph re-timed under what-if rules (graph.h), the rules
 * parsed, the all-reduce bandwidth table read.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"

#include "graph/rules.h"
#include "graph/unrecorded.h"
#include "lib/error.h"
#include "lib/glob.h"
#include "lib/grow.h"
#include "lib/memlimit.h"

int graph_rule_parse(struct graph_rule *r, const char *text)
{
	static const struct {
		const char *name;
		int kind;
		bool value;
	} forms[] = {
		{ "graph", GR_GRAPH, false }, { "no-sync", GR_NO_SYNC, false },
		{ "comm-overlap", GR_COMM_OVERLAP, false }, { "host", GR_HOST, true },
		{ "comm-bw", GR_COMM_BW, true }, { "ranks", GR_RANKS, true },
		{ "no-contention", GR_NO_CONTENTION, false }, { "unrecorded", GR_UNRECORDED, false },
	};
	const char *eq = strrchr(text, '=');
	char *end;
	int mine;

	memset(r, 0, sizeof(*r));
	r->text = text;
	r->factor = 1;
	if ((mine = graph_rules_parse(r, text)) <= 0)   /* graph/rules.c's: precision, batch, fuse, data, bucket-mb */
		return mine;
	if (!strncmp(text, "kernels:", 8)) {
		if (!eq || eq == text + 8)
			return error("--what-if '%s': say kernels:GLOB=K (a name, op or range path glob and a factor)", text);
		r->kind = GR_KERNELS;
		if (text[8] == '<') {
			double v = strtod(text + 9, &end);
			double unit = !strncmp(end, "ns=", 3) ? 1 : !strncmp(end, "us=", 3) ? 1e3 : !strncmp(end, "ms=", 3) ? 1e6 : 0;

			if (end == text + 9 || !unit || !(v > 0) || v > 1e9)
				return error("--what-if '%s': say kernels:<DUR=K with DUR such as 10us, 500ns or 1ms", text);
			r->below = (uint64_t)(v * unit);
		} else {
			r->pattern = strndup(text + 8, (size_t)(eq - text - 8));
			if (!r->pattern)
				return error("out of memory");
		}
		errno = 0;
		r->factor = strtod(eq + 1, &end);
		if (errno || end == eq + 1 || *end || !(r->factor >= 0) || r->factor > 1e6)
			return error("--what-if '%s': the factor must be a number from 0 to 1000000", text);
		return 0;
	}
	for (size_t i = 0; i < sizeof(forms) / sizeof(forms[0]); i++) {
		size_t len = strlen(forms[i].name);

		if (strncmp(text, forms[i].name, len) || (text[len] && text[len] != '='))
			continue;
		r->kind = forms[i].kind;
		if (!forms[i].value) {
			if (text[len])
				return error("--what-if '%s': '%s' takes no value", text, forms[i].name);
			return 0;
		}
		if (text[len] != '=')
			return error("--what-if '%s': say %s=%s", text, forms[i].name,
				     forms[i].kind == GR_RANKS ? "N" : "K");
		errno = 0;
		r->factor = strtod(text + len + 1, &end);
		if (errno || end == text + len + 1 || *end)
			return error("--what-if '%s': '%s' is not a number", text, text + len + 1);
		if (forms[i].kind == GR_RANKS) {
			if (r->factor < 2 || r->factor > 65536 || r->factor != floor(r->factor))
				return error("--what-if '%s': the ranks must be a whole number from 2 to 65536", text);
			r->ranks = (uint32_t)r->factor;
			r->factor = 1;
		} else if (!(r->factor >= 0) || r->factor > 1e6 || (forms[i].kind == GR_COMM_BW && r->factor == 0)) {
			return error("--what-if '%s': the factor must be a number from 0 to 1000000%s", text,
				     forms[i].kind == GR_COMM_BW ? ", not 0" : "");
		}
		return 0;
	}
	return error("--what-if '%s': no such rule; the rules: graph, no-sync, comm-overlap, no-contention, host=K, "
		     "comm-bw=K, kernels:GLOB=K, ranks=N, unrecorded, precision=bf16, batch=xK, fuse=elementwise, bucket-mb=M, data=K",
		     text);
}

/* ---- the bandwidth table ----------------------------------------------- */

/* Splits a CSV line in place (no quoted commas in `bench allreduce`'s output). */
static size_t csv_split(char *line, char **field, size_t max)
{
	size_t n = 0;

	line[strcspn(line, "\r\n")] = 0;
	for (char *p = line; n < max;) {
		field[n++] = p;
		p = strchr(p, ',');
		if (!p)
			break;
		*p++ = 0;
	}
	return n;
}

/* A row of the table, for sorting: its size and its place in the file (equal sizes keep their order). */
struct row {
	double bytes;
	size_t at;
};

static int cmp_row(const void *x, const void *y)
{
	const struct row *a = x, *b = y;

	if (a->bytes != b->bytes)
		return a->bytes < b->bytes ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

/* The rows by size, stably: qsort on (size, place), O(n log n) for a table of any length. */
static int sort_rows(struct graph_bw_table *t)
{
	struct row *r = malloc(t->n * sizeof(*r));
	double *v = malloc(3 * t->n * sizeof(*v));

	if (!r || !v) {
		free(r);
		free(v);
		return error("out of memory");
	}
	for (size_t i = 0; i < t->n; i++)
		r[i] = (struct row){ t->bytes[i], i };
	qsort(r, t->n, sizeof(*r), cmp_row);
	for (size_t i = 0; i < t->n; i++) {
		v[i] = t->bytes[r[i].at];
		v[t->n + i] = t->busbw[r[i].at];
		v[2 * t->n + i] = t->mean_us[r[i].at];
	}
	memcpy(t->bytes, v, t->n * sizeof(*v));
	memcpy(t->busbw, v + t->n, t->n * sizeof(*v));
	memcpy(t->mean_us, v + 2 * t->n, t->n * sizeof(*v));
	free(r);
	free(v);
	return 0;
}

/* The first row whose size is at least `bytes` (t->n: none), by binary search. */
static size_t row_at_least(const struct graph_bw_table *t, double bytes)
{
	size_t lo = 0, hi = t->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (t->bytes[mid] < bytes)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

int graph_bw_table_load(struct graph_bw_table *t, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[4096], *field[64];
	int c_bytes = -1, c_bus = -1, c_ranks = -1, c_rank = -1, c_mean = -1;
	size_t alloc = 0, alloc2 = 0, alloc3 = 0, lineno = 0;
	bool all_rows = false;   /* bench allreduce's rows of every rank at once ("all"): those alone */

	memset(t, 0, sizeof(*t));
	if (!f)
		return error("cannot open '%s': %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		size_t n = csv_split(line, field, 64);
		double bytes, bus;
		char *e1, *e2;

		lineno++;
		if (c_bytes < 0) {
			for (size_t i = 0; i < n; i++) {
				if (!strcasecmp(field[i], "Bytes") || !strcasecmp(field[i], "Size (B)") ||
				    !strcasecmp(field[i], "size_bytes"))
					c_bytes = (int)i;
				else if (!strncasecmp(field[i], "Bus BW", 6) || !strcasecmp(field[i], "busbw_gbs") ||
					 !strcasecmp(field[i], "Busbw (GB/s)"))
					c_bus = (int)i;   /* bench allreduce's, or comm's collectives of a recorded run */
				else if (!strcasecmp(field[i], "GPUs") || !strcasecmp(field[i], "Ranks"))
					c_ranks = (int)i;
				else if (!strcasecmp(field[i], "Rank"))
					c_rank = (int)i;
				else if (!strcasecmp(field[i], "mean_us") || !strcasecmp(field[i], "Mean (us)"))
					c_mean = (int)i;
			}
			if (c_bytes < 0 || c_bus < 0) {
				fclose(f);
				graph_bw_table_release(t);
				return error("'%s': not an all-reduce table: its first line names no 'Bytes' and "
					     "bus bandwidth columns (`steptrace bench allreduce --format csv` writes one, "
					     "and `steptrace comm RUN.rank*.stb --section collectives --format csv`)",
					     path);
			}
			continue;
		}
		if ((int)n <= c_bytes || (int)n <= c_bus)
			continue;
		if (strstr(field[0], "(total"))   /* comm's total of a kind, not a message */
			continue;
		if (c_rank >= 0 && (int)n > c_rank) {
			bool all = !strcmp(field[c_rank], "all");

			if (all && !all_rows) {
				all_rows = true;   /* the per-rank rows read so far give way */
				t->n = 0;
			}
			if (all_rows && !all)
				continue;
		}
		bytes = strtod(field[c_bytes], &e1);
		bus = strtod(field[c_bus], &e2);
		if (e1 == field[c_bytes] || e2 == field[c_bus] || !(bytes > 0) || !(bus > 0) || bytes > 1e15 ||
		    bus > 1e6)
			continue;
		if (ALLOC_GROW(t->bytes, t->n + 1, alloc) < 0 || ALLOC_GROW(t->busbw, t->n + 1, alloc2) < 0 ||
		    ALLOC_GROW(t->mean_us, t->n + 1, alloc3) < 0) {
			fclose(f);
			graph_bw_table_release(t);
			return -1;
		}
		t->bytes[t->n] = bytes;
		t->busbw[t->n] = bus * 1e9;
		t->mean_us[t->n] = 0;
		if (c_mean >= 0 && (int)n > c_mean) {
			double us = strtod(field[c_mean], &e1);

			if (e1 != field[c_mean] && us > 0 && us < 1e12)
				t->mean_us[t->n] = us;
		}
		if (c_ranks >= 0 && (int)n > c_ranks)
			t->ranks = (uint32_t)strtoul(field[c_ranks], NULL, 10);
		t->n++;
	}
	fclose(f);
	if (!t->n)
		return error("'%s': an all-reduce table without a row of sizes and bandwidths", path);
	if (sort_rows(t) < 0) {
		graph_bw_table_release(t);
		return -1;
	}
	t->has_times = t->ranks >= 2;
	for (size_t i = 0; i < t->n && t->has_times; i++)
		t->has_times = t->mean_us[i] > 0;
	return 0;
}

/* The table's bus bandwidth at `bytes`, interpolated in log size; outside its sizes the nearest row's. */
static double bw_table_busbw(const struct graph_bw_table *t, double bytes)
{
	size_t i;

	if (bytes <= t->bytes[0])
		return t->busbw[0];
	i = row_at_least(t, bytes);
	if (i < t->n) {
		double f = (log(bytes) - log(t->bytes[i - 1])) / (log(t->bytes[i]) - log(t->bytes[i - 1]));

		return t->busbw[i - 1] + f * (t->busbw[i] - t->busbw[i - 1]);
	}
	return t->busbw[t->n - 1];
}

double graph_bw_table_time(const struct graph_bw_table *t, double bytes, uint32_t ranks)
{
	double n = ranks, ring = 2 * (n - 1) / n, own;
	size_t i;

	if (!t->has_times)
		return ring * bytes / bw_table_busbw(t, bytes);
	own = 2.0 * (t->ranks - 1) / t->ranks;
	if (bytes <= t->bytes[0])
		return t->mean_us[0] / 1e6 * ring / own;
	i = row_at_least(t, bytes);
	if (i < t->n) {
		double f = (log(bytes) - log(t->bytes[i - 1])) / (log(t->bytes[i]) - log(t->bytes[i - 1]));

		return exp(log(t->mean_us[i - 1]) + f * (log(t->mean_us[i]) - log(t->mean_us[i - 1]))) / 1e6 * ring / own;
	}
	return (t->mean_us[t->n - 1] / 1e6 + own * (bytes - t->bytes[t->n - 1]) / t->busbw[t->n - 1]) * ring / own;
}

void graph_bw_table_release(struct graph_bw_table *t)
{
	free(t->bytes);
	free(t->busbw);
	free(t->mean_us);
	memset(t, 0, sizeof(*t));
}

/* ---- re-timing ---------------------------------------------------------- */

struct effects {
	double host, comm_bw;
	bool graph, overlap, no_sync, unrecorded;
	double *kernel;        /* per node, the kernel rules' product; NULL: none */
	int64_t *thread_delay; /* GR_UNRECORDED: per edge, a thread edge's delay less the recorder's time; NULL: none */
	int64_t *edge_add;     /* graph/rules.c: per edge, ns added to its delay; NULL: none */
	int32_t *after;        /* graph/rules.c: per node, the node whose end it starts after instead (-1); NULL: none */
	/* the typical replay's (graph_retime_typical): per edge its delay, per node its own time; NULL: the recorded */
	const int64_t *delay;
	const uint64_t *own;
};

/*
 * A kernels:GLOB rule's matcher over a graph: the glob compiled once
 * (lib/glob.h: linear in the text, whatever the pattern), and what it said
 * of each rank's strings (kernel names, ops' names, kinds, phases and
 * paths) and range paths, each asked once. A kernel matches by its name,
 * its op's, or its range's path or any tail of that path from a component
 * on (a glob of "attn" and what follows matches "step/forward/layer.3/attn/qk"):
 * every path's tails are matched at once, in one pass over the tree of
 * paths (a path's state is its parent's fed "/" and its name), the whole
 * path however long (not cut as replay_path_str cuts it for people).
 */
struct kmatch {
	struct glob *glob;
	const struct graph *g;
	uint8_t **str;                 /* per rank: per string id, 0 not asked yet, 1 no, 2 yes */
	uint8_t **path;                /* per rank: per path, 1 no, 2 yes; NULL until asked */
};

static void kmatch_release(struct kmatch *km)
{
	for (size_t r = 0; km->g && r < km->g->n_ranks; r++) {
		free(km->str ? km->str[r] : NULL);
		free(km->path ? km->path[r] : NULL);
	}
	free(km->str);
	free(km->path);
	glob_free(km->glob);
	memset(km, 0, sizeof(*km));
}

static int kmatch_init(struct kmatch *km, const struct graph *g, const char *pattern)
{
	memset(km, 0, sizeof(*km));
	km->g = g;
	km->glob = glob_compile(pattern);
	km->str = calloc(g->n_ranks + 1, sizeof(*km->str));
	km->path = calloc(g->n_ranks + 1, sizeof(*km->path));
	if (!km->glob || !km->str || !km->path) {
		kmatch_release(km);
		return error("out of memory");
	}
	return 0;
}

/* Feeds a path component, a match also beginning after each '/' in it. */
static void feed_component(const struct glob *gl, uint64_t *st, const char *s)
{
	for (const char *slash; (slash = strchr(s, '/')); s = slash + 1) {
		glob_feed(gl, st, s, (size_t)(slash - s) + 1);
		glob_restart(gl, st);
	}
	glob_feed(gl, st, s, strlen(s));
}

/* Whether rank r's string id matches; -1 when out of memory (said). */
static int kmatch_str(struct kmatch *km, uint32_t r, uint32_t id)
{
	const struct replay *rp = km->g->rp[r];

	if (!km->str[r]) {
		km->str[r] = calloc(rp->n_strings + 1, 1);
		if (!km->str[r])
			return error("out of memory");
	}
	if (id >= rp->n_strings)
		id = 0;   /* "" */
	if (!km->str[r][id])
		km->str[r][id] = glob_match(km->glob, replay_str(rp, id)) ? 2 : 1;
	return km->str[r][id] == 2;
}

/* Rank r's range paths, each matched with its tails. 0, or -1 after an error line. */
static int kmatch_paths(struct kmatch *km, uint32_t r)
{
	const struct replay *rp = km->g->rp[r];
	size_t w = glob_words(km->glob);
	uint64_t *st = malloc((rp->n_paths + 1) * w * sizeof(uint64_t));

	km->path[r] = calloc(rp->n_paths + 1, 1);
	if (!st || !km->path[r]) {
		free(st);
		return error("out of memory");
	}
	for (size_t p = 0; p < rp->n_paths; p++) {
		const struct replay_path *x = &rp->paths[p];
		uint64_t *s = st + p * w;

		if (x->parent >= 0 && (size_t)x->parent < p) {
			memcpy(s, st + (size_t)x->parent * w, w * sizeof(uint64_t));
			glob_feed(km->glob, s, "/", 1);
			glob_restart(km->glob, s);
		} else {
			glob_start(km->glob, s);
		}
		feed_component(km->glob, s, replay_str(rp, x->name));
		km->path[r][p] = glob_accepts(km->glob, s) ? 2 : 1;
	}
	free(st);
	return 0;
}

/* Whether the kernel of node n matches; -1 after an error line. */
static int kernel_matches(struct kmatch *km, const struct graph_node *n)
{
	const struct replay *rp = km->g->rp[n->rank];
	const struct replay_activity *a = &rp->activities[n->index];
	const struct replay_op *op = replay_op(rp, a->op);
	int m = kmatch_str(km, n->rank, a->name);

	if (m)
		return m;
	if (op) {
		const uint32_t ids[] = { op->kind, op->name, op->phase, op->path };

		for (size_t i = 0; i < sizeof(ids) / sizeof(ids[0]); i++)
			if ((m = kmatch_str(km, n->rank, ids[i])))
				return m;
	}
	if (a->range >= 0 && (size_t)a->range < rp->n_ranges) {
		uint32_t p = rp->ranges[a->range].path;

		if (!km->path[n->rank] && kmatch_paths(km, n->rank) < 0)
			return -1;
		return p < rp->n_paths && km->path[n->rank][p] == 2;
	}
	return 0;
}

/* ---- contention -------------------------------------------------------- */

/* A collective's time on its rank's device. */
struct busy {
	uint32_t rank;
	uint64_t start, end;           /* end: the latest end of it and those before it on its rank */
};

/* A kernel, keyed by what makes two launches the same work. */
struct twin {
	uint32_t rank, name, grid[3];
	uint8_t beside;                /* started while a collective ran */
	uint64_t own;
	uint32_t node;
};

static int cmp_busy(const void *x, const void *y)
{
	const struct busy *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	return a->start < b->start ? -1 : a->start > b->start;
}

static int cmp_twin(const void *x, const void *y)
{
	const struct twin *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->name != b->name)
		return a->name < b->name ? -1 : 1;
	for (int k = 0; k < 3; k++)
		if (a->grid[k] != b->grid[k])
			return a->grid[k] < b->grid[k] ? -1 : 1;
	if (a->beside != b->beside)
		return a->beside < b->beside ? -1 : 1;
	return a->own < b->own ? -1 : a->own > b->own;
}

static bool same_twin(const struct twin *a, const struct twin *b)
{
	return a->rank == b->rank && a->name == b->name && !memcmp(a->grid, b->grid, sizeof(a->grid));
}

/* Whether a collective of `rank` ran at t: busy[] sorted by rank and start, ends running maxima. */
static bool busy_at(const struct busy *busy, size_t n, uint32_t rank, uint64_t t)
{
	size_t lo = 0, hi = n;

	/* the last entry of rank with start <= t */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (busy[mid].rank < rank || (busy[mid].rank == rank && busy[mid].start <= t))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && busy[lo - 1].rank == rank && busy[lo - 1].end > t;
}

/* The n collectives' times, by rank and start, each end the latest so far on its rank (busy_at); NULL: no memory. */
static struct busy *busy_build(const struct graph *g, size_t n)
{
	struct busy *busy = malloc((n + 1) * sizeof(*busy));
	size_t k = 0;

	if (!busy)
		return NULL;
	for (size_t i = 0; i < g->n_nodes && k < n; i++) {
		const struct graph_node *x = &g->nodes[i];

		if (x->kind == GN_GPU && x->work == GW_COMM)
			busy[k++] = (struct busy){ x->rank, x->start, x->end };
	}
	qsort(busy, k, sizeof(*busy), cmp_busy);
	for (size_t i = 1; i < k; i++)
		if (busy[i].rank == busy[i - 1].rank && busy[i - 1].end > busy[i].end)
			busy[i].end = busy[i - 1].end;
	return busy;
}

long graph_contention(const struct graph *g, double *factor)
{
	struct busy *busy = NULL;
	struct twin *tw = NULL;
	size_t n_busy = 0, n_tw = 0;
	long beside = 0;

	for (size_t i = 0; i < g->n_nodes; i++) {
		factor[i] = 1;
		n_busy += g->nodes[i].kind == GN_GPU && g->nodes[i].work == GW_COMM;
		n_tw += g->nodes[i].kind == GN_GPU && g->nodes[i].work == GW_KERNEL;
	}
	if (!n_busy || !n_tw)
		return 0;
	busy = busy_build(g, n_busy);
	tw = malloc(n_tw * sizeof(*tw));
	if (!busy || !tw) {
		free(busy);
		free(tw);
		return error("out of memory");
	}
	n_tw = 0;
	for (size_t i = 0; i < g->n_nodes; i++) {
		const struct graph_node *x = &g->nodes[i];
		const struct replay *rp;
		const struct replay_activity *a;
		struct twin *t;

		if (x->kind != GN_GPU || x->work != GW_KERNEL)
			continue;
		rp = g->rp[x->rank];
		a = &rp->activities[x->index];
		t = &tw[n_tw++];
		memset(t, 0, sizeof(*t));
		t->rank = x->rank;
		t->name = a->name;
		if (a->detail < rp->n_kernel_cfg)
			memcpy(t->grid, rp->kernel_cfg[a->detail].grid, sizeof(t->grid));
		t->beside = busy_at(busy, n_busy, x->rank, x->start);
		t->own = x->own;
		t->node = (uint32_t)i;
		beside += t->beside;
	}
	qsort(tw, n_tw, sizeof(*tw), cmp_twin);
	for (size_t i = 0, j; i < n_tw; i = j) {
		size_t alone = 0;
		uint64_t typical;

		for (j = i; j < n_tw && same_twin(&tw[i], &tw[j]); j++)
			alone += !tw[j].beside;
		if (!alone || alone == j - i)
			continue;
		typical = tw[i + (alone - 1) / 2].own;   /* the lower median: alone ones sort first, by own */
		for (size_t k = i + alone; k < j; k++)
			if (tw[k].own > typical)
				factor[tw[k].node] = (double)typical / (double)tw[k].own;
	}
	free(busy);
	free(tw);
	return beside;
}

static double *kernel_factors(struct effects *fx, const struct graph *g)
{
	if (!fx->kernel) {
		fx->kernel = malloc((g->n_nodes + 1) * sizeof(double));
		if (!fx->kernel) {
			error("out of memory");
			return NULL;
		}
		for (size_t k = 0; k < g->n_nodes; k++)
			fx->kernel[k] = 1;
	}
	return fx->kernel;
}

static int effects_init(struct effects *fx, const struct graph *g, const struct graph_rule *rules, size_t n)
{
	bool fused = false;   /* fuse=elementwise among this prediction's rules (precision=bf16 reads it) */

	for (size_t i = 0; i < n; i++)
		fused |= rules[i].kind == GR_FUSE;
	memset(fx, 0, sizeof(*fx));
	fx->host = 1;
	fx->comm_bw = 1;
	for (size_t i = 0; i < n; i++) {
		switch (rules[i].kind) {
		case GR_HOST: fx->host *= rules[i].factor; break;
		case GR_COMM_BW: fx->comm_bw *= rules[i].factor; break;
		case GR_GRAPH: fx->graph = true; break;
		case GR_COMM_OVERLAP: fx->overlap = true; break;
		case GR_NO_SYNC: fx->no_sync = true; break;
		case GR_UNRECORDED: fx->unrecorded = true; break;
		case GR_NO_CONTENTION: {
			double *f = malloc((g->n_nodes + 1) * sizeof(double));

			if (!f)
				return error("out of memory");
			if (!kernel_factors(fx, g) || graph_contention(g, f) < 0) {
				free(f);
				return -1;
			}
			for (size_t k = 0; k < g->n_nodes; k++)
				fx->kernel[k] *= f[k];
			free(f);
			break;
		}
		case GR_KERNELS: {
			struct kmatch km = { 0 };

			if (!kernel_factors(fx, g) || (rules[i].pattern && kmatch_init(&km, g, rules[i].pattern) < 0))
				return -1;
			for (size_t k = 0; k < g->n_nodes; k++) {
				const struct graph_node *x = &g->nodes[k];
				int m;

				if (x->kind != GN_GPU)
					continue;
				m = rules[i].pattern ? kernel_matches(&km, x) : x->end - x->start < rules[i].below;
				if (m < 0) {
					kmatch_release(&km);
					return -1;
				}
				if (m)
					fx->kernel[k] *= rules[i].factor;
			}
			kmatch_release(&km);
			break;
		}
		default:
			if (graph_rules_effects(g, &rules[i], fused, &fx->kernel, &fx->edge_add, &fx->after) < 0)
				return -1;
			break;
		}
	}
	/* precision=bf16's casts of the weights: time added after every factor, folded beside fuse=elementwise */
	for (size_t i = 0; i < n; i++)
		if (rules[i].kind == GR_PRECISION) {
			if (graph_rules_casts(g, &rules[i], fused, &fx->kernel, &fx->edge_add) < 0)
				return -1;
			break;
		}
	return 0;
}

static uint64_t scaled(uint64_t v, double k)
{
	double x = (double)v * k;

	return x <= 0 ? 0 : x >= 1.8e19 ? UINT64_MAX / 2 : (uint64_t)x;
}

static int64_t edge_delay(const struct graph *g, const struct effects *fx, const struct graph_edge *e)
{
	int64_t base = fx->delay ? fx->delay[e - g->edges] : e->delay;

	switch (e->kind) {
	case GE_THREAD: {
		int64_t d = base;

		if (fx->thread_delay && fx->delay && e->delay > 0 && base > 0)   /* the recorder's share of it out */
			d = (int64_t)((double)base * (double)fx->thread_delay[e - g->edges] / (double)e->delay);
		else if (fx->thread_delay)
			d = fx->thread_delay[e - g->edges];

		/* a negative delay (calls that overlap) is no host work: no rule lengthens it */
		if (d <= 0)
			return d;
		return fx->graph ? 0 : (int64_t)scaled((uint64_t)d, fx->host);
	}
	case GE_LAUNCH:
		return fx->graph && base > g->typical[GE_LAUNCH] ? g->typical[GE_LAUNCH] : base;
	case GE_COLL:
		return fx->overlap ? 0 : base > 0 ? (int64_t)scaled((uint64_t)base, 1 / fx->comm_bw) : base;
	default:
		return base;
	}
}

static uint64_t own_time(const struct graph *g, const struct effects *fx, size_t i)
{
	const struct graph_node *n = &g->nodes[i];
	uint64_t own = fx->own ? fx->own[i] : n->own;

	if (n->kind == GN_COLL)
		return 0;
	if (n->kind == GN_API)
		return fx->graph && !n->sync ? 0 : scaled(own, fx->host * (fx->kernel ? fx->kernel[i] : 1));
	if (n->work == GW_COMM) {
		if (fx->overlap)
			return 0;
		return scaled(own, (fx->kernel ? fx->kernel[i] : 1) / fx->comm_bw);
	}
	return fx->kernel ? scaled(own, fx->kernel[i]) : own;
}

/*
 * A node gated by another's end (ranks=N: the optimizer after the last
 * gradients' all-reduce): it starts no earlier than end[anchor] + extra.
 */
struct gate {
	int32_t anchor;
	uint64_t extra;
};

/*
 * A collective's meeting point as re-timed: the rank that arrives last (its
 * kernel's node) and the start of the last of the others (graph.h, GN_COLL).
 */
struct meet {
	int32_t last;
	uint64_t others;               /* UINT64_MAX: no other rank */
};

static void retime_pass(const struct graph *g, const struct effects *fx, const struct gate *gate,
			struct meet *meet, uint64_t *start, uint64_t *end)
{
	size_t first_coll = g->n_nodes - g->n_colls;

	for (size_t i = 0; i < g->n_nodes; i++) {
		start[i] = g->nodes[i].start;
		end[i] = g->nodes[i].end;
	}
	for (size_t k = 0; k < 2 * g->n_nodes; k++) {
		uint32_t v = g->order[k];
		size_t i = v / 2;
		const struct graph_node *n = &g->nodes[i];
		struct meet *m = n->kind == GN_COLL && !(v & 1) ? &meet[i - first_coll] : NULL;
		const int32_t *moved = fx->after && !(v & 1) && fx->after[i] >= 0 ? fx->after : NULL;
		bool any = false, had = false;
		uint64_t t = 0;

		if (m)
			*m = (struct meet){ -1, UINT64_MAX };
		if (n->start < g->pin)
			continue;   /* before the re-timed window: as recorded (set above) */
		if (moved) {   /* its launch and waits replaced by the end of the node it now follows */
			t = graph_add(end[moved[i]], g->typical[GE_WAIT] > 0 ? g->typical[GE_WAIT] : 0);
			any = had = true;
		}
		for (uint32_t j = 0; j < n->n_in; j++) {
			const struct graph_edge *e = &g->edges[g->in_edges[n->in + j]];
			uint64_t src, at;

			if (e->to_end != (v & 1))
				continue;
			had = true;
			if (moved && (e->kind == GE_LAUNCH || e->kind == GE_WAIT))
				continue;
			if (e->kind == GE_SYNC && fx->no_sync)
				continue;
			if (fx->overlap && e->to_end && e->kind == GE_COLL)
				continue;
			if (e->to_end && e->kind == GE_COLL && g->nodes[e->from].kind == GN_COLL) {
				/* the others' last start: a rank's own start is its own duration's */
				const struct meet *h = &meet[e->from - (int32_t)first_coll];

				src = h->last == e->to ? h->others : start[e->from];
				if (src == UINT64_MAX)
					continue;
			} else {
				src = e->kind == GE_LAUNCH || e->kind == GE_COLL ? start[e->from] : end[e->from];
			}
			at = graph_add(src, graph_rules_delay(edge_delay(g, fx, e), fx->edge_add, (size_t)(e - g->edges)));
			if (m && (m->last < 0 || at > t)) {
				m->others = m->last < 0 ? UINT64_MAX : t;
				m->last = e->from;
			} else if (m && (m->others == UINT64_MAX || at > m->others)) {
				m->others = at;
			}
			if (!any || at > t)
				t = at;
			any = true;
		}
		if (!(v & 1)) {
			/*
			 * A node without a start edge keeps its recorded start; one
			 * whose every start edge a rule removed starts with the window
			 * (the edge's removal may only move it earlier). None starts
			 * before the window: what ran before it is as recorded.
			 */
			start[i] = any ? t : had ? g->pin : n->start;
			if (start[i] < g->pin)
				start[i] = g->pin;
			if (gate && gate[i].anchor >= 0 && end[gate[i].anchor] + gate[i].extra > start[i])
				start[i] = end[gate[i].anchor] + gate[i].extra;
		} else {
			uint64_t own = start[i] + own_time(g, fx, i);

			end[i] = any && t > own ? t : own;
		}
	}
}

/*
 * GR_RANKS: each step's gradients all-reduced in buckets over `ranks` GPUs,
 * on a stream of their own, a bucket once the backward has done its share
 * of its GPU time; the optimizer's work (else all after the backward) waits for the last:
 * their gates.
 */
static int ranks_floor(const struct graph *g, const struct graph_rule *rule, const struct graph_ranks_model *rm,
		       const uint64_t *start, const uint64_t *end, struct gate *gate)
{
	const struct replay *rp = g->rp[0];
	uint8_t *path_phase = malloc(rp->n_paths + 1);
	uint32_t *first = calloc(rp->n_steps + 2, sizeof(uint32_t)), *acts = malloc((rp->n_activities + 1) * sizeof(uint32_t));
	uint64_t bucket = rm->bucket_bytes && rm->bucket_bytes < rm->grad_bytes ? rm->bucket_bytes : rm->grad_bytes;
	size_t n_buckets = bucket ? (size_t)((rm->grad_bytes + bucket - 1) / bucket) : 0;
	/* a full bucket's all-reduce, and the last's (what is left of the gradients) */
	uint64_t t_full = bucket ? (uint64_t)(graph_bw_table_time(rm->table, (double)bucket, rule->ranks) * 1e9) : 0;
	uint64_t t_last = bucket ? (uint64_t)(graph_bw_table_time(rm->table, (double)(rm->grad_bytes -
					       (uint64_t)(n_buckets - 1) * bucket), rule->ranks) * 1e9) : 0;

	if (!path_phase || !first || !acts) {
		free(path_phase);
		free(first);
		free(acts);
		return error("out of memory");
	}
	replay_path_phases(rp, path_phase);
	/* each step's activities, in start order (a counting sort by step) */
	for (size_t i = 0; i < rp->n_activities; i++)
		if (rp->activities[i].step >= 0)
			first[rp->activities[i].step + 1]++;
	for (size_t s = 0; s < rp->n_steps; s++)
		first[s + 1] += first[s];
	for (size_t i = 0; i < rp->n_activities; i++)
		if (rp->activities[i].step >= 0)
			acts[first[rp->activities[i].step]++] = (uint32_t)i;
	for (size_t s = rp->n_steps; s > 0; s--)
		first[s] = first[s - 1];
	first[0] = 0;
	for (size_t s = 0; s < rp->n_steps; s++) {
		uint64_t busy = 0, done = 0, comm_end = 0, last_end = 0, opt_start = UINT64_MAX;
		int32_t last = -1;
		size_t b = 0;

		/* the backward: its work before the optimizer's (a zero_grad inside it may run later) */
		for (uint32_t j = first[s]; j < first[s + 1]; j++) {
			int32_t k = g->act_node[0][acts[j]];

			if (graph_activity_phase(rp, path_phase, &rp->activities[acts[j]]) == ST_PHASE_OPTIMIZER &&
			    start[k] < opt_start)
				opt_start = start[k];
		}
		for (uint32_t j = first[s]; j < first[s + 1]; j++) {
			int32_t k = g->act_node[0][acts[j]];

			if (graph_activity_phase(rp, path_phase, &rp->activities[acts[j]]) != ST_PHASE_BACKWARD ||
			    start[k] >= opt_start)
				continue;
			busy += end[k] - start[k];
			if (end[k] > last_end) {
				last_end = end[k];
				last = k;
			}
		}
		if (!busy || !n_buckets)
			continue;
		for (uint32_t j = first[s]; j < first[s + 1] && b < n_buckets; j++) {
			int32_t k = g->act_node[0][acts[j]];
			size_t to;

			if (graph_activity_phase(rp, path_phase, &rp->activities[acts[j]]) != ST_PHASE_BACKWARD ||
			    start[k] >= opt_start)
				continue;
			done += end[k] - start[k];
			/*
			 * the buckets this kernel completes, b .. to: bucket i is ready once the
			 * backward's done share reaches (i + 1) / n_buckets of its time; all but
			 * the last are of one size, so they cost a multiplication, not a loop
			 */
			to = (size_t)fmin((double)n_buckets, floor((double)done * (double)n_buckets / (double)busy));
			while (to > b && !((double)done * (double)n_buckets >= (double)to * (double)busy))
				to--;
			while (to < n_buckets && (double)done * (double)n_buckets >= (double)(to + 1) * (double)busy)
				to++;
			if (to == b)
				continue;
			{
				uint64_t ready = rm->bucket_bytes ? end[k] : last_end;
				size_t full = to < n_buckets ? to - b : to - b - 1;   /* the last bucket may be smaller */

				comm_end = comm_end > ready ? comm_end : ready;
				if (!rm->bucket_bytes && rm->tensors) {   /* naive: one bucket, each tensor on its own */
					for (size_t x = 0; x < rm->n_tensors; x++)
						comm_end += (uint64_t)(graph_bw_table_time(rm->table, (double)rm->tensors[x],
											    rule->ranks) * 1e9);
				} else {
					comm_end += (uint64_t)full * t_full;
					if (to == n_buckets)
						comm_end += t_last;
				}
				b = to;
			}
		}
		/* the optimizer's work (else all after the backward) waits for the last bucket */
		for (uint32_t j = first[s]; j < first[s + 1]; j++) {
			int32_t k = g->act_node[0][acts[j]];

			int phase = graph_activity_phase(rp, path_phase, &rp->activities[acts[j]]);

			if (opt_start != UINT64_MAX ? phase == ST_PHASE_OPTIMIZER
						    : start[k] >= last_end && phase != ST_PHASE_BACKWARD)
				gate[k] = (struct gate){ last, comm_end > last_end ? comm_end - last_end : 0 };
		}
	}
	free(path_phase);
	free(first);
	free(acts);
	return 0;
}

/*
 * ranks=N's contention and host cost per call (graph_rules_ranks), from
 * the kernels' durations under the rules among `rules` that change the
 * work alone: no rule that only takes time out moves them (monotone).
 */
static int ranks_effects(const struct graph *g, const struct graph_rule *rules, size_t n,
			 const struct graph_ranks_model *rm, const struct graph_rule *ranks, const uint64_t *base_own,
			 struct effects *fx)
{
	struct graph_rule *work = malloc((n + 1) * sizeof(*work));
	struct effects wx;
	size_t nw = 0;
	int ret;

	if (!work)
		return error("out of memory");
	for (size_t i = 0; i < n; i++)
		if (rules[i].kind == GR_PRECISION || rules[i].kind == GR_BATCH || rules[i].kind == GR_FUSE ||
		    rules[i].kind == GR_DATA || rules[i].kind == GR_BUCKET)
			work[nw++] = rules[i];
	ret = effects_init(&wx, g, work, nw);
	if (ret == 0)
		ret = graph_rules_ranks(g, rm, graph_bw_table_time(rm->table, (double)(rm->bucket_bytes &&
					rm->bucket_bytes < rm->grad_bytes ? rm->bucket_bytes : rm->grad_bytes),
					ranks->ranks) * 1e9, base_own, wx.kernel, &fx->kernel, &fx->edge_add);
	free(wx.kernel);
	free(wx.edge_add);
	free(wx.after);
	free(work);
	return ret;
}

static int retime(const struct graph *g, const struct graph_rule *rules, size_t n, const struct graph_ranks_model *rm,
		  const int64_t *base_delay, const uint64_t *base_own, struct graph_times *t)
{
	struct effects fx;
	const struct graph_rule *ranks = NULL;
	struct gate *gate = NULL;
	struct meet *meet = NULL;
	int ret = -1;

	memset(t, 0, sizeof(*t));
	for (size_t i = 0; i < n; i++)
		if (rules[i].kind == GR_RANKS)
			ranks = &rules[i];
	if (ranks && (!rm || !rm->table || !rm->grad_bytes || g->n_ranks != 1))
		return error("--what-if %s: needs a single-GPU run with its gradients' size and an all-reduce table "
			     "(--allreduce FILE)", ranks->text);
	if (ranks && (rm->grad_bytes > GRAPH_RANKS_MAX_BYTES ||
		      (rm->bucket_bytes && rm->grad_bytes / rm->bucket_bytes >= GRAPH_RANKS_MAX_BUCKETS)))
		return error("--what-if %s: %" PRIu64 " bytes of gradients in buckets of %" PRIu64 " bytes: past what "
			     "a run holds", ranks->text, rm->grad_bytes, rm->bucket_bytes);
	if (effects_init(&fx, g, rules, n) < 0) {
		free(fx.kernel);
		free(fx.edge_add);
		free(fx.after);
		return -1;
	}
	fx.delay = base_delay;
	fx.own = base_own;
	if (fx.unrecorded) {
		fx.thread_delay = malloc((g->n_edges + 1) * sizeof(int64_t));
		if (!fx.thread_delay ||
		    graph_unrecorded_build(g, &t->host_scale, fx.thread_delay, &t->recorder_ns, &t->taken_ns) < 0) {
			if (!fx.thread_delay)
				error("out of memory");
			free(fx.kernel);
			free(fx.thread_delay);
			free(fx.edge_add);
			free(fx.after);
			return -1;
		}
	}
	t->start = malloc((g->n_nodes + 1) * sizeof(uint64_t));
	t->end = malloc((g->n_nodes + 1) * sizeof(uint64_t));
	if (!t->start || !t->end) {
		error("out of memory");
		goto out;
	}
	meet = malloc((g->n_colls + 1) * sizeof(*meet));
	if (!meet) {
		error("out of memory");
		goto out;
	}
	/*
	 * ranks=N: the backward slowed and the host's calls added first, then
	 * the all-reduces' floor from those times: the exposed all-reduces
	 * after the backward as it then runs (a floor from the times before
	 * would add them again after a backward the host delays)
	 */
	if (ranks && ranks_effects(g, rules, n, rm, ranks, base_own, &fx) < 0)
		goto out;
	retime_pass(g, &fx, NULL, meet, t->start, t->end);
	if (ranks) {
		gate = malloc((g->n_nodes + 1) * sizeof(*gate));
		if (!gate) {
			error("out of memory");
			goto out;
		}
		for (size_t i = 0; i < g->n_nodes; i++)
			gate[i].anchor = -1;
		if (ranks_floor(g, ranks, rm, t->start, t->end, gate) < 0)
			goto out;
		retime_pass(g, &fx, gate, meet, t->start, t->end);
	}
	ret = 0;
out:
	free(fx.kernel);
	free(fx.thread_delay);
	free(fx.edge_add);
	free(fx.after);
	free(gate);
	free(meet);
	if (ret < 0)
		graph_times_release(t);
	return ret;
}

int graph_retime(const struct graph *g, const struct graph_rule *rules, size_t n,
		 const struct graph_ranks_model *rm, struct graph_times *t)
{
	return retime(g, rules, n, rm, NULL, NULL, t);
}

/* ---- the typical replay ------------------------------------------------- */

/*
 * A duration or delay of the typical replay, under the hash of its key:
 * what makes two of them the same work (item_hash). 24 bytes an item, for
 * a graph of millions of nodes.
 */
struct keyed {
	uint64_t h;
	int64_t v;
	uint32_t at;                   /* a node (own time), or n_nodes + an edge (delay) */
	int32_t step;                  /* its step (-1 none); once counted, its place among its key's in the step */
};

enum { KEY_CALL = 1, KEY_HOST, KEY_KERNEL, KEY_COPY, KEY_XFER, KEY_GAP };

static int cmp_keyed(const void *x, const void *y)
{
	const struct keyed *a = x, *b = y;

	if (a->h != b->h)
		return a->h < b->h ? -1 : 1;
	return a->v < b->v ? -1 : a->v > b->v;
}

/* By key, then step, then place in the graph (nodes and edges are in time order there): to count places. */
static int cmp_place(const void *x, const void *y)
{
	const struct keyed *a = x, *b = y;

	if (a->h != b->h)
		return a->h < b->h ? -1 : 1;
	if (a->step != b->step)
		return a->step < b->step ? -1 : 1;
	return a->at < b->at ? -1 : a->at > b->at;
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + UINT64_C(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2);
	h ^= h >> 31;
	h *= UINT64_C(0xbf58476d1ce4e5b9);
	return h ^ (h >> 29);
}

/* A node's name and range path (a call's range's; UINT32_MAX none). */
static void name_path(const struct graph *g, int32_t i, uint32_t *name, uint32_t *path)
{
	const struct graph_node *n = &g->nodes[i];
	const struct replay *rp;
	int32_t range;

	*name = 0;
	*path = UINT32_MAX;
	if (n->kind == GN_COLL)
		return;
	rp = g->rp[n->rank];
	if (n->kind == GN_API) {
		*name = rp->apis[n->index].name;
		range = rp->apis[n->index].range;
	} else {
		*name = rp->activities[n->index].name;
		range = rp->activities[n->index].range;
	}
	if (range >= 0 && (size_t)range < rp->n_ranges)
		*path = rp->ranges[range].path;
}

/* A launch edge from the call that launched its work (else an anchor: the latest call before it). */
static bool true_launch(const struct graph *g, const struct graph_edge *e)
{
	const struct graph_node *f = &g->nodes[e->from], *t = &g->nodes[e->to];

	return f->kind == GN_API && t->kind == GN_GPU && f->rank == t->rank &&
	       g->rp[t->rank]->activities[t->index].api == f->index;
}

/* What item `at` is (KEY_...), 0: no duration of its own (a latency at its kind's typical, or nothing). */
static int item_kind(const struct graph *g, uint32_t at)
{
	const struct graph_edge *e;

	if (at < g->n_nodes) {
		const struct graph_node *n = &g->nodes[at];

		return n->kind == GN_COLL ? 0 : n->kind == GN_API ? KEY_CALL : n->work == GW_COPY ? KEY_COPY : KEY_KERNEL;
	}
	e = &g->edges[at - g->n_nodes];
	switch (e->kind) {
	case GE_THREAD: return KEY_HOST;
	case GE_LAUNCH: return true_launch(g, e) ? 0 : KEY_HOST;
	case GE_COLL: return e->to_end ? KEY_XFER : 0;
	case GE_STREAM: return g->nodes[e->from].kind == GN_GPU ? KEY_GAP : 0;
	default: return 0;
	}
}

/* The node an item is of: itself, or its edge's target. */
static int32_t item_node(const struct graph *g, uint32_t at)
{
	return at < g->n_nodes ? (int32_t)at : g->edges[at - g->n_nodes].to;
}

/* Whether an item is also keyed by its place in its step: the host's, and collectives (their buckets). */
static bool item_placed(const struct graph *g, uint32_t at, int kind)
{
	return kind == KEY_CALL || kind == KEY_HOST ||
	       ((kind == KEY_KERNEL || kind == KEY_XFER) && g->nodes[item_node(g, at)].work == GW_COMM);
}

/*
 * The hash of an item's key at `level` (its place in the step is mixed in
 * by the caller at level 0): the host's calls by their thread, names and
 * range paths (level 2: without the paths); a kernel by its name, grid, block and
 * whether a collective ran beside it (level 2: its name); a copy by its
 * name, kind and bytes (level 2: without its bytes); a collective's
 * transfer as its kernel; a stream's gap by its kernels' names. A kernel's
 * and a transfer's finest key (level 0) holds its range path too.
 */
static uint64_t item_hash(const struct graph *g, uint32_t at, int kind, int level, const struct busy *busy,
			  size_t n_busy)
{
	int32_t i = item_node(g, at);
	const struct graph_node *n = &g->nodes[i];
	uint32_t name, path, fn = 0, fp = UINT32_MAX;
	uint64_t h = mix((uint64_t)kind, n->rank);

	name_path(g, i, &name, &path);
	if (at >= g->n_nodes) {
		const struct graph_edge *e = &g->edges[at - g->n_nodes];

		name_path(g, e->from, &fn, &fp);
		h = mix(mix(h, e->kind), fn);
	}
	h = mix(h, name);
	if (kind == KEY_CALL || kind == KEY_HOST) {   /* a thread's work is its own: by its thread too */
		if (n->kind == GN_API)
			h = mix(h, g->rp[n->rank]->apis[n->index].thread);
		return level < 2 ? mix(mix(h, path), fp) : h;
	}
	if ((kind == KEY_KERNEL || kind == KEY_XFER) && level < 2) {
		const struct replay *rp = g->rp[n->rank];
		const struct replay_activity *a = &rp->activities[n->index];

		if (a->detail < rp->n_kernel_cfg) {
			const struct replay_kernel_cfg *c = &rp->kernel_cfg[a->detail];

			for (int k = 0; k < 3; k++)
				h = mix(mix(h, c->grid[k]), c->block[k]);
		}
		if (kind == KEY_KERNEL && n->work == GW_KERNEL && busy)   /* beside a collective: slower */
			h = mix(h, busy_at(busy, n_busy, n->rank, n->start));
		/*
		 * and by its op's range path: one kernel at one grid can be work
		 * of other sizes (a product's K is no part of its grid: the FP32
		 * step's dW products of qkv_proj and w1w3 share cuBLAS's Kernel2
		 * at one grid, 45 and 162 us)
		 */
		if (level == 0)
			h = mix(h, path);
	}
	if (kind == KEY_COPY) {
		const struct replay_activity *a = &g->rp[n->rank]->activities[n->index];

		h = mix(h, a->kind);
		if (level < 2)
			h = mix(h, a->bytes);
	}
	return h;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

/* The lower median of the deciding delays of edges of `kind` (to_end ones when `end`); `dflt` when none. */
static int64_t deciding_median(const struct graph *g, int kind, bool end, int64_t dflt, int64_t *v)
{
	size_t n = 0;

	for (size_t i = 0; i < g->n_nodes; i++) {
		int32_t b = end ? g->nodes[i].bind_end : g->nodes[i].bind;

		if (b >= 0 && g->edges[b].kind == kind && (kind != GE_LAUNCH || true_launch(g, &g->edges[b])))
			v[n++] = g->edges[b].delay;
	}
	if (!n)
		return dflt;
	qsort(v, n, sizeof(*v), cmp_i64);
	return v[(n - 1) / 2];
}

/* The median of v[i .. j) (sorted): of two middle ones, their mean. */
static int64_t median_of(const struct keyed *v, size_t i, size_t j)
{
	int64_t a = v[i + (j - i - 1) / 2].v, b = v[i + (j - i) / 2].v;

	return a / 2 + b / 2 + (a % 2 + b % 2) / 2;
}

/* x ns times f, within [0, INT64_MAX / 4] (f from hostile times may be huge). */
static int64_t scaled_ns(int64_t x, double f)
{
	double y = (double)x * f;

	return y > 0 ? (y < (double)(INT64_MAX / 4) ? (int64_t)llround(y) : INT64_MAX / 4) : 0;
}

/* An item's step (-1 none): a call's by its start, GPU work's its own. */
static int32_t item_step(const struct graph *g, uint32_t at)
{
	const struct graph_node *x = &g->nodes[item_node(g, at)];
	const struct replay *rp = g->rp[x->rank];

	return x->kind == GN_API ? replay_step_at(rp, rp->apis[x->index].start) : rp->activities[x->index].step;
}

/*
 * The host's work of one kind (item_hash's coarsest key: a thread's calls,
 * or its work between two calls, by the calls' names) adds up over a
 * step: its typical total per step is the median over the steps of what
 * each step's instances took together, and the medians of its instances'
 * finer keys only say where in the step it goes. Each step's instances
 * scaled so that they add up to that total: a right-skewed piece's median
 * is below its mean, and the sum of many is about the sum of their means,
 * not of their medians; an instance counted at a place of another step's
 * (a step with one call more or less than the others) takes no time twice.
 * kv: the nk items (their h, v, step rewritten); v: scratch, an entry per
 * step of a key (a step holds a node of its own: at most n_nodes).
 */
static void host_totals(const struct graph *g, struct keyed *kv, size_t nk, const struct busy *busy,
			size_t n_busy, int64_t *delay, uint64_t *own, int64_t *v)
{
	size_t nh = 0;

	for (size_t i = 0; i < nk; i++) {
		int kind = item_kind(g, kv[i].at);
		int32_t step = item_step(g, kv[i].at);

		if ((kind != KEY_CALL && kind != KEY_HOST) || step < 0)
			continue;
		kv[nh] = kv[i];
		kv[nh].h = item_hash(g, kv[i].at, kind, 2, busy, n_busy);
		kv[nh].step = step;
		kv[nh].v = kv[i].at < g->n_nodes ? (int64_t)g->nodes[kv[i].at].own : g->edges[kv[i].at - g->n_nodes].delay;
		nh++;
	}
	qsort(kv, nh, sizeof(*kv), cmp_place);
	for (size_t i = 0, j; i < nh; i = j) {
		size_t ns = 0;
		int64_t total;

		for (j = i + 1; j < nh && kv[j].h == kv[i].h; j++)
			;
		for (size_t a = i, b; a < j; a = b) {
			int64_t r = 0;

			for (b = a; b < j && kv[b].step == kv[a].step; b++)   /* saturating: hostile times */
				r = kv[b].v <= 0 ? r : r > INT64_MAX - kv[b].v ? INT64_MAX : r + kv[b].v;
			v[ns++] = r;
		}
		if (ns < 2)
			continue;
		qsort(v, ns, sizeof(*v), cmp_i64);
		total = v[(ns - 1) / 2] / 2 + v[ns / 2] / 2;
		for (size_t a = i, b; a < j; a = b) {
			double sum = 0, f;

			for (b = a; b < j && kv[b].step == kv[a].step; b++) {
				uint32_t at = kv[b].at;
				int64_t x = at < g->n_nodes ? (int64_t)own[at] : delay[at - g->n_nodes];

				sum += x > 0 ? (double)x : 0;
			}
			if (sum <= 0)
				continue;
			f = (double)total / sum;
			for (size_t k = a; k < b; k++) {
				uint32_t at = kv[k].at;

				if (at < g->n_nodes)
					own[at] = (uint64_t)scaled_ns((int64_t)own[at], f);
				else if (delay[at - g->n_nodes] > 0)
					delay[at - g->n_nodes] = scaled_ns(delay[at - g->n_nodes], f);
			}
		}
	}
}

/* What the typical replay takes besides one re-timing, per node and per edge (graph_retime_typical). */
#define TYPICAL_BYTES(g) (((g)->n_nodes + (g)->n_edges + 1) * (sizeof(struct keyed) + 1 + sizeof(int64_t)) + \
			  ((g)->n_nodes + 1) * sizeof(int64_t))

int graph_retime_typical(const struct graph *g, const struct graph_rule *rules, size_t n,
			 const struct graph_ranks_model *rm, struct graph_times *t, struct graph_typical *info)
{
	size_t nk = 0, n_busy = 0, bytes = TYPICAL_BYTES(g);
	struct keyed *kv = NULL;
	struct busy *busy = NULL;
	int8_t *used = NULL;
	int64_t *delay = NULL, *v = NULL;
	uint64_t *own = NULL;
	int ret = -1;

	memset(t, 0, sizeof(*t));
	memset(info, 0, sizeof(*info));
	if (!memory_budget_fits(bytes)) {
		info->skipped = bytes;
		return 0;
	}
	if (memory_budget_claim(bytes, "explain's typical replay") < 0)
		return -1;
	for (size_t i = 0; i < g->n_nodes; i++)
		n_busy += g->nodes[i].kind == GN_GPU && g->nodes[i].work == GW_COMM;
	busy = n_busy ? busy_build(g, n_busy) : NULL;
	kv = malloc((g->n_nodes + g->n_edges + 1) * sizeof(*kv));
	used = malloc(g->n_nodes + g->n_edges + 1);
	delay = malloc((g->n_edges + 1) * sizeof(*delay));
	own = malloc((g->n_nodes + 1) * sizeof(*own));
	v = malloc((g->n_nodes + 1) * sizeof(*v));
	if (!kv || !used || !delay || !own || !v || (n_busy && !busy)) {
		error("out of memory");
		goto out;
	}
	/* latencies: each kind's median over the edges that decided */
	for (int kind = 0; kind < GE_KIND_COUNT; kind++)
		info->delay[kind] = deciding_median(g, kind, false, g->typical[kind], v);
	info->sync_end = deciding_median(g, GE_SYNC, true, 0, v);
	for (size_t i = 0; i < g->n_nodes; i++)
		own[i] = g->nodes[i].own;
	for (size_t e = 0; e < g->n_edges; e++) {
		const struct graph_edge *x = &g->edges[e];

		delay[e] = x->kind == GE_SYNC ? (x->to_end ? info->sync_end : info->delay[GE_SYNC])
			 : x->kind == GE_LAUNCH && true_launch(g, x) ? info->delay[GE_LAUNCH]
			 : x->kind == GE_WAIT || x->kind == GE_STREAM ? info->delay[x->kind] : x->delay;
	}
	/*
	 * durations: each node's own time, and the host's work between calls,
	 * under their keys; over the re-timed window only (what ran before it,
	 * warm-up steps, stays as recorded and is no instance of the typical)
	 */
	for (uint32_t at = 0; at < g->n_nodes + g->n_edges; at++) {
		int32_t i = item_node(g, at);
		const struct graph_node *x = &g->nodes[i];
		int kind = item_kind(g, at);
		const struct replay *rp;

		if (!kind || x->start < g->pin)
			continue;
		rp = g->rp[x->rank];
		kv[nk] = (struct keyed){
			.h = item_hash(g, at, kind, 1, busy, n_busy),
			.v = at < g->n_nodes ? (int64_t)x->own : g->edges[at - g->n_nodes].delay,
			.at = at,
			.step = !item_placed(g, at, kind) ? -1
				: x->kind == GN_API ? replay_step_at(rp, rp->apis[x->index].start) : rp->activities[x->index].step,
		};
		nk++;
	}
	/* the k-th of a key in its step is the same work as the k-th in another step */
	qsort(kv, nk, sizeof(*kv), cmp_place);
	for (size_t i = 0, j; i < nk; i = j) {
		for (j = i + 1; j < nk && kv[j].h == kv[i].h && kv[j].step == kv[i].step; j++)
			;
		for (size_t k = i; k < j; k++)
			kv[k].step = kv[k].step < 0 ? -1 : (int32_t)(k - i);
	}
	/*
	 * Each duration at the median of its key's, where the key has two or
	 * more; else of a coarser key: without its place in the step, then
	 * without the ranges, the kernels' shapes and the copies' bytes (this
	 * last level only where three or more share it: two of a coarse key may
	 * be no kin, a host gap of 0.1 ms and one of 100). One of a kind at
	 * every level keeps its own time (counted).
	 */
	memset(used, -1, g->n_nodes + g->n_edges + 1);
	for (int level = 0; level < 3; level++) {
		for (size_t i = 0; i < nk; i++) {
			int kind = item_kind(g, kv[i].at);

			kv[i].h = item_hash(g, kv[i].at, kind, level, busy, n_busy);
			if (!level && kv[i].step >= 0)
				kv[i].h = mix(kv[i].h, (uint64_t)kv[i].step + 1);
		}
		qsort(kv, nk, sizeof(*kv), cmp_keyed);
		for (size_t i = 0, j; i < nk; i = j) {
			int64_t m;

			for (j = i + 1; j < nk && kv[j].h == kv[i].h; j++)
				;
			if (j - i < (level < 2 ? 2u : 3u))
				continue;
			m = median_of(kv, i, j);
			for (size_t k = i; k < j; k++) {
				uint32_t at = kv[k].at;

				if (used[at] >= 0)
					continue;
				used[at] = (int8_t)level;
				if (at < g->n_nodes)
					own[at] = m > 0 ? (uint64_t)m : 0;
				else
					delay[at - g->n_nodes] = m;
			}
		}
	}
	for (size_t i = 0; i < nk; i++) {
		int kind = item_kind(g, kv[i].at);

		if (kind == KEY_CALL || kind == KEY_HOST)
			info->host[used[kv[i].at] + 1]++;
		else if (kind != KEY_GAP)   /* a gap of one of a kind takes its kind's median */
			info->gpu[used[kv[i].at] + 1]++;
	}
	host_totals(g, kv, nk, busy, n_busy, delay, own, v);
	ret = retime(g, rules, n, rm, delay, own, t);
	t->between = true;
out:
	free(busy);
	free(kv);
	free(used);
	free(delay);
	free(own);
	free(v);
	memory_budget_release(bytes);
	return ret;
}

void graph_times_release(struct graph_times *t)
{
	free(t->start);
	free(t->end);
	graph_host_scale_free(t->host_scale);
	memset(t, 0, sizeof(*t));
}

uint64_t graph_instant(const struct graph *g, const struct graph_times *t, uint32_t rank, uint64_t thread,
		       uint64_t instant, double host)
{
	const struct replay *rp = g->rp[rank];
	const struct replay_thread *th = graph_thread(rp, thread);
	uint64_t at = graph_time(g, rank, instant);
	size_t lo = 0, hi;

	if (!th || !th->n_apis || !t)
		return at;
	hi = th->n_apis;
	/* the first call starting after the instant */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g->nodes[g->api_node[rank][th->apis[mid]]].start <= at)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* inside a call (calls of the runtime and the driver nest): as far into it */
	for (size_t k = lo, looked = 0; k-- > 0 && looked < 64; looked++) {
		int32_t i = g->api_node[rank][th->apis[k]];
		uint64_t into = at - g->nodes[i].start;

		if (g->nodes[i].end > at)
			return t->start[i] + (into < t->end[i] - t->start[i] ? into : t->end[i] - t->start[i]);
	}
	if (lo > 0 && lo < th->n_apis && t->between) {
		/* as far between the calls around it as it was: the work between them took its own time */
		int32_t i = g->api_node[rank][th->apis[lo - 1]], j = g->api_node[rank][th->apis[lo]];
		uint64_t a = g->nodes[i].end, b = g->nodes[j].start;

		if (b > a && at >= a && t->start[j] >= t->end[i])
			return t->end[i] + (uint64_t)((double)(at - a) / (double)(b - a) * (double)(t->start[j] - t->end[i]));
	}
	if (lo > 0) {
		int32_t i = g->api_node[rank][th->apis[lo - 1]];
		uint64_t work = t->host_scale ? (uint64_t)llround(graph_host_span(t->host_scale, g, rank, thread,
										    g->nodes[i].end, at))
					      : at - g->nodes[i].end;

		return t->end[i] + scaled(work, host);
	}
	{
		int32_t i = g->api_node[rank][th->apis[0]];
		uint64_t work = t->host_scale ? (uint64_t)llround(graph_host_span(t->host_scale, g, rank, thread, at,
										    g->nodes[i].start))
					      : g->nodes[i].start - at;
		uint64_t back = scaled(work, host);

		return t->start[i] > back ? t->start[i] - back : 0;
	}
}
