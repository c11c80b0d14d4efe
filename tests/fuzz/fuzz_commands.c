/*
 * fuzz_commands.c: every analysis command, in process, as the program runs
 * it (cmd/), on a bundle or on the bundles of a run's ranks: info, steps,
 * summary, ranges, memory (and its --svg chart), replay (and --capacity),
 * flops (and its --svg roofline), comm (and its sections, the per-rank
 * instances among them), explain (with what-if rules: globs, ranks=N over
 * all-reduce tables good and bad, bucket sizes), plan (from the bundle,
 * with a parallelism), diff (against a good bundle, and between two runs),
 * export (to Perfetto, Chrome JSON or SQLite), and report, their options
 * and formats picked by a hash of the input. Each
 * runs under --memory-limit 128MiB and prints into /dev/null; files go to a
 * scratch folder in $ST_FUZZ_SCRATCH (default /dev/shm), removed at exit.
 *
 * The input is one bundle (its .stb bytes; not a zstd frame: the archive
 * inside one) or a set: a tar of .stb files, the ranks of a run and perhaps
 * a second run (`tar xf` gives them back). mutate.c changes inputs by
 * their structure (edit.h). Seeds: the bundles of samples/ and docs/, one by
 * one and the ranks of docs/multi as sets (seeds.sh).
 *
 * Besides what the sanitizers catch, two rules make a finding (abort): a
 * command that fails says why (an "error:" line), and none says "out of
 * memory" when memory is not short (it never is here: an allocation that
 * fails ends the fuzzer first).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "lib/error.h"
#include "tests/fuzz/edit.h"
#include "tests/fuzz/fuzz.h"
#include "tests/lib/builder.h"

#define N_TABLES 5

static struct {
	char dir[256];
	char good[300];
	char allreduce[N_TABLES][300];   /* all-reduce tables for explain's ranks=N (write_tables) */
	char bundle[EDIT_MAX_BUNDLES][300];
	char out[300];
	uint64_t hash;                /* of the input: picks the options */
	bool verbose;                 /* ST_FUZZ_VERBOSE set: each command and its messages on stderr */
	const uint8_t *data;          /* the input */
	size_t size;
} fz;

/* ---- the runs ---------------------------------------------------------------------------- */

/* Which run each bundle is of: run[i], the index of the first bundle of its run. */
static void runs(uint8_t **bundle, const size_t *len, size_t n, size_t *run)
{
	uint64_t id[EDIT_MAX_BUNDLES];

	for (size_t i = 0; i < n; i++) {
		struct edit_set s;
		id[i] = 0;
		run[i] = i;
		if (edit_parse(&s, bundle[i], len[i]) < 0)
			continue;
		for (size_t k = 0; k < s.b[0].n; k++) {
			const struct edit_member *m = &s.b[0].m[k];
			if (m->msg && m->type == EDIT_HEADER && edit_header(m)->world_size > 1)
				id[i] = edit_header(m)->run_id;
		}
		edit_free(&s);
		for (size_t k = 0; k < i; k++)
			if (id[i] && id[k] == id[i]) {
				run[i] = run[k];
				break;
			}
	}
}

/* ---- the commands ---------------------------------------------------------------------- */

struct args {
	const char *v[40];
	int n;
};

static void arg(struct args *a, const char *s)
{
	if (a->n < 39)
		a->v[a->n++] = s;
	a->v[a->n] = NULL;
}

/* The next choice of the options, from the input's hash. */
static unsigned pick(unsigned n)
{
	fz.hash ^= fz.hash << 13;
	fz.hash ^= fz.hash >> 7;
	fz.hash ^= fz.hash << 17;
	return (unsigned)(fz.hash % n);
}

static void args_start(struct args *a, const char *command)
{
	a->n = 0;
	arg(a, command);
	arg(a, "--memory-limit");
	arg(a, "128MiB");
}

static void args_bundles(struct args *a, size_t n)
{
	for (size_t i = 0; i < n; i++)
		arg(a, fz.bundle[i]);
}

/* The first run's bundles; now and then all of them (a second run, refused). How many. */
static size_t args_run(struct args *a, size_t one, size_t n)
{
	size_t k = pick(8) ? one : n;

	args_bundles(a, k);
	return k;
}

