/*
 * memory.h: the memory timeline, rebuilt from a replay's allocation, free,
 * OOM and tag events (rp->mem): live bytes over time in total and per
 * category, peaks (overall, per step, per phase) with what was live at
 * them, blocks never freed and frees of unknown addresses, and a capacity
 * replay ("would this run fit on a device of N bytes, and if not, which
 * request fails").
 *
 * Two views, built separately: MEM_VIEW_MODEL from the model allocator's
 * events (source SRC_MODEL, which know categories and ops) and
 * MEM_VIEW_DRIVER from CUDA's cudaMalloc/cudaFree records (SRC_DRIVER),
 * with the categories the program's tags give them (see Categories).
 *
 *   struct mem_timeline tl;
 *   if (mem_timeline_build(&tl, &rp, MEM_VIEW_MODEL) < 0)  // error line printed
 *           return 1;
 *   printf("peak %" PRIu64 " at %" PRIu64 "\n", tl.peak.bytes, tl.peak.t);
 *   mem_timeline_release(&tl);
 *
 * Ordering. Events are taken by start time; events with the same timestamp
 * keep their recorded order (the order the allocator reported them, i.e. the
 * bundle's order, which replay preserves with its stable sort). So a free
 * recorded before an allocation at the same instant makes room for it, and
 * an allocation recorded before a free at the same instant stacks on top.
 *
 * Matching. A free matches the live block at its (device, address). A free
 * of an address not live is an "unknown free": counted and listed, and it
 * changes nothing. An allocation at an address that is already live
 * (a lost free) leaves the older block live and never freed; the address now
 * names the newer one. Blocks still live at the end are "never freed". A
 * free's size and category come from the block it frees, not from the free
 * record (which may say 0).
 *
 * Peaks. Live bytes only grow at allocations, so every peak is the live
 * total right after some allocation, or what a span starts with. The
 * overall peak is the largest; a step's peak is the highest live total
 * during the step, allocations or not: the largest reached by an
 * allocation of that step (rp->mem[i].step), or what was live when it
 * began; a phase's peak likewise, over the allocations of that phase and
 * the spans of its NVTX ranges (the phase ranges of replay_range_phase:
 * "forward", "backward", "optimizer", "zero_grad", "data", each not
 * inside another phase's range), so the optimizer, which allocates
 * nothing, shows what it runs with. A peak carried into its span has block
 * -1, the span's start as its time, and as its point the last event
 * before it. The earliest wins a tie.
 * Phase of an event: its op's phase when that names one (enum st_phase),
 * else the first phase named among the components of its covering NVTX
 * range's path, else "other" (a communication op, phase "comm", goes by
 * its range).
 *
 * Categories (driver view). A driver-level block knows no category; the
 * program may say it with tags (ST_MEMTAG, format 1.5, in rp->mem): a tag
 * names the block live at its instant (in the order above) that starts at
 * its (device, address) and has exactly its size; a tag that names no such
 * block (freed already, not yet allocated, another size, an address inside
 * a larger block such as a caching allocator's segment) is ignored, and so
 * is one of category unknown. A block takes the category of the last tag
 * that named it, for its whole life (re-tagged each step, it keeps one).
 * When the bundle holds at least one tag, an untagged driver block of
 * unknown category is inferred:
 *   - "workspace": allocated in a phase of a step and never freed by the
 *     end of the bundle: what the libraries keep for good, cuBLAS's
 *     workspaces above all (PyTorch allocates them on a thread's first
 *     matrix product and keeps them); a tensor the program holds into the
 *     next step (the logits it keeps in a variable) is freed there, and is
 *     not one;
 *   - "activation": else, allocated in the forward phase (its event's
 *     phase, as above) and still live when the "forward" phase range
 *     covering its allocation on the main thread ends: saved for the
 *     backward;
 *   - "temporary": allocated in any phase (forward, backward, optimizer,
 *     zero_grad, data) and not an activation (a forward block with no
 *     covering "forward" range included);
 *   - "unknown": allocated outside every phase ("other").
 * Without tags the driver's blocks stay unknown. Peaks' breakdowns,
 * mem_timeline_categories_at, the capacity replay and every point's
 * category see the final categories. The model view ignores tags.
 *
 * Window. mem_timeline_build_window keeps every event (the live set is
 * the whole bundle's) but takes peaks, allocation and free counts only
 * within [t0, t1], the live total at t0 counting as reached at t0: what
 * `steptrace memory --step N` reports.
 *
 * Memory is O(number of memory events).
 */
#ifndef STEPTRACE_REPLAY_MEMORY_H
#define STEPTRACE_REPLAY_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay/replay.h"

enum mem_view {
	MEM_VIEW_MODEL = ST_SRC_MODEL,
	MEM_VIEW_DRIVER = ST_SRC_DRIVER,
};
const char *mem_view_name(enum mem_view v);   /* "model allocator", "driver (cudaMalloc)" */
/* What a report shows without --view: the model allocator's, or the driver's when the model recorded no allocation and the driver did. */
enum mem_view mem_default_view(const struct replay *rp);
extern const char *const mem_view_short_names[];   /* "model", "driver": the --view names */

/* One block of the view: an allocation and, when seen, its free. */
struct mem_block {
	uint64_t address, size;
	uint64_t t_alloc, t_free;   /* t_free = UINT64_MAX when never freed */
	uint32_t alloc_point;       /* index into points of its allocation */
	int32_t free_point;         /* index into points of its free, -1 never freed */
	uint32_t op;                /* op that asked for it, 0 none */
	uint32_t device;
	uint8_t category;           /* enum st_mem_category: the final one (see Categories) */
	uint8_t phase;              /* enum st_phase of the allocation */
	bool tagged;                /* its category came from a tag */
};

