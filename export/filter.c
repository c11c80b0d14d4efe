/* filter.c: what an export keeps under --step, --range and --no-api (see filter.h). */
#include "export/filter.h"

#include <inttypes.h>
#include <string.h>

#include "lib/error.h"

bool export_keep_time(const struct export_filter *f, uint64_t t)
{
	return !f->windowed || (t >= f->from && t <= f->to);
}

bool export_keep_activity(const struct export_filter *f, const struct replay_activity *a)
{
	return (f->step < 0 || a->step == f->step) &&
	       (!f->has_range || replay_filter_activity(&f->paths, f->rp, a));
}

bool export_keep_range(const struct export_filter *f, const struct replay_range *r)
{
	return (f->step < 0 || r->step == f->step) &&
	       (!f->has_range || replay_filter_range(&f->paths, r));
}

/* A call under a kept range, or (in a bundle without ranges) one that launched kept work. */
bool export_keep_api(const struct export_filter *f, const struct replay_api *a)
{
	const struct replay *rp = f->rp;

	if (f->no_api || !export_keep_time(f, a->start))
		return false;
	if (!f->has_range)
		return true;
	if (a->range >= 0 && (size_t)a->range < rp->n_ranges)
		return replay_filter_range(&f->paths, &rp->ranges[a->range]);
	return a->activity >= 0 && (size_t)a->activity < rp->n_activities &&
	       export_keep_activity(f, &rp->activities[a->activity]);
}

bool export_keep_step(const struct export_filter *f, size_t i)
{
	const struct replay_step *s = &f->rp->steps[i];

	if (f->step >= 0)
		return (int32_t)i == f->step;
	return !f->windowed || (s->end >= f->from && s->start <= f->to);
}

static void widen(uint64_t *from, uint64_t *to, uint64_t start, uint64_t end)
{
	*from = start < *from ? start : *from;
	*to = end > *to ? end : *to;
}

int export_filter_init(struct export_filter *f, const struct replay *rp, const struct export_options *opt)
{
	memset(f, 0, sizeof(*f));
	f->rp = rp;
	f->step = opt->step;
	f->no_api = opt->no_api;
	if (opt->step >= 0 && (size_t)opt->step >= rp->n_steps)
		return error("no step %" PRId32 " in the bundle (it has %zu)", opt->step, rp->n_steps);
	if (opt->step >= 0) {
		f->windowed = true;
		f->from = rp->steps[opt->step].start;
		f->to = rp->steps[opt->step].end;
	}
	if (!opt->range || !*opt->range)
		return 0;
	if (replay_filter_init(&f->paths, rp, opt->range) < 0)
		return -1;
	f->has_range = true;

	/* the window: the kept ranges and activities, within the step's */
	uint64_t from = UINT64_MAX, to = 0;
	for (size_t i = 0; i < rp->n_ranges; i++)
		if (export_keep_range(f, &rp->ranges[i]))
			widen(&from, &to, rp->ranges[i].start, rp->ranges[i].end);
	for (size_t i = 0; i < rp->n_activities; i++)
		if (export_keep_activity(f, &rp->activities[i]))
			widen(&from, &to, rp->activities[i].start, rp->activities[i].end);
	if (from > to) {
		replay_filter_release(&f->paths);
		return error("--range '%s' matches no NVTX range%s in '%s'", opt->range,
			     opt->step >= 0 ? " of that step" : "", rp->path ? rp->path : "the bundle");
	}
	if (f->windowed) {
		from = from > f->from ? from : f->from;
		to = to < f->to ? to : f->to;
	}
	f->windowed = true;
	f->from = from;
	f->to = to;
	return 0;
}

void export_filter_release(struct export_filter *f)
{
	if (f->has_range)
		replay_filter_release(&f->paths);
	memset(f, 0, sizeof(*f));
}
