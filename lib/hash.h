/*
 * hash.h: FNV-1a, the one string hash of the project's open-addressing
 * tables (replay's pooled strings and path components, export's interner)
 * and of the recorder's run ids; and splitmix64's finalizer, which mixes an
 * integer key (export's ids and track uuids). Chain calls to hash several
 * pieces:
 *
 *   uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, a, strlen(a));
 *   h = hash_fnv1a(h, b, strlen(b));
 */
#ifndef STEPTRACE_LIB_HASH_H
#define STEPTRACE_LIB_HASH_H

#include <stddef.h>
#include <stdint.h>

#define HASH_FNV1A_INIT 1469598103934665603ull

static inline uint64_t hash_fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *s = p;

	while (len--)
		h = (h ^ *s++) * 1099511628211ull;
	return h;
}

/* A NUL-terminated string's hash. */
static inline uint64_t hash_str(const char *s)
{
	uint64_t h = HASH_FNV1A_INIT;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

/* splitmix64's finalizer: a bijection, so distinct inputs give distinct outputs. */
static inline uint64_t hash_mix64(uint64_t x)
{
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

#endif
