/*
 * The whole training step at a tiny size (d_model 64, 2 layers, 4 heads,
 * d_ff 128, vocab 97, batch 2, ctx 16) against the double-precision CPU
 * reference: the same random weights (model_load_weights) and batch go into
 * both; the loss and every gradient are compared (fwdbwd), then two train
 * steps' updated weights against the reference AdamW, and the op and memory
 * bookkeeping the observer sees. Then the same fwdbwd (FP32, BF16), observer
 * and forward-mode checks with --attention flash (FlashAttention-2), against
 * the same reference and tolerances. Then all of it again with --kernels
 * fused (fused AdamW and residual adds; the steps after the first replayed
 * as a CUDA graph where no observer listens), and BF16 training, plain
 * against fused, for four steps (the weight copies AdamW writes).
 *
 * Tolerances (relative error ||gpu - ref|| / ||ref||, per tensor):
 *   fp32: loss and gradients 1e-5; weights after two AdamW steps (lr 1e-2)
 *         1e-5 and their change 1e-4: Adam divides by |g|, so elements whose
 *         gradient is near the noise floor amplify FP32's gradient error
 *   tf32: loss 2e-3, gradients 2e-2 (10-bit mantissa products)
 *   bf16: loss 1e-2, gradients 3e-2 (BF16 operands and outputs, 8-bit mantissa)
 * Measured on an H100: fp32 grads 4.9e-7, tf32 1.1e-3, bf16 1.2e-2; AdamW
 * weights 3.4e-6, change 2.6e-5.
 */
#include "gpu_test.h"

#include "model/model.h"

static enum st_attention attention = ST_ATTN_NAIVE;   /* of the configurations tiny() makes */
static enum st_kernels kernels = ST_KERNELS_PLAIN;

static struct model_config tiny(enum st_precision p, enum st_mode mode)
{
	struct model_config c;

	if (model_config_preset("small", &c))
		exit(1);
	snprintf(c.name, sizeof(c.name), "custom");
	c.d_model = 64, c.d_ff = 128, c.layers = 2, c.heads = 4, c.vocab = 97;
	c.batch = 2, c.ctx = 16;
	c.precision = p;
	c.mode = mode;
	c.attention = attention;
	c.kernels = kernels;
	c.lr = 1e-2;
	c.weight_decay = 0.1;
	return c;
}

static double *as_doubles(const struct named_tensor *t)
{
	int64_t n = named_tensor_numel(t);
	double *v = malloc(n * sizeof(double));

	for (int64_t i = 0; i < n; i++)
		v[i] = t->dtype == ST_DT_F64 ? ((double *)t->data)[i] : ((float *)t->data)[i];
	return v;
}

/* Worst relative error over every tensor of ref found in got; prints each beyond tol/10. */
static double compare_sets(const char *what, const struct tensor_set *got,
			   const struct tensor_set *ref, double tol)
{
	double worst = 0;
	const char *worst_name = "";

	for (size_t i = 0; i < ref->n; i++) {
		const struct named_tensor *r = &ref->t[i], *g = tensor_set_find(got, r->name);
		if (!g || named_tensor_numel(g) != named_tensor_numel(r)) {
			CHECK(0, "%s: '%s' missing or misshapen", what, r->name);
			continue;
		}
		double *a = as_doubles(g), *b = as_doubles(r);
		double e = rel_err(a, b, named_tensor_numel(r));
		if (e > tol / 10)
			printf("    %-40s %.3e\n", r->name, e);
		if (!(e <= worst)) {
			worst = e;
			worst_name = r->name;
		}
		free(a), free(b);
	}
	char line[160];
	snprintf(line, sizeof(line), "%s (worst: %s)", what, worst_name);
	check_err(line, worst, tol);
	return worst;
}

