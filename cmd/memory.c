/* memory.c: `steptrace memory`, memory peaks, breakdown at the peak, --svg (analyze/memory.c). */
#include "analyze/memory.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"
#include "lib/error.h"

static const char *const usage[] = {
	"steptrace memory [<options>] FILE",
	NULL,
};

static int check(void *ctx)
{
	const struct memory_opts *o = ctx;

	if (o->top < 1)
		return error("--top must be at least 1");
	return 0;
}

static int run(const struct replay *rps, int n, void *ctx, struct report *r)
{
	return memory_run(&rps[0], ctx, r);
}

int cmd_memory(int argc, const char **argv)
{
	struct memory_opts o = { .top = 10, .view = -1, .step = -1 };
	int format = OUT_TABLE;
	const struct option opts[] = {
		OPT_INTEGER('n', "top", &o.top, "list the N largest live blocks at the peak (default 10)"),
		OPT_CHOICE(0, "view", &o.view, mem_view_short_names,
			   "model (the allocator's categories; the default when it recorded any) or driver (cudaMalloc)"),
		OPT_STRING(0, "svg", &o.svg, "FILE", "draw the active-memory timeline stacked by category"),
		OPT_INTEGER(0, "step", &o.step, "with --svg, draw only step N"),
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .format = &format,
		.check = check, .run = run, .ctx = &o,
	};

	return analysis_main(&c, argc, argv);
}
