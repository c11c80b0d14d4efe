/* armed.c: see armed.h. */
#define _GNU_SOURCE
#include "lib/armed.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/error.h"
#include "lib/grow.h"

const char *const armed_result_names[] = {
	[ARMED_WRITTEN] = "written", [ARMED_MISSED] = "missed", [ARMED_FAILED] = "failed",
	[ARMED_CUT] = "cut short", NULL,
};

int armed_base(char *out, size_t len)
{
	const char *dir = getenv("STEPTRACE_ARMED_DIR"), *tmp = getenv("TMPDIR");
	int n;

	if (dir && *dir)
		n = snprintf(out, len, "%s", dir);
	else
		n = snprintf(out, len, "%s/steptrace-armed-%u", tmp && *tmp ? tmp : "/tmp", (unsigned)getuid());
	if (n < 0 || (size_t)n >= len)
		return error("the directory of armed runs is too long");
	return 0;
}

int armed_run_dir(char *out, size_t len, const char *run)
{
	char base[4096];
	int n;

	if (armed_base(base, sizeof(base)))
		return -1;
	n = snprintf(out, len, "%s/%s", base, run);
	if (n < 0 || (size_t)n >= len)
		return error("the directory of armed run '%s' is too long", run);
	return 0;
}

/* ---- the recording process ------------------------------------------------------- */

static int status_path(char *out, size_t len, const char *dir, pid_t pid)
{
	int n = snprintf(out, len, "%s/%d.armed", dir, (int)pid);

	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static struct armed_status *map_status(int fd)
{
	void *p = mmap(NULL, sizeof(struct armed_status), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	return p == MAP_FAILED ? NULL : p;
}

struct armed_status *armed_publish(const char *dir, pid_t pid, int32_t rank, uint32_t world_size,
				   const char *output)
{
	char path[4096];
	struct armed_status *st;
	int fd;

	if (status_path(path, sizeof(path), dir, pid)) {
		error("the armed run directory '%s' is too long", dir);
		return NULL;
	}
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		error("cannot create '%s': %s", path, strerror(errno));
		return NULL;
	}
	if (ftruncate(fd, sizeof(*st)) || !(st = map_status(fd))) {
		error("cannot map '%s': %s", path, strerror(errno));
		close(fd);
		unlink(path);
		return NULL;
	}
	close(fd);
	st->version = ARMED_VERSION;
	st->size = sizeof(*st);
	st->pid = (int32_t)pid;
	st->rank = rank;
	st->world_size = world_size;
	snprintf(st->output, sizeof(st->output), "%s", output ? output : "");
	atomic_store(&st->state, ARMED_IDLE);
	memcpy(st->magic, ARMED_MAGIC, sizeof(ARMED_MAGIC));   /* last: the file is whole */
	return st;
}

void armed_unpublish(const char *dir, struct armed_status *st)
{
	char path[4096];
	pid_t pid;

	if (!st)
		return;
	pid = st->pid;
	munmap(st, sizeof(*st));
	if (!status_path(path, sizeof(path), dir, pid))
		unlink(path);
}

int armed_step(struct armed_status *st, uint64_t *seq, uint64_t *first, uint64_t *count)
{
	uint64_t now = atomic_fetch_add_explicit(&st->steps, 1, memory_order_relaxed) + 1;
	uint32_t state = atomic_load_explicit(&st->state, memory_order_relaxed);
	uint64_t req = atomic_load_explicit(&st->req_seq, memory_order_acquire);
	int act = ARMED_NOTHING;

	if (state == ARMED_RECORDING && now >= *first + *count) {
		act |= ARMED_END;       /* the caller ends it, then says so with armed_done */
		state = ARMED_IDLE;
		atomic_store_explicit(&st->window_end, 0, memory_order_relaxed);
	}
	if (state == ARMED_IDLE && req > atomic_load_explicit(&st->taken_seq, memory_order_relaxed)) {
		atomic_store_explicit(&st->window_end, 0, memory_order_relaxed);   /* a trigger's, not a window */
		atomic_store_explicit(&st->taken_seq, req, memory_order_relaxed);
		*seq = req;
		*first = st->req_first;
		*count = st->req_count;
		state = ARMED_WAITING;
	}
	if (state == ARMED_WAITING && now > *first) {   /* its first step began before we saw it */
		armed_done(st, *seq, ARMED_MISSED, 0, 0, "");
		state = ARMED_IDLE;
	} else if (state == ARMED_WAITING && now == *first) {
		act |= ARMED_BEGIN;
		state = ARMED_RECORDING;
	}
	atomic_store_explicit(&st->state, state, memory_order_relaxed);
	return act;
}

int armed_periodic(struct armed_status *st, uint64_t every, uint64_t window, uint64_t *seq,
		   uint64_t *first, uint64_t *count)
{
	uint64_t now = atomic_load_explicit(&st->steps, memory_order_relaxed);   /* the step beginning */

	if (!every || !window || now == 0 || now % every ||
	    atomic_load_explicit(&st->state, memory_order_relaxed) != ARMED_IDLE ||
	    atomic_load_explicit(&st->req_seq, memory_order_acquire) >
		    atomic_load_explicit(&st->taken_seq, memory_order_relaxed))
		return ARMED_NOTHING;
	*seq = ARMED_PERIODIC | now;
	*first = now;
	*count = window;
	atomic_store_explicit(&st->window_end, now + window, memory_order_relaxed);
	atomic_store_explicit(&st->state, ARMED_RECORDING, memory_order_relaxed);
	return ARMED_BEGIN;
}

int armed_parse_every(const char *s, uint64_t *every, uint64_t *window)
{
	unsigned long long k, n;
	int used = 0;

	if (!s || strspn(s, "0123456789:") != strlen(s) || strlen(s) > 21 ||
	    sscanf(s, "%llu:%llu%n", &k, &n, &used) != 2 || s[used] || !k || !n ||
	    k >= (1ull << 32) || n >= (1ull << 32))
		return -1;
	*every = k;
	*window = n;
	return 0;
}

void armed_done(struct armed_status *st, uint64_t seq, int result, uint64_t first, uint64_t count,
		const char *bundle)
{
	st->done_first = first;
	st->done_count = count;
	st->done_result = result;
	snprintf(st->bundle, sizeof(st->bundle), "%s", bundle ? bundle : "");
	atomic_store_explicit(&st->done_seq, seq, memory_order_release);
}

/* ---- the trigger ---------------------------------------------------------------- */

static bool alive(pid_t pid)
{
	return pid > 0 && (kill(pid, 0) == 0 || errno == EPERM);
}

static bool all_digits(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s);
}

