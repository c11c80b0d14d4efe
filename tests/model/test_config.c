/* Model presets, parameter counts (SPEC.md's table), validation and names. */
#include <string.h>

#include "tests/lib/check.h"
#include "lib/error.h"
#include "lib/options.h"
#include "model/config.h"
#include "model/params.h"

static const struct {
	const char *name;
	int d_model, d_ff, layers, heads;
	unsigned long long params;
} spec_table[] = {
	{ "small", 768, 3072, 12, 12, 128625408ull },
	{ "medium", 1024, 4096, 24, 16, 423183360ull },
	{ "large", 1280, 5120, 36, 20, 969411840ull },
	{ "xl", 1600, 6400, 48, 25, 1998235200ull },
	{ "2.7B", 2560, 10240, 32, 32, 3406809600ull },
};

/* The sum of model_param_info's shapes must agree with the formula. */
static unsigned long long params_by_shapes(const struct model_config *c)
{
	unsigned long long total = 0;
	int i, ndim;
	int64_t shape[2];
	char name[96];

	for (i = 0; i < model_param_count(c); i++) {
		model_param_info(c, i, name, sizeof(name), &ndim, shape);
		total += ndim == 1 ? (unsigned long long)shape[0]
				   : (unsigned long long)shape[0] * (unsigned long long)shape[1];
	}
	return total;
}

