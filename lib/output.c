/* output.c: see output.h. */
#define _GNU_SOURCE
#include "lib/output.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/error.h"
#include "lib/human.h"

/* Links followed before giving up, as the kernel's own limit. */
#define MAX_LINK_HOPS 40

/*
 * The descriptor a path names without being a file of its own: "-" and
 * /dev/stdout are standard output, /dev/fd/N and /proc/self/fd/N are N.
 * Written through a duplicate, so a shell's `>>` keeps appending. -1 for
 * any other path.
 */
static int named_fd(const char *path)
{
	static const char *const prefixes[] = { "/dev/fd/", "/proc/self/fd/" };
	char *end;
	long n;

	if (!strcmp(path, "-") || !strcmp(path, "/dev/stdout"))
		return STDOUT_FILENO;
	if (!strcmp(path, "/dev/stderr"))
		return STDERR_FILENO;
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t len = strlen(prefixes[i]);

		if (strncmp(path, prefixes[i], len) || !path[len])
			continue;
		errno = 0;
		n = strtol(path + len, &end, 10);
		if (!errno && !*end && n >= 0 && n <= INT_MAX)
			return (int)n;
	}
	return -1;
}

int output_check_inputs(const char *path, const char *const *inputs)
{
	int fd = named_fd(path);
	struct stat out, in;

	if (!inputs || (fd >= 0 ? fstat(fd, &out) : stat(path, &out)) != 0 || !S_ISREG(out.st_mode))
		return 0;
	for (; *inputs; inputs++)
		if (stat(*inputs, &in) == 0 && in.st_dev == out.st_dev && in.st_ino == out.st_ino)
			return error("output '%s' is the same file as input '%s': refusing to overwrite it",
				     path, *inputs);
	return 0;
}

/* The file `path` names once symbolic links are followed (it may not exist); malloc'd. */
static char *follow_links(const char *path)
{
	char *cur = strdup(path);

	for (int hops = 0; cur; hops++) {
		char link[PATH_MAX], *next;
		struct stat st;
		ssize_t n;

		if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode))
			return cur;
		n = hops < MAX_LINK_HOPS ? readlink(cur, link, sizeof(link) - 1) : -1;
		if (n < 0) {
			int e = hops < MAX_LINK_HOPS ? errno : ELOOP;

			free(cur);
			errno = e;
			return NULL;
		}
		link[n] = '\0';
		if (link[0] == '/') {
			next = strdup(link);
		} else {
			/* relative to the link's own directory */
			const char *slash = strrchr(cur, '/');
			size_t dir = slash ? (size_t)(slash - cur) + 1 : 0;

			next = malloc(dir + (size_t)n + 1);
			if (next) {
				memcpy(next, cur, dir);
				memcpy(next + dir, link, (size_t)n + 1);
			}
		}
		free(cur);
		cur = next;
	}
	errno = ENOMEM;
	return NULL;
}

/* ---- signals ---------------------------------------------------------------- */

/*
 * The temporary files being written, removed when SIGINT, SIGTERM or SIGHUP
 * ends the process (a process killed outright, SIGKILL, still leaves its
 * temporary, never a half-written target). Copies in static slots, so the
 * handler reads no memory the program frees; a slot's path is whole before
 * its flag is set, and the flag is cleared before the slot is reused. The
 * main thread changes them with those signals blocked.
 */
#define MAX_TEMPS 8
static char temp_path[MAX_TEMPS][PATH_MAX];
static volatile sig_atomic_t temp_used[MAX_TEMPS];
static const int cleanup_signals[] = { SIGINT, SIGTERM, SIGHUP };
#define N_CLEANUP_SIGNALS (sizeof(cleanup_signals) / sizeof(cleanup_signals[0]))

/* Async-signal-safe: unlink, then the signal again, now with its default action. */
static void on_signal(int sig)
{
	int e = errno;

	for (int i = 0; i < MAX_TEMPS; i++)
		if (temp_used[i])
			unlink(temp_path[i]);
	errno = e;
	raise(sig);   /* SA_RESETHAND made it SIG_DFL; delivered as the handler returns */
}

/*
 * The handler, once, for each of the signals whose action is still the
 * default: one ignored (nohup) or handled by the program itself (record's
 * graceful stop) keeps its own.
 */
static void install_handler(void)
{
	static bool installed;
	struct sigaction sa, old;

	if (installed)
		return;
	installed = true;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < N_CLEANUP_SIGNALS; i++)
		sigaddset(&sa.sa_mask, cleanup_signals[i]);
	sa.sa_flags = SA_RESETHAND;
	for (size_t i = 0; i < N_CLEANUP_SIGNALS; i++)
		if (sigaction(cleanup_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_DFL &&
		    !(old.sa_flags & SA_SIGINFO))
			sigaction(cleanup_signals[i], &sa, NULL);
}