static void fwdbwd(enum st_precision p, const struct tensor_set *w, const int32_t *in,
		   const int32_t *tg, double ref_loss, const struct tensor_set *ref_grads,
		   double tol_loss, double tol_grad)
{
	struct model_config c = tiny(p, ST_MODE_FWDBWD);
	struct model *m;
	struct model_step_times st;
	struct tensor_set grads;
	char what[96];

	printf("%s fwdbwd (%s attention, %s kernels):\n", st_name(st_precision_names, p),
	       st_name(st_attention_names, attention), st_name(st_kernels_names, kernels));
	if (model_create(&m, &c, NULL, NULL) != MODEL_OK) {
		CHECK(0, "model_create failed");
		return;
	}
	CHECK(model_load_weights(m, w) == MODEL_OK, "model_load_weights");
	CHECK(model_set_batch(m, in, tg) == MODEL_OK, "model_set_batch");
	for (int s = 0; s < 2; s++)     /* twice: the second step must not depend on the first */
		CHECK(model_step(m, s, false, &st) == MODEL_OK, "model_step");
	printf("  loss gpu %.9f ref %.9f; forward %.3f ms backward %.3f ms wall %.3f ms\n", st.loss,
	       ref_loss, st.forward_ms, st.backward_ms, st.wall_ms);
	snprintf(what, sizeof(what), "loss [%s %s %s]", st_name(st_precision_names, p),
		 st_name(st_attention_names, attention), st_name(st_kernels_names, kernels));
	check_err(what, fabs(st.loss - ref_loss) / fabs(ref_loss), tol_loss);
	tensor_set_init(&grads);
	CHECK(model_export(m, NULL, &grads) == MODEL_OK, "model_export");
	snprintf(what, sizeof(what), "every gradient [%s %s %s]", st_name(st_precision_names, p),
		 st_name(st_attention_names, attention), st_name(st_kernels_names, kernels));
	compare_sets(what, &grads, ref_grads, tol_grad);
	tensor_set_release(&grads);
	model_free(m);
}

/* Two AdamW steps in fp32 against the reference's forward/backward + AdamW. */
static void train(const struct tensor_set *w0, const int32_t *in, const int32_t *tg)
{
	struct model_config c = tiny(ST_FP32, ST_MODE_TRAIN);
	struct tensor_set w, grads, mom1, mom2, got;
	struct model *m;
	struct model_step_times st;
	double loss;

	printf("fp32 train (2 AdamW steps, lr %g, wd %g, %s kernels):\n", c.lr, c.weight_decay,
	       st_name(st_kernels_names, kernels));
	tensor_set_init(&w), tensor_set_init(&grads), tensor_set_init(&mom1), tensor_set_init(&mom2);
	for (size_t i = 0; i < w0->n; i++)
		tensor_set_add(&w, w0->t[i].name, w0->t[i].dtype, w0->t[i].ndim, w0->t[i].shape, w0->t[i].data);
	if (model_create(&m, &c, NULL, NULL) != MODEL_OK) {
		CHECK(0, "model_create failed");
		return;
	}
	CHECK(model_load_weights(m, w0) == MODEL_OK, "model_load_weights");
	CHECK(model_set_batch(m, in, tg) == MODEL_OK, "model_set_batch");
	for (int t = 1; t <= 2; t++) {
		CHECK(model_step(m, t - 1, false, &st) == MODEL_OK, "model_step");
		CHECK(ref_forward_backward(&c, &w, in, tg, &loss, &grads) == 0, "reference");
		printf("  step %d: loss gpu %.9f ref %.9f, optimizer %.3f ms\n", t, st.loss, loss,
		       st.optimizer_ms);
		check_err("train loss before the update", fabs(st.loss - loss) / fabs(loss), 1e-5);
		CHECK(ref_adamw(&c, &w, &grads, &mom1, &mom2, t) == 0, "reference adamw");
	}
	tensor_set_init(&got);
	CHECK(model_export(m, &got, NULL) == MODEL_OK, "model_export");
	compare_sets("weights after 2 AdamW steps [fp32]", &got, &w, 1e-5);

	/* the change of each weight, where rounding of the weight itself does not hide it */
	double worst = 0;
	for (size_t i = 0; i < w.n; i++) {
		const struct named_tensor *r = &w.t[i], *g = tensor_set_find(&got, r->name);
		const struct named_tensor *o = tensor_set_find(w0, r->name);
		int64_t n = named_tensor_numel(r);
		double *a = as_doubles(g), *b = as_doubles(r), *z = as_doubles(o);
		for (int64_t j = 0; j < n; j++)
			a[j] -= z[j], b[j] -= z[j];
		double e = rel_err(a, b, n);
		worst = e > worst || isnan(e) ? e : worst;
		free(a), free(b), free(z);
	}
	check_err("weight change after 2 AdamW steps [fp32]", worst, 1e-4);
	tensor_set_release(&got), tensor_set_release(&w), tensor_set_release(&grads);
	tensor_set_release(&mom1), tensor_set_release(&mom2);
	model_free(m);
}

/* ---- The observer's view: ops, NVTX-style nesting, allocations ---- */

