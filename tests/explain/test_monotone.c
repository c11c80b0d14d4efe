/*
 * test_monotone.c: what-if predictions are monotone (analyze/explain.c,
 * graph/retime.c): a rule that only removes or shrinks time, added to any
 * set of rules, never lengthens the prediction, and host=K is monotone in K.
 *
 *   test_monotone [BUNDLE ... [-- TABLE]]
 *
 * On random steps (a generator below: seeded, threads of launches with
 * random host gaps, two streams with cross-stream waits, NCCL kernels,
 * synchronisations, polling loops, warm-up steps, the recorder's costs;
 * one rank and two joined by their collectives), and on every bundle
 * given (the shipped ones: tests/explain/CMakeLists.txt), with every set
 * of up to two of the rules below: prediction(S + {r}) <= prediction(S) +
 * EPS for every shrinking rule r; all the rules together <= each set;
 * host=1 >= 0.5 >= 0.1 >= 0.01 >= 0, alone and with no-sync; no rule
 * predicts the measured step, and every finding saves time, its
 * prediction inside its interval. A TABLE after
 * "--" (an all-reduce table) adds ranks=2, a rule that adds time, to the
 * sets of the single-GPU bundles that have gradients: the shrinking rules
 * on top of it must not lengthen it either.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/explain.h"
#include "graph/graph.h"
#include "lib/error.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

#define US 1000ull
/* Predictions are means of integer ns times (a host factor rounds each delay down): 1 ns per step of slack. */
#define EPS 1.0

/* The shrinking rules. */
static const char *const shrinking[] = {
	"graph", "no-sync", "comm-overlap", "no-contention", "host=0.5", "host=0", "comm-bw=2",
	"kernels:<10us=0", "kernels:*gemm*=0.5", "unrecorded",
};
#define N_SHRINK (sizeof(shrinking) / sizeof(shrinking[0]))

static uint64_t rng;
static size_t compared;   /* pairs of predictions compared, for the last line */

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A number in [lo, hi]. */
static uint64_t between(uint64_t lo, uint64_t hi)
{
	return lo + rnd() % (hi - lo + 1);
}

static bool chance(int percent)
{
	return (int)(rnd() % 100) < percent;
}

