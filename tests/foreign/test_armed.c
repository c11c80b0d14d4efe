/*
 * test_armed.c: lib/armed.c, how armed processes (`record --armed`) and
 * `steptrace trigger` speak, without a GPU: status files published and
 * found (by run id, by a process's pid), dead processes' files dropped, the
 * request's first step past every process's count, each process beginning
 * at that step and ending after the last, a request seen too late missed,
 * a second trigger refused while one is under way, triggers numbered;
 * --every's windows beside triggers.
 *
 *   test_armed                    the protocol, in this process
 *   test_armed serve DIR RANK MS [LATE]
 *                                 a stand-in for an armed process (rank RANK
 *                                 of 2), for armed.sh: publishes DIR/PID.armed
 *                                 (after LATE ms), ends a step every MS ms,
 *                                 "records" what it is asked (says
 *                                 run.T.rankR.stb is written)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/armed.h"
#include "lib/error.h"
#include "tests/lib/check.h"

struct proc {
	struct armed_status *st;
	uint64_t seq, first, count;   /* what armed_step keeps */
	bool recording;
	uint64_t began, ended;        /* the steps it began and ended recording at */
};

/* One step boundary of p: what a recording process does there. */
static int boundary(struct proc *p)
{
	int act = armed_step(p->st, &p->seq, &p->first, &p->count);
	uint64_t now = atomic_load(&p->st->steps);

	if (act & ARMED_END) {
		CHECK(p->recording, "an end without a beginning at step %llu", (unsigned long long)now);
		p->recording = false;
		p->ended = now;
		armed_done(p->st, p->seq, ARMED_WRITTEN, p->first, p->count, "run.stb");
	}
	if (act & ARMED_BEGIN) {
		p->recording = true;
		p->began = now;
	}
	return act;
}

