/* ddp_plan.c: see ddp_plan.h. */
#include "model/ddp_plan.h"

#include <stdio.h>
#include <stdlib.h>

#include "lib/error.h"

/* Collective k over parameters [lo, hi) (memory order). */
static void collective(struct ddp_collective *c, const struct ddp_param *params, size_t lo, size_t hi,
		       bool in_backward)
{
	c->first = lo;
	c->n_params = hi - lo;
	c->offset = params[lo].offset;
	c->count = params[hi - 1].offset + params[hi - 1].numel - c->offset;
	c->in_backward = in_backward;
}

int ddp_plan_make(struct ddp_plan *p, enum st_ddp mode, const struct ddp_param *params, size_t n,
		  double bucket_mb, size_t elem_bytes)
{
	size_t at = 0, k = 0;

	p->c = NULL;
	p->n = 0;
	if (mode == ST_DDP_NONE || (int)mode < 0 || mode > ST_DDP_BUCKET)
		return error("no data-parallel mode to plan");
	if (!n)
		return error("no parameters to all-reduce");
	if (mode == ST_DDP_BUCKET && !(bucket_mb > 0))
		return error("--bucket-mb must be above 0, not %g", bucket_mb);
	for (size_t i = 0; i < n; i++) {
		if (params[i].offset != at || !params[i].numel)
			return error("parameter '%s' does not follow the previous one in the gradient buffer",
				     params[i].name);
		at += params[i].numel;
	}
	p->c = calloc(n, sizeof(*p->c));
	if (!p->c)
		return error("out of memory");
	if (mode == ST_DDP_FLAT) {
		collective(&p->c[0], params, 0, n, false);
		snprintf(p->c[0].name, sizeof(p->c[0].name), "flat");
		p->n = 1;
		return 0;
	}
	if (mode == ST_DDP_NAIVE || mode == ST_DDP_OVERLAP) {
		for (size_t i = n; i-- > 0; k++) {
			collective(&p->c[k], params, i, i + 1, mode == ST_DDP_OVERLAP);
			snprintf(p->c[k].name, sizeof(p->c[k].name), "%s", params[i].name);
		}
		p->n = k;
		return 0;
	}
	/* buckets, last parameter first, each closed once it reaches the size */
	double cap = bucket_mb * 1048576.0;
	size_t hi = n;
	double bytes = 0;
	for (size_t i = n; i-- > 0;) {
		bytes += (double)params[i].numel * (double)elem_bytes;
		if (bytes >= cap || i == 0) {
			collective(&p->c[k], params, i, hi, true);
			snprintf(p->c[k].name, sizeof(p->c[k].name), "bucket.%zu", k);
			k++;
			hi = i;
			bytes = 0;
		}
	}
	p->n = k;
	return 0;
}

void ddp_plan_release(struct ddp_plan *p)
{
	free(p->c);
	p->c = NULL;
	p->n = 0;
}

size_t ddp_plan_ready(const struct ddp_plan *p, size_t next, size_t final_offset)
{
	while (next < p->n && p->c[next].in_backward && p->c[next].offset >= final_offset)
		next++;
	return next;
}
