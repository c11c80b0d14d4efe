/*
 * error.h: one-line messages in git's style: "error: cannot open bundle
 * 'x.stb': truncated zstd frame". Lowercase, no full stop, problem first.
 * st_error() returns -1 so library code can `return st_error(...)`.
 */
#ifndef STEPTRACE_CLI_ERROR_H
#define STEPTRACE_CLI_ERROR_H

int st_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void st_warning(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Tests silence or capture messages; NULL restores stderr. */
#include <stdio.h>
void st_error_set_stream(FILE *f);

#endif
