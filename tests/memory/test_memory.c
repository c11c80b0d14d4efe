/*
 * test_memory.c: the memory timeline (replay/memory.h) on hand-built events
 * with answers worked out by hand: peaks overall, per phase (at phase
 * boundaries), per step; equal-time ordering; unknown frees; blocks never
 * freed; addresses reused while live; model versus driver views; phase from
 * the NVTX range when the op says nothing; the capacity replay fitting
 * exactly and overshooting by one byte; the driver blocks' categories from
 * the program's tags and the inference of the rest; the SVG writer's ticks
 * and units.
 *
 * `test_memory --write PATH` writes the main scenario as a bundle for the
 * command-line tests (cli.sh); --write-train a training-step-shaped one,
 * --write-tags the driver blocks and tags of tag_scenario, --write-edges
 * blocks recorded by both views and steps that share their boundaries,
 * --write-sweep steps of an attention sweep's shape, one label each.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "render/svg.h"
#include "replay/memory.h"
#include "replay/ranks.h"
#include "replay/replay.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

/* ---- building events -------------------------------------------------- */

/* An op whose kind is its name: the timeline needs no more. */
static void op(struct builder *b, uint32_t id, const char *name, const char *path, const char *phase)
{
	builder_op(b, &(struct builder_op){ .id = id, .name = name, .path = path, .kind = name,
		   .phase = phase });
}

#define FREE(b, t, a, o) builder_free((b), (t), (a), 0, 0, (o))

/*
 * The main scenario (times in ns, live total after each event):
 *     10 alloc P  0x1000 1000 parameter (setup)  1000
 *   step 0 [100, 1000]
 *    200 alloc a1 0x2000 300 activation fwd      1300
 *    300 alloc t1 0x3000 200 temporary fwd       1500
 *    400 free  t1                                1300
 *    500 alloc g1 0x4000 250 gradient bwd        1550  (first backward event)
 *    600 free  a1                                1250
 *    600 alloc g2 0x5000 300 gradient bwd        1550  (same instant, after the free)
 *    700 alloc o1 0x6000 400 optimizer opt       1950
 *    800 free g1; free g2                        1400
 *    900 free 0x9999 (unknown)                   1400
 *   step 1 [2000, 3000]
 *   2100 alloc a2 0x2000 500 activation fwd      1900
 *   2200 alloc t2 0x3000 100 temporary fwd       2000
 *   2300 free  t2                                1900
 *   2400 alloc g3 0x4000 200 gradient bwd        2100  <- overall peak
 *   2500 free  a2                                1600
 *   2600 free  g3                                1400
 * Driver view: 150 alloc 0xd000 4096; 250 alloc 0xe000 8192; 2700 free 0xd000.
 */
static void scenario(struct builder *b)
{
	op(b, 1, "w1", "step/forward/layer.0/ffn/w1", "forward");
	op(b, 2, "grad_w1", "step/backward/layer.0/ffn/w1", "backward");
	op(b, 3, "adamw", "step/optimizer/adamw", "optimizer");
	builder_step(b, 0, false, 100, 1000);
	builder_step(b, 1, false, 2000, 3000);
	builder_alloc(b, 10, 0x1000, 1000, ST_MEM_PARAMETER, 0);
	builder_alloc(b, 200, 0x2000, 300, ST_MEM_ACTIVATION, 1);
	builder_alloc(b, 300, 0x3000, 200, ST_MEM_TEMPORARY, 1);
	FREE(b, 400, 0x3000, 1);
	builder_alloc(b, 500, 0x4000, 250, ST_MEM_GRADIENT, 2);
	FREE(b, 600, 0x2000, 2);
	builder_alloc(b, 600, 0x5000, 300, ST_MEM_GRADIENT, 2);
	builder_alloc(b, 700, 0x6000, 400, ST_MEM_OPTIMIZER, 3);
	FREE(b, 800, 0x4000, 3);
	FREE(b, 800, 0x5000, 3);
	FREE(b, 900, 0x9999, 3);
	builder_alloc(b, 2100, 0x2000, 500, ST_MEM_ACTIVATION, 1);
	builder_alloc(b, 2200, 0x3000, 100, ST_MEM_TEMPORARY, 1);
	FREE(b, 2300, 0x3000, 1);
	builder_alloc(b, 2400, 0x4000, 200, ST_MEM_GRADIENT, 2);
	FREE(b, 2500, 0x2000, 2);
	FREE(b, 2600, 0x4000, 2);
	b->source = ST_SRC_DRIVER;
	builder_alloc(b, 150, 0xd000, 4096, 0, 0);
	builder_alloc(b, 250, 0xe000, 8192, 0, 0);
	FREE(b, 2700, 0xd000, 0);
	b->source = ST_SRC_MODEL;
}

/*
 * Driver-level blocks, one per tensor, with the program's tags (the
 * recorder's `record -- python3 train.py` on PyTorch) and the phases as
 * its NVTX ranges on the main thread: per step [100, 1000] and
 * [1100, 2000], data +10..50, zero_grad +50..90, forward +100..400 (a
 * module range "GPT" inside), backward +400..700, optimizer +700..850.
 * Times in ns, live total after each event, the final category:
 *     10 alloc P  0x1000 1000 (no op)        1000  parameter (tagged at 20, again at 1810)
 *     12 alloc U  0xf000 64 (no op)          1064  unknown: outside every phase
 *     25 tag 0x1000 on device 1                    ignored: another device
 *    120 alloc I0 0x2000 100 data            1164  input (tagged at 130)
 *    160 alloc Z  0xa000 8 zero_grad         1172  temporary; freed at 170
 *    210 alloc A0 0x3000 300 forward         1464  activation: freed at 600, after the forward
 *    220 alloc T0 0x4000 50 forward          1514  temporary: freed at 230, within it
 *    240 alloc S  0x5000 2000 forward        3464  activation: freed at 700
 *    250 tag 0x5100 100                            ignored: inside S
 *    260 tag 0x4000 50                             ignored: T0 is freed
 *    270 tag 0x3000 999                            ignored: A0's size is 300
 *    510 alloc G  0x6000 400 backward        3864  gradient (tagged at 790, again at 1620)
 *    520 alloc T1 0x7000 150 backward        4014  temporary; freed at 560  <- step 0's peak
 *    810 alloc O  0x8000 800 optimizer       2364  optimizer (tagged gradient at 850, then optimizer at 900)
 *   1050 alloc W  0xd000 16 forward op       2380  temporary: no "forward" range covers it; freed at 1710
 *   1120 alloc I1 0x2100 100 data            2480  input (tagged at 1130); I0 freed at 1140
 *   1210 alloc A1 0x3100 300 forward         2680  activation: freed at 1600
 *   1220 alloc T2 0x4100 40 forward          2720  temporary: freed at 1230
 *   1240 alloc S1 0x5200 2000 forward        4680  activation: freed at 1700; tag 0x5300 at 1250 ignored
 *   1490 alloc E  0xe000 30 forward          4710  temporary: freed at 1500, as the forward ends
 *   1510 alloc T3 0x7100 150 backward        4830  temporary; freed at 1560  <- the overall peak
 * At the peak: parameter 1000, unknown 64, input 100, activation 2300,
 * gradient 400, optimizer 800, temporary 166. 13 tags, 5 ignored.
 */
