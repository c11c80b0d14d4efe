/*
 * record.c: `steptrace record`, in three forms (SPEC.md, "Recording"):
 *
 *   steptrace record [model flags] -o FILE.stb
 *       warm-up and measured steps of the built-in training step under
 *       CUPTI, written to one bundle (record/record.c);
 *   steptrace record attention [grid flags] -o FILE.stb
 *       the attention sweep of `bench attention` into one bundle, one step
 *       per iteration of each configuration (record/record.c);
 *   steptrace record [options] -o FILE.stb -- COMMAND [ARGS...]
 *       any CUDA program, with the recorder injected into every process of
 *       its tree (record/launch.c, record/inject.c).
 *
 * Exit status of the built-in forms: 0 recorded; 1 error; 2 out of device
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
#include "model/attention_sweep.h"
#include "model/comm.h"
#include "model/ranks.h"
#include "record/launch.h"
#include "record/record.h"

static const char *const record_usage[] = {
	"steptrace record [--model NAME | --d-model N --layers N --heads N] [<options>] -o FILE.stb",
	"steptrace record attention [--d-head LIST] [--seq LIST] [--impl LIST] [<options>] -o FILE.stb",
	"steptrace record [--step-range NAME [--warmup N]] [--armed | --every K [--window N]] [<options>] -o FILE.stb -- COMMAND [ARGS...]",
	"steptrace record --ddp MODE [--nproc N] [<options>] -o FILE.stb   (FILE.rankN.stb per rank)",
	"",
	"steptrace record: " CMD_RECORD_HELP,
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
		status = gpu_usage_error(attention_usage, "no output file: use -o FILE.stb");
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

/* What each rank of a data-parallel recording gets. */
struct record_job {
	const struct record_opts *o;
	const struct model_config *c;
};

/* One rank: its own bundle, FILE.rankR.stb. */
static int record_rank(const struct rank_info *ri, struct comm *comm, void *ctx)
{
	const struct record_job *j = ctx;
	struct record_opts o = *j->o;
	char path[4096];

	if (rank_output_path(o.output, ri->rank, ri->size, path, sizeof(path)))
		return 1;
	o.output = path;
	o.comm = comm;
	o.rank = ri;
	return (int)record_run(&o, j->c);
}

/* Flags of the built-in step only, and of a recorded command only. */
static const char *const builtin_only[] = {
	"--model", "--d-model", "--d-ff", "--layers", "--heads", "--vocab", "--batch", "--ctx",
	"--mode", "--attention", "--kernels", "--steps", "-n", "--seed", "--lr", "--ddp", "--bucket-mb",
	"--nproc", "--rendezvous", "--timeout", NULL,
};
static const char *const command_only[] = { "--step-range", "--torch", "--torch-alloc", "--cupti-sync", "--armed",
					    "--modules-every", "--every", "--window", NULL };

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

