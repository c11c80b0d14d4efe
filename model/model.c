/*
 * model.c: the training step on the GPU (model.h): parameter layout,
 * creation and teardown, weights in and out, the batch, and model_step's
 * phases. The forward and backward passes live in pass.c, the op table in
 * plan.c, the op and range bookkeeping in ops.c; this file owns the
 * lifetime of everything they use.
 */
#include "model/model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "lib/error.h"
#include "lib/gpu_check.h"
#include "kernels/flash_attention.h"
#include "kernels/init.h"
#include "kernels/rope.h"
#include "model/internal.h"
#include "trace/types.h"

#define CUBLAS_WORKSPACE_BYTES (32u << 20)   /* cuBLAS's advice for Hopper */

int model_gpu_available(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	if (e == cudaSuccess && n > 0)
		return 1;
	/* the runtime says "driver insufficient" where no driver is loaded at all */
	if (e == cudaSuccess || e == cudaErrorNoDevice ||
	    (e == cudaErrorInsufficientDriver && access("/proc/driver/nvidia/version", F_OK) != 0))
		error("no NVIDIA GPU found (cudaGetDeviceCount: %s)",
		      e == cudaSuccess ? "no device" : cudaGetErrorString(e));
	else if (e == cudaErrorInsufficientDriver)
		error("the NVIDIA driver is older than this build's CUDA runtime needs "
		      "(cudaGetDeviceCount: %s)", cudaGetErrorString(e));
	else
		error("cannot use the GPU (cudaGetDeviceCount: %s)", cudaGetErrorString(e));
	return 0;
}

/* ---- Parameter layout: PyTorch's names, one flat FP32 buffer ---- */

static void param_add(struct model *m, const char *name, int ndim, int64_t d0, int64_t d1,
		      size_t *offset)
{
	struct param *p = &m->param[m->n_param++];

	snprintf(p->name, sizeof(p->name), "%s", name);
	p->ndim = ndim;
	p->shape[0] = d0;
	p->shape[1] = ndim > 1 ? d1 : 1;
	p->offset = *offset;
	p->numel = (size_t)d0 * (ndim > 1 ? (size_t)d1 : 1);
	*offset += p->numel;
}

/*
 * PyTorch's order, except that each FFN's w3 comes before its w2, so that
 * [W1; W3] is one matrix (as [Wq; Wk; Wv] already is). Weights go in and out
 * by name (model_load_weights, model_export); only model_init_random, which
 * seeds each tensor by its index, sees the order.
 */
static int param_layout(struct model *m)
{
	const struct model_config *c = &m->c;
	int64_t d = c->d_model, f = c->d_ff, v = c->vocab;
	size_t off = 0;
	char name[96];

	m->param = calloc(3 + 9 * (size_t)c->layers, sizeof(*m->param));
	m->lp = calloc(c->layers, sizeof(*m->lp));
	if (!m->param || !m->lp)
		return error("out of host memory for the parameter table");
	m->off_emb = off;
	param_add(m, "token_embeddings.weight", 2, v, d, &off);
	m->cast_from = off;
	for (int l = 0; l < c->layers; l++) {
		struct layer_params *lp = &m->lp[l];
		static const char *const proj[4] = { "q_proj", "k_proj", "v_proj", "output_proj" };

		lp->ln1 = off;
		snprintf(name, sizeof(name), "layers.%d.ln1.weight", l);
		param_add(m, name, 1, d, 0, &off);
		for (int j = 0; j < 4; j++) {
			lp->proj[j] = off;
			snprintf(name, sizeof(name), "layers.%d.attn.%s.weight", l, proj[j]);
			param_add(m, name, 2, d, d, &off);
		}
		lp->ln2 = off;
		snprintf(name, sizeof(name), "layers.%d.ln2.weight", l);
		param_add(m, name, 1, d, 0, &off);
		lp->w1 = off;
		snprintf(name, sizeof(name), "layers.%d.ffn.w1.weight", l);
		param_add(m, name, 2, f, d, &off);
		lp->w3 = off;
		snprintf(name, sizeof(name), "layers.%d.ffn.w3.weight", l);
		param_add(m, name, 2, f, d, &off);
		lp->w2 = off;
		snprintf(name, sizeof(name), "layers.%d.ffn.w2.weight", l);
		param_add(m, name, 2, d, f, &off);
	}
	m->off_lnf = off;
	param_add(m, "ln_final.weight", 1, d, 0, &off);
	m->off_lm = off;
	param_add(m, "lm_head.weight", 2, v, d, &off);
	m->n_params = off;
	return 0;
}

