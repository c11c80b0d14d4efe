/*
 * layout.c: the layout both trace writers walk (see layout.h): tracks
 * (host process and threads, steps, one process per GPU with its streams,
 * memory counters) and slices placed on them so that every track nests
 * properly; then "marks" (slice begins and ends, counter values) sorted by
 * time, stably, so that a track's marks keep the order that makes them
 * nest even when times tie. The writers only encode marks: Perfetto
 * packets (perfetto.c) or Chrome JSON events (chrome.c). Besides: the
 * details of a slice both print, and size estimates.
 */
#include "export/layout.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/human.h"
#include "lib/output.h"
#include "lib/utf8.h"

#define MAX_TREE_DEPTH 100000

/* ---- layout ------------------------------------------------------------ */

/* A stack of open slices: one lane of a stream or thread. */
struct lane {
	uint32_t track;
	uint32_t *stack;              /* slice indices */
	size_t n, cap;
};

/* A lane's innermost open slice, by its end; stale once the slice is closed or covered. */
struct lane_end {
	uint64_t end;
	uint32_t lane, slice;
};

/*
 * A stream or thread and the lanes its slices needed. Slices that overlap
 * without nesting open a lane each, and a bundle can make a lane per slice
 * (250,000 steps, each overlapping the next), so nothing here tries the
 * lanes one by one: a min-heap of the lanes' innermost ends says which
 * close before a slice begins, and a tree of the lanes' fit keys finds the
 * first lane a slice fits in. O(log lanes) a slice.
 */
struct lane_group {
	struct lane *lanes;
	size_t n, cap;
	bool flat;                    /* GPU streams, steps: slices never nest */
	uint64_t extra_parent;        /* parent uuid of extra lanes */
	int32_t pid;
	const char *base;             /* name extra lanes derive from */
	struct lane_end *ends;        /* min-heap by end */
	size_t n_ends, cap_ends;
	struct lane_end *held;        /* group_pop's: ancestors of the slice placed, kept open */
	size_t cap_held;
	/*
	 * Max tree over lanes (leaves at [leaves, 2 leaves)) of each lane's fit
	 * key: UINT64_MAX for an empty lane (lanes not opened yet included),
	 * else its innermost slice's end, in which a slice ending by then
	 * nests (0 when flat: nothing does).
	 */
	uint64_t *fit;
	size_t leaves;
};

#define GOLDEN_GAMMA 0x9e3779b97f4a7c15ull

/*
 * The bundle's identity: its header's created time, host and pid (and time
 * base). Track uuids and Perfetto's sequence id derive from it, so traces
 * exported from several bundles can be merged without collisions, and the
 * same bundle always exports the same bytes. A replay without a header gets
 * a fixed one.
 */
static uint64_t bundle_identity(const struct replay_run *run)
{
	uint64_t h;

	if (!run->has_header)
		return GOLDEN_GAMMA;
	h = hash_mix64(hash_str(run->hostname) ^ (uint64_t)run->created_unix_ns);
	h = hash_mix64(h ^ run->time_base_ns);
	return hash_mix64(h ^ run->pid);
}

/* Distinct and never 0 (0 means "no parent") within one identity. */
static uint64_t track_uuid(uint64_t identity, size_t index)
{
	uint64_t u = hash_mix64(identity + (index + 1) * GOLDEN_GAMMA);

	return u ? u : GOLDEN_GAMMA;
}

uint32_t export_sequence_id(const struct layout *L)
{
	uint32_t id = (uint32_t)(hash_mix64(L->identity ^ GOLDEN_GAMMA) >> 32);

	return id ? id : 1;
}