static void args_format(struct args *a)
{
	static const char *const formats[] = { "table", "csv", "json", "md" };

	arg(a, "--format");
	arg(a, formats[pick(4)]);
}

static void args_range(struct args *a, const char *option)
{
	static const char *const ranges[] = { "forward", "step/*", "/step", "layer.*/attn", "*", "backward/*/*" };

	if (pick(3) == 0) {
		arg(a, option);
		arg(a, ranges[pick(6)]);
	}
}

static void args_maybe(struct args *a, const char *option)
{
	if (pick(2))
		arg(a, option);
}

/* Where sanitizers print, which libFuzzer keeps when -close_fd_mask=2 closes stderr. */
void __sanitizer_report_error_summary(const char *summary) __attribute__((weak));

static __attribute__((noreturn)) void finding(const struct args *a, const char *what, const char *msgs)
{
	char line[4096];
	size_t len = (size_t)snprintf(line, sizeof(line), "fuzz_commands: %s:", what);

	for (int i = 0; i < a->n && len < sizeof(line); i++)
		len += (size_t)snprintf(line + len, sizeof(line) - len, " %s", a->v[i]);
	if (len < sizeof(line))
		snprintf(line + len, sizeof(line) - len, "\n%s", msgs ? msgs : "");
	if (__sanitizer_report_error_summary)
		__sanitizer_report_error_summary(line);
	else
		fprintf(stderr, "%s\n", line);
	abort();
}

/* Runs one command, its messages caught: a failure without an error line is a finding. */
static void run(cmd_fn fn, const struct args *a)
{
	struct args argv = *a;        /* the command may reorder its argv */
	char *msgs = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&msgs, &len);
	int rc;

	error_set_stream(f);
	rc = fn(argv.n, argv.v);
	error_set_stream(NULL);
	if (f)
		fclose(f);
	if (fz.verbose) {
		fprintf(stderr, "[%d]", rc);
		for (int i = 0; i < a->n; i++)
			fprintf(stderr, " %s", a->v[i]);
		fprintf(stderr, "\n%s", f ? msgs : "");
	}
	if (f && rc != 0 && !strstr(msgs, "error: "))
		finding(a, "exit status without an error line", msgs);
	if (f && strstr(msgs, "out of memory"))
		finding(a, "'out of memory' with memory to spare", msgs);
	free(msgs);
}

static const char *out_file(const char *name)
{
	snprintf(fz.out, sizeof(fz.out), "%s/%s", fz.dir, name);
	unlink(fz.out);
	return fz.out;
}

/*
 * Every command on the first run (its `one` bundles; now and then on all n,
 * which those that read one run refuse), diff and report on two runs when
 * there are.
 */
