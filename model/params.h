/*
 * params.h: the model's parameters as PyTorch names and orders them
 * (its state dict), and the check that a tensor set holds every one with
 * its shape: what `steptrace step --weights` reads and the CPU reference
 * computes with. The GPU step keeps its own memory layout (model.c) and
 * finds its tensors by these names.
 *
 * Order: token_embeddings.weight (vocab, d), then per layer N:
 * layers.N.ln1.weight (d), layers.N.attn.{q,k,v,output}_proj.weight (d, d),
 * layers.N.ln2.weight (d), layers.N.ffn.w1.weight (d_ff, d),
 * layers.N.ffn.w2.weight (d, d_ff), layers.N.ffn.w3.weight (d_ff, d); then
 * ln_final.weight (d) and lm_head.weight (vocab, d).
 */
#ifndef STEPTRACE_MODEL_PARAMS_H
#define STEPTRACE_MODEL_PARAMS_H

#include <stddef.h>
#include <stdint.h>

#include "model/config.h"
#include "model/tensors.h"

/* One layer's parameters in order: layer N's k-th is index 1 + P_PER_LAYER * N + k. */
enum layer_param { P_LN1, P_Q, P_K, P_V, P_O, P_LN2, P_W1, P_W2, P_W3, P_PER_LAYER };

/* 3 + P_PER_LAYER * layers. */
int model_param_count(const struct model_config *c);
/*
 * The name (NUL terminated, truncated to cap), ndim (1 or 2) and shape of
 * parameter `index`; -1 if index is out of range.
 */
int model_param_info(const struct model_config *c, int index, char *name, size_t cap,
		     int *ndim, int64_t shape[2]);
/*
 * Checks that `s` holds every parameter with its shape and a dtype in the
 * mask (bit 1 << ST_DT_x). Extra tensors are ignored. -1 with an error line
 * naming `what` ("weights 'w.safetensors'") and the first offending tensor.
 */
int model_params_check(const struct model_config *c, const struct tensor_set *s,
		       unsigned dtype_mask, const char *what);

#endif
