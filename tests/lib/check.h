/*
 * check.h: the one test harness every test program uses. A failed CHECK
 * prints where and why and counts; the test goes on, so one run shows every
 * broken expectation; main returns check_done(name).
 *
 *   CHECK(n == 3);
 *   CHECK(err < 1e-6, "max error %g at %zu", err, at);
 *   CHECK_STR(got, "want\n");
 *   CHECK_U64(tl.n_points, 17);         // prints both numbers
 *   CHECK_NEAR(got, want, 1e-9);       // relative to max(1, |want|); NaN wants NaN
 *   return check_done("test_bundle");
 *
 * Also captures what a call writes to stdout or stderr (capture_begin/end).
 */
#ifndef STEPTRACE_TESTS_LIB_CHECK_H
#define STEPTRACE_TESTS_LIB_CHECK_H

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int check_failures;

static __attribute__((unused, format(printf, 4, 5))) void
check_fail(const char *file, int line, const char *what, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "%s:%d: check failed: %s", file, line, what);
	if (fmt[0] && fmt[1]) {   /* fmt is " " followed by the caller's format */
		fputs(": ", stderr);
		va_start(ap, fmt);
		vfprintf(stderr, fmt + 1, ap);
		va_end(ap);
	}
	fputc('\n', stderr);
	fflush(stderr);
	check_failures++;
}

/* CHECK(cond) or CHECK(cond, "fmt", args...): the message says what was seen. */
#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond))                                                    \
			check_fail(__FILE__, __LINE__, #cond, " " __VA_ARGS__); \
	} while (0)

#define CHECK_STR(got, want)                                                              \
	do {                                                                              \
		const char *g_ = (got), *w_ = (want);                                     \
		if (!g_ || strcmp(g_, w_) != 0)                                           \
			check_fail(__FILE__, __LINE__, #got,                              \
				   " \n--- want\n%s\n--- got\n%s\n---", w_, g_ ? g_ : "(null)"); \
	} while (0)

/* got == want, compared and printed as uint64_t */
#define CHECK_U64(got, want)                                                              \
	do {                                                                              \
		uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want);                     \
		if (g_ != w_)                                                             \
			check_fail(__FILE__, __LINE__, #got " == " #want,                 \
				   " got %" PRIu64 ", want %" PRIu64, g_, w_);            \
	} while (0)

/* |got - want| <= tol * max(1, |want|); a NaN want asks for NaN */
#define CHECK_NEAR(got, want, tol)                                                        \
	do {                                                                              \
		double g_ = (double)(got), w_ = (double)(want);                           \
		if (isnan(w_) ? !isnan(g_) : !(fabs(g_ - w_) <= (tol) * fmax(1.0, fabs(w_)))) \
			check_fail(__FILE__, __LINE__, #got " ~ " #want,                  \
				   " got %.17g, want %.17g (tolerance %g)", g_, w_, (double)(tol)); \
	} while (0)

/* The exit status of a test program: 0 when every check held. */
static __attribute__((unused)) int check_done(const char *name)
{
	if (check_failures)
		fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
	else
		printf("%s: ok\n", name);
	return check_failures ? 1 : 0;
}

/* A whole file (one byte more, allocated), its length in *len; NULL when it cannot be read. */
static __attribute__((unused)) void *check_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long n;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	return buf;
}

/* Redirects `stream` (stdout or stderr) into a temporary file. */
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

/* Restores the stream; returns what was written (caller frees). */
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
