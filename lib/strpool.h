/*
 * strpool.h: strings to ids 1, 2, 3... in first-seen order: a table of
 * the strings by id and open addressing over the ids. It copies the
 * strings it keeps (`own`) or keeps the caller's pointers, which must then
 * outlive it. Id 0 is never given; str[0] is "" once anything is interned,
 * so that `str` can serve as a table whose id 0 is the empty string.
 *
 * For the importers' string tables (import/kineto.c), the pooled replay of
 * several ranks (replay/ranks.c) and the exports' interned names
 * (export/intern.c).
 */
#ifndef STEPTRACE_LIB_STRPOOL_H
#define STEPTRACE_LIB_STRPOOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct strpool {
	const char **str;     /* str[id], id 1..n (str[0]: "") */
	size_t n, alloc;
	uint32_t *slots;      /* ids; 0 empty */
	size_t n_slots;
	bool own;             /* set before the first call: copy the strings kept */
};

/*
 * The id of s into *id (>= 1; s == NULL is ""), and whether it is new into
 * *fresh (NULL: not asked). 0, or -1 when out of memory or past 2^32 - 2
 * strings (no line printed; *id untouched).
 */
int strpool_intern(struct strpool *p, const char *s, uint32_t *id, bool *fresh);
/* The string of id; "" for 0 or an id not given. */
const char *strpool_str(const struct strpool *p, uint32_t id);
/* Frees what it holds (the copies too when own); p is then empty, `own` kept. */
void strpool_release(struct strpool *p);

#endif
