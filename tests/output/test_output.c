/*
 * test_output.c: lib/output.h, case by case: a regular file replaced only
 * on success (mode kept, no temporary left), a missing file, a failed write
 * (target untouched), a pipe, /dev/null, /dev/full (an error, the device
 * still there), a read-only directory, the same file as an input (directly,
 * through a symlink, through a hard link), "-", /dev/stdout appending, a
 * symlink target (the link stays a link) and a dangling one, a directory.
 *
 * usage: test_output DIR (an empty scratch folder)
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../lib/check.h"
#include "lib/error.h"
#include "lib/output.h"

static const char *dir;

static const char *path_in(const char *name)
{
	static char buf[8][1024];
	static int next;
	char *p = buf[next++ % 8];

	snprintf(p, 1024, "%s/%s", dir, name);
	return p;
}

static void put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
		perror(path);
		exit(2);
	}
}

/* The whole file as a string ("" when absent; caller frees). */
static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *s = calloc(1, 1 << 16);
	size_t n = 0;

	if (!s)
		exit(2);
	if (f) {
		n = fread(s, 1, (1 << 16) - 1, f);
		fclose(f);
	}
	s[n] = '\0';
	return s;
}

/* Names in DIR that hold ".tmp-": what a failed or finished output must not leave. */
static int temporaries(void)
{
	char cmd[1200];
	FILE *p;
	int n = 0, c;

	snprintf(cmd, sizeof(cmd), "ls -a '%s' | grep -c '\\.tmp-'", dir);
	p = popen(cmd, "r");
	if (!p || fscanf(p, "%d", &n) != 1)
		n = -1;
	while (p && (c = fgetc(p)) != EOF)
		;
	if (p)
		pclose(p);
	return n;
}

/* Writes `text` to `path` through the helper; the helper's return value. */
static int write_through(const char *path, const char *text, const char *const *inputs)
{
	struct output o;

	if (output_open(&o, path, inputs) < 0)
		return -1;
	fputs(text, o.f);
	return output_close(&o);
}

/* What error() printed while fn ran, captured. */
static char *messages;
static FILE *msg_file;

static void messages_begin(void)
{
	msg_file = tmpfile();
	error_set_stream(msg_file);
}

static void messages_end(void)
{
	long n;

	error_set_stream(NULL);
	free(messages);
	n = ftell(msg_file);
	messages = calloc(1, (size_t)(n > 0 ? n : 0) + 1);
	rewind(msg_file);
	if (n > 0 && fread(messages, 1, (size_t)n, msg_file) != (size_t)n)
		exit(2);
	fclose(msg_file);
}

static void test_regular(void)
{
	const char *p = path_in("regular.txt");
	struct output o;
	struct stat st;
	char *s;

	put_file(p, "old contents\n");
	chmod(p, 0640);
	CHECK(write_through(p, "new contents\n", NULL) == 0);
	s = slurp(p);
	CHECK_STR(s, "new contents\n");
	free(s);
	CHECK(stat(p, &st) == 0 && (st.st_mode & 0777) == 0640, "mode %o", st.st_mode & 0777);
	CHECK(temporaries() == 0);

	/* while being written, the target still holds the old contents */
	CHECK(output_open(&o, p, NULL) == 0);
	fputs("newer\n", o.f);
	fflush(o.f);
	s = slurp(p);
	CHECK_STR(s, "new contents\n");
	free(s);
	CHECK(temporaries() == 1);
	CHECK(output_close(&o) == 0);
	s = slurp(p);
	CHECK_STR(s, "newer\n");
	free(s);

	/* given up: the target as it was, the temporary gone */
	CHECK(output_open(&o, p, NULL) == 0);
	fputs("half", o.f);
	output_discard(&o);
	s = slurp(p);
	CHECK_STR(s, "newer\n");
	free(s);
	CHECK(temporaries() == 0);
}

static void test_missing(void)
{
	const char *p = path_in("missing.txt");
	char *s;

	CHECK(write_through(p, "created\n", NULL) == 0);
	s = slurp(p);
	CHECK_STR(s, "created\n");
	free(s);
	CHECK(temporaries() == 0);

	messages_begin();
	CHECK(write_through(path_in("no/such/dir/x.txt"), "x", NULL) < 0);
	messages_end();
	CHECK(strstr(messages, "/no/such/dir/x.txt': No such file or directory") &&
	      count_lines(messages) == 1, "%s", messages);
}

static void test_pipe(void)
{
	const char *p = path_in("fifo");
	int fds[2];
	pid_t pid;
	struct stat st;
	char got[64] = "";
	ssize_t n;

	CHECK(mkfifo(p, 0600) == 0, "%s", strerror(errno));
	if (pipe(fds) != 0)
		exit(2);
	pid = fork();
	if (pid == 0) {
		/* the reader: what came through the fifo, back through the pipe */
		int fd = open(p, O_RDONLY);
		char buf[64];
		ssize_t k = fd >= 0 ? read(fd, buf, sizeof(buf)) : -1;

		if (k > 0 && write(fds[1], buf, (size_t)k) != k)
			_exit(1);
		_exit(0);
	}
	close(fds[1]);
	CHECK(write_through(p, "through the pipe\n", NULL) == 0);
	n = read(fds[0], got, sizeof(got) - 1);
	got[n > 0 ? n : 0] = '\0';
	close(fds[0]);
	waitpid(pid, NULL, 0);
	CHECK_STR(got, "through the pipe\n");
	CHECK(lstat(p, &st) == 0 && S_ISFIFO(st.st_mode), "the fifo is still there");
	CHECK(temporaries() == 0);
}

