/*
 * export.c: `steptrace export`, a trace for ui.perfetto.dev (Perfetto protobuf
 * or Chrome JSON) or an SQLite database with Nsight Systems' tables
 * (export/export.c).
 */
#include "export/export.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"
#include "lib/error.h"

static const char *const usage[] = {
	"steptrace export [<options>] FILE",
	"steptrace export [<options>] RUN.rank0.stb RUN.rank1.stb ...   (one trace, a process per rank)",
	"steptrace export --per-rank DIR RUN.rank0.stb RUN.rank1.stb ...   (a file per rank, for HTA)",
	"",
	"steptrace export: " CMD_EXPORT_HELP,
	NULL,
};

struct export_cmd {
	struct export_options o;
	bool api;                      /* --api (default), --no-api */
};

static int check(void *ctx)
{
	struct export_cmd *c = ctx;
	struct export_options *o = &c->o;

	/* --per-rank writes Chrome JSON: the format by default, and no other */
	if (o->format < 0)
		o->format = o->per_rank ? EXPORT_CHROME : EXPORT_PERFETTO;
	if (o->format == EXPORT_JSON)
		o->format = EXPORT_CHROME;
	if (o->per_rank && o->format != EXPORT_CHROME)
		return error("--per-rank writes Chrome JSON files (torch.profiler's, for HTA): "
			     "leave --format out or give --format chrome");
	if (o->per_rank && o->output)
		return error("--per-rank DIR names its files itself (DIR/rank-R.json): leave -o out");
	o->no_api = !c->api;
	/* a trace over 512 MiB does not open in Chrome (longer than V8's longest string) */
	if (o->max_size == UINT64_MAX)
		o->max_size = o->format == EXPORT_SQLITE ? EXPORT_SQLITE_MAX_SIZE : OUTPUT_MAX_SIZE;
	return 0;
}

static int run(const struct replay_ranks *runs, int n, void *ctx, struct report *r)
{
	return export_run_ranks(&runs[0], &((struct export_cmd *)ctx)->o);
}

int cmd_export(int argc, const char **argv)
{
	struct export_cmd e = { .o = { .format = -1, .step = -1, .max_size = UINT64_MAX },
				.api = true };
	struct export_options *o = &e.o;
	const struct option opts[] = {
		OPT_CHOICE(0, "format", &o->format, export_format_names,
			   "perfetto (protobuf, ui.perfetto.dev; the default), chrome (JSON; the default with --per-rank) or sqlite (Nsight Systems' tables)"),
		OPT_STRING('o', "output", &o->output, "FILE",
			   "write here ('-' for stdout but sqlite; default: the bundle's name with .pftrace, .json or .sqlite)"),
		OPT_COUNT(0, "step", &o->step, "only step N (its index in 'steptrace steps'), with memory live at its start"),
		OPT_STRING(0, "range", &o->range, "PATH",
			   "only work under NVTX ranges matching PATH (* wildcards, e.g. forward or layer.0/attn)"),
		OPT_STRING(0, "per-rank", &o->per_rank, "DIR",
			   "one Chrome JSON file per rank, DIR/rank-R.json, as torch.profiler writes them "
			   "(Kineto's categories, for HolisticTraceAnalysis)"),
		OPT_BOOLEAN(0, "api", &e.api, "host API calls and their launch flows (default; --no-api leaves them out)"),
		OPT_SIZE_LIMIT(0, "max-size", &o->max_size,
			       "refuse an output estimated larger than SIZE (default " OUTPUT_MAX_SIZE_TEXT
			       ", sqlite 4GiB; 0: no limit)"),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .range = &o->range, .check = check,
		.ranks = RANKS_OWN, .run_ranks = run, .ctx = &e,
	};

	return analysis_main(&c, argc, argv);
}