/* ---- Setup ops: allocations and copies outside the step belong to one too ---- */

static uint32_t setup_op(struct model *m, const char *path)
{
	return op_registry_add(&m->ops, path, "setup", 0, 0, 0, NULL, 0, NULL);
}

static void setup_begin(struct model *m, uint32_t id)
{
	op_range_push(&m->ops, "setup");
	op_begin(&m->ops, id);
}

static void setup_end(struct model *m)
{
	op_ranges_unwind(&m->ops, 0);
}

/* ---- Create and free ---- */

static int create_buffers(struct model *m)
{
	const struct model_config *c = &m->c;
	size_t n = (size_t)c->batch * c->ctx, pb = m->n_params * sizeof(float);
	int rc;

	if ((rc = mem_get(&m->alloc, &m->params, pb, ST_MEM_PARAMETER)))
		return rc;
	if (c->mode != ST_MODE_FORWARD && (rc = mem_get(&m->alloc, &m->grads, pb, ST_MEM_GRADIENT)))
		return rc;
	if (c->mode == ST_MODE_TRAIN) {
		if ((rc = mem_get(&m->alloc, &m->adam_m, pb, ST_MEM_OPTIMIZER)) ||
		    (rc = mem_get(&m->alloc, &m->adam_v, pb, ST_MEM_OPTIMIZER)))
			return rc;
		if (CUDA_CHECK(cudaMemsetAsync(m->adam_m.ptr, 0, pb, m->stream)) ||
		    CUDA_CHECK(cudaMemsetAsync(m->adam_v.ptr, 0, pb, m->stream)))
			return MODEL_ERROR;
	}
	if ((rc = mem_get(&m->alloc, &m->inputs, n * sizeof(int32_t), ST_MEM_INPUT)) ||
	    (rc = mem_get(&m->alloc, &m->targets, n * sizeof(int32_t), ST_MEM_INPUT)))
		return rc;
	if (CUDA_CHECK(cudaMemsetAsync(m->inputs.ptr, 0, n * sizeof(int32_t), m->stream)) ||
	    CUDA_CHECK(cudaMemsetAsync(m->targets.ptr, 0, n * sizeof(int32_t), m->stream)))
		return MODEL_ERROR;

	/* RoPE's cos/sin table, like the module's buffer in PyTorch */
	size_t tb = (size_t)c->ctx * m->dh * sizeof(float);
	if ((rc = mem_get(&m->alloc, &m->rope, tb, ST_MEM_WORKSPACE)))
		return rc;
	float *table = malloc(tb);
	if (!table)
		return error("out of host memory for the RoPE table");
	rope_table_fill(table, c->ctx, m->dh, 10000.0);
	rc = CUDA_CHECK(cudaMemcpy(m->rope.ptr, table, tb, cudaMemcpyHostToDevice));
	free(table);
	if (rc)
		return MODEL_ERROR;

	if ((rc = mem_get(&m->alloc, &m->workspace, CUBLAS_WORKSPACE_BYTES, ST_MEM_WORKSPACE)))
		return rc;
	if (m->fused && c->mode == ST_MODE_TRAIN &&
	    (rc = mem_get(&m->alloc, &m->hyper, 2 * sizeof(float), ST_MEM_OPTIMIZER)))
		return rc;
	return 0;
}

