/*
 * check.h: the CLI tests' tiny harness. CHECK records a failure and goes on,
 * so one run shows every broken expectation; check_done() is the exit status.
 * Also captures what a call writes to stdout or stderr.
 */
#ifndef STEPTRACE_TESTS_CLI_CHECK_H
#define STEPTRACE_TESTS_CLI_CHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_failures;

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
		check_failures++; \
	} \
} while (0)

#define CHECK_STR(got, want) do { \
	const char *g_ = (got), *w_ = (want); \
	if (!g_ || strcmp(g_, w_) != 0) { \
		fprintf(stderr, "%s:%d: check failed: %s\n--- want\n%s\n--- got\n%s\n---\n", \
			__FILE__, __LINE__, #got, w_, g_ ? g_ : "(null)"); \
		check_failures++; \
	} \
} while (0)

static __attribute__((unused)) int check_done(void)
{
	if (check_failures)
		fprintf(stderr, "%d check(s) failed\n", check_failures);
	return check_failures ? 1 : 0;
}

/* Redirects file descriptor `fd` (1 or 2) into a temporary file. */
struct capture {
	FILE *stream;
	int fd, saved;
	FILE *tmp;
};

static __attribute__((unused)) void capture_begin(struct capture *c, FILE *stream)
{
	c->stream = stream;
	c->fd = fileno(stream);
	fflush(stream);
	c->saved = dup(c->fd);
	c->tmp = tmpfile();
	if (c->saved < 0 || !c->tmp || dup2(fileno(c->tmp), c->fd) < 0) {
		perror("capture");
		exit(2);
	}
}

/* Restores the descriptor; returns what was written (caller frees). */
static __attribute__((unused)) char *capture_end(struct capture *c)
{
	long n;
	char *s;

	fflush(c->stream);
	dup2(c->saved, c->fd);
	close(c->saved);
	n = (long)lseek(fileno(c->tmp), 0, SEEK_END);
	s = calloc(1, n > 0 ? (size_t)n + 1 : 1);
	if (!s)
		exit(2);
	rewind(c->tmp);
	if (n > 0 && fread(s, 1, (size_t)n, c->tmp) != (size_t)n)
		exit(2);
	fclose(c->tmp);
	return s;
}

static __attribute__((unused)) int count_lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

#endif
