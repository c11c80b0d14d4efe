/* comm.c: `steptrace comm`, a multi-GPU run's collectives, overlap and skew (analyze/comm.c). */
#include "analyze/comm.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

static const char *const usage[] = {
	"steptrace comm [<options>] RUN.rank0.stb RUN.rank1.stb ...",
	"steptrace comm [<options>] FILE",
	"",
	"steptrace comm: " CMD_COMM_HELP,
	NULL,
};

static int run(const struct replay_ranks *runs, int n, void *ctx, struct report *r)
{
	return comm_run(&runs[0], ctx, r);
}

int cmd_comm(int argc, const char **argv)
{
	struct comm_opts o = { 0 };
	int format = OUT_TABLE;
	const struct option opts[] = {
		OPT_POSITIVE('n', "top", &o.top, "show the N collectives with the most time (default: all)"),
		OPT_BOOLEAN(0, "include-warmup", &o.include_warmup, "count warm-up steps and work outside steps"),
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .format = &format,
		.ranks = RANKS_OWN, .run_ranks = run, .ctx = &o, .section = &o.section,
	};

	return analysis_main(&c, argc, argv);
}
