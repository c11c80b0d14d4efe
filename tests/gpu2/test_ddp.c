/*
 * test_ddp.c (label gpu2; with argument 4, label gpu4 on four GPUs): the
 * data-parallel step on two GPUs (or four) against one,
 * for FP32 and BF16 and every --ddp mode (buckets small enough that the
 * tiny model has several):
 *   - two ranks with batch 2 each (rows 0-1 and 2-3 of one batch of 4; four
 *     ranks: a row each) take
 *     a training step: the mean of their losses is one GPU's loss on the
 *     batch of 4, and the gradients they hold after the all-reduce are one
 *     GPU's gradients of it, to the precision's tolerance (tests/gpu's:
 *     FP32 loss 1e-5 and gradients 1e-4 ||a - b|| / ||b||; BF16 1e-2 and
 *     3e-2);
 *   - both ranks hold bitwise the same gradients, and after three more steps
 *     bitwise the same parameters (a checksum of every byte);
 *   - the step's times name the communication (comm_ms > 0).
 * overlap and bucket run with bench's and record's defaults: the matrix
 * products' SM carve-out and NCCL's CTAs capped (model/config.h). Every
 * case three times: the all-reduces by NCCL, by the copy engines
 * (--allreduce-by ce, model/ddp_ce.h), whose buckets of 20 KiB and per-tensor
 * collectives (overlap: a 64-element norm weight leaves one rank's shard
 * empty) cover its shard boundaries, and by the copy engines' exchange
 * averaged in AdamW (--allreduce-by exchange; once more in fwdbwd mode, where
 * no optimizer runs and grad_reduce averages).
 * Each rank runs in a process of its own (ranks_launch, as --nproc does),
 * and so does the one-GPU reference: they write what they computed to files
 * that this process, which never touches CUDA, compares. Exit 77 (skipped)
 * without two GPUs.
 */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/gpu/gpu_test.h"
#include "lib/error.h"
#include "model/comm.h"
#include "model/model.h"
#include "model/ranks.h"

#define ROWS 4         /* the batch all ranks share */
#define MAX_RANKS 4

static int ranks = 2;   /* argv[1]: 2 (label gpu2) or 4 (gpu4) */
#define B (ROWS / ranks)   /* per rank */
#define T 32
#define EXTRA_STEPS 3

static char dir[256];

struct job {
	enum st_precision precision;
	enum st_ddp ddp;
	int allreduce;          /* MODEL_ALLREDUCE_NCCL, _CE, _EXCHANGE */
	const char *name;       /* of the files */
	enum st_mode mode;      /* 0: train */
};

static struct model_config config(const struct job *j, int batch)
{
	struct model_config c;
	struct model_dims dims = { .d_model = 64, .d_ff = 256, .layers = 2, .heads = 4, .vocab = 256,
				   .ctx = T, .batch = batch };

	if (model_config_resolve("custom", &dims, &c))
		exit(1);
	c.precision = j->precision;
	c.mode = j->mode ? j->mode : ST_MODE_TRAIN;
	c.ddp = j->ddp;
	c.bucket_mb = 0.02;   /* 20 KiB: the embedding alone is 64 KiB */
	c.allreduce = j->allreduce;
	model_config_ddp_defaults(&c);   /* the defaults of bench and record */
	return c;
}

static void batch_of_four(int32_t *ids)
{
	ref_random_tokens(99, ROWS * T + 1, 256, ids);
}