static int add_track(struct layout *L, uint8_t kind, uint64_t parent, int32_t pid, int32_t tid,
		     uint32_t *out, const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static int add_track(struct layout *L, uint8_t kind, uint64_t parent, int32_t pid, int32_t tid,
		     uint32_t *out, const char *fmt, ...)
{
	struct xtrack *t;
	va_list ap;
	char buf[512];

	if (ALLOC_GROW(L->tracks, L->n_tracks + 1, L->cap_tracks) < 0)
		return -1;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	utf8_cut_tail(buf);   /* a long name cut between characters, never inside one */
	t = &L->tracks[L->n_tracks];
	t->name = strdup(buf);
	if (!t->name)
		return error("out of memory");
	t->uuid = track_uuid(L->identity, L->n_tracks);
	t->parent = parent;
	t->kind = kind;
	t->pid = pid;
	t->tid = tid;
	*out = (uint32_t)L->n_tracks++;
	return 0;
}

static int add_mark(struct layout *L, uint64_t t, uint8_t type, uint32_t ref)
{
	if (L->n_marks >= UINT32_MAX - 1)
		return error("too many events to export");
	if (ALLOC_GROW(L->marks, L->n_marks + 1, L->cap_marks) < 0 ||
	    ALLOC_GROW(L->keys, L->n_marks + 1, L->cap_keys) < 0)
		return -1;
	L->marks[L->n_marks].ref = ref;
	L->marks[L->n_marks].type = type;
	L->keys[L->n_marks].key = t;
	L->keys[L->n_marks].idx = (uint32_t)L->n_marks;
	L->n_marks++;
	return 0;
}

/* A node to place: a slice-to-be with its tree depth (0 when it has no tree). */
struct node {
	uint64_t start, end;
	uint32_t idx, depth;
	uint8_t what;
};

/* True when slice e is an NVTX ancestor of node n in the replay's range tree. */
static bool tree_ancestor(const struct replay *rp, const struct xslice *e, const struct node *n)
{
	int32_t p;
	int guard = 0;

	if (e->what != SL_RANGE)
		return false;
	if (n->what == SL_RANGE)
		p = rp->ranges[n->idx].parent;
	else if (n->what == SL_API)
		p = rp->apis[n->idx].range;
	else
		return false;
	for (; p >= 0 && (size_t)p < rp->n_ranges && guard < MAX_TREE_DEPTH; guard++) {
		if ((uint32_t)p == e->idx)
			return true;
		p = rp->ranges[p].parent;
	}
	return false;
}

/* ---- lanes: the heap of ends, the tree of fit keys ------------------------ */

static bool end_before(const struct lane_end *a, const struct lane_end *b)
{
	return a->end < b->end || (a->end == b->end && a->lane < b->lane);
}

static int ends_push(struct lane_group *g, uint64_t end, uint32_t lane, uint32_t slice)
{
	size_t i;

	if (ALLOC_GROW(g->ends, g->n_ends + 1, g->cap_ends) < 0)
		return -1;
	for (i = g->n_ends++; i > 0; i = (i - 1) / 2) {
		struct lane_end *up = &g->ends[(i - 1) / 2];
		if (!end_before(&(struct lane_end){ end, lane, slice }, up))
			break;
		g->ends[i] = *up;
	}
	g->ends[i] = (struct lane_end){ end, lane, slice };
	return 0;
}

static void ends_pop(struct lane_group *g)
{
	struct lane_end last = g->ends[--g->n_ends];
	size_t i = 0, c;

	while ((c = 2 * i + 1) < g->n_ends) {
		if (c + 1 < g->n_ends && end_before(&g->ends[c + 1], &g->ends[c]))
			c++;
		if (!end_before(&g->ends[c], &last))
			break;
		g->ends[i] = g->ends[c];
		i = c;
	}
	if (g->n_ends)
		g->ends[i] = last;
}

static uint64_t max_u64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static void fit_set(struct lane_group *g, size_t lane, uint64_t key)
{
	size_t i = g->leaves + lane;

	for (g->fit[i] = key; i > 1; i /= 2)
		g->fit[i / 2] = max_u64(g->fit[i & ~(size_t)1], g->fit[i | 1]);   /* i's pair: 2k, 2k + 1 */
}

/* Leaves for at least `need` lanes, doubling; the new ones are empty lanes. */
static int fit_grow(struct lane_group *g, size_t need)
{
	size_t leaves = g->leaves ? g->leaves : 1, old = g->leaves;
	uint64_t *fit;

	while (leaves < need)
		leaves *= 2;
	fit = malloc(2 * leaves * sizeof(*fit));
	if (!fit)
		return error("out of memory");
	for (size_t i = 0; i < leaves; i++)
		fit[leaves + i] = i < old ? g->fit[old + i] : UINT64_MAX;
	for (size_t i = leaves; i-- > 1;)
		fit[i] = max_u64(fit[2 * i], fit[2 * i + 1]);
	free(g->fit);
	g->fit = fit;
	g->leaves = leaves;
	return 0;
}

/* The lane's fit key (see struct lane_group). */
static uint64_t lane_key(const struct layout *L, const struct lane_group *g, const struct lane *ln)
{
	if (!ln->n)
		return UINT64_MAX;
	return g->flat ? 0 : L->slices[ln->stack[ln->n - 1]].end;
}

/*
 * Closes the slices of every lane that end before n begins (or exactly
 * when, unless n nests in them: an NVTX ancestor that ends as its child
 * starts), innermost first; those end marks go out now.
 */
static int group_pop(struct layout *L, struct lane_group *g, const struct node *n)
{
	size_t n_held = 0;
	int rc = 0;

	while (g->n_ends && g->ends[0].end <= n->start && rc == 0) {
		struct lane_end e = g->ends[0];
		struct lane *ln = &g->lanes[e.lane];

		ends_pop(g);
		if (!ln->n || ln->stack[ln->n - 1] != e.slice)
			continue;   /* stale: closed, or covered by a slice pushed since */
		if (e.end == n->start && tree_ancestor(L->rp, &L->slices[e.slice], n)) {
			/* open until n is placed; at most one per lane, each an ancestor of n */
			rc = ALLOC_GROW(g->held, n_held + 1, g->cap_held);
			if (rc == 0)
				g->held[n_held++] = e;
			continue;
		}
		rc = add_mark(L, e.end, MK_END, e.slice);
		ln->n--;
		fit_set(g, e.lane, lane_key(L, g, ln));
		if (ln->n && rc == 0)
			rc = ends_push(g, L->slices[ln->stack[ln->n - 1]].end, e.lane, ln->stack[ln->n - 1]);
	}
	while (n_held && rc == 0) {
		n_held--;
		rc = ends_push(g, g->held[n_held].end, g->held[n_held].lane, g->held[n_held].slice);
	}
	return rc;
}

static int lane_close_all(struct layout *L, struct lane *ln)
{
	while (ln->n) {
		uint32_t s = ln->stack[--ln->n];
		if (add_mark(L, L->slices[s].end, MK_END, s) < 0)
			return -1;
	}
	return 0;
}

static int lane_push(struct layout *L, struct lane_group *g, size_t lane, const struct node *n)
{
	struct lane *ln = &g->lanes[lane];
	struct xslice *s;

	if (ALLOC_GROW(L->slices, L->n_slices + 1, L->cap_slices) < 0 ||
	    ALLOC_GROW(ln->stack, ln->n + 1, ln->cap) < 0)
		return -1;
	s = &L->slices[L->n_slices];
	s->start = n->start;
	s->end = n->end;
	s->track = ln->track;
	s->idx = n->idx;
	s->what = n->what;
	ln->stack[ln->n++] = (uint32_t)L->n_slices;
	fit_set(g, lane, lane_key(L, g, ln));
	if (ends_push(g, n->end, (uint32_t)lane, (uint32_t)L->n_slices) < 0)
		return -1;
	return add_mark(L, n->start, MK_BEGIN, (uint32_t)L->n_slices++);
}

/* The first lane whose key is at least `key`: one is, since lanes not opened yet are empty. */
static size_t fit_first(const struct lane_group *g, uint64_t key)
{
	size_t i = 1;

	while (i < g->leaves)
		i = g->fit[2 * i] >= key ? 2 * i : 2 * i + 1;
	return i - g->leaves;
}

/* Places n on the first lane of g where it nests, opening a lane when none fits. */
static int place(struct layout *L, struct lane_group *g, const struct node *n)
{
	uint64_t key = g->flat ? UINT64_MAX : n->end;   /* flat: an empty lane; else one whose slice holds n */
	size_t i;

	if (group_pop(L, g, n) < 0)
		return -1;
	if (g->fit[1] < key && fit_grow(g, g->leaves + 1) < 0)
		return -1;
	i = fit_first(g, key);
	if (i == g->n) {
		uint32_t track;
		if (ALLOC_GROW(g->lanes, g->n + 1, g->cap) < 0)
			return -1;
		if (add_track(L, TK_CHILD, g->extra_parent, g->pid, L->next_tid++, &track,
			      "%s (overlap %zu)", g->base, i) < 0)
			return -1;
		memset(&g->lanes[i], 0, sizeof(g->lanes[i]));
		g->lanes[i].track = track;
		g->n++;
		L->extra_lanes++;
	}
	return lane_push(L, g, i, n);
}

static int group_close(struct layout *L, struct lane_group *g)
{
	int rc = 0;

	for (size_t i = 0; i < g->n; i++) {
		if (rc == 0)
			rc = lane_close_all(L, &g->lanes[i]);
		free(g->lanes[i].stack);
	}
	free(g->lanes);
	free(g->ends);
	free(g->held);
	free(g->fit);
	memset(g, 0, sizeof(*g));
	return rc;
}

static int group_init(struct lane_group *g, uint32_t track, bool flat, uint64_t extra_parent,
		      int32_t pid, const char *base)
{
	memset(g, 0, sizeof(*g));
	if (ALLOC_GROW(g->lanes, 1, g->cap) < 0 || fit_grow(g, 1) < 0)
		return -1;
	memset(&g->lanes[0], 0, sizeof(g->lanes[0]));
	g->lanes[0].track = track;
	g->n = 1;
	g->flat = flat;
	g->extra_parent = extra_parent;
	g->pid = pid;
	g->base = base;
	return 0;
}

/* ---- tracks and slices ------------------------------------------------- */

static const char *device_name(const struct replay *rp, uint32_t device)
{
	if (rp->run.has_device && rp->run.device.index == device && *rp->run.device.name)
		return rp->run.device.name;
	return NULL;
}

/* One device track per device that has a stream, in stream order; returns its track. */
static int gpu_process(struct layout *L, uint32_t device, uint32_t *track)
{
	int32_t pid = export_gpu_pid(L, device);
	const char *name = device_name(L->rp, device);
	char whose[48] = "";

	/* looked up, not searched for among the tracks: a bundle may hold a stream per kernel */
	if (!L->gpu_track && !(L->gpu_track = calloc(0x10000, sizeof(*L->gpu_track))))
		return error("out of memory");
	if (L->gpu_track[device & 0xffff]) {
		*track = L->gpu_track[device & 0xffff] - 1;
		return 0;
	}
	/* whose GPU work it is, for traces merged from several processes (pid 0: not recorded, format 1.5 and 1.6's
	 * PyTorch bundles) */
	if (L->rank >= 0 && L->rp->run.pid)
		snprintf(whose, sizeof(whose), " (rank %" PRId32 ", pid %" PRIu32 ")", L->rank, L->rp->run.pid);
	else if (L->rank >= 0)
		snprintf(whose, sizeof(whose), " (rank %" PRId32 ")", L->rank);
	else if (L->rp->run.pid)
		snprintf(whose, sizeof(whose), " (pid %" PRIu32 ")", L->rp->run.pid);
	if (add_track(L, TK_DEVICE, 0, pid, 0, track, "GPU %" PRIu32 "%s%s%s", device,
		      name ? " " : "", name ? name : "", whose) < 0)
		return -1;
	L->gpu_track[device & 0xffff] = *track + 1;
	return 0;
}

static int layout_streams(struct layout *L)
{
	const struct replay *rp = L->rp;

	for (size_t s = 0; s < rp->n_streams; s++) {
		const struct replay_stream *st = &rp->streams[s];
		struct lane_group g;
		uint32_t proc, track;
		int rc = 0;

		if (gpu_process(L, st->device, &proc) < 0 ||
		    add_track(L, TK_CHILD, L->tracks[proc].uuid, export_gpu_pid(L, st->device),
			      (int32_t)(st->stream & 0x7fffffff), &track, "stream %" PRIu32, st->stream) < 0 ||
		    group_init(&g, track, true, L->tracks[proc].uuid, export_gpu_pid(L, st->device),
			       L->tracks[track].name) < 0)
			return -1;
		for (size_t i = 0; i < st->n && rc == 0; i++) {
			const struct replay_activity *a = &rp->activities[st->acts[i]];
			struct node n = { a->start, a->end < a->start ? a->start : a->end, st->acts[i], 0,
					  SL_ACTIVITY };
			if (!export_keep_activity(&L->filter, a))
				continue;
			L->act_kept[st->acts[i]] = 1;
			rc = place(L, &g, &n);
		}
		if (group_close(L, &g) < 0 || rc < 0)
			return -1;
	}
	return 0;
}

static int cmp_node(const void *pa, const void *pb)
{
	const struct node *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->depth != b->depth)
		return a->depth < b->depth ? -1 : 1;
	if (a->end != b->end)
		return a->end > b->end ? -1 : 1;
	if (a->what != b->what)
		return a->what == SL_RANGE ? -1 : 1;
	return a->idx < b->idx ? -1 : a->idx > b->idx;
}

