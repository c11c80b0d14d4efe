/*
 * ddp_plan.h: which gradients each all-reduce of a data-parallel step
 * carries, in which order, and when it may start (SPEC.md, "Several GPUs").
 * CPU only: model/ddp.c issues the plan on the GPU.
 *
 * The model keeps every gradient in one flat FP32 buffer, parameters in
 * memory order, and its backward finishes them in exactly the reverse
 * order: lm_head, the final norm, then each layer from the last (w2; w1 and
 * w3 together; ln2; the output projection; q, k, v together; ln1), the
 * embedding last. So every collective is a contiguous slice of the buffer,
 * all-reduced in place, and it may start once the gradient at its lowest
 * offset is final. The modes (enum st_ddp):
 *
 *   naive    one all-reduce per parameter after the backward, last first
 *   flat     one all-reduce of the whole buffer after the backward
 *   overlap  one per parameter, each started as soon as it is final
 *   bucket   parameters taken last first into buckets, a bucket closed
 *            once it holds at least the bucket size (PyTorch DDP's
 *            bucket_cap_mb rule, MB of 2^20 bytes), each started as soon as
 *            its last gradient is final
 */
#ifndef STEPTRACE_MODEL_DDP_PLAN_H
#define STEPTRACE_MODEL_DDP_PLAN_H

#include <stdbool.h>
#include <stddef.h>

#include "trace/types.h"

/* A parameter of the flat buffer, in memory order. */
struct ddp_param {
	const char *name;          /* PyTorch's name */
	size_t offset, numel;      /* in elements */
};

/* One all-reduce of the step. */
struct ddp_collective {
	size_t offset, count;      /* the slice of the flat buffer, in elements */
	char name[96];             /* "bucket.3", "flat", or the parameter's name */
	size_t first, n_params;    /* the parameters it carries: [first, first + n_params) */
	bool in_backward;          /* started from the backward (overlap, bucket) */
};

struct ddp_plan {
	struct ddp_collective *c;  /* in the order they are started */
	size_t n;
};

/*
 * The plan of `mode` for n parameters in memory order (contiguous, from
 * offset 0), elements of elem_bytes bytes, buckets of bucket_mb MB. -1
 * after one line (no parameters, gaps between them, a bucket size not
 * above 0, ST_DDP_NONE).
 */
int ddp_plan_make(struct ddp_plan *p, enum st_ddp mode, const struct ddp_param *params, size_t n,
		  double bucket_mb, size_t elem_bytes);
void ddp_plan_release(struct ddp_plan *p);

/*
 * With `next` collectives started, and every gradient from element
 * `final_offset` up now final: how many may have started (next or more).
 * Collectives issued after the backward (naive, flat) never start here.
 */
size_t ddp_plan_ready(const struct ddp_plan *p, size_t next, size_t final_offset);

#endif
