/*
 * config.h: the shape and run settings of the CS336 "basics" Transformer LM
 * (SPEC.md, "The workload"), shared by the GPU step, the CPU reference, bench,
 * step and record.
 */
#ifndef STEPTRACE_MODEL_CONFIG_H
#define STEPTRACE_MODEL_CONFIG_H

#include <stdint.h>

#include "trace/types.h"

struct model_config {
	char name[32];        /* "small", ..., or "custom" */
	int d_model, d_ff, layers, heads, vocab, batch, ctx;
	enum st_precision precision;
	enum st_mode mode;
	enum st_attention attention;
	enum st_kernels kernels;
	/* AdamW */
	double lr, beta1, beta2, eps, weight_decay;
	uint64_t seed;
	/* several GPUs: how gradients are averaged over the ranks (model_set_comm) */
	enum st_ddp ddp;      /* ST_DDP_NONE: one process */
	double bucket_mb;     /* ST_DDP_BUCKET's bucket size, MB of 2^20 bytes (default 25) */
	/*
	 * With collectives beside the backward (ST_DDP_OVERLAP, ST_DDP_BUCKET):
	 * the SMs the matrix products leave to them while one runs (cuBLASLt's
	 * SM count target: the device's SMs less sm_carveout), and the CTAs
	 * NCCL may use per collective (0: NCCL's choice). Hopper's products are
	 * persistent, one CTA per SM: beside NCCL's CTAs a full-width product
	 * runs in two waves (docs/multi-gpu.md). Under FP32 the carve-out
	 * only took SMs away (2 H100s: small 1.06 -> 1.10x one GPU), so its
	 * default is 0 there, and under TF32 (not measured).
	 */
	int sm_carveout;      /* default MODEL_SM_CARVEOUT there under BF16, else 0 */
	int nccl_ctas;        /* default MODEL_NCCL_CTAS there, else 0 */
	/*
	 * How the gradients' all-reduces run: MODEL_ALLREDUCE_NCCL, NCCL's
	 * kernels; MODEL_ALLREDUCE_CE, the copy engines and one short kernel
	 * per collective (model/ddp_ce.h; every rank on one host), beside
	 * which the products keep every SM (sm_carveout then caps that
	 * kernel's CTAs, 0: uncapped); MODEL_ALLREDUCE_EXCHANGE, the copy
	 * engines copy each bucket whole to every peer and AdamW averages
	 * the ranks' copies (no kernel beside the backward).
	 */
	int allreduce;
};

enum { MODEL_ALLREDUCE_NCCL, MODEL_ALLREDUCE_CE, MODEL_ALLREDUCE_EXCHANGE };
extern const char *const model_allreduce_names[];   /* "nccl", "ce", "exchange" */

#define MODEL_SM_CARVEOUT 28
#define MODEL_NCCL_CTAS 12

/* 1 when c's collectives run beside its backward (--ddp overlap, bucket). */
int model_config_overlaps(const struct model_config *c);

/*
 * sm_carveout and nccl_ctas as c's ddp, precision and allreduce imply:
 * where NCCL's collectives overlap, MODEL_SM_CARVEOUT under BF16 (else 0)
 * and MODEL_NCCL_CTAS; elsewhere (the copy engines' included) 0 and 0.
 */
void model_config_ddp_defaults(struct model_config *c);

/* Defaults (batch 4, vocab 10000, ctx 128, fp32, train, naive, lr 1e-3,
 * betas 0.9/0.999, eps 1e-8, wd 0.01, seed 0, no data parallelism, buckets
 * of 25 MB) with the preset's sizes.
 * Presets: small medium large xl 2.7B. -1 (error line) for an unknown name. */
int model_config_preset(const char *name, struct model_config *c);

/*
 * The attention --kernels implies when --attention is not given: naive for
 * plain; for fused under BF16, flash where FlashAttention runs the head
 * size (a multiple of 8 from 8 to 256: kernels/flash_attention.h), else
 * naive. Under FP32 and TF32 flash computes in FP32 without tensor cores
 * and was slower than naive's cuBLAS products (H100, ctx 512: small 15.3
 * against 14.1 ms forward), so fused keeps naive there.
 */
enum st_attention model_config_default_attention(const struct model_config *c);

/* Checks sizes (positive, d_model divisible by heads, d_head even for RoPE), and
 * that data parallelism has a backward and a positive bucket size. -1 with an error line. */
int model_config_validate(const struct model_config *c);

/* Trainable parameters: embedding + per layer (4 d^2 + 3 d d_ff + 2 d) + final norm d + lm_head d*vocab.
 * small = 128,625,408 with vocab 10000. */
uint64_t model_config_params(const struct model_config *c);

/* Sizes given on a command line; 0 keeps the preset's (or default) value. */
struct model_dims {
	int d_model, d_ff, layers, heads, vocab, batch, ctx;
};

/*
 * A preset with any given sizes overriding it, or, for "custom" (or name
 * NULL with d_model given), the defaults with d_model, layers and heads
 * required and d_ff 4 * d_model unless given. name NULL with no sizes means
 * "small". Validated; -1 with an error line.
 */
int model_config_resolve(const char *name, const struct model_dims *dims, struct model_config *c);

#endif
