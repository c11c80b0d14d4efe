/*
 * plan.h: `steptrace plan`, the seeds' parallelism accounting ("4D
 * Parallelism") from a model's sizes, each number with its formula:
 *
 *   state    (a) master weights, accumulated gradients and Adam's two
 *            moments in FP32 on one device: 16 B per parameter, in GB
 *            (10^9 B, the seeds' unit) and in devices of the chip
 *   fsdp     (b) memory per device under FSDP over N devices, weights,
 *            gradients, optimizer state and half of the activations
 *            sharded: 16·P/N + A/2 + A/(2N); the smallest N that fits
 *   compute  (c) the per-device batch (tokens) at which FSDP × TP is
 *            compute-bound in the forward pass, in the Scaling Book's
 *            notation (T_math ≥ T_FSDP + T_TP), and the overall batch
 *   parallel memory per device under DP, ZeRO-1, ZeRO-2 and ZeRO-3/FSDP
 *            of data-parallel degree D (--dp or --fsdp), with the
 *            parameters split over T × PP tensor and pipeline stages
 *            first, P' = P/(T·PP); activations per device from --batch
 *   comm     bytes each device moves per step for the gradients (and
 *            ZeRO-3's weights) over D, for tensor parallelism (Megatron's
 *            all-reduces of the activations) and pipeline parallelism (the
 *            activations and their gradients at a stage boundary), ring
 *            algorithm, BF16, and the time at W_ici: bus-bandwidth lower
 *            bounds; and the pipeline bubble (PP−1)/(M+PP−1)
 *
 * Precisions are the seeds': FP32 master weights, gradients and optimizer
 * state; BF16 activations and gradient communication.
 *
 * From a bundle (plan_measure), a `bundle` table says what was taken from
 * it: P (the run's parameters), the bytes live at the memory peak per
 * category (replay/memory.h, the view `steptrace memory` shows) and the
 * achieved FLOP/s (analyze/flops.h: the ops' FLOPs over their kernels' time
 * per measured step); then fsdp, parallel and comm use those bytes in place
 * of 16 B × P and the --batch activations, and compute adds the measured
 * rate beside the chip's peak. One rank's bundle of a multi-GPU run is that
 * rank's own memory (data parallelism replicates it), and D defaults to
 * the run's world size.
 */
#ifndef STEPTRACE_ANALYZE_PLAN_H
#define STEPTRACE_ANALYZE_PLAN_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/table.h"

/* The numbering of plan_chip_names ("h100", "h200", "tpu-v5p"). */
enum plan_chip { PLAN_CHIP_H100, PLAN_CHIP_H200, PLAN_CHIP_TPU_V5P };
extern const char *const plan_chip_names[];

struct plan_chip_spec {
	const char *label;    /* "H100 80GB" */
	double flops;         /* C: dense BF16 FLOP/s */
	double link;          /* W_ici: bytes/s a device sends along one mesh axis */
	uint64_t memory;      /* bytes */
};

/* The preset of a chip (enum plan_chip). */
const struct plan_chip_spec *plan_chip_spec(int chip);

/* What plan takes from a bundle (plan_measure). */
struct plan_measured {
	const char *path;
	uint64_t params;          /* P: run.config.parameters, else parameter bytes / 4 (FP32) */
	bool params_from_bytes;   /* P came from the parameter bytes */
	/* live at the memory peak, bytes */
	uint64_t peak;
	uint64_t weights, gradients, optimizer, activations, other;   /* other: temporaries, workspace, inputs, unknown */
	const char *view;         /* the memory view the peak is of */
	/* the measured rate: per measured step */
	double flops, kernel_ns;  /* the ops' FLOPs and their kernels' time */
	double achieved;          /* flops / kernel time, FLOP/s; 0 when unknown */
	double peak_flops;        /* the device's recorded peak at the run's precision, 0 unknown */
	const char *device;
	uint32_t rank, world_size;
	int act_bytes;            /* bytes of an activation value: 4 for fp32/tf32 runs, else 2 */
};

struct plan_opts {
	int d_model, d_ff, blocks;
	bool ffn_only;        /* the seeds' XXL: each block d_model×d_ff and d_ff×d_model, nothing else */
	uint64_t params;      /* the full model's (model_config_params); unused with ffn_only */
	int batch, seq;       /* per device; 0: no activations counted */
	int chip;             /* enum plan_chip */
	double flops, link;   /* 0: the chip's */
	uint64_t memory;      /* 0: the chip's */
	int fsdp;             /* X, N_FSDP; 0: the smallest that fits */
	int tp;               /* Y */
	int dp;               /* data-parallel degree of the parallel and comm tables; 0: --fsdp's, else 1 */
	int pp;               /* pipeline-parallel degree of the parallel and comm tables (1: none) */
	int mesh_x, mesh_y;   /* M_X, M_Y: mesh axes each of X and Y spans */
	int microbatches;     /* M, micro-batches of a pipeline step (the bubble); 0: 1 */
	const struct plan_measured *measured;   /* from a bundle, NULL: none */
	const char *section;  /* the one table printed (--section), whose notes alone are added; NULL: all */
};

/* Trainable parameters: blocks × 2 × d_model × d_ff with ffn_only, else o->params. */
uint64_t plan_params(const struct plan_opts *o);
/* BF16 activations saved for backward on one device, bytes (0 without --batch and --seq). */
double plan_activation_bytes(const struct plan_opts *o);
/* Bytes per device under FSDP of degree n: 16·P/n + A/2 + A/(2n). */
double plan_fsdp_bytes(const struct plan_opts *o, int n);
/* The smallest FSDP degree whose bytes per device fit `memory`; 0 when none does below 2^30. */
int plan_fsdp_min(const struct plan_opts *o, double memory);

/* The data-parallel degree D of the parallel and comm tables: --dp, else --fsdp, else 1. */
int plan_dp_degree(const struct plan_opts *o);
/* P' = P / (T·PP): the parameters one device holds a shard of before data parallelism. */
double plan_shard_params(const struct plan_opts *o);
/* BF16 activations on one device under T and PP: blocks/PP × B × S × (d_model + d_ff/T) × 2 B. */
double plan_parallel_activation_bytes(const struct plan_opts *o);

struct replay;
/*
 * Fills m from a replay: P, the bytes per category at the memory peak of
 * the default view (mem_default_view) and the achieved FLOP/s over the
 * measured steps (flops_compute). -1 after an error line.
 */
int plan_measure(const struct replay *rp, struct plan_measured *m);
/*
 * P, and the sizes, batch and sequence of o where the bundle's run
 * configuration records them (a foreign program's records none: 0); -1
 * after an error line (no parameters at all).
 */
int plan_opts_from_bundle(const struct replay *rp, const struct plan_measured *m, struct plan_opts *o);

/* TP's bytes per device per step: blocks/PP × 4 × 2(T−1)/T × B·S·d_model × act bytes (0 without B and S). */
double plan_tp_bytes(const struct plan_opts *o);
/* PP's bytes per device per step: 2 × B·S·d_model × act bytes (0 at PP = 1 or without B and S). */
double plan_pp_bytes(const struct plan_opts *o);
/* The pipeline bubble: (PP−1)/(M+PP−1). */
double plan_bubble(const struct plan_opts *o);

/* Adds the state, fsdp, compute, parallel and comm tables and notes to r (options checked by the command). 0. */
int plan_run(const struct plan_opts *o, struct report *r);

#endif
