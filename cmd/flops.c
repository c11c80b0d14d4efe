/*
 * flops.c: `steptrace flops`, FLOPs and bytes against GPU time per op, the
 * roofline (analyze/flops.c), and --svg its chart (render/roofline_svg.c).
 */
#include <stdio.h>
#include <string.h>

#include "analyze/flops.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"
#include "lib/output.h"
#include "render/roofline_svg.h"

struct flops_cmd_opts {
	struct flops_options flops;
	int phase;                     /* --phase, enum st_phase (index into st_phase_names); -1 all */
	int top;                       /* rows shown, 0 = all */
	const char *svg;               /* write the roofline chart here, NULL = none */
	uint64_t max_size;             /* refuse a chart larger than this (--max-size); 0: no limit */
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

static int write_chart(void *ctx, FILE *out)
{
	return flops_svg(out, ctx, 1000, 700);
}

/*
 * flops_compute, flops_report of the top rows, and with --svg the chart
 * written there through lib/output.h (its path is opened first, so a bad
 * one fails before any work), named on stderr once written.
 */
static int run(const struct replay *const *rps, int n, void *ctx, struct report *r)
{
	const struct flops_cmd_opts *o = ctx;
	const struct replay *rp = rps[0];
	const struct flops_options *fo = &o->flops;
	struct flops_result res;
	struct output svg = { 0 };
	char extra[300];
	int rc = -1;

	/* the chart's file first: a bad path prints no table */
	if (o->svg && output_open(&svg, o->svg, (const char *[]){ rp->path, NULL }) < 0)
		return -1;
	if (flops_compute(rp, fo, &res) < 0)
		goto out;
	/* by kind too: the same columns either way, and the dtypes beside the peak they do not decide */
	res.dtypes = true;
	snprintf(extra, sizeof(extra), " by %s%s%s%s%s%s", fo->by == FLOPS_BY_OP ? "op" : "op kind",
		 fo->range ? " under '" : "", fo->range ? fo->range : "", fo->range ? "'" : "",
		 fo->phase ? ", phase " : "", fo->phase ? fo->phase : "");
	flops_report(r, &res, o->top, extra);
	if (!o->svg) {
		rc = 0;
	} else {
		rc = output_write_sized(&svg, o->max_size, "SVG",
					"--by kind, --range PATH or --phase NAME draw fewer points", write_chart, &res, NULL);
		if (rc == 0)
			fprintf(stderr, "wrote '%s': the roofline chart (SVG)\n", o->svg);
	}
	flops_result_release(&res);
out:
	if (svg.f)
		output_discard(&svg);
	return rc;
}

int cmd_flops(int argc, const char **argv)
{
	struct flops_cmd_opts o = { .flops = { .by = FLOPS_BY_KIND }, .phase = -1, .max_size = OUTPUT_MAX_SIZE };
	int format = OUT_TABLE;
	bool per_rank = false;
	const struct option opts[] = {
		OPT_CHOICE(0, "by", &o.flops.by, flops_by_names,
			   "one row per op kind summed over layers (kind) or per op (op)"),
		OPT_STRING(0, "range", &o.flops.range, "PATH", "keep kernels under this NVTX path ('forward', 'layer.*/attn'; default: all)"),
		OPT_CHOICE(0, "phase", &o.phase, st_phase_names, "keep ops of this phase (default: every phase)"),
		OPT_POSITIVE('n', "top", &o.top, "show the N rows with the most GPU time (default: all)"),
		OPT_BOOLEAN(0, "include-warmup", &o.flops.include_warmup, "count warm-up steps and work outside steps"),
		OPT_STRING(0, "svg", &o.svg, "FILE", "write the roofline chart to FILE ('-': the chart alone, on stdout)"),
		OPT_MAX_SIZE(&o.max_size, "the chart"),
		OPT_PER_RANK(&per_rank),
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .range = &o.flops.range,
		.format = &format, .per_rank = &per_rank, .output = &o.svg,
		.output_option = "--svg", .check = check, .run = run, .ctx = &o,
	};

	return analysis_main(&c, argc, argv);
}
