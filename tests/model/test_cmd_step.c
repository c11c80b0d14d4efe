/*
 * `steptrace step` (cmd_step.c) over the CPU stand-in of model.h: its
 * output file holds the reference's loss, gradients and AdamW-updated
 * weights; mismatched inputs are refused with one error line.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check.h"
#include "cmd/commands.h"
#include "lib/error.h"
#include "tests/lib/reference.h"
#include "trace/types.h"

static char dir[512], wpath[600], bpath[600], opath[600];

#define SIZES "--model", "custom", "--d-model", "16", "--d-ff", "24", "--layers", "2", \
	"--heads", "2", "--vocab", "17", "--batch", "2", "--ctx", "6"

static struct model_config tiny(void)
{
	struct model_config c;

	model_config_preset("small", &c);
	snprintf(c.name, sizeof(c.name), "custom");
	c.d_model = 16, c.d_ff = 24, c.layers = 2, c.heads = 2, c.vocab = 17, c.batch = 2, c.ctx = 6;
	c.lr = 0.01;
	return c;
}

static int run(int argc, const char **argv)
{
	return cmd_step(argc, argv);
}

#define RUN(...)                                                        \
	({                                                              \
		const char *av_[] = { "step", __VA_ARGS__, NULL };       \
		run((int)(sizeof(av_) / sizeof(av_[0])) - 1, av_);      \
	})

/* Runs quietly; returns the exit code and the number of error lines. */
static int run_quiet(int *errors, int argc, const char **argv)
{
	FILE *cap = tmpfile();
	char buf[4096];
	size_t n, i;
	int rc;

	error_set_stream(cap);
	rc = run(argc, argv);
	error_set_stream(NULL);
	rewind(cap);
	n = fread(buf, 1, sizeof(buf) - 1, cap);
	buf[n] = 0;
	fclose(cap);
	*errors = 0;
	for (i = 0; i + 7 <= n; i++)
		*errors += !strncmp(buf + i, "error: ", 7);
	return rc;
}

#define RUN_QUIET(errs, ...)                                            \
	({                                                              \
		const char *av_[] = { "step", __VA_ARGS__, NULL };       \
		run_quiet(errs, (int)(sizeof(av_) / sizeof(av_[0])) - 1, av_); \
	})

static void write_batch(const char *path, int dtype, int64_t rows, int64_t cols, int bad_id)
{
	struct tensor_set b;
	int64_t shape[2] = { rows, cols }, v[64];
	int32_t v32[64];
	int i;

	for (i = 0; i < rows * cols; i++)
		v[i] = v32[i] = (int32_t)((i * 7 + 3) % 17);
	if (bad_id)
		v[5] = v32[5] = 17;
	tensor_set_init(&b);
	tensor_set_add(&b, "inputs", dtype, 2, shape, dtype == ST_DT_I64 ? (void *)v : (void *)v32);
	for (i = 0; i < rows * cols; i++)
		v[i] = v32[i] = (int32_t)((i * 5 + 1) % 17);
	tensor_set_add(&b, "targets", dtype, 2, shape, dtype == ST_DT_I64 ? (void *)v : (void *)v32);
	safetensors_write(path, &b, NULL);
	tensor_set_release(&b);
}

static void check_train_output(void)
{
	struct model_config c = tiny();
	struct tensor_set w, g, m, v, out;
	int32_t in[12], tg[12];
	double loss;
	size_t i, j;
	char name[160];

	tensor_set_init(&w), tensor_set_init(&g), tensor_set_init(&m), tensor_set_init(&v);
	CHECK(safetensors_read(wpath, &w) == 0, "weights");
	for (i = 0; i < 12; i++)
		in[i] = (int32_t)((i * 7 + 3) % 17), tg[i] = (int32_t)((i * 5 + 1) % 17);
	CHECK(ref_forward_backward(&c, &w, in, tg, &loss, &g) == 0, "reference");
	CHECK(safetensors_read(opath, &out) == 0, "output");
	CHECK(tensor_set_find(&out, "loss") &&
	      *(float *)tensor_set_find(&out, "loss")->data == (float)loss, "loss");
	for (i = 0; i < g.n; i++) {
		const struct named_tensor *og;

		snprintf(name, sizeof(name), "grad.%s", g.t[i].name);
		og = tensor_set_find(&out, name);
		CHECK(og && og->dtype == ST_DT_F32 && og->ndim == g.t[i].ndim, "%s", name);
		for (j = 0; og && j < (size_t)named_tensor_numel(og); j++)
			CHECK(((float *)og->data)[j] == (float)((double *)g.t[i].data)[j], "%s[%zu]",
			      name, j);
	}
	CHECK(ref_adamw(&c, &w, &g, &m, &v, 1) == 0, "adamw");
	for (i = 0; i < w.n; i++) {
		const struct named_tensor *ow = tensor_set_find(&out, w.t[i].name);

		CHECK(ow && ow->bytes == w.t[i].bytes && !memcmp(ow->data, w.t[i].data, ow->bytes),
		      "updated %s", w.t[i].name);
	}
	CHECK(out.n == 1 + 2 * w.n, "%zu tensors", out.n);
	tensor_set_release(&w), tensor_set_release(&g), tensor_set_release(&m);
	tensor_set_release(&v), tensor_set_release(&out);
}

