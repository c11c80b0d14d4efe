/*
 * bench.c: `steptrace bench`, the seeds' end-to-end benchmark without
 * CUPTI over a sweep of sizes, context lengths, precisions and modes
 * (model/bench.c); `steptrace bench attention`, the seeds' attention
 * benchmark over a grid of head sizes, sequence lengths, batches, heads,
 * precisions and implementations (model/attention_bench.c).
 */
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/gpu.h"
#include "lib/error.h"
#include "lib/table.h"
#include "model/attention_bench.h"
#include "model/bench.h"
#include "model/model.h"

static const char *const bench_usage[] = {
	"steptrace bench [--model LIST] [--ctx LIST] [--precision LIST] [--mode LIST]\n"
	"                [--kernels plain,fused] [<options>]",
	"steptrace bench attention [--d-head LIST] [--seq LIST] [--impl LIST] [<options>]",
	NULL,
};

static const char *const attention_usage[] = {
	"steptrace bench attention [--d-head LIST] [--seq LIST] [--batch LIST] [--heads LIST]\n"
	"                          [--precision LIST] [--impl naive,flash] [--no-causal] [<options>]",
	NULL,
};

static int bench_attention(int argc, const char **argv)
{
	struct attn_grid g = ATTN_GRID_INIT;
	struct attn_bench_opts o = { .warmup = 3, .steps = 10 };
	struct attn_bench_totals totals;
	struct attn_config *configs;
	struct report *rep;
	int fmt = OUT_TABLE, n, status;
	const struct option opts[] = {
		OPT_GROUP("grid (comma-separated lists; the default is the seeds' grid)"),
		OPT_ATTN_GRID(&g),
		OPT_GROUP("measurement"),
		OPT_COUNT('w', "warmup", &o.warmup, "warm-up iterations, not measured (default 3)"),
		OPT_POSITIVE('n', "steps", &o.steps, "measured iterations (default 10)"),
		OPT_U64(0, "seed", &o.seed, "seed of the random q, k, v and dout (default 0)"),
		OPT_FORMAT(&fmt),
		OPT_END(),
	};

	status = gpu_parse(argc, argv, opts, attention_usage);
	if (status != GPU_GO)
		return status;
	n = attn_grid_configs(&g, &configs);
	if (n < 0)
		return EXIT_USAGE;
	if (attn_bench_check(configs, (size_t)n)) {
		free(configs);
		return EXIT_USAGE;
	}
	if (!model_gpu_available()) {
		free(configs);
		return 1;
	}
	o.configs = configs;
	o.n_configs = (size_t)n;
	rep = report_new();
	status = attn_bench_run(&o, rep, &totals);
	if (report_print(rep, (enum out_format)fmt, stdout))
		status = -1;
	status = status || totals.errors ? 1 : 0;
	report_free(rep);
	free(configs);
	return status;
}

int cmd_bench(int argc, const char **argv)
{
	struct gpu_model_args a = GPU_MODEL_ARGS_INIT;
	struct gpu_sweep sweep = { 0 };
	struct bench_opts o = { .warmup = 5, .steps = 10 };
	struct model_config *configs;
	struct report *rep;
	int fmt = OUT_TABLE, n, status;
	const struct option opts[] = {
		OPT_GROUP("sweep (comma-separated lists)"),
		OPT_STRING(0, "model", &sweep.models, "LIST", "small, medium, large, xl, 2.7B, custom (default small)"),
		OPT_STRING(0, "ctx", &sweep.ctxs, "LIST", "context lengths (default 128)"),
		OPT_STRING(0, "precision", &sweep.precisions, "LIST", "fp32, tf32, bf16 (default fp32)"),
		OPT_STRING(0, "mode", &sweep.modes, "LIST", "forward, fwdbwd, train (default train)"),
		OPT_STRING(0, "kernels", &sweep.kernels, "LIST",
			   "plain, fused (default plain; both: side by side with the speed-up)"),
		OPT_GPU_ATTENTION(&a),
		OPT_GROUP("sizes (custom model, or overrides of a preset)"),
		OPT_MODEL_DIMS(&a.dims),
		OPT_GROUP("measurement"),
		OPT_COUNT('w', "warmup", &o.warmup, "warm-up steps, not measured (default 5)"),
		OPT_POSITIVE('n', "steps", &o.steps, "measured steps (default 10)"),
		OPT_U64(0, "seed", &a.seed, "seed of the random weights and batch (default 0)"),
		OPT_FORMAT(&fmt),
		OPT_END(),
	};

	if (argc > 1 && !strcmp(argv[1], "attention"))
		return bench_attention(argc - 1, argv + 1);
	status = gpu_parse(argc, argv, opts, bench_usage);
	if (status != GPU_GO)
		return status;
	n = gpu_sweep_configs(&sweep, &a, &configs);
	if (n < 0)
		return 1;
	if (!model_gpu_available()) {
		free(configs);
		return 1;
	}
	o.configs = configs;
	o.n_configs = (size_t)n;
	rep = report_new();
	status = bench_run(&o, rep) || report_print(rep, (enum out_format)fmt, stdout) ? 1 : 0;
	report_free(rep);
	free(configs);
	return status;
}
