/*
 * plan.h: `steptrace plan`, the seeds' parallelism accounting ("4D
 * Parallelism") from a model's sizes, each number with its formula, the
 * assumption it rests on and, in tests/plan/, its source:
 *
 *   state    (a) master weights, accumulated gradients and Adam's two
 *            moments in FP32 on one device: 16 B per parameter, in GB
 *            (10^9 B, the seeds' unit) and in devices of the chip; and the
 *            BF16 activations saved for backward, per token and per batch
 *   fsdp     (b) memory per device under FSDP over N devices, weights,
 *            gradients, optimizer state and half of the activations
 *            sharded, after the T·PP split: 16·P'/N + A/2 + A/(2N); the
 *            smallest N that fits
 *   compute  (c) the per-device batch (tokens) at which FSDP × TP is
 *            compute-bound in the forward pass, in the Scaling Book's
 *            notation, under both assumptions it has been written with:
 *            the FSDP and TP collectives overlapping each other (its
 *            current text, T_math ≥ max(T_FSDP, T_TP)) or not (its early
 *            2025 text, T_math ≥ T_FSDP + T_TP); and the overall batch
 *   parallel memory per device under DP, ZeRO-1, ZeRO-2 and ZeRO-3/FSDP
 *            of data-parallel degree D (--dp or --fsdp), with the
 *            parameters split over T × PP tensor and pipeline stages
 *            first, P' = P/(T·PP): ZeRO's mixed precision (a 2-byte working
 *            copy, FP32 master weights and moments sharded) and, as named
 *            alternatives, the autocast policy (FP32 weights used
 *            directly); activations per device of a pipeline schedule
 *            (1F1B or GPipe)
 *   comm     bytes each device moves per step for the gradients (and
 *            ZeRO-3's weights) over D, for tensor parallelism (Megatron's
 *            all-reduces of the activations: one forward and one backward
 *            per FFN-only block, two and two per full layer) and pipeline
 *            parallelism (the activations and their gradients at a stage
 *            boundary), ring algorithm, and the time at the bandwidth of
 *            the axis's link, inside a node or across nodes: bus-bandwidth
 *            lower bounds; and the pipeline bubble (PP−1)/(M+PP−1)
 *   devices  (d) with --devices N: every FSDP × TP split X·Y = N (and, on a
 *            torus, the mesh axes of each) searched for the smallest
 *            compute-bound global batch that fits
 *
 * Which axes cross nodes: ranks ordered TP (innermost), then the data axis
 * (D, or X), then PP (Megatron-LM's default order, tp-dp-pp); an axis
 * crosses nodes when its degree times those inside it exceeds the devices
 * of a node (--gpus-per-node).
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

/* Link presets: plan_intra_names ("nvlink4", "ici-v5p"), plan_inter_names ("ib200", "ib400", "ib800", "dcn-v5p"). */
extern const char *const plan_intra_names[];
extern const char *const plan_inter_names[];

struct plan_link {
	const char *label;    /* "NVLink 4", "InfiniBand 400 Gb/s" */
	double bw;            /* bytes/s a device sends (one direction) */
};
const struct plan_link *plan_intra_link(int preset);
const struct plan_link *plan_inter_link(int preset);

struct plan_chip_spec {
	const char *label;    /* "H100 80GB" */
	double flops;         /* C: dense BF16 FLOP/s */
	int intra, inter;     /* the link presets inside a node and across nodes */
	int per_node;         /* devices that share the intra-node links */
	int mesh_axes;        /* axes of a torus (v5p: 3); 0 on a switched node: M_X = M_Y = 1 */
	uint64_t memory;      /* bytes */
};

/* The preset of a chip (enum plan_chip). */
const struct plan_chip_spec *plan_chip_spec(int chip);

/* Pipeline schedules for the activations a stage holds. */
enum plan_schedule { PLAN_1F1B, PLAN_GPIPE };
extern const char *const plan_schedule_names[];

