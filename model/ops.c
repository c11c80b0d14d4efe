/* ops.c: see ops.h. */
#include "model/ops.h"

#include <stdlib.h>
#include <string.h>

void op_registry_init(struct op_registry *r)
{
	memset(r, 0, sizeof(*r));
}

void op_registry_release(struct op_registry *r)
{
	for (uint32_t i = 0; i < r->n; i++) {
		free((char *)r->op[i].path);
		free((char *)r->op[i].kind);
		free((char *)r->op[i].phase);
	}
	free(r->op);
	op_registry_init(r);
}

/* "step/backward/layer.12/attn/softmax" -> "attn/softmax"; "setup/init" -> "init". */
static char *op_kind(const char *path)
{
	const char *p = path;

	if (!strncmp(p, "step/", 5))
		p += 5;
	const char *slash = strchr(p, '/');
	if (slash)
		p = slash + 1;                         /* the phase */
	if (!strncmp(p, "layer.", 6) && (slash = strchr(p, '/')))
		p = slash + 1;
	return strdup(p);
}

uint32_t op_registry_add(struct op_registry *r, const char *path, const char *phase,
			 uint64_t flops, uint64_t bytes, int n_in, const uint8_t *in, int n_out,
			 const uint8_t *out)
{
	if (r->n == r->alloc) {
		uint32_t na = r->alloc ? 2 * r->alloc : 64;
		struct model_op *grown = realloc(r->op, na * sizeof(*grown));
		if (!grown)
			return 0;
		r->op = grown;
		r->alloc = na;
	}
	struct model_op *op = &r->op[r->n];
	memset(op, 0, sizeof(*op));
	op->path = strdup(path);
	op->kind = op_kind(path);
	op->phase = strdup(phase);
	if (!op->path || !op->kind || !op->phase) {
		free((char *)op->path);
		free((char *)op->kind);
		free((char *)op->phase);
		return 0;
	}
	const char *last = strrchr(op->path, '/');
	op->name = last ? last + 1 : op->path;
	op->id = ++r->n;
	op->flops = flops;
	op->bytes = bytes;
	op->n_inputs = n_in > MODEL_OP_MAX_INPUTS ? MODEL_OP_MAX_INPUTS : (uint8_t)n_in;
	op->n_outputs = n_out > MODEL_OP_MAX_OUTPUTS ? MODEL_OP_MAX_OUTPUTS : (uint8_t)n_out;
	if (op->n_inputs)
		memcpy(op->inputs, in, op->n_inputs);
	if (op->n_outputs)
		memcpy(op->outputs, out, op->n_outputs);
	return op->id;
}

const struct model_op *op_registry_get(const struct op_registry *r, uint32_t id)
{
	return id >= 1 && id <= r->n ? &r->op[id - 1] : NULL;
}
