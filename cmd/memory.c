/*
 * memory.c: `steptrace memory`, memory peaks, breakdown at the peak
 * (analyze/memory.c), and --svg the active-memory timeline
 * (render/memory_svg.c).
 */
#include <stdio.h>
#include <string.h>

#include "analyze/memory.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"
#include "lib/output.h"
#include "render/memory_svg.h"

struct memory_cmd_opts {
	struct memory_opts memory;
	const char *svg;          /* write the chart here, NULL: no chart */
	uint64_t max_size;        /* refuse a chart larger than this (--max-size); 0: no limit */
};

static const char *const usage[] = {
	"steptrace memory [<options>] FILE",
	"",
	"steptrace memory: " CMD_MEMORY_HELP,
	NULL,
};

/* What memory_svg_result draws, for output_write_sized. */
struct chart_args {
	const struct replay *rp;
	const struct memory_result *res;
};

static int write_chart(void *ctx, FILE *out)
{
	const struct chart_args *c = ctx;

	return memory_svg_result(out, c->rp, c->res, 1200, 640);
}

/*
 * The report, and with --svg the chart written there through lib/output.h
 * (its path is opened once the step is known to exist, so a bad one costs
 * no work and prints no report), named on stderr once written.
 */
static int run(const struct replay *const *rps, int n, void *ctx, struct report *r)
{
	const struct memory_cmd_opts *o = ctx;
	const struct replay *rp = rps[0];
	struct memory_result res;
	struct output svg = { 0 };
	int32_t step;
	int rc = -1;

	if (memory_step_index(rp, o->memory.step, &step) < 0)
		return -1;
	if (o->svg && output_open(&svg, o->svg, (const char *[]){ rp->path, NULL }) < 0)
		return -1;
	if (memory_compute(rp, &o->memory, &res) < 0 || memory_report(r, rp, &o->memory, &res) < 0)
		goto out;
	if (o->svg) {
		struct chart_args c = { rp, &res };

		if (output_write_sized(&svg, o->max_size, "SVG", NULL, write_chart, &c, NULL) < 0)
			goto out;
		fprintf(stderr, "wrote '%s': the active-memory timeline (SVG)\n", o->svg);
		/* the chart on standard output is the whole output */
		rc = !strcmp(o->svg, "-") ? ANALYSIS_NO_REPORT : 0;
	} else {
		rc = 0;
	}
out:
	if (svg.f)
		output_discard(&svg);
	memory_result_release(&res);
	return rc;
}

int cmd_memory(int argc, const char **argv)
{
	struct memory_cmd_opts o = { .memory = { .top = 10, .view = -1, .step = -1 }, .max_size = OUTPUT_MAX_SIZE };
	int format = OUT_TABLE;
	const struct option opts[] = {
		OPT_POSITIVE('n', "top", &o.memory.top, "list the N largest live blocks at the peak (default: 10)"),
		OPT_CHOICE(0, "view", &o.memory.view, mem_view_short_names,
			   "model (the allocator's categories; the default when it recorded any) or driver (cudaMalloc)"),
		OPT_STRING(0, "svg", &o.svg, "FILE", "draw the active-memory timeline stacked by category ('-': the chart alone, on stdout)"),
		OPT_MAX_SIZE(&o.max_size, "the chart"),
		OPT_COUNT(0, "step", &o.memory.step, "only step N (its index in 'steptrace steps'): its peaks, blocks and chart"),
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .format = &format,
		.ranks = RANKS_SPLIT, .output = &o.svg, .output_option = "--svg",
		.run = run, .ctx = &o,
	};

	return analysis_main(&c, argc, argv);
}
