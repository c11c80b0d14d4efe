/*
 * record.c: `steptrace record`, in two forms (SPEC.md, "Recording"):
 *
 *   steptrace record [model flags] -o FILE.stb
 *       warm-up and measured steps of the built-in training step under
 *       CUPTI, written to one bundle (record/record.c);
 *   steptrace record [options] -o FILE.stb -- COMMAND [ARGS...]
 *       any CUDA program, with the recorder injected into every process of
 *       its tree (record/launch.c, record/inject.c; issue 15).
 *
 * Exit status of the built-in form: 0 recorded; 1 error; 2 out of device
 * memory; 129 bad usage (a bad flag, value or configuration); 130
 * interrupted by SIGINT/SIGTERM (record/record.h says what the bundle holds
 * in each case). With a command: the command's exit status, or its signal
 * (129 for bad usage, 1 when the command could not be started).
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/gpu.h"
#include "lib/error.h"
#include "record/launch.h"
#include "record/record.h"

static const char *const record_usage[] = {
	"steptrace record [--model NAME | --d-model N --layers N --heads N] [<options>] -o FILE.stb",
	"steptrace record [--step-range NAME [--warmup N]] [<options>] -o FILE.stb -- COMMAND [ARGS...]",
	NULL
};

/* Flags of the built-in step only, and of a recorded command only. */
static const char *const builtin_only[] = {
	"--model", "--d-model", "--d-ff", "--layers", "--heads", "--vocab", "--batch", "--ctx",
	"--mode", "--attention", "--steps", "-n", "--seed", "--lr", NULL,
};
static const char *const command_only[] = { "--step-range", "--torch-alloc", NULL };

/* The first of argv[1..argc) that is one of `flags` ("--x", "--x=V", "-n", "-nV"), or NULL. */
static const char *flag_given(int argc, const char **argv, const char *const *flags)
{
	for (int i = 1; i < argc; i++)
		for (const char *const *f = flags; *f; f++) {
			size_t n = strlen(*f);

			if (!strncmp(argv[i], *f, n) &&
			    (argv[i][n] == '\0' || (n > 2 && argv[i][n] == '=') || (n == 2 && argv[i][1] != '-')))
				return *f;
		}
	return NULL;
}

/* The index of the first "--" in argv, 0 when there is none. */
static int command_start(int argc, const char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--"))
			return i;
	return 0;
}

static int record_command(int argc, const char **argv, int dd, const struct option *opts,
			  struct launch_opts *l, const char *command_line)
{
	const char *bad = flag_given(dd, argv, builtin_only);
	int status;

	if (bad)
		return gpu_usage_error(record_usage, opts,
				       "option '%s' is for the built-in step, not for -- COMMAND", bad);
	if (dd + 1 >= argc)
		return gpu_usage_error(record_usage, opts, "no command after '--'");
	if (!l->output)
		return gpu_usage_error(record_usage, opts, "no output file: use -o FILE.stb");
	if (l->warmup == INT_MIN)
		l->warmup = 0;
	else if (l->warmup < 0)
		return gpu_usage_error(record_usage, opts, "--warmup must be 0 or more, not %d", l->warmup);
	else if (!l->step_range)
		return gpu_usage_error(record_usage, opts, "--warmup needs --step-range");
	if (l->step_range && !*l->step_range)
		return gpu_usage_error(record_usage, opts, "--step-range needs a range name");
	/* datasheet peaks unless asked: calibrating takes the GPU for a second or two */
	l->calibrate = flag_given(dd, argv, (const char *const[]){ "--calibrate", NULL }) != NULL;
	l->command_line = command_line;
	l->argv = &argv[dd + 1];
	status = launch_run(l);
	return status < 0 ? 1 : status;
}

int cmd_record(int argc, const char **argv)
{
	struct gpu_model_args a = GPU_MODEL_ARGS_INIT;
	struct record_opts o = { .warmup = INT_MIN, .steps = 2, .calibrate = true };
	struct launch_opts l = { 0 };
	int api = CAPTURE_API_WORK, status, dd = command_start(argc, argv);
	const char *step_range = NULL;
	struct model_config c;
	a.precision = -1;
	const struct option opts[] = {
		OPT_GROUP("What to run (the flags of `steptrace bench`, one configuration)"),
		OPT_GPU_MODEL(&a),
		OPT_GPU_STEP(&a),
		OPT_GPU_ATTENTION(&a),
		OPT_INTEGER('w', "warmup", &o.warmup,
			    "warm-up steps, recorded and flagged (default 1; with -- COMMAND: the "
			    "first N step ranges, default 0)"),
		OPT_INTEGER('n', "steps", &o.steps, "measured steps (default 2)"),
		OPT_U64(0, "seed", &a.seed, "seed of the weights and the batch (default 0)"),
		OPT_DOUBLE(0, "lr", &a.lr, "AdamW learning rate (default 1e-3)"),
		OPT_GROUP("A program of your own (-- COMMAND [ARGS...])"),
		OPT_STRING(0, "step-range", &step_range, "NAME",
			   "each NVTX range of this name is a step (default: the whole run is one)"),
		OPT_CHOICE(0, "torch-alloc", &l.torch_alloc, launch_torch_alloc_names,
			   "async sets PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, so every "
			   "tensor's allocation and free is recorded"),
		OPT_GROUP("Output"),
		OPT_STRING('o', "output", &o.output, "FILE",
			   "the bundle to write (FILE.stb; with several processes FILE.<rank or pid>.stb)"),
		OPT_BOOLEAN(0, "calibrate", &o.calibrate,
			    "measure peak FLOP/s and bandwidth before recording (default for the "
			    "built-in step; --no-calibrate takes datasheet figures, the default with -- COMMAND)"),
		OPT_CHOICE(0, "api", &api, capture_api_names,
			   "runtime and driver calls to record: all but queries such as "
			   "cudaGetDevice, which do nothing on the device (work, default), all, or "
			   "launches (launches, copies, memsets, allocations: the cheapest)"),
		OPT_END(),
	};
	char *command_line = record_command_line(argc, argv);

	status = gpu_parse(dd ? dd : argc, argv, opts, record_usage);
	if (status == GPU_GO && dd) {
		l.output = o.output;
		l.step_range = step_range;
		l.warmup = o.warmup;
		l.api = (enum capture_api)api;
		l.precision = a.precision >= 0 ? st_name(st_precision_names, a.precision) : NULL;
		status = record_command(argc, argv, dd, opts, &l, command_line);
		free(command_line);
		return status;
	}
	if (status == GPU_GO && flag_given(argc, argv, command_only))
		status = gpu_usage_error(record_usage, opts, "option '%s' needs -- COMMAND",
					 flag_given(argc, argv, command_only));
	if (status == GPU_GO && !o.output)
		status = gpu_usage_error(record_usage, opts, "no output file: use -o FILE.stb");
	if (o.warmup == INT_MIN)
		o.warmup = 1;
	if (a.precision < 0)
		a.precision = ST_FP32;
	if (status == GPU_GO && (gpu_model_config(&a, &c) || gpu_check_steps(o.warmup, o.steps)))
		status = EXIT_USAGE;
	if (status == GPU_GO) {
		o.api = (enum capture_api)api;
		o.command_line = command_line;
		status = (int)record_run(&o, &c);
	}
	free(command_line);
	return status;
}
