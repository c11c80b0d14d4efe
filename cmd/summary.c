/* summary.c: `steptrace summary`, Nsight's cuda_gpu_kern_sum from a bundle (analyze/summary.c). */
#include "analyze/summary.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

static const char *const usage[] = {
	"steptrace summary [<options>] FILE",
	"",
	"steptrace summary: " CMD_SUMMARY_HELP,
	NULL,
};

static int run(const struct replay *const *rps, int n, void *ctx, struct report *r)
{
	return summary_run(rps[0], ctx, r);
}

int cmd_summary(int argc, const char **argv)
{
	struct summary_opts o = { .by = BY_KERNEL };
	int format = OUT_TABLE;
	bool per_rank = false;
	const struct option opts[] = {
		OPT_STRING(0, "range", &o.range, "PATH",
			   "keep GPU work under this NVTX path ('forward', 'layer.*/attn/softmax'; default: all)"),
		OPT_CHOICE(0, "by", &o.by, summary_by_names,
			   "group by kernel (name), op (kind, over layers) or category"),
		OPT_POSITIVE('n', "top", &o.top, "show the N largest rows (default: all)"),
		OPT_BOOLEAN(0, "per-step", &o.per_step, "divide totals by the number of measured steps"),
		OPT_BOOLEAN(0, "all", &o.all, "include memcpy and memset rows"),
		OPT_BOOLEAN(0, "include-warmup", &o.include_warmup, "count warm-up steps and work outside steps"),
		OPT_FULL_NAMES(&o.full_names),
		OPT_PER_RANK(&per_rank),
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .range = &o.range,
		.format = &format, .per_rank = &per_rank, .full_names = &o.full_names, .run = run, .ctx = &o,
	};

	return analysis_main(&c, argc, argv);
}
