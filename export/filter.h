/*
 * filter.h: private to export/. What an export keeps (--step, --range,
 * --no-api) and the time window they leave: the step's span, narrowed by
 * --range to the span of the kept ranges and activities. Memory counters
 * start with what was live when the window opens. Every format walks the
 * same filter.
 */
#ifndef STEPTRACE_EXPORT_FILTER_H
#define STEPTRACE_EXPORT_FILTER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "export/options.h"
#include "replay/replay.h"

struct export_filter {
	const struct replay *rp;
	int32_t step;                 /* -1: every step */
	bool no_api;
	bool has_range;
	struct replay_filter paths;   /* --range, when has_range */
	bool windowed;                /* false: everything */
	uint64_t from, to;            /* the window, inclusive */
};

/* -1 after one error line: no such step, a bad pattern, a pattern that keeps nothing. */
int export_filter_init(struct export_filter *f, const struct replay *rp, const struct export_options *opt);
void export_filter_release(struct export_filter *f);
bool export_keep_time(const struct export_filter *f, uint64_t t);
bool export_keep_activity(const struct export_filter *f, const struct replay_activity *a);
bool export_keep_range(const struct export_filter *f, const struct replay_range *r);
bool export_keep_api(const struct export_filter *f, const struct replay_api *a);
bool export_keep_step(const struct export_filter *f, size_t step_index);

#endif
