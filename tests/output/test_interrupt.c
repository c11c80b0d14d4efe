/*
 * test_interrupt.c: a slow, large write ended by SIGINT, SIGTERM or SIGHUP
 * mid-way leaves no "NAME.tmp-XXXXXX" behind and the target as it was,
 * and the process dies of the signal (lib/output.h's handler removes the
 * temporary, then lets the signal act). Each writer (export in its three
 * formats, report) gets each signal, onto a file that exists and onto one
 * that does not. The child is started with every signal at its default:
 * a shell's background job would ignore SIGINT.
 *
 * usage: test_interrupt STEPTRACE BUNDLE DIR (DIR an empty scratch folder;
 * BUNDLE large enough that writing it takes a while: st-hostile mixed)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "../lib/check.h"

static const char *steptrace, *bundle, *dir;

/* The size of the temporary being written in dir (its name in tmp), -1 when there is none. */
static long long temporary(char *tmp, size_t len)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	long long size = -1;
	struct stat st;

	while (d && (e = readdir(d)))
		if (strstr(e->d_name, ".tmp-")) {
			snprintf(tmp, len, "%s/%s", dir, e->d_name);
			size = stat(tmp, &st) == 0 ? (long long)st.st_size : 0;
		}
	if (d)
		closedir(d);
	return size;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* One writer, one signal: sent once the temporary holds some bytes. */
static void interrupt(const char *const *args, const char *what, int sig, bool exists)
{
	char target[1024], tmp[1200], argv_out[1024];
	const char *argv[16];
	int n = 0, status;
	bool reaped = false;
	double t0;
	pid_t pid;

	snprintf(target, sizeof(target), "%s/out", dir);
	unlink(target);
	if (exists) {
		FILE *f = fopen(target, "w");
		if (!f || fputs("precious\n", f) < 0 || fclose(f) != 0)
			exit(2);
	}
	snprintf(argv_out, sizeof(argv_out), "%s", target);
	argv[n++] = steptrace;
	for (; *args; args++)
		argv[n++] = strcmp(*args, "OUT") ? *args : argv_out;
	argv[n++] = bundle;
	argv[n] = NULL;
	pid = fork();
	if (pid < 0)
		exit(2);
	if (pid == 0) {
		sigset_t none;
		int null = open("/dev/null", O_WRONLY);

		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		signal(SIGHUP, SIG_DFL);
		dup2(null, STDOUT_FILENO);
		dup2(null, STDERR_FILENO);
		execv(steptrace, (char *const *)argv);
		_exit(127);
	}
	t0 = now();
	while (temporary(tmp, sizeof(tmp)) <= 0 && !(reaped = waitpid(pid, &status, WNOHANG) == pid) &&
	       now() - t0 < 60)
		usleep(200);
	if (!reaped) {
		kill(pid, sig);
		if (waitpid(pid, &status, 0) != pid)
			exit(2);
	}
	CHECK(WIFSIGNALED(status) && WTERMSIG(status) == sig,
	      "%s, signal %d: %s %d (it must be writing when the signal comes: a larger bundle?)", what, sig,
	      WIFSIGNALED(status) ? "killed by signal" : "exit status",
	      WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	CHECK(temporary(tmp, sizeof(tmp)) < 0, "%s, signal %d: left %s", what, sig, tmp);
	if (exists) {
		FILE *f = fopen(target, "r");
		char line[64] = "";

		CHECK(f && fgets(line, sizeof(line), f) && !strcmp(line, "precious\n"),
		      "%s, signal %d: the target changed", what, sig);
		if (f)
			fclose(f);
	} else {
		CHECK(access(target, F_OK) != 0, "%s, signal %d: a target was made", what, sig);
	}
	unlink(target);
}

int main(int argc, char **argv)
{
	/* the bundle claims more than a few kilobytes get by default: --memory-limit */
	static const char *const writers[][10] = {
		{ "export", "--format", "sqlite", "--memory-limit", "2GiB", "-o", "OUT", NULL },
		{ "export", "--format", "perfetto", "--memory-limit", "2GiB", "-o", "OUT", NULL },
		{ "export", "--format", "chrome", "--memory-limit", "2GiB", "-o", "OUT", NULL },
		{ "report", "--memory-limit", "2GiB", "-o", "OUT", NULL },
	};
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP };

	if (argc != 4) {
		fprintf(stderr, "usage: test_interrupt STEPTRACE BUNDLE DIR\n");
		return 2;
	}
	steptrace = argv[1];
	bundle = argv[2];
	dir = argv[3];
	for (size_t w = 0; w < sizeof(writers) / sizeof(writers[0]); w++) {
		char what[64];

		snprintf(what, sizeof(what), "%s %s", writers[w][0], w < 3 ? writers[w][2] : "");
		for (size_t s = 0; s < sizeof(sigs) / sizeof(sigs[0]); s++)
			for (int exists = 0; exists < 2; exists++)
				interrupt(writers[w], what, sigs[s], exists);
	}
	return check_done("test_interrupt");
}
