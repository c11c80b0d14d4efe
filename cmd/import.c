/*
 * import.c: `steptrace import`, torch.profiler traces and Nsight Systems
 * SQLite exports made into bundles (import/import.h; docs/import.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/commands.h"
#include "import/import.h"
#include "lib/error.h"
#include "lib/options.h"

static const char *const usage[] = {
	"steptrace import [<options>] TRACE...",
	"",
	"steptrace import: " CMD_IMPORT_HELP,
	"TRACE: a torch.profiler trace (.json or .json.gz, one file per rank), a folder of them "
	"(tensorboard_trace_handler's), or an Nsight Systems SQLite export (nsys export --type sqlite)",
	NULL,
};

int cmd_import(int argc, const char **argv)
{
	struct import_options o = { 0 };
	char cmdline[4096];
	size_t at = 0;
	const struct option opts[] = {
		OPT_STRING('o', "output", &o.output, "FILE",
			   "the bundle (default: the trace's name with .stb); several ranks: FILE less .stb, "
			   "then .rankN.stb"),
		OPT_BOOLEAN(0, "force", &o.force, "replace an output that is not a steptrace bundle"),
		OPT_END(),
	};

	cmdline[0] = '\0';
	for (int i = 0; i < argc && at < sizeof(cmdline) - 1; i++) {
		int k = snprintf(cmdline + at, sizeof(cmdline) - at, "%s%s", i ? " " : "steptrace ", argv[i]);

		at = k < 0 || (size_t)k >= sizeof(cmdline) - at ? sizeof(cmdline) - 1 : at + (size_t)k;
	}
	o.command_line = cmdline;
	argc = parse_options(argc, argv, opts, usage);
	if (argc < 0)
		return argc == PARSE_OPT_HELP ? 0 : EXIT_USAGE;
	if (argc < 1) {
		error("give a trace to import: a torch.profiler trace, a folder of them, or an Nsight Systems export");
		usage_hint(usage);
		return EXIT_USAGE;
	}
	return import_traces(argv, argc, &o) ? 1 : 0;
}
