/* explain.c: `steptrace explain`, why the step takes as long as it does, and what if (analyze/explain.c). */
#include <stdlib.h>

#include "analyze/explain.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

static const char *const usage[] = {
	"steptrace explain [<options>] FILE",
	"steptrace explain [<options>] RUN.rank0.stb RUN.rank1.stb ...",
	"",
	"steptrace explain: " CMD_EXPLAIN_HELP,
	"",
	"Rules (--what-if, repeatable; all given are also applied together):",
	"  graph            the step as one CUDA graph: the host's work and calls take no time",
	"                   (its synchronisations still wait), launches their typical latency at most",
	"  no-sync          the host's synchronisations inside the loop removed",
	"  comm-overlap     collectives fully overlapped: nothing waits for them",
	"  no-contention    kernels beside a collective as long as the same kernels (name, grid) alone",
	"  comm-bw=K        collectives' bandwidth x K",
	"  host=K           the host's own work (between and inside its calls) x K",
	"  kernels:GLOB=K   kernels whose name, op or range path matches GLOB x K",
	"                   ('*gemm*', 'attn*', 'optimizer*'); kernels:<10us=K: those shorter than 10 us",
	"  ranks=N          a single-GPU run on N GPUs, data-parallel: its gradients all-reduced",
	"                   as --allreduce's table times them, in buckets (--bucket-mb) or after the backward",
	"                   (--naive: steptrace's own model's tensors one by one)",
	"  unrecorded       the recorder's own host time (format 1.8) taken out of the host's work",
	"                   where it was spent: the step unrecorded (the steps table's Unrecorded column)",
	"  precision=bf16   an FP32/TF32 step in BF16: products at the device's BF16/recorded rate ratio,",
	"                   the forward's and backward's memory-bound kernels with half their bytes",
	"  batch=xK         the batch K times larger: forward and backward kernels, and copies to the",
	"                   device, x K above a kernel's fixed cost; the optimizer as recorded",
	"  fuse=elementwise each chain of memory-bound kernels between two products one kernel",
	"  fuse=compile     torch.compile: fuse=elementwise, and the host's work between calls in the",
	"                   forward and backward gone (each call at its recorded time)",
	"  bucket-mb=M      a recorded data-parallel run's collectives merged into buckets of M MB",
	"  data=K           the host's data loading (its work before each copy to the device) x K",
	"                   (docs/whatif.md has each rule's model)",
	NULL,
};

struct ctx {
	struct explain_opts o;
	struct opt_list rules;
};

static int check(void *p)
{
	struct ctx *c = p;

	c->o.n_rules = c->rules.n;
	for (size_t i = 0; i < c->rules.n; i++) {
		struct graph_rule r;

		if (graph_rule_parse(&r, c->rules.v[i]) < 0)
			return -1;
		free((char *)r.pattern);
	}
	return 0;
}

static int run(const struct replay_ranks *runs, int n, void *ctx, struct report *r)
{
	struct ctx *c = ctx;

	return explain_run(&runs[0], &c->o, r, NULL);
}

int cmd_explain(int argc, const char **argv)
{
	struct ctx c = { .rules = { NULL, 0, 0 } };
	int format = OUT_TABLE;
	const struct option opts[] = {
		OPT_STRING_LIST(0, "what-if", &c.rules, "RULE",
				"re-time the step under RULE (repeatable; see the rules above)"),
		OPT_STRING(0, "allreduce", &c.o.allreduce, "FILE",
			   "ranks=N's all-reduce times: `steptrace bench allreduce --format csv` output, or a recorded "
			   "run's (`steptrace comm RUN.rank*.stb --section collectives --format csv`)"),
		OPT_NONNEGATIVE(0, "bucket-mb", &c.o.bucket_mb, "MB",
				"ranks=N's gradient buckets (default: the run's, else 25)"),
		OPT_BOOLEAN(0, "naive", &c.o.naive, "ranks=N all-reduces every gradient after the backward"),
		OPT_STRING(0, "contention", &c.o.contention, "FILE",
			   "ranks=N's contention and host time per collective call: the calibration table of a recorded "
			   "multi-rank run (`steptrace explain RUN.rank*.stb --section calibration --format csv`)"),
		OPT_POSITIVE('n', "top", &c.o.top, "critical-path rows (default 15)"),
		OPT_BOOLEAN(0, "include-warmup", &c.o.include_warmup, "explain the warm-up steps too"),
		OPT_BOOLEAN(0, "estimate-unrecorded", &c.o.estimate_unrecorded,
			    "the Unrecorded column from the recorder's own time alone, not calibrated on the unrecorded "
			    "steps an armed window measured before it"),
		OPT_FORMAT(&format),
		OPT_END(),
	};
	const struct analysis_cmd a = {
		.usage = usage, .options = opts, .bundles = 1, .format = &format,
		.ranks = RANKS_OWN, .run_ranks = run, .check = check, .ctx = &c,
	};

	c.rules.v = c.o.rules;
	c.rules.max = EXPLAIN_MAX_RULES;
	return analysis_main(&a, argc, argv);
}
