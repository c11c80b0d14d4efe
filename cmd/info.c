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
	const int *format = ctx;
	/* the text table wraps long values (the command line, the peaks' note); the others keep them whole */
	const struct info_opts o = { *format == OUT_TABLE ? INFO_WRAP : 0 };

	return info_run(rps[0], &o, r);
}

int cmd_info(int argc, const char **argv)
{
	int format = OUT_TABLE;
	const struct option opts[] = {
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .format = &format, .ranks = RANKS_SPLIT,
		.run = run, .ctx = &format,
	};

	return analysis_main(&c, argc, argv);
}