static int record_command(int argc, const char **argv, int dd, struct launch_opts *l,
			  const char *command_line)
{
	const char *bad = flag_given(dd, argv, builtin_only);
	int status;

	if (bad)
		return gpu_usage_error(record_usage,
				       "option '%s' is for the built-in step, not for -- COMMAND", bad);
	if (dd + 1 >= argc)
		return gpu_usage_error(record_usage, "no command after '--'");
	if (!l->output)
		return gpu_usage_error(record_usage, "no output file: use -o FILE.stb");
	if (l->warmup == INT_MIN)
		l->warmup = -1;   /* the step rule's default */
	if (l->step_range && !*l->step_range)
		return gpu_usage_error(record_usage, "--step-range needs a range name");
	if (l->window > 0 && !l->every)
		return gpu_usage_error(record_usage, "--window is the steps of each --every window: give --every K");
	if (l->every)
		l->armed = true;
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
	struct gpu_ranks_args ranks = GPU_RANKS_ARGS_INIT;
	struct record_opts o = { .warmup = INT_MIN, .steps = 2, .calibrate = true };
	struct launch_opts l = { .torch = LAUNCH_TORCH_AUTO, .torch_alloc = -1 };
	int api = CAPTURE_API_WORK, status, dd = command_start(argc, argv);
	const char *step_range = NULL;
	struct model_config c;
	a.precision = -1;
	const struct option opts[] = {
		OPT_GROUP("What to run (the flags of `steptrace bench`, one configuration)"),
		OPT_GPU_MODEL(&a),
		OPT_GPU_STEP(&a),
		OPT_GPU_ATTENTION(&a),
		OPT_GPU_KERNELS(&a),
		OPT_COUNT('w', "warmup", &o.warmup,
			  "warm-up steps, recorded and flagged (default 1; with -- COMMAND: the "
			  "first N steps, default 1 for PyTorch's optimizer steps, else 0)"),
		OPT_POSITIVE('n', "steps", &o.steps, "measured steps (default 2)"),
		OPT_U64(0, "seed", &a.seed, "seed of the weights and the batch (default 0)"),
		OPT_DOUBLE(0, "lr", &a.lr, "AdamW learning rate (default 1e-3)"),
		OPT_GPU_DDP(&a),
		OPT_GROUP("A program of your own (-- COMMAND [ARGS...])"),
		OPT_STRING(0, "step-range", &step_range, "NAME",
			   "each NVTX range of this name is a step (default: PyTorch's optimizer steps, "
			   "cudaProfilerStart/Stop ranges, else the whole run)"),
		OPT_CHOICE(0, "torch", &l.torch, launch_torch_names,
			   "a Python program that imports torch: auto (default) annotates steps, phases, "
			   "modules forward and backward and memory categories; ops adds every aten op "
			   "with its shapes (FLOPs); off records it as any CUDA program"),
		OPT_CHOICE(0, "torch-alloc", &l.torch_alloc, launch_torch_alloc_names,
			   "async sets PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync, so every "
			   "tensor's allocation and free is recorded, with its category under --torch "
			   "auto (it costs the step time); default keeps PyTorch's caching allocator"),
		OPT_BOOLEAN(0, "cupti-sync", &l.cupti_sync,
			    "synchronisation records from CUPTI's own activity (with stream ids; adds "
			    "about a fifth to a PyTorch step) instead of from the synchronising calls"),
		OPT_POSITIVE(0, "modules-every", &l.modules_every,
			     "--torch auto: module ranges on the warm-up steps, the first measured one and "
			     "every Nth after it, the other steps phases only (default 10; 1: every step)"),
		OPT_BOOLEAN(0, "armed", &l.armed,
			    "record nothing until `steptrace trigger` asks for the next N steps (into "
			    "FILE.T.rankR.stb per trigger T; the program runs as if unrecorded until then)"),
		OPT_POSITIVE(0, "every", &l.every,
			     "armed, and records --window steps from step N, from 2N, ... by itself "
			     "into FILE.sN.rankR.stb, FILE.s2N.rankR.stb, ... (left on: the cost of a "
			     "window's steps in N)"),
		OPT_POSITIVE(0, "window", &l.window, "the steps of each --every window (default 3)"),
		OPT_GROUP("Output"),
		OPT_STRING('o', "output", &o.output, "FILE",
			   "the bundle to write (FILE.stb; with several processes or --ddp ranks FILE.<rank or pid>.stb)"),
		OPT_BOOLEAN(0, "calibrate", &o.calibrate,
			    "measure peak FLOP/s and bandwidth before recording (default for the "
			    "built-in step; --no-calibrate takes datasheet figures, the default with -- COMMAND)"),
		OPT_CHOICE(0, "api", &api, capture_api_names,
			   "runtime and driver calls to record: all but queries such as "
			   "cudaGetDevice, which do nothing on the device (work, default), all, or "
			   "launches (launches, copies, memsets, allocations: the cheapest)"),
		OPT_GPU_RANKS(&ranks),
		OPT_END(),
	};
	char *command_line = record_command_line(argc, argv);

	if (!dd && argc > 1 && !strcmp(argv[1], "attention")) {
		status = record_attention(argc - 1, argv + 1, command_line);
		free(command_line);
		return status;
	}
	status = gpu_parse(dd ? dd : argc, argv, opts, record_usage);
	if (status == GPU_GO && dd) {
		l.output = o.output;
		l.step_range = step_range;
		l.warmup = o.warmup;
		l.api = (enum capture_api)api;
		l.precision = a.precision >= 0 ? st_name(st_precision_names, a.precision) : NULL;
		status = record_command(argc, argv, dd, &l, command_line);
		free(command_line);
		return status;
	}
	if (status == GPU_GO && flag_given(argc, argv, command_only))
		status = gpu_usage_error(record_usage, "option '%s' needs -- COMMAND",
					 flag_given(argc, argv, command_only));
	if (status == GPU_GO && !o.output)
		status = gpu_usage_error(record_usage, "no output file: use -o FILE.stb");
	if (o.warmup == INT_MIN)
		o.warmup = 1;
	if (a.precision < 0)
		a.precision = ST_FP32;
	if (status == GPU_GO && (gpu_model_config(&a, &c) || gpu_ranks_check(&ranks)))
		status = EXIT_USAGE;
	if (status == GPU_GO && ranks.nproc > 1 && c.ddp == ST_DDP_NONE)
		status = gpu_usage_error(record_usage, "--nproc %d records a data-parallel run: "
					 "give --ddp naive, flat, overlap or bucket", ranks.nproc);
	if (status == GPU_GO) {
		o.api = (enum capture_api)api;
		o.command_line = command_line;
	}
	if (status == GPU_GO && c.ddp != ST_DDP_NONE) {
		struct record_job job = { &o, &c };

		ranks.nccl_ctas = c.nccl_ctas;
		/* NCCL has NVTX ranges of its own: injection first, for every rank */
		status = capture_nvtx_setup() ? 1 : gpu_ranks_run(&ranks, record_rank, &job);
	} else if (status == GPU_GO) {
		status = (int)record_run(&o, &c);
	}
	free(command_line);
	return status;
}