#define MAX_OPS 4096
struct watch {
	struct model_op ops[MAX_OPS];
	char paths[MAX_OPS][160];
	uint32_t n_ops, open, begins, ends, bad_nesting;
	uint64_t live, live_at_step_begin;
	int64_t allocs, frees, in_step;
	uint32_t alloc_without_op, steps_begun, steps_ended;
};

static void w_register(void *ctx, const struct model_op *op)
{
	struct watch *w = ctx;
	if (w->n_ops < MAX_OPS && op->id == w->n_ops + 1) {
		w->ops[w->n_ops] = *op;
		snprintf(w->paths[w->n_ops], 160, "%s", op->path);
		w->ops[w->n_ops].path = w->paths[w->n_ops];
		w->n_ops++;
	} else {
		w->bad_nesting++;   /* ids must be dense from 1 */
	}
}
static void w_begin(void *ctx, uint32_t id)
{
	struct watch *w = ctx;
	if (w->open || id == 0 || id > w->n_ops)
		w->bad_nesting++;
	w->open = id;
	w->begins++;
}
static void w_end(void *ctx, uint32_t id)
{
	struct watch *w = ctx;
	if (w->open != id)
		w->bad_nesting++;
	w->open = 0;
	w->ends++;
}
static void w_alloc(void *ctx, uint64_t a, uint64_t s, int cat, uint32_t op)
{
	struct watch *w = ctx;
	w->live += s;
	w->allocs++;
	if (op == 0 || cat < 1 || cat > 7)
		w->alloc_without_op++;
}
static void w_free(void *ctx, uint64_t a, uint64_t s, int cat, uint32_t op)
{
	struct watch *w = ctx;
	w->live -= s;
	w->frees++;
}
static void w_step_begin(void *ctx, uint32_t i, bool warm)
{
	struct watch *w = ctx;
	w->steps_begun++;
	w->live_at_step_begin = w->live;
}
static void w_step_end(void *ctx, uint32_t i, bool warm)
{
	((struct watch *)ctx)->steps_ended++;
}

static int has_path(const struct watch *w, const char *path)
{
	for (uint32_t i = 0; i < w->n_ops; i++)
		if (!strcmp(w->ops[i].path, path))
			return 1;
	return 0;
}