static void run_all(size_t one, size_t n)
{
	static const char *const exports_to[] = { "perfetto", "chrome", "sqlite" };
	static const char *const kinds[] = { "kernel,memcpy,memset", "api,range", "alloc,free,oom,tag", "step,overhead,sync" };
	static const char *const by_summary[] = { "kernel", "op", "category" };
	static const char *const by_diff[] = { "op", "range", "category", "kernel", "phase" };
	static const char *const phases[] = { "forward", "backward", "optimizer", "zero_grad", "data" };
	struct args a;
	size_t k;

	args_start(&a, "info");
	args_format(&a);
	args_run(&a, one, n);
	run(cmd_info, &a);

	args_start(&a, "steps");
	args_maybe(&a, "--include-warmup");
	args_format(&a);
	args_run(&a, one, n);
	run(cmd_steps, &a);

	args_start(&a, "summary");
	arg(&a, "--by");
	arg(&a, by_summary[pick(3)]);
	args_range(&a, "--range");
	args_maybe(&a, "--per-step");
	args_maybe(&a, "--all");
	args_maybe(&a, "--include-warmup");
	args_format(&a);
	if ((k = args_run(&a, one, n)) > 1)
		args_maybe(&a, "--per-rank");
	run(cmd_summary, &a);

	args_start(&a, "ranges");
	args_range(&a, "--range");
	if (pick(2))
		arg(&a, "--depth"), arg(&a, "2");
	args_maybe(&a, "--include-warmup");
	args_format(&a);
	if ((k = args_run(&a, one, n)) > 1)
		args_maybe(&a, "--per-rank");
	run(cmd_ranges, &a);

	args_start(&a, "memory");
	if (pick(3) == 0)
		arg(&a, "--view"), arg(&a, pick(2) ? "driver" : "model");
	if (pick(3) == 0)
		arg(&a, "--step"), arg(&a, pick(2) ? "0" : "1");
	if (one == 1)
		arg(&a, "--svg"), arg(&a, out_file("memory.svg"));
	args_format(&a);
	args_run(&a, one, n);
	run(cmd_memory, &a);

	args_start(&a, "replay");
	if (pick(2))
		arg(&a, "--capacity"), arg(&a, pick(2) ? "1MiB" : "80GB");
	if (pick(3) == 0)
		arg(&a, "--kind"), arg(&a, kinds[pick(4)]);
	if (pick(4) == 0)
		arg(&a, "--from"), arg(&a, "0"), arg(&a, "--to"), arg(&a, "1");
	args_range(&a, "--range");
	if (pick(3) == 0)
		arg(&a, "--view"), arg(&a, pick(2) ? "driver" : "model");
	args_format(&a);
	args_run(&a, one, n);
	run(cmd_replay, &a);

	args_start(&a, "flops");
	arg(&a, "--by");
	arg(&a, pick(2) ? "kind" : "op");
	if (pick(3) == 0)
		arg(&a, "--phase"), arg(&a, phases[pick(5)]);
	args_range(&a, "--range");
	args_maybe(&a, "--include-warmup");
	arg(&a, "--svg"), arg(&a, out_file("roofline.svg"));
	args_format(&a);
	args_run(&a, one, n);
	run(cmd_flops, &a);

	args_start(&a, "comm");
	args_maybe(&a, "--include-warmup");
	if (pick(3) == 0)
		arg(&a, "--top"), arg(&a, pick(2) ? "1" : "3");
	if (pick(3) == 0)   /* the per-rank reduction (docs/scale.md), or another table alone */
		arg(&a, "--section"), arg(&a, pick(2) ? "instances" : pick(2) ? "skew" : "ranks");
	args_format(&a);
	args_run(&a, one, n);
	run(cmd_comm, &a);

	args_start(&a, "explain");
	{
		static const char *const rules[] = {
			"graph", "no-sync", "comm-overlap", "comm-bw=2", "host=0.5", "kernels:*=0.5", "kernels:<10us=0",
			"ranks=4", "no-contention", "kernels:*gemm*=0.5", "kernels:*/a/*=2", "kernels:[a-m]*=0",
			"kernels:nccl*=0.5", "kernels:*[!x]x*=3", "kernels:\\*=1", "ranks=2", "ranks=65536",
			"kernels:layer.3/*=0",
			/* graph/rules.c's */
			"precision=bf16", "batch=x2", "batch=x0.001", "fuse=elementwise", "data=0", "data=3",
			"bucket-mb=100", "bucket-mb=0.000001",
		};
		static const char *const buckets[] = { "25", "0.000001", "1e300", "0.5", "1000000" };

		for (int i = pick(4); i > 0; i--) {
			const char *r = rules[pick(sizeof(rules) / sizeof(rules[0]))];

			arg(&a, "--what-if");
			arg(&a, r);
			if (!strncmp(r, "ranks=", 6)) {
				arg(&a, "--allreduce"), arg(&a, fz.allreduce[pick(N_TABLES)]);
				if (pick(3) == 0)
					arg(&a, "--bucket-mb"), arg(&a, buckets[pick(5)]);
			}
		}
	}
	args_maybe(&a, "--naive");
	args_maybe(&a, "--include-warmup");
	args_format(&a);
	args_run(&a, one, n);
	run(cmd_explain, &a);

	/* plan from a bundle: its parameters and world size, any parallelism */
	args_start(&a, "plan");
	if (pick(2)) {
		static const char *const degrees[] = { "1", "2", "8", "64", "1024" };
		static const char *const what[] = { "--tp", "--dp", "--pp", "--fsdp", "--microbatches" };

		arg(&a, what[pick(5)]), arg(&a, degrees[pick(5)]);
	}
	args_format(&a);
	args_bundles(&a, 1);
	run(cmd_plan, &a);

	/* against a good bundle, either side; a set's two runs against each other */
	args_start(&a, "diff");
	arg(&a, "--by");
	arg(&a, by_diff[pick(5)]);
	args_maybe(&a, "--include-warmup");
	args_format(&a);
	if (n > one) {
		args_maybe(&a, "--per-rank");
		args_bundles(&a, n);
	} else if (pick(2)) {
		arg(&a, fz.good);
		args_bundles(&a, n);
	} else {
		args_bundles(&a, n);
		arg(&a, fz.good);
	}
	run(cmd_diff, &a);

	args_start(&a, "export");
	arg(&a, "--format");
	arg(&a, exports_to[pick(3)]);
	if (pick(4) == 0)
		arg(&a, "--step"), arg(&a, "0");
	args_range(&a, "--range");
	args_maybe(&a, "--no-api");
	arg(&a, "-o");
	arg(&a, out_file("export.out"));
	args_run(&a, one, n);
	run(cmd_export, &a);

	args_start(&a, "report");
	arg(&a, "-o");
	arg(&a, out_file("report.html"));
	args_bundles(&a, n);
	if (n == one && pick(2))
		arg(&a, fz.good);
	run(cmd_report, &a);
}

