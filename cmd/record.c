/*
 * record.c: `steptrace record` (SPEC.md, "Recording"): warm-up and measured
 * steps of the training step under CUPTI, written to one bundle
 * (record/record.c); `record attention`, the attention sweep of `bench
 * attention` into one bundle.
 *
 * Exit status: 0 recorded; 1 error; 2 out of device memory; 129 bad usage
 * (a bad flag, value or configuration); 130 interrupted by SIGINT/SIGTERM
 * (record/record.h says what the bundle holds in each case).
 */
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/gpu.h"
#include "lib/error.h"
#include "model/attention_sweep.h"
#include "record/record.h"

static const char *const record_usage[] = {
	"steptrace record [--model NAME | --d-model N --layers N --heads N] [<options>] -o FILE.stb",
	"steptrace record attention [--d-head LIST] [--seq LIST] [--impl LIST] [<options>] -o FILE.stb",
	NULL
};

/* The output flags of both forms: the bundle, the peaks, the API calls recorded. */
#define OPT_RECORD_OUTPUT(o, api)                                                            \
	OPT_GROUP("Output"),                                                                 \
	OPT_STRING('o', "output", &(o)->output, "FILE", "the bundle to write (FILE.stb)"),   \
	OPT_BOOLEAN(0, "calibrate", &(o)->calibrate,                                         \
		    "measure peak FLOP/s and bandwidth before recording (default; "           \
		    "--no-calibrate takes datasheet figures)"),                               \
	OPT_CHOICE(0, "api", (api), capture_api_names,                                       \
		   "runtime and driver calls to record: all but queries such as "             \
		   "cudaGetDevice, which do nothing on the device (work, default), or all")

static const char *const attention_usage[] = {
	"steptrace record attention [--d-head LIST] [--seq LIST] [--batch LIST] [--heads LIST]\n"
	"                           [--precision LIST] [--impl naive,flash] [--no-causal] [<options>] -o FILE.stb",
	NULL
};

/*
 * `record attention`: the sweep of `bench attention` into one bundle, each
 * iteration of each configuration a step inside an NVTX range named after
 * the configuration.
 */
static int record_attention(int argc, const char **argv, char *command_line)
{
	struct attn_grid g = ATTN_GRID_INIT;
	struct attn_bench_opts a = { .warmup = 1, .steps = 1 };
	struct record_opts o = { .calibrate = true };
	struct attn_config *configs = NULL;
	int api = CAPTURE_API_WORK, status, n = 0;
	const struct option opts[] = {
		OPT_GROUP("What to run (the flags of `steptrace bench attention`)"),
		OPT_ATTN_GRID(&g),
		OPT_COUNT('w', "warmup", &a.warmup, "warm-up iterations per configuration, "
			    "recorded as warm-up steps (default 1)"),
		OPT_POSITIVE('n', "steps", &a.steps, "measured iterations per configuration, one step "
			    "each (default 1)"),
		OPT_U64(0, "seed", &a.seed, "seed of the random q, k, v and dout (default 0)"),
		OPT_RECORD_OUTPUT(&o, &api),
		OPT_END(),
	};

	status = gpu_parse(argc, argv, opts, attention_usage);
	if (status == GPU_GO && !o.output)
		status = gpu_usage_error(attention_usage, opts, "no output file: use -o FILE.stb");
	if (status == GPU_GO && ((n = attn_grid_configs(&g, &configs)) < 0 ||
				 attn_bench_check(configs, (size_t)n)))
		status = EXIT_USAGE;
	if (status == GPU_GO) {
		o.api = (enum capture_api)api;
		o.command_line = command_line;
		a.configs = configs;
		a.n_configs = (size_t)n;
		status = (int)record_attention_run(&o, &a);
	}
	free(configs);
	return status;
}

int cmd_record(int argc, const char **argv)
{
	struct gpu_model_args a = GPU_MODEL_ARGS_INIT;
	struct record_opts o = { .warmup = 1, .steps = 2, .calibrate = true };
	int api = CAPTURE_API_WORK, status;
	struct model_config c;
	const struct option opts[] = {
		OPT_GROUP("What to run (the flags of `steptrace bench`, one configuration)"),
		OPT_GPU_MODEL(&a),
		OPT_GPU_STEP(&a),
		OPT_GPU_ATTENTION(&a),
		OPT_COUNT('w', "warmup", &o.warmup, "warm-up steps, recorded and flagged (default 1)"),
		OPT_POSITIVE('n', "steps", &o.steps, "measured steps (default 2)"),
		OPT_U64(0, "seed", &a.seed, "seed of the weights and the batch (default 0)"),
		OPT_DOUBLE(0, "lr", &a.lr, "AdamW learning rate (default 1e-3)"),
		OPT_RECORD_OUTPUT(&o, &api),
		OPT_END(),
	};
	char *command_line = record_command_line(argc, argv);

	if (argc > 1 && !strcmp(argv[1], "attention")) {
		status = record_attention(argc - 1, argv + 1, command_line);
		free(command_line);
		return status;
	}
	status = gpu_parse(argc, argv, opts, record_usage);
	if (status == GPU_GO && !o.output)
		status = gpu_usage_error(record_usage, opts, "no output file: use -o FILE.stb");
	if (status == GPU_GO && gpu_model_config(&a, &c))
		status = EXIT_USAGE;
	if (status == GPU_GO) {
		o.api = (enum capture_api)api;
		o.command_line = command_line;
		status = (int)record_run(&o, &c);
	}
	free(command_line);
	return status;
}
