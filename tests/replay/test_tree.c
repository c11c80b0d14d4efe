/*
 * test_tree.c: the range tree's searches and sums against brute force, on
 * random trees shallow and deep: each call's innermost covering range (jump
 * pointers), every range's GPU span, busy time and counts (the walk for
 * shallow trees, the sweep for deep ones), the --range matcher over the
 * tree against the one over path strings, and the path strings themselves,
 * whole, or cut in the middle when longer than REPLAY_PATH_MAX.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/utf8.h"
#include "replay/internal.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(uint64_t n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return n ? rng % n : 0;
}

static const char *const names[] = { "a", "b", "a/b", "", "ab", "x/", "/y", "forward", "layer.1", "a//b" };

/*
 * Ranges on two threads: a chain of `chain` nested ranges, then `loose` ranges
 * of random spans and recorded depths (nested or not, as they fall), and
 * `launches` calls with their kernels (some memcpys, some orphans) on random
 * streams, weighted towards the chain's deep end when `deep`.
 */
static void build(struct replay *rp, int chain, int loose, int launches, bool deep)
{
	const uint64_t T = 100000;
	struct builder b;
	char long_name[1100];

	memset(long_name, 'a', sizeof(long_name) - 1);
	long_name[sizeof(long_name) - 1] = '\0';
	builder_init(&b);
	builder_open_replay(&b, rp);
	for (int t = 1; t <= 2; t++) {
		b.thread = (uint64_t)t;
		for (int d = 0; d < chain; d++)
			builder_range(&b, d == 7 ? long_name : names[rnd(10)], (uint32_t)d, (uint64_t)d * 10,
				      T - (uint64_t)d * 10);
		for (int i = 0; i < loose; i++) {
			uint64_t s = rnd(T), e = s + rnd(T / 4);
			builder_range(&b, names[rnd(10)], (uint32_t)rnd(chain + 3), s, e);
		}
	}
	for (int i = 0; i < launches; i++) {
		uint64_t s = deep && rnd(4) ? (uint64_t)chain * 10 + rnd(T - 20 * (uint64_t)chain) : rnd(T);
		uint64_t g = s + rnd(300);
		b.thread = 1 + rnd(2);
		if (rnd(10) == 0) {
			builder_memcpy(&b, 1, 64, builder_call(&b, "cudaMemcpyAsync", s, s + rnd(5)), 8, 0, g,
				       g + rnd(200));
		} else if (rnd(20) == 0) {
			builder_kernel(&b, "orphan", 0, 9, 0, g, g + rnd(100));
		} else {
			builder_launch(&b, rnd(2) ? "k" : "g", (uint32_t)(7 + rnd(3)), 0, s, s + rnd(5), g,
				       g + rnd(400));
		}
	}
	CHECK(builder_close(&b, "ok") == 0, "build");
}

/* The innermost range covering a call, as replay.h defines it: from the last range started at or
 * before the call on its thread, up the parents until one ends at or after the call's end. */
static int32_t covering_ref(const struct replay *rp, const struct replay_api *c)
{
	int32_t last = -1;

	for (size_t i = 0; i < rp->n_ranges; i++) /* ranges by (start, recorded depth) */
		if (rp->ranges[i].thread == c->thread && rp->ranges[i].start <= c->start)
			last = (int32_t)i;
	while (last >= 0 && rp->ranges[last].end < c->end)
		last = rp->ranges[last].parent;
	return last;
}

static int by_start(const void *x, const void *y)
{
	const uint64_t *a = x, *b = y;
	return a[0] < b[0] ? -1 : a[0] > b[0];
}

