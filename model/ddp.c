/*
 * ddp.c: data parallelism in the step (model_set_comm, SPEC.md "Several
 * GPUs"): the plan of model/ddp_plan.h issued on a communication stream of
 * its own, the highest priority the device has, so that a collective
 * started from the backward runs beside the backward's kernels.
 *
 * Starting collective k: an event on the compute stream where its
 * gradients are final, the communication stream waits for it, then the
 * in-place all-reduce (NCCL's average) between two timing events. After the
 * backward, what is left starts (all of naive's and flat's), and the
 * compute stream waits for the last all-reduce before the optimizer: the
 * time from the backward's end until then is the communication the step
 * waited for, the exposed part.
 *
 * While a collective runs beside the backward (overlap, bucket), the
 * matrix products target the device's SMs less c.sm_carveout: Hopper's
 * cuBLASLt kernels are persistent, a CTA per SM, and beside NCCL's CTAs a
 * full-width one runs its last CTAs as a second wave (1.5-2x as long,
 * docs/multi-gpu.md). The target holds from the first collective's
 * start to the backward's end.
 *
 * Each collective is an op (phase "comm", kind "allreduce/bucket.3",
 * message bytes in `bytes`) inside NVTX ranges "comm" and "allreduce",
 * registered when it first starts, under the NVTX path open then, so that
 * the path it is registered with is the one its kernels are found under.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernels/adamw.h"
#include "kernels/grad_reduce.h"
#include "lib/error.h"
#include "lib/gpu_check.h"
#include "model/comm.h"
#include "model/ddp_ce.h"
#include "model/ddp_plan.h"
#include "model/internal.h"

struct ddp {
	struct comm *comm;                 /* the caller's */
	struct ddp_plan plan;
	struct ddp_param *params;          /* the plan's view of m->param */
	cudaStream_t stream;               /* communication */
	cudaStream_t stream2;              /* --allreduce-by ce: odd collectives, so that two pipeline */
	cudaEvent_t *ready, *begin, *end;  /* per collective */
	cudaEvent_t waited;                /* compute stream: the last all-reduce is done */
	uint32_t *op;                      /* per collective; 0 until it first starts */
	size_t next;                       /* collectives started in this step */
	int32_t *flag, *host_flag;         /* model_agree's, on the device and pinned */
	uint32_t agree_op;
	uint32_t average_op;               /* exchange without an optimizer: the average's op */
	int gemm_sms;                      /* the products' SM target beside a collective, 0: all */
	struct ddp_ce *ce;                 /* --allreduce-by ce, exchange; NULL: NCCL's */
	/*
	 * exchange: the ranks' gradients in rank order, valid from the
	 * backward's end until this rank tells its peers it consumed them (at
	 * the next step's start, so that model_export between steps may still
	 * average them); averaged: m->grads holds their mean.
	 */
	const float *sources[ADAMW_AVG_MAX];
	int n_sources;                     /* 0: none held */
	bool averaged;
	/*
	 * exchange with an optimizer: the backward's end waits for every copy
	 * but the last collective's, AdamW updates the other parameters, then
	 * waits for it (ddp_optimizer_split, ddp_wait_last): the last bucket's
	 * copy hides under most of AdamW. split: this step did so; part1 ends
	 * that AdamW, waited2 its wait.
	 */
	bool hold_last, split;
	cudaEvent_t part1, waited2;
};

static const uint8_t f32[1] = { ST_DT_F32 };

void ddp_free(struct model *m)
{
	struct ddp *d = m->ddp;

	if (!d)
		return;
	if (d->ce) {
		cudaStreamSynchronize(d->stream);
		cudaStreamSynchronize(d->stream2);
		ddp_ce_free(d->ce);
	}
	for (size_t k = 0; k < d->plan.n; k++) {
		if (d->ready && d->ready[k])
			cudaEventDestroy(d->ready[k]);
		if (d->begin && d->begin[k])
			cudaEventDestroy(d->begin[k]);
		if (d->end && d->end[k])
			cudaEventDestroy(d->end[k]);
	}
	if (d->waited)
		cudaEventDestroy(d->waited);
	if (d->part1)
		cudaEventDestroy(d->part1);
	if (d->waited2)
		cudaEventDestroy(d->waited2);
	if (d->stream)
		cudaStreamDestroy(d->stream);
	if (d->stream2)
		cudaStreamDestroy(d->stream2);
	if (d->flag)
		cudaFree(d->flag);
	if (d->host_flag)
		cudaFreeHost(d->host_flag);
	cudaGetLastError();
	ddp_plan_release(&d->plan);
	free(d->ready);
	free(d->begin);
	free(d->end);
	free(d->op);
	free(d->params);
	free(d);
	m->ddp = NULL;
}

