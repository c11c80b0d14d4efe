/*
 * gpu.h: the prologue the GPU commands (bench, step, record) share: the
 * model flags and their option-table entries, the parse of a command line
 * that takes no argument, the configuration the flags name, and the checks
 * common to them. Each command keeps its usage, its option table and one
 * call into model/ or record/:
 *
 *   struct gpu_model_args a = GPU_MODEL_ARGS_INIT;
 *   const struct option opts[] = { OPT_GPU_MODEL(&a), OPT_GPU_STEP(&a), ..., OPT_END() };
 *   int status = gpu_parse(argc, argv, opts, usage);
 *   if (status != GPU_GO)
 *           return status;
 *   if (gpu_model_config(&a, &c) || !model_gpu_available())
 *           return 1;
 *   return step_file_run(&o, &c) ? 1 : 0;
 */
#ifndef STEPTRACE_CMD_GPU_H
#define STEPTRACE_CMD_GPU_H

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "lib/options.h"
#include "model/config.h"

/* What the model flags say; each field 0 (or NAN) keeps the preset's or default value. */
struct gpu_model_args {
	const char *model;               /* --model: a preset, "custom", or NULL for small
					    (custom when --d-model is given) */
	struct model_dims dims;          /* --d-model ... --batch, and --ctx */
	int precision, mode;             /* enum st_precision, st_mode */
	int attention;                   /* enum st_attention, -1: the kernels' default
					    (model_config_default_attention) */
	int kernels;                     /* enum st_kernels */
	double lr, weight_decay;         /* AdamW */
	uint64_t seed;                   /* of the random weights and batch */
	int ddp;                         /* enum st_ddp */
	double bucket_mb;                /* NAN: the default */
	int sm_carveout, nccl_ctas;      /* INT_MIN: the default (model_config.h) */
	int allreduce;                   /* MODEL_ALLREDUCE_NCCL, _CE, _EXCHANGE */
};

#define GPU_MODEL_ARGS_INIT                                                           \
	{ .precision = ST_FP32, .mode = ST_MODE_TRAIN, .attention = -1,                \
	  .kernels = ST_KERNELS_PLAIN, .lr = NAN, .weight_decay = NAN, .ddp = ST_DDP_NONE,   \
	  .bucket_mb = NAN, .sm_carveout = INT_MIN, .nccl_ctas = INT_MIN }

/* The size flags; --ctx aside: bench takes a list of context lengths. */
#define OPT_MODEL_DIMS(dims)                                                                  \
	OPT_POSITIVE(0, "d-model", &(dims)->d_model, "model width (custom, or override)"),    \
	OPT_POSITIVE(0, "d-ff", &(dims)->d_ff, "feed-forward width (default 4 * d-model)"),   \
	OPT_POSITIVE(0, "layers", &(dims)->layers, "number of blocks"),                       \
	OPT_POSITIVE(0, "heads", &(dims)->heads, "attention heads"),                          \
	OPT_POSITIVE(0, "vocab", &(dims)->vocab, "vocabulary size (default 10000)"),          \
	OPT_POSITIVE(0, "batch", &(dims)->batch, "batch size (default 4)")

/* One configuration's model: --model, the sizes and --ctx. */
#define OPT_GPU_MODEL(a)                                                                      \
	OPT_STRING(0, "model", &(a)->model, "NAME",                                           \
		   "small (default), medium, large, xl, 2.7B or custom"),                     \
	OPT_MODEL_DIMS(&(a)->dims),                                                           \
	OPT_POSITIVE(0, "ctx", &(a)->dims.ctx, "context length (default 128)")

/* What one step runs: --precision and --mode. */
#define OPT_GPU_STEP(a)                                                                       \
	OPT_CHOICE(0, "precision", &(a)->precision, st_precision_names,                       \
		   "matrix products' precision (default fp32)"),                              \
	OPT_CHOICE(0, "mode", &(a)->mode, st_mode_names,                                      \
		   "what a step runs (default train)")

#define OPT_GPU_ATTENTION(a)                                                                  \
	OPT_CHOICE(0, "attention", &(a)->attention, st_attention_names,                       \
		   "attention implementation (default naive; flash with --kernels fused in bf16)")

#define OPT_GPU_KERNELS(a)                                                                    \
	OPT_CHOICE(0, "kernels", &(a)->kernels, st_kernels_names,                             \
		   "plain (default) or fused: fused kernels, the step a CUDA graph where not recorded")

/*
 * The attention sweep's grid (model/attention_sweep.h), shared by `bench
 * attention` and `record attention`: every axis a comma-separated list.
 */
#define OPT_ATTN_GRID(g)                                                                      \
	OPT_STRING(0, "d-head", &(g)->d_head, "LIST", "head sizes (default 16,32,64,128)"),  \
	OPT_STRING(0, "seq", &(g)->seq, "LIST",                                               \
		   "sequence lengths (default 256,1024,4096,8192,16384)"),                    \
	OPT_STRING(0, "batch", &(g)->batch, "LIST", "batch sizes (default 8)"),               \
	OPT_STRING(0, "heads", &(g)->heads, "LIST", "heads (default 1)"),                     \
	OPT_STRING(0, "precision", &(g)->precision, "LIST",                                   \
		   "fp32, tf32 (naive's products; flash runs fp32), bf16 (default fp32)"),    \
	OPT_STRING(0, "impl", &(g)->impl, "LIST", "naive, flash (default naive)"),            \
	OPT_BOOLEAN(0, "causal", &(g)->causal, "causal mask (default; --no-causal for none)")

