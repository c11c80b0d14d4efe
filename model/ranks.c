/* ranks.c: see ranks.h. */
#define _GNU_SOURCE
#include "model/ranks.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>

#include "lib/error.h"

/* ---- the launcher's variables ------------------------------------------- */

static const char *env_get(const char *name)
{
	return getenv(name);
}

/* A variable as a non-negative int: 1 when set and parsed, 0 when unset, -1 after an error line. */
static int env_int(const char *(*get)(const char *), const char *name, int *out)
{
	const char *s = get(name);
	char *end;
	long v;

	if (!s || !*s)
		return 0;
	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v < 0 || v > 1 << 24)
		return error("environment variable %s is '%s', not a rank or count", name, s);
	*out = (int)v;
	return 1;
}

/* Appends the variable's value, file-name safe, to ri->job ("-" between parts). */
static void job_part(struct rank_info *ri, const char *(*get)(const char *), const char *name)
{
	const char *s = get(name);
	size_t n = strlen(ri->job);

	if (!s || !*s)
		return;
	if (n && n + 1 < sizeof(ri->job))
		ri->job[n++] = '-';
	for (; *s && n + 1 < sizeof(ri->job); s++)
		ri->job[n++] = (strchr("._-", *s) || (*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'z') ||
				(*s >= 'A' && *s <= 'Z')) ? *s : '_';
	ri->job[n] = '\0';
}

/* One launcher's names for rank, size and local rank, and what tells its job and hosts apart. */
struct launcher {
	const char *name, *rank, *size, *local, *local_size, *nodes;
	const char *job[3];
};