static void observer(enum st_precision p)
{
	struct model_config c = tiny(p, ST_MODE_TRAIN);
	struct watch *w = calloc(1, sizeof(*w));
	struct model_observer obs = { .ctx = w, .op_register = w_register, .op_begin = w_begin,
				      .op_end = w_end, .alloc = w_alloc, .free = w_free,
				      .step_begin = w_step_begin, .step_end = w_step_end };
	struct model *m;
	struct model_step_times st;

	printf("observer (%s train, %s attention, %s kernels):\n", st_name(st_precision_names, p),
	       st_name(st_attention_names, attention), st_name(st_kernels_names, kernels));
	if (model_create(&m, &c, &obs, NULL) != MODEL_OK) {
		CHECK(0, "model_create failed");
		free(w);
		return;
	}
	CHECK(model_init_random(m, 7) == MODEL_OK, "model_init_random");
	CHECK(model_random_batch(m, 8) == MODEL_OK, "model_random_batch");
	for (int s = 0; s < 3; s++) {
		CHECK(model_step(m, s, s == 0, &st) == MODEL_OK, "model_step");
		/* fused BF16: the first step makes the weight copies, which stay */
		CHECK(w->live == w->live_at_step_begin || (kernels == ST_KERNELS_FUSED && s == 0),
		      "step %d leaves %lld bytes behind", s,
		      (long long)(w->live - w->live_at_step_begin));
	}
	CHECK(isfinite(st.loss) && st.loss > 0, "loss %g", st.loss);
	printf("  %u ops registered, %u op ranges, %lld allocations, peak %llu bytes, live %llu\n",
	       w->n_ops, w->begins, (long long)w->allocs, (unsigned long long)model_peak_bytes(m),
	       (unsigned long long)w->live);
	CHECK(w->bad_nesting == 0, "op ids not dense or op_begin/op_end unbalanced (%u)", w->bad_nesting);
	CHECK(w->begins == w->ends, "op_begin %u != op_end %u", w->begins, w->ends);
	CHECK(w->alloc_without_op == 0, "%u allocations without an op or category", w->alloc_without_op);
	CHECK(w->steps_begun == 3 && w->steps_ended == 3, "step hooks %u/%u", w->steps_begun, w->steps_ended);
	const char *want[] = { "step/forward/embedding",
			       attention == ST_ATTN_FLASH ? "step/forward/layer.1/attn/flash"
							  : "step/forward/layer.1/attn/softmax",
			       attention == ST_ATTN_FLASH ? "step/backward/layer.0/attn/flash"
							  : "step/backward/layer.0/attn/scores",
			       "step/forward/layer.0/ln1", "step/forward/layer.1/ffn/swiglu",
			       "step/forward/lm_head", "step/forward/cross_entropy",
			       "step/backward/layer.0/attn/qkv_proj", "step/forward/layer.1/ffn/w1w3",
			       "step/backward/layer.1/ffn/w1w3", "step/backward/ln_final",
			       "step/backward/zero_grad", "step/optimizer/adamw", NULL };
	for (int i = 0; want[i]; i++)
		CHECK(has_path(w, want[i]), "no op '%s'", want[i]);
	for (uint32_t i = 0; i < w->n_ops; i++) {
		const struct model_op *op = &w->ops[i];
		/* zero_grad only writes: no input */
		if (!strncmp(op->path, "step/", 5) && strncmp(op->path, "step/optimizer", 14))
			CHECK((op->n_inputs > 0 || !strcmp(op->path, "step/backward/zero_grad")) &&
			      op->n_outputs > 0,
			      "op '%s' has no dtypes", op->path);
		if (kernels == ST_KERNELS_FUSED)
			CHECK(!strstr(op->path, "/residual"), "fused model has op '%s'", op->path);
		if (attention == ST_ATTN_FLASH)
			CHECK(!strstr(op->path, "/softmax") && !strstr(op->path, "/scores") &&
			      !strstr(op->path, "/av"), "flash model has naive op '%s'", op->path);
		if (strstr(op->path, "/flash"))
			CHECK(!strcmp(op->kind, "attn/flash") && op->flops > 0 && op->bytes > 0 &&
			      op->outputs[0] == (p == ST_BF16 ? ST_DT_BF16 : ST_DT_F32),
			      "flash op: kind '%s' flops %llu", op->kind, (unsigned long long)op->flops);
		if (strstr(op->path, "/softmax") && !strncmp(op->path, "step/forward", 12))
			CHECK(!strcmp(op->kind, "attn/softmax") && op->flops > 0 && op->bytes > 0 &&
			      op->outputs[0] == (p == ST_BF16 ? ST_DT_BF16 : ST_DT_F32),
			      "softmax op: kind '%s' flops %llu", op->kind, (unsigned long long)op->flops);
	}
	model_free(m);
	CHECK(w->live == 0, "model_free leaves %llu bytes", (unsigned long long)w->live);
	printf("  ops, nesting and memory balance %s\n", check_failures ? "checked (see failures)" : "ok");
	free(w);
}

/* forward mode: the same loss, nothing kept */
static void forward_mode(const struct tensor_set *w, const int32_t *tok, double loss)
{
	struct model_config cf = tiny(ST_FP32, ST_MODE_FORWARD);
	struct model *m;
	struct model_step_times st;
	char what[64];

	if (model_create(&m, &cf, NULL, NULL) != MODEL_OK) {
		CHECK(0, "model_create (forward)");
		return;
	}
	CHECK(model_load_weights(m, w) == MODEL_OK, "model_load_weights");
	CHECK(model_set_batch(m, tok, tok + 1) == MODEL_OK, "model_set_batch");
	for (int s = 0; s < 3; s++) {   /* fused: the second captured, the third replayed */
		CHECK(model_step(m, s, false, &st) == MODEL_OK, "model_step");
		snprintf(what, sizeof(what), "forward-mode loss, step %d [fp32 %s %s]", s,
			 st_name(st_attention_names, attention), st_name(st_kernels_names, kernels));
		check_err(what, fabs(st.loss - loss) / loss, 1e-5);
	}
	model_free(m);
}

/*
 * BF16 training, plain against fused, four steps (lr 1e-2): fused AdamW
 * writes the next step's BF16 weight copies, so a stale or wrong copy shows
 * in the losses of steps 2 to 4. Tolerances: loss 1e-2 (BF16); weights 3e-2,
 * the BF16 gradients' tolerance: at lr 1e-2 four updates move these small
 * weights by a large part of themselves, and Adam's m / sqrt(v) carries
 * each side's BF16 gradient error into them (measured on an H100: losses
 * 3e-4 to 8e-4 apart, weights 1.2e-2).
 */