int armed_find_run(struct armed_run *run, const char *id)
{
	struct stat sb;

	memset(run, 0, sizeof(*run));
	if (!all_digits(id) || strlen(id) >= sizeof(run->id))
		return 0;
	snprintf(run->id, sizeof(run->id), "%s", id);
	if (armed_run_dir(run->dir, sizeof(run->dir), id))
		return -1;
	return stat(run->dir, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int armed_find_pid(struct armed_run *run, pid_t pid)
{
	char base[4096], id[32], path[8192];
	struct dirent *de;
	DIR *d;
	int found = 0;

	snprintf(id, sizeof(id), "%d", (int)pid);
	if (armed_find_run(run, id) != 0)   /* the launcher's own pid is the run id */
		return run->dir[0] ? 1 : -1;
	if (armed_base(base, sizeof(base)))
		return -1;
	if (!(d = opendir(base)))
		return 0;
	while (!found && (de = readdir(d))) {
		if (!all_digits(de->d_name))
			continue;
		snprintf(path, sizeof(path), "%s/%s/%d.armed", base, de->d_name, (int)pid);
		if (access(path, F_OK) == 0)
			found = armed_find_run(run, de->d_name);
	}
	closedir(d);
	return found;
}

static int cmp_proc(const void *a, const void *b)
{
	const struct armed_status *x = ((const struct armed_proc *)a)->st, *y = ((const struct armed_proc *)b)->st;

	if (x->rank != y->rank)
		return x->rank < y->rank ? -1 : 1;
	return (x->pid > y->pid) - (x->pid < y->pid);
}

/* Maps one status file; NULL when it is not one (yet) or cannot be read. */
static struct armed_status *load_status(const char *path)
{
	struct armed_status *st = NULL;
	struct stat sb;
	int fd = open(path, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &sb) == 0 && (size_t)sb.st_size >= sizeof(*st))
		st = map_status(fd);
	close(fd);
	if (st && (memcmp(st->magic, ARMED_MAGIC, sizeof(ARMED_MAGIC)) || st->version != ARMED_VERSION ||
		   st->size != sizeof(*st))) {
		munmap(st, sizeof(*st));
		st = NULL;
	}
	return st;
}

int armed_run_load(struct armed_run *run)
{
	struct dirent *de;
	size_t cap = 0;
	DIR *d = opendir(run->dir);

	if (!d)
		return error("cannot read '%s': %s", run->dir, strerror(errno));
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		struct armed_proc p;

		if (n < 7 || strcmp(de->d_name + n - 6, ".armed"))
			continue;
		snprintf(p.path, sizeof(p.path), "%.4000s/%.90s", run->dir, de->d_name);
		if (!(p.st = load_status(p.path)))
			continue;
		if (!alive(p.st->pid)) {   /* ended without removing it (killed) */
			munmap(p.st, sizeof(*p.st));
			unlink(p.path);
			continue;
		}
		if (ALLOC_GROW(run->procs, run->n + 1, cap)) {
			munmap(p.st, sizeof(*p.st));
			closedir(d);
			return error("out of memory");
		}
		run->procs[run->n++] = p;
	}
	closedir(d);
	if (run->n > 1)
		qsort(run->procs, run->n, sizeof(*run->procs), cmp_proc);
	return 0;
}

