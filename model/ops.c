/* ops.c: see ops.h. */
#include "model/ops.h"

#include <stdlib.h>
#include <string.h>

#include <nvtx3/nvToolsExt.h>

#include "lib/error.h"
#include "lib/grow.h"

/* ---- the observer, with empty hooks where the caller left NULL ---- */

static void nop_op(void *c, uint32_t id) { (void)c; (void)id; }
static void nop_reg(void *c, const struct model_op *op) { (void)c; (void)op; }
static void nop_mem(void *c, uint64_t a, uint64_t s, int k, uint32_t o) { (void)c; (void)a; (void)s; (void)k; (void)o; }
static void nop_oom(void *c, uint64_t r, int k, uint32_t o, uint64_t l, uint64_t cap) { (void)c; (void)r; (void)k; (void)o; (void)l; (void)cap; }
static void nop_step(void *c, uint32_t i, bool w) { (void)c; (void)i; (void)w; }

void op_registry_init(struct op_registry *r, const struct model_observer *obs)
{
	struct model_observer *o = &r->obs_copy;

	memset(r, 0, sizeof(*r));
	if (!obs)
		return;
	*o = *obs;
	if (!o->op_register) o->op_register = nop_reg;
	if (!o->op_begin) o->op_begin = nop_op;
	if (!o->op_end) o->op_end = nop_op;
	if (!o->alloc) o->alloc = nop_mem;
	if (!o->free) o->free = nop_mem;
	if (!o->oom) o->oom = nop_oom;
	if (!o->step_begin) o->step_begin = nop_step;
	if (!o->step_end) o->step_end = nop_step;
	r->obs = o;
}

void op_registry_release(struct op_registry *r)
{
	for (size_t i = 0; i < r->n; i++) {
		free((char *)r->op[i].path);
		free((char *)r->op[i].kind);
		free((char *)r->op[i].phase);
	}
	free(r->op);
	r->op = NULL;
	r->n = r->alloc = 0;
}

/*
 * The op's kind: its path after the phase's component, without "layer.N/":
 * "step/backward/layer.12/attn/softmax" -> "attn/softmax", "setup/init" ->
 * "init", "attn d64 seq4096 b8 h1 bf16 flash/forward/attn/flash" ->
 * "attn/flash". A path without the phase's component loses its first.
 */
static char *op_kind(const char *path, const char *phase)
{
	size_t n = strlen(phase);
	const char *p = NULL, *slash;

	for (const char *c = path; c; c = strchr(c, '/'), c = c ? c + 1 : NULL)
		if (n && !strncmp(c, phase, n) && c[n] == '/') {
			p = c + n + 1;
			break;
		}
	if (!p)
		p = (slash = strchr(path, '/')) ? slash + 1 : path;
	if (!strncmp(p, "layer.", 6) && (slash = strchr(p, '/')))
		p = slash + 1;
	return strdup(p);
}

uint32_t op_registry_add(struct op_registry *r, const char *path, const char *phase,
			 uint64_t flops, uint64_t bytes, int n_in, const uint8_t *in, int n_out,
			 const uint8_t *out)
{
	if (ALLOC_GROW(r->op, r->n + 1, r->alloc))
		return 0;
	struct model_op *op = &r->op[r->n];
	memset(op, 0, sizeof(*op));
	op->path = strdup(path);
	op->kind = op_kind(path, phase);
	op->phase = strdup(phase);
	if (!op->path || !op->kind || !op->phase) {
		free((char *)op->path);
		free((char *)op->kind);
		free((char *)op->phase);
		error("out of host memory for the op registry");
		return 0;
	}
	const char *last = strrchr(op->path, '/');
	op->name = last ? last + 1 : op->path;
	op->id = (uint32_t)++r->n;
	op->flops = flops;
	op->bytes = bytes;
	op->n_inputs = n_in > MODEL_OP_MAX_INPUTS ? MODEL_OP_MAX_INPUTS : (uint8_t)n_in;
	op->n_outputs = n_out > MODEL_OP_MAX_OUTPUTS ? MODEL_OP_MAX_OUTPUTS : (uint8_t)n_out;
	if (op->n_inputs)
		memcpy(op->inputs, in, op->n_inputs);
	if (op->n_outputs)
		memcpy(op->outputs, out, op->n_outputs);
	if (r->obs)
		r->obs->op_register(r->obs->ctx, op);
	return op->id;
}

const struct model_op *op_registry_get(const struct op_registry *r, uint32_t id)
{
	return id >= 1 && id <= r->n ? &r->op[id - 1] : NULL;
}

/* ---- what is open ---- */

void op_begin(struct op_registry *r, uint32_t id)
{
	r->current = id;
	r->open = id;
	if (r->obs)
		r->obs->op_begin(r->obs->ctx, id);
	nvtxRangePushA(r->op[id - 1].name);
	if (r->depth >= 0 && r->depth < OP_MAX_DEPTH)
		r->open_names[r->depth] = r->op[id - 1].name;
	r->depth++;
}

void op_end(struct op_registry *r)
{
	nvtxRangePop();
	r->depth--;
	if (r->obs)
		r->obs->op_end(r->obs->ctx, r->open);
	r->open = 0;
}

void op_range_push(struct op_registry *r, const char *name)
{
	nvtxRangePushA(name);
	if (r->depth >= 0 && r->depth < OP_MAX_DEPTH)
		r->open_names[r->depth] = name;
	r->depth++;
}

const char *op_open_path(const struct op_registry *r, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < r->depth && i < OP_MAX_DEPTH && n < len; i++)
		n += (size_t)snprintf(buf + n, len - n, "%s%s", i ? "/" : "", r->open_names[i]);
	return buf;
}

void op_range_pop(struct op_registry *r)
{
	nvtxRangePop();
	r->depth--;
}

void op_ranges_unwind(struct op_registry *r, int depth)
{
	if (r->open)
		op_end(r);
	while (r->depth > depth)
		op_range_pop(r);
}
