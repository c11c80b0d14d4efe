/*
 * steptrace.c: the program. One table of subcommands, as git and perf do;
 * each command parses its own options. Analysis commands are linked in; the
 * GPU commands come from libsteptrace_gpu, loaded only when one of them runs
 * so that analyses work where CUDA is absent. A build without the GPU part
 * (no CUDA toolkit: STEPTRACE_HAVE_GPU undefined) lists them and says so.
 */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "lib/error.h"
#include "lib/options.h"

#ifndef STEPTRACE_VERSION
#define STEPTRACE_VERSION "unknown"
#endif

#define GPU_LIBRARY "libsteptrace_gpu.so"

struct cmd_struct {
	const char *name;
	cmd_fn fn;          /* analysis commands; NULL for the GPU ones */
	bool gpu;           /* looked up as "cmd_<name>" in GPU_LIBRARY */
	const char *help;
	bool other;         /* listed under "Other commands": no bundle read, no GPU needed */
};

static const struct cmd_struct commands[] = {
	{ "info",    cmd_info,    false, CMD_INFO_HELP, false },
	{ "steps",   cmd_steps,   false, CMD_STEPS_HELP, false },
	{ "summary", cmd_summary, false, CMD_SUMMARY_HELP, false },
	{ "ranges",  cmd_ranges,  false, CMD_RANGES_HELP, false },
	{ "memory",  cmd_memory,  false, CMD_MEMORY_HELP, false },
	{ "replay",  cmd_replay,  false, CMD_REPLAY_HELP, false },
	{ "flops",   cmd_flops,   false, CMD_FLOPS_HELP, false },
	{ "diff",    cmd_diff,    false, CMD_DIFF_HELP, false },
	{ "export",  cmd_export,  false, CMD_EXPORT_HELP, false },
	{ "report",  cmd_report,  false, CMD_REPORT_HELP, false },
	{ "comm",    cmd_comm,    false, CMD_COMM_HELP, false },
	{ "explain", cmd_explain, false, CMD_EXPLAIN_HELP, false },
	{ "plan",    cmd_plan,    false, CMD_PLAN_HELP, false },
	{ "bench",   NULL,        true,  CMD_BENCH_HELP, false },
	{ "step",    NULL,        true,  CMD_STEP_HELP, false },
	{ "record",  NULL,        true,  CMD_RECORD_HELP, false },
	{ "trigger", cmd_trigger, false, CMD_TRIGGER_HELP, true },
	{ "import",  cmd_import,  false, CMD_IMPORT_HELP, true },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const char main_usage[] =
	"usage: steptrace [--version] [--help] <command> [<args>]\n";

static const struct cmd_struct *find_command(const char *name)
{
	size_t i;

	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(commands[i].name, name) == 0)
			return &commands[i];
	return NULL;
}

static void list_commands(FILE *f, bool gpu, bool other)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (commands[i].gpu == gpu && commands[i].other == other)
			fprintf(f, "   %-10s %s\n", commands[i].name, commands[i].help);
}

static void print_main_usage(FILE *f)
{
	fputs(main_usage, f);
	fputs("\nAnalysis commands (read a bundle; no GPU needed):\n", f);
	list_commands(f, false, false);
#ifdef STEPTRACE_HAVE_GPU
	fputs("\nGPU commands (need a GPU build and a CUDA GPU):\n", f);
#else
	fputs("\nGPU commands (not in this build: it has no GPU part):\n", f);
#endif
	list_commands(f, true, false);
	fputs("\nOther commands:\n", f);
	list_commands(f, false, true);
	fprintf(f, "   %-10s %s\n", "help", "show this list, or a command's options");
	fprintf(f, "   %-10s %s\n", "version", "print the version");
	fputs("\nOrder of work: record a bundle where the GPU is, then read it anywhere:\n"
	      "  1. steptrace record -o run.stb                (or: record -o run.stb -- python3 train.py)\n"
	      "  2. steptrace info run.stb                     then steps, summary, ranges, memory, flops\n"
	      "  3. steptrace diff a.stb b.stb                 then report run.stb (HTML), export run.stb (Perfetto, SQL)\n", f);
	fputs("\nSee 'steptrace help <command>' for a command's options.\n", f);
}

#ifdef STEPTRACE_HAVE_GPU
/*
 * Loads GPU_LIBRARY from the program's own directory, then through the
 * library search path. NULL with the dlerror() text that explains why in
 * `why` (the one from the program's directory when the file is there, since
 * that is the library the user built).
 */