/* Chrome and Perfetto want small thread ids; real ones when they all fit. */
static void assign_tids(struct layout *L)
{
	const struct replay *rp = L->rp;
	bool fit = true;

	for (size_t i = 0; i < rp->n_threads; i++)
		if (rp->threads[i].thread == 0 || rp->threads[i].thread > 0x3fffffff)
			fit = false;
	for (size_t i = 0; i < rp->n_threads; i++)
		L->thread_tid[i] = fit ? (int32_t)rp->threads[i].thread : (int32_t)(i + 1);
	L->next_tid = 0x40000000;
}

static int layout_thread(struct layout *L, size_t ti)
{
	const struct replay *rp = L->rp;
	const struct replay_thread *th = &rp->threads[ti];
	struct node *nodes = calloc(th->n_ranges + th->n_apis + 1, sizeof(*nodes));
	struct lane_group g;
	size_t n = 0;
	int rc = 0;

	if (!nodes)
		return error("out of memory");
	for (size_t i = 0; i < th->n_ranges; i++) {
		const struct replay_range *r = &rp->ranges[th->ranges[i]];
		if (export_keep_range(&L->filter, r))
			nodes[n++] = (struct node){ r->start, r->end < r->start ? r->start : r->end,
						    th->ranges[i], r->depth, SL_RANGE };
	}
	for (size_t i = 0; i < th->n_apis; i++) {
		const struct replay_api *a = &rp->apis[th->apis[i]];
		uint32_t depth = a->range >= 0 && (size_t)a->range < rp->n_ranges
					 ? rp->ranges[a->range].depth + 1 : 0;
		if (export_keep_api(&L->filter, a))
			nodes[n++] = (struct node){ a->start, a->end < a->start ? a->start : a->end,
						    th->apis[i], depth, SL_API };
	}
	qsort(nodes, n, sizeof(*nodes), cmp_node);
	if (group_init(&g, L->thread_track[ti], false, L->tracks[L->thread_track[ti]].uuid, L->host_pid,
		       L->tracks[L->thread_track[ti]].name) < 0) {
		free(nodes);
		return -1;
	}
	for (size_t i = 0; i < n && rc == 0; i++)
		rc = place(L, &g, &nodes[i]);
	free(nodes);
	if (group_close(L, &g) < 0 || rc < 0)
		return -1;
	return 0;
}

