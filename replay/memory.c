/*
 * memory.c: the memory timeline of one view (model allocator or driver),
 * its peaks, leaks, unknown frees, the driver blocks' categories from tags
 * and the capacity replay (see memory.h).
 *
 * One pass over the view's events with an open-addressing table from
 * (device, address) to the live block; a second, short pass fills the
 * per-category breakdown of every peak. Everything is O(events).
 */
#include "replay/memory.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"

const char *const mem_view_short_names[] = { [MEM_VIEW_MODEL] = "model", [MEM_VIEW_DRIVER] = "driver", NULL };

const char *mem_view_name(enum mem_view v)
{
	return v == MEM_VIEW_DRIVER ? "driver (cudaMalloc)" : "model allocator";
}

enum mem_view mem_default_view(const struct replay *rp)
{
	bool model = false, driver = false;

	for (size_t i = 0; i < rp->n_mem; i++) {
		const struct st_event *ev = &rp->mem[i].ev;

		if (ev->kind == ST_ALLOC) {
			model |= ev->mem.source == ST_SRC_MODEL;
			driver |= ev->mem.source == ST_SRC_DRIVER;
		}
	}
	return !model && driver ? MEM_VIEW_DRIVER : MEM_VIEW_MODEL;
}

static uint32_t event_op(const struct st_event *ev)
{
	return ev->kind == ST_OOM ? ev->oom.op : ev->mem.op;
}

static int phase_of_op(const struct replay *rp, const struct replay_op *op)
{
	return op ? st_phase_from_name(replay_str(rp, op->phase)) : -1;
}

/*
 * The phase of a memory event (see Peaks in memory.h), with a cache per op
 * and per range path: one scan of each name.
 */
struct phase_cache {
	int8_t *by_op;          /* n_ops, -2 = not yet */
	uint8_t *by_path;       /* n_paths, all filled */
};

static int cached_phase(struct phase_cache *pc, const struct replay *rp, const struct replay_mem *m)
{
	const struct replay_op *op = replay_op(rp, event_op(&m->ev));

	if (op) {
		int8_t *slot = &pc->by_op[op - rp->ops];

		if (*slot == -2)
			*slot = (int8_t)phase_of_op(rp, op);
		if (*slot >= 0)
			return *slot;
	}
	if (m->range >= 0 && (size_t)m->range < rp->n_ranges) {
		const struct replay_range *r = &rp->ranges[m->range];

		if (r->path < rp->n_paths)
			return pc->by_path[r->path];
		return st_phase_of_path(replay_range_path(rp, r));
	}
	return ST_PHASE_OTHER;
}

/* ---- live-block table: (device, address) -> block, linear probing ------ */

struct live_table {
	uint64_t *addr;
	uint32_t *dev;
	int32_t *block;         /* -1 = empty slot */
	size_t mask;
};

static int live_table_init(struct live_table *lt, size_t n)
{
	size_t cap = 16;

	while (cap < 2 * n + 2)
		cap <<= 1;
	lt->mask = cap - 1;
	lt->addr = malloc(cap * sizeof(*lt->addr));
	lt->dev = malloc(cap * sizeof(*lt->dev));
	lt->block = malloc(cap * sizeof(*lt->block));
	if (!lt->addr || !lt->dev || !lt->block)
		return -1;
	memset(lt->block, 0xff, cap * sizeof(*lt->block));
	return 0;
}

static void live_table_release(struct live_table *lt)
{
	free(lt->addr);
	free(lt->dev);
	free(lt->block);
	memset(lt, 0, sizeof(*lt));
}

static size_t live_hash(uint64_t addr, uint32_t dev)
{
	uint64_t h = (addr ^ ((uint64_t)dev << 56)) * 0x9e3779b97f4a7c15ull;

	return (size_t)(h >> 17);
}