static void tag_scenario(struct builder *b)
{
	static const struct builder_span phases[] = {
		{ "step", 0, 0, 900 },     { "data", 1, 10, 50 },         { "zero_grad", 1, 50, 90 },
		{ "GPT", 2, 105, 395 },    { "forward", 1, 100, 400 },    { "backward", 1, 400, 700 },
		{ "optimizer", 1, 700, 850 },
	};
	struct st_event other_device = { .kind = ST_MEMTAG, .start = 25, .end = 25 };

	op(b, 1, "attn", "step/forward/GPT/attn", "forward");
	op(b, 2, "attn_grad", "step/backward/GPT/attn", "backward");
	op(b, 3, "adamw", "step/optimizer/adamw", "optimizer");
	op(b, 4, "copy", "step/data/copy", "data");
	op(b, 5, "zero", "step/zero_grad/zero", "zero_grad");
	builder_step(b, 0, false, 100, 1000);
	builder_step(b, 1, false, 1100, 2000);
	builder_ranges(b, 100, phases, sizeof(phases) / sizeof(phases[0]));
	builder_ranges(b, 1100, phases, sizeof(phases) / sizeof(phases[0]));
	b->source = ST_SRC_DRIVER;
	builder_alloc(b, 10, 0x1000, 1000, 0, 0);
	builder_alloc(b, 12, 0xf000, 64, 0, 0);
	builder_tag(b, 20, 0x1000, 1000, ST_MEM_PARAMETER);
	other_device.mem = (typeof(other_device.mem)){ .address = 0x1000, .size = 1000, .category = ST_MEM_GRADIENT,
						       .source = ST_SRC_DRIVER, .device = 1 };
	builder_add(b, &other_device);
	builder_alloc(b, 120, 0x2000, 100, 0, 4);
	builder_tag(b, 130, 0x2000, 100, ST_MEM_INPUT);
	builder_alloc(b, 160, 0xa000, 8, 0, 5);
	FREE(b, 170, 0xa000, 5);
	builder_alloc(b, 210, 0x3000, 300, 0, 1);
	builder_alloc(b, 220, 0x4000, 50, 0, 1);
	FREE(b, 230, 0x4000, 1);
	builder_alloc(b, 240, 0x5000, 2000, 0, 1);
	builder_tag(b, 250, 0x5100, 100, ST_MEM_PARAMETER);
	builder_tag(b, 260, 0x4000, 50, ST_MEM_GRADIENT);
	builder_tag(b, 270, 0x3000, 999, ST_MEM_PARAMETER);
	builder_alloc(b, 510, 0x6000, 400, 0, 2);
	builder_alloc(b, 520, 0x7000, 150, 0, 2);
	FREE(b, 560, 0x7000, 2);
	FREE(b, 600, 0x3000, 2);
	FREE(b, 700, 0x5000, 2);
	builder_tag(b, 790, 0x6000, 400, ST_MEM_GRADIENT);
	builder_alloc(b, 810, 0x8000, 800, 0, 3);
	builder_tag(b, 850, 0x8000, 800, ST_MEM_GRADIENT);
	builder_tag(b, 900, 0x8000, 800, ST_MEM_OPTIMIZER);
	builder_alloc(b, 1050, 0xd000, 16, 0, 1);
	builder_alloc(b, 1120, 0x2100, 100, 0, 4);
	builder_tag(b, 1130, 0x2100, 100, ST_MEM_INPUT);
	FREE(b, 1140, 0x2000, 4);
	builder_alloc(b, 1210, 0x3100, 300, 0, 1);
	builder_alloc(b, 1220, 0x4100, 40, 0, 1);
	FREE(b, 1230, 0x4100, 1);
	builder_alloc(b, 1240, 0x5200, 2000, 0, 1);
	builder_tag(b, 1250, 0x5300, 100, ST_MEM_PARAMETER);
	builder_alloc(b, 1490, 0xe000, 30, 0, 1);
	FREE(b, 1500, 0xe000, 1);
	builder_alloc(b, 1510, 0x7100, 150, 0, 2);
	FREE(b, 1560, 0x7100, 2);
	FREE(b, 1600, 0x3100, 2);
	builder_tag(b, 1620, 0x6000, 400, ST_MEM_GRADIENT);
	FREE(b, 1700, 0x5200, 2);
	FREE(b, 1710, 0xd000, 0);
	builder_tag(b, 1810, 0x1000, 1000, ST_MEM_PARAMETER);
	b->source = ST_SRC_MODEL;
}

static void replay_begin(struct replay *rp, struct builder *b)
{
	builder_init(b);
	builder_open_replay(b, rp);
}

/* ---- tests ------------------------------------------------------------ */

static void check_peak(const struct mem_timeline *tl, const struct mem_peak *p, uint64_t bytes, uint64_t t)
{
	CHECK_U64(p->bytes, bytes);
	CHECK_U64(p->t, t);
	CHECK(p->point >= 0 && tl->points[p->point].t == t && tl->points[p->point].live == bytes);
}

