/*
 * armed.h: how an armed recording and `steptrace trigger` speak (issue 36).
 * Files only: no GPU, no CUDA; the injection library (record/inject.c)
 * keeps one end, cmd/trigger.c the other.
 *
 * `steptrace record --armed -o run.stb -- COMMAND` makes a run directory,
 * BASE/RUN (BASE: $STEPTRACE_ARMED_DIR, else $TMPDIR/steptrace-armed-UID,
 * else /tmp/steptrace-armed-UID; RUN: the run id, the pid of that
 * `steptrace record`), removed when that `steptrace record` ends. Each
 * process of COMMAND that records (it created a CUDA context and its first
 * step ended: a launcher that never steps is not in the run) publishes a
 * status file there, PID.armed: struct
 * armed_status, mapped shared by the process and by whoever triggers, so
 * that the process's only cost per step is one counter in memory.
 *
 * Steps are numbered from 0 in each process; `steps` counts those that
 * ended, so the step running now is number `steps`. A trigger reads every
 * process's count (once every rank of the world its processes name has
 * published: armed_run_missing), picks the first step S = (largest count) + 2 (a step no
 * process has begun, even one that ends a step while the trigger writes)
 * and writes the request "steps S to S+N-1" into every status file: first,
 * count, then the trigger's number last (release). Each process looks at
 * its request at each step boundary (armed_step): it begins recording when
 * step S begins and ends when step S+N-1 ends, into a bundle of its own,
 * then goes quiet again and says what it wrote (armed_done). So every rank
 * of a run records the same step numbers (their steps advance together:
 * each waits on the others in its collectives). Triggers are numbered
 * 1, 2, ... per run (the file RUN/triggers, under a lock).
 */
#ifndef STEPTRACE_LIB_ARMED_H
#define STEPTRACE_LIB_ARMED_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define ARMED_MAGIC "STARMED"
#define ARMED_VERSION 2
#define ARMED_MARGIN 2               /* S = largest step count + ARMED_MARGIN */

/* What an armed process is doing. */
enum armed_state { ARMED_IDLE, ARMED_WAITING, ARMED_RECORDING };
/* How a trigger ended for a process (armed_status.done_status). */
enum armed_result { ARMED_WRITTEN, ARMED_MISSED, ARMED_FAILED, ARMED_CUT };
extern const char *const armed_result_names[];   /* "written", "missed", "failed", "cut short" */

struct armed_status {
	char magic[8];                   /* ARMED_MAGIC */
	uint32_t version, size;          /* ARMED_VERSION, sizeof(struct armed_status) */
	int32_t pid, rank;               /* rank -1: none */
	uint32_t world_size;
	_Atomic uint32_t state;          /* enum armed_state */
	_Atomic uint64_t steps;          /* steps ended: the step running now */
	uint64_t req_first, req_count;   /* the latest request: steps [first, first + count) */
	_Atomic uint64_t req_seq;        /* its trigger's number (1, 2, ...); 0 none */
	_Atomic uint64_t taken_seq;      /* the latest request the process took */
	uint64_t done_first, done_count; /* what it recorded for done_seq */
	int32_t done_result;             /* enum armed_result */
	uint32_t reserved;
	_Atomic uint64_t done_seq;       /* the latest trigger it finished with (release, after the rest) */
	char bundle[1024];               /* the bundle done_seq wrote */
	char output[1024];               /* the run's -o, as the process has it */
	_Atomic uint64_t window_end;     /* recording an --every window: the step after it; else 0 */
};

/* The directory of armed runs into out; -1 (one error line) when it does not fit. */
int armed_base(char *out, size_t len);
/* The run directory BASE/run into out; -1 (one error line) when it does not fit. */
int armed_run_dir(char *out, size_t len, const char *run);

/* ---- the recording process -------------------------------------------------- */

/*
 * Creates DIR/PID.armed for process pid (rank -1 for none) of the run
 * whose -o is `output`, mapped; NULL after an error line. armed_unpublish
 * unmaps and removes it.
 */