static int layout_host(struct layout *L)
{
	const struct replay *rp = L->rp;
	struct lane_group g;
	uint32_t proc, steps;
	int rc = 0;

	if ((L->rank < 0 ? add_track(L, TK_PROCESS, 0, L->host_pid, 0, &proc, "host")
			 : add_track(L, TK_PROCESS, 0, L->host_pid, 0, &proc, "rank %" PRId32 " host", L->rank)) < 0)
		return -1;
	assign_tids(L);
	for (size_t i = 0; i < rp->n_threads; i++) {
		uint64_t id = rp->threads[i].thread;
		if (add_track(L, TK_THREAD, L->tracks[proc].uuid, L->host_pid, L->thread_tid[i],
			      &L->thread_track[i], "thread %" PRIu64 "%s", id,
			      id == rp->main_thread ? " (main)" : "") < 0)
			return -1;
	}
	if (rp->n_steps || rp->counts[ST_OOM]) {
		if (add_track(L, TK_CHILD, L->tracks[proc].uuid, L->host_pid, STEPS_TID, &steps, "steps") < 0 ||
		    group_init(&g, steps, true, L->tracks[proc].uuid, L->host_pid, "steps") < 0)
			return -1;
		L->steps_track = steps;
		for (size_t i = 0; i < rp->n_steps && rc == 0; i++) {
			const struct replay_step *s = &rp->steps[i];
			struct node n = { s->start, s->end < s->start ? s->start : s->end, (uint32_t)i, 0, SL_STEP };
			if (export_keep_step(&L->filter, i))
				rc = place(L, &g, &n);
		}
		if (group_close(L, &g) < 0 || rc < 0)
			return -1;
		for (size_t i = 0; i < rp->n_mem; i++)
			if (rp->mem[i].ev.kind == ST_OOM && export_keep_time(&L->filter, rp->mem[i].ev.start) &&
			    add_mark(L, rp->mem[i].ev.start, MK_INSTANT, (uint32_t)i) < 0)
				return -1;
	}
	for (size_t i = 0; i < rp->n_threads; i++)
		if (layout_thread(L, i) < 0)
			return -1;
	return 0;
}

