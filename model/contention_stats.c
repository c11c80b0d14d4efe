/* contention_stats.c: see contention_stats.h. */
#include "model/contention_stats.h"

#include <math.h>

#include "lib/error.h"
#include "lib/human.h"

/* GPT-2 small's width (768, its MLP 3072) over 16384 tokens; 8192^3; 64 Mi FP32 elements (256 MiB). */
const struct contention_work contention_works[CONTENTION_WORKS] = {
	{ "product 16384x3072x768", CONTENTION_PRODUCT, 16384, 3072, 768, 0 },
	{ "product 16384x768x3072", CONTENTION_PRODUCT, 16384, 768, 3072, 0 },
	{ "product 8192x8192x8192", CONTENTION_PRODUCT, 8192, 8192, 8192, 0 },
	{ "residual add 256 MiB", CONTENTION_MEMORY, 0, 0, 0, 64LL << 20 },
};

static const char *const kind_names[] = { [CONTENTION_PRODUCT] = "product", [CONTENTION_MEMORY] = "memory" };

struct table *contention_table(struct report *r)
{
	struct table *t = report_add_table(r, "contention", "Computation beside all-reduces (us, medians; each "
					   "row its slowest rank's)");

	table_add_column(t, "size", COL_STR, 0);
	table_add_column(t, "bytes", COL_INT, 0);
	table_add_column(t, "dtype", COL_STR, 0);
	table_add_column(t, "ranks", COL_INT, 0);
	table_add_column(t, "computation", COL_STR, 0);
	table_add_column(t, "kind", COL_STR, 0);
	table_add_column(t, "rank", COL_INT, 0);
	table_add_column(t, "alone_us", COL_FLOAT, 1);
	table_add_column(t, "beside_us", COL_FLOAT, 1);
	table_add_column(t, "ratio", COL_FLOAT, 3);
	table_add_column(t, "allreduce_us", COL_FLOAT, 1);
	table_add_column(t, "allreduce_beside_us", COL_FLOAT, 1);
	table_add_column(t, "call_us", COL_FLOAT, 1);
	table_add_column(t, "covered_pct", COL_FLOAT, 1);
	return t;
}

/* The rank whose computation w took longest beside the all-reduces. */
static int slowest(const struct contention_result *res, int w)
{
	int r = 0;

	for (int i = 1; i < res->ranks; i++)
		if (res->s[i].beside_us[w] > res->s[r].beside_us[w])
			r = i;
	return r;
}

/* The largest of every rank's median host time per call: the host that falls behind first. */
static double call_us(const struct contention_result *res)
{
	double v = 0;

	for (int i = 0; i < res->ranks; i++)
		v = fmax(v, res->s[i].call_us);
	return v;
}

void contention_rows(struct table *t, const struct contention_result *res)
{
	char size[32];

	human_bytes(size, sizeof(size), (double)res->bytes);
	for (int w = 0; w < CONTENTION_WORKS; w++) {
		int r = slowest(res, w);
		const struct contention_sample *s = &res->s[r];

		table_row(t);
		table_str(t, size);
		table_int(t, (int64_t)res->bytes);
		table_str(t, st_dtype_name(res->dtype));
		table_int(t, res->ranks);
		table_str(t, contention_works[w].name);
		table_str(t, kind_names[contention_works[w].kind]);
		table_int(t, r);
		table_float(t, s->alone_us[w]);
		table_float(t, s->beside_us[w]);
		if (s->alone_us[w] > 0)
			table_float(t, s->beside_us[w] / s->alone_us[w]);
		else
			table_empty(t);
		table_float(t, s->ar_alone_us);
		if (s->ar_beside_us[w] > 0)
			table_float(t, s->ar_beside_us[w]);
		else
			table_empty(t);
		table_float(t, call_us(res));
		table_float(t, 100.0 * s->covered[w]);
	}
}

int contention_calibrate(const struct contention_result *res, struct contention_calibration *cal)
{
	double alone = 0, beside = 0;
	int products = 0;

	for (int w = 0; w < CONTENTION_WORKS; w++) {
		const struct contention_sample *s;

		if (contention_works[w].kind != CONTENTION_PRODUCT)
			continue;
		s = &res->s[slowest(res, w)];
		alone += s->alone_us[w];
		beside += s->beside_us[w];
		products++;
	}
	if (!(alone > 0) || !(beside > 0))
		return error("no time measured for the matrix products at %llu bytes of %s: no calibration",
			     (unsigned long long)res->bytes, st_dtype_name(res->dtype));
	cal->measured = beside / alone;
	cal->contention = fmin(fmax(cal->measured, 1.0), 100.0);   /* explain takes 1 to 100 */
	cal->call_us = call_us(res);
	cal->kernels_beside = (int64_t)products * res->iters;
	cal->calls = res->ranks > 0 ? (int64_t)llround(res->s[0].calls) : 0;
	cal->bytes = res->bytes;
	cal->dtype = res->dtype;
	return 0;
}

struct table *contention_calibration_table(struct report *r, const struct contention_calibration *cal)
{
	/* explain's own table (analyze/explain.c, calibration_table): the same name, title and columns */
	struct table *t = report_add_table(r, "calibration", "Calibration of ranks=N from this run (--contention FILE)");

	table_add_column(t, "contention", COL_FLOAT, 3);
	table_add_column(t, "call_us", COL_FLOAT, 1);
	table_add_column(t, "kernels_beside", COL_INT, 0);
	table_add_column(t, "calls", COL_INT, 0);
	table_row(t);
	table_float(t, cal->contention);
	table_float(t, cal->call_us);
	table_int(t, cal->kernels_beside);
	table_int(t, cal->calls);
	return t;
}

int contention_calibration_write(const struct contention_calibration *cal, FILE *out)
{
	struct report *r = report_new();
	int rc;

	contention_calibration_table(r, cal);
	rc = report_print(r, OUT_CSV, out);   /* no notes: they would go to standard error */
	report_free(r);
	return rc;
}
