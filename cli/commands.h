/*
 * commands.h: the subcommands of `steptrace`, one function each, in the
 * manner of perf's builtin.h. argv[0] is the command name; the return value
 * is the exit status (0 ok, 1 error, 129 usage; a negative value means 1).
 *
 * The analysis commands live in libsteptrace_core (analyze/, replay/); the
 * GPU commands (bench, step, record) in libsteptrace_gpu, which the
 * dispatcher dlopen()s and searches for "cmd_bench", "cmd_step", "cmd_record".
 *
 * The dispatcher includes this header with CMD_DECL_ATTR defined as
 * __attribute__((weak)), so the program links and runs while a command is
 * still being written: a command whose function is missing is unknown.
 */
#ifndef STEPTRACE_CLI_COMMANDS_H
#define STEPTRACE_CLI_COMMANDS_H

#ifndef CMD_DECL_ATTR
#define CMD_DECL_ATTR
#endif

typedef int (*cmd_fn)(int argc, const char **argv);

/* libsteptrace_core */
int cmd_info(int argc, const char **argv) CMD_DECL_ATTR;
int cmd_steps(int argc, const char **argv) CMD_DECL_ATTR;
int cmd_summary(int argc, const char **argv) CMD_DECL_ATTR;
int cmd_ranges(int argc, const char **argv) CMD_DECL_ATTR;
int cmd_memory(int argc, const char **argv) CMD_DECL_ATTR;
int cmd_replay(int argc, const char **argv) CMD_DECL_ATTR;
int cmd_flops(int argc, const char **argv) CMD_DECL_ATTR;
int cmd_diff(int argc, const char **argv) CMD_DECL_ATTR;
int cmd_export(int argc, const char **argv) CMD_DECL_ATTR;
int cmd_report(int argc, const char **argv) CMD_DECL_ATTR;

/* libsteptrace_gpu (looked up with dlsym, never linked against) */
int cmd_bench(int argc, const char **argv);
int cmd_step(int argc, const char **argv);
int cmd_record(int argc, const char **argv);

#endif
