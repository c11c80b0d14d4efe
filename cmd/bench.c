/*
 * bench.c: `steptrace bench`, the seeds' end-to-end benchmark without
 * CUPTI over a sweep of sizes, context lengths, precisions and modes
 * (model/bench.c), on one GPU or data-parallel over several (--ddp,
 * --nproc); `steptrace bench attention`, the seeds' attention benchmark
 * over a grid of head sizes, sequence lengths, batches, heads, precisions
 * and implementations (model/attention_bench.c); `steptrace bench
 * allreduce`, NCCL's all-reduce over sizes and dtypes on every rank
 * (model/allreduce_bench.c); `steptrace bench contention`, computation
 * alone and beside all-reduces on every rank, the calibration of explain's
 * ranks=N (model/contention_bench.c).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "cmd/gpu.h"
#include "lib/error.h"
#include "lib/output.h"
#include "lib/table.h"
#include "model/allreduce_bench.h"
#include "model/attention_bench.h"
#include "model/bench.h"
#include "model/comm.h"
#include "model/comm_stats.h"
#include "model/contention_bench.h"
#include "model/model.h"
#include "model/ranks.h"

static const char *const bench_usage[] = {
	"steptrace bench [--model LIST] [--ctx LIST] [--precision LIST] [--mode LIST]\n"
	"                [--kernels plain,fused] [<options>]",
	"steptrace bench attention [--d-head LIST] [--seq LIST] [--impl LIST] [<options>]",
	"steptrace bench allreduce [--sizes LIST] [--dtype LIST] [--nproc N] [<options>]",
	"steptrace bench contention [--sizes LIST] [--dtype LIST] [--nproc N] [--calibration FILE] [<options>]",
	"steptrace bench --ddp MODE [--nproc N] [<options>]",
	"",
	"steptrace bench: " CMD_BENCH_HELP,
	NULL,
};

static const char *const allreduce_usage[] = {
	"steptrace bench allreduce [--sizes LIST] [--dtype LIST] [--warmup N] [--iters N]\n"
	"                          [--nproc N | under mpirun, srun or torchrun] [<options>]",
	NULL,
};

static const char *const contention_usage[] = {
	"steptrace bench contention [--sizes LIST] [--dtype LIST] [--warmup N] [--iters N]\n"
	"                           [--calibration FILE] [--nproc N | under mpirun, srun or torchrun]\n"
	"                           [<options>]",
	NULL,
};

static const char *const attention_usage[] = {
	"steptrace bench attention [--d-head LIST] [--seq LIST] [--batch LIST] [--heads LIST]\n"
	"                          [--precision LIST] [--impl naive,flash] [--no-causal] [<options>]",
	NULL,
};

static int bench_attention(int argc, const char **argv)
{
	struct attn_grid g = ATTN_GRID_INIT;
	struct attn_bench_opts o = { .warmup = 3, .steps = 10 };
	struct attn_bench_totals totals;
	struct attn_config *configs;
	struct report *rep;
	int fmt = OUT_TABLE, n, status;
	const struct option opts[] = {
		OPT_GROUP("grid (comma-separated lists; the default is the seeds' grid)"),
		OPT_ATTN_GRID(&g),
		OPT_GROUP("measurement"),
		OPT_COUNT('w', "warmup", &o.warmup, "warm-up iterations, not measured (default 3)"),
		OPT_POSITIVE('n', "steps", &o.steps, "measured iterations (default 10)"),
		OPT_U64(0, "seed", &o.seed, "seed of the random q, k, v and dout (default 0)"),
		OPT_FORMAT(&fmt),
		OPT_END(),
	};

	status = gpu_parse(argc, argv, opts, attention_usage);
	if (status != GPU_GO)
		return status;
	n = attn_grid_configs(&g, &configs);
	if (n < 0)
		return EXIT_USAGE;
	if (attn_bench_check(configs, (size_t)n)) {
		free(configs);
		return EXIT_USAGE;
	}
	if (!model_gpu_available()) {
		free(configs);
		return 1;
	}
	o.configs = configs;
	o.n_configs = (size_t)n;
	rep = report_new();
	status = attn_bench_run(&o, rep, &totals);
	if (report_print(rep, (enum out_format)fmt, stdout))
		status = -1;
	status = status || totals.errors ? 1 : 0;
	report_free(rep);
	free(configs);
	return status;
}

/* ---- several GPUs ------------------------------------------------------- */