static int ddp_create(struct model *m, struct comm *comm)
{
	struct ddp *d = calloc(1, sizeof(*d));
	int least = 0, greatest = 0;
	size_t n;

	if (!d)
		return error("out of host memory for data parallelism");
	m->ddp = d;
	d->comm = comm;
	d->params = calloc((size_t)m->n_param, sizeof(*d->params));
	if (!d->params)
		goto oom;
	for (int i = 0; i < m->n_param; i++)
		d->params[i] = (struct ddp_param){ m->param[i].name, m->param[i].offset, m->param[i].numel };
	if (ddp_plan_make(&d->plan, m->c.ddp, d->params, (size_t)m->n_param, m->c.bucket_mb, sizeof(float)))
		goto fail;
	n = d->plan.n;
	d->ready = calloc(n, sizeof(*d->ready));
	d->begin = calloc(n, sizeof(*d->begin));
	d->end = calloc(n, sizeof(*d->end));
	d->op = calloc(n, sizeof(*d->op));
	if (!d->ready || !d->begin || !d->end || !d->op)
		goto oom;
	if (CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest)) ||
	    CUDA_CHECK(cudaStreamCreateWithPriority(&d->stream, cudaStreamNonBlocking, greatest)) ||
	    CUDA_CHECK(cudaEventCreate(&d->waited)) || CUDA_CHECK(cudaEventCreate(&d->part1)) ||
	    CUDA_CHECK(cudaEventCreate(&d->waited2)) ||
	    CUDA_CHECK(cudaMalloc((void **)&d->flag, sizeof(*d->flag))) ||
	    CUDA_CHECK(cudaMallocHost((void **)&d->host_flag, sizeof(*d->host_flag))))
		goto fail;
	/* the reduction's CTAs fill the SMs the products leave (8 of 256 threads each) */
	if (m->c.allreduce != MODEL_ALLREDUCE_NCCL &&
	    (CUDA_CHECK(cudaStreamCreateWithPriority(&d->stream2, cudaStreamNonBlocking, greatest)) ||
	     !(d->ce = ddp_ce_create(comm, m->grads.size / sizeof(float), 8 * m->c.sm_carveout,
				     m->c.allreduce == MODEL_ALLREDUCE_EXCHANGE))))
		goto fail;
	if (m->c.allreduce == MODEL_ALLREDUCE_EXCHANGE && comm_size(comm) > ADAMW_AVG_MAX) {
		error("--allreduce-by exchange: at most %d ranks, not %d", ADAMW_AVG_MAX, comm_size(comm));
		goto fail;
	}
	if (model_config_overlaps(&m->c) && m->c.sm_carveout > 0) {
		int device = 0, sms = 0;

		if (CUDA_CHECK(cudaGetDevice(&device)) ||
		    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device)))
			goto fail;
		if (m->c.sm_carveout >= sms) {
			error("--sm-carveout %d leaves none of the device's %d SMs to the matrix products",
			      m->c.sm_carveout, sms);
			goto fail;
		}
		d->gemm_sms = sms - m->c.sm_carveout;
	}
	for (size_t k = 0; k < n; k++)
		if (CUDA_CHECK(cudaEventCreateWithFlags(&d->ready[k], cudaEventDisableTiming)) ||
		    CUDA_CHECK(cudaEventCreate(&d->begin[k])) || CUDA_CHECK(cudaEventCreate(&d->end[k])))
			goto fail;
	d->agree_op = op_registry_add(&m->ops, "comm/allreduce/agree", "comm", 0, sizeof(int32_t), 1,
				      (const uint8_t[]){ ST_DT_I32 }, 1, (const uint8_t[]){ ST_DT_I32 });
	if (!d->agree_op)
		goto fail;
	if (d->ce && !(d->average_op = op_registry_add(&m->ops, "comm/average", "comm", 0, m->grads.size, 1, f32,
						       1, f32)))
		goto fail;
	return 0;
oom:
	error("out of host memory for data parallelism");
fail:
	ddp_free(m);
	return -1;
}

int model_set_comm(struct model *m, struct comm *comm)
{
	if (m->c.ddp == ST_DDP_NONE)
		return error("a communicator for a model without --ddp");
	if (m->ddp)
		return error("the model has its communicator already");
	return ddp_create(m, comm) ? MODEL_ERROR : MODEL_OK;
}