static uint64_t max2(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

/*
 * One rank's random run: `steps` steps (the first a warm-up when `warm`),
 * each of `launches` launches; an NCCL all-reduce after every fifth (so
 * that ranks built with the same counts have the same collectives).
 */
static void random_rank(struct replay *rp, size_t steps, size_t launches, bool warm)
{
	static const char *const names[] = { "gemm_128x64", "elementwise_add", "softmax", "small" };
	struct builder b;
	uint64_t h = between(0, 20) * US, sfree[2] = { 0, 0 }, nccl_free = 0;

	builder_init(&b);
	builder_open_replay(&b, rp);
	for (size_t s = 0; s < steps; s++) {
		uint64_t st = h;

		builder_push(&b, "step", h);
		for (size_t j = 0; j < launches; j++) {
			int k = (int)(rnd() % 2);
			uint64_t call = between(2, 8) * US, dur = chance(40) ? between(1, 9) * US : between(10, 300) * US;
			uint64_t start;

			h += between(0, 60) * US;
			start = max2(h + between(4, 15) * US, sfree[k] + between(0, 3) * US);
			if (chance(15))
				start = max2(start, sfree[!k] + between(1, 5) * US);   /* an event from the other stream */
			builder_launch(&b, names[rnd() % 4], 7 + (uint32_t)k, 0, h, h + call, start, start + dur);
			sfree[k] = start + dur;
			h += call;
			if (j % 5 == 4) {   /* NCCL's kernel, on a stream of its own, after the work so far */
				uint64_t a = max2(max2(sfree[0], sfree[1]), nccl_free) + between(1, 20) * US;

				nccl_free = a + between(20, 400) * US;
				builder_kernel(&b, BUILDER_NCCL_ALLREDUCE, 0, 9, 0, a, nccl_free);
			}
			if (chance(8)) {   /* .item(): waits for the work launched so far */
				uint64_t done = max2(sfree[0], sfree[1]);
				uint64_t end = max2(h + between(2, 6) * US, done + between(1, 5) * US);

				builder_call(&b, "cudaStreamSynchronize", h, end);
				h = end + between(0, 20) * US;
			} else if (chance(5)) {   /* a polling loop: not ready, not ready, ..., done */
				uint64_t done = max2(sfree[0], sfree[1]);

				b.status = 600;
				while (h + 60 * US < done) {
					builder_call(&b, "cudaEventQuery", h, h + 2 * US);
					h += between(20, 40) * US;
				}
				b.status = 0;
				h = max2(h, done + between(1, 5) * US);
				builder_call(&b, "cudaEventQuery", h, h + 2 * US);
				h += 2 * US;
			}
		}
		h += between(0, 200) * US;
		builder_pop(&b, h);
		builder_step(&b, (uint32_t)s, warm && s == 0, st, h);
		if (chance(30)) {
			struct builder_cost c = { .callback_ns = between(0, 50) * US, .python_ns = between(0, 100) * US };

			builder_cost(&b, st, h, &c);
		}
		h += between(0, 30) * US;
	}
	CHECK(builder_close(&b, "ok") == 0);
}

/*
 * Every set of up to three rules of `rules` (bit k: rules[k]; `fixed`, bits
 * every set has; `table`, ranks=N's), predicted; then every shrinking rule
 * (bits of `shrink`) added to a set of up to two must not lengthen it, nor
 * all of them together. `what` names the case.
 */
static void check_sets(const struct replay_ranks *rs, const char **rules, size_t n_rules, const char *table,
		       uint32_t fixed, uint32_t shrink, const char *what)
{
	struct explain_opts o = { .allreduce = table };
	uint32_t *sets = malloc(1024 * sizeof(*sets));
	double *pred = malloc(1024 * sizeof(*pred));
	size_t n = 0, worst_at = 0;
	double worst = 0;

	CHECK(sets && pred);
	if (!sets || !pred)
		goto out;
	for (size_t k = 0; k < n_rules; k++)
		o.rules[o.n_rules++] = rules[k];
	/* sets of up to three rules, and all of them */
	for (uint32_t m = 0; m < 1u << n_rules && n < 1023; m++)
		if ((m & fixed) == fixed && __builtin_popcount(m & ~fixed) <= 3)
			sets[n++] = m;
	sets[n++] = fixed | shrink;
	if (explain_predict_sets(rs, &o, sets, n, pred) < 0) {
		CHECK(0, "%s: no predictions", what);
		goto out;
	}
	for (size_t i = 0; i < n; i++)
		CHECK(pred[i] >= 0, "%s: set %#x predicts %.0f ns", what, sets[i], pred[i]);
	if (!fixed) {   /* no rule: the measured step, so that no saving is negative */
		struct explain_opts none = { 0 };
		struct explain_summary sum;

		CHECK(explain_run(rs, &none, NULL, &sum) == 0, "%s", what);
		CHECK(sets[0] == 0 && fabs(pred[0] - sum.measured) <= EPS, "%s: no rule predicts %.0f ns, measured %.0f",
		      what, pred[0], sum.measured);
		for (size_t i = 0; i < sum.n_findings; i++)
			CHECK(sum.finding[i].predicted < 0 || (sum.finding[i].saving > 0 &&
				sum.finding[i].lo <= sum.finding[i].predicted && sum.finding[i].predicted <= sum.finding[i].hi),
			      "%s: finding %s saves %.0f ns, [%.0f, %.0f]", what, sum.finding[i].title, sum.finding[i].saving,
			      sum.finding[i].lo, sum.finding[i].hi);
	}
	for (size_t i = 0; i < n; i++) {
		if (__builtin_popcount(sets[i] & ~fixed) > 2)
			continue;
		for (size_t k = 0; k < n_rules; k++) {
			uint32_t with = sets[i] | 1u << k;

			if (!(shrink >> k & 1) || with == sets[i])
				continue;
			for (size_t j = 0; j < n; j++)
				if (sets[j] == with && ++compared && pred[j] - pred[i] > worst) {
					worst = pred[j] - pred[i];
					worst_at = i * 64 + k;
				}
		}
		if (pred[n - 1] - pred[i] > worst) {
			worst = pred[n - 1] - pred[i];
			worst_at = i * 64 + 63;
		}
	}
	if (worst > EPS) {
		size_t i = worst_at / 64, k = worst_at % 64;
		char set[512] = "";
		size_t at = 0;

		for (size_t r = 0; r < n_rules && at < sizeof(set) - 2; r++)
			if (sets[i] >> r & 1)
				at += (size_t)snprintf(set + at, sizeof(set) - at, " %s", rules[r]);
		CHECK(0, "%s: {%s } %.0f ns, adding %s lengthens it by %.0f ns", what, set, pred[i],
		      k == 63 ? "every shrinking rule" : rules[k], worst);
	}
out:
	free(sets);
	free(pred);
}

/* host=1 >= 0.5 >= 0.1 >= 0.01 >= 0, alone and beside no-sync. */
static void check_host_sweep(const struct replay_ranks *rs, const char *what)
{
	struct explain_opts o = { .rules = { "host=1", "host=0.5", "host=0.1", "host=0.01", "host=0", "no-sync" },
				  .n_rules = 6 };
	uint32_t sets[10];
	double pred[10];

	for (uint32_t k = 0; k < 5; k++) {
		sets[k] = 1u << k;
		sets[5 + k] = 1u << k | 1u << 5;
	}
	if (explain_predict_sets(rs, &o, sets, 10, pred) < 0) {
		CHECK(0, "%s: no host sweep", what);
		return;
	}
	for (int k = 1; k < 5; k++) {
		CHECK(pred[k] <= pred[k - 1] + EPS, "%s: %s %.0f ns > %s %.0f ns", what, o.rules[k], pred[k],
		      o.rules[k - 1], pred[k - 1]);
		CHECK(pred[5 + k] <= pred[5 + k - 1] + EPS, "%s: %s + no-sync %.0f ns > %s + no-sync %.0f ns", what,
		      o.rules[k], pred[5 + k], o.rules[k - 1], pred[5 + k - 1]);
	}
}

static void check_run(const struct replay_ranks *rs, const char *table, const char *what)
{
	const char *rules[N_SHRINK + 1];
	uint32_t all = (1u << N_SHRINK) - 1;

	for (size_t k = 0; k < N_SHRINK; k++)
		rules[k] = shrinking[k];
	check_sets(rs, rules, N_SHRINK, NULL, 0, all, what);
	check_host_sweep(rs, what);
	if (table) {
		/* ranks=2 in every set, the shrinking rules on top of it */
		struct explain_opts o = { .rules = { "ranks=2" }, .n_rules = 1, .allreduce = table };
		uint32_t one = 1;
		double p;
		char text[600];
		FILE *quiet = fopen("/dev/null", "w");

		error_set_stream(quiet);
		if (explain_predict_sets(rs, &o, &one, 1, &p) < 0) {   /* no gradients to all-reduce: not this bundle */
			error_set_stream(stderr);
			fclose(quiet);
			return;
		}
		error_set_stream(stderr);
		fclose(quiet);
		snprintf(text, sizeof(text), "%s with ranks=2", what);
		rules[N_SHRINK] = "ranks=2";
		check_sets(rs, rules, N_SHRINK + 1, table, 1u << N_SHRINK, all, text);
	}
}

static void random_graphs(unsigned graphs)
{
	for (unsigned seed = 1; seed <= graphs; seed++) {
		struct replay rp[2];
		const struct replay *rps[2] = { &rp[0], &rp[1] };
		int64_t offset[2] = { 0, 0 };
		size_t ranks = seed % 3 == 0 ? 2 : 1;
		size_t steps, launches;
		bool warm;
		char what[64];

		rng = 0x9e3779b97f4a7c15ull * seed;
		steps = (size_t)between(1, 4);
		launches = (size_t)between(3, 20);
		warm = chance(50);
		for (size_t r = 0; r < ranks; r++)
			random_rank(&rp[r], steps, launches, warm);
		snprintf(what, sizeof(what), "random graph %u (%zu rank%s)", seed, ranks, ranks == 1 ? "" : "s");
		{
			struct replay_ranks rs = { .rank = rps, .n = ranks, .offset = offset, .world_size = (uint32_t)ranks };

			check_run(&rs, NULL, what);
		}
		for (size_t r = 0; r < ranks; r++)
			replay_release(&rp[r]);
	}
}

int main(int argc, char **argv)
{
	const char *table = NULL;
	int n_bundles = argc - 1;

	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--")) {
			n_bundles = i - 1;
			table = i + 1 < argc ? argv[i + 1] : NULL;
		}
	random_graphs(300);
	/* the bundles: a pair named *.rank0.stb, *.rank1.stb is one run */
	for (int i = 1; i <= n_bundles; i++) {
		struct replay rp[2];
		struct replay_ranks runs[1];
		const char *r0 = strstr(argv[i], ".rank0.stb");
		size_t n = r0 && i < n_bundles && strstr(argv[i + 1], ".rank1.stb") ? 2 : 1;
		int got;

		for (size_t k = 0; k < n; k++)   /* replay_load starts with replay_init */
			CHECK(replay_load(&rp[k], argv[i + (int)k], NULL) == 0, "%s", argv[i + (int)k]);
		got = replay_runs_group(rp, n, runs, 1, "test_monotone");
		CHECK(got == 1, "%s", argv[i]);
		if (got == 1) {
			check_run(&runs[0], n == 1 ? table : NULL, argv[i]);
			replay_runs_release(runs, 1);
		}
		for (size_t k = 0; k < n; k++)
			replay_release(&rp[k]);
		i += (int)n - 1;
	}
	printf("test_monotone: %zu pairs of predictions compared\n", compared);
	return check_done("test_monotone");
}
