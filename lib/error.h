/*
 * error.h: one-line messages in git's style: "error: cannot open bundle
 * 'x.stb': truncated zstd frame". Lowercase, no full stop, problem first,
 * the subject quoted. error() returns -1 so library code can
 * `return error(...)`; only the command layer decides the exit status.
 *
 * The functions are named error() and warning() in C; their symbols are
 * st_error and st_warning (asm labels), so the shared libraries never
 * interpose glibc's error(3) for other code in the process.
 */
#ifndef STEPTRACE_LIB_ERROR_H
#define STEPTRACE_LIB_ERROR_H

#include <stdio.h>

/* Exit statuses every command uses: 0 ok, 1 failure, 129 bad usage (git's). */
#define EXIT_USAGE 129

int error(const char *fmt, ...) __asm__("st_error") __attribute__((format(printf, 1, 2)));
void warning(const char *fmt, ...) __asm__("st_warning") __attribute__((format(printf, 1, 2)));

/*
 * Every later message names its source after the level: with "rank 1",
 * "error: rank 1: out of memory ...". The ranks of a multi-GPU run set it so
 * that a failure says which rank failed. NULL (or "") for none; copied.
 */
void error_set_prefix(const char *prefix);

/* Tests silence or capture messages; NULL restores stderr. */
void error_set_stream(FILE *f);

#endif