/* Blocks the cleanup signals (their old mask in *saved), around a change to a slot and its file. */
static void signals_hold(sigset_t *saved)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < N_CLEANUP_SIGNALS; i++)
		sigaddset(&set, cleanup_signals[i]);
	pthread_sigmask(SIG_BLOCK, &set, saved);
}

static void signals_release(const sigset_t *saved)
{
	pthread_sigmask(SIG_SETMASK, saved, NULL);
}

/* Signals held: a slot for path; its index, or -1 when none is free (or the path too long). */
static int temp_remember(const char *path)
{
	size_t len = strlen(path);

	for (int i = 0; i < MAX_TEMPS && len < PATH_MAX; i++)
		if (!temp_used[i]) {
			memcpy(temp_path[i], path, len + 1);
			__atomic_thread_fence(__ATOMIC_SEQ_CST);
			temp_used[i] = 1;
			return i;
		}
	return -1;
}

static void temp_forget(int slot)
{
	if (slot >= 0)
		temp_used[slot] = 0;
}

/* ---- the file --------------------------------------------------------------- */

/*
 * Creates "TARGET.tmp-XXXXXX" exclusively (mode 0666 less the umask), in a
 * slot of its own (*slot); its fd, or -1 with errno.
 */
static int create_temp(const char *target, char **tmp_out, int *slot)
{
	static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	static uint64_t counter;
	size_t len = strlen(target) + sizeof(".tmp-XXXXXX");
	char *tmp = malloc(len);
	sigset_t saved;
	int fd = -1, e;

	if (!tmp) {
		errno = ENOMEM;
		return -1;
	}
	install_handler();
	for (int tries = 0; tries < 100; tries++) {
		struct timespec ts;
		uint64_t x;
		char suffix[7];

		clock_gettime(CLOCK_REALTIME, &ts);
		/* splitmix64 of time, pid and a counter: O_EXCL settles any clash */
		x = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 30) ^ ((uint64_t)getpid() << 16) ^
		    (++counter * 0x9E3779B97F4A7C15ull);
		x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
		x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
		x ^= x >> 31;
		for (int i = 0; i < 6; i++, x /= sizeof(alphabet) - 1)
			suffix[i] = alphabet[x % (sizeof(alphabet) - 1)];
		suffix[6] = '\0';
		snprintf(tmp, len, "%s.tmp-%s", target, suffix);
		signals_hold(&saved);
		fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
		e = errno;
		if (fd >= 0)
			*slot = temp_remember(tmp);   /* a signal from here on removes it */
		signals_release(&saved);
		errno = e;
		if (fd >= 0 || errno != EEXIST)
			break;
	}
	if (fd < 0) {
		e = errno;
		free(tmp);
		errno = e;
		return -1;
	}
	*tmp_out = tmp;
	return fd;
}

/* Removes the temporary file and frees its slot, the signals held meanwhile. */
static void temp_remove(struct output *o)
{
	sigset_t saved;

	if (!o->tmp)
		return;
	signals_hold(&saved);
	unlink(o->tmp);
	temp_forget(o->slot);
	o->slot = -1;
	signals_release(&saved);
}

static void output_release(struct output *o)
{
	free(o->target);
	free(o->tmp);
	o->target = o->tmp = NULL;
	o->f = NULL;
}

/* "'x.svg'", or "to standard output" for "-": what a message says cannot be written. */
static const char *subject(const struct output *o, char *buf, size_t len)
{
	if (!strcmp(o->path, "-"))
		return "to standard output";
	snprintf(buf, len, "'%s'", o->path);
	return buf;
}

static int write_error(const struct output *o, int e)
{
	char buf[PATH_MAX + 3];

	return error("cannot write %s: %s", subject(o, buf, sizeof(buf)), strerror(e));
}

/*
 * The stream's writes, so the first failure keeps its errno (stdio's own
 * error flag forgets why): ENOSPC for /dev/full or a full disk, not EIO.
 */
static ssize_t sink_write(void *cookie, const char *buf, size_t n)
{
	struct output *o = cookie;
	size_t done = 0;

	while (done < n) {
		ssize_t w = write(o->fd, buf + done, n - done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!o->err)
				o->err = w < 0 ? errno : EIO;
			return done ? (ssize_t)done : -1;
		}
		done += (size_t)w;
	}
	return (ssize_t)n;
}

static int sink_close(void *cookie)
{
	struct output *o = cookie;
	int rc = close(o->fd);

	o->fd = -1;
	return rc;
}

