/* flops.c: `steptrace flops`, FLOPs and bytes against GPU time per op, the roofline (analyze/flops.c). */
#include <string.h>

#include "analyze/flops.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

struct flops_cmd_opts {
	struct flops_options flops;
	int phase;                     /* --phase, enum st_phase (index into st_phase_names); -1 all */
};

static const char *const usage[] = {
	"steptrace flops [<options>] FILE",
	"",
	"steptrace flops: " CMD_FLOPS_HELP,
	NULL,
};

/* --phase by name, as flops_options holds it. */
static int check(void *ctx)
{
	struct flops_cmd_opts *o = ctx;

	if (o->phase >= 0)
		o->flops.phase = st_phase_names[o->phase];
	return 0;
}

static int run(const struct replay *const *rps, int n, void *ctx, struct report *r)
{
	const struct flops_cmd_opts *o = ctx;

	return flops_run(rps[0], &o->flops, r);
}

int cmd_flops(int argc, const char **argv)
{
	struct flops_cmd_opts o = { .flops = { .by = FLOPS_BY_KIND, .max_size = OUTPUT_MAX_SIZE }, .phase = -1 };
	int format = OUT_TABLE;
	bool per_rank = false;
	const struct option opts[] = {
		OPT_CHOICE(0, "by", &o.flops.by, flops_by_names,
			   "one row per op kind summed over layers (kind) or per op (op)"),
		OPT_STRING(0, "range", &o.flops.range, "PATH", "keep kernels under this NVTX path ('forward', 'layer.*/attn'; default: all)"),
		OPT_CHOICE(0, "phase", &o.phase, st_phase_names, "keep ops of this phase (default: every phase)"),
		OPT_POSITIVE('n', "top", &o.flops.top, "show the N rows with the most GPU time (default: all)"),
		OPT_BOOLEAN(0, "include-warmup", &o.flops.include_warmup, "count warm-up steps and work outside steps"),
		OPT_STRING(0, "svg", &o.flops.svg, "FILE", "write the roofline chart to FILE ('-': the chart alone, on stdout)"),
		OPT_MAX_SIZE(&o.flops.max_size, "the chart"),
		OPT_PER_RANK(&per_rank),
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .range = &o.flops.range,
		.format = &format, .per_rank = &per_rank, .output = &o.flops.svg,
		.output_option = "--svg", .check = check, .run = run, .ctx = &o,
	};

	return analysis_main(&c, argc, argv);
}