/* The slot holding (addr, dev), or the empty slot where it would go. */
static size_t live_table_find(const struct live_table *lt, uint64_t addr, uint32_t dev)
{
	size_t i = live_hash(addr, dev) & lt->mask;

	while (lt->block[i] >= 0 && (lt->addr[i] != addr || lt->dev[i] != dev))
		i = (i + 1) & lt->mask;
	return i;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void live_table_remove(struct live_table *lt, size_t i)
{
	size_t j = i;

	lt->block[i] = -1;
	for (;;) {
		size_t home;

		j = (j + 1) & lt->mask;
		if (lt->block[j] < 0)
			return;
		home = live_hash(lt->addr[j], lt->dev[j]) & lt->mask;
		/* j's entry may move to i when its home is not in (i, j] cyclically */
		if ((i <= j) ? (home > i && home <= j) : (home > i || home <= j))
			continue;
		lt->addr[i] = lt->addr[j];
		lt->dev[i] = lt->dev[j];
		lt->block[i] = lt->block[j];
		lt->block[j] = -1;
		i = j;
	}
}

/* ---- build ------------------------------------------------------------ */

static bool in_view(const struct st_event *ev, enum mem_view view)
{
	if (ev->kind == ST_OOM)
		return view == MEM_VIEW_MODEL;
	if (ev->kind == ST_MEMTAG)
		return view == MEM_VIEW_DRIVER;
	return (ev->kind == ST_ALLOC || ev->kind == ST_FREE) && ev->mem.source == (uint32_t)view;
}

static void peak_reset(struct mem_peak *p)
{
	memset(p, 0, sizeof(*p));
	p->point = -1;
	p->block = -1;
}

static void peak_offer(struct mem_peak *p, const struct mem_point *pt, size_t idx)
{
	if (p->point >= 0 && pt->live <= p->bytes)
		return;
	p->bytes = pt->live;
	p->t = pt->t;
	p->point = (int32_t)idx;
	p->block = pt->block;
}

/*
 * Offers p the live total carried into [start, end] (within the window):
 * what was live after the last event before start, when no allocation in
 * the span reached more. Such a peak has no block: its time is the span's
 * start, its point that last event (the state it carries). The earliest
 * wins a tie.
 */
static void peak_offer_carried(const struct mem_timeline *tl, struct mem_peak *p, uint64_t start,
			       uint64_t end)
{
	int32_t before;
	uint64_t live;

	start = start > tl->t0 ? start : tl->t0;
	end = end < tl->t1 ? end : tl->t1;
	if (start > end || start == 0)
		return;
	before = mem_timeline_point_at(tl, start - 1);
	if (before < 0)
		return;
	live = tl->points[before].live;
	if (live == 0 || (p->point >= 0 && (live < p->bytes || (live == p->bytes && start >= p->t))))
		return;
	p->bytes = live;
	p->t = start;
	p->point = before;
	p->block = -1;
}

/* Spans' carried totals: each step's, each phase range's ("forward" ...), the window's. */
static void offer_spans(struct mem_timeline *tl, const struct replay *rp)
{
	for (size_t s = 0; s < tl->n_steps; s++)
		peak_offer_carried(tl, &tl->step_peak[s], rp->steps[s].start, rp->steps[s].end);
	for (size_t i = 0; i < rp->n_ranges; i++) {
		int p = replay_range_phase(rp, i);

		if (p >= 0)
			peak_offer_carried(tl, &tl->phase_peak[p], rp->ranges[i].start, rp->ranges[i].end);
	}
	if (tl->t0 || tl->t1 != UINT64_MAX)
		peak_offer_carried(tl, &tl->peak, tl->t0, tl->t1);
}

/*
 * A tag names the live block that starts at its (device, address) and has
 * its size; anything else, or a category that says nothing, is ignored.
 * The last tag of a block wins (see Categories in memory.h).
 */
static void tag_apply(struct mem_timeline *tl, const struct live_table *lt, const struct st_event *ev,
		      uint32_t mem)
{
	int32_t b = lt->block[live_table_find(lt, ev->mem.address, ev->mem.device)];
	struct mem_tag *tag = &tl->tags[tl->n_tags++];

	tag->mem = mem;
	tag->block = -1;
	if (b < 0 || tl->blocks[b].size != ev->mem.size || ev->mem.category == ST_MEM_UNKNOWN ||
	    ev->mem.category >= ST_MEM_CATEGORY_COUNT) {
		tl->n_tags_ignored++;
		return;
	}
	tag->block = b;
	tl->blocks[b].category = (uint8_t)ev->mem.category;
	tl->blocks[b].tagged = true;
}

/*
 * The categories of untagged blocks that know none, once the bundle has
 * tags: workspace, activation, temporary or unknown by the rule in memory.h.
 */
static void infer_categories(struct mem_timeline *tl, const struct replay *rp)
{
	for (size_t i = 0; i < tl->n_blocks; i++) {
		struct mem_block *b = &tl->blocks[i];
		int32_t forward, step;
		int p;

		if (b->tagged || b->category != ST_MEM_UNKNOWN || b->phase == ST_PHASE_OTHER)
			continue;
		b->category = ST_MEM_TEMPORARY;
		step = rp->mem[tl->points[b->alloc_point].mem].step;
		if (step >= 0 && b->t_free == UINT64_MAX) {
			b->category = ST_MEM_WORKSPACE;   /* kept for good */
			continue;
		}
		if (b->phase != ST_PHASE_FORWARD)
			continue;
		forward = replay_phase_range(rp, rp->mem[tl->points[b->alloc_point].mem].range, &p);
		if (forward >= 0 && p == ST_PHASE_FORWARD && b->t_free > rp->ranges[forward].end)
			b->category = ST_MEM_ACTIVATION;
	}
	tl->inferred = true;
}

static int cmp_peak_point(const void *a, const void *b)
{
	const struct mem_peak *x = *(struct mem_peak *const *)a, *y = *(struct mem_peak *const *)b;

	return (x->point > y->point) - (x->point < y->point);
}

/* Fills by_category of every peak in one walk over the points. */
static int fill_peak_categories(struct mem_timeline *tl)
{
	size_t n = 0, k = 0, cap = 2 + ST_PHASE_COUNT + tl->n_steps;
	struct mem_peak **list = malloc(cap * sizeof(*list));
	uint64_t cat[ST_MEM_CATEGORY_COUNT] = { 0 };

	if (!list)
		return -1;
	list[n++] = &tl->peak;
	list[n++] = &tl->outside_steps_peak;
	for (int p = 0; p < ST_PHASE_COUNT; p++)
		list[n++] = &tl->phase_peak[p];
	for (size_t s = 0; s < tl->n_steps; s++)
		list[n++] = &tl->step_peak[s];
	qsort(list, n, sizeof(*list), cmp_peak_point);
	while (k < n && list[k]->point < 0)
		k++;
	for (size_t i = 0; i < tl->n_points && k < n; i++) {
		const struct mem_point *pt = &tl->points[i];

		if (pt->block >= 0)
			cat[pt->category] += (uint64_t)pt->delta;  /* wraps back on frees */
		while (k < n && (size_t)list[k]->point == i)
			memcpy(list[k++]->by_category, cat, sizeof(cat));
	}
	free(list);
	return 0;
}

int mem_timeline_build(struct mem_timeline *tl, const struct replay *rp, enum mem_view view)
{
	return mem_timeline_build_window(tl, rp, view, 0, UINT64_MAX);
}

/*
 * Which blocks overlap a live one at another address: the blocks' ends,
 * (device, address) pairs sorted, cut the address space into pieces; a
 * segment tree holds, per piece, how many live blocks cover it (range add,
 * range max: O(log n) per allocation and free).
 */
struct cover {
	uint64_t *key;              /* 2 per block: device, address; sorted, distinct */
	size_t n;                   /* keys */
	int32_t *max, *add;         /* the tree over the n - 1 pieces, 4 (n - 1) nodes */
};

static int cmp_key(const void *x, const void *y)
{
	const uint64_t *a = x, *b = y;

	if (a[0] != b[0])
		return a[0] < b[0] ? -1 : 1;
	return a[1] < b[1] ? -1 : a[1] > b[1];
}

static size_t cover_find(const struct cover *cv, uint64_t dev, uint64_t addr)
{
	size_t lo = 0, hi = cv->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const uint64_t *k = cv->key + 2 * mid;

		if (k[0] < dev || (k[0] == dev && k[1] < addr))
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The pieces of a block: [*l, *r); false for an empty one. */
static bool cover_span(const struct cover *cv, uint32_t dev, uint64_t addr, uint64_t size, size_t *l, size_t *r)
{
	uint64_t end = addr + size < addr ? UINT64_MAX : addr + size;

	if (!size || !cv->n)
		return false;
	*l = cover_find(cv, dev, addr);
	*r = cover_find(cv, dev, end);
	return *l < *r;
}

/* Adds d over pieces [l, r) of node x (pieces [lo, hi)); returns nothing: max kept at each node. */
static void cover_add(struct cover *cv, size_t x, size_t lo, size_t hi, size_t l, size_t r, int32_t d)
{
	if (r <= lo || hi <= l)
		return;
	if (l <= lo && hi <= r) {
		cv->add[x] += d;
		cv->max[x] += d;
		return;
	}
	cover_add(cv, 2 * x, lo, (lo + hi) / 2, l, r, d);
	cover_add(cv, 2 * x + 1, (lo + hi) / 2, hi, l, r, d);
	cv->max[x] = cv->add[x] + (cv->max[2 * x] > cv->max[2 * x + 1] ? cv->max[2 * x] : cv->max[2 * x + 1]);
}

static int32_t cover_max(const struct cover *cv, size_t x, size_t lo, size_t hi, size_t l, size_t r)
{
	int32_t a, b;

	if (r <= lo || hi <= l)
		return INT32_MIN / 2;
	if (l <= lo && hi <= r)
		return cv->max[x];
	a = cover_max(cv, 2 * x, lo, (lo + hi) / 2, l, r);
	b = cover_max(cv, 2 * x + 1, (lo + hi) / 2, hi, l, r);
	return cv->add[x] + (a > b ? a : b);
}

static void cover_release(struct cover *cv)
{
	free(cv->key);
	free(cv->max);
	free(cv->add);
	memset(cv, 0, sizeof(*cv));
}

/* The keys of every allocation in the view; -1 when out of memory. */
static int cover_init(struct cover *cv, const struct replay *rp, enum mem_view view, size_t n_alloc)
{
	size_t k = 0;

	memset(cv, 0, sizeof(*cv));
	cv->key = malloc((4 * n_alloc + 2) * sizeof(uint64_t));
	if (!cv->key)
		return -1;
	for (size_t i = 0; i < rp->n_mem; i++) {
		const struct st_event *ev = &rp->mem[i].ev;
		uint64_t size;

		if (ev->kind != ST_ALLOC || !in_view(ev, view))
			continue;
		size = ev->mem.size > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : ev->mem.size;
		cv->key[2 * k] = ev->mem.device;
		cv->key[2 * k + 1] = ev->mem.address;
		k++;
		cv->key[2 * k] = ev->mem.device;
		cv->key[2 * k + 1] = ev->mem.address + size < ev->mem.address ? UINT64_MAX : ev->mem.address + size;
		k++;
	}
	qsort(cv->key, k, 2 * sizeof(uint64_t), cmp_key);
	for (size_t i = 0; i < k; i++)
		if (!cv->n || cmp_key(cv->key + 2 * i, cv->key + 2 * (cv->n - 1)))
			memmove(cv->key + 2 * cv->n++, cv->key + 2 * i, 2 * sizeof(uint64_t));
	cv->max = calloc(4 * cv->n + 4, sizeof(int32_t));
	cv->add = calloc(4 * cv->n + 4, sizeof(int32_t));
	return cv->max && cv->add ? 0 : -1;
}

int mem_timeline_build_window(struct mem_timeline *tl, const struct replay *rp, enum mem_view view,
			      uint64_t t0, uint64_t t1)
{
	struct replay_key *keys = NULL, *tmp = NULL;
	struct phase_cache pc = { NULL, NULL };
	struct live_table lt = { 0 };
	struct cover cv = { 0 };
	size_t n = 0, n_alloc_ev = 0, n_tag_ev = 0;
	uint64_t live = 0;

	memset(tl, 0, sizeof(*tl));
	tl->view = view;
	tl->t0 = t0;
	tl->t1 = t1;
	peak_reset(&tl->peak);
	peak_reset(&tl->outside_steps_peak);
	for (int p = 0; p < ST_PHASE_COUNT; p++)
		peak_reset(&tl->phase_peak[p]);

	for (size_t i = 0; i < rp->n_mem; i++) {
		if (in_view(&rp->mem[i].ev, view)) {
			n++;
			n_alloc_ev += rp->mem[i].ev.kind == ST_ALLOC;
			n_tag_ev += rp->mem[i].ev.kind == ST_MEMTAG;
		}
	}
	keys = malloc((n ? n : 1) * sizeof(*keys));
	tmp = malloc((n ? n : 1) * sizeof(*tmp));
	tl->points = calloc(n ? n : 1, sizeof(*tl->points));
	tl->blocks = calloc(n_alloc_ev ? n_alloc_ev : 1, sizeof(*tl->blocks));
	tl->step_peak = calloc(rp->n_steps ? rp->n_steps : 1, sizeof(*tl->step_peak));
	tl->tags = calloc(n_tag_ev ? n_tag_ev : 1, sizeof(*tl->tags));
	pc.by_op = malloc(rp->n_ops + 1);
	pc.by_path = malloc(rp->n_paths + 1);
	if (!keys || !tmp || !tl->points || !tl->blocks || !tl->step_peak || !tl->tags || !pc.by_op ||
	    !pc.by_path || live_table_init(&lt, n_alloc_ev) < 0 || cover_init(&cv, rp, view, n_alloc_ev) < 0)
		goto oom;
	memset(pc.by_op, -2, rp->n_ops + 1);
	replay_path_phases(rp, pc.by_path);
	tl->n_steps = rp->n_steps;
	for (size_t s = 0; s < tl->n_steps; s++)
		peak_reset(&tl->step_peak[s]);

	/* replay keeps rp->mem by time, stably; sorting again costs O(n) and
	 * guarantees the documented order whatever the input */
	n = 0;
	for (size_t i = 0; i < rp->n_mem; i++)
		if (in_view(&rp->mem[i].ev, view))
			keys[n++] = (struct replay_key){ rp->mem[i].ev.start, (uint32_t)i };
	replay_sort_keys(keys, tmp, n);

	for (size_t k = 0; k < n; k++) {
		const struct replay_mem *m = &rp->mem[keys[k].idx];
		const struct st_event *ev = &m->ev;
		struct mem_point *pt = &tl->points[tl->n_points];
		size_t slot;

		if (ev->kind == ST_MEMTAG) {   /* no point: it changes no live total */
			tag_apply(tl, &lt, ev, keys[k].idx);
			continue;
		}
		pt->t = ev->start;
		pt->mem = keys[k].idx;
		pt->kind = (uint8_t)ev->kind;
		pt->block = -1;
		pt->phase = (uint8_t)cached_phase(&pc, rp, m);
		if (ev->kind == ST_OOM) {
			pt->category = ev->oom.category < ST_MEM_CATEGORY_COUNT ? (uint8_t)ev->oom.category : 0;
			tl->n_ooms++;
		} else if (ev->kind == ST_ALLOC) {
			struct mem_block *b = &tl->blocks[tl->n_blocks];

			b->address = ev->mem.address;
			/* a size from the file; bounded so deltas stay representable */
			b->size = ev->mem.size > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : ev->mem.size;
			b->t_alloc = ev->start;
			b->t_free = UINT64_MAX;
			b->alloc_point = (uint32_t)tl->n_points;
			b->free_point = -1;
			b->op = ev->mem.op;
			b->device = ev->mem.device;
			b->category = ev->mem.category < ST_MEM_CATEGORY_COUNT ? (uint8_t)ev->mem.category : 0;
			b->phase = pt->phase;
			slot = live_table_find(&lt, b->address, b->device);
			if (lt.block[slot] >= 0) {
				tl->n_reused_live++;   /* the older block stays live: its free was lost */
			} else if (cv.n > 1) {
				size_t l, r;

				/* live bytes under it at another address: counted twice from here */
				if (cover_span(&cv, b->device, b->address, b->size, &l, &r) &&
				    cover_max(&cv, 1, 0, cv.n - 1, l, r) > 0) {
					tl->n_overlapping++;
					if (b->size > tl->overlap_bytes)
						tl->overlap_bytes = b->size;
				}
			}
			{
				size_t l, r;

				if (cover_span(&cv, b->device, b->address, b->size, &l, &r))
					cover_add(&cv, 1, 0, cv.n - 1, l, r, +1);
			}
			lt.addr[slot] = b->address;
			lt.dev[slot] = b->device;
			lt.block[slot] = (int32_t)tl->n_blocks;
			live += b->size;
			pt->delta = (int64_t)b->size;
			pt->category = b->category;
			pt->block = (int32_t)tl->n_blocks++;
			if (pt->t >= t0 && pt->t <= t1) {
				tl->n_allocs++;
				tl->allocated_total += b->size;
			}
		} else {
			slot = live_table_find(&lt, ev->mem.address, ev->mem.device);
			if (lt.block[slot] >= 0) {
				struct mem_block *b = &tl->blocks[lt.block[slot]];

				size_t l, r;

				b->free_point = (int32_t)tl->n_points;
				b->t_free = ev->start;
				if (cover_span(&cv, b->device, b->address, b->size, &l, &r))
					cover_add(&cv, 1, 0, cv.n - 1, l, r, -1);
				live -= b->size;
				pt->delta = -(int64_t)b->size;
				pt->category = b->category;
				pt->block = lt.block[slot];
				live_table_remove(&lt, slot);
				tl->n_frees += pt->t >= t0 && pt->t <= t1;
			} else {
				pt->category = ev->mem.category < ST_MEM_CATEGORY_COUNT ? (uint8_t)ev->mem.category : 0;
				tl->n_unknown_frees++;
			}
		}
		pt->live = live;
		if (ev->kind == ST_ALLOC && pt->t >= t0 && pt->t <= t1) {
			peak_offer(&tl->peak, pt, tl->n_points);
			peak_offer(&tl->phase_peak[pt->phase], pt, tl->n_points);
			if (m->step >= 0 && (size_t)m->step < tl->n_steps)
				peak_offer(&tl->step_peak[m->step], pt, tl->n_points);
			else
				peak_offer(&tl->outside_steps_peak, pt, tl->n_points);
		}
		tl->n_points++;
	}
	tl->final_live = live;
	offer_spans(tl, rp);
	if (n_tag_ev) {
		infer_categories(tl, rp);
		for (size_t i = 0; i < tl->n_points; i++)
			if (tl->points[i].block >= 0)
				tl->points[i].category = tl->blocks[tl->points[i].block].category;
	}

	/* the lists of what did not pair up */
	tl->unknown_frees = malloc((tl->n_unknown_frees ? tl->n_unknown_frees : 1) * sizeof(uint32_t));
	for (size_t b = 0; b < tl->n_blocks; b++)
		tl->n_never_freed += tl->blocks[b].free_point < 0;
	tl->never_freed = malloc((tl->n_never_freed ? tl->n_never_freed : 1) * sizeof(uint32_t));
	if (!tl->unknown_frees || !tl->never_freed)
		goto oom;
	tl->n_never_freed = tl->n_unknown_frees = 0;
	for (size_t b = 0; b < tl->n_blocks; b++) {
		if (tl->blocks[b].free_point < 0) {
			tl->never_freed[tl->n_never_freed++] = (uint32_t)b;
			tl->never_freed_bytes += tl->blocks[b].size;
		}
	}
	for (size_t i = 0; i < tl->n_points; i++)
		if (tl->points[i].kind == ST_FREE && tl->points[i].block < 0)
			tl->unknown_frees[tl->n_unknown_frees++] = (uint32_t)i;
	if (fill_peak_categories(tl) < 0)
		goto oom;

	free(keys);
	free(tmp);
	free(pc.by_op);
	free(pc.by_path);
	live_table_release(&lt);
	cover_release(&cv);
	return 0;
oom:
	free(keys);
	free(tmp);
	free(pc.by_op);
	free(pc.by_path);
	live_table_release(&lt);
	cover_release(&cv);
	mem_timeline_release(tl);
	return error("out of memory for the memory timeline (%zu events)", rp->n_mem);
}

void mem_timeline_release(struct mem_timeline *tl)
{
	free(tl->points);
	free(tl->blocks);
	free(tl->step_peak);
	free(tl->tags);
	free(tl->never_freed);
	free(tl->unknown_frees);
	memset(tl, 0, sizeof(*tl));
}

/* ---- questions -------------------------------------------------------- */

static bool live_after(const struct mem_block *b, int32_t point)
{
	return (int32_t)b->alloc_point <= point && (b->free_point < 0 || b->free_point > point);
}

struct size_idx {
	uint64_t size;
	uint32_t idx;
};

static int cmp_size_desc(const void *a, const void *b)
{
	const struct size_idx *x = a, *y = b;

	if (x->size != y->size)
		return x->size < y->size ? 1 : -1;
	return (x->idx > y->idx) - (x->idx < y->idx);
}

size_t mem_timeline_live_at(const struct mem_timeline *tl, int32_t point, uint32_t *out, size_t max)
{
	struct size_idx *heap;
	size_t live = 0, kept = 0;

	if (point < 0)
		return 0;
	/* keep the `max` largest in a small array, re-sorted when it fills (max is small) */
	heap = malloc((2 * max + 1) * sizeof(*heap));
	for (size_t b = 0; b < tl->n_blocks && (int32_t)tl->blocks[b].alloc_point <= point; b++) {
		if (!live_after(&tl->blocks[b], point))
			continue;
		live++;
		if (!heap || max == 0)
			continue;
		heap[kept++] = (struct size_idx){ tl->blocks[b].size, (uint32_t)b };
		if (kept == 2 * max + 1) {
			qsort(heap, kept, sizeof(*heap), cmp_size_desc);
			kept = max;
		}
	}
	if (heap) {
		qsort(heap, kept, sizeof(*heap), cmp_size_desc);
		for (size_t i = 0; i < kept && i < max; i++)
			out[i] = heap[i].idx;
		free(heap);
	}
	return live;
}

void mem_timeline_categories_at(const struct mem_timeline *tl, int32_t point,
				uint64_t by_category[ST_MEM_CATEGORY_COUNT])
{
	memset(by_category, 0, ST_MEM_CATEGORY_COUNT * sizeof(uint64_t));
	for (int32_t i = 0; i <= point && (size_t)i < tl->n_points; i++)
		if (tl->points[i].block >= 0)
			by_category[tl->points[i].category] += (uint64_t)tl->points[i].delta;
}

int32_t mem_timeline_point_at(const struct mem_timeline *tl, uint64_t t)
{
	size_t lo = 0, hi = tl->n_points;   /* first point with time > t */

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (tl->points[mid].t <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return (int32_t)lo - 1;
}

void mem_timeline_capacity(const struct mem_timeline *tl, uint64_t capacity, struct mem_capacity *out)
{
	memset(out, 0, sizeof(*out));
	out->capacity = capacity;
	out->point = -1;
	out->block = -1;
	for (size_t i = 0; i < tl->n_points; i++) {
		const struct mem_point *pt = &tl->points[i];
		uint64_t before, size;

		if (pt->kind != ST_ALLOC)
			continue;
		size = (uint64_t)pt->delta;
		before = pt->live - size;
		if (size > capacity || before > capacity - size) {
			out->point = (int32_t)i;
			out->block = pt->block;
			out->request = size;
			out->live_before = before;
			out->overshoot = size > capacity ? before + (size - capacity) : before - (capacity - size);
			mem_timeline_categories_at(tl, (int32_t)i - 1, out->by_category);
			return;
		}
	}
	out->fits = true;
	out->peak = tl->peak.bytes;
	out->headroom = capacity - tl->peak.bytes;
}
