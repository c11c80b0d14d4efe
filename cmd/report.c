/* report.c: `steptrace report`, one self-contained HTML page for a bundle or a pair (analyze/report.c). */
#include "analyze/report.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

static const char *const usage[] = {
	"steptrace report [<options>] FILE [-o report.html]",
	"steptrace report [<options>] A B [-o diff.html]",
	"steptrace report [<options>] RUN.rank0.stb RUN.rank1.stb ... [-o run.html]",
	"",
	"steptrace report: " CMD_REPORT_HELP,
	NULL,
};

static int run(const struct replay_ranks *runs, int n, void *ctx, struct report *r)
{
	return report_html_write(&runs[0], n == 2 ? &runs[1] : NULL, *(const char **)ctx);
}

int cmd_report(int argc, const char **argv)
{
	const char *output = NULL;
	const struct option opts[] = {
		OPT_STRING('o', "output", &output, "FILE",
			   "write the page here (default: the bundle's name with .html)"),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .bundles_max = 2, .ranks = RANKS_OWN,
		.run_ranks = run, .ctx = &output,
	};

	return analysis_main(&c, argc, argv);
}
