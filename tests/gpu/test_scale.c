/*
 * The step at a real size: the "small" preset (d_model 768, 12 layers,
 * vocab 10000, batch 4) at ctx 256 in every precision, train mode, a few
 * steps from random weights. Checks that every shape launches, the loss is
 * finite, near ln(vocab) at the start and falls, the allocator ends each step
 * where it began, and prints the phase times (not a benchmark: no warm-up
 * policy, no statistics).
 */
#include "gpu_test.h"

#include "model/model.h"

int main(void)
{
	if (!gpu_or_skip())
		return SKIP_NO_GPU;
	for (int p = ST_FP32; p <= ST_BF16; p++) {
		struct model_config c;
		struct model *m;
		struct model_step_times st;
		struct model_oom oom;
		double first = NAN;

		if (model_config_preset("small", &c))
			return 1;
		c.ctx = 256;
		c.precision = p;
		c.mode = ST_MODE_TRAIN;
		if (model_create(&m, &c, NULL, &oom) != MODEL_OK) {
			CHECK(0, "model_create %s", st_name(st_precision_names, p));
			continue;
		}
		CHECK(model_init_random(m, 1) == MODEL_OK, "init");
		CHECK(model_random_batch(m, 2) == MODEL_OK, "batch");
		for (int s = 0; s < 4; s++) {
			CHECK(model_step(m, s, s == 0, &st) == MODEL_OK, "step %d", s);
			if (s == 0)
				first = st.loss;
		}
		printf("small ctx 256 %s train: loss %.4f -> %.4f (ln V %.4f); forward %.2f ms, "
		       "backward %.2f ms, optimizer %.2f ms, wall %.2f ms; peak %.2f GiB\n",
		       st_name(st_precision_names, p), first,
		       st.loss, log((double)c.vocab), st.forward_ms, st.backward_ms, st.optimizer_ms,
		       st.wall_ms, model_peak_bytes(m) / 1073741824.0);
		CHECK(isfinite(st.loss) && st.loss < first, "loss did not fall");
		CHECK(fabs(first - log((double)c.vocab)) < 3.0, "first loss %g far from ln(vocab)", first);
		model_free(m);
	}
	return check_done("test_gpu_scale");
}