/* Registers collective c's op under the NVTX path open now. */
static uint32_t register_op(struct model *m, const struct ddp_collective *c)
{
	char open[512], path[768];

	op_open_path(&m->ops, open, sizeof(open));
	snprintf(path, sizeof(path), "%s%scomm/allreduce/%s", open, *open ? "/" : "", c->name);
	return op_registry_add(&m->ops, path, "comm", 0, (uint64_t)c->count * sizeof(float), 1, f32, 1,
			       f32);
}

/* Starts collective k: after the compute stream's work so far, on the communication stream. */
static int start(struct model *m, size_t k)
{
	struct ddp *d = m->ddp;
	const struct ddp_collective *c = &d->plan.c[k];
	float *g = (float *)m->grads.ptr + c->offset;
	cudaStream_t s = d->ce && (k & 1) ? d->stream2 : d->stream;
	int rc;

	if (!d->op[k] && !(d->op[k] = register_op(m, c)))
		return MODEL_ERROR;
	op_range_push(&m->ops, "comm");
	op_range_push(&m->ops, "allreduce");
	op_begin(&m->ops, d->op[k]);
	rc = CUDA_CHECK(cudaEventRecord(d->ready[k], m->stream)) ||
	     CUDA_CHECK(cudaStreamWaitEvent(s, d->ready[k], 0)) ||
	     CUDA_CHECK(cudaEventRecord(d->begin[k], s)) ||
	     (d->ce ? ddp_ce_allreduce(d->ce, (int)(k & 1), (float *)m->grads.ptr, c->offset, c->count, s)
		    : comm_allreduce(d->comm, g, g, c->count, ST_DT_F32, COMM_AVG, s)) ||
	     CUDA_CHECK(cudaEventRecord(d->end[k], s));
	op_end(&m->ops);
	op_range_pop(&m->ops);
	op_range_pop(&m->ops);
	m->gemm.sm_target = d->gemm_sms;
	return rc ? MODEL_ERROR : MODEL_OK;
}

int ddp_grads_final(struct model *m, size_t offset)
{
	struct ddp *d = m->ddp;
	size_t to = ddp_plan_ready(&d->plan, d->next, offset);

	for (; d->next < to; d->next++)
		if (start(m, d->next))
			return MODEL_ERROR;
	return MODEL_OK;
}

/*
 * STEPTRACE_FAULT=RANK:WHAT:STEP, for the tests of failure handling
 * (tests/gpu2): at the start of step STEP, rank RANK exits with status 3
 * (exit), dies by SIGKILL (kill), or stops answering (hang).
 */
static void fault(const struct model *m, uint32_t index)
{
	const char *s = getenv("STEPTRACE_FAULT");
	char what[16] = "";
	int rank = -1;
	unsigned step = 0;

	if (!s || sscanf(s, "%d:%15[a-z]:%u", &rank, what, &step) != 3 ||
	    rank != comm_rank(m->ddp->comm) || step != index)
		return;
	fprintf(stderr, "STEPTRACE_FAULT: rank %d: %s at step %u\n", rank, what, step);
	if (!strcmp(what, "exit"))
		exit(3);
	if (!strcmp(what, "kill"))
		raise(SIGKILL);
	if (!strcmp(what, "hang"))
		for (;;)
			pause();
}

int ddp_step_begin(struct model *m, uint32_t index)
{
	struct ddp *d = m->ddp;

	if (!d)
		return MODEL_OK;
	d->next = 0;
	fault(m, index);
	if (d->n_sources) {   /* exchange: the last step's copies are read (stream order) */
		d->n_sources = 0;
		if (ddp_ce_consumed(d->ce, m->stream))
			return MODEL_ERROR;
	}
	return MODEL_OK;
}

int ddp_finish_backward(struct model *m)
{
	struct ddp *d = m->ddp;

	for (; d->next < d->plan.n; d->next++)
		if (start(m, d->next))
			return MODEL_ERROR;
	m->gemm.sm_target = 0;   /* the backward is over */
	/* a communication stream runs its collectives in order: the last one's end is everyone's
	 * there (--allreduce-by ce: two streams, the last two ends) */
	if ((d->ce && d->plan.n > 1 && CUDA_CHECK(cudaStreamWaitEvent(m->stream, d->end[d->plan.n - 2], 0))) ||
	    CUDA_CHECK(cudaStreamWaitEvent(m->stream, d->end[d->plan.n - 1], 0)))
		return MODEL_ERROR;
	d->averaged = false;
	d->split = false;
	d->hold_last = d->ce && m->c.mode == ST_MODE_TRAIN && d->plan.n > 1;
	if (d->ce) {
		/* exchange: the peers' copies arrived; AdamW averages them, or here without one */
		int n = ddp_ce_arrived(d->ce, (float *)m->grads.ptr, d->sources,
				       d->hold_last ? (int)((d->plan.n - 1) & 1) : -1, m->stream);

		if (n < 0)
			return MODEL_ERROR;
		d->n_sources = n;
		d->hold_last = d->hold_last && n;
		if (n && m->c.mode != ST_MODE_TRAIN && ddp_average(m))
			return MODEL_ERROR;
	}
	if (CUDA_CHECK(cudaEventRecord(d->waited, m->stream)))
		return MODEL_ERROR;
	return MODEL_OK;
}