/* What every rank of a multi-GPU bench needs, and rank 0's exit status details. */
struct rank_job {
	struct bench_opts *bench;          /* bench --ddp */
	struct allreduce_opts *allreduce;  /* bench allreduce */
	struct contention_opts *contention; /* bench contention */
	const char *calibration;           /* bench contention --calibration FILE */
	int format;
};

/* One rank of `bench allreduce` or `bench --ddp`; rank 0 prints the table. */
static int bench_rank(const struct rank_info *ri, struct comm *comm, void *ctx)
{
	struct rank_job *j = ctx;
	struct report *rep;
	uint64_t wrong = 0;
	int status;

	rep = report_new();   /* rank_main (cmd/gpu.c) found the GPU */
	if (j->allreduce) {
		status = allreduce_bench_run(comm, j->allreduce, rep, &wrong) ? 1 : 0;
	} else {
		struct bench_opts o = *j->bench;
		o.comm = comm;
		status = bench_run(&o, rep) ? 1 : 0;
	}
	if (status == 0 && ri->rank == 0 && report_print(rep, (enum out_format)j->format, stdout))
		status = 1;
	if (status == 0 && wrong) {
		error("the all-reduce gave %llu wrong elements", (unsigned long long)wrong);
		status = 1;
	}
	report_free(rep);
	return status;
}

/* "1MiB,10MiB" into sizes (at most max). -1 after a line. */
static int size_list(const char *s, uint64_t *sizes, int max)
{
	const char *items[32];
	char *storage = NULL;
	int n = split_list(s, items, max < 32 ? max : 32, &storage);

	for (int i = 0; i < n; i++)
		if (parse_size(items[i], &sizes[i]) || sizes[i] < 4) {
			if (sizes[i] < 4)
				error("--sizes: '%s' is less than one element", items[i]);
			n = -1;
			break;
		}
	free(storage);
	return n;
}

/* "f32,bf16" into enum st_dtype values (at most max). -1 after a line. */
static int dtype_list(const char *s, int *dtypes, int max)
{
	const char *items[8];
	char *storage = NULL;
	int n = split_list(s, items, max < 8 ? max : 8, &storage);

	for (int i = 0; i < n; i++) {
		int k;
		if (parse_choice(items[i], allreduce_dtype_names, "--dtype", &k)) {
			n = -1;
			break;
		}
		dtypes[i] = allreduce_dtypes[k];
	}
	free(storage);
	return n;
}

/* bench allreduce's and bench contention's --sizes and --dtype, parsed. */
struct size_dtype_lists {
	uint64_t size[32];
	int dtype[8];
	size_t n_sizes, n_dtypes;
};

/* Both lists into l; -1 after a line. */
static int size_dtype_lists(const char *sizes, const char *dtypes, struct size_dtype_lists *l)
{
	int n = size_list(sizes, l->size, 32), m = n < 0 ? -1 : dtype_list(dtypes, l->dtype, 8);

	if (n < 0 || m < 0)
		return -1;
	l->n_sizes = (size_t)n;
	l->n_dtypes = (size_t)m;
	return 0;
}