static void *load_gpu_library(char *why, size_t len)
{
	char exe[PATH_MAX], path[PATH_MAX + sizeof(GPU_LIBRARY)];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	bool local_exists = false;
	void *h;

	why[0] = '\0';
	if (n > 0) {
		char *slash;

		exe[n] = '\0';
		slash = strrchr(exe, '/');
		if (slash) {
			slash[1] = '\0';
			snprintf(path, sizeof(path), "%s%s", exe, GPU_LIBRARY);
			if (access(path, F_OK) == 0) {
				local_exists = true;
				h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
				if (h)
					return h;
				snprintf(why, len, "%s", dlerror());
			}
		}
	}
	h = dlopen(GPU_LIBRARY, RTLD_NOW | RTLD_LOCAL);
	if (h)
		return h;
	if (!local_exists)
		snprintf(why, len, "%s", dlerror());
	return NULL;
}

static cmd_fn resolve_gpu_command(const struct cmd_struct *c)
{
	char why[512], sym[64];
	void *h = load_gpu_library(why, sizeof(why));
	cmd_fn fn;

	if (!h) {
		error("'%s' needs a GPU build of steptrace: cannot load %s (%s)",
			 c->name, GPU_LIBRARY, why);
		return NULL;
	}
	snprintf(sym, sizeof(sym), "cmd_%s", c->name);
	*(void **)&fn = dlsym(h, sym);
	if (!fn)
		error("'%s' needs a GPU build of steptrace: %s has no %s",
			 c->name, GPU_LIBRARY, sym);
	return fn;
}
#else
static cmd_fn resolve_gpu_command(const struct cmd_struct *c)
{
	error("'%s' needs the GPU part of steptrace, and this build has none "
	      "(configured without CUDA)", c->name);
	return NULL;
}
#endif

/* A command's return value as an exit status. */
static int exit_status(int ret)
{
	if (ret == 0 || ret == EXIT_USAGE)
		return ret;
	if (ret < 0 || ret > 255)
		return 1;
	return ret;
}

/*
 * Reports a failed write of stdout (full disk, closed pipe) instead of
 * exiting 0; a command that failed has said why already, once.
 */
static int finish_stdout(int status)
{
	errno = 0;
	if (fflush(stdout) != 0 || ferror(stdout)) {
		if (status == 0)
			error("cannot write to standard output: %s", strerror(errno ? errno : EIO));
		return status ? status : 1;
	}
	return status;
}

static int unknown_command(const char *name)
{
	const char *names[NCOMMANDS + 3], *near;
	size_t n = 0;

	for (size_t i = 0; i < NCOMMANDS; i++)
		names[n++] = commands[i].name;
	names[n++] = "help";
	names[n++] = "version";
	names[n] = NULL;
	near = did_you_mean(name, names);
	if (near)
		error("'%s' is not a steptrace command. Did you mean '%s'?", name, near);
	else
		error("'%s' is not a steptrace command. See 'steptrace help'.", name);
	return EXIT_USAGE;
}

static int run_command(const char *name, int argc, const char **argv)
{
	const struct cmd_struct *c = find_command(name);
	cmd_fn fn;

	if (!c)
		return unknown_command(name);
	fn = c->gpu ? resolve_gpu_command(c) : c->fn;
	if (!fn)
		return 1;
	return exit_status(fn(argc, argv));
}

static int cmd_help(int argc, const char **argv)
{
	const char *sub[3];

	if (argc < 2) {
		print_main_usage(stdout);
		return 0;
	}
	if (!find_command(argv[1]))
		return unknown_command(argv[1]);
	sub[0] = argv[1];
	sub[1] = "--help";
	sub[2] = NULL;
	return run_command(argv[1], 2, sub);
}

int main(int argc, char **argv)
{
	const char **av = (const char **)argv + 1;
	int ac = argc - 1, status;
	const char *cmd;

	if (ac < 1) {
		print_main_usage(stderr);
		return EXIT_USAGE;
	}
	cmd = av[0];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		status = cmd_help(ac, av);
	} else if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "version") == 0) {
		printf("steptrace %s\n", STEPTRACE_VERSION);
		status = 0;
	} else if (cmd[0] == '-') {
		error("unknown option '%s'", cmd);
		fputs("See 'steptrace --help'.\n", stderr);
		status = EXIT_USAGE;
	} else {
		status = run_command(cmd, ac, av);
	}
	return finish_stdout(status);
}
