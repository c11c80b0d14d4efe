/* diff.c: `steptrace diff`, two bundles aligned by op, range path, category or kernel (analyze/diff.c). */
#include "analyze/diff.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

static const char *const usage[] = {
	"steptrace diff [<options>] BASELINE OTHER",
	"",
	"steptrace diff: " CMD_DIFF_HELP,
	NULL,
};

static int run(const struct replay *const *rps, int n, void *ctx, struct report *r)
{
	return diff_run(rps[0], rps[1], ctx, r);
}

int cmd_diff(int argc, const char **argv)
{
	struct diff_options o = { .by = -1, .warn = true };
	int format = OUT_TABLE;
	bool per_rank = false;
	const struct option opts[] = {
		OPT_CHOICE(0, "by", &o.by, diff_by_names,
			   "align by op (kind per phase; the default, or phase when the op kinds differ), range (NVTX path), category, kernel or phase (phase and kernel category)"),
		OPT_STRING(0, "range", &o.range, "PATH", "keep GPU work under this NVTX path on both sides (default: all)"),
		OPT_POSITIVE('n', "top", &o.top, "show the N rows that changed most (default: all)"),
		OPT_BOOLEAN(0, "include-warmup", &o.include_warmup, "count warm-up steps and work outside steps"),
		OPT_FULL_NAMES(&o.full_names),
		OPT_PER_RANK(&per_rank),
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 2, .range = &o.range,
		.format = &format, .per_rank = &per_rank, .full_names = &o.full_names, .run = run, .ctx = &o,
	};

	return analysis_main(&c, argc, argv);
}