static void test_devices(void)
{
	static char big[1 << 17];
	struct output o;
	struct stat st;

	CHECK(write_through("/dev/null", "nothing\n", NULL) == 0);
	CHECK(stat("/dev/null", &st) == 0 && S_ISCHR(st.st_mode));

	if (stat("/dev/full", &st) != 0)
		return;
	memset(big, 'x', sizeof(big));
	messages_begin();
	CHECK(output_open(&o, "/dev/full", NULL) == 0);
	fwrite(big, 1, sizeof(big), o.f);
	CHECK(output_close(&o) < 0);
	messages_end();
	CHECK_STR(messages, "error: cannot write '/dev/full': No space left on device\n");
	CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode), "/dev/full is still a device");
}

static void test_readonly_dir(void)
{
	const char *d = path_in("readonly"), *p = path_in("readonly/file.txt");
	char *s;

	mkdir(d, 0755);
	put_file(p, "kept\n");
	chmod(d, 0555);
	if (access(d, W_OK) == 0) {
		/* root writes anyway; tests/output/output.sh covers it with a read-only mount */
		chmod(d, 0755);
		return;
	}
	messages_begin();
	CHECK(write_through(p, "lost\n", NULL) < 0);
	messages_end();
	CHECK(strstr(messages, "Permission denied") && count_lines(messages) == 1, "%s", messages);
	s = slurp(p);
	CHECK_STR(s, "kept\n");
	free(s);
	chmod(d, 0755);
}

static void test_same_file(void)
{
	const char *in = path_in("input.stb"), *sym = path_in("input-link.stb"),
		   *hard = path_in("input-hard.stb");
	const char *inputs[] = { path_in("other.stb"), in, NULL };
	char *s;

	put_file(inputs[0], "other\n");
	put_file(in, "the recording\n");
	CHECK(symlink("input.stb", sym) == 0);
	CHECK(link(in, hard) == 0);
	for (int i = 0; i < 3; i++) {
		const char *out = i == 0 ? in : i == 1 ? sym : hard;

		messages_begin();
		CHECK(write_through(out, "report\n", inputs) < 0, "%s", out);
		messages_end();
		CHECK(strstr(messages, "is the same file as input") && count_lines(messages) == 1, "%s", messages);
	}
	s = slurp(in);
	CHECK_STR(s, "the recording\n");
	free(s);
	CHECK(temporaries() == 0);
	/* another file is fine */
	CHECK(write_through(path_in("report.txt"), "report\n", inputs) == 0);
}

static void test_stdout(void)
{
	const char *p = path_in("stdout.txt");
	struct capture c;
	char *s;
	int fd, saved;

	capture_begin(&c, stdout);
	CHECK(write_through("-", "to stdout\n", NULL) == 0);
	s = capture_end(&c);
	CHECK_STR(s, "to stdout\n");
	free(s);

	/* /dev/stdout onto a file opened for appending keeps appending */
	put_file(p, "first\n");
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	fd = open(p, O_WRONLY | O_APPEND);
	dup2(fd, STDOUT_FILENO);
	close(fd);
	CHECK(write_through("/dev/stdout", "second\n", NULL) == 0);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	s = slurp(p);
	CHECK_STR(s, "first\nsecond\n");
	free(s);
}

static void test_symlinks(void)
{
	const char *target = path_in("real.txt"), *link1 = path_in("link.txt"),
		   *sub = path_in("sub"), *link2 = path_in("sub/up.txt"),
		   *dangling = path_in("dangling.txt"), *made = path_in("made-by-link.txt");
	char buf[256];
	ssize_t n;
	char *s;
	struct stat st;

	put_file(target, "before\n");
	CHECK(symlink("real.txt", link1) == 0);
	mkdir(sub, 0755);
	CHECK(symlink("../link.txt", link2) == 0);   /* a chain, relative to the link's folder */
	CHECK(write_through(link2, "after\n", NULL) == 0);
	s = slurp(target);
	CHECK_STR(s, "after\n");
	free(s);
	n = readlink(link1, buf, sizeof(buf) - 1);
	CHECK(n == 8 && !memcmp(buf, "real.txt", 8), "the link still points where it did");
	CHECK(lstat(link2, &st) == 0 && S_ISLNK(st.st_mode), "the second link is still a link");

	CHECK(symlink("made-by-link.txt", dangling) == 0);
	CHECK(write_through(dangling, "new\n", NULL) == 0);
	s = slurp(made);
	CHECK_STR(s, "new\n");
	free(s);
	CHECK(lstat(dangling, &st) == 0 && S_ISLNK(st.st_mode), "a dangling link is written through");
	CHECK(temporaries() == 0);
}

static void test_directory(void)
{
	messages_begin();
	CHECK(write_through(dir, "x", NULL) < 0);
	messages_end();
	CHECK(strstr(messages, "Is a directory") && count_lines(messages) == 1, "%s", messages);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_output DIR\n");
		return 2;
	}
	dir = argv[1];
	signal(SIGPIPE, SIG_IGN);
	test_regular();
	test_missing();
	test_pipe();
	test_devices();
	test_readonly_dir();
	test_same_file();
	test_stdout();
	test_symlinks();
	test_directory();
	free(messages);
	return check_done("test_output");
}
