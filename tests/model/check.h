/*
 * check.h: the few assertions the model tests share. A failed CHECK prints
 * where and why and counts; main returns check_exit().
 */
#ifndef STEPTRACE_TESTS_MODEL_CHECK_H
#define STEPTRACE_TESTS_MODEL_CHECK_H

#include <stdio.h>

static int check_failures;

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "%s:%d: check failed: %s: ", __FILE__,  \
				__LINE__, #cond);                               \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			check_failures++;                                       \
		}                                                               \
	} while (0)

static inline int check_exit(const char *name)
{
	if (check_failures)
		fprintf(stderr, "%s: %d check(s) failed\n", name, check_failures);
	else
		printf("%s: ok\n", name);
	return check_failures ? 1 : 0;
}

#endif
