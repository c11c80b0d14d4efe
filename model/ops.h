/*
 * ops.h: the step's ops and the ranges around them. Every kernel launch
 * and allocation of the step belongs to an op registered here once, with
 * its NVTX path, kind, phase, analytic FLOPs and bytes, and the dtypes of
 * its inputs and outputs; ids are dense from 1 and the registry owns the
 * strings. The registry also keeps what is open: op_begin/op_end bracket
 * an op with its NVTX range and the observer's hooks, op_range_push and
 * op_range_pop the ranges around ops ("step", "forward", "layer.3",
 * "attn"), and the observer hears of every registration.
 */
#ifndef STEPTRACE_MODEL_OPS_H
#define STEPTRACE_MODEL_OPS_H

#include <stddef.h>
#include <stdint.h>

#include "model/observer.h"

#define OP_MAX_DEPTH 32

struct op_registry {
	struct model_op *op;                 /* op[id - 1] */
	size_t n, alloc;
	struct model_observer obs_copy;
	const struct model_observer *obs;    /* NULL, or obs_copy with every hook set */
	uint32_t open;                       /* the op between op_begin and op_end, 0 if none */
	uint32_t current;                    /* the op begun last: owner of the blocks the
						allocator hands out and takes back */
	int depth;                           /* NVTX ranges open, ops' own included */
	const char *open_names[OP_MAX_DEPTH];   /* their names, outermost first (up to the max) */
};

/* obs may be NULL; it is copied, with empty hooks where it has none. */
void op_registry_init(struct op_registry *r, const struct model_observer *obs);
void op_registry_release(struct op_registry *r);

/*
 * Registers "step/forward/layer.3/attn/softmax" (the NVTX path): name is its
 * last component, kind what follows the phase's component, without
 * "layer.N/" ("attn/softmax"; the attention sweep's "attn d64 ... naive/
 * forward/attn/softmax" too).
 * in/out: enum st_dtype values. Tells the observer. Returns the id, 0 with
 * an error line when out of host memory.
 */
uint32_t op_registry_add(struct op_registry *r, const char *path, const char *phase,
			 uint64_t flops, uint64_t bytes, int n_in, const uint8_t *in, int n_out,
			 const uint8_t *out);

/* NULL for an id that was not registered. */
const struct model_op *op_registry_get(const struct op_registry *r, uint32_t id);

/* Opens op `id` (its NVTX range, the observer's op_begin); ops do not nest. */
void op_begin(struct op_registry *r, uint32_t id);
void op_end(struct op_registry *r);
void op_range_push(struct op_registry *r, const char *name);
void op_range_pop(struct op_registry *r);
/*
 * The NVTX path open now ("step/backward/layer.3/ffn") into buf; an op
 * registered while the step runs (the data-parallel step's collectives)
 * takes it, so its path is the one its kernels are found under.
 */
const char *op_open_path(const struct op_registry *r, char *buf, size_t len);
/* Closes the open op and the ranges above `depth`: what a failure left open. */
void op_ranges_unwind(struct op_registry *r, int depth);

#endif