int model_create(struct model **out, const struct model_config *c,
		 const struct model_observer *obs, struct model_oom *oom)
{
	struct model *m;
	int rc = MODEL_ERROR;

	*out = NULL;
	if (model_config_validate(c))
		return MODEL_ERROR;
	if (c->attention == ST_ATTN_FLASH) {
		char why[96];

		if (!flash_attention_supported(c->d_model / c->heads,
					       c->precision == ST_BF16 ? ST_DT_BF16 : ST_DT_F32,
					       why, sizeof(why)))
			return error("--attention flash cannot run this model: %s", why);
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return error("out of host memory for the model");
	m->c = *c;
	m->dh = c->d_model / c->heads;
	m->adt = c->precision == ST_BF16 ? ST_DT_BF16 : ST_DT_F32;
	m->adt_size = c->precision == ST_BF16 ? 2 : 4;
	m->saved_category = c->mode == ST_MODE_FORWARD ? ST_MEM_TEMPORARY : ST_MEM_ACTIVATION;
	m->fused = c->kernels == ST_KERNELS_FUSED;
	op_registry_init(&m->ops, obs);

	if (param_layout(m))
		goto fail;
	m->n_act = (size_t)c->layers * A_COUNT + T_COUNT;
	m->act = calloc(m->n_act, sizeof(*m->act));
	if (!m->act) {
		error("out of host memory for the activation table");
		goto fail;
	}
	if (CUDA_CHECK(cudaStreamCreateWithFlags(&m->stream, cudaStreamNonBlocking)))
		goto fail;
	for (int i = 0; i < 4; i++)
		if (CUDA_CHECK(cudaEventCreate(&m->ev[i])))
			goto fail;
	if (CUDA_CHECK(cudaMallocHost((void **)&m->loss_host, 3 * sizeof(float))))
		goto fail;
	m->hyper_host = m->loss_host + 1;
	if (model_alloc_init(&m->alloc, m->stream, &m->ops))
		goto fail;

	if (!(m->op_create = setup_op(m, "setup/create")) ||
	    !(m->op_init = setup_op(m, "setup/init")) ||
	    !(m->op_load = setup_op(m, "setup/load")) ||
	    !(m->op_batch = setup_op(m, "setup/batch")))
		goto fail;
	setup_begin(m, m->op_create);
	rc = create_buffers(m);
	if (rc == MODEL_OK)
		rc = gemm_init(&m->gemm, m->stream, c->precision, m->workspace.ptr,
			       m->workspace.size) ? MODEL_ERROR : MODEL_OK;
	setup_end(m);
	if (rc != MODEL_OK)
		goto fail;
	if (CUDA_CHECK(cudaStreamSynchronize(m->stream))) {
		rc = MODEL_ERROR;
		goto fail;
	}
	if (model_plan(m)) {
		rc = MODEL_ERROR;
		goto fail;
	}
	*out = m;
	return MODEL_OK;
fail:
	if (rc == MODEL_OOM) {
		m->last_oom = m->alloc.oom;
		if (oom)
			*oom = m->alloc.oom;
	} else {
		rc = MODEL_ERROR;
	}
	model_free(m);
	return rc;
}

static void release_step_blocks(struct model *m)
{
	for (size_t i = 0; i < m->n_act; i++)
		mem_put(&m->alloc, &m->act[i]);
	m->wcast_valid = false;
}

/* The weights or the batch changed: the next step runs eagerly (and casts), the one after captures. */
static void graph_reset(struct model *m)
{
	if (m->graph)
		cudaGraphExecDestroy(m->graph);
	m->graph = NULL;
	m->steps_run = 0;
	m->wcast_valid = false;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	graph_reset(m);
	ddp_free(m);
	if (m->alloc.pool) {
		release_step_blocks(m);
		mem_put(&m->alloc, &m->hyper);
		mem_put(&m->alloc, &m->params);
		mem_put(&m->alloc, &m->grads);
		mem_put(&m->alloc, &m->adam_m);
		mem_put(&m->alloc, &m->adam_v);
		mem_put(&m->alloc, &m->inputs);
		mem_put(&m->alloc, &m->targets);
		mem_put(&m->alloc, &m->rope);
		gemm_release(&m->gemm);   /* before its workspace goes */
		mem_put(&m->alloc, &m->workspace);
		model_alloc_release(&m->alloc);
	}
	if (m->loss_host)
		cudaFreeHost(m->loss_host);
	for (int i = 0; i < 4; i++)
		if (m->ev[i])
			cudaEventDestroy(m->ev[i]);
	if (m->stream)
		cudaStreamDestroy(m->stream);
	cudaGetLastError();
	op_registry_release(&m->ops);
	free(m->plan);
	free(m->layer_name);
	free(m->param);
	free(m->lp);
	free(m->act);
	free(m);
}

/* ---- Weights and batch ---- */

int model_init_random(struct model *m, uint64_t seed)
{
	int rc = 0;

	graph_reset(m);
	setup_begin(m, m->op_init);
	for (int i = 0; i < m->n_param && !rc; i++) {
		const struct param *p = &m->param[i];
		float *dst = (float *)m->params.ptr + p->offset;

		if (p->ndim == 1)
			rc = init_fill(dst, (long long)p->numel, 1.0f, m->stream);
		else if (p->offset == m->off_emb)
			rc = init_trunc_normal(dst, (long long)p->numel, 1.0f, 3.0f,
					       seed * 1000003u + (uint64_t)i, m->stream);
		else    /* Linear (out, in): std sqrt(2 / (in + out)) */
			rc = init_trunc_normal(dst, (long long)p->numel,
					       (float)sqrt(2.0 / (double)(p->shape[0] + p->shape[1])),
					       3.0f, seed * 1000003u + (uint64_t)i, m->stream);
	}
	setup_end(m);
	if (rc || CUDA_CHECK(cudaStreamSynchronize(m->stream)))
		return MODEL_ERROR;
	return MODEL_OK;
}

int model_load_weights(struct model *m, const struct tensor_set *w)
{
	int rc = MODEL_OK;

	for (int i = 0; i < m->n_param; i++) {
		const struct param *p = &m->param[i];
		const struct named_tensor *t = tensor_set_find(w, p->name);

		if (!t)
			return error("weights lack '%s'", p->name);
		if (t->dtype != ST_DT_F32)
			return error("weight '%s' is %s, expected f32", p->name, st_dtype_name(t->dtype));
		if (t->ndim != p->ndim || t->shape[0] != p->shape[0] ||
		    (p->ndim == 2 && t->shape[1] != p->shape[1]))
			return error("weight '%s' has the wrong shape for this model", p->name);
	}
	graph_reset(m);
	setup_begin(m, m->op_load);
	for (int i = 0; i < m->n_param && rc == MODEL_OK; i++) {
		const struct param *p = &m->param[i];
		const struct named_tensor *t = tensor_set_find(w, p->name);

		if (CUDA_CHECK(cudaMemcpy((float *)m->params.ptr + p->offset, t->data,
					  p->numel * sizeof(float), cudaMemcpyHostToDevice)))
			rc = MODEL_ERROR;
	}
	setup_end(m);
	return rc;
}

static int check_ids(const struct model *m, const int32_t *ids, size_t n, const char *what)
{
	for (size_t i = 0; i < n; i++)
		if (ids[i] < 0 || ids[i] >= m->c.vocab)
			return error("%s token id %d at position %zu is outside the vocabulary [0, %d)",
					what, ids[i], i, m->c.vocab);
	return 0;
}

int model_set_batch(struct model *m, const int32_t *inputs, const int32_t *targets)
{
	size_t n = (size_t)m->c.batch * m->c.ctx;
	int rc = MODEL_OK;

	if (check_ids(m, inputs, n, "input") || (targets && check_ids(m, targets, n, "target")))
		return MODEL_ERROR;
	graph_reset(m);
	setup_begin(m, m->op_batch);
	if (CUDA_CHECK(cudaMemcpy(m->inputs.ptr, inputs, n * sizeof(int32_t),
				  cudaMemcpyHostToDevice)) ||
	    (targets && CUDA_CHECK(cudaMemcpy(m->targets.ptr, targets, n * sizeof(int32_t),
					      cudaMemcpyHostToDevice))))
		rc = MODEL_ERROR;
	setup_end(m);
	m->have_targets = targets != NULL && rc == MODEL_OK;
	return rc;
}

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

int model_random_batch(struct model *m, uint64_t seed)
{
	size_t n = (size_t)m->c.batch * m->c.ctx;
	int32_t *ids = malloc((n + 1) * sizeof(int32_t));
	uint64_t s = seed;
	int rc;

	if (!ids)
		return error("out of host memory for a batch");
	for (size_t i = 0; i <= n; i++)
		ids[i] = (int32_t)(splitmix64(&s) % (uint64_t)m->c.vocab);
	/* targets are the inputs shifted by one, as in a language-model batch */
	rc = model_set_batch(m, ids, ids + 1);
	free(ids);
	return rc;
}

int model_export(struct model *m, struct tensor_set *weights, struct tensor_set *grads)
{
	if (grads && m->ddp && ddp_average(m))   /* --allreduce-by exchange: the ranks' mean */
		return MODEL_ERROR;
	if (CUDA_CHECK(cudaStreamSynchronize(m->stream)))
		return MODEL_ERROR;
	for (int i = 0; i < m->n_param; i++) {
		const struct param *p = &m->param[i];

		for (int which = 0; which < 2; which++) {
			struct tensor_set *set = which ? grads : weights;
			const struct mem_block *src = which ? &m->grads : &m->params;
			if (!set || !src->ptr)
				continue;
			struct named_tensor *t = tensor_set_add(set, p->name, ST_DT_F32, p->ndim,
								p->shape, NULL);
			if (!t)
				return error("out of host memory exporting '%s'", p->name);
			if (CUDA_CHECK(cudaMemcpy(t->data, (float *)src->ptr + p->offset,
						  p->numel * sizeof(float),
						  cudaMemcpyDeviceToHost)))
				return MODEL_ERROR;
		}
	}
	return MODEL_OK;
}

/* ---- The step ---- */

static double elapsed_ms(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0.0f;

	return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms : NAN;
}

/*
 * Event i of the step. While a graph is captured, an external one: a node of
 * the graph, so its replays are timed by phase too (outside a capture the
 * flag is an error).
 */
static void mark(struct model *m, int i)
{
	if (m->capturing)
		cudaEventRecordWithFlags(m->ev[i], m->stream, cudaEventRecordExternal);
	else
		cudaEventRecord(m->ev[i], m->stream);
}

/* The step's phases on the stream, events between them. */
static int step_phases(struct model *m)
{
	const struct model_config *c = &m->c;
	int rc;

	op_range_push(&m->ops, "step");
	mark(m, 0);

	op_range_push(&m->ops, "forward");
	rc = model_forward(m);
	op_range_pop(&m->ops);
	mark(m, 1);
	if (rc == MODEL_OK && c->mode != ST_MODE_FORWARD) {
		op_range_push(&m->ops, "backward");
		rc = model_backward(m);
		op_range_pop(&m->ops);
	}
	mark(m, 2);
	if (rc == MODEL_OK && m->ddp)
		rc = ddp_finish_backward(m);   /* the optimizer waits for the average */
	if (rc == MODEL_OK && c->mode == ST_MODE_TRAIN) {
		op_range_push(&m->ops, "optimizer");
		rc = model_optimizer(m);
		op_range_pop(&m->ops);
	}
	mark(m, 3);
	op_ranges_unwind(&m->ops, 0);    /* pops "step", and whatever a failure left open */
	return rc;
}

/*
 * --kernels fused: the first step after the weights or the batch changed
 * runs eagerly (it casts the weight copies, and leaves every block the step
 * needs in the allocator's cache, so the next makes no allocation); the
 * second is captured into a graph and launched; later ones only launch it,
 * after AdamW's host part. A recording sees the capture as an eager step
 * (op_begin/op_end, NVTX ranges and allocations as the host runs each op),
 * which the recorder uses to map each graph node to its op (record/
 * capture.c); a replayed step calls only step_begin and step_end. Data
 * parallelism (--ddp), whose all-reduces the host starts on a stream of
 * their own as gradients become final, runs every step eagerly, and so
 * does a model told model_set_graphs(m, false).
 */
static int step_graph(struct model *m)
{
	cudaGraph_t graph = NULL;
	cudaError_t e;
	int rc;

	if (m->graph) {
		if (m->c.mode == ST_MODE_TRAIN)
			model_optimizer_prepare(m);
		return CUDA_CHECK(cudaGraphLaunch(m->graph, m->stream)) ? MODEL_ERROR : MODEL_OK;
	}
	if (CUDA_CHECK(cudaStreamBeginCapture(m->stream, cudaStreamCaptureModeThreadLocal)))
		return MODEL_ERROR;
	m->capturing = true;
	rc = step_phases(m);
	m->capturing = false;
	e = cudaStreamEndCapture(m->stream, &graph);
	if (rc != MODEL_OK) {
		if (graph)
			cudaGraphDestroy(graph);
		cudaGetLastError();
		return rc;
	}
	if (cuda_check_at(e, "cudaStreamEndCapture", __FILE__, __LINE__))
		return MODEL_ERROR;
	e = cudaGraphInstantiate(&m->graph, graph, 0);
	cudaGraphDestroy(graph);
	if (cuda_check_at(e, "cudaGraphInstantiate", __FILE__, __LINE__)) {
		m->graph = NULL;
		return MODEL_ERROR;
	}
	return CUDA_CHECK(cudaGraphLaunch(m->graph, m->stream)) ? MODEL_ERROR : MODEL_OK;
}

void model_set_graphs(struct model *m, bool on)
{
	if (m->no_graphs != !on)
		graph_reset(m);
	m->no_graphs = !on;
}

int model_step(struct model *m, uint32_t index, bool warmup, struct model_step_times *t)
{
	const struct model_config *c = &m->c;
	struct timespec t0, tl, t1;
	/* data parallelism's all-reduces run on a stream of their own, started from the host */
	bool graph = m->fused && !m->no_graphs && !m->ddp && m->steps_run > 0;
	int rc;

	if (c->ddp != ST_DDP_NONE && !m->ddp)
		return error("--ddp %s needs the rank's communicator (model_set_comm)",
			     st_name(st_ddp_names, c->ddp));
	if (ddp_step_begin(m, index))
		return MODEL_ERROR;
	if (m->ops.obs)
		m->ops.obs->step_begin(m->ops.obs->ctx, index, warmup);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	rc = graph ? step_graph(m) : step_phases(m);
	if (rc != MODEL_OK) {
		release_step_blocks(m);
		graph_reset(m);   /* its blocks are gone: eager, then a fresh capture */
		if (rc == MODEL_OOM)
			m->last_oom = m->alloc.oom;
	}
	clock_gettime(CLOCK_MONOTONIC, &tl);
	int sync_failed = m->ddp ? ddp_sync(m, "the step") : CUDA_CHECK(cudaStreamSynchronize(m->stream));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	if (m->ops.obs)
		m->ops.obs->step_end(m->ops.obs->ctx, index, warmup);
	if (sync_failed)
		return MODEL_ERROR;
	if (rc != MODEL_OK)
		return rc;
	m->steps_run++;
	if (t) {
		t->forward_ms = elapsed_ms(m->ev[0], m->ev[1]);
		t->backward_ms = elapsed_ms(m->ev[1], m->ev[2]);
		t->optimizer_ms = elapsed_ms(m->ev[2], m->ev[3]);
		t->wall_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
		t->launch_ms = (tl.tv_sec - t0.tv_sec) * 1e3 + (tl.tv_nsec - t0.tv_nsec) / 1e6;
		t->loss = m->have_targets ? (double)*m->loss_host : NAN;
		t->comm_ms = t->exposed_ms = 0;
		if (m->ddp)
			ddp_step_times(m, t);
	}
	return MODEL_OK;
}

const struct model_oom *model_last_oom(const struct model *m)
{
	return &m->last_oom;
}

uint64_t model_peak_bytes(const struct model *m)
{
	return m->alloc.peak;
}
