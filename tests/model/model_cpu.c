/*
 * model_cpu.c: model.h implemented on the CPU reference, for tests only.
 * It lets `steptrace step` and `steptrace bench` (cmd_step.c, cmd_bench.c)
 * run in CI without a GPU, and gives a CPU `step` whose output
 * scripts/torch_check.py can compare with PyTorch.
 *
 * Test knobs (environment):
 *   ST_TEST_NO_GPU=1            model_gpu_available() says no
 *   ST_TEST_DEVICE_BYTES=N      "device" capacity (default 1 GiB): model_create
 *                               returns MODEL_OOM when the estimate exceeds it
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lib/error.h"
#include "model/allreduce_bench.h"
#include "model/attention_bench.h"
#include "model/contention_bench.h"
#include "model/model.h"
#include "tests/lib/reference.h"
#include "trace/types.h"

struct model {
	struct model_config c;
	struct tensor_set w, g, m, v;  /* w F32; g, m, v F64 */
	int32_t *inputs, *targets;
	int t;                          /* AdamW steps taken */
	uint64_t bytes;
	struct model_oom oom;
};

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static uint64_t capacity(void)
{
	const char *s = getenv("ST_TEST_DEVICE_BYTES");

	return s && *s ? strtoull(s, NULL, 10) : 1ull << 30;
}

int model_gpu_available(void)
{
	const char *s = getenv("ST_TEST_NO_GPU");

	if (s && *s == '1') {
		error("no CUDA device found: this command needs an NVIDIA GPU");
		return 0;
	}
	return 1;
}