/* What plan takes from a bundle (plan_measure). */
struct plan_measured {
	const char *path;
	uint64_t params;          /* P: run.config.parameters, else (1.8) the optimizer's parameter
				     groups' elements, else parameter bytes / 4 (FP32) */
	bool params_from_groups;  /* P came from the parameter groups (a PyTorch recording) */
	bool params_from_bytes;   /* P came from the parameter bytes */
	bool builtin;             /* recorded from the built-in step (its FFN is SwiGLU, three matrices) */
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
	int d_model, d_ff, blocks;   /* 0 when unknown (--params alone) */
	bool ffn_only;        /* the seeds' XXL: each block k linear layers between d_model and d_ff, nothing else */
	uint64_t params;      /* the full model's count, or --params */
	bool params_given;    /* --params: P given, not counted from the sizes */
	int ffn_matrices;     /* k, matrices of an FFN: 2 (the seeds', the Book's) or 3 (SwiGLU); 0: 2 with ffn_only, else 3 */
	int batch, seq;       /* sequences per data-parallel replica and tokens each; 0: no activations counted */
	int chip;             /* enum plan_chip */
	double flops;         /* 0: the chip's */
	double link, inter;   /* bytes/s inside a node and across nodes; 0: the chip's preset */
	const char *link_label, *inter_label;   /* a preset's name for them; NULL: the chip's, or the number given */
	int per_node;         /* devices per node; 0: the chip's */
	uint64_t memory;      /* 0: the chip's */
	int fsdp;             /* X, N_FSDP; 0: the smallest that fits */
	int tp;               /* Y, T */
	int dp;               /* data-parallel degree of the parallel and comm tables; 0: --fsdp's, else 1 */
	int pp;               /* pipeline-parallel degree (1: none) */
	int mesh_x, mesh_y;   /* M_X, M_Y: mesh axes each of X and Y spans */
	int mesh_axes;        /* axes of the torus the devices search splits; 0: the chip's */
	int microbatches;     /* M, micro-batches of a pipeline step; 0: 1 */
	int schedule;         /* enum plan_schedule: the activations of the memory tables' totals */
	int devices;          /* N of the devices search (d); 0: none */
	const struct plan_measured *measured;   /* from a bundle, NULL: none */
	const char *section;  /* the one table printed (--section), whose notes alone are added; NULL: all */
};

/* k: o->ffn_matrices, else 2 for FFN-only models and 3 for the full (built-in, SwiGLU) model. */
int plan_ffn_matrices(const struct plan_opts *o);
/* Trainable parameters: --params, else blocks × k × d_model × d_ff with ffn_only, else o->params. */
uint64_t plan_params(const struct plan_opts *o);
/* BF16 activations an FFN-only block saves per token, summed over the blocks: blocks × (d_model + d_ff) × 2 B; 0 else. */
double plan_activation_per_token(const struct plan_opts *o);
/* BF16 activations saved for backward on one device, bytes: per token × B × S (0 without --batch and --seq). */
double plan_activation_bytes(const struct plan_opts *o);
/* Bytes per device under FSDP of degree n after the T·PP split: state/(T·PP·n) + A'/2 + A'/(2n) (+ R). */
double plan_fsdp_bytes(const struct plan_opts *o, int n);
/* The smallest FSDP degree whose bytes per device fit `memory`; 0 when none does below 2^30. */
int plan_fsdp_min(const struct plan_opts *o, double memory);

/* The data-parallel degree D of the parallel and comm tables: --dp, else --fsdp, else the world size, else 1. */
int plan_dp_degree(const struct plan_opts *o);
/* P' = P / (T·PP): the parameters one device holds a shard of before data parallelism. */
double plan_shard_params(const struct plan_opts *o);
/*
 * Activations on one device under T and PP for a pipeline schedule:
 * blocks/PP × B × S × (d_model + d_ff/T) × 2 B for GPipe (every micro-batch
 * of the step in flight), × min(PP, M)/M for 1F1B (PP micro-batches at most
 * on the first stage). From a bundle its activations scaled alike.
 */
