/*
 * step.c: `steptrace step`, one training step from given weights and batch
 * written to a safetensors file, for scripts/torch_check.py to compare with
 * PyTorch (model/step_file.c).
 */
#include "cmd/commands.h"
#include "cmd/gpu.h"
#include "model/model.h"
#include "model/step_file.h"

static const char *const step_usage[] = {
	"steptrace step [--model NAME | --d-model N --d-ff N --layers N --heads N] [<options>] -o OUT.safetensors",
	"",
	"steptrace step: " CMD_STEP_HELP,
	NULL,
};

int cmd_step(int argc, const char **argv)
{
	struct gpu_model_args a = GPU_MODEL_ARGS_INIT;
	struct step_file_opts o = { NULL };
	struct model_config c;
	int status;
	const struct option opts[] = {
		OPT_GROUP("model"),
		OPT_GPU_MODEL(&a),
		OPT_GROUP("step"),
		OPT_GPU_STEP(&a),
		OPT_GPU_ATTENTION(&a),
		OPT_GPU_KERNELS(&a),
		OPT_STRING(0, "weights", &o.weights, "FILE", "F32 weights under PyTorch's names (default: random from --seed)"),
		OPT_STRING(0, "batch-file", &o.batch, "FILE", "I32/I64 \"inputs\" and \"targets\" of shape (batch, ctx) (default: random from --seed)"),
		OPT_U64(0, "seed", &a.seed, "seed of random weights and batch (default 0)"),
		OPT_DOUBLE(0, "lr", &a.lr, "AdamW learning rate (default 1e-3)"),
		OPT_DOUBLE(0, "weight-decay", &a.weight_decay, "AdamW weight decay (default 0.01)"),
		OPT_STRING('o', "output", &o.output, "FILE", "safetensors file to write"),
		OPT_END(),
	};

	status = gpu_parse(argc, argv, opts, step_usage);
	if (status != GPU_GO)
		return status;
	if (!o.output)
		return gpu_usage_error(step_usage, "missing -o OUT.safetensors");
	if (gpu_model_config(&a, &c) || !model_gpu_available())
		return 1;
	return step_file_run(&o, &c) ? 1 : 0;
}