struct armed_status *armed_publish(const char *dir, pid_t pid, int32_t rank, uint32_t world_size,
				   const char *output);
void armed_unpublish(const char *dir, struct armed_status *st);

/* What a step boundary asks of the process (armed_step), as bits. */
enum armed_action { ARMED_NOTHING = 0, ARMED_END = 1, ARMED_BEGIN = 2 };

/*
 * A step ended and the next begins: counts it and says what to do now:
 * ARMED_END when the step that ended was the last of the recording,
 * ARMED_BEGIN when the step beginning is the first of a request. *seq,
 * *first and *count are the request the process took: it keeps them from
 * call to call (zeroed at first). A request whose first step has begun
 * already is missed (armed_done with ARMED_MISSED). Both bits can come
 * together (one trigger's last step, the next one's first): end first.
 */
int armed_step(struct armed_status *st, uint64_t *seq, uint64_t *first, uint64_t *count);
/*
 * `record --every K --window N` (STEPTRACE_ARMED_EVERY=K:N): at a step
 * boundary where nothing is requested or recording and the step beginning
 * is a positive multiple of `every`, the process requests steps [S, S +
 * window) of itself and begins them now: ARMED_BEGIN, with *seq =
 * ARMED_PERIODIC | S (such a recording reports through the claims, not
 * armed_done: a trigger waits for its own number). Every rank numbers its
 * steps alike, so their windows hold the same steps; a trigger's request
 * that comes during one is taken after it, or missed when its first step
 * has begun. Call after armed_step, when it did not begin one. While a
 * window records, a trigger (armed_request) asks for steps from the one
 * after it at the earliest.
 */
#define ARMED_PERIODIC (1ull << 63)
int armed_periodic(struct armed_status *st, uint64_t every, uint64_t window, uint64_t *seq,
		   uint64_t *first, uint64_t *count);
/* "K:N" (K, N positive, below 2^32) into *every, *window; -1 when it is not that. */
int armed_parse_every(const char *s, uint64_t *every, uint64_t *window);

/*
 * The process is done with trigger seq: `result` and, for ARMED_WRITTEN or
 * ARMED_CUT, the steps [first, first + count) it recorded into `bundle`.
 */
void armed_done(struct armed_status *st, uint64_t seq, int result, uint64_t first, uint64_t count,
		const char *bundle);

/* ---- the trigger ----------------------------------------------------------------- */

/* An armed process as the trigger sees it: its status file, mapped. */
struct armed_proc {
	char path[4096];
	struct armed_status *st;
};

struct armed_run {
	char dir[4096];
	char id[64];                     /* the run id */
	struct armed_proc *procs;        /* live processes, by rank then pid */
	size_t n;
};

/*
 * The run of `pid` into *run: the run it started (its id is pid), or the
 * one a process of it is. 1 found, 0 when pid is in no armed run, -1 after
 * an error line.
 */
int armed_find_pid(struct armed_run *run, pid_t pid);
/* The run `id`: 1 found (possibly without a live process), 0 no such run, -1 error. */
int armed_find_run(struct armed_run *run, const char *id);
/* Maps the status files of the run's live processes (dead ones' files are removed). */
int armed_run_load(struct armed_run *run);
void armed_run_release(struct armed_run *run);

/*
 * The ranks of the run's world (the largest world_size its processes give)
 * that have no live process in it yet, listed "1, 3" into buf; *world that
 * size (1: no ranks). Their count: a trigger waits until it is 0.
 */
size_t armed_run_missing(const struct armed_run *run, uint32_t *world, char *buf, size_t len);

/*
 * Writes the request for the next `count` steps into every process of the
 * run (under the run's lock): *seq its trigger number, *first its first
 * step. -1 after an error line: no process, or one still busy with an
 * earlier trigger (*seq is then that trigger).
 */
int armed_request(struct armed_run *run, uint64_t count, uint64_t *seq, uint64_t *first);

/* true when every process of the run is done with trigger seq (or is gone). */
bool armed_all_done(const struct armed_run *run, uint64_t seq);

#endif
