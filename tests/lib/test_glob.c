/*
 * test_glob.c: lib/glob.h against fnmatch(3) (flags 0), which it stands in
 * for: the patterns a user writes, brackets in every form fnmatch reads,
 * and random patterns and texts over a small alphabet (where matches and
 * near-misses are common); the tails of a path matched through states as
 * explain's kernels:GLOB=K matches them; and a pattern that makes fnmatch
 * backtrack for minutes, matched in linear time.
 */
#include <fnmatch.h>
#include <time.h>

#include "lib/error.h"
#include "lib/glob.h"
#include "tests/lib/check.h"

/* glob_compile refuses a '[' no ']' closes: those patterns are fnmatch's alone */
static void same(const char *pattern, const char *text)
{
	struct glob *g = glob_compile(pattern);

	if (!g)
		return;
	CHECK(glob_match(g, text) == (fnmatch(pattern, text, 0) == 0), "pattern '%s' text '%s': fnmatch %d",
	      pattern, text, fnmatch(pattern, text, 0));
	glob_free(g);
}

/* Any tail of path from a component on (after a '/'), as retime.c matched them with fnmatch. */
static bool tails(const char *pattern, const char *path)
{
	for (const char *p = path;; p++) {
		if (!fnmatch(pattern, p, 0))
			return true;
		p = strchr(p, '/');
		if (!p)
			return false;
	}
}

static uint64_t x = 88172645463325252ull;

static unsigned rnd(unsigned n)
{
	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	return (unsigned)(x % n);
}

int main(void)
{
	static const char *const texts[] = {
		"", "a", "ampere_sgemm_128x64_nn", "step/forward/layer.3/attn/qk", "softmax_kernel", "[", "]", "\\",
		"a*b", "a?b", "x/y", "-", "!", "^", "ab]", "a[b", "aa", "a]", "b", "c", ":", "=",
	};
	static const char *const patterns[] = {
		"*gemm*", "*", "", "?", "a*", "*a", "step/*/attn/*", "layer.3*", "[a-c]", "[!a-c]", "[^a]", "[]]", "[]a]",
		"[!]]", "[a-]", "[-a]", "[[:alpha:]]", "[[:digit:]_]*", "[[:alpha:]", "[", "[a", "a[", "[\\]]", "\\*",
		"\\", "a\\", "\\a", "[[.a.]]", "[[=a=]]", "[[:foo:]]", "[a-c-e]", "[z-a]", "*[", "*]", "a*b*c", "**a**",
		"[!!]", "[\\!a]", "[[:alpha:][:digit:]]", "[[]", "[[:]", "[[:a]",
	};
	char pat[16], text[24];
	struct glob *bad;

	error_set_stream(fopen("/dev/null", "w"));
	bad = glob_compile("*[*-");
	CHECK(bad == NULL);
	bad = glob_compile("a[");
	CHECK(bad == NULL);
	CHECK((bad = glob_compile("[]")) == NULL);

	for (size_t i = 0; i < sizeof(patterns) / sizeof(*patterns); i++)
		for (size_t j = 0; j < sizeof(texts) / sizeof(*texts); j++)
			same(patterns[i], texts[j]);
	for (int round = 0; round < 300000; round++) {
		static const char alpha[] = "ab/*?[]!-\\^:";
		size_t np = rnd(8), nt = rnd(12);

		for (size_t i = 0; i < np; i++)
			pat[i] = alpha[rnd(sizeof(alpha) - 1)];
		pat[np] = 0;
		for (size_t i = 0; i < nt; i++)
			text[i] = "ab/-!]["[rnd(7)];
		text[nt] = 0;
		same(pat, text);
	}

	/* the tails of a path, through states: a start at the beginning and after each '/' */
	for (int round = 0; round < 100000; round++) {
		static const char alpha[] = "ab/*?";
		struct glob *g;
		uint64_t st[8];
		size_t np = 1 + rnd(6), nt = rnd(12);

		for (size_t i = 0; i < np; i++)
			pat[i] = alpha[rnd(sizeof(alpha) - 1)];
		pat[np] = 0;
		for (size_t i = 0; i < nt; i++)
			text[i] = "ab/"[rnd(3)];
		text[nt] = 0;
		g = glob_compile(pat);
		if (!g)
			continue;
		glob_start(g, st);
		for (const char *p = text; *p; p++) {
			glob_feed(g, st, p, 1);
			if (*p == '/')
				glob_restart(g, st);
		}
		CHECK(glob_accepts(g, st) == tails(pat, text), "pattern '%s' path '%s'", pat, text);
		glob_free(g);
	}

	/* fnmatch backtracks over every way its stars split the text: this takes glob one pass */
	{
		char big[20001], long_pat[64];
		struct glob *g;
		clock_t t0 = clock();

		memset(big, 'a', sizeof(big) - 1);
		big[sizeof(big) - 1] = 0;
		snprintf(long_pat, sizeof(long_pat), "*a*a*a*a*a*a*a*b");
		g = glob_compile(long_pat);
		CHECK(!glob_match(g, big));
		big[sizeof(big) - 2] = 'b';
		CHECK(glob_match(g, big));
		glob_free(g);
		CHECK((double)(clock() - t0) / CLOCKS_PER_SEC < 1.0, "%.2f s", (double)(clock() - t0) / CLOCKS_PER_SEC);
	}
	return check_done("test_glob");
}
