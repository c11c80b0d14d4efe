/* test_stats.c: duration statistics against values worked out by hand. */
#include "tests/lib/check.h"

#include <math.h>

#include "lib/stats.h"

static void test_small(void)
{
	uint64_t odd[] = { 9, 1, 5 };
	uint64_t even[] = { 7, 2, 4, 4, 5, 5, 4, 9 };
	uint64_t one[] = { 42 };
	struct dur_stats s;

	dur_stats_compute(odd, 3, &s);
	CHECK(s.n == 3 && s.total == 15 && s.min == 1 && s.max == 9);
	CHECK(s.mean == 5.0 && s.median == 5.0);
	CHECK_NEAR(s.stddev, 4.0, 1e-12);     /* deviations -4 0 4: 32/2 */
	CHECK(odd[0] == 1 && odd[1] == 5 && odd[2] == 9);

	dur_stats_compute(even, 8, &s);
	CHECK(s.total == 40 && s.mean == 5.0);
	CHECK(s.median == 4.5);                     /* 4 and 5 in the middle */
	CHECK_NEAR(s.stddev, sqrt(32.0 / 7.0), 1e-12);

	dur_stats_compute(one, 1, &s);
	CHECK(s.n == 1 && s.median == 42.0 && s.stddev == 0.0 && s.min == 42 && s.max == 42);

	dur_stats_compute(NULL, 0, &s);
	CHECK(s.n == 0 && s.total == 0 && s.mean == 0.0 && s.stddev == 0.0);

	{
		uint64_t big[] = { UINT64_MAX - 1, UINT64_MAX - 3 };
		dur_stats_compute(big, 2, &s);
		CHECK(s.median == (double)(UINT64_MAX - 2));
	}
}

/* A million durations around a second: exact total, mean and stddev of 0..n-1 shifted. */
static void test_large(void)
{
	const size_t n = 1000000;
	uint64_t *v = malloc(n * sizeof(*v));
	struct dur_stats s;
	size_t i;

	for (i = 0; i < n; i++)
		v[(i * 7919) % n] = 1000000000ULL + i;   /* a permutation, so sorting matters */
	dur_stats_compute(v, n, &s);
	CHECK(s.total == 1000000000ULL * n + (uint64_t)n * (n - 1) / 2);
	CHECK(s.min == 1000000000ULL && s.max == 1000000000ULL + n - 1);
	CHECK_NEAR(s.mean, 1e9 + (n - 1) / 2.0, 1e-15);
	CHECK(s.median == 1e9 + (n - 1) / 2.0);
	CHECK_NEAR(s.stddev, sqrt((double)n * (n + 1) / 12.0), 1e-9);
	free(v);
}

static void test_real(void)
{
	double v[] = { 3.0, 1.0, 2.0, 10.0 };
	struct real_stats s;

	real_stats_compute(v, 4, &s);
	CHECK(s.n == 4 && s.total == 16.0 && s.min == 1.0 && s.max == 10.0);
	CHECK(s.mean == 4.0 && s.median == 2.5);
	CHECK_NEAR(s.stddev, sqrt(50.0 / 3.0), 1e-12);   /* 9+4+1+36 over 3 */
	real_stats_compute(v, 1, &s);
	CHECK(s.stddev == 0.0 && s.median == s.mean);
	real_stats_compute(NULL, 0, &s);
	CHECK(s.n == 0 && s.mean == 0.0);
}

int main(void)
{
	test_small();
	test_large();
	test_real();
	return check_done("test_cli_stats");
}
