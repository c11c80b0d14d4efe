/* info.c: `steptrace info`, a bundle's header, footer and counts (analyze/info.c). */
#include "analyze/info.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

static const char *const usage[] = {
	"steptrace info [<options>] FILE",
	"",
	"steptrace info: " CMD_INFO_HELP,
	NULL,
};

static int run(const struct replay *const *rps, int n, void *ctx, struct report *r)
{
	return info_run(rps[0], r);
}

int cmd_info(int argc, const char **argv)
{
	int format = OUT_TABLE;
	const struct option opts[] = {
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .format = &format, .ranks = RANKS_SPLIT, .run = run,
	};

	return analysis_main(&c, argc, argv);
}