static int bench_allreduce(int argc, const char **argv)
{
	struct gpu_ranks_args ranks = GPU_RANKS_ARGS_INIT;
	struct allreduce_opts o = { .warmup = 5, .iters = 20 };
	const char *sizes = "1MiB,10MiB,100MiB,1GiB", *dtypes = "f32";
	struct size_dtype_lists l;
	int fmt = OUT_TABLE, status;
	const struct option opts[] = {
		OPT_STRING(0, "sizes", &sizes, "LIST", "buffer sizes (default 1MiB,10MiB,100MiB,1GiB)"),
		OPT_STRING(0, "dtype", &dtypes, "LIST", "f32, bf16, f16 (default f32)"),
		OPT_COUNT('w', "warmup", &o.warmup, "warm-up iterations per size (default 5)"),
		OPT_POSITIVE('n', "iters", &o.iters, "timed iterations per size (default 20)"),
		OPT_GPU_RANKS(&ranks),
		OPT_FORMAT(&fmt),
		OPT_END(),
	};
	struct rank_job job = { .allreduce = &o };

	status = gpu_parse(argc, argv, opts, allreduce_usage);
	if (status != GPU_GO)
		return status;
	if (o.warmup < 0 || o.iters < 1 || o.iters > 100000)
		return gpu_usage_error(allreduce_usage, "--warmup must be 0 or more and --iters "
				       "between 1 and 100000");
	if (gpu_ranks_check(&ranks) || size_dtype_lists(sizes, dtypes, &l))
		return EXIT_USAGE;
	o.sizes = l.size;
	o.n_sizes = l.n_sizes;
	o.dtypes = l.dtype;
	o.n_dtypes = l.n_dtypes;
	job.format = fmt;
	return gpu_ranks_run(&ranks, bench_rank, &job);
}

/*
 * One rank of `bench contention`; rank 0 prints the table and writes the
 * calibration, its file opened first so that a path it cannot write fails
 * before the measurement.
 */
static int contention_rank(const struct rank_info *ri, struct comm *comm, void *ctx)
{
	struct rank_job *j = ctx;
	struct contention_calibration cal = { 0 };
	struct output out;
	bool writing = ri->rank == 0 && j->calibration;
	struct report *rep;
	int status;

	if (writing && output_open(&out, j->calibration, NULL) < 0)
		return 1;
	rep = report_new();
	status = contention_bench_run(comm, j->contention, rep, &cal) ? 1 : 0;
	if (status == 0 && ri->rank == 0 && report_print(rep, (enum out_format)j->format, stdout))
		status = 1;
	if (writing) {
		if (status == 0 && contention_calibration_write(&cal, out.f) == 0)
			status = output_close(&out) ? 1 : 0;
		else {
			output_discard(&out);
			status = 1;
		}
	}
	report_free(rep);
	return status;
}

static int bench_contention(int argc, const char **argv)
{
	struct gpu_ranks_args ranks = GPU_RANKS_ARGS_INIT;
	struct contention_opts o = { .warmup = 3, .iters = 20 };
	const char *sizes = "25MiB,100MiB", *dtypes = "f32";
	struct size_dtype_lists l;
	int fmt = OUT_TABLE, status;
	struct rank_job job = { .contention = &o };
	const struct option opts[] = {
		OPT_STRING(0, "sizes", &sizes, "LIST", "all-reduce sizes (default 25MiB,100MiB: DDP's buckets)"),
		OPT_STRING(0, "dtype", &dtypes, "LIST", "the all-reduces' dtypes: f32, bf16, f16 (default f32, "
			   "as DDP's gradients); the first one's largest size gives the calibration"),
		OPT_COUNT('w', "warmup", &o.warmup, "warm-up repetitions of each measurement (default 3)"),
		OPT_POSITIVE('n', "iters", &o.iters, "timed repetitions of each measurement (default 20)"),
		OPT_STRING(0, "calibration", &job.calibration, "FILE",
			   "write ranks=N's calibration, the CSV `steptrace explain --contention FILE` reads"),
		OPT_GPU_RANKS(&ranks),
		OPT_FORMAT(&fmt),
		OPT_END(),
	};

	status = gpu_parse(argc, argv, opts, contention_usage);
	if (status != GPU_GO)
		return status;
	if (o.warmup < 0 || o.warmup > 1000 || o.iters < 1 || o.iters > 1000)
		return gpu_usage_error(contention_usage, "--warmup must be from 0 to 1000 and --iters from 1 "
				       "to 1000");
	if (job.calibration && !*job.calibration)
		return gpu_usage_error(contention_usage, "--calibration needs a file name");
	if (gpu_ranks_check(&ranks) || size_dtype_lists(sizes, dtypes, &l))
		return EXIT_USAGE;
	o.sizes = l.size;
	o.n_sizes = l.n_sizes;
	o.dtypes = l.dtype;
	o.n_dtypes = l.n_dtypes;
	job.format = fmt;
	return gpu_ranks_run(&ranks, contention_rank, &job);
}