/* Takes fd over as o->f; -1 with errno (fd closed) when out of memory. */
static int open_stream(struct output *o, int fd)
{
	static const cookie_io_functions_t sink = { .write = sink_write, .close = sink_close };

	o->fd = fd;
	o->err = 0;
	o->f = fopencookie(o, "w", sink);
	if (!o->f) {
		close(fd);
		o->fd = -1;
		errno = ENOMEM;
		return -1;
	}
	return 0;
}

/* Writes in place (a pipe, a device, a descriptor): nothing is ever replaced or removed. */
static int open_in_place(struct output *o, int fd)
{
	if (fd == STDOUT_FILENO)
		fflush(stdout);   /* what the command printed comes first */
	fd = fd >= 0 ? fcntl(fd, F_DUPFD_CLOEXEC, 3) : open(o->path, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || open_stream(o, fd) < 0)
		return write_error(o, errno);
	return 0;
}

/*
 * Whether the user may write the file st describes (at target), as `>`
 * would ask, by its mode as well: the write bit of the class the process
 * is in (owner, group, others). Root, whom `>` never refuses, is held to
 * the mode too: a file made read-only, or another user's private one, is
 * not replaced behind its owner's back.
 */
static bool may_write(const char *target, const struct stat *st)
{
	mode_t bit = S_IWOTH;
	gid_t groups[256];
	int n;

	if (st->st_uid == geteuid()) {
		bit = S_IWUSR;
	} else if (st->st_gid == getegid()) {
		bit = S_IWGRP;
	} else {
		n = getgroups(sizeof(groups) / sizeof(groups[0]), groups);
		for (int i = 0; i < n; i++)
			if (groups[i] == st->st_gid)
				bit = S_IWGRP;
	}
	return (st->st_mode & bit) && faccessat(AT_FDCWD, target, W_OK, AT_EACCESS) == 0;
}

int output_open(struct output *o, const char *path, const char *const *inputs)
{
	struct stat st;
	bool exists;
	int fd;

	memset(o, 0, sizeof(*o));
	o->path = path;
	o->fd = -1;
	o->slot = -1;
	if (!path || !*path)
		return error("no output file given");
	if (output_check_inputs(path, inputs) < 0)
		return -1;
	fd = named_fd(path);
	if (fd >= 0)
		return open_in_place(o, fd);
	o->target = follow_links(path);
	if (!o->target)
		return write_error(o, errno);
	exists = stat(o->target, &st) == 0;
	if (exists && S_ISDIR(st.st_mode)) {
		output_release(o);
		return write_error(o, EISDIR);
	}
	if (exists && !S_ISREG(st.st_mode)) {
		output_release(o);
		return open_in_place(o, -1);
	}
	if (exists && !may_write(o->target, &st)) {
		char owner[48] = "yours";

		if (st.st_uid != geteuid())
			snprintf(owner, sizeof(owner), "owned by uid %u", (unsigned)st.st_uid);
		output_release(o);
		return error("cannot write '%s': Permission denied (mode %04o, %s): steptrace replaces only "
			     "a file you may write; choose another output or change its mode",
			     path, (unsigned)(st.st_mode & 07777), owner);
	}
	fd = create_temp(o->target, &o->tmp, &o->slot);
	if (fd < 0) {
		int e = errno;

		output_release(o);
		return write_error(o, e);
	}
	/* a file replaced keeps its permissions */
	if (exists)
		fchmod(fd, st.st_mode & 07777);
	o->linked = exists && st.st_nlink > 1;
	if (open_stream(o, fd) < 0) {
		int e = errno;

		temp_remove(o);
		output_release(o);
		return write_error(o, e);
	}
	return 0;
}

/*
 * The whole temporary file copied into the target in place (a target with
 * other hard links keeps its inode, so every name sees the new content).
 * 0, or an errno.
 */
static int copy_into(const char *tmp, const char *target)
{
	char buf[65536];
	int in = open(tmp, O_RDONLY | O_CLOEXEC), out = in >= 0 ? open(target, O_WRONLY | O_TRUNC | O_CLOEXEC) : -1;
	int e = in < 0 || out < 0 ? errno : 0;
	ssize_t n;

	while (!e && (n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			e = errno;
			break;
		}
		for (ssize_t done = 0, w; done < n && !e; done += w > 0 ? w : 0) {
			w = write(out, buf + done, (size_t)(n - done));
			if (w < 0 && errno != EINTR)
				e = errno;
		}
	}
	if (!e && out >= 0 && fsync(out) != 0)
		e = errno;
	if (out >= 0 && close(out) != 0 && !e)
		e = errno;
	if (in >= 0)
		close(in);
	return e;
}