static void test_protocol(const char *base)
{
	struct proc a = { 0 }, b = { 0 }, dead = { 0 };
	struct armed_run run;
	char dir[4096], path[4200];
	uint64_t seq, first;
	pid_t child;

	CHECK(setenv("STEPTRACE_ARMED_DIR", base, 1) == 0);
	CHECK(armed_base(dir, sizeof(dir)) == 0);
	CHECK_STR(dir, base);
	CHECK(armed_run_dir(dir, sizeof(dir), "4242") == 0);
	CHECK(mkdir(base, 0700) == 0 && mkdir(dir, 0700) == 0);

	/* two live processes (this one and its parent: they exist) and one that died */
	a.st = armed_publish(dir, getpid(), 1, 2, "/out/run.stb");
	b.st = armed_publish(dir, getppid(), 0, 2, "/out/run.stb");
	child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, NULL, 0);
	dead.st = armed_publish(dir, child, 5, 2, "/out/run.stb");
	CHECK(a.st && b.st && dead.st);
	if (!a.st || !b.st || !dead.st)
		return;

	CHECK(armed_find_run(&run, "4242") == 1 && !strcmp(run.id, "4242"));
	CHECK(armed_find_run(&run, "77") == 0, "no run 77");
	CHECK(armed_find_run(&run, "../x") == 0, "a run id is a number");
	CHECK(armed_find_pid(&run, getppid()) == 1 && !strcmp(run.id, "4242"), "a process's run");
	CHECK(armed_find_pid(&run, 999999) == 0, "a process in no run");
	CHECK(armed_find_run(&run, "4242") == 1);
	CHECK(armed_run_load(&run) == 0);
	CHECK_U64(run.n, 2);   /* the dead one's file is gone */
	snprintf(path, sizeof(path), "%s/%d.armed", dir, (int)child);
	CHECK(access(path, F_OK) != 0, "a dead process's status file stays");
	CHECK(run.n == 2 && run.procs[0].st->rank == 0 && run.procs[1].st->rank == 1, "by rank");
	munmap(dead.st, sizeof(*dead.st));

	/* steps go by: nothing asked, nothing done; rank 1 is a step ahead */
	for (int i = 0; i < 10; i++)
		CHECK(boundary(&a) == ARMED_NOTHING);
	for (int i = 0; i < 9; i++)
		CHECK(boundary(&b) == ARMED_NOTHING);
	CHECK(armed_request(&run, 3, &seq, &first) == 0);
	CHECK(seq == 1 && first == 12, "trigger %llu from step %llu", (unsigned long long)seq,
	      (unsigned long long)first);
	{
		FILE *quiet = fopen("/dev/null", "w");

		error_set_stream(quiet);
		CHECK(armed_request(&run, 3, &seq, &first) == -1, "a second trigger while one is under way");
		error_set_stream(NULL);
		if (quiet)
			fclose(quiet);
	}
	CHECK(!armed_all_done(&run, 1));
	/* both begin at step 12 and end when step 14 ends */
	for (int i = 0; i < 8; i++) {
		boundary(&a);
		boundary(&b);
	}
	CHECK(a.began == 12 && a.ended == 15, "rank 1 recorded [%llu, %llu)", (unsigned long long)a.began,
	      (unsigned long long)a.ended);
	CHECK(b.began == 12 && b.ended == 15, "rank 0 recorded [%llu, %llu)", (unsigned long long)b.began,
	      (unsigned long long)b.ended);
	CHECK(armed_all_done(&run, 1));
	CHECK(run.procs[0].st->done_result == ARMED_WRITTEN && run.procs[0].st->done_first == 12 &&
	      run.procs[0].st->done_count == 3 && !strcmp(run.procs[0].st->bundle, "run.stb"));
	CHECK(atomic_load(&a.st->state) == ARMED_IDLE && atomic_load(&b.st->state) == ARMED_IDLE);

	/* the next trigger is 2; a process that sees it only once its first step has begun misses it */
	CHECK(armed_request(&run, 2, &seq, &first) == 0);
	CHECK(seq == 2 && first == atomic_load(&a.st->steps) + ARMED_MARGIN);
	while (atomic_load(&b.st->steps) < first)   /* rank 0 takes it in time ... */
		boundary(&b);
	atomic_store(&a.st->steps, first);   /* ... rank 1 was busy: its next boundary is past the first step */
	CHECK(boundary(&a) == ARMED_NOTHING);
	CHECK(a.st->done_seq == 2 && a.st->done_result == ARMED_MISSED, "missed: %d", a.st->done_result);
	CHECK(b.recording && b.began == first, "rank 0 records trigger 2");
	boundary(&b);
	boundary(&b);
	CHECK(!b.recording && b.ended == first + 2 && armed_all_done(&run, 2));
	armed_run_release(&run);

	armed_unpublish(dir, a.st);
	armed_unpublish(dir, b.st);
	CHECK(armed_find_run(&run, "4242") == 1 && armed_run_load(&run) == 0 && run.n == 0, "unpublished");
	armed_run_release(&run);
	snprintf(path, sizeof(path), "rm -rf '%s'", base);
	CHECK(system(path) == 0);
}

/*
 * record --every 10 --window 3: a process records steps 10-12, 20-22, 30-32
 * by itself (no armed_done: a trigger's wait is for its own number); a
 * trigger's request made during a window is taken after it, one whose
 * first step has begun by then is missed, and no window begins while a
 * request waits.
 */
