/* step_file.c: see step_file.h. */
#include "model/step_file.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/error.h"
#include "lib/output.h"
#include "model/model.h"
#include "model/params.h"
#include "model/tensors.h"
#include "trace/types.h"

/*
 * Reads "inputs" and "targets" (I32 or I64, (batch, ctx)) into token arrays,
 * checking shapes and that every id is in the vocabulary.
 */
static int batch_load(const char *path, const struct model_config *c, int32_t *inputs,
		      int32_t *targets)
{
	static const char *const names[] = { "inputs", "targets" };
	int32_t *dst[] = { inputs, targets };
	size_t n = (size_t)c->batch * c->ctx, i;
	struct tensor_set s;
	int k, ret = -1;

	if (safetensors_read(path, &s))
		return -1;
	for (k = 0; k < 2; k++) {
		const struct named_tensor *t = tensor_set_find(&s, names[k]);

		if (!t) {
			error("batch '%s': missing tensor '%s'", path, names[k]);
			goto release;
		}
		if (t->ndim != 2 || t->shape[0] != c->batch || t->shape[1] != c->ctx) {
			error("batch '%s': tensor '%s' should have shape (%d, %d) for --batch %d --ctx %d",
				 path, names[k], c->batch, c->ctx, c->batch, c->ctx);
			goto release;
		}
		if (t->dtype != ST_DT_I32 && t->dtype != ST_DT_I64) {
			error("batch '%s': tensor '%s' is %s, expected I32 or I64", path, names[k],
				 tensor_dtype_name(t->dtype));
			goto release;
		}
		for (i = 0; i < n; i++) {
			int64_t id = t->dtype == ST_DT_I32 ? ((const int32_t *)t->data)[i]
							   : ((const int64_t *)t->data)[i];

			if (id < 0 || id >= c->vocab) {
				error("batch '%s': %s[%zu] = %" PRId64 " is outside the vocabulary of %d",
					 path, names[k], i, id, c->vocab);
				goto release;
			}
			dst[k][i] = (int32_t)id;
		}
	}
	ret = 0;
release:
	tensor_set_release(&s);
	return ret;
}

/* The output file: loss, then gradients ("grad.<name>"), then weights. */
static int step_write(const char *path, const struct model_config *c, double loss,
		      const struct model_step_times *t, struct tensor_set *w, struct tensor_set *g)
{
	struct tensor_set out;
	float l = (float)loss;
	char cfg[320], times[128], name[160];
	const char *meta[] = { "format", "pt", "producer", "steptrace step", "config", cfg,
			       "times_ms", times, NULL };
	size_t i;
	int ret = -1;

	snprintf(cfg, sizeof(cfg),
		 "{\"d_model\":%d,\"d_ff\":%d,\"layers\":%d,\"heads\":%d,\"vocab\":%d,\"batch\":%d,"
		 "\"ctx\":%d,\"precision\":\"%s\",\"mode\":\"%s\",\"attention\":\"%s\","
		 "\"kernels\":\"%s\",\"lr\":%.17g,\"weight_decay\":%.17g}",
		 c->d_model, c->d_ff, c->layers, c->heads, c->vocab, c->batch, c->ctx,
		 st_name(st_precision_names, c->precision), st_name(st_mode_names, c->mode),
		 st_name(st_attention_names, c->attention), st_name(st_kernels_names, c->kernels),
		 c->lr, c->weight_decay);
	snprintf(times, sizeof(times), "{\"forward\":%.4f,\"backward\":%.4f,\"optimizer\":%.4f,\"wall\":%.4f}",
		 t->forward_ms, t->backward_ms, t->optimizer_ms, t->wall_ms);
	tensor_set_init(&out);
	if (!tensor_set_add(&out, "loss", ST_DT_F32, 0, NULL, &l))
		goto oom;
	for (i = 0; i < g->n; i++) {
		snprintf(name, sizeof(name), "grad.%s", g->t[i].name);
		if (!tensor_set_add(&out, name, g->t[i].dtype, g->t[i].ndim, g->t[i].shape, g->t[i].data))
			goto oom;
	}
	for (i = 0; i < w->n; i++)
		if (!tensor_set_add(&out, w->t[i].name, w->t[i].dtype, w->t[i].ndim, w->t[i].shape,
				    w->t[i].data))
			goto oom;
	ret = safetensors_write(path, &out, meta);
	goto release;
oom:
	error("out of memory assembling '%s'", path);
release:
	tensor_set_release(&out);
	return ret;
}

static void oom_report(const struct model_oom *oom)
{
	error("out of device memory: %.1f MiB requested by '%s' with %.2f GiB live of %.2f GiB",
		 oom->requested / 1048576.0, oom->op, oom->live / 1073741824.0,
		 oom->capacity / 1073741824.0);
}

int step_file_run(const struct step_file_opts *o, const struct model_config *c)
{
	size_t n = (size_t)c->batch * c->ctx;
	int32_t *inputs = NULL, *targets = NULL;
	struct tensor_set w, g;
	struct model_step_times t;
	struct model_oom oom;
	struct model *m = NULL;
	int ret = -1, rc;

	tensor_set_init(&w);
	tensor_set_init(&g);
	/* before any work: the output must not be one of the inputs */
	if (output_check_inputs(o->output, (const char *[]){ o->weights ? o->weights : "",
							    o->batch, NULL }) < 0)
		goto release;
	if (o->weights) {
		char what[600];

		snprintf(what, sizeof(what), "weights '%s'", o->weights);
		if (safetensors_read(o->weights, &w) || model_params_check(c, &w, 1u << ST_DT_F32, what))
			goto release;
	}
	if (o->batch) {
		inputs = malloc(n * sizeof(*inputs));
		targets = malloc(n * sizeof(*targets));
		if (!inputs || !targets) {
			error("out of memory for the batch");
			goto release;
		}
		if (batch_load(o->batch, c, inputs, targets))
			goto release;
	}

	rc = model_create(&m, c, NULL, &oom);
	if (rc == MODEL_OOM) {
		oom_report(&oom);
		goto release;
	}
	if (rc != MODEL_OK)
		goto release;
	if ((o->weights ? model_load_weights(m, &w) : model_init_random(m, c->seed)) != MODEL_OK)
		goto free_model;
	if ((o->batch ? model_set_batch(m, inputs, targets) : model_random_batch(m, c->seed)) !=
	    MODEL_OK)
		goto free_model;
	rc = model_step(m, 0, false, &t);
	if (rc == MODEL_OOM)
		oom_report(model_last_oom(m));
	if (rc != MODEL_OK)
		goto free_model;

	tensor_set_release(&w);
	if (model_export(m, &w, c->mode == ST_MODE_FORWARD ? NULL : &g) != MODEL_OK)
		goto free_model;
	if (step_write(o->output, c, t.loss, &t, &w, &g))
		goto free_model;
	fprintf(stderr, "step: %s %s %s: loss %.6f, forward %.3f ms, backward %.3f ms, "
		"optimizer %.3f ms, wall %.3f ms -> %s\n", c->name, st_name(st_precision_names, c->precision),
		st_name(st_mode_names, c->mode), t.loss, t.forward_ms, t.backward_ms, t.optimizer_ms,
		t.wall_ms, o->output);
	ret = 0;
free_model:
	model_free(m);
release:
	free(inputs);
	free(targets);
	tensor_set_release(&w);
	tensor_set_release(&g);
	return ret;
}
