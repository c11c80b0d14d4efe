/*
 * commands.h: the subcommands of `steptrace`, one function each, in the
 * manner of perf's builtin.h: cmd/<name>.c holds cmd_<name>, its option
 * table and one call into a library folder. argv[0] is the command name;
 * the return value is the exit status (0 ok, 1 error, EXIT_USAGE (129) for
 * bad usage; a negative value means 1).
 *
 * The analysis commands are linked into the program. The GPU commands
 * (bench, step, record) live in libsteptrace_gpu, which the dispatcher
 * dlopen()s and searches for "cmd_bench", "cmd_step", "cmd_record", so that
 * analyses run where CUDA is absent.
 */
#ifndef STEPTRACE_CMD_COMMANDS_H
#define STEPTRACE_CMD_COMMANDS_H

typedef int (*cmd_fn)(int argc, const char **argv);

/* the program */
int cmd_info(int argc, const char **argv);
int cmd_steps(int argc, const char **argv);
int cmd_summary(int argc, const char **argv);
int cmd_ranges(int argc, const char **argv);
int cmd_memory(int argc, const char **argv);
int cmd_replay(int argc, const char **argv);
int cmd_flops(int argc, const char **argv);
int cmd_diff(int argc, const char **argv);
int cmd_export(int argc, const char **argv);
int cmd_report(int argc, const char **argv);
int cmd_comm(int argc, const char **argv);

/* libsteptrace_gpu (looked up with dlsym, never linked against) */
int cmd_bench(int argc, const char **argv);
int cmd_step(int argc, const char **argv);
int cmd_record(int argc, const char **argv);

#endif