/* Each range's span, busy time (the union of its subtree's activities) and counts, by brute force. */
static void check_projection(const struct replay *rp, const char *what)
{
	uint64_t (*iv)[2] = malloc((rp->n_activities + 1) * sizeof(*iv));
	int bad = 0;

	for (size_t i = 0; i < rp->n_apis && bad < 5; i++) {
		int32_t want = covering_ref(rp, &rp->apis[i]);
		if (rp->apis[i].range != want) {
			CHECK(0, "%s: call %zu: range %d, want %d", what, i, rp->apis[i].range, want);
			bad++;
		}
	}
	for (size_t r = 0; r < rp->n_ranges && bad < 5; r++) {
		const struct replay_range *g = &rp->ranges[r];
		uint64_t busy = 0, start = 0, end = 0, cur_s = 0, cur_e = 0;
		uint32_t n = 0, kernels = 0;

		for (size_t i = 0; i < rp->n_activities; i++) {
			const struct replay_activity *a = &rp->activities[i];
			int32_t x = a->range;
			while (x >= 0 && x != (int32_t)r)
				x = rp->ranges[x].parent;
			if (x < 0)
				continue;
			iv[n][0] = a->start;
			iv[n][1] = a->end;
			kernels += a->kind == ST_KERNEL;
			n++;
		}
		qsort(iv, n, sizeof(*iv), by_start);
		for (uint32_t i = 0; i < n; i++) {
			if (i == 0 || iv[i][0] > cur_e) {
				busy += cur_e - cur_s;
				cur_s = iv[i][0];
				cur_e = iv[i][1];
			} else if (iv[i][1] > cur_e) {
				cur_e = iv[i][1];
			}
			if (i == 0 || iv[i][0] < start)
				start = iv[i][0];
			if (iv[i][1] > end)
				end = iv[i][1];
		}
		busy += cur_e - cur_s;
		if (g->activities != n || g->kernels != kernels || g->gpu_busy != busy ||
		    g->gpu_start != start || g->gpu_end != end) {
			CHECK(0, "%s: range %zu: %u activities %u kernels busy %llu span [%llu, %llu], "
			      "want %u %u %llu [%llu, %llu]", what, r, g->activities, g->kernels,
			      (unsigned long long)g->gpu_busy, (unsigned long long)g->gpu_start,
			      (unsigned long long)g->gpu_end, n, kernels, (unsigned long long)busy,
			      (unsigned long long)start, (unsigned long long)end);
			bad++;
		}
	}
	free(iv);
}

static uint64_t walk_steps(const struct replay *rp)
{
	uint64_t walk = 0;

	for (size_t i = 0; i < rp->n_activities; i++)
		if (rp->activities[i].range >= 0)
			walk += rp->ranges[rp->activities[i].range].depth + 1;
	return walk;
}

static void test_projection(void)
{
	for (int round = 0; round < 30; round++) {
		struct replay rp;
		bool deep = round % 2;
		char what[64];

		if (deep)
			build(&rp, 150 + (int)rnd(250), (int)rnd(4), 300 + (int)rnd(300), true);
		else
			build(&rp, (int)rnd(4), 5 + (int)rnd(40), 50 + (int)rnd(300), false);
		snprintf(what, sizeof(what), "%s round %d", deep ? "deep" : "shallow", round);
		/* the deep trees must take the sweep, the shallow ones the walk */
		CHECK((walk_steps(&rp) > WALK_STEPS_PER_ITEM * (rp.n_activities + rp.n_ranges)) == deep,
		      "%s: %llu walk steps for %zu activities and %zu ranges", what,
		      (unsigned long long)walk_steps(&rp), rp.n_activities, rp.n_ranges);
		check_projection(&rp, what);
		replay_release(&rp);
	}
}

/* Path strings and --range over the tree against the same on the strings. */
static void test_paths(void)
{
	static const char *const comps[] = { "a", "b", "*", "a*", "?", "forward", "x", "layer.?", "y" };

	for (int round = 0; round < 20; round++) {
		struct replay rp;
		int bad = 0;

		build(&rp, 5 + (int)rnd(20), 30, 10, false);
		for (size_t i = 0; i < rp.n_paths; i++) {
			const struct replay_path *p = &rp.paths[i];
			char want[40000] = "";
			if (p->parent >= 0)
				snprintf(want, sizeof(want), "%s/", replay_path_str(&rp, (uint32_t)p->parent));
			strncat(want, replay_str(&rp, p->name), sizeof(want) - strlen(want) - 1);
			CHECK(p->parent < (int32_t)i, "a path's parent comes first");
			CHECK_STR(replay_path_str(&rp, (uint32_t)i), want);
		}
		for (int k = 0; k < 20 && bad < 5; k++) {
			struct replay_filter f;
			struct range_pattern p;
			char pat[256] = "";
			int n = 1 + (int)rnd(4);

			if (rnd(3) == 0)
				strcat(pat, "/");
			for (int c = 0; c < n; c++) {
				if (c)
					strcat(pat, "/");
				strcat(pat, comps[rnd(9)]);
			}
			CHECK(replay_filter_init(&f, &rp, pat) == 0 && range_pattern_compile(&p, pat) == 0, "%s", pat);
			for (size_t r = 0; r < rp.n_ranges; r++) {
				const char *path = replay_range_path(&rp, &rp.ranges[r]);
				if (replay_filter_range(&f, &rp.ranges[r]) != range_pattern_match(&p, path)) {
					CHECK(0, "'%s' on '%s': the tree says %d", pat, path,
					      replay_filter_range(&f, &rp.ranges[r]));
					bad++;
				}
			}
			replay_filter_release(&f);
			range_pattern_release(&p);
		}
		replay_release(&rp);
	}
}

