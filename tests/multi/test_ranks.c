/*
 * test_ranks.c: the multi-GPU run's processes without a GPU (model/ranks.c):
 * the launchers' rank variables, the rendezvous directory and its choice,
 * bounded waits, NCCL's id exchanged between real processes through a
 * directory (with a rank that never comes, and a rank 0 that never comes),
 * and `--nproc`'s launcher with fake ranks that succeed, fail, die by a
 * signal or ignore SIGTERM.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "tests/lib/check.h"
#include "lib/error.h"
#include "model/ranks.h"

static char tmpdir[256];
static char msgs[512];          /* every process's messages, appended */

/* ---- fake environments ---------------------------------------------------- */

static const char *const *fake_env;

static const char *fake_get(const char *name)
{
	size_t n = strlen(name);

	for (const char *const *e = fake_env; *e; e++)
		if (!strncmp(*e, name, n) && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static int detect(struct rank_info *ri, const char *const *env)
{
	fake_env = env;
	return rank_info_detect(ri, fake_get);
}

static void test_detect(void)
{
	struct rank_info ri;
	static const char *const none[] = { "HOME=/root", NULL };
	static const char *const torchrun[] = { "RANK=3", "WORLD_SIZE=4", "LOCAL_RANK=1",
		"LOCAL_WORLD_SIZE=2", "TORCHELASTIC_RUN_ID=abc/def", "MASTER_PORT=29500",
		"TORCHELASTIC_RESTART_COUNT=0", NULL };
	static const char *const mpirun[] = { "OMPI_COMM_WORLD_RANK=1", "OMPI_COMM_WORLD_SIZE=2",
		"OMPI_COMM_WORLD_LOCAL_RANK=1", "OMPI_COMM_WORLD_LOCAL_SIZE=2",
		"PMIX_NAMESPACE=prterun-vm-1234@1", NULL };
	static const char *const srun[] = { "SLURM_PROCID=5", "SLURM_NTASKS=8", "SLURM_LOCALID=1",
		"SLURM_STEP_NUM_NODES=2", "SLURM_JOB_ID=777", "SLURM_STEP_ID=0", NULL };
	static const char *const batch[] = { "SLURM_PROCID=0", "SLURM_NTASKS=8", "SLURM_JOB_ID=777", NULL };
	static const char *const nested[] = { "SLURM_PROCID=0", "SLURM_NTASKS=1", "SLURM_LOCALID=0",
		"RANK=1", "WORLD_SIZE=2", "LOCAL_RANK=1", NULL };
	static const char *const bad[] = { "RANK=x", "WORLD_SIZE=2", "LOCAL_RANK=0", NULL };
	static const char *const over[] = { "RANK=2", "WORLD_SIZE=2", "LOCAL_RANK=0", NULL };
	static const char *const zero[] = { "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=0",
		"OMPI_COMM_WORLD_LOCAL_RANK=0", NULL };

	CHECK(detect(&ri, none) == 0 && ri.rank == 0 && ri.size == 1 && !strcmp(ri.launcher, "none"),
	      "no launcher: rank 0 of 1, got %d of %d (%s)", ri.rank, ri.size, ri.launcher);
	CHECK(detect(&ri, torchrun) == 0 && ri.rank == 3 && ri.size == 4 && ri.local_rank == 1 &&
	      ri.several_hosts && !strcmp(ri.launcher, "torchrun"), "torchrun: %d of %d local %d",
	      ri.rank, ri.size, ri.local_rank);
	CHECK_STR(ri.job, "abc_def-29500-0");
	CHECK(detect(&ri, mpirun) == 0 && ri.rank == 1 && ri.size == 2 && ri.local_rank == 1 &&
	      !ri.several_hosts && !strcmp(ri.launcher, "mpirun"), "mpirun: %d of %d", ri.rank, ri.size);
	CHECK_STR(ri.job, "prterun-vm-1234_1");
	CHECK(detect(&ri, srun) == 0 && ri.rank == 5 && ri.size == 8 && ri.local_rank == 1 &&
	      ri.several_hosts && !strcmp(ri.launcher, "srun"), "srun: %d of %d", ri.rank, ri.size);
	CHECK_STR(ri.job, "777-0");
	CHECK(detect(&ri, batch) == 0 && ri.size == 1, "a batch script without srun is one process");
	CHECK(detect(&ri, nested) == 0 && ri.rank == 1 && ri.size == 2 && !strcmp(ri.launcher, "torchrun"),
	      "torchrun under srun: torchrun's rank");

	error_set_stream(fopen(msgs, "a"));
	CHECK(detect(&ri, bad) < 0, "RANK=x refused");
	CHECK(detect(&ri, over) < 0, "rank 2 of 2 refused");
	CHECK(detect(&ri, zero) < 0, "size 0 refused");
	error_set_stream(NULL);
	{
		FILE *f = fopen(msgs, "r");
		char buf[1024] = "";
		size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
		buf[n] = '\0';
		if (f)
			fclose(f);
		CHECK(strstr(buf, "error: environment variable RANK is 'x', not a rank or count\n") != NULL,
		      "the malformed variable is named:\n%s", buf);
		CHECK(strstr(buf, "error: RANK=2 and WORLD_SIZE=2: the rank must be below the size\n") != NULL,
		      "the contradiction is named:\n%s", buf);
		unlink(msgs);
	}
}

static void test_dir_and_device(void)
{
	struct rank_info ri;
	static const char *const mpirun[] = { "OMPI_COMM_WORLD_RANK=0", "OMPI_COMM_WORLD_SIZE=2",
		"OMPI_COMM_WORLD_LOCAL_RANK=0", "OMPI_MCA_ess_base_jobid=4242", NULL };
	static const char *const anon[] = { "RANK=0", "WORLD_SIZE=2", "LOCAL_RANK=0", NULL };
	static const char *const hosts[] = { "RANK=0", "WORLD_SIZE=4", "LOCAL_RANK=0",
		"LOCAL_WORLD_SIZE=2", "TORCHELASTIC_RUN_ID=x", NULL };
	char want[300];

	setenv("TMPDIR", "/scratch", 1);
	detect(&ri, mpirun);
	CHECK(rank_rendezvous_dir(&ri, NULL) == 0, "a derived directory");
	CHECK_STR(ri.rendezvous, "/scratch/steptrace-4242");
	CHECK(rank_rendezvous_dir(&ri, "/shared/rdv") == 0, "a given directory");
	CHECK_STR(ri.rendezvous, "/shared/rdv");
	unsetenv("TMPDIR");
	detect(&ri, mpirun);
	rank_rendezvous_dir(&ri, NULL);
	snprintf(want, sizeof(want), "/tmp/steptrace-4242");
	CHECK_STR(ri.rendezvous, want);

	error_set_stream(fopen("/dev/null", "w"));
	detect(&ri, anon);
	CHECK(rank_rendezvous_dir(&ri, NULL) < 0, "no job id and no directory: refused");
	detect(&ri, hosts);
	CHECK(rank_rendezvous_dir(&ri, NULL) < 0, "several hosts and no directory: refused");
	CHECK(rank_rendezvous_dir(&ri, "/shared") == 0, "several hosts with a directory");
	error_set_stream(NULL);
	detect(&ri, (const char *const[]){ NULL });
	CHECK(rank_rendezvous_dir(&ri, NULL) == 0 && ri.rendezvous[0] == '\0', "one process needs none");

	CHECK(rank_output_path("out/run.stb", 1, 2, want, sizeof(want)) == 0);
	CHECK_STR(want, "out/run.rank1.stb");
	CHECK(rank_output_path("run", 0, 4, want, sizeof(want)) == 0);
	CHECK_STR(want, "run.rank0");
	CHECK(rank_output_path("run.stb", 0, 1, want, sizeof(want)) == 0);
	CHECK_STR(want, "run.stb");
	error_set_stream(fopen("/dev/null", "w"));
	CHECK(rank_output_path("long-name.stb", 10, 11, want, 12) < 0, "too long");
	error_set_stream(NULL);

	ri.local_rank = 5;
	CHECK(rank_device(&ri, 2) == 1 && rank_device(&ri, 8) == 5 && rank_device(&ri, 0) == 0,
	      "local rank modulo the devices");
}

/* ---- bounded waits ---------------------------------------------------------- */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int count_to_three(void *ctx)
{
	return ++*(int *)ctx >= 3;
}

static int never(void *ctx)
{
	++*(int *)ctx;
	return 0;
}

static int broken(void *ctx)
{
	return -1;
}

static void test_wait(void)
{
	int calls = 0;
	double t0;

	CHECK(rank_wait(count_to_three, &calls, 10) == 1 && calls == 3, "done on the third poll (%d)", calls);
	calls = 0;
	t0 = now_s();
	CHECK(rank_wait(never, &calls, 0.2) == 0, "the time runs out");
	/* upper bounds on waits are far above what a busy machine adds, far below the wrong wait */
	CHECK(now_s() - t0 >= 0.2 && now_s() - t0 < 30 && calls > 3, "after 0.2 s (%.3f s, %d polls)",
	      now_s() - t0, calls);
	CHECK(rank_wait(broken, NULL, 10) == -1, "a failed poll ends the wait");

	/* a stop flag (record's SIGTERM) cuts a long wait to a few seconds */
	static volatile sig_atomic_t stop;
	rank_wait_stop_on(&stop);
	CHECK(!rank_wait_stopped(), "not stopped before the flag");
	stop = 1;
	t0 = now_s();
	CHECK(rank_wait(never, &calls, 300) == 0, "a wait told to stop ends as a timeout");
	CHECK(now_s() - t0 >= 4.5 && now_s() - t0 < 60, "after the grace of 5 s, not 300 (%.3f s)",
	      now_s() - t0);
	CHECK(rank_wait_stopped(), "and says it was stopped");
	calls = 0;
	CHECK(rank_wait(count_to_three, &calls, 10) == 1, "the peers still get their answers meanwhile");
	rank_wait_stop_on(NULL);
	CHECK(!rank_wait_stopped(), "no flag, no stop");
}

/* ---- the rendezvous between processes --------------------------------------- */

static void fake_id(uint8_t *id, size_t n, int seed)
{
	for (size_t i = 0; i < n; i++)
		id[i] = (uint8_t)(seed * 31 + i * 7);
}

/* In a child: exchange as `rank` of `size`; exit 0 when it got rank 0's id, 1 otherwise. */
static pid_t exchanger(const char *dir, int rank, int size, double timeout)
{
	pid_t pid = fork();

	if (pid == 0) {
		uint8_t id[128], want[128];
		char prefix[16];

		snprintf(prefix, sizeof(prefix), "rank %d", rank);
		error_set_prefix(prefix);
		error_set_stream(fopen(msgs, "a"));
		fake_id(id, sizeof(id), rank == 0 ? 42 : rank);
		fake_id(want, sizeof(want), 42);
		if (rendezvous_exchange(dir, rank, size, id, sizeof(id), timeout) < 0)
			_exit(2);
		_exit(memcmp(id, want, sizeof(id)) ? 1 : 0);
	}
	return pid;
}

static int exit_of(pid_t pid)
{
	int st;

	if (waitpid(pid, &st, 0) != pid)
		return -1;
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static void read_msgs(char *buf, size_t len)
{
	FILE *f = fopen(msgs, "r");
	size_t n = f ? fread(buf, 1, len - 1, f) : 0;

	buf[n] = '\0';
	if (f)
		fclose(f);
	unlink(msgs);
}

static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)))
		n += e->d_name[0] != '.' || (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."));
	closedir(d);
	return n;
}

