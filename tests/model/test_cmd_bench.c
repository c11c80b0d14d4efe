/*
 * `steptrace bench` (cmd_bench.c) over the CPU stand-in of model.h: one row
 * per configuration in sweep order, OOM rows that do not stop the sweep,
 * and refusals of bad lists.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/lib/check.h"
#include "cmd/commands.h"
#include "lib/error.h"

/* Runs cmd_bench with stdout into buf. */
static int bench(char *buf, size_t cap, int argc, const char **argv)
{
	FILE *out = tmpfile(), *err = fopen("/dev/null", "w");
	int saved = dup(1), saved_err = dup(2), rc;
	size_t n;

	fflush(stdout);
	fflush(stderr);
	dup2(fileno(out), 1);
	dup2(fileno(err), 2);
	error_set_stream(err);
	rc = cmd_bench(argc, argv);
	fflush(stdout);
	fflush(stderr);
	error_set_stream(NULL);
	dup2(saved, 1);
	dup2(saved_err, 2);
	close(saved);
	close(saved_err);
	rewind(out);
	n = fread(buf, 1, cap - 1, out);
	buf[n] = 0;
	fclose(out);
	fclose(err);
	return rc;
}

#define BENCH(buf, ...)                                                         \
	({                                                                      \
		const char *av_[] = { "bench", __VA_ARGS__, NULL };              \
		bench(buf, sizeof(buf), (int)(sizeof(av_) / sizeof(av_[0])) - 1, av_); \
	})

static int count(const char *s, const char *what)
{
	int n = 0;

	while ((s = strstr(s, what)))
		n++, s++;
	return n;
}