static const struct launcher launchers[] = {
	{ "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK", "LOCAL_WORLD_SIZE", NULL,
	  { "TORCHELASTIC_RUN_ID", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT" } },
	{ "mpirun", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
	  "OMPI_COMM_WORLD_LOCAL_SIZE", NULL,
	  { "OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid" } },
	{ "srun", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", NULL, "SLURM_STEP_NUM_NODES",
	  { "SLURM_JOB_ID", "SLURM_STEP_ID", NULL } },
};

int rank_info_detect(struct rank_info *ri, const char *(*get)(const char *name))
{
	memset(ri, 0, sizeof(*ri));
	ri->size = 1;
	ri->launcher = "none";
	if (!get)
		get = env_get;
	for (size_t i = 0; i < sizeof(launchers) / sizeof(launchers[0]); i++) {
		const struct launcher *l = &launchers[i];
		int rank = 0, size = 0, local = 0, local_size = 0, nodes = 0, r, s, lr;

		/* srun sets SLURM_LOCALID for its tasks only; a batch script has SLURM_PROCID alone */
		if ((r = env_int(get, l->rank, &rank)) < 0 || (s = env_int(get, l->size, &size)) < 0 ||
		    (lr = env_int(get, l->local, &local)) < 0)
			return -1;
		if (!r || !s || !lr)
			continue;
		if (size < 1 || rank >= size)
			return error("%s=%d and %s=%d: the rank must be below the size", l->rank, rank,
				     l->size, size);
		if (l->local_size && env_int(get, l->local_size, &local_size) < 0)
			return -1;
		if (l->nodes && env_int(get, l->nodes, &nodes) < 0)
			return -1;
		ri->rank = rank;
		ri->size = size;
		ri->local_rank = local;
		ri->several_hosts = (local_size > 0 && local_size < size) || nodes > 1;
		ri->launcher = l->name;
		for (int j = 0; j < 3; j++)
			if (l->job[j])
				job_part(ri, get, l->job[j]);
		return 0;
	}
	return 0;
}

int rank_rendezvous_dir(struct rank_info *ri, const char *given)
{
	const char *tmp = getenv("TMPDIR");
	int n;

	ri->rendezvous[0] = '\0';
	if (given && *given)
		n = snprintf(ri->rendezvous, sizeof(ri->rendezvous), "%s", given);
	else if (ri->size <= 1)
		return 0;
	else if (ri->several_hosts)
		return error("the %d ranks of this %s run span several hosts: give --rendezvous DIR, a "
			     "directory on a file system they share", ri->size, ri->launcher);
	else if (!ri->job[0])
		return error("%s gives no job id to tell this run from others: give --rendezvous DIR",
			     ri->launcher);
	else
		n = snprintf(ri->rendezvous, sizeof(ri->rendezvous), "%s/steptrace-%s",
			     tmp && *tmp ? tmp : "/tmp", ri->job);
	if (n < 0 || (size_t)n >= sizeof(ri->rendezvous))
		return error("rendezvous directory name too long");
	return 0;
}

void rank_env_defaults(void)
{
	setenv("NCCL_NVLS_ENABLE", "0", 0);
	setenv("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1", 0);
	setenv("NVSHMEM_DISABLE_NVLS", "1", 0);
}

int rank_output_path(const char *path, int rank, int size, char *buf, size_t len)
{
	size_t n = strlen(path);
	int k;

	if (size <= 1)
		k = snprintf(buf, len, "%s", path);
	else if (n > 4 && !strcmp(path + n - 4, ".stb"))
		k = snprintf(buf, len, "%.*s.rank%d.stb", (int)(n - 4), path, rank);
	else
		k = snprintf(buf, len, "%s.rank%d", path, rank);
	if (k < 0 || (size_t)k >= len)
		return error("output path '%s' is too long for rank %d's file", path, rank);
	return 0;
}

int rank_device(const struct rank_info *ri, int devices)
{
	return devices > 0 ? ri->local_rank % devices : 0;
}

/* ---- waiting ------------------------------------------------------------ */

#define RANK_WAIT_SPIN_S 0.0002     /* polled without a pause this long */
#define RANK_WAIT_NAP_MAX_S 50e-6   /* then the longest pause */
#define RANK_WAIT_STOP_GRACE_S 5.0  /* what is left of a wait once told to stop */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sleep_s(double s)
{
	struct timespec ts = { (time_t)s, (long)((s - (double)(time_t)s) * 1e9) };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static volatile sig_atomic_t *wait_stop;

void rank_wait_stop_on(volatile sig_atomic_t *flag)
{
	wait_stop = flag;
}

bool rank_wait_stopped(void)
{
	return wait_stop && *wait_stop;
}

int rank_wait(int (*poll)(void *ctx), void *ctx, double timeout_s)
{
	double start = now_s(), deadline = start + timeout_s, nap = 20e-6, t;
	int rc;

	for (;;) {
		if ((rc = poll(ctx)) != 0)
			return rc;
		t = now_s();
		if (t >= deadline)
			return 0;
		/* told to stop: the peers get a few seconds more (to agree to stop), no longer */
		if (wait_stop && *wait_stop && deadline > t + RANK_WAIT_STOP_GRACE_S)
			deadline = t + RANK_WAIT_STOP_GRACE_S;
		/*
		 * Most waits are short (NCCL settling a launch, a stream's last
		 * kernel): ask again at once for the first 200 us, or each
		 * collective of a step would cost a nap; then back off, but never
		 * to more than 50 us, which is what a step's end may be noticed
		 * late (naps of up to 1 ms cost a data-parallel step 0.75 ms on
		 * average, 11% of a small BF16 step on two H200s).
		 */
		if (t - start < RANK_WAIT_SPIN_S) {
			sched_yield();
			continue;
		}
		sleep_s(nap);
		nap = nap * 1.5 < RANK_WAIT_NAP_MAX_S ? nap * 1.5 : RANK_WAIT_NAP_MAX_S;
	}
}

/* ---- the rendezvous ------------------------------------------------------ */

#define RDV_MAGIC "stRDV1\n"

/* rank 0's file, "id": the header, then the blob */
struct rdv_id {
	char magic[8];
	uint32_t size, len;
	uint64_t nonce;       /* this exchange's: the answers carry it back */
};

/* rank r's answer, "ack.<r>" */
struct rdv_ack {
	char magic[8];
	uint32_t rank, pad;
	uint64_t nonce;
};

static int path_in(char *buf, size_t len, const char *dir, const char *name)
{
	int n = snprintf(buf, len, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= len)
		return error("rendezvous path '%s/%s' too long", dir, name);
	return 0;
}

/* Writes a and b (b may be NULL) as dir/name through a temporary renamed over it. */
static int write_atomic(const char *dir, const char *name, const void *a, size_t na, const void *b,
			size_t nb)
{
	char tmp[PATH_MAX], final[PATH_MAX], tname[64];
	int fd, ok;

	snprintf(tname, sizeof(tname), ".%s.%ld.tmp", name, (long)getpid());
	if (path_in(tmp, sizeof(tmp), dir, tname) || path_in(final, sizeof(final), dir, name))
		return -1;
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return error("cannot write rendezvous file '%s': %s", tmp, strerror(errno));
	ok = write(fd, a, na) == (ssize_t)na && (!b || write(fd, b, nb) == (ssize_t)nb);
	ok = close(fd) == 0 && ok;
	if (!ok || rename(tmp, final) < 0) {
		int e = errno;
		unlink(tmp);
		return error("cannot write rendezvous file '%s': %s", final, strerror(e));
	}
	return 0;
}

/* Reads dir/name whole into buf (at most len): its size, 0 when absent, -1 after an error line. */
static ssize_t read_whole(const char *dir, const char *name, void *buf, size_t len)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	if (path_in(path, sizeof(path), dir, name))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT ? 0 : error("cannot read rendezvous file '%s': %s", path, strerror(errno));
	n = read(fd, buf, len);
	close(fd);
	if (n < 0)
		return error("cannot read rendezvous file '%s': %s", path, strerror(errno));
	return n;
}

static void remove_in(const char *dir, const char *name)
{
	char path[PATH_MAX];

	if (!path_in(path, sizeof(path), dir, name))
		unlink(path);
}

static uint64_t fresh_nonce(void)
{
	struct timespec ts;
	uint64_t z;

	clock_gettime(CLOCK_REALTIME, &ts);
	z = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + ((uint64_t)getpid() << 40);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return z ? z : 1;
}

struct rdv {
	const char *dir;
	int rank, size;
	uint64_t nonce;
	void *blob;
	size_t len;
	uint8_t *arrived;     /* rank 0: per rank */
	int missing;
	int failed;           /* a poll printed an error */
};

/* Rank 0: every answer in? 1 yes, 0 not yet, -1 a bad one. */
static int poll_acks(void *ctx)
{
	struct rdv *v = ctx;

	for (int r = 1; r < v->size; r++) {
		struct rdv_ack ack;
		char name[32];
		ssize_t n;

		if (v->arrived[r])
			continue;
		snprintf(name, sizeof(name), "ack.%d", r);
		n = read_whole(v->dir, name, &ack, sizeof(ack));
		if (n < 0)
			return -1;
		if (n == 0)
			continue;
		if ((size_t)n != sizeof(ack) || memcmp(ack.magic, RDV_MAGIC, 8) || ack.rank != (uint32_t)r)
			return error("'%s/%s' is not a rendezvous answer", v->dir, name);
		if (ack.nonce != v->nonce)
			return error("rank %d read the identifier of an earlier run from '%s': remove its "
				     "files and start again", r, v->dir);
		v->arrived[r] = 1;
		v->missing--;
	}
	return v->missing == 0;
}

/* Rank r > 0: rank 0's file there and sound? 1 yes (blob filled), 0 not yet, -1 a bad one. */
static int poll_id(void *ctx)
{
	struct rdv *v = ctx;
	uint8_t buf[sizeof(struct rdv_id) + RENDEZVOUS_MAX + 1];
	struct rdv_id id;
	ssize_t n = read_whole(v->dir, "id", buf, sizeof(buf));

	if (n <= 0)
		return (int)n;
	memcpy(&id, buf, n < (ssize_t)sizeof(id) ? (size_t)n : sizeof(id));
	if ((size_t)n < sizeof(id) || memcmp(id.magic, RDV_MAGIC, 8) || id.len != v->len ||
	    (size_t)n != sizeof(id) + id.len)
		return error("'%s/id' is not this rendezvous's file", v->dir);
	if (id.size != (uint32_t)v->size)
		return error("rank 0 runs %u ranks but this rank was started as one of %d", id.size,
			     v->size);
	memcpy(v->blob, buf + sizeof(id), v->len);
	v->nonce = id.nonce;
	return 1;
}

static int exchange_root(struct rdv *v, double timeout_s)
{
	struct rdv_id id = { .size = (uint32_t)v->size, .len = (uint32_t)v->len, .nonce = v->nonce };
	char name[32], list[256] = "";
	int rc;

	if (mkdir(v->dir, 0700) < 0 && errno != EEXIST)
		return error("cannot create rendezvous directory '%s': %s", v->dir, strerror(errno));
	/* what a crashed earlier run left: its answers would look like this run's */
	for (int r = 1; r < v->size; r++) {
		snprintf(name, sizeof(name), "ack.%d", r);
		remove_in(v->dir, name);
	}
	memcpy(id.magic, RDV_MAGIC, 8);
	if (write_atomic(v->dir, "id", &id, sizeof(id), v->blob, v->len))
		return -1;
	v->arrived = calloc((size_t)v->size, 1);
	if (!v->arrived)
		return error("out of memory");
	v->missing = v->size - 1;
	rc = rank_wait(poll_acks, v, timeout_s);
	for (int r = 1; r < v->size; r++) {
		size_t n = strlen(list);

		snprintf(name, sizeof(name), "ack.%d", r);
		remove_in(v->dir, name);
		if (!v->arrived[r] && n + 16 < sizeof(list))
			snprintf(list + n, sizeof(list) - n, "%s%d", n ? ", " : "", r);
	}
	remove_in(v->dir, "id");
	free(v->arrived);
	if (rc < 0)
		return -1;
	if (rc == 0)
		return error("rendezvous in '%s' timed out after %g s: rank%s %s%s did not come",
			     v->dir, timeout_s, v->missing > 1 ? "s" : "", list,
			     strlen(list) + 16 >= sizeof(list) ? " ..." : "");
	return 0;
}

static int exchange_peer(struct rdv *v, double timeout_s)
{
	struct rdv_ack ack = { .rank = (uint32_t)v->rank };
	char name[32];
	int rc = rank_wait(poll_id, v, timeout_s);

	if (rc < 0)
		return -1;
	if (rc == 0)
		return error("rendezvous in '%s' timed out after %g s: rank 0 did not come", v->dir,
			     timeout_s);
	memcpy(ack.magic, RDV_MAGIC, 8);
	ack.nonce = v->nonce;
	snprintf(name, sizeof(name), "ack.%d", v->rank);
	return write_atomic(v->dir, name, &ack, sizeof(ack), NULL, 0);
}

int rendezvous_exchange(const char *dir, int rank, int size, void *blob, size_t len,
			double timeout_s)
{
	struct rdv v = { .dir = dir, .rank = rank, .size = size, .blob = blob, .len = len };

	if (size < 1 || rank < 0 || rank >= size)
		return error("rank %d of %d: no such rank", rank, size);
	if (len > RENDEZVOUS_MAX)
		return error("rendezvous blob of %zu bytes is too large", len);
	if (size == 1)
		return 0;
	if (!dir || !*dir)
		return error("no rendezvous directory for %d ranks", size);
	if (rank == 0) {
		v.nonce = fresh_nonce();
		return exchange_root(&v, timeout_s);
	}
	return exchange_peer(&v, timeout_s);
}

/* ---- starting ranks here (--nproc) --------------------------------------- */

static pid_t *launched;             /* the ranks' pids, 0 once reaped */
static int n_launched;
static volatile sig_atomic_t group; /* their process group, 0 before the first */

static void forward_signal(int sig)
{
	if (group > 0)
		kill(-(pid_t)group, sig);
}

/* A failure's exit status and its description. */
static int describe(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status)) {
		snprintf(buf, len, "was killed by signal %d (%s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
		return 128 + WTERMSIG(status);
	}
	snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
	return WEXITSTATUS(status);
}

static int rank_of(pid_t pid)
{
	for (int r = 0; r < n_launched; r++)
		if (launched[r] == pid)
			return r;
	return -1;
}

/* Reaps one rank: its index, -1 when none could be (none left, or none ended with nohang). */
static int reap(bool nohang, int *status)
{
	pid_t pid;

	for (;;) {
		pid = waitpid(-1, status, nohang ? WNOHANG : 0);
		if (pid < 0 && errno == EINTR)
			continue;
		if (pid <= 0)
			return -1;
		int r = rank_of(pid);
		if (r >= 0) {
			launched[r] = 0;
			return r;
		}
	}
}

static int alive(void)
{
	int n = 0;

	for (int r = 0; r < n_launched; r++)
		n += launched[r] != 0;
	return n;
}

/* SIGTERM to the ranks still running, SIGKILL to those left after grace_s; reaps them all. */
static void stop_all(double grace_s)
{
	double deadline = now_s() + grace_s;
	int status;

	if (group > 0)
		kill(-(pid_t)group, SIGTERM);
	while (alive()) {
		if (reap(true, &status) >= 0)
			continue;
		if (now_s() >= deadline) {
			if (group > 0)
				kill(-(pid_t)group, SIGKILL);
			while (alive() && reap(false, &status) >= 0)
				;
			break;
		}
		sleep_s(0.01);
	}
}

static void rank_child(int r, int n, const char *dir, rank_main_fn fn, void *ctx)
{
	struct rank_info ri = { .rank = r, .size = n, .local_rank = r, .launcher = "steptrace --nproc" };
	char prefix[32];
	int rc;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() == 1)
		_exit(1);   /* the launcher died before we could ask */
	signal(SIGINT, SIG_DFL);
	signal(SIGTERM, SIG_DFL);
	signal(SIGHUP, SIG_DFL);
	snprintf(ri.rendezvous, sizeof(ri.rendezvous), "%s", dir);
	snprintf(prefix, sizeof(prefix), "rank %d", r);
	error_set_prefix(prefix);
	rc = fn(&ri, ctx);
	fflush(NULL);
	_exit(rc < 0 || rc > 255 ? 1 : rc);
}

