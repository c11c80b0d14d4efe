/* memory.c: `steptrace memory`, memory peaks, breakdown at the peak, --svg (analyze/memory.c). */
#include <string.h>

#include "analyze/memory.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

static const char *const usage[] = {
	"steptrace memory [<options>] FILE",
	"",
	"steptrace memory: " CMD_MEMORY_HELP,
	NULL,
};

static int run(const struct replay *const *rps, int n, void *ctx, struct report *r)
{
	const struct memory_opts *o = ctx;
	int rc = memory_run(rps[0], o, r);

	/* the chart on standard output is the whole output */
	return rc == 0 && o->svg && !strcmp(o->svg, "-") ? ANALYSIS_NO_REPORT : rc;
}

int cmd_memory(int argc, const char **argv)
{
	struct memory_opts o = { .top = 10, .view = -1, .step = -1, .max_size = OUTPUT_MAX_SIZE };
	int format = OUT_TABLE;
	const struct option opts[] = {
		OPT_POSITIVE('n', "top", &o.top, "list the N largest live blocks at the peak (default: 10)"),
		OPT_CHOICE(0, "view", &o.view, mem_view_short_names,
			   "model (the allocator's categories; the default when it recorded any) or driver (cudaMalloc)"),
		OPT_STRING(0, "svg", &o.svg, "FILE", "draw the active-memory timeline stacked by category ('-': the chart alone, on stdout)"),
		OPT_MAX_SIZE(&o.max_size, "the chart"),
		OPT_COUNT(0, "step", &o.step, "only step N (its index in 'steptrace steps'): its peaks, blocks and chart"),
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
