/*
 * stats.c: Nsight-style duration statistics (see stats.h). Sums are exact
 * (128-bit) and the variance is a second pass around the mean in long
 * double, so a million kernels of a second each lose nothing.
 */
#include "lib/stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int stats_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* NaNs sort last so the order is total and qsort stays well-defined. */
static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	if (isnan(x) || isnan(y))
		return isnan(x) - isnan(y);
	return (x > y) - (x < y);
}

void dur_stats_compute(uint64_t *v, size_t n, struct dur_stats *s)
{
	unsigned __int128 sum = 0;
	long double mean, sq = 0.0L;
	size_t i;

	memset(s, 0, sizeof(*s));
	if (n == 0)
		return;
	qsort(v, n, sizeof(*v), stats_cmp_u64);
	for (i = 0; i < n; i++)
		sum += v[i];
	mean = (long double)sum / (long double)n;
	s->n = n;
	s->total = sum > UINT64_MAX ? UINT64_MAX : (uint64_t)sum;
	s->min = v[0];
	s->max = v[n - 1];
	s->mean = (double)mean;
	if (n % 2)
		s->median = (double)v[n / 2];
	else
		s->median = (double)v[n / 2 - 1] + (double)(v[n / 2] - v[n / 2 - 1]) / 2.0;
	if (n < 2)
		return;
	for (i = 0; i < n; i++) {
		long double d = (long double)v[i] - mean;
		sq += d * d;
	}
	s->stddev = (double)sqrtl(sq / (long double)(n - 1));
}

void real_stats_compute(double *v, size_t n, struct real_stats *s)
{
	long double sum = 0.0L, mean, sq = 0.0L;
	size_t i;

	memset(s, 0, sizeof(*s));
	if (n == 0)
		return;
	qsort(v, n, sizeof(*v), cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	mean = sum / (long double)n;
	s->n = n;
	s->total = (double)sum;
	s->min = v[0];
	s->max = v[n - 1];
	s->mean = (double)mean;
	if (n % 2)
		s->median = v[n / 2];
	else
		s->median = v[n / 2 - 1] + (v[n / 2] - v[n / 2 - 1]) / 2.0;
	if (n < 2)
		return;
	for (i = 0; i < n; i++) {
		long double d = (long double)v[i] - mean;
		sq += d * d;
	}
	s->stddev = (double)sqrtl(sq / (long double)(n - 1));
}