static void test_rendezvous(void)
{
	char dir[300], buf[4096];
	pid_t pid[4];
	double t0;

	/* four processes; rank 0 starts last and creates the directory */
	snprintf(dir, sizeof(dir), "%s/rdv", tmpdir);
	for (int r = 3; r >= 0; r--)
		pid[r] = exchanger(dir, r, 4, 60);
	for (int r = 0; r < 4; r++)
		CHECK(exit_of(pid[r]) == 0, "rank %d got rank 0's id", r);
	CHECK(entries(dir) == 0, "the rendezvous removes its files (%d left)", entries(dir));
	read_msgs(buf, sizeof(buf));
	CHECK(buf[0] == '\0', "no messages:\n%s", buf);

	/* rank 2 of 3 never comes: rank 0 names it; rank 1 got the id all the same */
	t0 = now_s();
	pid[0] = exchanger(dir, 0, 3, 3);    /* long enough for rank 1 to come on a busy machine */
	pid[1] = exchanger(dir, 1, 3, 60);
	CHECK(exit_of(pid[1]) == 0, "rank 1 has the id");
	CHECK(exit_of(pid[0]) == 2, "rank 0 fails");
	CHECK(now_s() - t0 < 30, "within its timeout (%.2f s)", now_s() - t0);
	read_msgs(buf, sizeof(buf));
	CHECK(strstr(buf, "error: rank 0: rendezvous in '") && strstr(buf, "' timed out after 3 s: rank 2 did not come\n"),
	      "the missing rank is named:\n%s", buf);
	CHECK(entries(dir) == 0, "files removed after a timeout too (%d left)", entries(dir));

	/* no rank 0 */
	pid[1] = exchanger(dir, 1, 2, 0.3);
	CHECK(exit_of(pid[1]) == 2, "rank 1 alone fails");
	read_msgs(buf, sizeof(buf));
	CHECK(strstr(buf, "error: rank 1: rendezvous in '") && strstr(buf, "timed out after 0.3 s: rank 0 did not come\n"),
	      "rank 0 is named:\n%s", buf);

	/* ranks that disagree on the size */
	pid[1] = exchanger(dir, 1, 3, 60);
	pid[0] = exchanger(dir, 0, 2, 3);
	CHECK(exit_of(pid[1]) == 2 && exit_of(pid[0]) == 2, "both fail");
	read_msgs(buf, sizeof(buf));
	CHECK(strstr(buf, "error: rank 1: rank 0 runs 2 ranks but this rank was started as one of 3\n"),
	      "the disagreement is named:\n%s", buf);

	/* a foreign file where rank 0's goes */
	{
		char path[400];
		FILE *f;

		snprintf(path, sizeof(path), "%s/id", dir);
		f = fopen(path, "w");
		fputs("not a rendezvous file", f);
		fclose(f);
		pid[1] = exchanger(dir, 1, 2, 1);
		CHECK(exit_of(pid[1]) == 2, "a foreign file is refused");
		unlink(path);
		read_msgs(buf, sizeof(buf));
		CHECK(strstr(buf, "/id' is not this rendezvous's file\n"), "said so:\n%s", buf);
	}
	rmdir(dir);
}

