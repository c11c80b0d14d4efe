/*
 * compiled.c: see compiled.h. The tables are parsed outside the mutex,
 * their module names interned and the graph registered under it (nvtx.c's
 * R.lock, which torch.c shares); once registered a table never changes, so
 * the launch callbacks read it without the mutex. Each thread keeps the
 * region it is in and where its launches got to (thread-local: the thread
 * that pushed a region is the one that launches its kernels), and takes
 * the mutex only when a call of the region first touches a module path
 * (its op: a new execution of that module's node).
 */
#define _GNU_SOURCE
#include "record/compiled.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/hash.h"
#include "record/capture.h"
#include "record/nvtx_internal.h"

#define SITES_MAX (1u << 20)      /* kernel calls in one graph's table */
#define PATH_DEPTH_MAX 64         /* modules in one path */
#define PATH_NONE UINT32_MAX      /* not known: the region's op */
#define PATH_ROOT (UINT32_MAX - 1)   /* the region's enclosing module itself */
#define NAME_NONE UINT32_MAX      /* an extern kernel's call */
#define SITE_NONE UINT32_MAX
#define GEMM_SITE "@mm"           /* NAME of an extern matrix product's call */

/* A module path: a node of the graph's tree of paths. */
struct kpath {
	uint64_t hash;                   /* of (parent, text): first, for slots_fit */
	uint32_t parent;                 /* PATH_ROOT at the top */
	uint32_t name;                   /* the module's name, a string id once registered */
	uint32_t depth;                  /* modules from the top: 1 at the top */
	const char *text;                /* the module's name, in the graph's copy of the table */
};

/* A Triton kernel's name and its call sites. */
struct kname {
	uint64_t hash;                   /* first, for slots_fit */
	const char *text;
	uint32_t first, n;               /* its sites: by_name[first, first + n), in call order */
};

/*
 * An extern call's run: it and the extern calls right after it, up to the
 * next Triton kernel's call (their kernels come in between, by names no
 * table holds).
 */
struct krun {
	uint32_t all;                    /* the common ancestor of their paths */
	uint32_t gemm;                   /* the path of its one matrix product, when it has exactly one */
	uint32_t other;                  /* the common ancestor of the others', when it has one */
};

struct kgraph {
	uint32_t id;                     /* the region's name (string id) */
	uint32_t *site_name;             /* per site: its kernel's name, NAME_NONE for an extern call */
	uint32_t *site_path;             /* per site: its path, PATH_ROOT or PATH_NONE */
	uint8_t *site_gemm;              /* per site: an extern matrix product's call (GEMM_SITE) */
	uint32_t *next_named;            /* per site i (and n_sites): the first Triton kernel's site >= i */
	struct krun *run;                /* per extern site: its run from there on */
	uint32_t *by_name;               /* the sites grouped by name, each group in call order */
	size_t n_sites, cap_sites, cap_site_paths, cap_site_gemm;
	struct kpath *paths;
	size_t n_paths, cap_paths;
	struct kname *names;
	size_t n_names, cap_names;
	uint32_t *name_slot;             /* open addressing: name index + 1, 0 empty */
	size_t name_cap;
	char *text;                      /* the table, cut into its names in place */
};

/* The graphs registered, under R.lock (never freed: their tables are read without it). */
static struct {
	struct kgraph **g;
	size_t n, cap;
	uint32_t *slot;                  /* open addressing by graph id: index + 1, 0 empty */
	size_t slot_cap;
} reg;

/* The region the calling thread is in, and its call's progress. */
static _Thread_local struct {
	const struct kgraph *g;          /* NULL: none */
	int i;                           /* its frame on the thread's stack ... */
	uint64_t start;                  /* ... as pushed (a later frame there is another) */
	uint32_t name;
	uint32_t cursor;                 /* the site after the last Triton kernel matched */
	uint32_t last;                   /* the site the last launch matched by name, SITE_NONE */
	uint32_t parent, parent_op;      /* the enclosing module's node and op */
	int32_t pdepth;
	uint32_t domain;
	uint32_t *node, *op;             /* per path, this call's execution; 0 not yet (one buffer) */
	size_t cap;
} kc;

static pthread_key_t kc_key;         /* frees a thread's kc.node when it ends */
static pthread_once_t kc_once = PTHREAD_ONCE_INIT;

static void kc_key_make(void)
{
	pthread_key_create(&kc_key, free);
}