/* A name of 1 to 700 bytes of ASCII and 2-, 3- and 4-byte UTF-8 characters. */
static void utf8_name(char *s, size_t max)
{
	static const char *const chars[] = { "a", "z", "_", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9d\x84\x9e" };
	size_t want = 1 + rnd(700), n = 0;

	while (n < want && n + 4 < max) {
		const char *c = chars[rnd(6)];
		memcpy(s + n, c, strlen(c));
		n += strlen(c);
	}
	s[n] = '\0';
}

/* The start of a UTF-8 character (or the end): not a continuation byte. */
static bool at_char(const char *s, size_t i)
{
	return ((unsigned char)s[i] & 0xC0) != 0x80;
}

/*
 * Paths longer than REPLAY_PATH_MAX: the whole path's first bytes (about a
 * third), "..." and its last bytes, cut between characters, at most
 * REPLAY_PATH_MAX in all; the same whichever path is asked for first.
 */
static void test_long_paths(void)
{
	enum { DEPTH = 60, T = 100000 };
	static char full[DEPTH][DEPTH * 720];
	struct replay rp[2];
	char name[720];
	int cut = 0;

	for (int k = 0; k < 2; k++) {
		struct builder b;
		uint64_t saved = rng;

		builder_init(&b);
		builder_open_replay(&b, &rp[k]);
		for (int d = 0; d < DEPTH; d++) {
			utf8_name(name, sizeof(name));
			builder_range(&b, name, (uint32_t)d, (uint64_t)d * 10, T - (uint64_t)d * 10);
			if (k == 0)
				snprintf(full[d], sizeof(full[d]), "%s%s%s", d ? full[d - 1] : "", d ? "/" : "", name);
		}
		builder_launch(&b, "k", 7, 0, DEPTH * 10, DEPTH * 10 + 5, DEPTH * 10 + 10, DEPTH * 10 + 20);
		CHECK(builder_close(&b, "ok") == 0 && rp[k].n_paths == DEPTH, "the chain's replay");
		if (k == 0)
			rng = saved;   /* the same names again */
	}
	if (rp[0].n_paths != DEPTH || rp[1].n_paths != DEPTH)
		return;
	replay_path_str(&rp[1], DEPTH - 1);   /* the second replay builds the innermost first */
	for (uint32_t i = 0; i < DEPTH; i++) {
		const char *got = replay_path_str(&rp[0], i), *f = full[i], *dots = strstr(got, "...");
		size_t len = strlen(f), n = strlen(got), head, tail;

		CHECK(rp[0].paths[i].parent == (int32_t)i - 1, "path %u is the chain's depth %u", i, i);
		CHECK_STR(replay_path_str(&rp[1], i), got);
		if (len <= REPLAY_PATH_MAX) {
			CHECK_STR(got, f);
			continue;
		}
		cut++;
		CHECK(n <= REPLAY_PATH_MAX && n >= REPLAY_PATH_MAX - 3, "path %u: %zu bytes", i, n);
		if (!dots)
			continue;
		head = (size_t)(dots - got);
		tail = n - head - 3;
		CHECK(head <= (REPLAY_PATH_MAX - 3) / 3 && head >= (REPLAY_PATH_MAX - 3) / 3 - 3,
		      "path %u: a head of %zu bytes", i, head);
		CHECK(!memcmp(got, f, head) && at_char(f, head), "path %u: the head is the path's first bytes", i);
		CHECK(!strcmp(got + head + 3, f + len - tail) && at_char(f, len - tail),
		      "path %u: the tail is the path's last bytes", i);
	}
	CHECK(cut > 10, "%d paths cut", cut);
	replay_release(&rp[0]);
	replay_release(&rp[1]);
}

int main(void)
{
	test_projection();
	test_paths();
	test_long_paths();
	return check_done("test_tree");
}