int main(void)
{
	struct model_config c;
	int p, m, a;
	FILE *sink = fopen("/dev/null", "w");
	size_t i;

	for (i = 0; i < sizeof(spec_table) / sizeof(spec_table[0]); i++) {
		CHECK(model_config_preset(spec_table[i].name, &c) == 0, "%s", spec_table[i].name);
		CHECK(c.d_model == spec_table[i].d_model && c.d_ff == spec_table[i].d_ff &&
		      c.layers == spec_table[i].layers && c.heads == spec_table[i].heads,
		      "%s sizes", spec_table[i].name);
		CHECK(!strcmp(c.name, spec_table[i].name), "%s name", c.name);
		CHECK(c.batch == 4 && c.vocab == 10000 && c.ctx == 128, "%s defaults", c.name);
		CHECK(c.precision == ST_FP32 && c.mode == ST_MODE_TRAIN &&
		      c.attention == ST_ATTN_NAIVE, "%s default modes", c.name);
		CHECK(c.lr == 1e-3 && c.beta1 == 0.9 && c.beta2 == 0.999 && c.eps == 1e-8 &&
		      c.weight_decay == 0.01, "%s adamw defaults", c.name);
		CHECK(model_config_params(&c) == spec_table[i].params, "%s: %llu != %llu", c.name,
		      (unsigned long long)model_config_params(&c), spec_table[i].params);
		CHECK(params_by_shapes(&c) == spec_table[i].params, "%s shapes: %llu", c.name,
		      params_by_shapes(&c));
		CHECK(model_config_validate(&c) == 0, "%s validates", c.name);
	}

	/* --sm-carveout and --nccl-ctas by ddp and precision */
	{
		static const struct {
			int ddp, precision, carveout, ctas;
		} want[] = {
			{ ST_DDP_BUCKET, ST_BF16, MODEL_SM_CARVEOUT, MODEL_NCCL_CTAS },
			{ ST_DDP_OVERLAP, ST_BF16, MODEL_SM_CARVEOUT, MODEL_NCCL_CTAS },
			{ ST_DDP_BUCKET, ST_FP32, 0, MODEL_NCCL_CTAS },
			{ ST_DDP_BUCKET, ST_TF32, 0, MODEL_NCCL_CTAS },
			{ ST_DDP_NAIVE, ST_BF16, 0, 0 },
			{ ST_DDP_FLAT, ST_BF16, 0, 0 },
			{ ST_DDP_NONE, ST_BF16, 0, 0 },
		};

		for (i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
			model_config_preset("small", &c);
			c.ddp = (enum st_ddp)want[i].ddp;
			c.precision = (enum st_precision)want[i].precision;
			c.sm_carveout = c.nccl_ctas = -7;   /* overwritten */
			model_config_ddp_defaults(&c);
			CHECK(c.sm_carveout == want[i].carveout && c.nccl_ctas == want[i].ctas,
			      "ddp %d precision %d: %d, %d", want[i].ddp, want[i].precision, c.sm_carveout,
			      c.nccl_ctas);
		}
	}

	error_set_stream(sink);
	CHECK(model_config_preset("huge", &c) == -1, "unknown preset");
	model_config_preset("small", &c);
	c.heads = 7;
	CHECK(model_config_validate(&c) == -1, "d_model not divisible by heads");
	c.d_model = 7 * 3;
	CHECK(model_config_validate(&c) == -1, "odd head size");
	c.d_model = 7 * 4;
	CHECK(model_config_validate(&c) == 0, "custom sizes");
	c.ctx = 0;
	CHECK(model_config_validate(&c) == -1, "zero ctx");
	c.ctx = 16;
	c.beta2 = 1.0;
	CHECK(model_config_validate(&c) == -1, "beta2 of 1");

	{
		struct model_dims d = { 0 };

		CHECK(model_config_resolve(NULL, &d, &c) == 0 && !strcmp(c.name, "small"), "default");
		d.ctx = 512, d.vocab = 50257;
		CHECK(model_config_resolve("large", &d, &c) == 0 && c.d_model == 1280 && c.ctx == 512 &&
		      c.vocab == 50257, "preset with overrides");
		d.d_model = 64, d.layers = 2, d.heads = 4;
		CHECK(model_config_resolve(NULL, &d, &c) == 0 && !strcmp(c.name, "custom") &&
		      c.d_ff == 256 && c.layers == 2, "custom, d_ff 4 d_model");
		d.layers = 0;
		CHECK(model_config_resolve("custom", &d, &c) == -1, "custom without layers");
		d.layers = 2, d.heads = 5;
		CHECK(model_config_resolve("custom", &d, &c) == -1, "64 / 5 heads");
		d.heads = 4, d.batch = -1;
		CHECK(model_config_resolve("custom", &d, &c) == -1, "negative batch");
	}
	/* the attention --kernels implies: flash for fused bf16 where FlashAttention runs d_head */
	model_config_preset("small", &c);
	CHECK(c.kernels == ST_KERNELS_PLAIN && model_config_default_attention(&c) == ST_ATTN_NAIVE,
	      "plain: naive");
	c.kernels = ST_KERNELS_FUSED;
	CHECK(model_config_default_attention(&c) == ST_ATTN_NAIVE, "fused fp32: naive");
	c.precision = ST_BF16;
	CHECK(model_config_default_attention(&c) == ST_ATTN_FLASH, "fused bf16, d_head 64: flash");
	c.d_model = 12 * 20;   /* d_head 20: not a multiple of 8 */
	CHECK(model_config_default_attention(&c) == ST_ATTN_NAIVE, "fused, d_head 20: naive");
	c.d_model = 12 * 512;  /* d_head 512: over 256 */
	CHECK(model_config_default_attention(&c) == ST_ATTN_NAIVE, "fused, d_head 512: naive");
	CHECK(parse_choice("fused", st_kernels_names, "--kernels", &p) == 0 &&
	      p == ST_KERNELS_FUSED, "fused");
	CHECK(parse_choice("fast", st_kernels_names, "--kernels", &p) == -1, "fast unknown");
	CHECK(parse_choice("bf16", st_precision_names, "--precision", &p) == 0 && p == ST_BF16,
	      "bf16");
	CHECK(parse_choice("tf32", st_precision_names, "--precision", &p) == 0 && p == ST_TF32,
	      "tf32");
	CHECK(parse_choice("fp16", st_precision_names, "--precision", &p) == -1, "fp16 unknown");
	CHECK(parse_choice("fwdbwd", st_mode_names, "--mode", &m) == 0 && m == ST_MODE_FWDBWD,
	      "fwdbwd");
	CHECK(parse_choice("forward", st_mode_names, "--mode", &m) == 0 && m == ST_MODE_FORWARD,
	      "forward");
	CHECK(parse_choice("backward", st_mode_names, "--mode", &m) == -1, "backward unknown");
	CHECK(parse_choice("flash", st_attention_names, "--attention", &a) == 0 &&
	      a == ST_ATTN_FLASH, "flash");
	CHECK(parse_choice("", st_attention_names, "--attention", &a) == -1, "empty attention");
	CHECK(!strcmp(st_name(st_precision_names, ST_FP32), "fp32"), "fp32 name");
	CHECK(!strcmp(st_name(st_mode_names, ST_MODE_TRAIN), "train"), "train name");
	CHECK(!strcmp(st_name(st_attention_names, ST_ATTN_NAIVE), "naive"), "naive name");
	CHECK(!strcmp(st_name(st_mode_names, 9), "?"), "out of range");
	error_set_stream(NULL);
	fclose(sink);
	return check_done("model_config");
}