int cmd_bench(int argc, const char **argv)
{
	struct gpu_model_args a = GPU_MODEL_ARGS_INIT;
	struct gpu_sweep sweep = { 0 };
	struct gpu_ranks_args ranks = GPU_RANKS_ARGS_INIT;
	struct bench_opts o = { .warmup = 5, .steps = 10 };
	struct model_config *configs;
	struct report *rep;
	int fmt = OUT_TABLE, n, status;
	const struct option opts[] = {
		OPT_GROUP("sweep (comma-separated lists)"),
		OPT_STRING(0, "model", &sweep.models, "LIST", "small, medium, large, xl, 2.7B, custom (default small)"),
		OPT_STRING(0, "ctx", &sweep.ctxs, "LIST", "context lengths (default 128)"),
		OPT_STRING(0, "precision", &sweep.precisions, "LIST", "fp32, tf32, bf16 (default fp32)"),
		OPT_STRING(0, "mode", &sweep.modes, "LIST", "forward, fwdbwd, train (default train)"),
		OPT_STRING(0, "kernels", &sweep.kernels, "LIST",
			   "plain, fused (default plain; both: side by side with the speed-up)"),
		OPT_GPU_ATTENTION(&a),
		OPT_GROUP("sizes (custom model, or overrides of a preset)"),
		OPT_MODEL_DIMS(&a.dims),
		OPT_GROUP("measurement"),
		OPT_COUNT('w', "warmup", &o.warmup, "warm-up steps, not measured (default 5)"),
		OPT_POSITIVE('n', "steps", &o.steps, "measured steps (default 10)"),
		OPT_U64(0, "seed", &a.seed, "seed of the random weights and batch (default 0)"),
		OPT_GPU_DDP(&a),
		OPT_GPU_RANKS(&ranks),
		OPT_FORMAT(&fmt),
		OPT_END(),
	};

	if (argc > 1 && !strcmp(argv[1], "attention"))
		return bench_attention(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "allreduce"))
		return bench_allreduce(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "contention"))
		return bench_contention(argc - 1, argv + 1);
	status = gpu_parse(argc, argv, opts, bench_usage);
	if (status != GPU_GO)
		return status;
	if (gpu_ranks_check(&ranks))
		return EXIT_USAGE;
	if (ranks.nproc > 1 && a.ddp == ST_DDP_NONE)
		return gpu_usage_error(bench_usage, "--nproc %d runs the step data-parallel: "
				       "give --ddp naive, flat, overlap or bucket", ranks.nproc);
	n = gpu_sweep_configs(&sweep, &a, &configs);
	if (n < 0)
		return 1;
	if (a.ddp != ST_DDP_NONE) {
		struct rank_job job = { .bench = &o, .format = fmt };

		o.configs = configs;
		o.n_configs = (size_t)n;
		ranks.nccl_ctas = n > 0 ? configs[0].nccl_ctas : 0;   /* the same in every one */
		status = gpu_ranks_run(&ranks, bench_rank, &job);
		free(configs);
		return status;
	}
	if (!model_gpu_available()) {
		free(configs);
		return 1;
	}
	o.configs = configs;
	o.n_configs = (size_t)n;
	rep = report_new();
	status = bench_run(&o, rep) || report_print(rep, (enum out_format)fmt, stdout) ? 1 : 0;
	report_free(rep);
	free(configs);
	return status;
}
