/* glob.c: see glob.h. */
#include "lib/glob.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"

struct glob {
	size_t n;                      /* items; positions 0 .. n, bit n: the whole pattern read */
	size_t words;
	uint64_t *star;                /* [words]: bit i when item i is a star */
	uint64_t *bytes;               /* [256][words]: bit i when item i (a set) holds the byte */
};

/*
 * Where the bracket expression opening at p[0] == '[' ends (its ']'), as
 * fnmatch reads it: a '!' or '^' first negates, a ']' first is a member,
 * '\' quotes the next byte, "[:", "[=" and "[." open a class, an
 * equivalence class or a collating symbol up to ":]", "=]" or ".]". NULL:
 * no end, and the '[' is a byte of its own.
 */
static const char *bracket_end(const char *p)
{
	const char *q = p + 1;

	if (*q == '!' || *q == '^')
		q++;
	if (*q == ']')
		q++;
	while (*q && *q != ']') {
		if (*q == '\\' && q[1]) {
			q += 2;
		} else if (*q == '[' && (q[1] == ':' || q[1] == '=' || q[1] == '.')) {
			const char *e = q + 2;

			while (*e && !(e[0] == q[1] && e[1] == ']'))
				e++;
			q = *e ? e + 2 : q + 1;
		} else {
			q++;
		}
	}
	return *q == ']' ? q : NULL;
}

static void set_bit(uint64_t *v, size_t i)
{
	v[i / 64] |= 1ull << (i % 64);
}

struct glob *glob_compile(const char *pattern)
{
	size_t len = strlen(pattern), n = 0;
	struct glob *g = calloc(1, sizeof(*g));

	if (!g)
		goto oom;
	g->words = (len + 1) / 64 + 1;   /* items <= bytes of the pattern */
	g->star = calloc(g->words, sizeof(uint64_t));
	g->bytes = calloc(256 * g->words, sizeof(uint64_t));
	if (!g->star || !g->bytes)
		goto oom;
	for (const char *p = pattern; *p;) {
		if (*p == '*') {
			while (*p == '*')
				p++;   /* "**" is "*" */
			set_bit(g->star, n++);
			continue;
		}
		if (*p == '?') {
			for (int c = 1; c < 256; c++)
				set_bit(g->bytes + (size_t)c * g->words, n);
			p++;
		} else if (*p == '[' && !bracket_end(p)) {
			/* fnmatch reads it as a byte, or fails the match where a range runs off the end ("[a-"): no rule */
			glob_free(g);
			error("the glob '%s' opens a bracket expression with no ']' to close it (\\[ is the byte '[')",
			      pattern);
			return NULL;
		} else if (*p == '[') {
			const char *e = bracket_end(p);
			char *set = strndup(p, (size_t)(e - p + 1));

			if (!set)
				goto oom;
			for (int c = 1; c < 256; c++) {
				char one[2] = { (char)c, 0 };

				if (!fnmatch(set, one, 0))
					set_bit(g->bytes + (size_t)c * g->words, n);
			}
			free(set);
			p = e + 1;
		} else if (*p == '\\') {
			/* a quoted byte; a '\' at the end matches nothing (fnmatch's "trailing \ loses") */
			if (p[1])
				set_bit(g->bytes + (size_t)(unsigned char)p[1] * g->words, n);
			p += p[1] ? 2 : 1;
		} else {
			set_bit(g->bytes + (size_t)(unsigned char)*p * g->words, n);
			p++;
		}
		n++;
	}
	g->n = n;
	return g;
oom:
	glob_free(g);
	error("out of memory");
	return NULL;
}

void glob_free(struct glob *g)
{
	if (!g)
		return;
	free(g->star);
	free(g->bytes);
	free(g);
}

size_t glob_words(const struct glob *g)
{
	return g->words;
}

/* st |= st's stars moved on by one: a star matches nothing too (stars never follow stars). */
static void closure(const struct glob *g, uint64_t *st)
{
	uint64_t carry = 0;

	for (size_t w = 0; w < g->words; w++) {
		uint64_t s = st[w] & g->star[w], next = s >> 63;

		st[w] |= (s << 1) | carry;
		carry = next;
	}
}

void glob_start(const struct glob *g, uint64_t *st)
{
	memset(st, 0, g->words * sizeof(uint64_t));
	glob_restart(g, st);
}

void glob_restart(const struct glob *g, uint64_t *st)
{
	st[0] |= 1;
	closure(g, st);
}

void glob_feed(const struct glob *g, uint64_t *st, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const uint64_t *b = g->bytes + (size_t)(unsigned char)s[i] * g->words;
		uint64_t carry = 0, any = 0;

		for (size_t w = 0; w < g->words; w++) {
			uint64_t moved = st[w] & b[w], next = moved >> 63;

			st[w] = (st[w] & g->star[w]) | (moved << 1) | carry;
			carry = next;
			any |= st[w];
		}
		if (!any)
			return;   /* nothing can match any more */
		closure(g, st);
	}
}

bool glob_accepts(const struct glob *g, const uint64_t *st)
{
	return (st[g->n / 64] >> (g->n % 64)) & 1;
}

bool glob_match(const struct glob *g, const char *s)
{
	uint64_t small[8], *st = g->words <= 8 ? small : malloc(g->words * sizeof(uint64_t));
	bool yes;

	if (!st)
		return false;
	glob_start(g, st);
	glob_feed(g, st, s, strlen(s));
	yes = glob_accepts(g, st);
	if (st != small)
		free(st);
	return yes;
}