static uint64_t fnv(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* loss, then every gradient (F32, the parameters' order), then a checksum of the weights. */
static int write_result(const char *path, double loss, const struct tensor_set *g, uint64_t sum)
{
	FILE *f = fopen(path, "wb");
	int ok = f != NULL;

	ok = ok && fwrite(&loss, sizeof(loss), 1, f) == 1;
	for (size_t i = 0; ok && i < g->n; i++)
		ok = fwrite(g->t[i].data, 1, g->t[i].bytes, f) == g->t[i].bytes;
	ok = ok && fwrite(&sum, sizeof(sum), 1, f) == 1;
	if (f && fclose(f))
		ok = 0;
	return ok ? 0 : error("cannot write '%s'", path);
}

/* One model's step(s): set up, first step, what it holds, more steps, the weights' checksum. */
static int run_model(const struct job *j, struct comm *comm, int rank, int batch, const char *path)
{
	struct model_config c = config(j, batch);
	struct tensor_set w, g;
	struct model_step_times st;
	struct model *m = NULL;
	struct model_oom oom;
	int32_t ids[ROWS * T + 1];
	uint64_t sum = 1469598103934665603ull;
	size_t off = comm ? (size_t)rank * B * T : 0;
	int rc = 1;

	if (!comm)
		c.ddp = ST_DDP_NONE;   /* the reference: one GPU, the whole batch */
	tensor_set_init(&w);
	tensor_set_init(&g);
	batch_of_four(ids);
	if (model_create(&m, &c, NULL, &oom) != MODEL_OK || (comm && model_set_comm(m, comm)) ||
	    model_init_random(m, 5) || model_set_batch(m, ids + off, ids + 1 + off) ||
	    model_step(m, 0, false, &st) || model_export(m, &w, &g))
		goto out;
	if (comm && !(st.comm_ms > 0)) {
		error("the step names no communication (comm_ms %g)", st.comm_ms);
		goto out;
	}
	for (uint32_t s = 1; s <= EXTRA_STEPS && comm; s++)
		if (model_step(m, s, false, NULL))
			goto out;
	tensor_set_release(&w);
	if (comm && model_export(m, &w, NULL))
		goto out;
	for (size_t i = 0; i < w.n; i++)
		sum = fnv(w.t[i].data, w.t[i].bytes, sum);
	rc = write_result(path, st.loss, &g, sum) ? 1 : 0;
out:
	model_free(m);
	tensor_set_release(&w);
	tensor_set_release(&g);
	return rc;
}

static int rank_main(const struct rank_info *ri, void *ctx)
{
	const struct job *j = ctx;
	struct comm *comm = comm_init(ri, 120, config(j, B).nccl_ctas);
	char path[512];
	int rc;

	if (!comm)
		return 1;
	snprintf(path, sizeof(path), "%s/%s.rank%d", dir, j->name, ri->rank);
	rc = run_model(j, comm, ri->rank, B, path);
	if (rc)
		comm_abort(comm);
	comm_free(comm);
	return rc;
}

/* The one-GPU reference, in a child of its own (this process keeps off CUDA). */
static int reference(const struct job *j)
{
	char path[512];
	pid_t pid = fork();
	int st;

	if (pid == 0) {
		snprintf(path, sizeof(path), "%s/%s.ref", dir, j->name);
		_exit(run_model(j, NULL, 0, ROWS, path));
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

static double *slurp(const char *name, size_t *n_floats, double *loss, uint64_t *sum)
{
	char path[512];
	FILE *f;
	long size;
	double *v = NULL;
	float *raw;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 16 || fseek(f, 0, SEEK_SET)) {
		CHECK(false, "cannot read '%s'", path);
		if (f)
			fclose(f);
		return NULL;
	}
	*n_floats = ((size_t)size - 16) / sizeof(float);
	raw = malloc(*n_floats * sizeof(float));
	v = malloc(*n_floats * sizeof(double));
	if (raw && v && fread(loss, 8, 1, f) == 1 && fread(raw, sizeof(float), *n_floats, f) == *n_floats &&
	    fread(sum, 8, 1, f) == 1) {
		for (size_t i = 0; i < *n_floats; i++)
			v[i] = raw[i];
	} else {
		CHECK(false, "cannot read '%s'", path);
		free(v);
		v = NULL;
	}
	free(raw);
	fclose(f);
	return v;
}

static void compare(const struct job *j)
{
	double tol_loss = j->precision == ST_BF16 ? 1e-2 : 1e-5, tol_grad = j->precision == ST_BF16 ? 3e-2 : 1e-4;
	double loss[MAX_RANKS + 1] = { 0 }, *g[MAX_RANKS + 1] = { NULL }, mean = 0;
	uint64_t sum[MAX_RANKS + 1] = { 0 };
	size_t n[MAX_RANKS + 1] = { 0 };
	char name[128];
	bool whole = true;

	for (int r = 0; r <= ranks; r++) {
		if (r < ranks)
			snprintf(name, sizeof(name), "%s.rank%d", j->name, r);
		else
			snprintf(name, sizeof(name), "%s.ref", j->name);
		g[r] = slurp(name, &n[r], &loss[r], &sum[r]);
		whole = whole && g[r] && n[r] == n[0];
	}
	if (whole) {
		double lerr, gerr = rel_err(g[0], g[ranks], n[0]);

		for (int r = 0; r < ranks; r++)
			mean += loss[r] / ranks;
		lerr = fabs(mean - loss[ranks]) / fabs(loss[ranks]);
		printf("%-24s mean loss %.6f vs %.6f (rel err %.2e, tol %.0e); gradients rel err %.2e "
		       "(tol %.0e)\n", j->name, mean, loss[ranks], lerr, tol_loss, gerr, tol_grad);
		CHECK(lerr <= tol_loss, "%s: the ranks' mean loss is one GPU's (%g)", j->name, lerr);
		CHECK(gerr <= tol_grad, "%s: the averaged gradients are one GPU's (%g)", j->name, gerr);
		CHECK(fabs(loss[0] - loss[1]) > 1e-6, "%s: the ranks ran different rows", j->name);
		for (int r = 1; r < ranks; r++) {
			CHECK(!memcmp(g[0], g[r], n[0] * sizeof(double)), "%s: ranks 0 and %d hold the same gradients",
			      j->name, r);
			CHECK(sum[0] == sum[r], "%s: ranks 0 and %d's parameters identical after %d more steps "
			      "(%016llx, %016llx)", j->name, r, EXTRA_STEPS, (unsigned long long)sum[0],
			      (unsigned long long)sum[r]);
		}
	} else {
		CHECK(false, "%s: results missing or of different sizes", j->name);
	}
	for (int r = 0; r <= ranks; r++)
		free(g[r]);
}

/* Two GPUs, asked in a child: this process must not initialise CUDA before it forks ranks. */
static int gpus(void)
{
	pid_t pid = fork();
	int st, n = 0;

	if (pid == 0) {
		if (cudaGetDeviceCount(&n) != cudaSuccess)
			n = 0;
		_exit(n > 100 ? 100 : n);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) ? WEXITSTATUS(st) : 0;
}

int main(int argc, char **argv)
{
	static const struct { enum st_precision p; const char *name; } precs[] = {
		{ ST_FP32, "fp32" }, { ST_BF16, "bf16" },
	};
	int n;

	if (argc > 1)
		ranks = atoi(argv[1]);
	if (ranks != 2 && ranks != 4) {
		printf("usage: test_gpu2_ddp [2|4]\n");
		return 2;
	}
	n = gpus();
	if (n < ranks) {
		printf("SKIP: %d GPU(s); the data-parallel test needs %d\n", n, ranks);
		return 77;
	}
	if (!comm_available())
		return 77;
	snprintf(dir, sizeof(dir), "%s/st-ddp-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(dir))
		return 1;
	for (int ar = MODEL_ALLREDUCE_NCCL; ar <= MODEL_ALLREDUCE_EXCHANGE; ar++)
	for (size_t p = 0; p < sizeof(precs) / sizeof(precs[0]); p++)
		for (int mode = ST_DDP_NAIVE; mode <= ST_DDP_BUCKET; mode++) {
			char name[64];
			struct job j = { precs[p].p, (enum st_ddp)mode, ar, name, 0 };

			snprintf(name, sizeof(name), "%s-%s-%s", precs[p].name, st_ddp_names[mode],
				 model_allreduce_names[ar]);
			CHECK(ranks_launch(ranks, NULL, rank_main, &j, 10) == 0, "%s: the ranks ran", name);
			CHECK(reference(&j) == 0, "%s: one GPU ran", name);
			compare(&j);
		}
	{   /* exchange without an optimizer: the average by grad_reduce, not AdamW */
		struct job j = { ST_BF16, ST_DDP_BUCKET, MODEL_ALLREDUCE_EXCHANGE, "bf16-bucket-exchange-fwdbwd",
				 ST_MODE_FWDBWD };

		CHECK(ranks_launch(ranks, NULL, rank_main, &j, 10) == 0, "%s: the ranks ran", j.name);
		CHECK(reference(&j) == 0, "%s: one GPU ran", j.name);
		compare(&j);
	}
	if (!check_failures) {
		char cmd[300];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd))
			printf("could not remove %s\n", dir);
	}
	return check_done(ranks == 4 ? "gpu4_ddp" : "gpu2_ddp");
}