/* ---- setup ------------------------------------------------------------------------------ */

/* A small bundle every command has something to say about: ops, ranges, launches, memory, steps. */
static int write_good(const char *path)
{
	struct builder b;
	uint32_t op[3];

	builder_init(&b);
	builder_small_model(&b, "bf16");
	builder_h100(&b, "H100");
	if (builder_open(&b, path) < 0)
		return -1;
	op[0] = builder_op(&b, &(struct builder_op){ .path = "step/forward/layer.0/attn/softmax",
						     .kind = "attn/softmax", .phase = "forward", .flops = 1 << 20,
						     .bytes = 1 << 16, .inputs = { ST_DT_BF16 },
						     .outputs = { ST_DT_BF16 } });
	op[1] = builder_op(&b, &(struct builder_op){ .path = "step/backward/layer.0/ffn/w1", .kind = "ffn/w1",
						     .phase = "backward", .flops = 1 << 30, .bytes = 1 << 20,
						     .inputs = { ST_DT_BF16, ST_DT_BF16 },
						     .outputs = { ST_DT_F32 } });
	op[2] = builder_op(&b, &(struct builder_op){ .path = "step/optimizer/adamw", .kind = "adamw",
						     .phase = "optimizer", .flops = 1 << 10, .bytes = 1 << 24,
						     .inputs = { ST_DT_F32 }, .outputs = { ST_DT_F32 } });
	builder_alloc(&b, 1, 0x10000, 1 << 20, ST_MEM_PARAMETER, 0);
	for (uint64_t s = 0; s < 3; s++) {
		uint64_t t = 100 + s * 10000;
		builder_push(&b, "step", t);
		builder_push(&b, "forward", t + 10);
		builder_alloc(&b, t + 20, 0x200000 + s * 0x1000, 4096, ST_MEM_ACTIVATION, op[0]);
		builder_launch(&b, "softmax_kernel", 7, op[0], t + 30, t + 40, t + 100, t + 900);
		builder_pop(&b, t + 1000);
		builder_push(&b, "backward", t + 1100);
		builder_launch(&b, "sm90_xmma_gemm_bf16bf16_bf16f32", 7, op[1], t + 1200, t + 1210, t + 1300, t + 4000);
		builder_memcpy(&b, 1, 4096, builder_call(&b, "cudaMemcpyAsync", t + 1300, t + 1310), 8, 0,
			       t + 1400, t + 1500);
		builder_free(&b, t + 4100, 0x200000 + s * 0x1000, 4096, ST_MEM_ACTIVATION, op[1]);
		builder_pop(&b, t + 4200);
		builder_push(&b, "optimizer", t + 4300);
		builder_launch(&b, "adamw_kernel", 7, op[2], t + 4400, t + 4410, t + 4500, t + 8000);
		builder_pop(&b, t + 8100);
		builder_pop(&b, t + 9000);
		builder_step(&b, (uint32_t)s, s == 0, t, t + 9000);
	}
	b.steps_from = "built-in step";
	return builder_close(&b, "ok");
}

/*
 * The all-reduce tables explain's ranks=N reads: bench allreduce's, comm's
 * collectives of a recorded run (Bytes, Busbw), one of 20,000 rows in
 * reverse order with sizes twice over, one of values no link has (zero,
 * negative, 10^300 bytes), one with no row of numbers.
 */