int model_create(struct model **out, const struct model_config *c,
		 const struct model_observer *obs, struct model_oom *oom)
{
	size_t n = (size_t)c->batch * c->ctx;
	uint64_t need = 4 * 8 * model_config_params(c) +
			8ull * n * (12ull * c->d_model + 3ull * c->d_ff + c->vocab) * c->layers +
			8ull * (uint64_t)c->batch * c->heads * c->ctx * c->ctx * c->layers;
	struct model *m;

	*out = NULL;
	if (model_config_validate(c))
		return MODEL_ERROR;
	if (need > capacity()) {
		memset(oom, 0, sizeof(*oom));
		oom->requested = need;
		oom->category = 0;
		snprintf(oom->op, sizeof(oom->op), "setup/parameters");
		oom->capacity = capacity();
		return MODEL_OOM;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return MODEL_ERROR;
	m->c = *c;
	m->bytes = need;
	tensor_set_init(&m->w), tensor_set_init(&m->g);
	tensor_set_init(&m->m), tensor_set_init(&m->v);
	m->inputs = calloc(n, sizeof(int32_t));
	m->targets = calloc(n, sizeof(int32_t));
	if (!m->inputs || !m->targets) {
		model_free(m);
		return MODEL_ERROR;
	}
	*out = m;
	return MODEL_OK;
}

int model_init_random(struct model *m, uint64_t seed)
{
	return ref_init_weights(&m->c, seed, &m->w) ? MODEL_ERROR : MODEL_OK;
}

int model_load_weights(struct model *m, const struct tensor_set *w)
{
	size_t i;

	if (model_params_check(&m->c, w, 1u << ST_DT_F32, "weights"))
		return MODEL_ERROR;
	tensor_set_release(&m->w);
	for (i = 0; i < w->n; i++)
		if (!tensor_set_add(&m->w, w->t[i].name, w->t[i].dtype, w->t[i].ndim, w->t[i].shape,
				    w->t[i].data))
			return MODEL_ERROR;
	return MODEL_OK;
}

int model_set_batch(struct model *m, const int32_t *inputs, const int32_t *targets)
{
	size_t n = (size_t)m->c.batch * m->c.ctx;

	memcpy(m->inputs, inputs, n * sizeof(int32_t));
	memcpy(m->targets, targets, n * sizeof(int32_t));
	return MODEL_OK;
}

int model_random_batch(struct model *m, uint64_t seed)
{
	size_t n = (size_t)m->c.batch * m->c.ctx;

	ref_random_tokens(seed * 2 + 1, n, m->c.vocab, m->inputs);
	ref_random_tokens(seed * 2 + 2, n, m->c.vocab, m->targets);
	return MODEL_OK;
}

int model_step(struct model *m, uint32_t index, bool warmup, struct model_step_times *t)
{
	double t0 = now_ms(), t1, t2;

	memset(t, 0, sizeof(*t));
	if (ref_forward_backward(&m->c, &m->w, m->inputs, m->targets, &t->loss,
				 m->c.mode == ST_MODE_FORWARD ? NULL : &m->g))
		return MODEL_ERROR;
	t1 = now_ms();
	if (m->c.mode == ST_MODE_TRAIN && ref_adamw(&m->c, &m->w, &m->g, &m->m, &m->v, ++m->t))
		return MODEL_ERROR;
	t2 = now_ms();
	t->forward_ms = (t1 - t0) / 3;
	t->backward_ms = m->c.mode == ST_MODE_FORWARD ? 0 : 2 * (t1 - t0) / 3;
	t->optimizer_ms = t2 - t1;
	t->wall_ms = t2 - t0;
	t->launch_ms = t->wall_ms;   /* the CPU does the work as it "launches" it */
	return MODEL_OK;
}

const struct model_oom *model_last_oom(const struct model *m)
{
	return &m->oom;
}

int model_export(struct model *m, struct tensor_set *weights, struct tensor_set *grads)
{
	size_t i, j;

	tensor_set_release(weights);
	for (i = 0; i < m->w.n; i++) {
		const struct named_tensor *t = &m->w.t[i];

		if (!tensor_set_add(weights, t->name, t->dtype, t->ndim, t->shape, t->data))
			return MODEL_ERROR;
	}
	if (!grads)
		return MODEL_OK;
	tensor_set_release(grads);
	for (i = 0; i < m->g.n; i++) {
		const struct named_tensor *t = &m->g.t[i];
		struct named_tensor *o = tensor_set_add(grads, t->name, ST_DT_F32, t->ndim, t->shape, NULL);

		if (!o)
			return MODEL_ERROR;
		for (j = 0; j < (size_t)named_tensor_numel(t); j++)
			((float *)o->data)[j] = (float)((const double *)t->data)[j];
	}
	return MODEL_OK;
}

uint64_t model_peak_bytes(const struct model *m)
{
	return m->bytes;
}

void model_free(struct model *m)
{
	if (!m)
		return;
	tensor_set_release(&m->w), tensor_set_release(&m->g);
	tensor_set_release(&m->m), tensor_set_release(&m->v);
	free(m->inputs);
	free(m->targets);
	free(m);
}

/* Data parallelism needs NCCL and GPUs; the CPU tests build with comm_none.c, so no
 * communicator ever reaches these. */
int model_set_comm(struct model *m, struct comm *comm)
{
	return error("the CPU stand-in of the model has no data parallelism");
}

int model_agree(struct model *m, int *flag)
{
	return MODEL_OK;
}

int allreduce_bench_run(struct comm *comm, const struct allreduce_opts *o, struct report *rep,
			uint64_t *wrong)
{
	return error("the CPU stand-in of the model runs no all-reduce");
}

int contention_bench_run(struct comm *comm, const struct contention_opts *o, struct report *rep,
			 struct contention_calibration *cal)
{
	return error("the CPU stand-in of the model runs no all-reduce");
}

/* `bench attention` needs the GPU: here only its command line is tested. */
int attn_bench_check(const struct attn_config *c, size_t n)
{
	return 0;
}

int attn_bench_run(const struct attn_bench_opts *o, struct report *rep,
		   struct attn_bench_totals *t)
{
	memset(t, 0, sizeof(*t));
	return error("the CPU stand-in of the model runs no attention sweep");
}
