/*
 * replay.c: `steptrace replay`, the events in time order (analyze/events.c),
 * or with --capacity the allocations replayed against a device of that size
 * (analyze/capacity.c).
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/capacity.h"
#include "analyze/events.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"
#include "lib/error.h"
#include "replay/memory.h"

struct replay_opts {
	const char *kinds;             /* --kind, a comma-separated list */
	uint64_t capacity;             /* --capacity, 0: the listing */
	struct events_opts events;     /* events.view is --view, events.format --format, for both */
	struct events_out out;         /* the listing, across the ranks of a run */
	size_t ranks_given;            /* the ranks of the run given (1: a bundle alone) */
};

static const char *const usage[] = {
	"steptrace replay [<options>] FILE",
	"steptrace replay --capacity SIZE [<options>] FILE",
	"",
	"steptrace replay: " CMD_REPLAY_HELP,
	NULL,
};

/* What --kind may name: every kind but ops, which are not timed events, as the listing names it. */
static const char *const kind_names[] = {
	"kernel", "memcpy", "memset", "api", "range", "alloc", "free", "oom", "step", "overhead", "sync", "tag",
	NULL,
};

static int parse_kinds(struct replay_opts *o)
{
	const char *items[ST_KIND_COUNT + 4];
	char *storage = NULL;
	int n, i;

	if (!o->kinds) {
		for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST; k++)
			o->events.kind_ok[k] = k != ST_OP && k != ST_COST;   /* neither is listed */
		return 0;
	}
	o->events.kinds_given = true;
	n = split_list(o->kinds, items, ST_KIND_COUNT + 4, &storage);
	if (n < 0)
		return -1;
	for (int j = 0; j < n; j++) {
		if (parse_choice(items[j], kind_names, "--kind", &i) < 0) {
			free(storage);
			return -1;
		}
		o->events.kind_ok[events_kind_from_name(kind_names[i])] = true;
	}
	free(storage);
	return 0;
}

static int check(void *ctx)
{
	struct replay_opts *o = ctx;
	double from = o->events.from_ms, to = o->events.to_ms;

	if (parse_kinds(o) < 0)
		return -1;
	/* each is 0 or more (the option's type) or -1, not given */
	if (from >= 0 && to >= 0 && from > to)
		return error("option '--to' expects a time at or after --from's %g ms, not '%g'", from, to);
	return 0;
}

/* The listing is one table, "events"; --capacity's tables are its report's, checked once made. */
static int check_section(void *ctx, const char *section)
{
	const struct replay_opts *o = ctx;

	if (!o->capacity && strcmp(section, "events"))
		return error("option '--section' expects the listing's one table (events), not '%s'", section);
	return 0;
}

static int run(const struct replay *const *rps, int n, void *ctx, struct report *r)
{
	struct replay_opts *o = ctx;

	if (o->capacity) {
		const struct capacity_opts c = { o->capacity, o->events.view >= 0 ? o->events.view
									: (int)mem_default_view(rps[0]) };

		return capacity_run(rps[0], &c, r);
	}
	/* one listing per rank, one after the other: say whose (a rank's bundle alone needs no word) */
	o->out.several = o->ranks_given > 1;
	if (o->out.several && o->events.format == OUT_TABLE)
		printf("%s# rank %u: %s\n", rps[0]->run.rank ? "\n" : "", (unsigned)rps[0]->run.rank,
		       rps[0]->path);
	return events_list(rps[0], &o->events, &o->out) < 0 ? -1 : ANALYSIS_NO_REPORT;
}

int cmd_replay(int argc, const char **argv)
{
	struct replay_opts o = { .events = { .from_ms = -1, .to_ms = -1, .view = -1 } };
	int rc;
	const struct option opts[] = {
		OPT_STRING(0, "kind", &o.kinds, "LIST", "only these kinds: kernel,memcpy,memset,api,range,alloc,free,oom,step,overhead,sync,tag (default: all)"),
		OPT_STRING(0, "range", &o.events.range, "PATH", "only events under this NVTX path ('forward', 'layer.*/attn'; default: all)"),
		OPT_NONNEGATIVE(0, "from", &o.events.from_ms, "MS", "start at this time (ms since the bundle's first event; default: its start)"),
		OPT_NONNEGATIVE(0, "to", &o.events.to_ms, "MS", "stop after this time (ms since the bundle's first event; default: its end)"),
		OPT_SIZE(0, "capacity", &o.capacity, "replay the allocations against a device of SIZE (24GiB, 80GB)"),
		OPT_CHOICE(0, "view", &o.events.view, mem_view_short_names,
			   "whose allocations, frees and live memory: model (the allocator's; the default when it "
			   "recorded any) or driver (cudaMalloc)"),
		OPT_FULL_NAMES(&o.events.full_names),
		OPT_FORMAT(&o.events.format),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .range = &o.events.range,
		.format = &o.events.format, .ranks = RANKS_SPLIT, .full_names = &o.events.full_names,
		.check = check, .run = run, .ctx = &o, .ranks_given = &o.ranks_given,
		.check_section = check_section,
	};

	rc = analysis_main(&c, argc, argv);
	/* the listing's end, once for all the ranks listed */
	if (o.out.ranks && events_end(&o.out, &o.events) < 0 && rc == 0)
		rc = 1;
	return rc;
}
