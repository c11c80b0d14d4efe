/* steps.c: `steptrace steps`, per-step times and mean ± std (analyze/steps.c). */
#include "analyze/steps.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

static const char *const usage[] = {
	"steptrace steps [<options>] FILE",
	"",
	"steptrace steps: " CMD_STEPS_HELP,
	NULL,
};

static int run(const struct replay *const *rps, int n, void *ctx, struct report *r)
{
	return steps_run(rps[0], *(const bool *)ctx, r);
}

int cmd_steps(int argc, const char **argv)
{
	bool include_warmup = false;
	int format = OUT_TABLE;
	const struct option opts[] = {
		OPT_BOOLEAN(0, "include-warmup", &include_warmup,
			    "list warm-up steps too, and the statistics with and without them"),
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .format = &format,
		.ranks = RANKS_SPLIT, .run = run, .ctx = &include_warmup,
	};

	return analysis_main(&c, argc, argv);
}