static int add_count(struct layout *L, uint64_t t, uint32_t track, int64_t value, uint16_t group,
		     uint16_t series)
{
	if (ALLOC_GROW(L->counts, L->n_counts + 1, L->cap_counts) < 0)
		return -1;
	L->counts[L->n_counts] = (struct xcount){ t, value, track, series, group };
	return add_mark(L, t, MK_COUNTER, (uint32_t)L->n_counts++);
}

/*
 * Counter tracks of one memory view: its total and each category seen, in
 * the model view, or in the driver view once the program's tags name them
 * (replay/memory.h, Categories).
 */
static int layout_memory_view(struct layout *L, enum mem_view view)
{
	const struct replay *rp = L->rp;
	struct mem_timeline tl;
	uint64_t cat[ST_MEM_CATEGORY_COUNT] = { 0 };
	bool seen[ST_MEM_CATEGORY_COUNT] = { false };
	uint32_t *tr = L->mem_track[view], proc;
	uint64_t live = 0;
	int32_t first = 0;
	int rc = -1;

	if (mem_timeline_build(&tl, rp, view) < 0)
		return -1;
	for (size_t i = 0; i < ST_MEM_CATEGORY_COUNT + 1; i++)
		tr[i] = UINT32_MAX;
	if (tl.n_blocks == 0) {
		rc = 0;
		goto out;
	}
	for (size_t i = 0; i < tl.n_blocks; i++)
		if (tl.blocks[i].category < ST_MEM_CATEGORY_COUNT)
			seen[tl.blocks[i].category] = true;
	if (gpu_process(L, (uint32_t)L->mem_device, &proc) < 0)
		goto out;
	if (add_track(L, TK_COUNTER, L->tracks[proc].uuid, export_gpu_pid(L, (uint32_t)L->mem_device), 0,
		      &tr[ST_MEM_CATEGORY_COUNT], "live memory, %s: total", mem_view_name(view)) < 0)
		goto out;
	for (int c = 0; (view == MEM_VIEW_MODEL || tl.n_tags) && c < ST_MEM_CATEGORY_COUNT; c++)
		if (seen[c] && add_track(L, TK_COUNTER, L->tracks[proc].uuid,
					 export_gpu_pid(L, (uint32_t)L->mem_device), 0,
					 &tr[c], "live memory, %s: %s", mem_view_name(view),
					 st_mem_category_name(c)) < 0)
			goto out;

	/* with --step or --range, start from what was live when the window opens */
	if (L->filter.windowed) {
		uint64_t from = L->filter.from;
		int32_t p = mem_timeline_point_at(&tl, from);
		mem_timeline_categories_at(&tl, p, cat);
		live = p >= 0 ? tl.points[p].live : 0;
		first = p + 1;
		if (add_count(L, from, tr[ST_MEM_CATEGORY_COUNT], (int64_t)live, (uint16_t)view,
			      ST_MEM_CATEGORY_COUNT) < 0)
			goto out;
		for (int c = 0; c < ST_MEM_CATEGORY_COUNT; c++)
			if (tr[c] != UINT32_MAX &&
			    add_count(L, from, tr[c], (int64_t)cat[c], (uint16_t)view, (uint16_t)c) < 0)
				goto out;
	} else {
		uint64_t t0 = tl.points[0].t;
		for (int c = 0; c < ST_MEM_CATEGORY_COUNT; c++)
			if (tr[c] != UINT32_MAX && add_count(L, t0, tr[c], 0, (uint16_t)view, (uint16_t)c) < 0)
				goto out;
	}
	for (size_t i = (size_t)first; i < tl.n_points; i++) {
		const struct mem_point *p = &tl.points[i];
		if (p->delta == 0)
			continue;
		if (!export_keep_time(&L->filter, p->t))
			break;
		if (p->category < ST_MEM_CATEGORY_COUNT) {
			cat[p->category] += (uint64_t)p->delta;
			if (tr[p->category] != UINT32_MAX &&
			    add_count(L, p->t, tr[p->category], (int64_t)cat[p->category], (uint16_t)view,
				      p->category) < 0)
				goto out;
		}
		if (add_count(L, p->t, tr[ST_MEM_CATEGORY_COUNT], (int64_t)p->live, (uint16_t)view,
			      ST_MEM_CATEGORY_COUNT) < 0)
			goto out;
	}
	rc = 0;
out:
	mem_timeline_release(&tl);
	return rc;
}