/* ---- tables ------------------------------------------------------------------ */

/*
 * Makes *slot (open addressing: item index + 1, 0 empty) big enough for
 * n + 1 items of `items`, each `stride` bytes that start with their
 * uint64_t hash, at most half full. -1 when out of memory.
 */
static int slots_fit(uint32_t **slot, size_t *cap, const void *items, size_t stride, size_t n)
{
	size_t ncap;
	uint32_t *h;

	if ((n + 1) * 2 <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 64;
	h = calloc(ncap, sizeof(*h));
	if (!h)
		return -1;
	for (size_t i = 0; i < n; i++) {
		uint64_t key;
		size_t j;

		memcpy(&key, (const char *)items + i * stride, sizeof(key));
		for (j = key & (ncap - 1); h[j]; j = (j + 1) & (ncap - 1))
			;
		h[j] = (uint32_t)i + 1;
	}
	free(*slot);
	*slot = h;
	*cap = ncap;
	return 0;
}

/* The index of a kernel name of g, NAME_NONE if it has none such. */
static uint32_t name_find(const struct kgraph *g, const char *text)
{
	uint64_t h;

	if (!g->name_cap)
		return NAME_NONE;
	h = hash_str(text);
	for (size_t j = h & (g->name_cap - 1); g->name_slot[j]; j = (j + 1) & (g->name_cap - 1)) {
		const struct kname *n = &g->names[g->name_slot[j] - 1];

		if (n->hash == h && !strcmp(n->text, text))
			return g->name_slot[j] - 1;
	}
	return NAME_NONE;
}

/* The index of a kernel name, added on first sight; NAME_NONE when out of memory. */
static uint32_t name_get(struct kgraph *g, const char *text)
{
	uint32_t k = name_find(g, text);
	size_t j;

	if (k != NAME_NONE)
		return k;
	if (slots_fit(&g->name_slot, &g->name_cap, g->names, sizeof(*g->names), g->n_names) < 0 ||
	    ALLOC_GROW(g->names, g->n_names + 1, g->cap_names) < 0)
		return NAME_NONE;
	g->names[g->n_names] = (struct kname){ .hash = hash_str(text), .text = text };
	for (j = g->names[g->n_names].hash & (g->name_cap - 1); g->name_slot[j]; j = (j + 1) & (g->name_cap - 1))
		;
	g->name_slot[j] = (uint32_t)g->n_names + 1;
	return (uint32_t)g->n_names++;
}

/* The path `text` below `parent`, added on first sight; PATH_NONE when out of memory. */
static uint32_t path_child(struct kgraph *g, uint32_t **slot, size_t *cap, uint32_t parent, const char *text)
{
	uint64_t h = hash_fnv1a(hash_str(text), &parent, sizeof(parent));
	size_t j;

	if (slots_fit(slot, cap, g->paths, sizeof(*g->paths), g->n_paths) < 0 ||
	    ALLOC_GROW(g->paths, g->n_paths + 1, g->cap_paths) < 0)
		return PATH_NONE;
	for (j = h & (*cap - 1); (*slot)[j]; j = (j + 1) & (*cap - 1)) {
		const struct kpath *p = &g->paths[(*slot)[j] - 1];

		if (p->hash == h && p->parent == parent && !strcmp(p->text, text))
			return (*slot)[j] - 1;
	}
	g->paths[g->n_paths] = (struct kpath){
		.hash = h, .parent = parent, .text = text,
		.depth = parent == PATH_ROOT ? 1 : g->paths[parent].depth + 1,
	};
	(*slot)[j] = (uint32_t)g->n_paths + 1;
	return (uint32_t)g->n_paths++;
}

/* A site's PATH, cut at its '/' in place: PATH_NONE when empty, malformed or too deep. */
static uint32_t path_parse(struct kgraph *g, uint32_t **slot, size_t *cap, char *text)
{
	uint32_t p = PATH_ROOT;

	if (!*text)
		return PATH_NONE;
	if (!strcmp(text, "."))
		return PATH_ROOT;
	while (p != PATH_NONE) {
		char *slash = strchr(text, '/');

		if (slash)
			*slash = '\0';
		if (!*text || (p != PATH_ROOT && g->paths[p].depth >= PATH_DEPTH_MAX))
			return PATH_NONE;
		p = path_child(g, slot, cap, p, text);
		if (!slash)
			break;
		text = slash + 1;
	}
	return p;
}

static uint32_t path_depth(const struct kgraph *g, uint32_t p)
{
	return p == PATH_ROOT ? 0 : g->paths[p].depth;
}

/* The common ancestor of two paths; one not known leaves the other. */
static uint32_t path_common(const struct kgraph *g, uint32_t a, uint32_t b)
{
	if (a == PATH_NONE)
		return b;
	if (b == PATH_NONE)
		return a;
	while (path_depth(g, a) > path_depth(g, b))
		a = g->paths[a].parent;
	while (path_depth(g, b) > path_depth(g, a))
		b = g->paths[b].parent;
	while (a != b) {
		a = g->paths[a].parent;
		b = g->paths[b].parent;
	}
	return a;
}

static void graph_free(struct kgraph *g)
{
	if (!g)
		return;
	free(g->site_name);
	free(g->site_path);
	free(g->site_gemm);
	free(g->next_named);
	free(g->run);
	free(g->by_name);
	free(g->paths);
	free(g->names);
	free(g->name_slot);
	free(g->text);
	free(g);
}

/* The sites grouped by name (each group in call order), each site's next Triton kernel, the runs. */
static int graph_index(struct kgraph *g)
{
	size_t n = g->n_sites ? g->n_sites : 1;
	uint32_t n_gemm = 0, all = PATH_NONE, gemm = PATH_NONE, other = PATH_NONE;

	g->by_name = malloc(n * sizeof(*g->by_name));
	g->run = malloc(n * sizeof(*g->run));
	g->next_named = malloc((g->n_sites + 1) * sizeof(*g->next_named));
	if (!g->by_name || !g->run || !g->next_named)
		return -1;
	for (size_t i = 0; i < g->n_sites; i++)
		if (g->site_name[i] != NAME_NONE)
			g->names[g->site_name[i]].n++;
	for (size_t k = 0, first = 0; k < g->n_names; k++) {
		g->names[k].first = (uint32_t)first;
		first += g->names[k].n;
		g->names[k].n = 0;
	}
	for (size_t i = 0; i < g->n_sites; i++) {
		struct kname *nm;

		if (g->site_name[i] == NAME_NONE)
			continue;
		nm = &g->names[g->site_name[i]];
		g->by_name[nm->first + nm->n++] = (uint32_t)i;
	}
	g->next_named[g->n_sites] = (uint32_t)g->n_sites;
	for (size_t i = g->n_sites; i-- > 0;) {   /* the runs from their ends: what follows site i in its run */
		struct krun *r = &g->run[i];

		if (g->site_name[i] != NAME_NONE) {
			g->next_named[i] = (uint32_t)i;
			all = gemm = other = PATH_NONE;
			n_gemm = 0;
			continue;
		}
		g->next_named[i] = g->next_named[i + 1];
		all = path_common(g, g->site_path[i], all);
		if (g->site_gemm[i]) {
			n_gemm++;
			gemm = g->site_path[i];
		} else {
			other = path_common(g, g->site_path[i], other);
		}
		r->all = all;
		/* one matrix product among other calls: GEMM kernels go to it, the rest to the others */
		r->gemm = n_gemm == 1 && other != PATH_NONE ? gemm : PATH_NONE;
		r->other = r->gemm != PATH_NONE ? other : PATH_NONE;
	}
	return 0;
}

/* Parses `table` into g (compiled.h has its form). -1 when malformed or out of memory. */
static int graph_parse(struct kgraph *g, const char *table)
{
	uint32_t *path_slot = NULL;
	size_t path_cap = 0;
	char *line;
	int rc = -1;

	if (!(g->text = strdup(table)))
		return -1;
	for (line = g->text; *line;) {
		char *end = strchr(line, '\n'), *tab;

		if (end)
			*end = '\0';
		tab = strchr(line, '\t');
		if (!tab || g->n_sites >= SITES_MAX)
			goto out;
		*tab = '\0';
		if (ALLOC_GROW(g->site_name, g->n_sites + 1, g->cap_sites) < 0 ||
		    ALLOC_GROW(g->site_path, g->n_sites + 1, g->cap_site_paths) < 0 ||
		    ALLOC_GROW(g->site_gemm, g->n_sites + 1, g->cap_site_gemm) < 0)
			goto out;
		g->site_gemm[g->n_sites] = !strcmp(line, GEMM_SITE);
		g->site_name[g->n_sites] = *line && *line != '@' ? name_get(g, line) : NAME_NONE;
		if (*line && *line != '@' && g->site_name[g->n_sites] == NAME_NONE)
			goto out;
		g->site_path[g->n_sites] = path_parse(g, &path_slot, &path_cap, tab + 1);
		g->n_sites++;
		line = end ? end + 1 : line + strlen(line);
	}
	rc = graph_index(g);
out:
	free(path_slot);
	return rc;
}

/* The registered graph whose region is named `id`, NULL if none. Mutex held. */
static const struct kgraph *graph_of_locked(uint32_t id)
{
	if (!reg.slot_cap)
		return NULL;
	for (size_t j = hash_mix64(id) & (reg.slot_cap - 1); reg.slot[j]; j = (j + 1) & (reg.slot_cap - 1))
		if (reg.g[reg.slot[j] - 1]->id == id)
			return reg.g[reg.slot[j] - 1];
	return NULL;
}

/* Interns g's module names and adds g to the registry; -1 when out of memory. Mutex held. */
static int graph_add_locked(struct kgraph *g)
{
	size_t ncap = reg.slot_cap;

	for (size_t p = 0; p < g->n_paths; p++)
		if (!(g->paths[p].name = intern_locked(g->paths[p].text)))
			return -1;
	if (ALLOC_GROW(reg.g, reg.n + 1, reg.cap) < 0)
		return -1;
	if ((reg.n + 1) * 2 > ncap) {
		uint32_t *h;

		ncap = ncap ? ncap * 2 : 64;
		if (!(h = calloc(ncap, sizeof(*h))))
			return -1;
		for (size_t i = 0; i < reg.n; i++) {
			size_t j;

			for (j = hash_mix64(reg.g[i]->id) & (ncap - 1); h[j]; j = (j + 1) & (ncap - 1))
				;
			h[j] = (uint32_t)i + 1;
		}
		free(reg.slot);
		reg.slot = h;
		reg.slot_cap = ncap;
	}
	reg.g[reg.n] = g;
	{
		size_t j;

		for (j = hash_mix64(g->id) & (reg.slot_cap - 1); reg.slot[j]; j = (j + 1) & (reg.slot_cap - 1))
			;
		reg.slot[j] = (uint32_t)reg.n + 1;
	}
	reg.n++;
	return 0;
}

int compiled_register(uint32_t graph, const char *table)
{
	struct kgraph *g = table ? calloc(1, sizeof(*g)) : NULL;
	int rc = -1;

	if (!g || graph_parse(g, table) < 0) {
		graph_free(g);
		return -1;
	}
	g->id = graph;
	pthread_mutex_lock(&R.lock);
	if (R.init && !R.finished && graph && graph < R.n_str) {
		if (graph_of_locked(graph))
			rc = 1;   /* the first table stands */
		else if (graph_add_locked(g) == 0)
			rc = 0;
	}
	pthread_mutex_unlock(&R.lock);
	if (rc != 0) {
		graph_free(g);
		return rc > 0 ? 0 : -1;
	}
	capture_set_kernel_hook(compiled_kernel_op);
	return 0;
}

/* ---- regions and launches ------------------------------------------------------ */

void compiled_push_locked(struct tstate *s, int i)
{
	const struct frame *f = &s->f[i];
	const struct kgraph *g;
	size_t n;
	int depth;

	if (!reg.n || !(g = graph_of_locked(f->name)))
		return;
	n = g->n_paths ? g->n_paths : 1;
	if (n > kc.cap) {
		uint32_t *buf = malloc(2 * n * sizeof(*buf));

		kc.g = NULL;
		if (!buf)
			return;
		pthread_once(&kc_once, kc_key_make);
		free(kc.node);
		pthread_setspecific(kc_key, buf);
		kc.node = buf;
		kc.op = buf + n;
		kc.cap = n;
	}
	memset(kc.node, 0, n * sizeof(*kc.node));
	memset(kc.op, 0, n * sizeof(*kc.op));
	kc.g = g;
	kc.i = i;
	kc.start = f->start;
	kc.name = f->name;
	kc.cursor = 0;
	kc.last = SITE_NONE;
	kc.domain = f->domain_name;
	depth = s->depth;   /* where the region's frame hangs: as if it were not pushed yet */
	s->depth = i;
	parent_of_locked(s, &kc.parent, &kc.pdepth);
	s->depth = depth;
	if (i > 0)
		kc.parent_op = s->f[i - 1].op;
	else if (s != R.lead && R.lead && R.lead->depth > 0)
		kc.parent_op = R.lead->f[R.lead->depth - 1].op;
	else
		kc.parent_op = 0;
}

/* Path p's node and op in this call of the region, made on first use. Mutex held. */
static uint32_t path_op_locked(const struct kgraph *g, uint32_t p)
{
	const struct kpath *kp = &g->paths[p];
	struct frame f = { .name = kp->name, .domain_name = kc.domain, .call = CALL_NONE, .flags = FR_MODULE };
	uint32_t parent = kc.parent;

	if (kc.node[p])
		return kc.op[p];
	if (kp->parent != PATH_ROOT) {
		path_op_locked(g, kp->parent);
		parent = kc.node[kp->parent];
	}
	frame_place_locked(&f, parent, kc.pdepth + (int32_t)path_depth(g, kp->parent), 0);
	kc.node[p] = f.node;
	kc.op[p] = f.op;
	return f.op;
}

/* Does a kernel's name say it is a matrix product (cuBLAS's, cuBLASLt's, CUTLASS's)? */
static bool gemm_like(const char *symbol)
{
	static const char *const words[] = { "gemm", "nvjet", "xmma", "cutlass", "splitk" };

	for (size_t i = 0; symbol && i < sizeof(words) / sizeof(words[0]); i++)
		if (strcasestr(symbol, words[i]))
			return true;
	return false;
}

/*
 * The path of the site a launch (symbol: its name, NULL for a copy)
 * matches in g, moving the call on. A Triton kernel: the next Triton
 * kernel's site when it is that kernel; else the site it last matched
 * when it is the same kernel again (a first call's autotuning launches it
 * once per configuration, with copies between); else its first site from
 * the cursor on (from the start when none is left). Anything else: the
 * extern calls at the cursor.
 */
static uint32_t site_path(const struct kgraph *g, const char *symbol)
{
	uint32_t k = symbol ? name_find(g, symbol) : NAME_NONE, site;
	const struct krun *r;

	if (k != NAME_NONE) {
		const struct kname *nm = &g->names[k];
		const uint32_t *sites = &g->by_name[nm->first];
		size_t lo = 0, hi = nm->n;

		site = g->next_named[kc.cursor < g->n_sites ? kc.cursor : g->n_sites];
		if (site >= g->n_sites || g->site_name[site] != k) {
			if (kc.last != SITE_NONE && g->site_name[kc.last] == k)
				return g->site_path[kc.last];
			while (lo < hi) {   /* its first site at or after the cursor */
				size_t mid = lo + (hi - lo) / 2;

				if (sites[mid] < kc.cursor)
					lo = mid + 1;
				else
					hi = mid;
			}
			site = sites[lo < nm->n ? lo : 0];
		}
		kc.cursor = site + 1;
		kc.last = site;
		return g->site_path[site];
	}
	if (kc.cursor >= g->n_sites || g->site_name[kc.cursor] != NAME_NONE)
		return PATH_NONE;
	r = &g->run[kc.cursor];   /* an extern call's work */
	if (r->gemm != PATH_NONE)
		return gemm_like(symbol) ? r->gemm : r->other;
	return r->all;
}

uint32_t compiled_kernel_op(const char *symbol, bool launch, uint32_t op)
{
	const struct kgraph *g = kc.g;
	const struct tstate *s;
	const struct frame *f;
	uint32_t path, mapped = 0;

	if (!g)
		return op;
	s = tstate();
	if (!s || s->depth <= kc.i || (f = &s->f[kc.i])->start != kc.start || f->name != kc.name) {
		kc.g = NULL;   /* the region ended */
		return op;
	}
	if (kc.i != s->depth - 1 || (launch && !symbol))
		return op;   /* a range of the program's inside the region, or a graph launch */
	path = site_path(g, symbol);
	if (path == PATH_NONE)
		return op;
	if (path == PATH_ROOT)
		return kc.parent_op ? kc.parent_op : op;
	if (kc.node[path])
		return kc.op[path] ? kc.op[path] : op;
	pthread_mutex_lock(&R.lock);
	if (R.init && !R.finished)
		mapped = path_op_locked(g, path);
	pthread_mutex_unlock(&R.lock);
	return mapped ? mapped : op;
}
