/* ranges.c: `steptrace ranges`, NVTX ranges with CPU and GPU time (analyze/ranges.c). */
#include "analyze/ranges.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

static const char *const usage[] = {
	"steptrace ranges [<options>] FILE",
	"",
	"steptrace ranges: " CMD_RANGES_HELP,
	NULL,
};

static int run(const struct replay *const *rps, int n, void *ctx, struct report *r)
{
	return ranges_run(rps[0], ctx, r);
}

int cmd_ranges(int argc, const char **argv)
{
	struct ranges_opts o = { 0 };
	int format = OUT_TABLE;
	bool per_rank = false;
	const struct option opts[] = {
		OPT_STRING(0, "range", &o.range, "PATH",
			   "keep ranges under this NVTX path ('forward', 'layer.*/attn'; default: all)"),
		OPT_POSITIVE('n', "top", &o.top, "show the N largest rows (default: all)"),
		OPT_POSITIVE(0, "depth", &o.depth, "keep paths of at most N components (default: any depth)"),
		OPT_BOOLEAN(0, "include-warmup", &o.include_warmup, "count ranges of warm-up steps and outside steps"),
		OPT_PER_RANK(&per_rank),
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .range = &o.range,
		.format = &format, .per_rank = &per_rank, .run = run, .ctx = &o,
	};

	return analysis_main(&c, argc, argv);
}
