/*
 * test_average.c: why averaging gradients over ranks reproduces one GPU
 * (model/ddp.c, ncclAvg), on the double-precision CPU reference: the loss is
 * the mean over tokens and every rank has as many, so N ranks with batch B
 * each have losses whose mean is the loss of batch N*B, and gradients whose
 * mean is its gradient. The GPU test (tests/gpu2) holds the real step to
 * this within the precision's tolerance; here it holds to rounding.
 */
#include "tests/lib/check.h"
#include "model/config.h"
#include "model/tensors.h"
#include "tests/lib/reference.h"

#define RANKS 2
#define B 2

static double grad_at(const struct tensor_set *g, size_t t, size_t i)
{
	return ((const double *)g->t[t].data)[i];
}

int main(void)
{
	struct model_config c;
	struct model_dims dims = { .d_model = 16, .layers = 2, .heads = 2, .vocab = 32, .ctx = 8,
				   .batch = B * RANKS };
	struct tensor_set w, full, part[RANKS];
	size_t per = (size_t)B * 8;
	int32_t ids[B * RANKS * 8 + 1];
	double loss_full, loss[RANKS], worst = 0, worst_sum = 0;

	tensor_set_init(&w);
	tensor_set_init(&full);
	for (int r = 0; r < RANKS; r++)
		tensor_set_init(&part[r]);
	CHECK(model_config_resolve("custom", &dims, &c) == 0);
	CHECK(ref_init_weights(&c, 7, &w) == 0);
	ref_random_tokens(11, sizeof(ids) / sizeof(ids[0]), c.vocab, ids);
	/* one GPU: batch N*B; targets are the inputs shifted by one */
	CHECK(ref_forward_backward(&c, &w, ids, ids + 1, &loss_full, &full) == 0);
	/* rank r: rows [r*B, (r+1)*B) of the same batch */
	c.batch = B;
	for (int r = 0; r < RANKS; r++)
		CHECK(ref_forward_backward(&c, &w, ids + r * per, ids + 1 + r * per, &loss[r], &part[r]) == 0);
	CHECK_NEAR((loss[0] + loss[1]) / RANKS, loss_full, 1e-12);
	CHECK(fabs(loss[0] - loss[1]) > 1e-3, "the ranks' batches differ (losses %g and %g)", loss[0], loss[1]);
	CHECK(full.n == part[0].n && full.n > 0, "%zu gradients", full.n);
	for (size_t t = 0; t < full.n && t < part[0].n; t++) {
		size_t n = full.t[t].bytes / sizeof(double);

		for (size_t i = 0; i < n; i++) {
			double want = grad_at(&full, t, i), sum = grad_at(&part[0], t, i) + grad_at(&part[1], t, i);
			double scale = fmax(1e-6, fabs(want));

			worst = fmax(worst, fabs(sum / RANKS - want) / scale);
			worst_sum = fmax(worst_sum, fabs(sum - want) / scale);
		}
	}
	CHECK(worst < 1e-9, "the ranks' mean gradient is the batch's (worst relative error %g)", worst);
	CHECK(worst_sum > 0.5, "the sum is not (worst relative error %g): the average matters", worst_sum);
	tensor_set_release(&w);
	tensor_set_release(&full);
	for (int r = 0; r < RANKS; r++)
		tensor_set_release(&part[r]);
	return check_done("multi.average");
}