static void write_tables(void)
{
	static const char *const bench =
		"size,bytes,dtype,ranks,rank,iters,mean_us,min_us,max_us,std_us,algbw_gbs,busbw_gbs,check\n"
		"1 MiB,1048576,f32,4,all,10,50,40,60,5,20,30,ok\n"
		"1 GiB,1073741824,f32,4,all,10,9000,8900,9100,50,119,179,ok\n";
	static const char *const comm =
		"Collective,Count,Bytes,Time (ms),Transfer (us),Algbw (GB/s),Busbw (GB/s),Hidden (%),Exposed (%)\n"
		"allreduce (NCCL RING LL),2,4194304,1.053,15.0,279.62,558.69,0.0,100.0\n"
		"allreduce (total per step),2,8388608,1.053,15.0,279.62,558.69,0.0,100.0\n";
	static const char *const odd =
		"Bytes,Bus BW (GB/s),mean_us,GPUs\n0,0,0,0\n-5,-1,-1,1\n1e300,1e300,1e300,2\n1,1e-300,1e-300,65536\n"
		"nan,inf,nan,4\n4096,100,10,4\n";

	for (int t = 0; t < N_TABLES; t++) {
		FILE *f;

		snprintf(fz.allreduce[t], sizeof(fz.allreduce[t]), "%s/allreduce%d.csv", fz.dir, t);
		f = fopen(fz.allreduce[t], "w");
		if (!f)
			abort();
		if (t == 0)
			fputs(bench, f);
		else if (t == 1)
			fputs(comm, f);
		else if (t == 2)
			for (int i = 20000; i > 0; i--)
				fprintf(f, i == 20000 ? "Bytes,Bus BW (GB/s)\n%d,%d\n" : "%d,%d\n", 4096 * (i / 2), 100 + i % 7);
		else if (t == 3)
			fputs(odd, f);
		else
			fputs("Bytes,Busbw (GB/s)\nnone,none\n", f);
		if (fclose(f))
			abort();
	}
}

static void remove_scratch(void)
{
	DIR *d = opendir(fz.dir);
	struct dirent *e;
	char path[512];

	while (d && (e = readdir(d))) {
		snprintf(path, sizeof(path), "%s/%s", fz.dir, e->d_name);
		if (e->d_name[0] != '.')
			unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(fz.dir);
}

static void setup(void)
{
	const char *where = getenv("ST_FUZZ_SCRATCH");

	if (!where)
		where = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
	snprintf(fz.dir, sizeof(fz.dir), "%s/st-fuzz-commands-%d", where, (int)getpid());
	if (mkdir(fz.dir, 0700) < 0) {
		perror(fz.dir);
		abort();
	}
	atexit(remove_scratch);
	for (int i = 0; i < EDIT_MAX_BUNDLES; i++)
		snprintf(fz.bundle[i], sizeof(fz.bundle[i]), "%s/rank%d.stb", fz.dir, i);
	snprintf(fz.good, sizeof(fz.good), "%s/good.stb", fz.dir);
	write_tables();
	fz.verbose = getenv("ST_FUZZ_VERBOSE") != NULL;
	if (write_good(fz.good) < 0)
		abort();
	/* reports go nowhere; messages are caught per command (run) */
	if (!freopen("/dev/null", "w", stdout))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *bundle[EDIT_MAX_BUNDLES];
	size_t len[EDIT_MAX_BUNDLES], run[EDIT_MAX_BUNDLES], n, one = 0, written = 0;

	if (!fz.dir[0])
		setup();
	fz.data = data;
	fz.size = size;
	n = edit_split(data, size, bundle, len);
	runs(bundle, len, n, run);
	/* the first run's bundles first */
	for (size_t pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < n; i++) {
			FILE *f;
			if ((run[i] == run[0]) != (pass == 0))
				continue;
			one += pass == 0;
			f = fopen(fz.bundle[written], "wb");
			if (f && fwrite(bundle[i], 1, len[i], f) == len[i] && fclose(f) == 0)
				written++;
			else if (f)
				fclose(f);
		}
	for (size_t i = 0; i < n; i++)
		free(bundle[i]);
	fz.hash = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < size; i++)
		fz.hash = (fz.hash ^ data[i]) * 0x100000001b3ull;
	fz.hash |= 1;
	if (written == n && n)
		run_all(one, n);
	return 0;
}
