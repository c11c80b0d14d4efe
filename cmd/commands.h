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

/*
 * What each command does, in one line: `steptrace help` lists them, and
 * each command's --help starts with its own (the usage array's
 * description, lib/options.h).
 */
#define CMD_INFO_HELP    "header, footer, counts, completeness, dropped records"
#define CMD_STEPS_HELP   "per-step wall and GPU time, mean ± std over measured steps"
#define CMD_SUMMARY_HELP "kernel summary (Nsight's cuda_gpu_kern_sum) by kernel, op or category"
#define CMD_RANGES_HELP  "NVTX ranges with CPU time and projected GPU time"
#define CMD_MEMORY_HELP  "memory peaks per phase and step, breakdown at the peak, --svg"
#define CMD_REPLAY_HELP  "the events in time order with range path and live memory"
#define CMD_FLOPS_HELP   "per-op FLOPs, bytes, achieved rates and roofline bound"
#define CMD_DIFF_HELP    "compare two bundles by op, range path and kernel category"
#define CMD_EXPORT_HELP  "write the bundle for Perfetto, Chrome DevTools or SQL (perfetto, chrome, sqlite)"
#define CMD_REPORT_HELP  "write one self-contained HTML page"
#define CMD_PLAN_HELP    "parallelism accounting from a model's sizes or a bundle: FP32 state, FSDP memory, compute-bound batch, DP/ZeRO memory, DP/TP/PP communication"
#define CMD_EXPLAIN_HELP "why the step takes as long as it does: its parts, critical path, ranked findings, --what-if"
#define CMD_COMM_HELP    "collectives of a multi-GPU run: bandwidth, hidden vs exposed, skew"
#define CMD_BENCH_HELP   "benchmark the training step without CUPTI (sizes, contexts, precisions)"
#define CMD_STEP_HELP    "run the training step on the GPU and check it"
#define CMD_RECORD_HELP  "record training steps under CUPTI into a bundle"
#define CMD_IMPORT_HELP  "make a bundle of a torch.profiler trace or an Nsight Systems SQLite export"
#define CMD_TRIGGER_HELP "record the next N steps of an armed run (record --armed) into a bundle per process"

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
int cmd_explain(int argc, const char **argv);
int cmd_plan(int argc, const char **argv);
int cmd_trigger(int argc, const char **argv);
int cmd_import(int argc, const char **argv);

/* libsteptrace_gpu (looked up with dlsym, never linked against) */
int cmd_bench(int argc, const char **argv);
int cmd_step(int argc, const char **argv);
int cmd_record(int argc, const char **argv);

#endif
