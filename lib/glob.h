/*
 * glob.h: fnmatch(3) patterns (flags 0, bytes as in the C locale: '*' and
 * '?' match '/' too, '\' quotes, brackets as fnmatch reads them) compiled
 * once and matched in time linear in the text, whatever the pattern.
 * fnmatch backtracks: a pattern of k stars against a text it nearly
 * matches costs up to text^k, and explain's kernels:GLOB=K matched every
 * tail of every kernel's range path (4,095 nested ranges: minutes).
 *
 * The pattern is a row of items, each a star or a set of bytes (a literal,
 * '?', a bracket expression: its bytes found by asking fnmatch about each
 * byte once); the text is read once, the positions of the pattern it can be
 * at kept as a bit set. So a state carries over: the tails of a path from a
 * component on (step/forward/attn, forward/attn, attn) are matched together
 * by adding a fresh start at each '/', and a path's state is its parent
 * path's state fed "/" and its own name (graph/retime.c, for every range
 * path of a bundle in one pass over the tree of paths).
 *
 *   struct glob *g = glob_compile("*gemm*");
 *   if (!g) ...                                   // out of memory, said
 *   bool yes = glob_match(g, "ampere_sgemm_128x64_nn");
 *   glob_free(g);
 */
#ifndef STEPTRACE_LIB_GLOB_H
#define STEPTRACE_LIB_GLOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct glob;

/*
 * The pattern compiled; NULL after an error line: out of memory, or a '['
 * that no ']' closes (fnmatch reads it as a byte, or, where a range runs
 * off the pattern's end, "[a-", fails every match).
 */
struct glob *glob_compile(const char *pattern);
void glob_free(struct glob *g);

/* As fnmatch(pattern, s, 0) == 0. */
bool glob_match(const struct glob *g, const char *s);

/* ---- states: the positions the text read so far can be at ---- */

/* uint64_t words in a state. */
size_t glob_words(const struct glob *g);
/* The state before any text: st[glob_words(g)]. */
void glob_start(const struct glob *g, uint64_t *st);
/* The state after reading s[0 .. n) from st, in place. */
void glob_feed(const struct glob *g, uint64_t *st, const char *s, size_t n);
/* st |= the start state: a match may also begin here. */
void glob_restart(const struct glob *g, uint64_t *st);
/* Whether the text read so far matches the whole pattern. */
bool glob_accepts(const struct glob *g, const uint64_t *st);

#endif
