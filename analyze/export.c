/*
 * export.c: a replay written as a trace for timeline viewers (see
 * export.h): the layout both writers walk (export_internal.h) and the
 * entry points.
 *
 * The layout comes first: tracks (host process and threads, steps, one
 * process per GPU with its streams, memory counters) and slices placed on
 * them so that every track nests properly; then "marks" (slice begins and
 * ends, counter values) sorted by time, stably, so that a track's marks keep
 * the order that makes them nest even when times tie. The two writers only
 * encode marks: Perfetto packets (export_perfetto.c) or Chrome JSON events
 * (export_chrome.c).
 */
#include "analyze/export_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/common.h"
#include "lib/error.h"
#include "lib/grow.h"
#include "lib/output.h"

const char *const export_format_names[] = { "perfetto", "chrome", "json", NULL };

#define MAX_TREE_DEPTH 100000

/* ---- layout ------------------------------------------------------------ */

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
	free(L->thread_tid);
	free(L->thread_track);
	memset(L, 0, sizeof(*L));
}

int export_layout_build(struct layout *L, const struct replay *rp, const struct export_options *opt)
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
uint64_t export_launch_flow(const struct layout *L, const struct replay_api *api)
{
	if (L->opt->no_api || api->activity < 0 || (size_t)api->activity >= L->rp->n_activities ||
	    !L->act_kept[api->activity] || api->correlation == 0)
		return 0;
	return api->correlation;
}

uint64_t export_activity_flow(const struct layout *L, const struct replay_activity *a, uint32_t idx)
{
	const struct replay_api *api;

	if (a->api < 0 || (size_t)a->api >= L->rp->n_apis)
		return 0;
	api = &L->rp->apis[a->api];
	if (api->activity != (int32_t)idx || !keep_api(L, api))
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

const char *const export_slice_category[] = { "gpu", "nvtx", "cuda_api", "step" };
const char *const export_ann_names[ANN_COUNT] = {
	"op", "nvtx", "correlation", "grid", "block", "registers per thread",
	"shared memory (B)", "bytes", "path", "gpu time (ns)", "kernels", "dtypes",
};

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

void export_oom_name(const struct replay *rp, uint32_t mem, char *buf, size_t len)
{
	const struct st_event *e = &rp->mem[mem].ev;
	const struct replay_op *op = replay_op(rp, e->oom.op);

	snprintf(buf, len, "OOM: %" PRIu64 " B %s request%s%s", e->oom.requested,
		 st_mem_category_name((int)e->oom.category), op ? " by " : "",
		 op ? replay_str(rp, op->path) : "");
}

/* ---- entry points ---------------------------------------------------------- */

int export_write(const struct replay *rp, const struct export_options *opt, FILE *out,
		 struct export_stats *stats)
{
	struct layout L;
	int rc;

	if (opt->step >= 0 && (size_t)opt->step >= rp->n_steps)
		return error("no step %" PRId32 " in the bundle (it has %zu)", opt->step, rp->n_steps);
	rc = export_layout_build(&L, rp, opt);
	if (rc == 0)
		rc = opt->format == EXPORT_PERFETTO ? export_write_perfetto(&L, out) : export_write_chrome(&L, out);
	if (rc == 0 && stats) {
		memset(stats, 0, sizeof(*stats));
		stats->tracks = L.n_tracks;
		stats->slices = L.n_slices;
		stats->counters = L.n_counts;
		stats->extra_lanes = L.extra_lanes;
		for (size_t i = 0; i < L.n_slices; i++)
			if (L.slices[i].what == SL_API && export_launch_flow(&L, &rp->apis[L.slices[i].idx]))
				stats->flows++;
	}
	export_layout_release(&L);
	return rc;
}

int export_run(const struct replay *rp, const struct export_options *opt)
{
	const char *output = opt->output;
	struct export_stats stats;
	struct output out;
	char *owned = NULL;
	int rc = -1;

	if (!output)
		output = owned = bundle_output_name(rp->path, NULL,
						    opt->format == EXPORT_PERFETTO ? ".pftrace" : ".json");
	if (!output)
		return error("out of memory");
	if (output_open(&out, output, (const char *[]){ rp->path, NULL }) < 0)
		goto out;
	if (export_write(rp, opt, out.f, &stats) < 0) {
		output_discard(&out);
		goto out;
	}
	if (output_close(&out) < 0)
		goto out;
	rc = 0;
	fprintf(stderr, "wrote '%s': %" PRIu64 " tracks, %" PRIu64 " slices, %" PRIu64
		" counter values, %" PRIu64 " launch flows", output, stats.tracks, stats.slices,
		stats.counters, stats.flows);
	if (stats.extra_lanes)
		fprintf(stderr, " (%" PRIu64 " extra lanes for slices that overlap without nesting)",
			stats.extra_lanes);
	fprintf(stderr, "\n%s\n", opt->format == EXPORT_PERFETTO
		? "open it at https://ui.perfetto.dev (Open trace file); the file stays on your machine"
		: "open it at https://ui.perfetto.dev or chrome://tracing");
out:
	free(owned);
	return rc;
}