void export_layout_release(struct layout *L)
{
	for (size_t i = 0; i < L->n_tracks; i++)
		free(L->tracks[i].name);
	free(L->tracks);
	free(L->slices);
	free(L->marks);
	free(L->keys);
	free(L->counts);
	free(L->act_kept);
	free(L->gpu_track);
	free(L->thread_tid);
	free(L->thread_track);
	export_filter_release(&L->filter);
	memset(L, 0, sizeof(*L));
}

uint64_t export_layout_bytes(const struct layout *L)
{
	const struct replay *rp = L->rp;

	return L->cap_tracks * sizeof(*L->tracks) + L->cap_slices * sizeof(*L->slices) +
	       L->cap_marks * sizeof(*L->marks) + L->cap_keys * sizeof(*L->keys) + L->cap_counts * sizeof(*L->counts) +
	       (rp ? rp->n_activities + 1 + (rp->n_threads + 1) * 8 : 0) + (L->gpu_track ? 0x10000 * 4 : 0);
}

int export_layout_build(struct layout *L, const struct replay *rp, const struct export_options *opt)
{
	return export_layout_build_placed(L, rp, opt, NULL);
}

/* GPUs of rank r in Chrome: pids above any real one (Linux's pid_max is at most 2^22). */
#define RANK_GPU_PIDS (1 << 23)

int export_layout_build_placed(struct layout *L, const struct replay *rp, const struct export_options *opt,
			       const struct layout_place *place)
{
	struct replay_key *tmp;

	memset(L, 0, sizeof(*L));
	L->rp = rp;
	L->opt = opt;
	if (export_filter_init(&L->filter, rp, opt) < 0)
		return -1;
	L->act_kept = calloc(rp->n_activities + 1, 1);
	L->thread_tid = calloc(rp->n_threads + 1, sizeof(*L->thread_tid));
	L->thread_track = calloc(rp->n_threads + 1, sizeof(*L->thread_track));
	if (!L->act_kept || !L->thread_tid || !L->thread_track)
		return error("out of memory");
	L->mem_device = rp->n_streams ? (int)rp->streams[0].device : 0;
	L->identity = bundle_identity(&rp->run);
	L->host_pid = rp->run.pid && rp->run.pid <= INT32_MAX ? (int32_t)rp->run.pid : OLD_BUNDLE_PID;
	/* GPU processes after the host's pid when it falls where they would be */
	L->gpu_pid_base = L->host_pid >= 100 && L->host_pid <= 100 + 0xffff ? L->host_pid + 1 : 100;
	L->rank = -1;
	L->realtime_base = rp->run.created_unix_ns > 0 ? rp->run.created_unix_ns : 0;
	if (place) {
		L->rank = place->rank;
		L->shift = place->shift;
		L->realtime_base = place->realtime_base;
		L->host_pid = place->host_pid;
		L->gpu_pid_base = RANK_GPU_PIDS + place->rank * 0x10000;
		L->place = place->place;
	}
	if (layout_host(L) < 0 || layout_streams(L) < 0 ||
	    layout_memory_view(L, MEM_VIEW_MODEL) < 0 || layout_memory_view(L, MEM_VIEW_DRIVER) < 0)
		return -1;
	tmp = malloc((L->n_marks + 1) * sizeof(*tmp));
	if (!tmp)
		return error("out of memory");
	replay_sort_keys(L->keys, tmp, L->n_marks);
	free(tmp);
	return 0;
}

/* ---- shared event details ------------------------------------------------ */

/*
 * Flow ids are the trace's, not a sequence's or a process's: Perfetto and
 * Chrome join every begin and end of one id. Each rank counts its CUPTI
 * correlation ids from 1, so in a trace of several ranks the id is the
 * correlation id (32 bits in CUPTI) with the rank's place in the run above
 * it, and stays below 2^53 for Chrome's JavaScript numbers; a correlation
 * id wider than CUPTI's gets no flow there rather than one that could meet
 * another rank's.
 */
