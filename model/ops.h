/*
 * ops.h: the op registry. Every kernel launch and allocation of the step
 * belongs to an op registered here once, with its NVTX path, kind, phase,
 * analytic FLOPs and bytes, and the dtypes of its inputs and outputs.
 * Ids are dense from 1; the registry owns the strings.
 */
#ifndef STEPTRACE_MODEL_OPS_H
#define STEPTRACE_MODEL_OPS_H

#include <stdint.h>

#include "model/observer.h"

struct op_registry {
	struct model_op *op;   /* op[id - 1] */
	uint32_t n, alloc;
};

void op_registry_init(struct op_registry *r);
void op_registry_release(struct op_registry *r);

/*
 * Registers "step/forward/layer.3/attn/softmax" (the NVTX path): name is its
 * last component, kind the path without "step/", the phase and "layer.N/".
 * in/out: enum st_dtype values. Returns the id, 0 when out of host memory.
 */
uint32_t op_registry_add(struct op_registry *r, const char *path, const char *phase,
			 uint64_t flops, uint64_t bytes, int n_in, const uint8_t *in, int n_out,
			 const uint8_t *out);

/* NULL for an id that was not registered. */
const struct model_op *op_registry_get(const struct op_registry *r, uint32_t id);

#endif