/* One event of the view, in replay order, with the live total after it. */
struct mem_point {
	uint64_t t;
	uint64_t live;              /* total live bytes after this event */
	int64_t delta;              /* +size, -size, or 0 (unknown free, OOM) */
	uint32_t mem;               /* index into rp->mem */
	int32_t block;              /* index into blocks, -1 for an unknown free or an OOM */
	uint8_t kind;               /* ST_ALLOC, ST_FREE or ST_OOM */
	uint8_t category;           /* of the block (the OOM's own for an OOM) */
	uint8_t phase;              /* enum st_phase of this event */
};

/* A tag of the view (driver view only), in replay order. */
struct mem_tag {
	uint32_t mem;               /* index into rp->mem */
	int32_t block;              /* the block it named, -1 when it named none (ignored) */
};

struct mem_peak {
	uint64_t bytes;             /* live total at the peak; 0 when nothing was allocated */
	uint64_t t;                 /* time of the allocation that reached it (or its span's start) */
	int32_t point;              /* index into points, -1 when none */
	int32_t block;              /* that allocation's block, -1 when none or carried into a span */
	uint64_t by_category[ST_MEM_CATEGORY_COUNT];   /* live per category at the peak */
};

struct mem_timeline {
	enum mem_view view;
	struct mem_point *points;   /* this view's events in order (OOMs: model view) */
	size_t n_points;
	struct mem_block *blocks;   /* by allocation order */
	size_t n_blocks;

	struct mem_peak peak;                       /* overall */
	struct mem_peak phase_peak[ST_PHASE_COUNT];   /* by enum st_phase */
	struct mem_peak *step_peak;                 /* one per rp->steps[i] */
	size_t n_steps;
	struct mem_peak outside_steps_peak;         /* allocations outside every step */

	uint32_t *never_freed;      /* indices into blocks, by allocation order */
	size_t n_never_freed;
	uint64_t never_freed_bytes;
	uint32_t *unknown_frees;    /* indices into points */
	size_t n_unknown_frees;
	size_t n_reused_live;       /* allocations at an address that was still live */
	/*
	 * Allocations overlapping a block still live at another address (no
	 * allocator hands out a byte twice: a lost free, or damage): the live
	 * totals count the bytes they share more than once. overlap_bytes: the
	 * most any one of them shared.
	 */
	size_t n_overlapping;
	uint64_t overlap_bytes;
	size_t n_ooms;              /* OOM events recorded in the bundle */
	struct mem_tag *tags;       /* the view's tags (driver view) */
	size_t n_tags, n_tags_ignored;
	bool inferred;              /* untagged blocks' categories were inferred (the bundle has tags) */

	uint64_t final_live;        /* live total after the last event */
	uint64_t allocated_total;   /* sum of every allocation's size (in the window) */
	size_t n_allocs, n_frees;   /* in the window */
	uint64_t t0, t1;            /* the window: 0, UINT64_MAX for the whole bundle */
};

/* ---- lifetime -------------------------------------------------------- */

/* Builds one view from rp->mem. -1 (one error line) on allocation failure. */
int mem_timeline_build(struct mem_timeline *tl, const struct replay *rp, enum mem_view view);
/* The same with peaks and counts taken within [t0, t1] only (bundle ns; see "Window"). */
int mem_timeline_build_window(struct mem_timeline *tl, const struct replay *rp, enum mem_view view,
			      uint64_t t0, uint64_t t1);
void mem_timeline_release(struct mem_timeline *tl);

/* ---- questions ------------------------------------------------------- */

/*
 * The blocks live right after `point` (allocated at or before it, freed
 * after it or never), largest first (ties: earlier allocation first). Writes
 * at most max indices into blocks to out; returns how many are live in all
 * (may exceed max). O(n_blocks + max log max).
 */
size_t mem_timeline_live_at(const struct mem_timeline *tl, int32_t point, uint32_t *out, size_t max);

/* Live bytes per category right after `point` (all zero for -1). O(n_points). */
void mem_timeline_categories_at(const struct mem_timeline *tl, int32_t point,
				uint64_t by_category[ST_MEM_CATEGORY_COUNT]);

/* Index of the last point at or before time t, -1 when t is before the first. O(log n). */
int32_t mem_timeline_point_at(const struct mem_timeline *tl, uint64_t t);

/* ---- capacity replay ------------------------------------------------- */

/*
 * Replays the view's allocations against a device of `capacity` bytes,
 * counting live bytes only (no allocator fragmentation, no CUDA context):
 * the first allocation whose request would push the live total above
 * capacity does not fit. Exactly reaching capacity fits.
 */
struct mem_capacity {
	uint64_t capacity;
	bool fits;
	/* when it fits: */
	uint64_t peak, headroom;            /* headroom = capacity - peak */
	/* when it does not: */
	int32_t point;                      /* the failing allocation's point */
	int32_t block;
	uint64_t request;                   /* its size */
	uint64_t live_before;               /* live total just before it */
	uint64_t overshoot;                 /* live_before + request - capacity (>= 1) */
	uint64_t by_category[ST_MEM_CATEGORY_COUNT];   /* live just before it */
};
void mem_timeline_capacity(const struct mem_timeline *tl, uint64_t capacity, struct mem_capacity *out);

#endif
