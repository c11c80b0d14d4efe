/*
 * step_file.h: one training step from files to a file (`steptrace step`),
 * so that scripts/torch_check.py can compare it with PyTorch: weights and
 * batch from safetensors files (or random from the seed), one step, and a
 * safetensors file with the loss ("loss"), the gradients ("grad.<name>")
 * and the updated weights under PyTorch's state-dict names.
 */
#ifndef STEPTRACE_MODEL_STEP_FILE_H
#define STEPTRACE_MODEL_STEP_FILE_H

#include "model/config.h"

struct step_file_opts {
	const char *weights;   /* F32 weights under PyTorch's names; NULL: random from c->seed */
	const char *batch;     /* I32/I64 "inputs" and "targets" (batch, ctx); NULL: random */
	const char *output;    /* the safetensors file to write */
};

/*
 * Runs one step of configuration c and writes o->output; a line on stderr
 * says how it went. -1 with an error line.
 */
int step_file_run(const struct step_file_opts *o, const struct model_config *c);

#endif