static void test_main_scenario(void)
{
	struct replay rp;
	struct builder b;
	struct mem_timeline tl, drv;
	struct mem_capacity cap;
	uint32_t top[3];
	uint64_t cat[ST_MEM_CATEGORY_COUNT];

	replay_begin(&rp, &b);
	scenario(&b);
	CHECK(builder_close(&b, NULL) == 0);
	CHECK(mem_timeline_build(&tl, &rp, MEM_VIEW_MODEL) == 0);

	CHECK_U64(tl.n_points, 17);
	CHECK_U64(tl.n_allocs, 9);
	CHECK_U64(tl.n_frees, 7);
	CHECK_U64(tl.n_blocks, 9);

	/* overall: right after g3 in step 1 */
	check_peak(&tl, &tl.peak, 2100, 2400);
	CHECK_U64(tl.peak.by_category[ST_MEM_PARAMETER], 1000);
	CHECK_U64(tl.peak.by_category[ST_MEM_ACTIVATION], 500);
	CHECK_U64(tl.peak.by_category[ST_MEM_OPTIMIZER], 400);
	CHECK_U64(tl.peak.by_category[ST_MEM_GRADIENT], 200);
	CHECK_U64(tl.peak.by_category[ST_MEM_TEMPORARY], 0);
	CHECK(tl.peak.block >= 0 && tl.blocks[tl.peak.block].op == 2);

	/* phases: forward's peak is at its last allocation before backward starts */
	check_peak(&tl, &tl.phase_peak[ST_PHASE_FORWARD], 2000, 2200);
	CHECK_U64(tl.phase_peak[ST_PHASE_FORWARD].by_category[ST_MEM_TEMPORARY], 100);
	check_peak(&tl, &tl.phase_peak[ST_PHASE_BACKWARD], 2100, 2400);
	check_peak(&tl, &tl.phase_peak[ST_PHASE_OPTIMIZER], 1950, 700);
	CHECK_U64(tl.phase_peak[ST_PHASE_OPTIMIZER].by_category[ST_MEM_GRADIENT], 550);
	CHECK_U64(tl.phase_peak[ST_PHASE_OPTIMIZER].by_category[ST_MEM_ACTIVATION], 0);
	check_peak(&tl, &tl.phase_peak[ST_PHASE_OTHER], 1000, 10);

	/* steps; the tie 1550 at 500 and 600 in step 0 is not its peak anyway */
	CHECK_U64(tl.n_steps, 2);
	check_peak(&tl, &tl.step_peak[0], 1950, 700);
	check_peak(&tl, &tl.step_peak[1], 2100, 2400);
	check_peak(&tl, &tl.outside_steps_peak, 1000, 10);

	/* equal time: the free at 600 came first, so 600 stays at 1550 */
	{
		int32_t p = mem_timeline_point_at(&tl, 600);
		CHECK(p >= 0 && tl.points[p].kind == ST_ALLOC && tl.points[p].live == 1550);
		CHECK(p >= 1 && tl.points[p - 1].kind == ST_FREE && tl.points[p - 1].live == 1250);
	}

	/* what never paired up */
	CHECK_U64(tl.n_never_freed, 2);
	CHECK_U64(tl.never_freed_bytes, 1400);
	CHECK(tl.n_never_freed == 2 && tl.blocks[tl.never_freed[0]].address == 0x1000 &&
	      tl.blocks[tl.never_freed[1]].address == 0x6000);
	CHECK_U64(tl.n_unknown_frees, 1);
	CHECK(tl.n_unknown_frees == 1 && tl.points[tl.unknown_frees[0]].t == 900 &&
	      tl.points[tl.unknown_frees[0]].live == 1400 && tl.points[tl.unknown_frees[0]].delta == 0);
	CHECK_U64(tl.final_live, 1400);
	CHECK_U64(tl.n_reused_live, 0);

	/* the largest live blocks at the peak */
	CHECK_U64(mem_timeline_live_at(&tl, tl.peak.point, top, 3), 4);
	CHECK_U64(tl.blocks[top[0]].size, 1000);
	CHECK_U64(tl.blocks[top[1]].size, 500);
	CHECK_U64(tl.blocks[top[2]].size, 400);
	CHECK_U64(tl.blocks[top[1]].phase, ST_PHASE_FORWARD);
	mem_timeline_categories_at(&tl, tl.peak.point, cat);
	CHECK(memcmp(cat, tl.peak.by_category, sizeof(cat)) == 0);

	/* capacity: exactly the peak fits; one byte less fails at g3 by one byte */
	mem_timeline_capacity(&tl, 2100, &cap);
	CHECK(cap.fits);
	CHECK_U64(cap.headroom, 0);
	CHECK_U64(cap.peak, 2100);
	mem_timeline_capacity(&tl, 2099, &cap);
	CHECK(!cap.fits);
	CHECK_U64(cap.request, 200);
	CHECK_U64(cap.live_before, 1900);
	CHECK_U64(cap.overshoot, 1);
	CHECK(cap.point == tl.peak.point);
	CHECK_U64(cap.by_category[ST_MEM_ACTIVATION], 500);
	CHECK_U64(cap.by_category[ST_MEM_PARAMETER], 1000);
	CHECK_U64(cap.by_category[ST_MEM_GRADIENT], 0);
	/* the first request alone is too big */
	mem_timeline_capacity(&tl, 999, &cap);
	CHECK(!cap.fits && cap.request == 1000 && cap.live_before == 0 && cap.overshoot == 1);
	/* exactly reaching the capacity fits (700 reaches 1950); 2200 is the first to overshoot */
	mem_timeline_capacity(&tl, 1950, &cap);
	CHECK(!cap.fits);
	CHECK(cap.point >= 0 && tl.points[cap.point].t == 2200);
	CHECK_U64(cap.request, 100);
	CHECK_U64(cap.live_before, 1900);
	CHECK_U64(cap.overshoot, 50);

	/* the driver view is separate */
	CHECK(mem_timeline_build(&drv, &rp, MEM_VIEW_DRIVER) == 0);
	CHECK_U64(drv.n_points, 3);
	check_peak(&drv, &drv.peak, 12288, 250);
	CHECK_U64(drv.peak.by_category[ST_MEM_UNKNOWN], 12288);   /* no tags: nothing inferred */
	CHECK_U64(drv.n_never_freed, 1);
	CHECK_U64(drv.never_freed_bytes, 8192);
	CHECK_U64(drv.n_unknown_frees, 0);
	CHECK_U64(drv.step_peak[0].bytes, 12288);
	/* step 1 allocates nothing on the driver: what it runs with, carried in at its start */
	CHECK_U64(drv.step_peak[1].bytes, 12288);
	CHECK_U64(drv.step_peak[1].t, 2000);
	CHECK(drv.step_peak[1].block == -1 && drv.step_peak[1].point == 1);
	mem_timeline_release(&drv);
	mem_timeline_release(&tl);
	replay_release(&rp);
}

/* The block of the view allocated at `address` at time t, NULL when none. */
static const struct mem_block *block_at(const struct mem_timeline *tl, uint64_t address, uint64_t t)
{
	for (size_t i = 0; i < tl->n_blocks; i++)
		if (tl->blocks[i].address == address && tl->blocks[i].t_alloc == t)
			return &tl->blocks[i];
	return NULL;
}

static void check_category(const struct mem_timeline *tl, uint64_t address, uint64_t t, int category, bool tagged)
{
	const struct mem_block *b = block_at(tl, address, t);

	CHECK(b && b->category == category && b->tagged == tagged, "block 0x%" PRIx64 " at %" PRIu64 ": %s%s",
	      address, t, b ? st_mem_category_name(b->category) : "missing", b && b->tagged ? " (tagged)" : "");
}

/*
 * What the libraries keep for good (cuBLAS's workspace, made on the first
 * matrix product of a forward and never freed) is a workspace, not an
 * activation; a forward block the program holds into the next step (its
 * logits) and one freed in its own backward are activations.
 */
static void test_workspace(void)
{
	static const struct builder_span phases[] = {
		{ "step", 0, 0, 900 }, { "forward", 1, 100, 400 }, { "backward", 1, 400, 700 },
	};
	struct replay rp;
	struct builder b;
	struct mem_timeline tl;

	replay_begin(&rp, &b);
	op(&b, 1, "c_attn", "step/forward/GPT/c_attn", "forward");
	builder_step(&b, 0, false, 100, 1000);
	builder_step(&b, 1, false, 1100, 2000);
	builder_ranges(&b, 100, phases, sizeof(phases) / sizeof(phases[0]));
	builder_ranges(&b, 1100, phases, sizeof(phases) / sizeof(phases[0]));
	b.source = ST_SRC_DRIVER;
	builder_alloc(&b, 10, 0x1000, 1000, 0, 0);
	builder_tag(&b, 20, 0x1000, 1000, ST_MEM_PARAMETER);
	builder_alloc(&b, 210, 0x2000, 64, 0, 1);     /* the workspace: never freed */
	builder_alloc(&b, 220, 0x3000, 32, 0, 1);     /* held into the next step */
	builder_alloc(&b, 230, 0x4000, 16, 0, 1);     /* an activation: freed in the backward */
	FREE(&b, 600, 0x4000, 1);
	FREE(&b, 1300, 0x3000, 1);
	b.source = ST_SRC_MODEL;
	CHECK(builder_close(&b, NULL) == 0);
	CHECK(mem_timeline_build(&tl, &rp, MEM_VIEW_DRIVER) == 0);
	check_category(&tl, 0x2000, 210, ST_MEM_WORKSPACE, false);
	check_category(&tl, 0x3000, 220, ST_MEM_ACTIVATION, false);
	check_category(&tl, 0x4000, 230, ST_MEM_ACTIVATION, false);
	CHECK_U64(tl.peak.by_category[ST_MEM_WORKSPACE], 64);
	mem_timeline_release(&tl);
	replay_release(&rp);
}

