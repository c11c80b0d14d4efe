/* export.c: `steptrace export`, a trace for ui.perfetto.dev, Perfetto or Chrome JSON (analyze/export.c). */
#include "analyze/export.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"

static const char *const usage[] = {
	"steptrace export [<options>] FILE",
	NULL,
};

struct export_cmd {
	struct export_options o;
	bool api;                      /* --api (default), --no-api */
};

static int check(void *ctx)
{
	struct export_cmd *c = ctx;

	if (c->o.format == EXPORT_JSON)
		c->o.format = EXPORT_CHROME;
	c->o.no_api = !c->api;
	return 0;
}

static int run(const struct replay *rps, int n, void *ctx, struct report *r)
{
	const struct export_cmd *c = ctx;

	return export_run(&rps[0], &c->o);
}

int cmd_export(int argc, const char **argv)
{
	struct export_cmd x = { .o = { .format = EXPORT_PERFETTO, .step = -1 }, .api = true };
	const struct option opts[] = {
		OPT_CHOICE(0, "format", &x.o.format, export_format_names,
			   "perfetto (protobuf, ui.perfetto.dev) or chrome (JSON)"),
		OPT_STRING('o', "output", &x.o.output, "FILE",
			   "write here ('-' for stdout; default: the bundle's name with .pftrace or .json)"),
		OPT_COUNT(0, "step", &x.o.step, "only step N (its index in 'steptrace steps'), with memory live at its start"),
		OPT_BOOLEAN(0, "api", &x.api, "host API calls and their launch flows (default; --no-api leaves them out)"),
		OPT_END(),
	};
	const struct analysis_cmd c = {
		.usage = usage, .options = opts, .bundles = 1, .check = check, .run = run, .ctx = &x,
	};

	return analysis_main(&c, argc, argv);
}
