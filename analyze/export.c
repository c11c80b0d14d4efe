/*
 * export.c: `steptrace export`, a replay written as a trace for timeline
 * viewers (see export.h).
 *
 * The layout comes first: tracks (host process and threads, steps, one
 * process per GPU with its streams, memory counters) and slices placed on
 * them so that every track nests properly; then "marks" (slice begins and
 * ends, counter values) sorted by time, stably, so that a track's marks keep
 * the order that makes them nest even when times tie. The two writers only
 * encode marks: Perfetto packets (begin/end track events with interned names)
 * or Chrome JSON events.
 */
#include "analyze/export.h"

#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/grow.h"
#include "perfetto_trace.pb-c.h"
#include "replay/memory.h"

const char *const export_format_names[] = { "perfetto", "chrome", "json", NULL };

#define HOST_PID 1
#define GPU_PID(dev) (100 + (int32_t)(dev))
#define STEPS_TID 0
#define MAX_TREE_DEPTH 100000

/* ---- layout ------------------------------------------------------------ */

enum track_kind { TK_PROCESS, TK_THREAD, TK_CHILD, TK_COUNTER };

struct xtrack {
	uint64_t uuid, parent;        /* parent 0: a root */
	char *name;                   /* owned */
	uint8_t kind;
	int32_t pid, tid;             /* processes and threads; Chrome: every slice track */
};

enum slice_what { SL_ACTIVITY, SL_RANGE, SL_API, SL_STEP };

struct xslice {
	uint64_t start, end;
	uint32_t track, idx;          /* idx into the replay array of `what` */
	uint8_t what;
};

enum mark_type { MK_BEGIN, MK_END, MK_COUNTER, MK_INSTANT };

struct xmark {
	uint32_t ref;                 /* slice, counter value or OOM (rp->mem) index */
	uint8_t type;
};

/* One value of one counter track. */
struct xcount {
	uint64_t t;
	int64_t value;
	uint32_t track;
	uint16_t series;              /* Chrome: the series within its counter */
	uint16_t group;               /* Chrome: one "C" event per (group, t) */
};

/* A stack of open slices: one lane of a stream or thread. */
struct lane {
	uint32_t track;
	uint32_t *stack;              /* slice indices */
	size_t n, cap;
};

/* A stream or thread and the lanes its slices needed. */
struct lane_group {
	struct lane *lanes;
	size_t n, cap;
	bool flat;                    /* GPU streams, steps: slices never nest */
	uint64_t extra_parent;        /* parent uuid of extra lanes */
	int32_t pid;
	const char *base;             /* name extra lanes derive from */
};

struct layout {
	const struct replay *rp;
	const struct export_options *opt;
	struct xtrack *tracks;
	size_t n_tracks, cap_tracks;
	struct xslice *slices;
	size_t n_slices, cap_slices;
	struct xmark *marks;
	struct replay_key *keys;      /* key = time, idx = mark */
	size_t n_marks, cap_marks, cap_keys;
	struct xcount *counts;
	size_t n_counts, cap_counts;
	uint8_t *act_kept;            /* per activity: exported */
	int32_t *thread_tid;          /* per rp->threads */
	uint32_t *thread_track;       /* per rp->threads: its track */
	int32_t next_tid;             /* Chrome tids of extra lanes */
	uint64_t extra_lanes;
	/* memory counters: per view, total + per category track (UINT32_MAX none) */
	uint32_t mem_track[2][ST_MEM_CATEGORY_COUNT + 1];
	int mem_device;
	uint32_t steps_track;         /* OOM instants go there */
};

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
	t = &L->tracks[L->n_tracks];
	t->name = strdup(buf);
	if (!t->name)
		return error("out of memory");
	t->uuid = L->n_tracks + 1;
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

