/* params.c: see params.h. */
#include "model/params.h"

#include <stdio.h>

#include "lib/error.h"

static const char *const layer_param_names[P_PER_LAYER] = {
	"ln1.weight", "attn.q_proj.weight", "attn.k_proj.weight", "attn.v_proj.weight",
	"attn.output_proj.weight", "ln2.weight", "ffn.w1.weight", "ffn.w2.weight", "ffn.w3.weight",
};

int model_param_count(const struct model_config *c)
{
	return 3 + P_PER_LAYER * c->layers;
}

int model_param_info(const struct model_config *c, int index, char *name, size_t cap,
		     int *ndim, int64_t shape[2])
{
	int64_t d = c->d_model, ff = c->d_ff;
	int last = 1 + P_PER_LAYER * c->layers;

	*ndim = 2;
	shape[0] = c->vocab;
	shape[1] = d;
	if (index < 0 || index >= model_param_count(c))
		return -1;
	if (index == 0) {
		snprintf(name, cap, "token_embeddings.weight");
	} else if (index == last) {
		snprintf(name, cap, "ln_final.weight");
		*ndim = 1;
		shape[0] = d;
	} else if (index == last + 1) {
		snprintf(name, cap, "lm_head.weight");
	} else {
		int layer = (index - 1) / P_PER_LAYER, which = (index - 1) % P_PER_LAYER;

		snprintf(name, cap, "layers.%d.%s", layer, layer_param_names[which]);
		shape[0] = shape[1] = d;
		if (which == P_LN1 || which == P_LN2)
			*ndim = 1;
		else if (which == P_W1 || which == P_W3)
			shape[0] = ff;
		else if (which == P_W2)
			shape[1] = ff;
	}
	return 0;
}

int model_params_check(const struct model_config *c, const struct tensor_set *s,
		       unsigned dtype_mask, const char *what)
{
	int i, n = model_param_count(c), ndim, k;
	int64_t shape[2];
	char name[96];

	for (i = 0; i < n; i++) {
		const struct named_tensor *t;
		int same;

		if (model_param_info(c, i, name, sizeof(name), &ndim, shape))
			return error("%s: no parameter %d", what, i);
		t = tensor_set_find(s, name);
		if (!t)
			return error("%s: missing tensor '%s'", what, name);
		same = t->ndim == ndim;
		for (k = 0; same && k < ndim; k++)
			same = t->shape[k] == shape[k];
		if (!same) {
			if (ndim == 1)
				return error("%s: tensor '%s' should have shape (%lld)", what, name,
						(long long)shape[0]);
			return error("%s: tensor '%s' should have shape (%lld, %lld)", what,
					name, (long long)shape[0], (long long)shape[1]);
		}
		if ((unsigned)t->dtype > 31 || !(dtype_mask & (1u << t->dtype)))
			return error("%s: tensor '%s' has an unexpected dtype (%s)", what, name,
					tensor_dtype_name(t->dtype));
	}
	return 0;
}