/* The categories of tag_scenario's blocks, its peaks and their breakdowns, worked out in its comment. */
static void test_tags(void)
{
	struct replay rp;
	struct builder b;
	struct mem_timeline tl, model, w;
	struct mem_capacity cap;
	uint64_t cat[ST_MEM_CATEGORY_COUNT];
	uint32_t top[3];
	const uint64_t want[ST_MEM_CATEGORY_COUNT] = {
		[ST_MEM_PARAMETER] = 1000, [ST_MEM_UNKNOWN] = 64, [ST_MEM_INPUT] = 100, [ST_MEM_ACTIVATION] = 2300,
		[ST_MEM_GRADIENT] = 400, [ST_MEM_OPTIMIZER] = 800, [ST_MEM_TEMPORARY] = 166,
	};
	const uint64_t want0[ST_MEM_CATEGORY_COUNT] = {
		[ST_MEM_PARAMETER] = 1000, [ST_MEM_UNKNOWN] = 64, [ST_MEM_INPUT] = 100, [ST_MEM_ACTIVATION] = 2300,
		[ST_MEM_GRADIENT] = 400, [ST_MEM_TEMPORARY] = 150,
	};

	replay_begin(&rp, &b);
	tag_scenario(&b);
	CHECK(builder_close(&b, NULL) == 0);
	CHECK(mem_timeline_build(&tl, &rp, MEM_VIEW_DRIVER) == 0);
	CHECK_U64(tl.n_blocks, 17);
	CHECK_U64(tl.n_points, 29);            /* 17 allocations, 12 frees: the tags are no points */
	CHECK_U64(tl.n_tags, 13);
	CHECK_U64(tl.n_tags_ignored, 5);
	CHECK(tl.inferred);

	/* tagged, re-tagged (the last wins), inferred, unknown */
	check_category(&tl, 0x1000, 10, ST_MEM_PARAMETER, true);
	check_category(&tl, 0xf000, 12, ST_MEM_UNKNOWN, false);
	check_category(&tl, 0x2000, 120, ST_MEM_INPUT, true);
	check_category(&tl, 0xa000, 160, ST_MEM_TEMPORARY, false);
	check_category(&tl, 0x3000, 210, ST_MEM_ACTIVATION, false);
	check_category(&tl, 0x4000, 220, ST_MEM_TEMPORARY, false);
	check_category(&tl, 0x5000, 240, ST_MEM_ACTIVATION, false);
	check_category(&tl, 0x6000, 510, ST_MEM_GRADIENT, true);
	check_category(&tl, 0x7000, 520, ST_MEM_TEMPORARY, false);
	check_category(&tl, 0x8000, 810, ST_MEM_OPTIMIZER, true);
	check_category(&tl, 0xd000, 1050, ST_MEM_TEMPORARY, false);
	check_category(&tl, 0x2100, 1120, ST_MEM_INPUT, true);
	check_category(&tl, 0x3100, 1210, ST_MEM_ACTIVATION, false);
	check_category(&tl, 0x5200, 1240, ST_MEM_ACTIVATION, false);
	check_category(&tl, 0xe000, 1490, ST_MEM_TEMPORARY, false);
	check_category(&tl, 0x7100, 1510, ST_MEM_TEMPORARY, false);
	{
		/* which tags named nothing: another device, inside S, T0 freed, A0's size, inside S1 */
		static const uint64_t ignored[] = { 25, 250, 260, 270, 1250 };
		size_t k = 0;

		for (size_t i = 0; i < tl.n_tags; i++)
			if (tl.tags[i].block < 0) {
				CHECK(k < 5 && rp.mem[tl.tags[i].mem].ev.start == ignored[k], "ignored tag %zu at %" PRIu64,
				      k, rp.mem[tl.tags[i].mem].ev.start);
				k++;
			}
		CHECK_U64(k, 5);
	}

	/* the peaks and what they hold */
	check_peak(&tl, &tl.peak, 4830, 1510);
	CHECK(memcmp(tl.peak.by_category, want, sizeof(want)) == 0);
	for (int c = 0; c < ST_MEM_CATEGORY_COUNT; c++)
		CHECK(tl.peak.by_category[c] == want[c], "%s: %" PRIu64 " at the peak, want %" PRIu64,
		      st_mem_category_name(c), tl.peak.by_category[c], want[c]);
	mem_timeline_categories_at(&tl, tl.peak.point, cat);
	CHECK(memcmp(cat, want, sizeof(cat)) == 0);
	check_peak(&tl, &tl.step_peak[0], 4014, 520);
	CHECK(memcmp(tl.step_peak[0].by_category, want0, sizeof(want0)) == 0);
	for (int c = 0; c < ST_MEM_CATEGORY_COUNT; c++)
		CHECK(tl.step_peak[0].by_category[c] == want0[c], "%s: %" PRIu64 " at step 0's peak, want %" PRIu64,
		      st_mem_category_name(c), tl.step_peak[0].by_category[c], want0[c]);
	CHECK_U64(mem_timeline_live_at(&tl, tl.peak.point, top, 3), 9);
	CHECK(tl.blocks[top[0]].size == 2000 && tl.blocks[top[0]].category == ST_MEM_ACTIVATION);
	CHECK(tl.blocks[top[1]].size == 1000 && tl.blocks[top[1]].category == ST_MEM_PARAMETER);
	CHECK(tl.blocks[top[2]].size == 800 && tl.blocks[top[2]].category == ST_MEM_OPTIMIZER);

	/* every phase, zero_grad and data included */
	check_peak(&tl, &tl.phase_peak[ST_PHASE_FORWARD], 4710, 1490);
	check_peak(&tl, &tl.phase_peak[ST_PHASE_BACKWARD], 4830, 1510);
	check_peak(&tl, &tl.phase_peak[ST_PHASE_OPTIMIZER], 2364, 810);
	check_peak(&tl, &tl.phase_peak[ST_PHASE_DATA], 2480, 1120);
	check_peak(&tl, &tl.phase_peak[ST_PHASE_OTHER], 1064, 12);
	/* zero_grad: its allocation reached 1172; step 1's starts with 2380 live */
	CHECK_U64(tl.phase_peak[ST_PHASE_ZERO_GRAD].bytes, 2380);
	CHECK_U64(tl.phase_peak[ST_PHASE_ZERO_GRAD].t, 1150);
	CHECK(tl.phase_peak[ST_PHASE_ZERO_GRAD].block == -1);
	CHECK_U64(tl.phase_peak[ST_PHASE_ZERO_GRAD].by_category[ST_MEM_TEMPORARY], 16);
	CHECK_U64(block_at(&tl, 0xa000, 160)->phase, ST_PHASE_ZERO_GRAD);
	CHECK_U64(block_at(&tl, 0x2000, 120)->phase, ST_PHASE_DATA);

	/* the capacity replay: one byte short fails at T3, over what the tags and the rule say */
	mem_timeline_capacity(&tl, 4829, &cap);
	CHECK(!cap.fits && cap.request == 150 && cap.live_before == 4680 && cap.overshoot == 1);
	CHECK(cap.block >= 0 && tl.blocks[cap.block].category == ST_MEM_TEMPORARY);
	CHECK_U64(cap.by_category[ST_MEM_ACTIVATION], 2300);
	CHECK_U64(cap.by_category[ST_MEM_OPTIMIZER], 800);
	CHECK_U64(cap.by_category[ST_MEM_TEMPORARY], 16);

	/* a window sees the whole bundle's categories */
	CHECK(mem_timeline_build_window(&w, &rp, MEM_VIEW_DRIVER, 1100, 2000) == 0);
	check_peak(&w, &w.peak, 4830, 1510);
	CHECK(memcmp(w.peak.by_category, want, sizeof(want)) == 0);
	mem_timeline_release(&w);

	/* the model view ignores tags */
	CHECK(mem_timeline_build(&model, &rp, MEM_VIEW_MODEL) == 0);
	CHECK(model.n_points == 0 && model.n_tags == 0 && !model.inferred);
	mem_timeline_release(&model);
	mem_timeline_release(&tl);
	replay_release(&rp);
}