static void train_agree(const struct tensor_set *w0, const int32_t *in, const int32_t *tg)
{
	struct model_config c = tiny(ST_BF16, ST_MODE_TRAIN);
	struct tensor_set got[2];
	double loss[2][4];
	char what[96];

	printf("bf16 train, plain against fused (4 AdamW steps, lr %g):\n", c.lr);
	for (int k = 0; k < 2; k++) {
		struct model *m;
		struct model_step_times st;

		c.kernels = k ? ST_KERNELS_FUSED : ST_KERNELS_PLAIN;
		c.attention = model_config_default_attention(&c);
		tensor_set_init(&got[k]);
		if (model_create(&m, &c, NULL, NULL) != MODEL_OK) {
			CHECK(0, "model_create failed");
			return;
		}
		CHECK(model_load_weights(m, w0) == MODEL_OK, "model_load_weights");
		CHECK(model_set_batch(m, in, tg) == MODEL_OK, "model_set_batch");
		for (int s = 0; s < 4; s++) {
			st.loss = NAN;
			CHECK(model_step(m, s, false, &st) == MODEL_OK, "model_step");
			loss[k][s] = st.loss;
		}
		CHECK(model_export(m, &got[k], NULL) == MODEL_OK, "model_export");
		model_free(m);
	}
	for (int s = 0; s < 4; s++) {
		printf("  step %d: loss plain %.6f fused %.6f\n", s + 1, loss[0][s], loss[1][s]);
		snprintf(what, sizeof(what), "bf16 train loss, step %d, fused against plain", s + 1);
		check_err(what, fabs(loss[1][s] - loss[0][s]) / fabs(loss[0][s]), 1e-2);
	}
	CHECK(loss[0][3] < loss[0][0], "the loss did not fall: %g then %g", loss[0][0], loss[0][3]);
	compare_sets("bf16 weights after 4 steps, fused against plain", &got[1], &got[0], 3e-2);
	tensor_set_release(&got[0]), tensor_set_release(&got[1]);
}

/*
 * The checks of one attention and kernel set against the reference: fwdbwd
 * in FP32 (TF32 where tf32), BF16; two AdamW steps where train; the
 * observer's view and forward mode where observe.
 */
static void suite(const struct tensor_set *w, const int32_t *tok, double loss,
		  const struct tensor_set *grads, bool tf32, bool train_too, bool observe)
{
	fwdbwd(ST_FP32, w, tok, tok + 1, loss, grads, 1e-5, 1e-5);
	if (tf32)
		fwdbwd(ST_TF32, w, tok, tok + 1, loss, grads, 2e-3, 2e-2);
	fwdbwd(ST_BF16, w, tok, tok + 1, loss, grads, 1e-2, 3e-2);
	if (train_too)
		train(w, tok, tok + 1);
	if (observe) {
		observer(ST_FP32);
		observer(ST_BF16);
		forward_mode(w, tok, loss);
	}
}

int main(void)
{
	if (!gpu_or_skip())
		return SKIP_NO_GPU;
	struct model_config c = tiny(ST_FP32, ST_MODE_FWDBWD);
	size_t n = (size_t)c.batch * c.ctx;
	int32_t *tok = malloc((n + 1) * sizeof(int32_t));
	struct tensor_set w, grads;
	double loss;

	tensor_set_init(&w), tensor_set_init(&grads);
	ref_random_tokens(3, n + 1, c.vocab, tok);
	if (ref_init_weights(&c, 42, &w) || ref_forward_backward(&c, &w, tok, tok + 1, &loss, &grads)) {
		printf("FAIL: the CPU reference failed\n");
		return 1;
	}
	printf("reference loss %.9f (ln vocab = %.4f)\n", loss, log((double)c.vocab));
	suite(&w, tok, loss, &grads, true, true, true);

	/* the same step with FlashAttention-2: the same reference, the same tolerances */
	attention = ST_ATTN_FLASH;
	suite(&w, tok, loss, &grads, false, false, true);

	/* --kernels fused: flash by default, then naive; graphs where no observer listens */
	kernels = ST_KERNELS_FUSED;
	suite(&w, tok, loss, &grads, false, true, true);
	attention = ST_ATTN_NAIVE;
	suite(&w, tok, loss, &grads, false, true, false);
	kernels = ST_KERNELS_PLAIN;
	train_agree(&w, tok, tok + 1);

	tensor_set_release(&w), tensor_set_release(&grads);
	free(tok);
	return check_done("test_gpu_step");
}