/* ---- --nproc's launcher ------------------------------------------------------- */

enum behaviour { B_OK, B_EXIT3, B_KILLED, B_STUBBORN };

struct fake {
	enum behaviour rank1;    /* what rank 1 does; the others succeed, or wait when rank 1 fails */
};

/* A rank that records what it was told, exchanges an id, then behaves. */
static int fake_rank(const struct rank_info *ri, void *ctx)
{
	const struct fake *f = ctx;
	char path[400];
	uint8_t id[128], want[128];
	FILE *out;

	error_set_stream(fopen(msgs, "a"));
	snprintf(path, sizeof(path), "%s/rank%d", tmpdir, ri->rank);
	out = fopen(path, "w");
	fake_id(id, sizeof(id), ri->rank == 0 ? 42 : ri->rank);
	fake_id(want, sizeof(want), 42);
	if (rendezvous_exchange(ri->rendezvous, ri->rank, ri->size, id, sizeof(id), 60) < 0)
		return 4;
	fprintf(out, "%d %d %d %s %s %s %s %s\n", ri->rank, ri->size, ri->local_rank, ri->launcher,
		memcmp(id, want, sizeof(id)) ? "wrong-id" : "id", getenv("NCCL_NVLS_ENABLE"),
		getenv("TORCH_SYMM_MEM_DISABLE_MULTICAST"), getenv("NVSHMEM_DISABLE_NVLS"));
	fclose(out);
	if (f->rank1 == B_OK)
		return 0;
	if (ri->rank == 1) {
		struct timespec ts = { 0, 50 * 1000 * 1000 };
		nanosleep(&ts, NULL);
		error("failing on purpose");
		if (f->rank1 == B_KILLED)
			kill(getpid(), SIGKILL);
		return 3;
	}
	if (f->rank1 == B_STUBBORN && ri->rank == 2)
		signal(SIGTERM, SIG_IGN);
	for (int i = 0; i < 3000; i++) {   /* "hangs" for five minutes unless stopped */
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	return 0;
}

static void read_file(const char *name, char *buf, size_t len)
{
	char path[600];
	FILE *f;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/%.64s", tmpdir, name);
	f = fopen(path, "r");
	if (f) {
		n = fread(buf, 1, len - 1, f);
		fclose(f);
		unlink(path);
	}
	buf[n] = '\0';
}

/* What the fake ranks wrote, removed. */
static void clear_rank_files(int n)
{
	char name[32], buf[256];

	for (int r = 0; r < n; r++) {
		snprintf(name, sizeof(name), "rank%d", r);
		read_file(name, buf, sizeof(buf));
	}
}

/* ranks_launch with the launcher's own lines appended to msgs */
static int launch(int n, struct fake *f, double grace)
{
	FILE *m = fopen(msgs, "a");
	int rc;

	error_set_stream(m);
	rc = ranks_launch(n, NULL, fake_rank, f, grace);
	error_set_stream(NULL);
	fclose(m);
	return rc;
}

static void test_launch(void)
{
	struct fake f = { B_OK };
	char buf[4096], want[256], name[32];
	double t0;
	int rc;

	unsetenv("NCCL_NVLS_ENABLE");
	unsetenv("TORCH_SYMM_MEM_DISABLE_MULTICAST");
	setenv("NVSHMEM_DISABLE_NVLS", "user", 1);   /* the user's value stays */
	rc = launch(3, &f, 1.0);
	CHECK(rc == 0, "three ranks succeed (%d)", rc);
	for (int r = 0; r < 3; r++) {
		snprintf(want, sizeof(want), "%d 3 %d steptrace --nproc id 0 1 user\n", r, r);
		snprintf(name, sizeof(name), "rank%d", r);
		read_file(name, buf, sizeof(buf));
		CHECK_STR(buf, want);
	}
	read_msgs(buf, sizeof(buf));
	CHECK(buf[0] == '\0', "no messages:\n%s", buf);
	CHECK(entries(tmpdir) == 0, "the private rendezvous directory is gone (%d entries)", entries(tmpdir));

	/* rank 1 fails: the others, waiting, are stopped; its status is the run's */
	f.rank1 = B_EXIT3;
	t0 = now_s();
	rc = launch(3, &f, 1.0);
	CHECK(rc == 3, "rank 1's status (%d)", rc);
	CHECK(now_s() - t0 < 60, "the others did not wait it out (%.2f s)", now_s() - t0);
	read_msgs(buf, sizeof(buf));
	CHECK(strstr(buf, "error: rank 1: failing on purpose\n"), "rank 1's own line:\n%s", buf);
	CHECK(strstr(buf, "error: rank 1 exited with status 3; stopping the other ranks\n"),
	      "the launcher names it:\n%s", buf);
	clear_rank_files(3);

	/* rank 1 dies by a signal */
	f.rank1 = B_KILLED;
	rc = launch(3, &f, 1.0);
	CHECK(rc == 128 + SIGKILL, "128 + SIGKILL (%d)", rc);
	read_msgs(buf, sizeof(buf));
	CHECK(strstr(buf, "error: rank 1 was killed by signal 9 (Killed); stopping the other ranks\n"),
	      "the signal is named:\n%s", buf);
	clear_rank_files(3);

	/* rank 2 ignores SIGTERM: SIGKILL after the grace period */
	f.rank1 = B_STUBBORN;
	t0 = now_s();
	rc = launch(3, &f, 0.5);
	CHECK(rc == 3, "rank 1's status (%d)", rc);
	CHECK(now_s() - t0 >= 0.5 && now_s() - t0 < 60, "killed after the grace period (%.2f s)",
	      now_s() - t0);
	read_msgs(buf, sizeof(buf));
	clear_rank_files(3);
	CHECK(entries(tmpdir) == 0, "nothing left behind (%d entries)", entries(tmpdir));
}

int main(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "%s/st-ranks-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	snprintf(msgs, sizeof(msgs), "%s.msgs", tmpdir);
	unlink(msgs);
	test_detect();
	test_dir_and_device();
	test_wait();
	test_rendezvous();
	setenv("TMPDIR", tmpdir, 1);   /* --nproc's private directory goes here */
	test_launch();
	unsetenv("TMPDIR");
	rmdir(tmpdir);
	return check_done("multi.ranks");
}