/* A tag names driver blocks only; without tags nothing is inferred. */
static void test_tags_views(void)
{
	struct replay rp;
	struct builder b;
	struct mem_timeline model, drv;

	replay_begin(&rp, &b);
	op(&b, 1, "w1", "step/forward/w1", "forward");
	builder_range(&b, "forward", 0, 0, 100);
	builder_alloc(&b, 10, 0x1000, 64, ST_MEM_WORKSPACE, 1);   /* the model's, at the same address */
	b.source = ST_SRC_DRIVER;
	builder_alloc(&b, 10, 0x1000, 64, 0, 1);
	builder_alloc(&b, 20, 0x2000, 32, 0, 1);
	builder_tag(&b, 30, 0x1000, 64, ST_MEM_PARAMETER);
	builder_tag(&b, 35, 0x2000, 32, ST_MEM_UNKNOWN);         /* says nothing */
	CHECK(builder_close(&b, NULL) == 0);
	CHECK(mem_timeline_build(&model, &rp, MEM_VIEW_MODEL) == 0);
	CHECK(model.n_blocks == 1 && model.blocks[0].category == ST_MEM_WORKSPACE && !model.blocks[0].tagged);
	CHECK_U64(model.peak.by_category[ST_MEM_WORKSPACE], 64);
	CHECK(mem_timeline_build(&drv, &rp, MEM_VIEW_DRIVER) == 0);
	CHECK(drv.n_blocks == 2 && drv.blocks[0].category == ST_MEM_PARAMETER && drv.blocks[0].tagged);
	/* never freed, so live when the forward ends: an activation */
	CHECK(drv.blocks[1].category == ST_MEM_ACTIVATION && !drv.blocks[1].tagged);
	CHECK_U64(drv.n_tags_ignored, 1);
	CHECK_U64(drv.peak.by_category[ST_MEM_PARAMETER], 64);
	CHECK_U64(drv.peak.by_category[ST_MEM_ACTIVATION], 32);
	mem_timeline_release(&model);
	mem_timeline_release(&drv);
	replay_release(&rp);

	/* the same blocks without the tags: the driver's categories stay unknown */
	replay_begin(&rp, &b);
	op(&b, 1, "w1", "step/forward/w1", "forward");
	builder_range(&b, "forward", 0, 0, 100);
	b.source = ST_SRC_DRIVER;
	builder_alloc(&b, 10, 0x1000, 64, 0, 1);
	builder_alloc(&b, 20, 0x2000, 32, 0, 1);
	CHECK(builder_close(&b, NULL) == 0);
	CHECK(mem_timeline_build(&drv, &rp, MEM_VIEW_DRIVER) == 0);
	CHECK(!drv.inferred && drv.n_tags == 0);
	CHECK(drv.blocks[0].category == ST_MEM_UNKNOWN && drv.blocks[1].category == ST_MEM_UNKNOWN);
	CHECK_U64(drv.peak.by_category[ST_MEM_UNKNOWN], 96);
	mem_timeline_release(&drv);
	replay_release(&rp);
}

/*
 * The ranks of a run pooled into one replay (replay_ranks_pool) keep their
 * blocks apart though they share addresses; each rank's tags still name
 * its own blocks. Rank 0 tags its block a parameter, rank 1 a gradient
 * (times as tag_scenario's, one step each, rank 1's after rank 0's).
 */
static void test_tags_pooled(void)
{
	struct replay rank[2], pooled;
	const struct replay *ranks[2] = { &rank[0], &rank[1] };
	int64_t offset[2] = { 0, 0 };
	struct replay_ranks rs = { .rank = ranks, .n = 2, .offset = offset, .world_size = 2, .run_id = 7,
				   .alignment = "test" };
	struct mem_timeline tl;

	for (int r = 0; r < 2; r++) {
		struct builder b;

		replay_begin(&rank[r], &b);
		b.source = ST_SRC_DRIVER;
		builder_alloc(&b, 10, 0x1000, 100 * (uint64_t)(r + 1), 0, 0);
		builder_alloc(&b, 20, 0x2000, 8, 0, 0);
		builder_tag(&b, 30, 0x1000, 100 * (uint64_t)(r + 1), r ? ST_MEM_GRADIENT : ST_MEM_PARAMETER);
		CHECK(builder_close(&b, NULL) == 0);
	}
	CHECK(replay_ranks_pool(&pooled, &rs) == 0);
	CHECK(mem_timeline_build(&tl, &pooled, MEM_VIEW_DRIVER) == 0);
	CHECK_U64(tl.n_blocks, 4);
	CHECK_U64(tl.n_tags, 2);
	CHECK_U64(tl.n_tags_ignored, 0);
	CHECK(tl.n_blocks == 4 && tl.blocks[0].category == ST_MEM_PARAMETER && tl.blocks[2].category == ST_MEM_GRADIENT);
	/* blocks outside every phase stay unknown */
	CHECK(tl.n_blocks == 4 && tl.blocks[1].category == ST_MEM_UNKNOWN && tl.blocks[3].category == ST_MEM_UNKNOWN);
	mem_timeline_release(&tl);
	replay_release(&pooled);
	replay_release(&rank[0]);
	replay_release(&rank[1]);
}

/* Same instant: the recorded order decides. */
static void test_equal_time(void)
{
	for (int alloc_first = 0; alloc_first < 2; alloc_first++) {
		struct replay rp;
		struct builder b;
		struct mem_timeline tl;

		replay_begin(&rp, &b);
		builder_alloc(&b, 10, 0xa, 100, ST_MEM_TEMPORARY, 0);
		if (alloc_first) {
			builder_alloc(&b, 20, 0xb, 100, ST_MEM_TEMPORARY, 0);
			FREE(&b, 20, 0xa, 0);
		} else {
			FREE(&b, 20, 0xa, 0);
			builder_alloc(&b, 20, 0xb, 100, ST_MEM_TEMPORARY, 0);
		}
		CHECK(builder_close(&b, NULL) == 0);
		CHECK(mem_timeline_build(&tl, &rp, MEM_VIEW_MODEL) == 0);
		if (alloc_first) {
			check_peak(&tl, &tl.peak, 200, 20);
		} else {
			check_peak(&tl, &tl.peak, 100, 10);   /* the tie at 20 loses to the earlier */
		}
		CHECK_U64(tl.n_unknown_frees, 0);
		CHECK_U64(tl.final_live, 100);
		mem_timeline_release(&tl);
		replay_release(&rp);
	}
}

