/* config.c: model presets, sizes and validation (see config.h). */
#include "model/config.h"

#include <stdio.h>
#include <string.h>

#include "lib/error.h"

struct preset {
	const char *name;
	int d_model, d_ff, layers, heads;
};

/* SPEC.md, "The workload": the seeds' model sizes. */
static const struct preset presets[] = {
	{ "small", 768, 3072, 12, 12 },
	{ "medium", 1024, 4096, 24, 16 },
	{ "large", 1280, 5120, 36, 20 },
	{ "xl", 1600, 6400, 48, 25 },
	{ "2.7B", 2560, 10240, 32, 32 },
};

static void config_defaults(struct model_config *c)
{
	memset(c, 0, sizeof(*c));
	c->batch = 4;
	c->vocab = 10000;
	c->ctx = 128;
	c->precision = ST_FP32;
	c->mode = ST_MODE_TRAIN;
	c->attention = ST_ATTN_NAIVE;
	c->lr = 1e-3;
	c->beta1 = 0.9;
	c->beta2 = 0.999;
	c->eps = 1e-8;
	c->weight_decay = 0.01;
	c->seed = 0;
	c->ddp = ST_DDP_NONE;
	c->bucket_mb = 25;   /* PyTorch DDP's bucket_cap_mb */
	c->sm_carveout = 0;
	c->nccl_ctas = 0;
	c->allreduce = MODEL_ALLREDUCE_NCCL;
}

const char *const model_allreduce_names[] = { "nccl", "ce", "exchange", NULL };

int model_config_overlaps(const struct model_config *c)
{
	return st_ddp_overlaps(c->ddp);
}

void model_config_ddp_defaults(struct model_config *c)
{
	int on = model_config_overlaps(c) && c->allreduce == MODEL_ALLREDUCE_NCCL;

	c->sm_carveout = on && c->precision == ST_BF16 ? MODEL_SM_CARVEOUT : 0;
	c->nccl_ctas = on ? MODEL_NCCL_CTAS : 0;
}

enum st_attention model_config_default_attention(const struct model_config *c)
{
	int dh = c->heads > 0 ? c->d_model / c->heads : 0;

	if (c->kernels == ST_KERNELS_FUSED && c->precision == ST_BF16 && dh >= 8 && dh <= 256 &&
	    dh % 8 == 0)
		return ST_ATTN_FLASH;
	return ST_ATTN_NAIVE;
}

int model_config_preset(const char *name, struct model_config *c)
{
	size_t i;

	if (!name)
		return error("missing model name");
	for (i = 0; i < sizeof(presets) / sizeof(presets[0]); i++) {
		const struct preset *p = &presets[i];

		if (strcmp(name, p->name))
			continue;
		config_defaults(c);
		snprintf(c->name, sizeof(c->name), "%s", p->name);
		c->d_model = p->d_model;
		c->d_ff = p->d_ff;
		c->layers = p->layers;
		c->heads = p->heads;
		return 0;
	}
	return error("unknown model '%s' (expected small, medium, large, xl, 2.7B or custom sizes)",
			name);
}

int model_config_validate(const struct model_config *c)
{
	const char *name = c->name[0] ? c->name : "custom";

	if (c->d_model <= 0 || c->d_ff <= 0 || c->layers <= 0 || c->heads <= 0 ||
	    c->vocab <= 0 || c->batch <= 0 || c->ctx <= 0)
		return error("model '%s': sizes must be positive (d_model %d, d_ff %d, layers %d, "
				"heads %d, vocab %d, batch %d, ctx %d)", name, c->d_model, c->d_ff,
				c->layers, c->heads, c->vocab, c->batch, c->ctx);
	if (c->d_model % c->heads)
		return error("model '%s': d_model %d is not divisible by %d heads",
				name, c->d_model, c->heads);
	if ((c->d_model / c->heads) % 2)
		return error("model '%s': head size %d is odd; RoPE needs an even head size",
				name, c->d_model / c->heads);
	if (!(c->lr >= 0) || !(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1) ||
	    !(c->eps > 0) || !(c->weight_decay >= 0))
		return error("model '%s': bad AdamW settings (lr %g, betas %g/%g, eps %g, wd %g)",
				name, c->lr, c->beta1, c->beta2, c->eps, c->weight_decay);
	if (c->ddp != ST_DDP_NONE && c->mode == ST_MODE_FORWARD)
		return error("--ddp %s averages gradients: it needs --mode fwdbwd or train",
			     st_name(st_ddp_names, c->ddp));
	if (c->ddp == ST_DDP_BUCKET && !(c->bucket_mb > 0 && c->bucket_mb < 1e6))
		return error("--bucket-mb must be above 0, not %g", c->bucket_mb);
	if (c->sm_carveout < 0 || c->sm_carveout > 1024)
		return error("--sm-carveout must be between 0 and 1024, not %d", c->sm_carveout);
	if (c->nccl_ctas < 0 || c->nccl_ctas > 1024)
		return error("--nccl-ctas must be between 0 and 1024, not %d", c->nccl_ctas);
	return 0;
}

uint64_t model_config_params(const struct model_config *c)
{
	uint64_t d = (uint64_t)c->d_model, ff = (uint64_t)c->d_ff, v = (uint64_t)c->vocab;
	uint64_t layer = 4 * d * d + 3 * d * ff + 2 * d;

	return v * d + (uint64_t)c->layers * layer + d + d * v;
}

int model_config_resolve(const char *name, const struct model_dims *dims, struct model_config *c)
{
	const struct model_dims none = { 0 };
	int custom;

	if (!dims)
		dims = &none;
	custom = name ? !strcmp(name, "custom") : dims->d_model > 0;
	if (custom) {
		config_defaults(c);
		snprintf(c->name, sizeof(c->name), "custom");
		if (dims->d_model <= 0 || dims->layers <= 0 || dims->heads <= 0)
			return error("custom model needs --d-model, --layers and --heads");
		c->d_ff = 4 * dims->d_model;
	} else if (model_config_preset(name ? name : "small", c)) {
		return -1;
	}
#define OVERRIDE(field) if (dims->field > 0) c->field = dims->field
	OVERRIDE(d_model);
	OVERRIDE(d_ff);
	OVERRIDE(layers);
	OVERRIDE(heads);
	OVERRIDE(vocab);
	OVERRIDE(batch);
	OVERRIDE(ctx);
#undef OVERRIDE
	if (dims->d_model < 0 || dims->d_ff < 0 || dims->layers < 0 || dims->heads < 0 ||
	    dims->vocab < 0 || dims->batch < 0 || dims->ctx < 0)
		return error("model sizes must be positive");
	return model_config_validate(c);
}