/* Makes the rename itself durable; a failure here loses nothing already written. */
static void sync_directory(const char *target)
{
	const char *slash = strrchr(target, '/');
	char *dir = slash ? strndup(target, slash == target ? 1 : (size_t)(slash - target)) : strdup(".");
	int fd = dir ? open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
	free(dir);
}

int output_close(struct output *o)
{
	int e = 0;

	if (!o->f)
		return -1;
	errno = 0;
	if (fflush(o->f) != 0 || ferror(o->f))
		e = o->err ? o->err : errno ? errno : EIO;
	else if (o->tmp && fsync(o->fd) != 0)
		e = errno;
	if (fclose(o->f) != 0 && !e)
		e = errno ? errno : EIO;
	o->f = NULL;
	if (!e && o->tmp) {
		sigset_t saved;

		/* renamed and forgotten at once: a signal then must not remove what now has the target's name */
		signals_hold(&saved);
		if (o->linked) {
			/* copied whole before a signal may end the process; the temporary file then goes */
			e = copy_into(o->tmp, o->target);
			if (!e) {
				unlink(o->tmp);
				temp_forget(o->slot);
				o->slot = -1;
			}
		} else if (rename(o->tmp, o->target) != 0) {
			e = errno;
		} else {
			temp_forget(o->slot);
			o->slot = -1;
		}
		signals_release(&saved);
	}
	if (e) {
		temp_remove(o);
		output_release(o);
		return write_error(o, e);
	}
	if (o->tmp)
		sync_directory(o->target);
	output_release(o);
	return 0;
}

void output_discard(struct output *o)
{
	if (o->f)
		fclose(o->f);
	temp_remove(o);
	output_release(o);
}

unsigned long long output_bytes(struct output *o)
{
	struct stat st;

	if (!o->f || !o->tmp || fflush(o->f) != 0 || fstat(o->fd, &st) != 0)
		return 0;
	return (unsigned long long)st.st_size;
}

const char *output_writing(const struct output *o)
{
	return o->tmp ? o->tmp : o->path;
}

/* ---- sizes before writing ------------------------------------------------- */

static ssize_t count_write(void *cookie, const char *buf, size_t n)
{
	(void)buf;
	*(uint64_t *)cookie += n;
	return (ssize_t)n;
}

int output_counter_open(struct output_counter *c)
{
	static const cookie_io_functions_t io = { .write = count_write };

	c->n = 0;
	c->f = fopencookie(&c->n, "w", io);
	return c->f ? 0 : error("out of memory");
}

uint64_t output_counter_bytes(struct output_counter *c)
{
	fflush(c->f);
	return c->n;
}

void output_counter_close(struct output_counter *c)
{
	if (c->f)
		fclose(c->f);
	c->f = NULL;
}

int output_check_size(const char *path, uint64_t estimate, uint64_t max, const char *what, const char *hint)
{
	char size[32], limit[32];

	if (!max || estimate <= max)
		return 0;
	return error("'%s' would be about %s of %s, more than --max-size %s: %s%sraise --max-size (0: no limit)",
		     path, human_bytes(size, sizeof(size), (double)estimate), what,
		     human_bytes(limit, sizeof(limit), (double)max), hint ? hint : "", hint ? ", or " : "");
}

int output_write_sized(struct output *o, uint64_t max, const char *what, const char *hint,
		       int (*write)(void *ctx, FILE *f), void *ctx, uint64_t *bytes)
{
	struct output_counter c;
	uint64_t n;
	int rc;

	if (output_counter_open(&c) < 0) {
		output_discard(o);
		return -1;
	}
	rc = write(ctx, c.f);
	n = output_counter_bytes(&c);
	output_counter_close(&c);
	if (rc < 0 || output_check_size(o->path, n, max, what, hint) < 0 || write(ctx, o->f) < 0) {
		output_discard(o);
		return -1;
	}
	if (bytes)
		*bytes = n;
	return output_close(o);
}

int output_check_default(const char *path, const char *what,
			 bool (*ours)(const char *path, const char *head, void *ctx), void *ctx, bool *replaced)
{
	char head[4097];
	struct stat st;
	size_t n = 0;
	FILE *f;

	if (replaced)
		*replaced = false;
	if (stat(path, &st) != 0)
		return errno == ENOENT ? 0 : error("cannot write '%s': %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return 0;   /* a pipe, a device: output_open writes in place, a folder it refuses */
	f = fopen(path, "rb");
	if (f) {
		n = fread(head, 1, sizeof(head) - 1, f);
		fclose(f);
	}
	head[n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!head[i])
			head[i] = ' ';
	if (!f || !ours(path, head, ctx))
		return error("'%s' exists and is not %s steptrace wrote: give -o to write elsewhere "
			     "(-o '%s' replaces it)", path, what, path);
	if (replaced)
		*replaced = true;
	return 0;
}
