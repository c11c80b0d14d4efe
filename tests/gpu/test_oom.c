/*
 * Out of memory is an outcome: a model too big for the device returns
 * MODEL_OOM from model_create with the request, its category, the op and the
 * live bytes filled in; a model whose step does not fit (naive attention's
 * scores at a huge context) returns MODEL_OOM from model_step, leaves the
 * allocator where it was before the step, and both release everything so a
 * small model created next trains normally.
 */
#include "gpu_test.h"

#include "model/model.h"

struct tally {
	int64_t live;
	int ooms;
};

static void t_alloc(void *ctx, uint64_t a, uint64_t s, int cat, uint32_t op)
{
	((struct tally *)ctx)->live += (int64_t)s;
}

static void t_free(void *ctx, uint64_t a, uint64_t s, int cat, uint32_t op)
{
	((struct tally *)ctx)->live -= (int64_t)s;
}

static void t_oom(void *ctx, uint64_t req, int cat, uint32_t op, uint64_t live, uint64_t cap)
{
	((struct tally *)ctx)->ooms++;
}

static struct model_config config(int d, int ff, int layers, int heads, int vocab, int batch, int ctx)
{
	struct model_config c;

	if (model_config_preset("small", &c))
		exit(1);
	snprintf(c.name, sizeof(c.name), "custom");
	c.d_model = d, c.d_ff = ff, c.layers = layers, c.heads = heads, c.vocab = vocab;
	c.batch = batch, c.ctx = ctx;
	c.precision = ST_FP32;
	c.mode = ST_MODE_TRAIN;
	return c;
}

static void print_oom(const char *what, const struct model_oom *o)
{
	printf("  %s: OOM requesting %.2f GiB (category %d) in '%s', %.2f GiB live of %.2f GiB\n", what,
	       o->requested / 1073741824.0, o->category, o->op, o->live / 1073741824.0,
	       o->capacity / 1073741824.0);
}

int main(void)
{
	if (!gpu_or_skip())
		return SKIP_NO_GPU;
	struct tally tally = { 0, 0 };
	struct model_observer obs = { .ctx = &tally, .alloc = t_alloc, .free = t_free, .oom = t_oom };
	struct model_oom oom;
	struct model *m = NULL;
	struct model_step_times st;
	int rc;

	/* 1. parameters alone do not fit: ~69e9 FP32 parameters */
	struct model_config huge = config(8192, 32768, 64, 64, 50000, 1, 16);
	memset(&oom, 0, sizeof(oom));
	rc = model_create(&m, &huge, &obs, &oom);
	printf("model_create of a %.1fe9-parameter model: rc %d\n", model_config_params(&huge) / 1e9, rc);
	CHECK(rc == MODEL_OOM && m == NULL, "model_create returned %d, want MODEL_OOM (%d)", rc, MODEL_OOM);
	if (rc == MODEL_OOM) {
		print_oom("create", &oom);
		CHECK(oom.requested > 0 && oom.capacity > 0 && oom.op[0], "oom record not filled");
		CHECK(oom.category == ST_MEM_PARAMETER, "category %d, want parameter", oom.category);
		CHECK(strstr(oom.op, "setup/create") != NULL, "op '%s'", oom.op);
	}
	CHECK(tally.live == 0, "create's failure leaves %lld bytes", (long long)tally.live);
	CHECK(tally.ooms == 1, "observer saw %d OOMs", tally.ooms);

	/* 2. the step does not fit: scores (16, 16, 16384, 16384) FP32 are 256 GiB */
	struct model_config wide = config(256, 512, 1, 16, 1000, 16, 16384);
	m = NULL;
	rc = model_create(&m, &wide, &obs, &oom);
	CHECK(rc == MODEL_OK, "model_create (huge context) returned %d", rc);
	if (rc == MODEL_OK) {
		int64_t before = tally.live;
		CHECK(model_random_batch(m, 1) == MODEL_OK, "model_random_batch");
		rc = model_step(m, 0, false, &st);
		printf("model_step at ctx %d: rc %d\n", wide.ctx, rc);
		CHECK(rc == MODEL_OOM, "model_step returned %d, want MODEL_OOM", rc);
		if (rc == MODEL_OOM) {
			const struct model_oom *o = model_last_oom(m);
			print_oom("step", o);
			CHECK(strstr(o->op, "step/forward/layer.0/attn/") != NULL, "op '%s'", o->op);
		}
		CHECK(tally.live == before, "the failed step leaves %lld bytes",
		      (long long)(tally.live - before));
		model_free(m);
	}
	CHECK(tally.live == 0, "model_free leaves %lld bytes", (long long)tally.live);

	/* 3. a small model afterwards trains */
	struct model_config small = config(64, 128, 2, 4, 97, 2, 16);
	m = NULL;
	rc = model_create(&m, &small, NULL, NULL);
	CHECK(rc == MODEL_OK, "small model_create returned %d", rc);
	if (rc == MODEL_OK) {
		CHECK(model_init_random(m, 1) == MODEL_OK, "init");
		CHECK(model_random_batch(m, 2) == MODEL_OK, "batch");
		double first = NAN;
		for (int s = 0; s < 5; s++) {
			CHECK(model_step(m, s, false, &st) == MODEL_OK, "step %d", s);
			if (s == 0)
				first = st.loss;
		}
		printf("small model after the OOMs: loss %.4f -> %.4f over 5 steps, peak %.1f MiB\n", first,
		       st.loss, model_peak_bytes(m) / 1048576.0);
		CHECK(isfinite(st.loss) && st.loss < first, "loss did not go down");
		model_free(m);
	}
	return check_done("test_gpu_oom");
}