int ddp_average(struct model *m)
{
	struct ddp *d = m->ddp;

	if (!d || !d->n_sources || d->averaged)
		return MODEL_OK;
	op_begin(&m->ops, d->average_op);
	if (CUDA_CHECK(grad_reduce((float *)m->grads.ptr, d->sources, d->n_sources,
				   (long long)(m->grads.size / sizeof(float)), 1.0f / (float)d->n_sources, 0,
				   m->stream)))
		return MODEL_ERROR;
	op_end(&m->ops);
	d->averaged = true;
	return MODEL_OK;
}

int ddp_optimizer_split(struct model *m, size_t *lo, size_t *hi)
{
	struct ddp *d = m->ddp;
	const struct ddp_collective *c;

	if (!d || !d->hold_last)
		return 0;
	c = &d->plan.c[d->plan.n - 1];
	*lo = c->offset;
	*hi = c->offset + c->count;
	return 1;
}

int ddp_wait_last(struct model *m)
{
	struct ddp *d = m->ddp;

	if (!d || !d->hold_last)
		return MODEL_OK;
	d->hold_last = false;
	d->split = true;
	if (CUDA_CHECK(cudaEventRecord(d->part1, m->stream)) ||
	    ddp_ce_arrived_lane(d->ce, (int)((d->plan.n - 1) & 1), m->stream) ||
	    CUDA_CHECK(cudaEventRecord(d->waited2, m->stream)))
		return MODEL_ERROR;
	return MODEL_OK;
}

int ddp_grad_sources(struct model *m, const float **in)
{
	struct ddp *d = m->ddp;

	if (!d || !d->n_sources || d->averaged)
		return 0;
	memcpy(in, d->sources, (size_t)d->n_sources * sizeof(*in));
	return d->n_sources;
}

static double elapsed(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0;

	return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms : NAN;
}

void ddp_step_times(struct model *m, struct model_step_times *t)
{
	struct ddp *d = m->ddp;
	double comm = 0;

	for (size_t k = 0; k < d->plan.n; k++)
		comm += elapsed(d->begin[k], d->end[k]);
	t->comm_ms = comm;
	t->exposed_ms = fmax(0.0, elapsed(m->ev[2], d->waited));
	t->optimizer_ms = elapsed(d->waited, m->ev[3]);
	if (d->split) {   /* the wait for the last collective, inside AdamW */
		double late = fmax(0.0, elapsed(d->part1, d->waited2));

		t->exposed_ms += late;
		t->optimizer_ms -= late;
	}
}

int ddp_sync(struct model *m, const char *what)
{
	return comm_sync(m->ddp->comm, m->stream, what) ? MODEL_ERROR : MODEL_OK;
}

int model_agree(struct model *m, int *flag)
{
	struct ddp *d = m->ddp;
	int rc;

	if (!d)
		return MODEL_OK;
	/* pinned: a copy from pageable memory would wait for the all-reduce unbounded */
	*d->host_flag = *flag;
	op_range_push(&m->ops, "comm");
	op_range_push(&m->ops, "allreduce");
	op_begin(&m->ops, d->agree_op);
	rc = CUDA_CHECK(cudaMemcpyAsync(d->flag, d->host_flag, sizeof(*d->flag), cudaMemcpyHostToDevice,
					d->stream)) ||
	     comm_allreduce(d->comm, d->flag, d->flag, 1, ST_DT_I32, COMM_MAX, d->stream) ||
	     CUDA_CHECK(cudaMemcpyAsync(d->host_flag, d->flag, sizeof(*d->flag), cudaMemcpyDeviceToHost,
					d->stream));
	op_end(&m->ops);
	op_range_pop(&m->ops);
	op_range_pop(&m->ops);
	if (rc || comm_sync(d->comm, d->stream, "the ranks' agreement"))
		return MODEL_ERROR;
	*flag = *d->host_flag;
	return MODEL_OK;
}