#define FLOW_CORRELATION_BITS 32
#define FLOW_PLACES (1u << (53 - FLOW_CORRELATION_BITS))

uint64_t export_launch_flow(const struct layout *L, const struct replay_api *api)
{
	if (L->filter.no_api || api->activity < 0 || (size_t)api->activity >= L->rp->n_activities ||
	    !L->act_kept[api->activity] || api->correlation == 0)
		return 0;
	if (L->rank < 0)
		return api->correlation;
	if (api->correlation >> FLOW_CORRELATION_BITS || L->place >= FLOW_PLACES)
		return 0;
	return (uint64_t)L->place << FLOW_CORRELATION_BITS | api->correlation;
}

uint64_t export_activity_flow(const struct layout *L, const struct replay_activity *a, uint32_t idx)
{
	const struct replay_api *api;

	if (a->api < 0 || (size_t)a->api >= L->rp->n_apis)
		return 0;
	api = &L->rp->apis[a->api];
	if (api->activity != (int32_t)idx || !export_keep_api(&L->filter, api))
		return 0;
	return export_launch_flow(L, api);
}

const char *export_slice_name(const struct layout *L, const struct xslice *s, char *buf, size_t len)
{
	const struct replay *rp = L->rp;

	switch (s->what) {
	case SL_ACTIVITY:
		return replay_str(rp, rp->activities[s->idx].name);
	case SL_RANGE:
		return replay_str(rp, rp->ranges[s->idx].name);
	case SL_API:
		return replay_str(rp, rp->apis[s->idx].name);
	default:
		snprintf(buf, len, "step %" PRIu32 "%s", rp->steps[s->idx].index,
			 rp->steps[s->idx].warmup ? " (warm-up)" : "");
		return buf;
	}
}

uint64_t export_slice_name_id(const struct layout *L, const struct xslice *s)
{
	const struct replay *rp = L->rp;

	switch (s->what) {
	case SL_ACTIVITY:
		return EXPORT_ID_STRING(rp->activities[s->idx].name);
	case SL_RANGE:
		return EXPORT_ID_STRING(rp->ranges[s->idx].name);
	case SL_API:
		return EXPORT_ID_STRING(rp->apis[s->idx].name);
	default:
		return 0;
	}
}

/*
 * Launch calls and GPU work share "cuda": DevTools joins a flow's start and
 * end only when they have one category (with name and id), and binds each
 * to the slice of that category at the same ts, pid and tid.
 */
const char *const export_slice_category[] = { "cuda", "nvtx", "cuda", "step" };
const char *const export_ann_names[ANN_COUNT] = {
	"op", "nvtx", "correlation", "grid", "block", "registers per thread",
	"shared memory (B)", "bytes", "path", "gpu time (ns)", "kernels", "dtypes",
	"stream", "device", "cbid", "communicator",
};

/*
 * The NCCL call whose payload an activity carries: the innermost range
 * covering its launch, or one of the few above it, that has a payload
 * (comm or bytes: only NCCL's own ranges have one); NULL none.
 */
static const struct replay_range *payload_range(const struct replay *rp, int32_t r)
{
	for (int up = 0; up < 8 && r >= 0 && (size_t)r < rp->n_ranges; up++, r = rp->ranges[r].parent)
		if (rp->ranges[r].comm || rp->ranges[r].bytes)
			return &rp->ranges[r];
	return NULL;
}

static void fmt_dim(char *buf, size_t len, const uint32_t d[3])
{
	snprintf(buf, len, "(%" PRIu32 ", %" PRIu32 ", %" PRIu32 ")", d[0], d[1], d[2]);
}

static void fmt_dtypes(char *buf, size_t len, const struct replay_op *op)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < op->n_inputs && i < ST_OP_MAX_INPUTS && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : "", st_dtype_name(op->inputs[i]));
	for (int i = 0; i < op->n_outputs && i < ST_OP_MAX_OUTPUTS && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? ", " : " -> ", st_dtype_name(op->outputs[i]));
}