/*
 * Several GPUs (bench --ddp, bench allreduce, record --ddp): the ranks, one
 * process per GPU (model/ranks.h), and how long a rank waits for the others.
 */
struct gpu_ranks_args {
	int nproc;                 /* --nproc N: N ranks started here; 0: this process (alone, or a
				      launcher's rank) */
	const char *rendezvous;    /* --rendezvous DIR */
	double timeout_s;          /* --timeout */
	int nccl_ctas;             /* NCCL's CTAs per collective, 0: its choice (model_config.nccl_ctas) */
};

#define GPU_RANKS_ARGS_INIT { .timeout_s = 300 }

#define OPT_GPU_RANKS(a)                                                                      \
	OPT_GROUP("Several GPUs (one process per GPU; or run under mpirun, srun or torchrun)"),  \
	OPT_INTEGER(0, "nproc", &(a)->nproc, "start N ranks on this host, one per GPU"),       \
	OPT_STRING(0, "rendezvous", &(a)->rendezvous, "DIR",                                   \
		   "where the ranks exchange NCCL's id: a directory all of them see (default: "  \
		   "a private one with --nproc, $TMPDIR/steptrace-<job id> under a launcher)"),  \
	OPT_DOUBLE(0, "timeout", &(a)->timeout_s,                                              \
		   "seconds a rank waits for the others before it aborts the run (default 300)")

/* The data-parallel flags of bench and record: --ddp, --bucket-mb, --sm-carveout, --nccl-ctas. */
#define OPT_GPU_DDP(a)                                                                        \
	OPT_CHOICE(0, "ddp", &(a)->ddp, st_ddp_names,                                          \
		   "average gradients over the ranks: naive, flat, overlap, bucket (default none)"), \
	OPT_DOUBLE(0, "bucket-mb", &(a)->bucket_mb, "bucket size of --ddp bucket, MB (default 25)"), \
	OPT_INTEGER(0, "sm-carveout", &(a)->sm_carveout,                                       \
		    "SMs the matrix products leave to the all-reduces beside the backward "      \
		    "(--ddp overlap, bucket; default 28 under bf16, else 0: none)"),             \
	OPT_INTEGER(0, "nccl-ctas", &(a)->nccl_ctas,                                           \
		    "CTAs NCCL may use per all-reduce (--ddp overlap, bucket: default 12; "       \
		    "0: NCCL's choice)"),                                                        \
	OPT_CHOICE(0, "allreduce-by", &(a)->allreduce, model_allreduce_names,                     \
		   "how the gradients are all-reduced: nccl (default), ce (the copy engines "    \
		   "and one short kernel), exchange (the copy engines; AdamW averages); ce and " \
		   "exchange need every rank on one host")

/* -1 with an error line for a value out of range (--nproc, --timeout). */
int gpu_ranks_check(const struct gpu_ranks_args *a);

struct comm;
struct rank_info;

/* A rank's work: its rank and communicator; its return value is the rank's exit status. */
typedef int (*gpu_rank_fn)(const struct rank_info *ri, struct comm *comm, void *ctx);

/*
 * Runs body as every rank of the run, each with its communicator (comm.h):
 * with --nproc N, N ranks started here (ranks_launch: a failing rank stops
 * the others); under mpirun, srun or torchrun, this process as the rank its
 * variables name; else this process as the only rank. Messages of a rank of
 * several start with "rank R: ". Says so in one line when this build has
 * no NCCL. Returns the exit status (the first failed rank's).
 */
int gpu_ranks_run(const struct gpu_ranks_args *a, gpu_rank_fn body, void *ctx);

/* gpu_parse's "go on" */
#define GPU_GO (-1)

/*
 * Parses argv against opts and refuses positional arguments. GPU_GO when
 * the command goes on, else its exit status: 0 after --help, EXIT_USAGE
 * after a usage error (reported in one line, and one pointing to --help).
 */
int gpu_parse(int argc, const char **argv, const struct option *opts, const char *const usage[]);

/* One error line and the line pointing to --help on stderr; returns EXIT_USAGE. */
int gpu_usage_error(const char *const usage[], const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The configuration the model flags name (model_config_resolve), validated.
 * -1 with an error line.
 */
int gpu_model_config(const struct gpu_model_args *a, struct model_config *c);

/* bench's sweep: comma-separated lists, each NULL for its default. */
struct gpu_sweep {
	const char *models, *ctxs, *precisions, *modes, *kernels;
};

/*
 * Every configuration of the sweep, models outermost, then context
 * lengths, precisions, modes and kernels, with a's other flags: their count, the
 * array in *out (malloc'd). -1 with an error line for a bad list or model.
 */
int gpu_sweep_configs(const struct gpu_sweep *s, const struct gpu_model_args *a,
		      struct model_config **out);

#endif