static void test_periodic(const char *base)
{
	struct proc p = { 0 };
	struct armed_run run;
	char dir[4096], cmd[4200];
	uint64_t began[8], ended[8], seq, first;
	size_t nb = 0, ne = 0;

	CHECK(setenv("STEPTRACE_ARMED_DIR", base, 1) == 0);
	CHECK(armed_run_dir(dir, sizeof(dir), "4343") == 0);
	CHECK(mkdir(base, 0700) == 0 && mkdir(dir, 0700) == 0);
	p.st = armed_publish(dir, getpid(), -1, 1, "/out/run.stb");
	CHECK(p.st != NULL);
	if (!p.st)
		return;
	for (int i = 0; i < 31; i++) {
		int act = armed_step(p.st, &p.seq, &p.first, &p.count);
		uint64_t now = atomic_load(&p.st->steps);

		if (!(act & ARMED_BEGIN))
			act |= armed_periodic(p.st, 10, 3, &p.seq, &p.first, &p.count);
		if ((act & ARMED_END) && ne < 8)
			ended[ne++] = now;
		if ((act & ARMED_BEGIN) && nb < 8) {
			began[nb++] = now;
			CHECK(p.seq == (ARMED_PERIODIC | now) && p.first == now && p.count == 3,
			      "window at %llu: seq %llx", (unsigned long long)now, (unsigned long long)p.seq);
		}
	}
	CHECK(nb == 3 && ne == 2 && began[0] == 10 && began[1] == 20 && began[2] == 30 && ended[0] == 13 &&
	      ended[1] == 23, "windows began %zu times (%llu, %llu, %llu), ended %zu (%llu, %llu)", nb,
	      (unsigned long long)began[0], (unsigned long long)began[1], (unsigned long long)began[2], ne,
	      (unsigned long long)ended[0], (unsigned long long)ended[1]);
	CHECK(atomic_load(&p.st->done_seq) == 0, "a window said it was a trigger's");

	/*
	 * step 30 now, the window from 30 begun (it ends where step 32 does): a
	 * trigger asks for 33-34, after it, not for 32 (the step count + 2)
	 */
	CHECK(atomic_load(&p.st->window_end) == 33);
	atomic_store(&p.st->steps, 30);
	CHECK(armed_find_run(&run, "4343") == 1 && armed_run_load(&run) == 0 && run.n == 1);
	CHECK(armed_request(&run, 2, &seq, &first) == 0 && seq == 1 && first == 33,
	      "trigger %llu at %llu", (unsigned long long)seq, (unsigned long long)first);
	atomic_store(&p.st->steps, 31);
	nb = ne = 0;
	while (atomic_load(&p.st->steps) < 45) {
		uint64_t was = p.seq;
		int act = armed_step(p.st, &p.seq, &p.first, &p.count);

		if (!(act & ARMED_BEGIN))
			act |= armed_periodic(p.st, 10, 3, &p.seq, &p.first, &p.count);
		if ((act & ARMED_END) && !((act & ARMED_BEGIN ? was : p.seq) & ARMED_PERIODIC))
			armed_done(p.st, p.seq, ARMED_WRITTEN, p.first, p.count, "run.1.stb");
		if ((act & ARMED_END) && ne < 8)
			ended[ne++] = atomic_load(&p.st->steps);
		if (act & ARMED_BEGIN)
			began[nb++] = atomic_load(&p.st->steps);
	}
	CHECK(nb == 2 && began[0] == 33 && began[1] == 40 && ne == 3 && ended[0] == 33 && ended[1] == 35 &&
	      ended[2] == 43, "after the trigger: began at %llu then %llu, ended %zu times",
	      (unsigned long long)began[0], (unsigned long long)began[1], ne);
	CHECK(atomic_load(&p.st->done_seq) == 1 && p.st->done_result == ARMED_WRITTEN);
	CHECK(atomic_load(&p.st->window_end) == 0, "no window recording");

	/*
	 * a window whose recording never began (its bundle could not open: the
	 * process went idle with window_end left set) does not make a trigger's
	 * recording look like a window: a second trigger is still refused
	 */
	atomic_store(&p.st->window_end, 99);
	CHECK(armed_request(&run, 3, &seq, &first) == 0 && seq == 2);
	while (atomic_load(&p.st->steps) < first)
		armed_step(p.st, &p.seq, &p.first, &p.count);
	CHECK(atomic_load(&p.st->state) == ARMED_RECORDING && atomic_load(&p.st->window_end) == 0,
	      "a trigger's recording: state %u, window_end %llu", (unsigned)atomic_load(&p.st->state),
	      (unsigned long long)atomic_load(&p.st->window_end));
	{
		FILE *quiet = fopen("/dev/null", "w");

		error_set_stream(quiet);
		CHECK(armed_request(&run, 1, &seq, &first) == -1, "a trigger while a trigger records");
		error_set_stream(NULL);
		if (quiet)
			fclose(quiet);
	}
	while (atomic_load(&p.st->state) != ARMED_IDLE)
		armed_step(p.st, &p.seq, &p.first, &p.count);

	/* a request holds a window back: one not yet taken, and one waiting for its first step */
	while (atomic_load(&p.st->steps) % 10 != 9)
		armed_step(p.st, &p.seq, &p.first, &p.count);
	uint64_t m = atomic_load(&p.st->steps) + 1;   /* the next multiple of 10 */
	CHECK(armed_request(&run, 1, &seq, &first) == 0 && seq == 3 && first == m + 1,
	      "trigger %llu at %llu", (unsigned long long)seq, (unsigned long long)first);
	atomic_store(&p.st->steps, m);   /* as a boundary would count it, the request not yet taken */
	CHECK(armed_periodic(p.st, 10, 3, &p.seq, &p.first, &p.count) == ARMED_NOTHING,
	      "a window while a trigger's request is not yet taken");
	atomic_store(&p.st->steps, m - 1);
	CHECK(armed_step(p.st, &p.seq, &p.first, &p.count) == ARMED_NOTHING &&
	      atomic_load(&p.st->state) == ARMED_WAITING);
	CHECK(armed_periodic(p.st, 10, 3, &p.seq, &p.first, &p.count) == ARMED_NOTHING,
	      "a window while a trigger's request waits");
	CHECK(armed_step(p.st, &p.seq, &p.first, &p.count) == ARMED_BEGIN && p.seq == 3 && p.first == m + 1,
	      "the trigger's request at %llu", (unsigned long long)(m + 1));
	armed_run_release(&run);
	armed_unpublish(dir, p.st);

	uint64_t k = 0, n = 0;
	CHECK(armed_parse_every("100:5", &k, &n) == 0 && k == 100 && n == 5);
	CHECK(armed_parse_every("7:1", &k, &n) == 0 && k == 7 && n == 1);
	const char *bad[] = { "", "100", "100:", ":5", "0:5", "5:0", "-1:5", "5:-1", " 5:1", "5:1 ",
			      "+5:1", "5:1:2", "4294967296:1", "99999999999999999999999:1", "a:b", NULL };
	for (int i = 0; bad[i]; i++)
		CHECK(armed_parse_every(bad[i], &k, &n) == -1, "'%s' taken as K:N", bad[i]);
	CHECK(armed_parse_every(NULL, &k, &n) == -1);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	CHECK(system(cmd) == 0);
}