/* The slice's annotations into a (at most MAX_ANN); strings may point into the three buffers. */
size_t export_slice_annotations(const struct layout *L, const struct xslice *s, struct ann *a,
				char bufs[4][256])
{
	const struct replay *rp = L->rp;
	size_t n = 0;

#define ANN_S(k, v, from) (a[n++] = (struct ann){ (k), true, (v), (from), 0 })
#define ANN_U(k, v) (a[n++] = (struct ann){ (k), false, NULL, 0, (v) })
	if (s->what == SL_ACTIVITY) {
		const struct replay_activity *x = &rp->activities[s->idx];
		const struct replay_op *op = replay_op(rp, x->op);
		const char *path = replay_activity_path(rp, x);
		const struct replay_range *nccl;
		if (op) {
			const char *p = replay_str(rp, op->path);
			if (*p)
				ANN_S(ANN_OP, p, EXPORT_ID_STRING(op->path));
			else
				ANN_S(ANN_OP, replay_str(rp, op->name), EXPORT_ID_STRING(op->name));
			if (op->n_inputs || op->n_outputs) {
				fmt_dtypes(bufs[2], sizeof(bufs[2]), op);
				ANN_S(ANN_DTYPES, bufs[2], 0);
			}
		}
		if (*path)
			ANN_S(ANN_NVTX, path, EXPORT_ID_PATH(rp->ranges[x->range].path));
		ANN_U(ANN_CORRELATION, x->correlation);
		if (x->kind == ST_KERNEL && x->detail < rp->n_kernel_cfg) {
			const struct replay_kernel_cfg *k = &rp->kernel_cfg[x->detail];
			fmt_dim(bufs[0], sizeof(bufs[0]), k->grid);
			fmt_dim(bufs[1], sizeof(bufs[1]), k->block);
			ANN_S(ANN_GRID, bufs[0], 0);
			ANN_S(ANN_BLOCK, bufs[1], 0);
			ANN_U(ANN_REGISTERS, k->registers);
			ANN_U(ANN_SMEM, (uint64_t)k->static_smem + k->dynamic_smem);
		} else if (x->kind != ST_KERNEL) {
			ANN_U(ANN_BYTES, x->bytes);
		}
		ANN_U(ANN_STREAM, x->stream);
		ANN_U(ANN_DEVICE, x->device);
		if (x->kind == ST_KERNEL && (nccl = payload_range(rp, x->range))) {
			if (nccl->comm) {
				snprintf(bufs[3], sizeof(bufs[3]), "0x%" PRIx64, nccl->comm);
				ANN_S(ANN_COMM, bufs[3], 0);
			}
			if (nccl->bytes)
				ANN_U(ANN_BYTES, nccl->bytes);
		}
	} else if (s->what == SL_RANGE) {
		const struct replay_range *r = &rp->ranges[s->idx];
		ANN_S(ANN_PATH, replay_range_path(rp, r), EXPORT_ID_PATH(r->path));
		if (r->gpu_end > r->gpu_start)
			ANN_U(ANN_GPU_NS, r->gpu_end - r->gpu_start);
		ANN_U(ANN_KERNELS, r->kernels);
		if (r->comm) {
			snprintf(bufs[3], sizeof(bufs[3]), "0x%" PRIx64, r->comm);
			ANN_S(ANN_COMM, bufs[3], 0);
		}
		if (r->bytes)
			ANN_U(ANN_BYTES, r->bytes);
	} else if (s->what == SL_API) {
		ANN_U(ANN_CORRELATION, rp->apis[s->idx].correlation);
		ANN_U(ANN_CBID, rp->apis[s->idx].cbid);
	} else {
		const struct replay_step *st = &rp->steps[s->idx];
		if (st->gpu_end > st->gpu_start)
			ANN_U(ANN_GPU_NS, st->gpu_end - st->gpu_start);
		ANN_U(ANN_KERNELS, st->kernels);
	}
#undef ANN_S
#undef ANN_U
	return n;
}

void export_oom_name(const struct replay *rp, uint32_t mem, char *buf, size_t len)
{
	const struct st_event *e = &rp->mem[mem].ev;
	const struct replay_op *op = replay_op(rp, e->oom.op);

	snprintf(buf, len, "OOM: %" PRIu64 " B %s request%s%s", e->oom.requested,
		 st_mem_category_name((int)e->oom.category), op ? " by " : "",
		 op ? replay_str(rp, op->path) : "");
	utf8_cut_tail(buf);
}

/* ---- size estimates -------------------------------------------------------- */

#define ESTIMATE_SAMPLE 20000   /* marks encoded at most */

int export_estimate(const struct layout *L, void *ctx, int (*begin)(void *ctx, FILE *f),
		    int (*mark)(void *ctx, size_t i), uint64_t *bytes)
{
	struct output_counter c;
	size_t stride = L->n_marks / ESTIMATE_SAMPLE + 1, sampled = 0;
	uint64_t fixed, marks;
	int rc = -1;

	if (output_counter_open(&c) < 0)
		return -1;
	if (begin(ctx, c.f) < 0)
		goto out;
	fixed = output_counter_bytes(&c);
	for (size_t i = 0; i < L->n_marks; i += stride, sampled++)
		if (mark(ctx, i) < 0)
			goto out;
	marks = output_counter_bytes(&c) - fixed;
	*bytes = fixed + (sampled ? (uint64_t)((double)marks * (double)L->n_marks / (double)sampled) : 0);
	rc = 0;
out:
	output_counter_close(&c);
	return rc;
}

/* Above this, say how large the trace will be before writing it. */
#define NOTE_BYTES (16u << 20)

/* The estimate against --max-size, and a note before a large write. */
int export_check_size(const struct export_options *opt, uint64_t estimate, const char *what,
		      const char *output)
{
	char size[32];

	if (output_check_size(output, estimate, opt->max_size, what,
			      "keep less with --step N, --range PATH or --no-api") < 0)
		return -1;
	if (estimate >= NOTE_BYTES)
		fprintf(stderr, "writing about %s of %s to '%s' (--step N or --range PATH write less)\n",
			human_bytes(size, sizeof(size), (double)estimate), what, output);
	return 0;
}