int main(void)
{
	static char buf[65536];
	int rc;

	rc = BENCH(buf, "--d-model", "16", "--layers", "1", "--heads", "2", "--vocab", "32",
		   "--batch", "1", "--ctx", "4,8", "--precision", "fp32,bf16",
		   "--mode", "forward,train", "--warmup", "1", "--steps", "3", "--format", "csv");
	CHECK(rc == 0, "sweep exit %d", rc);
	CHECK(count(buf, "\ncustom,") == 8, "8 rows:\n%s", buf);
	CHECK(strstr(buf, "model,params,ctx,precision,mode,forward_ms") != NULL, "header:\n%s", buf);
	CHECK(strstr(buf, "custom,5168,4,fp32,forward,") != NULL, "first row:\n%s", buf);
	CHECK(strstr(buf, "custom,5168,8,bf16,train,") != NULL, "last row:\n%s", buf);
	CHECK(count(buf, ",ok") == 8, "all ok:\n%s", buf);

	/* both kernels: a row each, and the side-by-side table pairing them */
	rc = BENCH(buf, "--d-model", "16", "--layers", "1", "--heads", "2", "--vocab", "32",
		   "--batch", "1", "--ctx", "4", "--precision", "fp32,bf16", "--kernels", "plain,fused",
		   "--warmup", "1", "--steps", "2", "--format", "csv");
	CHECK(rc == 0, "kernels sweep exit %d", rc);
	CHECK(count(buf, ",ok,plain") == 2 && count(buf, ",ok,fused") == 2, "4 rows:\n%s", buf);
	CHECK(strstr(buf, "model,ctx,precision,mode,plain_forward_ms,fused_forward_ms,plain_step_ms,"
			  "fused_step_ms,speedup") != NULL, "side-by-side header:\n%s", buf);
	CHECK(count(buf, "\ncustom,4,") == 2, "2 side-by-side rows:\n%s", buf);
	CHECK(BENCH(buf, "--kernels", "plain,fast") == 1, "bad kernels");
	rc = BENCH(buf, "--d-model", "16", "--layers", "1", "--heads", "2", "--ctx", "4",
		   "--kernels", "fused", "--steps", "1", "--format", "csv");
	CHECK(rc == 0 && !strstr(buf, "speedup"), "one kernel set, no side-by-side table:\n%s", buf);

	/* A device of 4 MB: the small context fits, the long one is OOM, the sweep goes on. */
	setenv("ST_TEST_DEVICE_BYTES", "4000000", 1);
	rc = BENCH(buf, "--d-model", "16", "--layers", "1", "--heads", "2", "--vocab", "32",
		   "--ctx", "4,512,8", "--steps", "2", "--warmup", "0", "--format", "json");
	unsetenv("ST_TEST_DEVICE_BYTES");
	CHECK(rc == 0, "OOM sweep exit %d", rc);
	CHECK(count(buf, "\"OOM\"") == 1 && count(buf, "\"ok\"") == 2, "OOM row:\n%s", buf);
	CHECK(strstr(buf, "setup/parameters") != NULL, "OOM note names the op:\n%s", buf);

	rc = BENCH(buf, "--d-model", "16", "--layers", "1", "--heads", "2", "--vocab", "32",
		   "--ctx", "4", "--steps", "2", "--warmup", "0");
	CHECK(rc == 0 && count(buf, "custom") == 1, "text table:\n%s", buf);

	CHECK(BENCH(buf, "--model", "small,tiny") == 1, "unknown model");
	CHECK(BENCH(buf, "--ctx", "128,abc") == 1, "bad ctx");
	CHECK(BENCH(buf, "--ctx", "128,") == 1, "empty list item");
	CHECK(BENCH(buf, "--precision", "fp8") == 1, "bad precision");
	CHECK(BENCH(buf, "--mode", "backward") == 1, "bad mode");
	CHECK(BENCH(buf, "--steps", "0") == 129, "no steps");
	CHECK(BENCH(buf, "--format", "xml") == 129, "bad format");
	CHECK(BENCH(buf, "extra") == 129, "positional argument");
	/* several GPUs: flags checked first; this build has no NCCL (comm_none.c) and says so */
	CHECK(BENCH(buf, "--nproc", "2") == 129, "--nproc without --ddp");
	CHECK(BENCH(buf, "--nproc", "-1", "--ddp", "flat") == 129, "negative --nproc");
	CHECK(BENCH(buf, "--ddp", "flat", "--timeout", "0") == 129, "zero --timeout");
	CHECK(BENCH(buf, "--ddp", "sharded") == 129, "unknown --ddp");
	CHECK(BENCH(buf, "--ddp", "flat", "--mode", "forward") == 1, "--ddp needs a backward");
	CHECK(BENCH(buf, "--ddp", "flat", "--bucket-mb", "5") == 1, "--bucket-mb without buckets");
	CHECK(BENCH(buf, "--ddp", "bucket", "--bucket-mb", "0") == 1, "a bucket of 0 MB");
	CHECK(BENCH(buf, "--ddp", "flat", "--sm-carveout", "8") == 1, "--sm-carveout without overlap");
	CHECK(BENCH(buf, "--ddp", "naive", "--nccl-ctas", "8") == 1, "--nccl-ctas without overlap");
	CHECK(BENCH(buf, "--ddp", "bucket", "--sm-carveout", "-3") == 1, "a negative carve-out");
	CHECK(BENCH(buf, "--ddp", "overlap", "--nccl-ctas", "5000") == 1, "5000 CTAs");
	CHECK(BENCH(buf, "--allreduce-by", "exchange") == 1, "--allreduce-by without --ddp");
	CHECK(BENCH(buf, "--ddp", "bucket", "--allreduce-by", "shm") == 129, "unknown --allreduce-by");
	CHECK(BENCH(buf, "--ddp", "bucket", "--nproc", "2", "--d-model", "16", "--layers", "1",
		    "--heads", "2") == 1, "no NCCL in this build");
	CHECK(buf[0] == '\0', "nothing on stdout:\n%s", buf);
	CHECK(BENCH(buf, "allreduce", "--help") == 0, "allreduce --help");
	CHECK(BENCH(buf, "allreduce", "--sizes", "1MiB,x") == 129, "allreduce: bad size");
	CHECK(BENCH(buf, "allreduce", "--sizes", "2") == 129, "allreduce: less than an element");
	CHECK(BENCH(buf, "allreduce", "--dtype", "f64") == 129, "allreduce: unknown dtype");
	CHECK(BENCH(buf, "allreduce", "--iters", "0") == 129, "allreduce: no iterations");
	CHECK(BENCH(buf, "allreduce", "extra") == 129, "allreduce: positional argument");
	CHECK(BENCH(buf, "allreduce", "--nproc", "2") == 1, "allreduce: no NCCL in this build");
	CHECK(BENCH(buf, "contention", "--help") == 0, "contention --help");
	CHECK(BENCH(buf, "contention", "--sizes", "25MiB,x") == 129, "contention: bad size");
	CHECK(BENCH(buf, "contention", "--sizes", "2") == 129, "contention: less than an element");
	CHECK(BENCH(buf, "contention", "--dtype", "f64") == 129, "contention: unknown dtype");
	CHECK(BENCH(buf, "contention", "--dtype", "f32,") == 129, "contention: empty dtype");
	CHECK(BENCH(buf, "contention", "--iters", "0") == 129, "contention: no iterations");
	CHECK(BENCH(buf, "contention", "--iters", "1001") == 129, "contention: too many iterations");
	CHECK(BENCH(buf, "contention", "--warmup", "-1") == 129, "contention: negative warm-up");
	CHECK(BENCH(buf, "contention", "--calibration", "") == 129, "contention: empty file name");
	CHECK(BENCH(buf, "contention", "--nproc", "-1") == 129, "contention: negative --nproc");
	CHECK(BENCH(buf, "contention", "extra") == 129, "contention: positional argument");
	CHECK(BENCH(buf, "contention", "--nproc", "2", "--calibration", "cal.csv") == 1,
	      "contention: no NCCL in this build");
	CHECK(access("cal.csv", F_OK) != 0, "contention: a calibration written without a measurement");

	setenv("ST_TEST_NO_GPU", "1", 1);
	CHECK(BENCH(buf, "--d-model", "16", "--layers", "1", "--heads", "2") == 1, "no GPU");

	/* bench attention: its grid is checked before the GPU is asked for */
	CHECK(BENCH(buf, "attention", "--help") == 0, "attention --help");
	CHECK(BENCH(buf, "attention", "--seq", "256,x") == 129, "attention: bad seq");
	CHECK(BENCH(buf, "attention", "--d-head", "0") == 129, "attention: zero d_head");
	CHECK(BENCH(buf, "attention", "--impl", "sdpa") == 129, "attention: unknown impl");
	CHECK(BENCH(buf, "attention", "--precision", "fp32,") == 129, "attention: empty item");
	CHECK(BENCH(buf, "attention", "--steps", "0") == 129, "attention: no steps");
	CHECK(BENCH(buf, "attention", "--model", "small") == 129, "attention: a model flag");
	CHECK(BENCH(buf, "attention", "extra") == 129, "attention: positional argument");
	CHECK(BENCH(buf, "attention", "--seq", "256", "--no-causal") == 1, "attention: no GPU");
	unsetenv("ST_TEST_NO_GPU");
	return check_done("model_cmd_bench");
}