/* A stand-in for an armed process (armed.sh): steps every ms, "records" what it is asked. */
static int serve(const char *dir, int rank, int ms, int late)
{
	struct proc p = { 0 };
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
	struct timespec wait = { late / 1000, (long)(late % 1000) * 1000000L };
	char bundle[4200];

	nanosleep(&wait, NULL);   /* its first step ends late (CUDA, the model, the data loader) */
	p.st = armed_publish(dir, getpid(), rank, 2, "run.stb");
	if (!p.st)
		return 1;
	for (int i = 0; i < 60000 / (ms ? ms : 1); i++) {   /* a minute at most */
		int act;

		nanosleep(&ts, NULL);
		act = armed_step(p.st, &p.seq, &p.first, &p.count);
		if (act & ARMED_END) {
			snprintf(bundle, sizeof(bundle), "%s/run.%llu.rank%d.stb", dir, (unsigned long long)p.seq, rank);
			armed_done(p.st, p.seq, ARMED_WRITTEN, p.first, p.count, bundle);
		}
	}
	armed_unpublish(dir, p.st);
	return 0;
}

int main(int argc, char **argv)
{
	char base[] = "/tmp/st-armed-XXXXXX";

	if ((argc == 5 || argc == 6) && !strcmp(argv[1], "serve"))
		return serve(argv[2], atoi(argv[3]), atoi(argv[4]), argc == 6 ? atoi(argv[5]) : 0);
	if (!mkdtemp(base))
		return 1;
	rmdir(base);
	test_protocol(base);
	test_periodic(base);
	return check_done("test_armed");
}