/* A lost free: the address allocated again while live. A zero-size block. */
static void test_reuse_and_leaks(void)
{
	struct replay rp;
	struct builder b;
	struct mem_timeline tl;

	replay_begin(&rp, &b);
	builder_alloc(&b, 1, 0x1, 10, ST_MEM_WORKSPACE, 0);
	builder_alloc(&b, 2, 0x1, 20, ST_MEM_WORKSPACE, 0);
	builder_alloc(&b, 3, 0x2, 0, ST_MEM_WORKSPACE, 0);
	FREE(&b, 4, 0x1, 0);
	FREE(&b, 5, 0x1, 0);
	FREE(&b, 6, 0x2, 0);
	CHECK(builder_close(&b, NULL) == 0);
	CHECK(mem_timeline_build(&tl, &rp, MEM_VIEW_MODEL) == 0);
	CHECK_U64(tl.n_reused_live, 1);
	check_peak(&tl, &tl.peak, 30, 2);
	CHECK_U64(tl.n_never_freed, 1);
	CHECK(tl.n_never_freed == 1 && tl.blocks[tl.never_freed[0]].size == 10);
	CHECK_U64(tl.n_unknown_frees, 1);      /* the second free of 0x1 */
	CHECK(tl.n_unknown_frees == 1 && tl.points[tl.unknown_frees[0]].t == 5);
	CHECK_U64(tl.final_live, 10);
	CHECK_U64(tl.points[3].live, 10);      /* the first free took the newer, 20-byte block */
	mem_timeline_release(&tl);
	replay_release(&rp);
}

/*
 * No op phase: the covering NVTX range's path names it, its first phase
 * component (a "zero_grad" range inside "backward" is the backward's); an
 * op's phase wins, but a communication op's "comm" names none.
 */
static void test_phase_from_range(void)
{
	struct replay rp;
	struct builder b;
	struct mem_timeline tl;

	replay_begin(&rp, &b);
	op(&b, 3, "adamw", "step/optimizer/adamw", "optimizer");
	op(&b, 4, "allreduce", "step/backward/comm/allreduce/flat", ST_OP_PHASE_COMM);
	builder_step(&b, 0, false, 0, 100);
	builder_range(&b, "step", 0, 0, 100);
	builder_range(&b, "forward", 1, 0, 50);
	builder_range(&b, "zero_grad", 2, 80, 90);
	builder_range(&b, "backward", 1, 51, 100);
	builder_alloc(&b, 10, 0x1, 10, ST_MEM_ACTIVATION, 0);
	builder_alloc(&b, 60, 0x2, 5, ST_MEM_GRADIENT, 0);
	builder_alloc(&b, 70, 0x3, 7, ST_MEM_OPTIMIZER, 3);
	builder_alloc(&b, 75, 0x4, 1, ST_MEM_WORKSPACE, 4);
	builder_alloc(&b, 85, 0x5, 2, ST_MEM_TEMPORARY, 0);
	CHECK(builder_close(&b, NULL) == 0);
	CHECK(mem_timeline_build(&tl, &rp, MEM_VIEW_MODEL) == 0);
	CHECK(tl.n_points == 5);
	CHECK_U64(tl.points[0].phase, ST_PHASE_FORWARD);
	CHECK_U64(tl.points[1].phase, ST_PHASE_BACKWARD);
	CHECK_U64(tl.points[2].phase, ST_PHASE_OPTIMIZER);
	CHECK_U64(tl.points[3].phase, ST_PHASE_BACKWARD);
	CHECK_U64(tl.points[4].phase, ST_PHASE_BACKWARD);
	check_peak(&tl, &tl.phase_peak[ST_PHASE_FORWARD], 10, 10);
	check_peak(&tl, &tl.phase_peak[ST_PHASE_BACKWARD], 25, 85);
	check_peak(&tl, &tl.phase_peak[ST_PHASE_OPTIMIZER], 22, 70);
	CHECK(tl.phase_peak[ST_PHASE_OTHER].point < 0);
	/* the nested range is not a span of its own */
	CHECK(tl.phase_peak[ST_PHASE_ZERO_GRAD].point < 0);
	mem_timeline_release(&tl);
	replay_release(&rp);
}

/*
 * Spans that allocate nothing still have a peak: what was live when they
 * began (times in ns, live after each event):
 *     10 alloc P 1000 parameter (no op)          1000
 *   step 0 [100, 1000]: forward [100, 400], backward [400, 700], optimizer [700, 900]
 *    200 alloc a 300 activation (forward op)     1300
 *    300 alloc t 200 temporary (forward op)      1500
 *    350 free  t                                 1300
 *    450 free  a                                 1000
 *   step 1 [2000, 3000]: nothing
 */
static void test_spans(void)
{
	struct replay rp;
	struct builder b;
	struct mem_timeline tl, w;

	replay_begin(&rp, &b);
	op(&b, 1, "w1", "step/forward/w1", "forward");
	builder_step(&b, 0, false, 100, 1000);
	builder_step(&b, 1, false, 2000, 3000);
	builder_range(&b, "step", 0, 100, 1000);
	builder_range(&b, "forward", 1, 100, 400);
	builder_range(&b, "backward", 1, 400, 700);
	builder_range(&b, "optimizer", 1, 700, 900);
	builder_range(&b, "step", 0, 2000, 3000);
	builder_alloc(&b, 10, 0x1, 1000, ST_MEM_PARAMETER, 0);
	builder_alloc(&b, 200, 0x2, 300, ST_MEM_ACTIVATION, 1);
	builder_alloc(&b, 300, 0x3, 200, ST_MEM_TEMPORARY, 1);
	FREE(&b, 350, 0x3, 1);
	FREE(&b, 450, 0x2, 0);
	CHECK(builder_close(&b, NULL) == 0);
	CHECK(mem_timeline_build(&tl, &rp, MEM_VIEW_MODEL) == 0);
	check_peak(&tl, &tl.peak, 1500, 300);
	check_peak(&tl, &tl.phase_peak[ST_PHASE_FORWARD], 1500, 300);
	/* backward and the optimizer allocate nothing: live at their start, no block */
	CHECK_U64(tl.phase_peak[ST_PHASE_BACKWARD].bytes, 1300);
	CHECK_U64(tl.phase_peak[ST_PHASE_BACKWARD].t, 400);
	CHECK(tl.phase_peak[ST_PHASE_BACKWARD].block == -1 && tl.phase_peak[ST_PHASE_BACKWARD].point == 3);
	CHECK_U64(tl.phase_peak[ST_PHASE_BACKWARD].by_category[ST_MEM_ACTIVATION], 300);
	CHECK_U64(tl.phase_peak[ST_PHASE_BACKWARD].by_category[ST_MEM_TEMPORARY], 0);
	CHECK_U64(tl.phase_peak[ST_PHASE_OPTIMIZER].bytes, 1000);
	CHECK_U64(tl.phase_peak[ST_PHASE_OPTIMIZER].t, 700);
	CHECK(tl.phase_peak[ST_PHASE_OPTIMIZER].block == -1);
	check_peak(&tl, &tl.step_peak[0], 1500, 300);
	CHECK_U64(tl.step_peak[1].bytes, 1000);
	CHECK_U64(tl.step_peak[1].t, 2000);
	CHECK_U64(tl.n_allocs, 3);

	/* the window of step 1: what it starts with is its peak; nothing allocated in it */
	CHECK(mem_timeline_build_window(&w, &rp, MEM_VIEW_MODEL, 2000, 3000) == 0);
	CHECK_U64(w.peak.bytes, 1000);
	CHECK_U64(w.peak.t, 2000);
	CHECK(w.peak.block == -1 && w.peak.by_category[ST_MEM_PARAMETER] == 1000);
	CHECK(w.step_peak[0].point < 0, "step 0 is outside the window");
	CHECK_U64(w.step_peak[1].bytes, 1000);
	CHECK(w.phase_peak[ST_PHASE_FORWARD].point < 0 && w.phase_peak[ST_PHASE_OPTIMIZER].point < 0);
	CHECK_U64(w.n_allocs, 0);
	CHECK_U64(w.n_frees, 0);
	CHECK_U64(w.n_points, 5);   /* every event is kept: the live set is the bundle's */
	mem_timeline_release(&w);

	/* a window inside step 0: 1300 carried in at 250, then t's allocation reaches 1500 */
	CHECK(mem_timeline_build_window(&w, &rp, MEM_VIEW_MODEL, 250, 600) == 0);
	check_peak(&w, &w.peak, 1500, 300);
	CHECK_U64(w.n_allocs, 1);
	CHECK_U64(w.n_frees, 2);
	/* only the part of backward inside the window: its start at 400 */
	CHECK_U64(w.phase_peak[ST_PHASE_BACKWARD].bytes, 1300);
	mem_timeline_release(&w);
	mem_timeline_release(&tl);
	replay_release(&rp);
}

