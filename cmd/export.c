/* export.c: `steptrace export`, a trace for ui.perfetto.dev, Perfetto or Chrome JSON (analyze/export.c). */
#include "analyze/export.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

static const char *const usage[] = {
	"steptrace export [<options>] FILE",
	NULL,
};

static int check(void *ctx)
{
	struct export_options *o = ctx;

	if (o->format == EXPORT_JSON)
		o->format = EXPORT_CHROME;
	return 0;
}

static int run(const struct replay *rps, int n, void *ctx, struct report *r)
{
	return export_run(&rps[0], ctx);
}

int cmd_export(int argc, const char **argv)
{
	struct export_options o = { .format = EXPORT_PERFETTO, .step = -1 };
	const struct option opts[] = {
		OPT_CHOICE(0, "format", &o.format, export_format_names,
			   "perfetto (protobuf, ui.perfetto.dev) or chrome (JSON)"),
		OPT_STRING('o', "output", &o.output, "FILE",
			   "write here ('-' for stdout; default: the bundle's name with .pftrace or .json)"),
		OPT_COUNT(0, "step", &o.step, "only step N (its index in 'steptrace steps'), with memory live at its start"),
		OPT_BOOLEAN(0, "no-api", &o.no_api, "leave host API calls (and launch flows) out"),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .check = check, .run = run, .ctx = &o,
	};

	return analysis_main(&c, argc, argv);
}
