/*
 * trigger.c: `steptrace trigger`, the next N steps of an armed run recorded
 * (`steptrace record --armed`; lib/armed.h has the protocol). No GPU: it
 * reads and writes the run's status files.
 *
 * Exit status: 0 when every process of the run wrote its bundle (or, with
 * --no-wait, took the request); 1 when the process or run is not armed,
 * a trigger is still under way, or a process missed the steps, failed or
 * ended before them; 129 bad usage.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "cmd/commands.h"
#include "lib/armed.h"
#include "lib/error.h"
#include "lib/options.h"

static const char *const usage[] = {
	"steptrace trigger [<options>] PID",
	"steptrace trigger [<options>] --run RUN_ID",
	"",
	"steptrace trigger: " CMD_TRIGGER_HELP,
	NULL,
};

#define POLL_NS 50000000L   /* how often the processes are asked whether they are done */
#define JOIN_WAIT_S 60.0     /* without --timeout: how long to wait for the run's processes to join */

static void who(const struct armed_status *st, char *buf, size_t len)
{
	if (st->rank >= 0)
		snprintf(buf, len, "rank %d (pid %d)", (int)st->rank, (int)st->pid);
	else
		snprintf(buf, len, "pid %d", (int)st->pid);
}

static double seconds_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Waits until every process is done with trigger seq (or gone, or past the timeout); what each did. */
static int wait_done(const struct armed_run *run, uint64_t seq, double timeout)
{
	const struct timespec poll = { 0, POLL_NS };
	double start = seconds_now();
	char name[64];
	int rc = 0;

	while (!armed_all_done(run, seq)) {
		if (timeout > 0 && seconds_now() - start > timeout) {
			error("trigger %llu: not done after %.0f s; the processes go on with it",
			      (unsigned long long)seq, timeout);
			return 1;
		}
		nanosleep(&poll, NULL);
	}
	for (size_t i = 0; i < run->n; i++) {
		const struct armed_status *st = run->procs[i].st;

		who(st, name, sizeof(name));
		if (atomic_load(&st->done_seq) < seq) {
			printf("%s: ended before trigger %llu was done\n", name, (unsigned long long)seq);
			rc = 1;
		} else if (st->done_result == ARMED_WRITTEN || st->done_result == ARMED_CUT) {
			printf("%s: steps %llu to %llu in '%s'%s\n", name, (unsigned long long)st->done_first,
			       (unsigned long long)(st->done_first + st->done_count - 1), st->bundle,
			       st->done_result == ARMED_CUT ? " (cut short: the program ended)" : "");
			rc |= st->done_count == 0;
		} else {
			printf("%s: %s (%s)\n", name, armed_result_names[st->done_result],
			       st->done_result == ARMED_MISSED ? "its first step had begun when it saw the request"
								 : "it could not open a bundle; see its stderr");
			rc = 1;
		}
	}
	return rc;
}

int cmd_trigger(int argc, const char **argv)
{
	const char *run_id = NULL;
	int steps = 5, wait = 1, rc;
	double timeout = 0;
	struct armed_run run;
	uint64_t seq, first;
	char names[1024];
	size_t len = 0;
	pid_t pid = 0;
	const struct option opts[] = {
		OPT_STRING(0, "run", &run_id, "RUN_ID", "the armed run (its id, as `record --armed` printed it)"),
		OPT_POSITIVE('n', "steps", &steps, "steps to record (default 5), from a step no process has begun"),
		OPT_BOOLEAN(0, "wait", &wait, "wait until every process has written its bundle and say "
			    "where (default; --no-wait returns once the request is written)"),
		OPT_NONNEGATIVE(0, "timeout", &timeout, "SECONDS", "give up waiting after this long, for the "
				"processes to join (default 60 s) and for them to be done (default 0: no limit; the "
				"processes record on)"),
		OPT_END(),
	};

	argc = parse_options(argc, argv, opts, usage);
	if (argc < 0)
		return argc == PARSE_OPT_HELP ? 0 : EXIT_USAGE;
	if ((argc > 0) == (run_id != NULL) || argc > 1) {
		if (argc > 1)
			error("trigger takes one process: unexpected '%s'", argv[1]);
		else
			error(run_id ? "give a PID or --run RUN_ID, not both"
				     : "give the PID of an armed process, or --run RUN_ID");
		usage_hint(usage);
		return EXIT_USAGE;
	}
	if (!run_id) {
		char *end;
		long v;

		errno = 0;
		v = strtol(argv[0], &end, 10);
		if (errno || *end || v <= 0 || v > 0x7fffffff) {
			error("'%s' is not a process id", argv[0]);
			usage_hint(usage);
			return EXIT_USAGE;
		}
		pid = (pid_t)v;
		if (kill(pid, 0) && errno == ESRCH)
			return error("there is no process %d", (int)pid), 1;
		rc = armed_find_pid(&run, pid);
		if (rc == 0)
			return error("process %d is not armed (steptrace record --armed -o run.stb -- COMMAND "
				     "arms a program)", (int)pid), 1;
	} else {
		rc = armed_find_run(&run, run_id);
		if (rc == 0)
			return error("there is no armed run '%s' (steptrace record --armed prints its id)", run_id), 1;
	}
	if (rc < 0)
		return 1;
	/* wait until its processes have joined: one at least, and every rank of the world they name */
	{
		const struct timespec poll = { 0, POLL_NS };
		double until = seconds_now() + (timeout > 0 ? timeout : JOIN_WAIT_S);
		char missing[512];
		uint32_t world;
		size_t n_missing;

		for (;;) {
			if (access(run.dir, F_OK))
				return error("armed run %s ended", run.id), 1;
			if (armed_run_load(&run))
				return 1;
			n_missing = armed_run_missing(&run, &world, missing, sizeof(missing));
			if ((run.n && !n_missing) || seconds_now() > until)
				break;
			armed_run_release(&run);
			nanosleep(&poll, NULL);
		}
		if (!run.n) {
			armed_run_release(&run);
			return error("armed run %s has no process recording yet (a process joins when its first "
				     "step ends, with CUDA up)", run.id), 1;
		}
		if (n_missing) {
			armed_run_release(&run);
			return error("armed run %s: rank%s %s of %u %s not recording yet (a process joins when its "
				     "first step ends); nothing requested", run.id, n_missing > 1 ? "s" : "", missing,
				     world, n_missing > 1 ? "are" : "is"), 1;
		}
	}
	if (armed_request(&run, (uint64_t)steps, &seq, &first)) {
		armed_run_release(&run);
		return 1;
	}
	names[0] = '\0';
	for (size_t i = 0; i < run.n && len < sizeof(names); i++) {
		char name[64];
		int w;

		who(run.procs[i].st, name, sizeof(name));
		w = snprintf(names + len, sizeof(names) - len, "%s%s", i ? ", " : "", name);
		len += w > 0 ? (size_t)w : 0;
	}
	printf("trigger %llu of run %s: steps %llu to %llu on %zu process%s (%s)\n", (unsigned long long)seq,
	       run.id, (unsigned long long)first, (unsigned long long)(first + (uint64_t)steps - 1), run.n,
	       run.n == 1 ? "" : "es", names);
	fflush(stdout);
	rc = wait ? wait_done(&run, seq, timeout) : 0;
	armed_run_release(&run);
	return rc;
}