static void test_empty(void)
{
	struct replay rp;
	struct builder b;
	struct mem_timeline tl;
	struct mem_capacity cap;

	replay_begin(&rp, &b);
	CHECK(builder_close(&b, NULL) == 0);
	CHECK(mem_timeline_build(&tl, &rp, MEM_VIEW_MODEL) == 0);
	CHECK_U64(tl.n_points, 0);
	CHECK(tl.peak.point < 0 && tl.peak.bytes == 0);
	CHECK_U64(mem_timeline_live_at(&tl, tl.peak.point, NULL, 0), 0);
	CHECK(mem_timeline_point_at(&tl, 5) == -1);
	mem_timeline_capacity(&tl, 1, &cap);
	CHECK(cap.fits && cap.headroom == 1);
	mem_timeline_release(&tl);
	replay_release(&rp);
}

static void test_svg_helpers(void)
{
	double t[32], step;
	char buf[64];
	int n;

	n = svg_ticks_linear(0, 1000, 6, t, 32, &step);
	CHECK(n == 6 && step == 200 && t[0] == 0 && t[5] == 1000);
	n = svg_ticks_linear(0, 7.3, 8, t, 32, &step);
	CHECK(n == 8 && step == 1 && t[7] == 7);
	n = svg_ticks_linear(0.1, 0.95, 5, t, 32, &step);
	CHECK(step == 0.2 && n == 4 && t[0] > 0.199 && t[0] < 0.201);
	n = svg_ticks_log10(1, 1e6, t, 32);
	CHECK(n == 7 && t[0] == 1 && t[6] == 1e6);
	n = svg_ticks_log10(1, 100, t, 32);
	CHECK(n == 7 && t[1] == 2 && t[2] == 5);
	CHECK(svg_nice_ceil(3.1) == 5 && svg_nice_ceil(0.012) > 0.0199 && svg_nice_ceil(0.012) < 0.0201);
	CHECK(strcmp(human_bytes(buf, sizeof(buf), 1.5 * 1024 * 1024 * 1024), "1.50 GiB") == 0);
	CHECK(strcmp(human_bytes(buf, sizeof(buf), 512), "512 B") == 0);
	CHECK(strcmp(human_bytes(buf, sizeof(buf), 12 * 1048576.0), "12 MiB") == 0);
	CHECK(strcmp(human_bytes(buf, sizeof(buf), 1023.9 * 1024), "1.00 MiB") == 0);
	CHECK(strcmp(human_time(buf, sizeof(buf), 12e6), "12 ms") == 0);
	CHECK(strcmp(human_time(buf, sizeof(buf), 12.5e3), "12.5 us") == 0);
	CHECK(strcmp(human_time(buf, sizeof(buf), 1.25e9), "1.25 s") == 0);
	CHECK(strcmp(svg_fmt_tick(buf, sizeof(buf), 0.5, 0.5), "0.5") == 0);
	CHECK(strcmp(svg_fmt_tick(buf, sizeof(buf), 2.25, 0.25), "2.25") == 0);
	CHECK(strcmp(svg_fmt_tick(buf, sizeof(buf), 20, 10), "20") == 0);
	{
		const char *u;
		CHECK(human_byte_unit(3.0 * 1024 * 1024 * 1024, &u) == 1024.0 * 1024 * 1024 && strcmp(u, "GiB") == 0);
		CHECK(human_time_unit(5e6, &u) == 1e6 && strcmp(u, "ms") == 0);
	}
	{
		struct svg_scale sc;
		svg_scale_linear(&sc, 0, 10, 100, 0);
		CHECK(svg_scale_map(&sc, 5) == 50 && svg_scale_map(&sc, 20) == 0);
		svg_scale_log10(&sc, 1, 100, 0, 200);
		CHECK(svg_scale_map(&sc, 10) > 99.99 && svg_scale_map(&sc, 10) < 100.01);
	}
	CHECK(strcmp(svg_mem_color(ST_MEM_ACTIVATION), svg_mem_color(ST_MEM_PARAMETER)) != 0);
	CHECK(strcmp(svg_mem_color(99), svg_mem_color(ST_MEM_UNKNOWN)) == 0);
	{
		/* escaping */
		char *s = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&s, &len);
		svg_escape(f, "a<b&\"c'\x01>");
		fclose(f);
		CHECK(s && strcmp(s, "a&lt;b&amp;&quot;c&#39;&gt;") == 0);
		free(s);
	}
}

/* ---- the bundles for the CLI tests -------------------------------------- */

static void bundle_header(struct builder *b, const char *model, uint32_t ctx)
{
	builder_init(b);
	b->config.model = (char *)model;
	b->config.ctx = ctx;
	b->config.batch = 4;
	b->config.precision = "fp32";
	b->config.mode = "train";
	b->header.device = NULL;
}

static int write_bundle(const char *path)
{
	struct builder b;

	bundle_header(&b, "tiny", 128);
	if (builder_open(&b, path) < 0)
		return 1;
	scenario(&b);
	return builder_close(&b, "ok") < 0;
}

/* tag_scenario as a bundle: driver allocations only, so `memory` shows the driver view. */
static int write_tags_bundle(const char *path)
{
	struct builder b;

	bundle_header(&b, "custom", 128);
	if (builder_open(&b, path) < 0)
		return 1;
	tag_scenario(&b);
	return builder_close(&b, "ok") < 0;
}

/*
 * Every block recorded twice, as steptrace's own recordings hold them: the
 * driver's record (cudaMallocFromPoolAsync) and the model allocator's, at
 * the same address and size; and steps that share their boundaries (times
 * in us, live bytes after each pair):
 *     10 parameter 0x1000 1000                    1000
 *   step 0 [100, 1000]
 *    201 activation 0x2000 500 (forward)          1500   step 0's peak, 0.101 ms into it
 *    900 free 0x2000                              1000
 *   step 1 [1000, 2000]: its first instant is step 0's last, and its own
 *   1000 activation 0x3000 800 (forward)          1800   step 1's peak, 0 ms into it
 *   1500 free 0x3000                              1000
 *   step 2 [2000, 3000]: allocates nothing; its peak is the 1000 it begins with
 * No out-of-memory.
 */
