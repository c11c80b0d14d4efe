/* report.c: `steptrace report`, one self-contained HTML page for a bundle or a pair (report/report.c). */
#include "cmd/analysis.h"
#include "cmd/commands.h"
#include "report/report.h"

static const char *const usage[] = {
	"steptrace report [<options>] FILE [-o report.html]",
	"steptrace report [<options>] A B [-o diff.html]",
	"steptrace report [<options>] RUN.rank0.stb RUN.rank1.stb ... [-o run.html]",
	"",
	"steptrace report: " CMD_REPORT_HELP,
	NULL,
};

struct report_cmd {
	const char *output;
	uint64_t max_size;
};

static int run(const struct replay_ranks *runs, int n, void *ctx, struct report *r)
{
	const struct report_cmd *o = ctx;

	return report_html_write(&runs[0], n == 2 ? &runs[1] : NULL, o->output, o->max_size);
}

int cmd_report(int argc, const char **argv)
{
	struct report_cmd o = { .max_size = OUTPUT_MAX_SIZE };
	const struct option opts[] = {
		OPT_STRING('o', "output", &o.output, "FILE",
			   "write the page here (default: the bundle's name with .html)"),
		OPT_MAX_SIZE(&o.max_size, "the page"),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .bundles_max = 2, .ranks = RANKS_OWN,
		.run_ranks = run, .ctx = &o,
	};

	return analysis_main(&c, argc, argv);
}