int ranks_launch(int n, const char *rendezvous, rank_main_fn fn, void *ctx, double grace_s)
{
	char made[PATH_MAX] = "", why[160];
	const char *tmp = getenv("TMPDIR");
	struct sigaction sa, old[3];
	static const int sigs[3] = { SIGINT, SIGTERM, SIGHUP };
	int status, result = 0;

	if (n < 1)
		return error("--nproc must be 1 or more, not %d", n), 1;
	if (!rendezvous || !*rendezvous) {
		snprintf(made, sizeof(made), "%s/steptrace-rdv-XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (!mkdtemp(made))
			return error("cannot create a rendezvous directory '%s': %s", made, strerror(errno)), 1;
		rendezvous = made;
	}
	launched = calloc((size_t)n, sizeof(*launched));
	if (!launched) {
		error("out of memory");
		result = 1;
		goto out;
	}
	rank_env_defaults();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = forward_signal;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &old[i]);
	fflush(NULL);
	group = 0;
	for (int r = 0; r < n; r++) {
		pid_t pid = fork();

		if (pid == 0) {
			/* its own group, shared with its siblings: a terminal's ^C reaches us only */
			setpgid(0, r == 0 ? 0 : (pid_t)group);
			rank_child(r, n, rendezvous, fn, ctx);
		}
		if (pid < 0) {
			error("cannot start rank %d: %s", r, strerror(errno));
			result = 1;
			stop_all(grace_s);
			goto restore;
		}
		/* both sides set the group: whichever runs first, it exists before the next fork */
		setpgid(pid, r == 0 ? pid : (pid_t)group);
		if (r == 0)
			group = pid;
		launched[r] = pid;
		n_launched = r + 1;
	}
	while (alive()) {
		int r = reap(false, &status);

		if (r < 0)
			break;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
			continue;
		result = describe(status, why, sizeof(why));
		if (alive())
			error("rank %d %s; stopping the other ranks", r, why);
		else
			error("rank %d %s", r, why);
		stop_all(grace_s);
	}
restore:
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &old[i], NULL);
	group = 0;
	free(launched);
	launched = NULL;
	n_launched = 0;
out:
	if (made[0]) {
		/* only what the rendezvous writes, and only in the directory made here */
		remove_in(made, "id");
		for (int r = 1; r < n; r++) {
			char name[32];
			snprintf(name, sizeof(name), "ack.%d", r);
			remove_in(made, name);
		}
		rmdir(made);
	}
	return result;
}
