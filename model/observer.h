/*
 * observer.h: how the recorder (record/) sees the training step without the
 * model knowing about CUPTI or bundles.
 *
 * The model calls these hooks when one is attached (model_set_observer); with
 * none attached every hook site is a single NULL test, so the step pays
 * nothing. All hooks run on the host thread that drives the step, in program
 * order. The observer takes its own timestamps (CUPTI's clock).
 *
 * Numbering is trace/types.h's, shared with the bundle schema:
 * categories are enum st_mem_category values, dtypes enum st_dtype values.
 */
#ifndef STEPTRACE_MODEL_OBSERVER_H
#define STEPTRACE_MODEL_OBSERVER_H

#include <stdbool.h>
#include <stdint.h>

#define MODEL_OP_MAX_INPUTS 8
#define MODEL_OP_MAX_OUTPUTS 4

/* An op: every kernel launch and every allocation of the step belongs to one. */
struct model_op {
	uint32_t id;             /* >= 1, dense */
	const char *name;        /* "softmax" */
	const char *path;        /* "step/forward/layer.3/attn/softmax" (the NVTX path) */
	const char *kind;        /* "attn/softmax": path without step, phase and layer.N */
	const char *phase;       /* "forward", "backward", "optimizer", "setup" */
	uint64_t flops;          /* analytic count */
	uint64_t bytes;          /* minimum bytes moved through device memory */
	uint8_t n_inputs, n_outputs;
	uint8_t inputs[MODEL_OP_MAX_INPUTS];   /* enum st_dtype */
	uint8_t outputs[MODEL_OP_MAX_OUTPUTS];
};

struct model_observer {
	void *ctx;
	/* Once per op, before the first step (and for setup ops before they run). */
	void (*op_register)(void *ctx, const struct model_op *op);
	/* Around every launch group of one op; nested calls do not happen. */
	void (*op_begin)(void *ctx, uint32_t op_id);
	void (*op_end)(void *ctx, uint32_t op_id);
	/* Every block the model's allocator hands out or takes back. */
	void (*alloc)(void *ctx, uint64_t address, uint64_t size, int category, uint32_t op_id);
	void (*free)(void *ctx, uint64_t address, uint64_t size, int category, uint32_t op_id);
	/* A request the device could not satisfy; live = bytes the allocator held. */
	void (*oom)(void *ctx, uint64_t requested, int category, uint32_t op_id, uint64_t live, uint64_t capacity);
	/* Steps: index counts from 0 over warm-up and measured steps together. */
	void (*step_begin)(void *ctx, uint32_t index, bool warmup);
	/* After the step's closing synchronisation. */
	void (*step_end)(void *ctx, uint32_t index, bool warmup);
};

#endif