/* Closes the lane's slices that end before n begins (or exactly when, unless n nests in them). */
static int lane_pop(struct layout *L, struct lane *ln, const struct node *n)
{
	while (ln->n) {
		const struct xslice *e = &L->slices[ln->stack[ln->n - 1]];
		if (e->end > n->start || (e->end == n->start && tree_ancestor(L->rp, e, n)))
			break;
		if (add_mark(L, e->end, MK_END, ln->stack[ln->n - 1]) < 0)
			return -1;
		ln->n--;
	}
	return 0;
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

static int lane_push(struct layout *L, struct lane *ln, const struct node *n)
{
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
	return add_mark(L, n->start, MK_BEGIN, (uint32_t)L->n_slices++);
}

/* Places n on the first lane of g where it nests, opening a lane when none fits. */
static int place(struct layout *L, struct lane_group *g, const struct node *n)
{
	for (size_t i = 0;; i++) {
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
		struct lane *ln = &g->lanes[i];
		if (lane_pop(L, ln, n) < 0)
			return -1;
		if (ln->n == 0 || (!g->flat && n->end <= L->slices[ln->stack[ln->n - 1]].end))
			return lane_push(L, ln, n);
	}
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
	g->lanes = NULL;
	g->n = g->cap = 0;
	return rc;
}

static int group_init(struct lane_group *g, uint32_t track, bool flat, uint64_t extra_parent,
		      int32_t pid, const char *base)
{
	memset(g, 0, sizeof(*g));
	if (ALLOC_GROW(g->lanes, 1, g->cap) < 0)
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

/* ---- what is exported ---------------------------------------------------- */

static bool in_window(const struct layout *L, uint64_t start)
{
	const struct replay_step *s;

	if (L->opt->step < 0)
		return true;
	s = &L->rp->steps[L->opt->step];
	return start >= s->start && start <= s->end;
}

static bool keep_activity(const struct layout *L, const struct replay_activity *a)
{
	return L->opt->step < 0 || a->step == L->opt->step;
}

static bool keep_range(const struct layout *L, const struct replay_range *r)
{
	return L->opt->step < 0 || r->step == L->opt->step;
}

static bool keep_api(const struct layout *L, const struct replay_api *a)
{
	return !L->opt->no_api && in_window(L, a->start);
}

/* ---- tracks and slices ------------------------------------------------- */

static const char *device_name(const struct replay *rp, uint32_t device)
{
	if (rp->run.has_device && rp->run.device.index == device && *rp->run.device.name)
		return rp->run.device.name;
	return NULL;
}

/* One process track per device that has a stream, in stream order; returns its track. */
static int gpu_process(struct layout *L, uint32_t device, uint32_t *track)
{
	for (size_t i = 0; i < L->n_tracks; i++)
		if (L->tracks[i].kind == TK_PROCESS && L->tracks[i].pid == GPU_PID(device)) {
			*track = (uint32_t)i;
			return 0;
		}
	const char *name = device_name(L->rp, device);
	if (name)
		return add_track(L, TK_PROCESS, 0, GPU_PID(device), 0, track, "GPU %" PRIu32 " %s",
				 device, name);
	return add_track(L, TK_PROCESS, 0, GPU_PID(device), 0, track, "GPU %" PRIu32, device);
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
		    add_track(L, TK_CHILD, L->tracks[proc].uuid, GPU_PID(st->device),
			      (int32_t)(st->stream & 0x7fffffff), &track, "stream %" PRIu32, st->stream) < 0 ||
		    group_init(&g, track, true, L->tracks[proc].uuid, GPU_PID(st->device),
			       L->tracks[track].name) < 0)
			return -1;
		for (size_t i = 0; i < st->n && rc == 0; i++) {
			const struct replay_activity *a = &rp->activities[st->acts[i]];
			struct node n = { a->start, a->end < a->start ? a->start : a->end, st->acts[i], 0,
					  SL_ACTIVITY };
			if (!keep_activity(L, a))
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
		if (keep_range(L, r))
			nodes[n++] = (struct node){ r->start, r->end < r->start ? r->start : r->end,
						    th->ranges[i], r->depth, SL_RANGE };
	}
	for (size_t i = 0; i < th->n_apis; i++) {
		const struct replay_api *a = &rp->apis[th->apis[i]];
		uint32_t depth = a->range >= 0 && (size_t)a->range < rp->n_ranges
					 ? rp->ranges[a->range].depth + 1 : 0;
		if (keep_api(L, a))
			nodes[n++] = (struct node){ a->start, a->end < a->start ? a->start : a->end,
						    th->apis[i], depth, SL_API };
	}
	qsort(nodes, n, sizeof(*nodes), cmp_node);
	if (group_init(&g, L->thread_track[ti], false, L->tracks[L->thread_track[ti]].uuid, HOST_PID,
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

	if (add_track(L, TK_PROCESS, 0, HOST_PID, 0, &proc, "host") < 0)
		return -1;
	assign_tids(L);
	for (size_t i = 0; i < rp->n_threads; i++) {
		uint64_t id = rp->threads[i].thread;
		if (add_track(L, TK_THREAD, L->tracks[proc].uuid, HOST_PID, L->thread_tid[i],
			      &L->thread_track[i], "thread %" PRIu64 "%s", id,
			      id == rp->main_thread ? " (main)" : "") < 0)
			return -1;
	}
	if (rp->n_steps || rp->counts[ST_OOM]) {
		if (add_track(L, TK_CHILD, L->tracks[proc].uuid, HOST_PID, STEPS_TID, &steps, "steps") < 0 ||
		    group_init(&g, steps, true, L->tracks[proc].uuid, HOST_PID, "steps") < 0)
			return -1;
		L->steps_track = steps;
		for (size_t i = 0; i < rp->n_steps && rc == 0; i++) {
			const struct replay_step *s = &rp->steps[i];
			struct node n = { s->start, s->end < s->start ? s->start : s->end, (uint32_t)i, 0, SL_STEP };
			if (L->opt->step < 0 || (int32_t)i == L->opt->step)
				rc = place(L, &g, &n);
		}
		if (group_close(L, &g) < 0 || rc < 0)
			return -1;
		for (size_t i = 0; i < rp->n_mem; i++)
			if (rp->mem[i].ev.kind == ST_OOM && in_window(L, rp->mem[i].ev.start) &&
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

/* Counter tracks of one memory view: its total and, for the model view, each category seen. */
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
	if (add_track(L, TK_COUNTER, L->tracks[proc].uuid, GPU_PID(L->mem_device), 0,
		      &tr[ST_MEM_CATEGORY_COUNT], "live memory, %s: total", mem_view_name(view)) < 0)
		goto out;
	for (int c = 0; view == MEM_VIEW_MODEL && c < ST_MEM_CATEGORY_COUNT; c++)
		if (seen[c] && add_track(L, TK_COUNTER, L->tracks[proc].uuid, GPU_PID(L->mem_device), 0,
					 &tr[c], "live memory, %s: %s", mem_view_name(view),
					 st_mem_category_name(c)) < 0)
			goto out;

	/* with --step, start from what was live when the step began */
	if (L->opt->step >= 0) {
		const struct replay_step *s = &rp->steps[L->opt->step];
		int32_t p = mem_timeline_point_at(&tl, s->start);
		mem_timeline_categories_at(&tl, p, cat);
		live = p >= 0 ? tl.points[p].live : 0;
		first = p + 1;
		if (add_count(L, s->start, tr[ST_MEM_CATEGORY_COUNT], (int64_t)live, (uint16_t)view,
			      ST_MEM_CATEGORY_COUNT) < 0)
			goto out;
		for (int c = 0; c < ST_MEM_CATEGORY_COUNT; c++)
			if (tr[c] != UINT32_MAX &&
			    add_count(L, s->start, tr[c], (int64_t)cat[c], (uint16_t)view, (uint16_t)c) < 0)
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
		if (!in_window(L, p->t))
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

static void layout_release(struct layout *L)
{
	for (size_t i = 0; i < L->n_tracks; i++)
		free(L->tracks[i].name);
	free(L->tracks);
	free(L->slices);
	free(L->marks);
	free(L->keys);
	free(L->counts);
	free(L->act_kept);
	free(L->thread_tid);
	free(L->thread_track);
	memset(L, 0, sizeof(*L));
}

static int layout_build(struct layout *L, const struct replay *rp, const struct export_options *opt)
{
	struct replay_key *tmp;

	memset(L, 0, sizeof(*L));
	L->rp = rp;
	L->opt = opt;
	L->act_kept = calloc(rp->n_activities + 1, 1);
	L->thread_tid = calloc(rp->n_threads + 1, sizeof(*L->thread_tid));
	L->thread_track = calloc(rp->n_threads + 1, sizeof(*L->thread_track));
	if (!L->act_kept || !L->thread_tid || !L->thread_track)
		return error("out of memory");
	L->mem_device = rp->n_streams ? (int)rp->streams[0].device : 0;
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

/* The flow from a launch call to the first activity it launched: its correlation id, 0 none. */
static uint64_t launch_flow(const struct layout *L, const struct replay_api *api)
{
	if (L->opt->no_api || api->activity < 0 || (size_t)api->activity >= L->rp->n_activities ||
	    !L->act_kept[api->activity] || api->correlation == 0)
		return 0;
	return api->correlation;
}

static uint64_t activity_flow(const struct layout *L, const struct replay_activity *a, uint32_t idx)
{
	const struct replay_api *api;

	if (a->api < 0 || (size_t)a->api >= L->rp->n_apis)
		return 0;
	api = &L->rp->apis[a->api];
	if (api->activity != (int32_t)idx || !keep_api(L, api))
		return 0;
	return launch_flow(L, api);
}

static const char *slice_name(const struct layout *L, const struct xslice *s, char *buf, size_t len)
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

static const char *const slice_category[] = { "gpu", "nvtx", "cuda_api", "step" };

/* Annotation keys; the Perfetto writer interns them as iid = index + 1. */
enum ann_key {
	ANN_OP, ANN_NVTX, ANN_CORRELATION, ANN_GRID, ANN_BLOCK, ANN_REGISTERS, ANN_SMEM,
	ANN_BYTES, ANN_PATH, ANN_GPU_NS, ANN_KERNELS, ANN_DTYPES, ANN_COUNT
};
static const char *const ann_names[ANN_COUNT] = {
	"op", "nvtx", "correlation", "grid", "block", "registers per thread",
	"shared memory (B)", "bytes", "path", "gpu time (ns)", "kernels", "dtypes",
};

/* One annotation: a string or an unsigned value. */
struct ann {
	uint8_t key;
	bool is_str;
	const char *str;
	uint64_t u;
};

#define MAX_ANN 8

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
static size_t slice_annotations(const struct layout *L, const struct xslice *s, struct ann *a,
				char bufs[3][256])
{
	const struct replay *rp = L->rp;
	size_t n = 0;

#define ANN_S(k, v) (a[n++] = (struct ann){ (k), true, (v), 0 })
#define ANN_U(k, v) (a[n++] = (struct ann){ (k), false, NULL, (v) })
	if (s->what == SL_ACTIVITY) {
		const struct replay_activity *x = &rp->activities[s->idx];
		const struct replay_op *op = replay_op(rp, x->op);
		const char *path = replay_activity_path(rp, x);
		if (op) {
			const char *p = replay_str(rp, op->path);
			ANN_S(ANN_OP, *p ? p : replay_str(rp, op->name));
			if (op->n_inputs || op->n_outputs) {
				fmt_dtypes(bufs[2], sizeof(bufs[2]), op);
				ANN_S(ANN_DTYPES, bufs[2]);
			}
		}
		if (*path)
			ANN_S(ANN_NVTX, path);
		ANN_U(ANN_CORRELATION, x->correlation);
		if (x->kind == ST_KERNEL && x->detail < rp->n_kernel_cfg) {
			const struct replay_kernel_cfg *k = &rp->kernel_cfg[x->detail];
			fmt_dim(bufs[0], sizeof(bufs[0]), k->grid);
			fmt_dim(bufs[1], sizeof(bufs[1]), k->block);
			ANN_S(ANN_GRID, bufs[0]);
			ANN_S(ANN_BLOCK, bufs[1]);
			ANN_U(ANN_REGISTERS, k->registers);
			ANN_U(ANN_SMEM, (uint64_t)k->static_smem + k->dynamic_smem);
		} else if (x->kind != ST_KERNEL) {
			ANN_U(ANN_BYTES, x->bytes);
		}
	} else if (s->what == SL_RANGE) {
		const struct replay_range *r = &rp->ranges[s->idx];
		ANN_S(ANN_PATH, replay_range_path(rp, r));
		if (r->gpu_end > r->gpu_start)
			ANN_U(ANN_GPU_NS, r->gpu_end - r->gpu_start);
		ANN_U(ANN_KERNELS, r->kernels);
	} else if (s->what == SL_API) {
		ANN_U(ANN_CORRELATION, rp->apis[s->idx].correlation);
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

static void oom_name(const struct replay *rp, uint32_t mem, char *buf, size_t len)
{
	const struct st_event *e = &rp->mem[mem].ev;
	const struct replay_op *op = replay_op(rp, e->oom.op);

	snprintf(buf, len, "OOM: %" PRIu64 " B %s request%s%s", e->oom.requested,
		 st_mem_category_name((int)e->oom.category), op ? " by " : "",
		 op ? replay_str(rp, op->path) : "");
}

/* ---- Perfetto writer ------------------------------------------------------ */

#define SEQ_ID 1

/* Strings to interning ids, per field: open addressing, keys owned. */
struct interner {
	char **keys;
	uint64_t *iids;
	size_t cap, n;
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* The iid of s (>= 1); *fresh when s was not interned before. 0 on allocation failure. */
static uint64_t intern(struct interner *in, const char *s, bool *fresh)
{
	size_t i;

	if (in->n * 2 >= in->cap) {
		size_t nc = in->cap ? in->cap * 2 : 1024;
		char **k = calloc(nc, sizeof(*k));
		uint64_t *v = calloc(nc, sizeof(*v));
		if (!k || !v) {
			free(k);
			free(v);
			return 0;
		}
		for (size_t j = 0; j < in->cap; j++) {
			if (!in->keys[j])
				continue;
			for (i = hash_str(in->keys[j]) & (nc - 1); k[i]; i = (i + 1) & (nc - 1))
				;
			k[i] = in->keys[j];
			v[i] = in->iids[j];
		}
		free(in->keys);
		free(in->iids);
		in->keys = k;
		in->iids = v;
		in->cap = nc;
	}
	for (i = hash_str(s) & (in->cap - 1); in->keys[i]; i = (i + 1) & (in->cap - 1))
		if (strcmp(in->keys[i], s) == 0) {
			*fresh = false;
			return in->iids[i];
		}
	in->keys[i] = strdup(s);
	if (!in->keys[i])
		return 0;
	in->iids[i] = ++in->n;
	*fresh = true;
	return in->iids[i];
}

static void interner_release(struct interner *in)
{
	for (size_t i = 0; i < in->cap; i++)
		free(in->keys[i]);
	free(in->keys);
	free(in->iids);
	memset(in, 0, sizeof(*in));
}

struct pf_writer {
	FILE *out;
	uint8_t *buf;
	size_t cap;
	struct interner names, strings;
	bool failed;
};

/* Writes one packet as Trace.packet (field 1, length-delimited): the file is a Trace. */
static int pf_write(struct pf_writer *w, const Perfetto__Protos__TracePacket *p)
{
	size_t len = perfetto__protos__trace_packet__get_packed_size(p);
	uint8_t head[11];
	size_t h = 0;

	if (ALLOC_GROW(w->buf, len + 1, w->cap) < 0)
		return -1;
	perfetto__protos__trace_packet__pack(p, w->buf);
	head[h++] = 0x0a;
	for (uint64_t v = len; ; v >>= 7) {
		head[h++] = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
		if (v < 0x80)
			break;
	}
	if (fwrite(head, 1, h, w->out) != h || fwrite(w->buf, 1, len, w->out) != len) {
		w->failed = true;
		return error("cannot write the trace: %s", strerror(errno));
	}
	return 0;
}

static int pf_tracks(struct pf_writer *w, const struct layout *L)
{
	Perfetto__Protos__DebugAnnotationName names[ANN_COUNT];
	Perfetto__Protos__DebugAnnotationName *name_ptrs[ANN_COUNT];

	for (int i = 0; i < ANN_COUNT; i++) {
		perfetto__protos__debug_annotation_name__init(&names[i]);
		names[i].has_iid = 1;
		names[i].iid = (uint64_t)i + 1;
		names[i].name = (char *)ann_names[i];
		name_ptrs[i] = &names[i];
	}
	for (size_t i = 0; i < L->n_tracks; i++) {
		const struct xtrack *t = &L->tracks[i];
		Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
		Perfetto__Protos__TrackDescriptor td = PERFETTO__PROTOS__TRACK_DESCRIPTOR__INIT;
		Perfetto__Protos__ProcessDescriptor pd = PERFETTO__PROTOS__PROCESS_DESCRIPTOR__INIT;
		Perfetto__Protos__ThreadDescriptor thd = PERFETTO__PROTOS__THREAD_DESCRIPTOR__INIT;
		Perfetto__Protos__CounterDescriptor cd = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__INIT;
		Perfetto__Protos__InternedData id = PERFETTO__PROTOS__INTERNED_DATA__INIT;

		p.has_trusted_packet_sequence_id = 1;
		p.trusted_packet_sequence_id = SEQ_ID;
		if (i == 0) {
			/* the first packet clears the sequence's state and interns the annotation names */
			p.has_sequence_flags = 1;
			p.sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_INCREMENTAL_STATE_CLEARED;
			p.has_first_packet_on_sequence = 1;
			p.first_packet_on_sequence = 1;
			id.n_debug_annotation_names = ANN_COUNT;
			id.debug_annotation_names = name_ptrs;
			p.interned_data = &id;
		}
		p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_DESCRIPTOR;
		p.track_descriptor = &td;
		td.has_uuid = 1;
		td.uuid = t->uuid;
		if (t->parent) {
			td.has_parent_uuid = 1;
			td.parent_uuid = t->parent;
		}
		switch (t->kind) {
		case TK_PROCESS:
			pd.has_pid = 1;
			pd.pid = t->pid;
			pd.process_name = t->name;
			td.process = &pd;
			break;
		case TK_THREAD:
			thd.has_pid = 1;
			thd.pid = t->pid;
			thd.has_tid = 1;
			thd.tid = t->tid;
			thd.thread_name = t->name;
			td.thread = &thd;
			break;
		case TK_COUNTER:
			cd.has_unit = 1;
			cd.unit = PERFETTO__PROTOS__COUNTER_DESCRIPTOR__UNIT__UNIT_SIZE_BYTES;
			td.counter = &cd;
			td.name = t->name;
			break;
		default:
			td.name = t->name;
			break;
		}
		if (pf_write(w, &p) < 0)
			return -1;
	}
	return 0;
}

/* Interns s in `in`; a fresh string is appended to the packet's interned entries. */
static uint64_t pf_intern(struct interner *in, const char *s, Perfetto__Protos__InternedString *fresh_out,
			  size_t *n_fresh)
{
	bool fresh = false;
	uint64_t iid = intern(in, s, &fresh);

	if (iid && fresh) {
		Perfetto__Protos__InternedString *e = &fresh_out[(*n_fresh)++];
		perfetto__protos__interned_string__init(e);
		e->has_iid = 1;
		e->iid = iid;
		e->has_str = 1;
		e->str.data = (uint8_t *)s;
		e->str.len = strlen(s);
	}
	return iid;
}

static int pf_event(struct pf_writer *w, const struct layout *L, const struct xmark *m, uint64_t t)
{
	Perfetto__Protos__TracePacket p = PERFETTO__PROTOS__TRACE_PACKET__INIT;
	Perfetto__Protos__TrackEvent ev = PERFETTO__PROTOS__TRACK_EVENT__INIT;
	Perfetto__Protos__InternedData id = PERFETTO__PROTOS__INTERNED_DATA__INIT;
	Perfetto__Protos__EventName en = PERFETTO__PROTOS__EVENT_NAME__INIT, *en_ptr = &en;
	Perfetto__Protos__InternedString istr[MAX_ANN], *istr_ptrs[MAX_ANN];
	Perfetto__Protos__DebugAnnotation da[MAX_ANN], *da_ptrs[MAX_ANN];
	struct ann ann[MAX_ANN];
	char bufs[3][256], namebuf[512];
	uint64_t flow;
	size_t n_istr = 0;

	p.has_timestamp = 1;
	p.timestamp = t;
	p.has_trusted_packet_sequence_id = 1;
	p.trusted_packet_sequence_id = SEQ_ID;
	p.has_sequence_flags = 1;
	p.sequence_flags = PERFETTO__PROTOS__TRACE_PACKET__SEQUENCE_FLAGS__SEQ_NEEDS_INCREMENTAL_STATE;
	p.data_case = PERFETTO__PROTOS__TRACE_PACKET__DATA_TRACK_EVENT;
	p.track_event = &ev;
	ev.has_type = 1;
	ev.has_track_uuid = 1;

	if (m->type == MK_COUNTER) {
		const struct xcount *c = &L->counts[m->ref];
		ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_COUNTER;
		ev.track_uuid = L->tracks[c->track].uuid;
		ev.counter_value_field_case = PERFETTO__PROTOS__TRACK_EVENT__COUNTER_VALUE_FIELD_COUNTER_VALUE;
		ev.counter_value = c->value;
		return pf_write(w, &p);
	}
	if (m->type == MK_INSTANT) {
		oom_name(L->rp, m->ref, namebuf, sizeof(namebuf));
		ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_INSTANT;
		ev.track_uuid = L->tracks[L->steps_track].uuid;
		ev.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME;
		ev.name = namebuf;
		return pf_write(w, &p);
	}

	const struct xslice *s = &L->slices[m->ref];
	ev.track_uuid = L->tracks[s->track].uuid;
	if (m->type == MK_END) {
		ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_END;
		return pf_write(w, &p);
	}
	ev.type = PERFETTO__PROTOS__TRACK_EVENT__TYPE__TYPE_SLICE_BEGIN;

	/* name: interned (kernel names are long and repeat) */
	const char *name = slice_name(L, s, namebuf, sizeof(namebuf));
	bool fresh = false;
	uint64_t iid = intern(&w->names, name, &fresh);
	if (!iid)
		return error("out of memory");
	ev.name_field_case = PERFETTO__PROTOS__TRACK_EVENT__NAME_FIELD_NAME_IID;
	ev.name_iid = iid;
	if (fresh) {
		en.has_iid = 1;
		en.iid = iid;
		en.name = (char *)name;
		id.n_event_names = 1;
		id.event_names = &en_ptr;
	}

	size_t n_ann = slice_annotations(L, s, ann, bufs);
	for (size_t i = 0; i < n_ann; i++) {
		Perfetto__Protos__DebugAnnotation *d = &da[i];
		perfetto__protos__debug_annotation__init(d);
		d->name_field_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__NAME_FIELD_NAME_IID;
		d->name_iid = (uint64_t)ann[i].key + 1;
		if (ann[i].is_str) {
			uint64_t sid = pf_intern(&w->strings, ann[i].str, istr, &n_istr);
			if (!sid)
				return error("out of memory");
			d->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_STRING_VALUE_IID;
			d->string_value_iid = sid;
		} else {
			d->value_case = PERFETTO__PROTOS__DEBUG_ANNOTATION__VALUE_UINT_VALUE;
			d->uint_value = ann[i].u;
		}
		da_ptrs[i] = d;
	}
	ev.n_debug_annotations = n_ann;
	ev.debug_annotations = da_ptrs;
	for (size_t i = 0; i < n_istr; i++)
		istr_ptrs[i] = &istr[i];
	if (n_istr) {
		id.n_debug_annotation_string_values = n_istr;
		id.debug_annotation_string_values = istr_ptrs;
	}
	if (fresh || n_istr)
		p.interned_data = &id;

	flow = 0;
	if (s->what == SL_API)
		flow = launch_flow(L, &L->rp->apis[s->idx]);
	else if (s->what == SL_ACTIVITY)
		flow = activity_flow(L, &L->rp->activities[s->idx], s->idx);
	if (flow && s->what == SL_API) {
		ev.n_flow_ids = 1;
		ev.flow_ids = &flow;
	} else if (flow) {
		ev.n_terminating_flow_ids = 1;
		ev.terminating_flow_ids = &flow;
	}
	return pf_write(w, &p);
}

static int write_perfetto(const struct layout *L, FILE *out)
{
	struct pf_writer w = { .out = out };
	int rc = -1;

	if (pf_tracks(&w, L) < 0)
		goto out;
	for (size_t i = 0; i < L->n_marks; i++) {
		const struct replay_key *k = &L->keys[i];
		if (pf_event(&w, L, &L->marks[k->idx], k->key) < 0)
			goto out;
	}
	rc = 0;
out:
	free(w.buf);
	interner_release(&w.names);
	interner_release(&w.strings);
	return rc;
}

/* ---- Chrome JSON writer -------------------------------------------------- */

/* µs with the ns kept: 15 significant digits print any ns below 10^15 exactly. */
#define CHROME_DUMP_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

static json_t *us(uint64_t ns)
{
	return json_real((double)ns / 1000.0);
}

struct chrome_writer {
	FILE *out;
	bool first;
	bool failed;
};

/* Writes ev (and drops the reference) as the next element of traceEvents. */
static int chrome_emit(struct chrome_writer *w, json_t *ev)
{
	int rc;

	if (!ev)
		return error("out of memory");
	if (!w->first)
		fputs(",\n", w->out);
	w->first = false;
	rc = json_dumpf(ev, w->out, CHROME_DUMP_FLAGS);
	json_decref(ev);
	if (rc < 0 || ferror(w->out)) {
		w->failed = true;
		return error("cannot write the trace: %s", strerror(errno));
	}
	return 0;
}

static int chrome_metadata(struct chrome_writer *w, const struct layout *L)
{
	for (size_t i = 0; i < L->n_tracks; i++) {
		const struct xtrack *t = &L->tracks[i];
		const char *what = t->kind == TK_PROCESS ? "process_name" : "thread_name";
		if (t->kind == TK_COUNTER)
			continue;
		json_t *ev = json_pack("{s:s, s:s, s:i, s:i, s:{s:s}}", "name", what, "ph", "M",
				       "pid", (json_int_t)t->pid, "tid", (json_int_t)t->tid,
				       "args", "name", t->name);
		if (chrome_emit(w, ev) < 0)
			return -1;
		if (t->kind == TK_PROCESS) {
			ev = json_pack("{s:s, s:s, s:i, s:i, s:{s:i}}", "name", "process_sort_index",
				       "ph", "M", "pid", (json_int_t)t->pid, "tid", (json_int_t)0,
				       "args", "sort_index", (json_int_t)(t->pid == HOST_PID ? 0 : t->pid));
			if (chrome_emit(w, ev) < 0)
				return -1;
		}
	}
	return 0;
}

static json_t *chrome_args(const struct layout *L, const struct xslice *s)
{
	struct ann ann[MAX_ANN];
	char bufs[3][256];
	size_t n = slice_annotations(L, s, ann, bufs);
	json_t *args = json_object();

	for (size_t i = 0; args && i < n; i++)
		json_object_set_new(args, ann_names[ann[i].key],
				    ann[i].is_str ? json_string(ann[i].str)
						  : json_integer((json_int_t)ann[i].u));
	return args;
}

static int chrome_slice(struct chrome_writer *w, const struct layout *L, const struct xslice *s)
{
	const struct xtrack *t = &L->tracks[s->track];
	char namebuf[512];
	uint64_t flow = 0;
	json_t *ev;

	ev = json_pack("{s:s, s:s, s:s, s:o, s:o, s:i, s:i, s:o}",
		       "name", slice_name(L, s, namebuf, sizeof(namebuf)),
		       "cat", slice_category[s->what], "ph", "X", "ts", us(s->start),
		       "dur", us(s->end - s->start), "pid", (json_int_t)t->pid, "tid", (json_int_t)t->tid,
		       "args", chrome_args(L, s));
	if (chrome_emit(w, ev) < 0)
		return -1;
	if (s->what == SL_API)
		flow = launch_flow(L, &L->rp->apis[s->idx]);
	else if (s->what == SL_ACTIVITY)
		flow = activity_flow(L, &L->rp->activities[s->idx], s->idx);
	if (!flow)
		return 0;
	ev = json_pack("{s:s, s:s, s:s, s:I, s:o, s:i, s:i}", "name", "launch", "cat", "launch",
		       "ph", s->what == SL_API ? "s" : "f", "id", (json_int_t)flow, "ts", us(s->start),
		       "pid", (json_int_t)t->pid, "tid", (json_int_t)t->tid);
	if (ev && s->what != SL_API)
		json_object_set_new(ev, "bp", json_string("e"));
	return chrome_emit(w, ev);
}

/*
 * Memory: one "C" event per view and instant carrying every series of that
 * view (Chrome stacks the series of one counter); values are carried over
 * from the last event.
 */
static int chrome_counter(struct chrome_writer *w, const struct layout *L, const struct xcount *c,
			  int64_t values[2][ST_MEM_CATEGORY_COUNT + 1], bool last_of_instant)
{
	const uint32_t *tr = L->mem_track[c->group];
	json_t *args, *ev;
	bool any = false;

	values[c->group][c->series] = c->value;
	if (!last_of_instant)
		return 0;
	/* the model view's categories stack up to its total; the driver view has only the total */
	args = json_object();
	for (int k = 0; args && k < ST_MEM_CATEGORY_COUNT; k++)
		if (tr[k] != UINT32_MAX) {
			json_object_set_new(args, st_mem_category_name(k), json_integer(values[c->group][k]));
			any = true;
		}
	if (args && !any)
		json_object_set_new(args, "total", json_integer(values[c->group][ST_MEM_CATEGORY_COUNT]));
	ev = json_pack("{s:s, s:s, s:o, s:i, s:i, s:o}", "name",
		       c->group == MEM_VIEW_MODEL ? "live memory (model allocator)"
						  : "live memory (cudaMalloc)",
		       "ph", "C", "ts", us(c->t), "pid", (json_int_t)GPU_PID(L->mem_device),
		       "tid", (json_int_t)0, "args", args);
	return chrome_emit(w, ev);
}

static int write_chrome(const struct layout *L, FILE *out)
{
	struct chrome_writer w = { out, true, false };
	int64_t values[2][ST_MEM_CATEGORY_COUNT + 1] = { { 0 } };
	const struct replay *rp = L->rp;
	char namebuf[512];
	json_t *other;

	fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":", out);
	other = json_pack("{s:s, s:s}", "generator", "steptrace export --format chrome",
			  "bundle", rp->path ? rp->path : "");
	if (other && rp->run.has_header) {
		json_object_set_new(other, "time_base_ns", json_integer((json_int_t)rp->run.time_base_ns));
		json_object_set_new(other, "command_line", json_string(rp->run.command_line));
	}
	if (!other || json_dumpf(other, out, CHROME_DUMP_FLAGS) < 0) {
		json_decref(other);
		return error("cannot write the trace");
	}
	json_decref(other);
	fputs(",\"traceEvents\":[\n", out);
	if (chrome_metadata(&w, L) < 0)
		return -1;
	for (size_t i = 0; i < L->n_marks; i++) {
		const struct replay_key *k = &L->keys[i];
		const struct xmark *m = &L->marks[k->idx];
		int rc = 0;

		if (m->type == MK_BEGIN) {
			rc = chrome_slice(&w, L, &L->slices[m->ref]);
		} else if (m->type == MK_COUNTER) {
			const struct xcount *c = &L->counts[m->ref];
			bool last = true;
			if (i + 1 < L->n_marks) {
				const struct xmark *nx = &L->marks[L->keys[i + 1].idx];
				last = !(nx->type == MK_COUNTER && L->keys[i + 1].key == k->key &&
					 L->counts[nx->ref].group == c->group);
			}
			rc = chrome_counter(&w, L, c, values, last);
		} else if (m->type == MK_INSTANT) {
			oom_name(rp, m->ref, namebuf, sizeof(namebuf));
			rc = chrome_emit(&w, json_pack("{s:s, s:s, s:s, s:o, s:i, s:i}", "name", namebuf,
						       "ph", "i", "s", "g", "ts", us(k->key),
						       "pid", (json_int_t)HOST_PID, "tid", (json_int_t)STEPS_TID));
		}
		if (rc < 0)
			return -1;
	}
	fputs("\n]}\n", out);
	return ferror(out) ? error("cannot write the trace: %s", strerror(errno)) : 0;
}

/* ---- entry points ---------------------------------------------------------- */

int export_write(const struct replay *rp, const struct export_options *opt, FILE *out,
		 struct export_stats *stats)
{
	struct layout L;
	int rc;

	if (opt->step >= 0 && (size_t)opt->step >= rp->n_steps)
		return error("no step %" PRId32 " in the bundle (it has %zu)", opt->step, rp->n_steps);
	rc = layout_build(&L, rp, opt);
	if (rc == 0)
		rc = opt->format == EXPORT_PERFETTO ? write_perfetto(&L, out) : write_chrome(&L, out);
	if (rc == 0 && stats) {
		memset(stats, 0, sizeof(*stats));
		stats->tracks = L.n_tracks;
		stats->slices = L.n_slices;
		stats->counters = L.n_counts;
		stats->extra_lanes = L.extra_lanes;
		for (size_t i = 0; i < L.n_slices; i++)
			if (L.slices[i].what == SL_API && launch_flow(&L, &rp->apis[L.slices[i].idx]))
				stats->flows++;
	}
	layout_release(&L);
	return rc;
}

/* "run.stb" -> "run.pftrace" / "run.json" in the current directory. */
static char *default_output(const char *bundle, int f)
{
	const char *base = strrchr(bundle, '/');
	const char *ext = f == EXPORT_PERFETTO ? ".pftrace" : ".json";
	size_t n;
	char *out;

	base = base ? base + 1 : bundle;
	n = strlen(base);
	if (n > 4 && strcmp(base + n - 4, ".stb") == 0)
		n -= 4;
	out = malloc(n + strlen(ext) + 1);
	if (out) {
		memcpy(out, base, n);
		strcpy(out + n, ext);
	}
	return out;
}

int export_run(const struct replay *rp, const struct export_options *opt)
{
	const char *output = opt->output;
	struct export_stats stats;
	char *owned = NULL;
	FILE *out;
	int rc = -1;
	bool to_stdout;

	if (!output)
		output = owned = default_output(rp->path, opt->format);
	if (!output)
		return error("out of memory");
	to_stdout = strcmp(output, "-") == 0;
	out = to_stdout ? stdout : fopen(output, "wb");
	if (!out) {
		error("cannot create '%s': %s", output, strerror(errno));
		goto out;
	}
	rc = export_write(rp, opt, out, &stats);
	if (to_stdout ? fflush(out) != 0 : fclose(out) != 0) {
		if (rc == 0)
			error("cannot write '%s': %s", output, strerror(errno));
		rc = -1;
	}
	if (rc != 0 && !to_stdout) {
		remove(output);
	} else if (rc == 0) {
		fprintf(stderr, "wrote '%s': %" PRIu64 " tracks, %" PRIu64 " slices, %" PRIu64
			" counter values, %" PRIu64 " launch flows", output, stats.tracks, stats.slices,
			stats.counters, stats.flows);
		if (stats.extra_lanes)
			fprintf(stderr, " (%" PRIu64 " extra lanes for slices that overlap without nesting)",
				stats.extra_lanes);
		fprintf(stderr, "\n%s\n", opt->format == EXPORT_PERFETTO
			? "open it at https://ui.perfetto.dev (Open trace file); the file stays on your machine"
			: "open it at https://ui.perfetto.dev or chrome://tracing");
	}
out:
	free(owned);
	return rc;
}