static int write_edges_bundle(const char *path)
{
	static const struct { uint64_t us, address, size; bool alloc; } blocks[] = {
		{ 10, 0x1000, 1000, true }, { 201, 0x2000, 500, true }, { 900, 0x2000, 500, false },
		{ 1000, 0x3000, 800, true }, { 1500, 0x3000, 800, false },
	};
	struct builder b;

	bundle_header(&b, "tiny", 128);
	if (builder_open(&b, path) < 0)
		return 1;
	op(&b, 1, "w1", "step/forward/layer.0/ffn/w1", "forward");
	for (uint32_t st = 0; st < 3; st++)
		builder_step(&b, st, false, (st ? st * 1000 : 100) * 1000ull, (st + 1) * 1000 * 1000ull);
	for (size_t i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		uint64_t t = blocks[i].us * 1000;
		int cat = i ? ST_MEM_ACTIVATION : ST_MEM_PARAMETER;

		/* the driver's record first on an allocation, last on a free, as CUDA sees them */
		b.source = blocks[i].alloc ? ST_SRC_DRIVER : ST_SRC_MODEL;
		for (int k = 0; k < 2; k++) {
			if (blocks[i].alloc)
				builder_alloc(&b, t, blocks[i].address, blocks[i].size,
					      b.source == ST_SRC_MODEL ? cat : 0, i ? 1 : 0);
			else
				FREE(&b, t, blocks[i].address, i ? 1 : 0);
			b.source = b.source == ST_SRC_MODEL ? ST_SRC_DRIVER : ST_SRC_MODEL;
		}
	}
	b.source = ST_SRC_MODEL;
	return builder_close(&b, "ok") < 0;
}

/*
 * A training-step-shaped bundle for looking at the chart: parameters at
 * setup, then per step a forward pass that stacks activations layer by
 * layer (with temporaries), a backward pass that frees them in reverse while
 * gradients appear, and an optimizer step whose moments are allocated on the
 * first step. NVTX ranges step/forward/backward/optimizer and layer.N.
 */
static int write_train_bundle(const char *path)
{
	struct builder b;
	enum { L = 8 };
	const uint64_t MiB = 1 << 20, W = 48 * MiB, ACT = 24 * MiB;
	uint64_t t = 1000, addr = 0x10000000;
	uint64_t act[L][4], grad[L], moments[L][2], param[L];
	bool have_grads = false;
	char layer[32];

	bundle_header(&b, "synthetic", 512);
	if (builder_open(&b, path) < 0)
		return 1;
	op(&b, 1, "w1", "step/forward/layer.0/ffn/w1", "forward");
	op(&b, 2, "w1_grad", "step/backward/layer.0/ffn/w1", "backward");
	op(&b, 3, "adamw", "step/optimizer/adamw", "optimizer");
	for (int l = 0; l < L; l++) {
		param[l] = addr += W;
		builder_alloc(&b, t += 100, param[l], W, ST_MEM_PARAMETER, 0);
	}
	b.source = ST_SRC_DRIVER;
	builder_alloc(&b, t, 0x7f0000000000, 512 * MiB, 0, 0);
	b.source = ST_SRC_MODEL;
	for (uint32_t st = 0; st < 2; st++) {
		uint64_t s0 = t += 200000, f0, b0, o0;
		uint64_t tmp = 0;

		f0 = t += 1000;
		builder_alloc(&b, t += 1000, 0x1000, 2 * MiB, ST_MEM_INPUT, 1);
		for (int l = 0; l < L; l++) {
			uint64_t l0 = t;
			for (int k = 0; k < 4; k++) {
				act[l][k] = addr += ACT * 2;
				builder_alloc(&b, t += 20000, act[l][k], k == 2 ? ACT * 4 : ACT, ST_MEM_ACTIVATION, 1);
				tmp = addr += ACT * 4;
				builder_alloc(&b, t += 5000, tmp, ACT * 2, ST_MEM_TEMPORARY, 1);
				FREE(&b, t += 15000, tmp, 1);
			}
			snprintf(layer, sizeof(layer), "layer.%d", l);
			builder_range(&b, "ffn", 3, l0 + 10, t - 10);
			builder_range(&b, layer, 2, l0 + 1, t);
		}
		builder_alloc(&b, t += 10000, 0x2000, 96 * MiB, ST_MEM_TEMPORARY, 1);  /* logits */
		builder_range(&b, "forward", 1, f0, t += 1000);
		b0 = t += 1000;
		FREE(&b, t += 10000, 0x2000, 2);
		for (int l = L - 1; l >= 0; l--) {
			uint64_t scratch = 0x7f1000000000 + (uint64_t)l * 0x1000000;
			if (!have_grads) {
				grad[l] = addr += W;
				builder_alloc(&b, t += 10000, grad[l], W, ST_MEM_GRADIENT, 2);
			}
			tmp = addr += ACT * 4;
			builder_alloc(&b, t += 5000, tmp, ACT * 3, ST_MEM_TEMPORARY, 2);
			for (int k = 3; k >= 0; k--)
				FREE(&b, t += 15000, act[l][k], 2);
			FREE(&b, t += 5000, tmp, 2);
			b.source = ST_SRC_DRIVER;
			builder_alloc(&b, t, scratch, 8 * MiB, 0, 0);
			FREE(&b, t + 4000, scratch, 0);
			b.source = ST_SRC_MODEL;
		}
		FREE(&b, t += 1000, 0x1000, 2);
		have_grads = true;
		builder_range(&b, "backward", 1, b0, t += 1000);
		o0 = t += 1000;
		for (int l = 0; l < L; l++) {
			if (st == 0) {
				moments[l][0] = addr += W;
				builder_alloc(&b, t += 8000, moments[l][0], W, ST_MEM_OPTIMIZER, 3);
				moments[l][1] = addr += W;
				builder_alloc(&b, t += 8000, moments[l][1], W, ST_MEM_OPTIMIZER, 3);
			}
			builder_alloc(&b, t += 2000, 0x3000, 16 * MiB, ST_MEM_WORKSPACE, 3);
			FREE(&b, t += 6000, 0x3000, 3);
		}
		builder_range(&b, "optimizer", 1, o0, t += 1000);
		builder_range(&b, "step", 0, s0, t += 1000);
		builder_step(&b, st, st == 0, s0, t);
	}
	return builder_close(&b, "ok") < 0;
}

/*
 * An attention sweep's shape: steps of 1 ms each in a range of its
 * configuration, A B A C B, each allocating (and freeing) 1000 * (step + 1)
 * bytes; step 3 (C) ran out asking for 5000 with 1500 live. Against a
 * capacity of 6000, by label in the order first seen: A, 2 steps, peak 3000,
 * fits; B, 2 steps, peak 5000, fits; C, 1 step, peak 4000 but needs 6500
 * (recorded OOM): no.
 */
static int write_sweep_bundle(const char *path)
{
	static const char *const label[] = { "A", "B", "A", "C", "B" };
	struct builder b;

	bundle_header(&b, "tiny", 128);
	if (builder_open(&b, path) < 0)
		return 1;
	for (uint32_t st = 0; st < 5; st++) {
		uint64_t t = st * 1000000ull;

		builder_range(&b, label[st], 0, t, t + 999999);
		builder_alloc(&b, t + 1000, 0x1000, 1000 * (st + 1), ST_MEM_ACTIVATION, 0);
		if (st == 3)
			builder_oom(&b, t + 2000, 5000, ST_MEM_ACTIVATION, 0, 1500, 80ull << 30, st);
		FREE(&b, t + 3000, 0x1000, 0);
		builder_step(&b, st, false, t, t + 999999);
	}
	return builder_close(&b, "ok") < 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write-sweep"))
		return write_sweep_bundle(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--write-train"))
		return write_train_bundle(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--write"))
		return write_bundle(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--write-tags"))
		return write_tags_bundle(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "--write-edges"))
		return write_edges_bundle(argv[2]);
	test_main_scenario();
	test_equal_time();
	test_reuse_and_leaks();
	test_phase_from_range();
	test_tags();
	test_workspace();
	test_tags_views();
	test_tags_pooled();
	test_spans();
	test_empty();
	test_svg_helpers();
	return check_done("test_memory");
}