double plan_schedule_activation_bytes(const struct plan_opts *o, int schedule);
/* The same for o->schedule. */
double plan_parallel_activation_bytes(const struct plan_opts *o);

/* Memory per device of the parallel table's rows, state only (weights, gradients, optimizer). */
enum plan_zero { PLAN_DP, PLAN_ZERO1, PLAN_ZERO2, PLAN_ZERO3 };
enum plan_policy { PLAN_MIXED, PLAN_AUTOCAST };
/*
 * From the sizes: ZeRO's mixed precision (PLAN_MIXED: BF16 weights 2 B,
 * BF16 gradients 2 B, FP32 master weights, m and v 12 B per parameter) or
 * autocast (PLAN_AUTOCAST: FP32 weights 4 B used directly, FP32 gradients
 * 4 B, m and v 8 B); stage 1 shards the optimizer's part over D, stage 2
 * the gradients too, stage 3 everything. From a bundle: its W, G and O.
 */
double plan_zero_state_bytes(const struct plan_opts *o, int stage, int policy);

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

/*
 * TP's bytes per device per step, ring: blocks/PP × R × 2(T−1)/T ×
 * B·S·d_model × act bytes, R = 2 all-reduces per FFN-only block (one
 * forward, one backward) and 4 per full layer (attention and MLP, each
 * forward and backward). 0 without B and S.
 */
double plan_tp_bytes(const struct plan_opts *o);
/* PP's bytes per device per step: 2 × B·S·d_model × act bytes (0 at PP = 1 or without B and S). */
double plan_pp_bytes(const struct plan_opts *o);
/* The pipeline bubble: (PP−1)/(M+PP−1). */
double plan_bubble(const struct plan_opts *o);

/*
 * (c) The compute bound of FSDP X × TP Y, forward pass, per device, for k
 * FFN matrices: T_FSDP/T_math = α_X/(M_X·Y·b) and T_TP/T_math =
 * 2·α_Y·Y/(k·M_Y·F) with α_X = C/W_X, α_Y = C/W_Y, b = B/(X·Y) tokens per
 * device.
 */
struct plan_bound {
	double fsdp_only;     /* α_X/(M_X·Y): the overlapped bound on b; 0 at X = 1 */
	double tp_share;      /* T_TP/T_math; 0 at Y = 1 */
	double tp_max;        /* k·M_Y·F/(2·α_Y): Y must stay below it */
	bool tp_ok;           /* Y = 1 or Y < tp_max */
	double summed;        /* fsdp_only/(1 − tp_share): the bound when they do not overlap; NAN when !tp_ok */
};
struct plan_bound plan_compute_bound(const struct plan_opts *o, int x, int y, int mx, int my, double flops,
				     double wx, double wy);

/* One split of the devices search (d). */
struct plan_split {
	int x, y, mx, my;     /* mx or my 0 on an axis of one device */
	double wx, wy;        /* the links' bandwidths */
	bool x_cross, y_cross;
	struct plan_bound b;
	double per_device, per_device_summed;   /* ⌈bounds⌉, tokens; -1 when TP is communication-bound */
	double memory;        /* bytes per device at per_device tokens */
	bool fits;
};
/*
 * The best split per TP degree Y of N = o->devices (Y dividing N, in
 * ascending order), into out[0..*n) (at most max, which 2·√N + 2 covers);
 * *best the index of the smallest overlapped global batch that fits (ties:
 * the smaller summed one, then the smaller Y), -1 when none. 0, or -1
 * when max is too small.
 */
int plan_devices_search(const struct plan_opts *o, struct plan_split *out, int max, int *n, int *best);

/* Adds the state, fsdp, compute, parallel, comm (and devices) tables and notes to r (options checked by the command). 0. */
int plan_run(const struct plan_opts *o, struct report *r);

#endif