void armed_run_release(struct armed_run *run)
{
	for (size_t i = 0; i < run->n; i++)
		munmap(run->procs[i].st, sizeof(*run->procs[i].st));
	free(run->procs);
	run->procs = NULL;
	run->n = 0;
}

size_t armed_run_missing(const struct armed_run *run, uint32_t *world, char *buf, size_t len)
{
	size_t missing = 0, used = 0;
	uint32_t w = 1;

	if (len)
		buf[0] = '\0';
	for (size_t i = 0; i < run->n; i++)
		if (run->procs[i].st->rank >= 0 && run->procs[i].st->world_size > w)
			w = run->procs[i].st->world_size;
	*world = w;
	for (uint32_t r = 0; w > 1 && r < w; r++) {
		bool have = false;

		for (size_t i = 0; i < run->n && !have; i++)
			have = run->procs[i].st->rank == (int32_t)r;
		if (have)
			continue;
		if (used < len) {
			int n = snprintf(buf + used, len - used, "%s%u", missing ? ", " : "", r);

			used += n > 0 ? (size_t)n : 0;
		}
		missing++;
	}
	return missing;
}

/* The run's trigger counter, RUN/triggers, advanced by one (the lock held); 0 on error. */
static uint64_t next_trigger(const char *dir)
{
	char path[4200], buf[32] = "";
	unsigned long long n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/triggers", dir);
	if ((f = fopen(path, "r"))) {
		if (fgets(buf, sizeof(buf), f))
			n = strtoull(buf, NULL, 10);
		fclose(f);
	}
	if (!(f = fopen(path, "w")))
		return 0;
	fprintf(f, "%llu\n", n + 1);
	return fclose(f) ? 0 : n + 1;
}

int armed_request(struct armed_run *run, uint64_t count, uint64_t *seq, uint64_t *first)
{
	char lock[4200];
	uint64_t most = 0, after = 0, s;
	int fd, rc = 0;

	*seq = *first = 0;
	if (!run->n)
		return error("armed run %s has no process recording", run->id);
	for (size_t i = 0; i < run->n; i++) {
		const struct armed_status *st = run->procs[i].st;
		uint64_t taken = atomic_load(&st->taken_seq), req = atomic_load(&st->req_seq);
		uint64_t window_end = atomic_load(&st->window_end);
		uint32_t state = atomic_load(&st->state);

		if (state == ARMED_RECORDING && window_end && req <= taken) {   /* an --every window */
			after = window_end > after ? window_end : after;
			continue;
		}
		if (state != ARMED_IDLE || req > taken) {
			*seq = req;
			return error("trigger %llu of run %s is still under way (steps %llu to %llu)",
				     (unsigned long long)req, run->id, (unsigned long long)st->req_first,
				     (unsigned long long)(st->req_first + st->req_count - 1));
		}
	}
	snprintf(lock, sizeof(lock), "%s/lock", run->dir);
	fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (fd < 0 || flock(fd, LOCK_EX))
		rc = error("cannot lock '%s': %s", lock, strerror(errno));
	if (!rc && !(s = next_trigger(run->dir)))
		rc = error("cannot count the triggers of run %s in '%s'", run->id, run->dir);
	if (!rc) {
		for (size_t i = 0; i < run->n; i++) {
			uint64_t n = atomic_load(&run->procs[i].st->steps);

			most = n > most ? n : most;
		}
		*seq = s;
		*first = most + ARMED_MARGIN > after ? most + ARMED_MARGIN : after;
		for (size_t i = 0; i < run->n; i++) {
			struct armed_status *st = run->procs[i].st;

			st->req_first = *first;
			st->req_count = count;
			atomic_store_explicit(&st->req_seq, s, memory_order_release);
		}
	}
	if (fd >= 0)
		close(fd);   /* unlocks */
	return rc;
}

bool armed_all_done(const struct armed_run *run, uint64_t seq)
{
	for (size_t i = 0; i < run->n; i++) {
		const struct armed_status *st = run->procs[i].st;

		if (atomic_load_explicit(&st->done_seq, memory_order_acquire) < seq && alive(st->pid))
			return false;
	}
	return true;
}
