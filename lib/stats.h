/*
 * stats.h: the one place durations are summarised, for every report that
 * prints Nsight-style statistics and for bench's mean ± std.
 */
#ifndef STEPTRACE_LIB_STATS_H
#define STEPTRACE_LIB_STATS_H

#include <stddef.h>
#include <stdint.h>

struct dur_stats {
	uint64_t n;
	uint64_t total, min, max;
	double mean, median, stddev; /* stddev: sample (n - 1), 0 when n < 2, as Nsight */
};

/* Sorts `v` in place. All zero when n == 0. Median of an even count is the mean of the middle two. */
void dur_stats_compute(uint64_t *v, size_t n, struct dur_stats *s);

/* The same over doubles (milliseconds in bench). */
struct real_stats {
	size_t n;
	double total, min, max, mean, median, stddev;
};
void real_stats_compute(double *v, size_t n, struct real_stats *s);

/* qsort's comparison of two uint64_t, ascending. */
int stats_cmp_u64(const void *a, const void *b);

#endif