int main(void)
{
	const char *env = getenv("ST_TEST_TMPDIR");
	struct model_config c = tiny();
	struct tensor_set w, out;
	char bad[600];
	int errs;

	snprintf(dir, sizeof(dir), "%s", env && *env ? env : "/tmp");
	snprintf(wpath, sizeof(wpath), "%s/step-w.safetensors", dir);
	snprintf(bpath, sizeof(bpath), "%s/step-b.safetensors", dir);
	snprintf(opath, sizeof(opath), "%s/step-out.safetensors", dir);
	snprintf(bad, sizeof(bad), "%s/step-bad.safetensors", dir);
	tensor_set_init(&w);
	ref_init_weights(&c, 3, &w);
	safetensors_write(wpath, &w, NULL);
	tensor_set_release(&w);
	write_batch(bpath, ST_DT_I64, 2, 6, 0);

	CHECK(RUN(SIZES, "--mode", "train", "--lr", "0.01", "--weights", wpath, "--batch-file", bpath,
		  "-o", opath) == 0, "train step");
	check_train_output();

	/* I32 batch, forward mode: loss and weights, no gradients. */
	write_batch(bad, ST_DT_I32, 2, 6, 0);
	CHECK(RUN(SIZES, "--mode", "forward", "--weights", wpath, "--batch-file", bad, "-o", opath) == 0,
	      "forward step");
	CHECK(safetensors_read(opath, &out) == 0 && out.n == 1 + (size_t)model_param_count(&c) &&
	      !tensor_set_find(&out, "grad.lm_head.weight"), "forward output");
	tensor_set_release(&out);
	/* Random weights and batch. */
	CHECK(RUN(SIZES, "--seed", "5", "-o", opath) == 0, "random step");

	/* Refusals: exit code and exactly one error line each. */
	write_batch(bad, ST_DT_I64, 2, 5, 0);
	CHECK(RUN_QUIET(&errs, SIZES, "--weights", wpath, "--batch-file", bad, "-o", opath) == 1 &&
	      errs == 1, "batch of the wrong shape (%d errors)", errs);
	write_batch(bad, ST_DT_I64, 2, 6, 1);
	CHECK(RUN_QUIET(&errs, SIZES, "--weights", wpath, "--batch-file", bad, "-o", opath) == 1 &&
	      errs == 1, "token outside the vocabulary");
	CHECK(RUN_QUIET(&errs, SIZES, "--weights", bpath, "-o", opath) == 1 && errs == 1,
	      "weights file without weights");
	CHECK(RUN_QUIET(&errs, "--model", "custom", "--d-model", "16", "--d-ff", "24", "--layers", "2",
			"--heads", "2", "--vocab", "18", "--batch", "2", "--ctx", "6",
			"--weights", wpath, "-o", opath) == 1 && errs == 1, "vocabulary mismatch");
	CHECK(RUN_QUIET(&errs, SIZES, "--weights", wpath, "--batch-file", dir, "-o", opath) == 1 &&
	      errs == 1, "batch file is a directory");
	CHECK(RUN_QUIET(&errs, SIZES, "--mode", "train") == 129, "missing -o");
	CHECK(RUN_QUIET(&errs, SIZES, "--precision", "fp16", "-o", opath) == 129, "bad precision");
	CHECK(RUN_QUIET(&errs, "--model", "custom", "--d-model", "16", "-o", opath) == 1 && errs == 1,
	      "custom without layers");
	CHECK(RUN_QUIET(&errs, SIZES, "--heads", "3", "-o", opath) == 1 && errs == 1, "16 / 3 heads");
	CHECK(RUN_QUIET(&errs, SIZES, "--bogus", "-o", opath) == 129, "unknown option");
	setenv("ST_TEST_NO_GPU", "1", 1);
	CHECK(RUN_QUIET(&errs, SIZES, "-o", opath) == 1 && errs == 1, "no GPU");
	unsetenv("ST_TEST_NO_GPU");
	setenv("ST_TEST_DEVICE_BYTES", "1000", 1);
	CHECK(RUN_QUIET(&errs, SIZES, "-o", opath) == 1 && errs == 1, "OOM");
	unsetenv("ST_TEST_DEVICE_BYTES");
	{
		const char *av[] = { "step", "--help", NULL };
		FILE *keep = stdout;

		stdout = fopen("/dev/null", "w");
		CHECK(run(2, av) == 0, "--help");
		fclose(stdout);
		stdout = keep;
	}
	return check_done("model_cmd_step");
}
