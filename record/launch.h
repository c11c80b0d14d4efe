/*
 * launch.h: `steptrace record [options] -o run.stb -- COMMAND [ARGS...]`
 * (issue 15): runs COMMAND with libsteptrace_inject.so injected into every
 * process of its tree (CUDA_INJECTION64_PATH and NVTX_INJECTION64_PATH),
 * waits for it, and reports the bundles its processes wrote
 * (record/naming.h: run.stb for one, run.<rank or pid>.stb for several).
 *
 * The command's environment passes through with the recorder's variables
 * added (record/inject.c lists them; PYTORCH_CUDA_ALLOC_CONF gains
 * backend:cudaMallocAsync with --torch-alloc async, which memory
 * categories need and which is not the default: recording does not change
 * how the program allocates unless asked, and recording every tensor's
 * allocation costs step time (docs/measurements.md, "Recording overhead
 * with --torch auto");
 * PYTHONPATH gains the Python side's folder, `python` beside
 * libsteptrace_inject.so, unless --torch off). With --armed the run gets
 * a directory (lib/armed.h; STEPTRACE_ARMED names it, its id is
 * steptrace's pid) where its processes publish their steps for `steptrace
 * trigger`; it is removed when the command ends, and each trigger's
 * bundles are reported as run.T.rankR.stb (never renamed). steptrace ignores
 * SIGINT and SIGQUIT while the command runs (the terminal sends them to
 * both), hands SIGTERM, SIGHUP, SIGUSR1 and SIGUSR2 on to it, and ends as
 * the command did: with its exit status, or by its signal.
 */
#ifndef STEPTRACE_RECORD_LAUNCH_H
#define STEPTRACE_RECORD_LAUNCH_H

#include <stdbool.h>

#include "record/capture.h"

enum launch_torch_alloc { LAUNCH_ALLOC_DEFAULT, LAUNCH_ALLOC_ASYNC };
/* "default", "async" (for OPT_CHOICE) */
extern const char *const launch_torch_alloc_names[];

/*
 * --torch: what the Python side (record/python) does in a program that
 * imports torch. auto: steps, phases, modules forward and backward, memory
 * tags; ops: the same and every aten op with its shapes (emit_nvtx); off:
 * nothing (the program is recorded as any CUDA program).
 */
enum launch_torch { LAUNCH_TORCH_AUTO, LAUNCH_TORCH_OFF, LAUNCH_TORCH_OPS };
extern const char *const launch_torch_names[];   /* "auto", "off", "ops" */

#define LAUNCH_WINDOW 3   /* --window's default: the steps of each --every window */

struct launch_opts {
	const char *output;          /* -o: the bundle (one process) or the stem of several */
	const char *step_range;      /* NVTX range name marking a step, or NULL */
	int warmup;                  /* steps flagged warm-up; -1: the rule's default */
	enum capture_api api;
	int torch;                   /* enum launch_torch */
	int torch_alloc;             /* enum launch_torch_alloc; -1: default */
	bool calibrate;              /* measure peaks here before starting the command */
	bool cupti_sync;             /* CUPTI's SYNCHRONIZATION records (record/capture.h) */
	bool armed;                  /* --armed: record nothing until `steptrace trigger` (lib/armed.h) */
	int modules_every;           /* --modules-every: module ranges on every Nth step; 0 the default */
	int every, window;           /* --every K --window N: armed, and steps K.., 2K.. recorded (0: none) */
	const char *precision;       /* the program's matrix-product precision for the header, or NULL */
	const char *command_line;    /* the steptrace command line, for the headers */
	const char *const *argv;     /* the command, NULL-terminated, argv[0] looked up in PATH */
};

/*
 * Runs the command and returns its exit status (127: it could not be run,
 * 126: not executable); a command ended by a signal ends steptrace by the
 * same signal. -1 (one error line) when nothing was started.
 */
int launch_run(const struct launch_opts *o);

#endif
