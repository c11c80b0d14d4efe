/*
 * test_period.c: the steps of a "whole run" bundle found by the period of
 * its launch sequence (replay/period.h): the periodic suffix against a
 * brute force, a loop cut where the host waits (at the end of an iteration
 * or inside it), setup work outside the steps, no period, a coincidence at
 * the end, calls that launch several activities, copies told apart by size
 * class, random soups of calls, bundles that say how
 * their steps were found left alone, `info` and `steps` saying it in every
 * format, and a million launches in bounded time.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "analyze/info.h"
#include "analyze/steps.h"
#include "lib/error.h"
#include "replay/period.h"
#include "replay/replay.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

/* ---- the periodic suffix -------------------------------------------------- */

/* The longest suffix with >= 3 repetitions of a period, its smallest one: by definition. */
static size_t brute_suffix(const uint64_t *k, size_t n, size_t *start)
{
	for (size_t len = n; len > 0; len--)
		for (size_t p = 1; 3 * p <= len; p++) {
			size_t s = n - len, i;
			for (i = s; i + p < n && k[i] == k[i + p]; i++)
				;
			if (i + p >= n) {
				*start = s;
				return p;
			}
		}
	*start = n;
	return 0;
}

static void test_suffix(void)
{
	static const uint64_t abc[] = { 9, 1, 2, 3, 1, 2, 3, 1, 2, 3 };
	static const uint64_t tail[] = { 1, 2, 3, 1, 2, 3, 1, 2, 3, 4 };
	uint64_t k[40];
	size_t start = 99, want_start;
	uint32_t seed = 12345;

	CHECK(period_suffix(abc, 10, 3, &start) == 3 && start == 1, "abc x3 after 9: start %zu", start);
	CHECK(period_suffix(tail, 10, 3, &start) == 0 && start == 10, "a different last key");
	CHECK(period_suffix(abc, 0, 3, &start) == 0, "empty");
	CHECK(period_suffix(abc + 8, 2, 3, &start) == 0, "too short");
	/* 1,2,3 twice and a half is not three times */
	CHECK(period_suffix(abc + 2, 8, 3, &start) == 0 || start > 2, "two repetitions and a half");

	/* random sequences over 1 to 3 keys, some made periodic at the end */
	for (int trial = 0; trial < 20000; trial++) {
		size_t n, p, want_p;
		int64_t got;

		seed = seed * 1103515245u + 12345u;
		n = 1 + (seed >> 8) % 40;
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			k[i] = (seed >> 16) % (1 + trial % 3);
		}
		if (trial % 2) {   /* copy a random period over a random suffix */
			seed = seed * 1103515245u + 12345u;
			p = 1 + (seed >> 8) % 6;
			for (size_t i = n / 3; i + p < n; i++)
				k[i + p] = k[i];
		}
		want_p = brute_suffix(k, n, &want_start);
		got = period_suffix(k, n, 3, &start);
		CHECK(got == (int64_t)want_p && (!want_p || start == want_start),
		      "trial %d (n %zu): period %lld from %zu, want %zu from %zu", trial, n, (long long)got,
		      start, want_p, want_start);
		if (got != (int64_t)want_p)
			break;
	}
}

/* ---- synthetic loops ------------------------------------------------------ */

#define ITERS 5
#define BODY 7
#define SETUP 3

/* Where each launching call of the loop started: [iteration][element]. */
struct loop {
	uint64_t call[ITERS][BODY];
	uint64_t last_gpu_end;       /* of the last iteration */
	uint64_t sync_end;           /* of the wait after element `wait_after` of the last iteration */
	uint64_t setup_call[SETUP];
	uint64_t end;
};

/* One launch: a call over [t, t + 5] and its activity over [t + 100, t + 110]. */
static uint64_t launch(struct builder *b, int what, uint64_t t)
{
	uint64_t c;

	switch (what) {
	case 0:   /* a batch to the device, 64 KiB */
		c = builder_call(b, "cudaMemcpyAsync", t, t + 5);
		builder_memcpy(b, 1, 65536, c, 7, 0, t + 100, t + 110);
		break;
	case 6:   /* the loss back, 4 bytes */
		c = builder_call(b, "cudaMemcpyAsync", t, t + 5);
		builder_memcpy(b, 2, 4, c, 7, 0, t + 100, t + 110);
		break;
	default: {
		static const char *const names[] = { "", "embed", "gemm", "softmax", "gemm_bwd", "adam" };
		c = builder_launch(b, names[what], 7, 0, t, t + 5, t + 100, t + 110);
	}
	}
	return c;
}

/*
 * A program of `setup` launches (a memset, an init kernel, 1 MiB of weights
 * to the device), then ITERS iterations of BODY launches (a batch to the
 * device, five kernels, the loss back). Calls are 10 ns apart; after element
 * `wait_after` of each iteration the host waits in cudaStreamSynchronize for
 * 480 ns, 500 before the next call. Another thread launches one kernel in
 * the middle of iteration 2. One step over the whole run, as the recorder
 * writes it; steps_from as given.
 */
static void write_loop(struct builder *b, struct loop *lp, int setup, int wait_after)
{
	uint64_t t = 1000, c;

	builder_small_model(b, "fp32");
	for (int i = 0; i < setup; i++, t += 10) {
		lp->setup_call[i] = t;
		if (i == 0) {
			c = builder_call(b, "cudaMemsetAsync", t, t + 5);
			builder_memset(b, 4096, c, 7, 0, t + 100, t + 110);
		} else if (i == 1) {
			builder_launch(b, "init_weights", 7, 0, t, t + 5, t + 100, t + 110);
		} else {
			c = builder_call(b, "cudaMemcpy", t, t + 5);
			builder_memcpy(b, 1, 1 << 20, c, 7, 0, t + 100, t + 110);
		}
	}
	t += 1000;
	for (int it = 0; it < ITERS; it++)
		for (int e = 0; e < BODY; e++) {
			lp->call[it][e] = t;
			launch(b, e, t);
			lp->last_gpu_end = t + 110;
			t += 10;
			if (it == 2 && e == 3) {
				b->thread = 2;
				builder_launch(b, "loader_kernel", 8, 0, t - 3, t - 2, t + 80, t + 90);
				b->thread = 1;
			}
			if (e == wait_after) {
				builder_call(b, "cudaStreamSynchronize", t, t + 480);
				lp->sync_end = t + 480;
				t += 500;
			}
		}
	lp->end = t + 2000;
	builder_step(b, 0, false, 0, lp->end);
}

static const struct replay_activity *activity_at(const struct replay *rp, uint64_t gpu_start, uint16_t stream)
{
	for (size_t i = 0; i < rp->n_activities; i++)
		if (rp->activities[i].start == gpu_start && rp->activities[i].stream == stream)
			return &rp->activities[i];
	return NULL;
}

/* A loop waiting at the end of each iteration: cut before each batch copy, 5 steps. */
static void test_loop(void)
{
	struct builder b;
	struct replay rp;
	struct loop lp;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	b.steps_from = PERIOD_WHOLE_RUN;
	write_loop(&b, &lp, SETUP, BODY - 1);
	CHECK(builder_close(&b, NULL) == 0, "build");

	CHECK_STR(rp.run.steps_from, "launch period: 7 launches per step, found by replay");
	CHECK_U64(rp.n_steps, ITERS);
	CHECK_U64(rp.n_measured_steps, ITERS - 1);
	CHECK(rp.main_thread == 1, "main thread %llu", (unsigned long long)rp.main_thread);
	for (size_t k = 0; k < rp.n_steps && k < ITERS; k++) {
		const struct replay_step *s = &rp.steps[k];
		uint64_t end = k + 1 < ITERS ? lp.call[k + 1][0] : lp.sync_end;

		CHECK(s->index == k && s->warmup == (k == 0) && s->thread == 1, "step %zu: index %u warm-up %d",
		      k, s->index, s->warmup);
		CHECK(s->start == lp.call[k][0] && s->end == end, "step %zu: [%llu, %llu], want [%llu, %llu]", k,
		      (unsigned long long)s->start, (unsigned long long)s->end,
		      (unsigned long long)lp.call[k][0], (unsigned long long)end);
		CHECK(s->activities == BODY + (k == 2) && s->kernels == 5 + (k == 2),
		      "step %zu: %u activities, %u kernels", k, s->activities, s->kernels);
		CHECK(s->gpu_start == lp.call[k][0] + 100 && s->gpu_end == lp.call[k][BODY - 1] + 110,
		      "step %zu: GPU span", k);
	}
	for (int i = 0; i < SETUP; i++) {
		const struct replay_activity *a = activity_at(&rp, lp.setup_call[i] + 100, 7);
		CHECK(a && a->step == -1, "setup launch %d is in step %d", i, a ? a->step : 99);
	}
	for (int it = 0; it < ITERS; it++)
		for (int e = 0; e < BODY; e++) {
			const struct replay_activity *a = activity_at(&rp, lp.call[it][e] + 100, 7);
			CHECK(a && a->step == it, "iteration %d element %d in step %d", it, e, a ? a->step : 99);
		}
	replay_release(&rp);
}

/*
 * The host waits after the third launch (the program's iteration reads
 * H2D, embed, gemm | sync | softmax, gemm_bwd, adam, D2H): steps run from
 * one softmax to the next; the first iteration's head is setup, the last
 * one's tail after the last full repetition, both outside the steps.
 */
static void test_cut_inside(void)
{
	struct builder b;
	struct replay rp;
	struct loop lp;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	b.steps_from = PERIOD_WHOLE_RUN;
	write_loop(&b, &lp, SETUP, 2);
	CHECK(builder_close(&b, NULL) == 0, "build");

	CHECK_STR(rp.run.steps_from, "launch period: 7 launches per step, found by replay");
	CHECK_U64(rp.n_steps, ITERS - 1);
	for (size_t k = 0; k < rp.n_steps && k < ITERS - 1; k++) {
		const struct replay_step *s = &rp.steps[k];
		uint64_t end = lp.call[k + 1][3] - (k + 1 == ITERS - 1);

		CHECK(s->start == lp.call[k][3] && s->end == end, "step %zu: [%llu, %llu], want [%llu, %llu]", k,
		      (unsigned long long)s->start, (unsigned long long)s->end,
		      (unsigned long long)lp.call[k][3], (unsigned long long)end);
	}
	for (int it = 0; it < ITERS; it++)
		for (int e = 0; e < BODY; e++) {
			const struct replay_activity *a = activity_at(&rp, lp.call[it][e] + 100, 7);
			int want = e >= 3 ? (it < ITERS - 1 ? it : -1) : it - 1;

			CHECK(a && a->step == want, "iteration %d element %d in step %d, want %d", it, e,
			      a ? a->step : 99, want);
		}
	replay_release(&rp);
}

/* Distinct kernels: no period, the whole-run step stays. */
static void test_no_period(void)
{
	struct builder b;
	struct replay rp;
	char name[32];

	builder_init(&b);
	builder_open_replay(&b, &rp);
	b.steps_from = PERIOD_WHOLE_RUN;
	for (int i = 0; i < 30; i++) {
		snprintf(name, sizeof(name), "kernel_%d", i % 10 == 9 ? i : i % 10);   /* period 10, broken */
		builder_launch(&b, name, 7, 0, 100 + 10 * i, 105 + 10 * i, 200 + 10 * i, 205 + 10 * i);
	}
	builder_step(&b, 0, false, 0, 10000);
	CHECK(builder_close(&b, NULL) == 0, "build");
	CHECK_STR(rp.run.steps_from, "whole run");
	CHECK(rp.n_steps == 1 && rp.steps[0].start == 0 && rp.steps[0].end == 10000 && rp.steps[0].kernels == 30,
	      "the whole-run step kept");
	replay_release(&rp);

	/* 40 distinct launches, then the same copy three times: a coincidence, not the loop */
	builder_init(&b);
	builder_open_replay(&b, &rp);
	b.steps_from = PERIOD_WHOLE_RUN;
	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "kernel_%d", i);
		builder_launch(&b, name, 7, 0, 100 + 10 * i, 105 + 10 * i, 1000 + 10 * i, 1005 + 10 * i);
	}
	for (int i = 0; i < 3; i++) {
		uint64_t c = builder_call(&b, "cudaMemcpy", 600 + 1000 * i, 610 + 1000 * i);
		builder_memcpy(&b, 2, 1024 + i, c, 7, 0, 2000 + 1000 * i, 2010 + 1000 * i);
	}
	builder_step(&b, 0, false, 0, 10000);
	CHECK(builder_close(&b, NULL) == 0, "build");
	CHECK(rp.n_steps == 1 && !strcmp(rp.run.steps_from, "whole run"), "%zu steps from '%s'", rp.n_steps,
	      rp.run.steps_from);
	replay_release(&rp);
}

/*
 * Graph launches: each call launches three kernels (a, b, c). Four calls:
 * the period is 3, cut only at a call's first kernel. One call of all
 * nine (a, b, c three times): no cut is allowed, the step stays.
 */
static void test_graph_calls(void)
{
	struct builder b;
	struct replay rp;
	static const char *const abc[] = { "graph_a", "graph_b", "graph_c" };

	builder_init(&b);
	builder_open_replay(&b, &rp);
	b.steps_from = PERIOD_WHOLE_RUN;
	for (int g = 0; g < 4; g++) {
		uint64_t c = builder_call(&b, "cudaGraphLaunch", 1000 * g, 1000 * g + 10);
		for (int k = 0; k < 3; k++)
			builder_kernel(&b, abc[k], c, 7, 0, 1000 * g + 100 + 20 * k, 1000 * g + 110 + 20 * k);
	}
	builder_step(&b, 0, false, 0, 9000);
	CHECK(builder_close(&b, NULL) == 0, "build");
	CHECK_STR(rp.run.steps_from, "launch period: 3 launches per step, found by replay");
	CHECK(rp.n_steps == 4, "%zu steps", rp.n_steps);
	for (size_t k = 0; k < rp.n_steps; k++)
		CHECK(rp.steps[k].start == 1000 * k && rp.steps[k].kernels == 3, "graph step %zu", k);
	replay_release(&rp);

	builder_init(&b);
	builder_open_replay(&b, &rp);
	b.steps_from = PERIOD_WHOLE_RUN;
	{
		uint64_t c = builder_call(&b, "cudaGraphLaunch", 0, 10);
		for (int k = 0; k < 9; k++)
			builder_kernel(&b, abc[k % 3], c, 7, 0, 100 + 20 * k, 110 + 20 * k);
	}
	builder_step(&b, 0, false, 0, 9000);
	CHECK(builder_close(&b, NULL) == 0, "build");
	CHECK(rp.n_steps == 1 && !strcmp(rp.run.steps_from, "whole run"), "one call: %zu steps from '%s'",
	      rp.n_steps, rp.run.steps_from);
	replay_release(&rp);
}

/*
 * Copies are keyed by kind and size class: an iteration of a 64 KiB batch,
 * a kernel, 16 bytes of labels and the kernel again is 4 launches, not 2.
 */
static void test_size_classes(void)
{
	struct builder b;
	struct replay rp;
	uint64_t t = 0;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	b.steps_from = PERIOD_WHOLE_RUN;
	for (int it = 0; it < 4; it++) {
		for (int e = 0; e < 4; e++, t += 10) {
			if (e % 2) {
				builder_launch(&b, "step_kernel", 7, 0, t, t + 5, t + 100, t + 110);
			} else {
				uint64_t c = builder_call(&b, "cudaMemcpyAsync", t, t + 5);
				builder_memcpy(&b, 1, e ? 16 : 65536, c, 7, 0, t + 100, t + 110);
			}
		}
		builder_call(&b, "cudaStreamSynchronize", t, t + 480);
		t += 500;
	}
	builder_step(&b, 0, false, 0, t);
	CHECK(builder_close(&b, NULL) == 0, "build");
	CHECK_STR(rp.run.steps_from, "launch period: 4 launches per step, found by replay");
	CHECK(rp.n_steps == 4 && rp.steps[1].start == 540, "%zu steps, step 1 from %llu", rp.n_steps,
	      rp.n_steps > 1 ? (unsigned long long)rp.steps[1].start : 0ull);
	replay_release(&rp);
}

/* Bundles whose recorder found the steps another way, or says nothing (before 1.5): untouched. */
static void test_untouched(void)
{
	static const char *const said[] = { "NVTX range 'train_step'", "cudaProfilerStart/Stop", NULL };

	for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++) {
		struct builder b;
		struct replay rp;
		struct loop lp;

		builder_init(&b);
		builder_open_replay(&b, &rp);
		b.steps_from = said[i];
		write_loop(&b, &lp, SETUP, BODY - 1);
		CHECK(builder_close(&b, NULL) == 0, "build");
		CHECK_STR(rp.run.steps_from, said[i] ? said[i] : "");
		CHECK(rp.n_steps == 1 && rp.steps[0].start == 0 && rp.steps[0].end == lp.end, "steps from '%s': %zu",
		      rp.run.steps_from, rp.n_steps);
		replay_release(&rp);
	}
}

static uint32_t soup_seed = 777;

static uint64_t rnd(uint64_t n)
{
	soup_seed = soup_seed * 1103515245u + 12345u;
	return (soup_seed >> 8) % n;
}

/* A launching call: its thread, what it launches (a kernel's name, NULL: a copy) and how many. */
struct soup_call {
	uint64_t thread, n, copy_kind, bytes;
	const char *what;
};

static struct soup_call soup_random(void)
{
	static const char *const names[] = { "a", "b", "c", NULL };

	return (struct soup_call){ .thread = 1 + rnd(6) / 5, .n = rnd(4), .what = names[rnd(4)],
				   .copy_kind = 1 + rnd(2), .bytes = rnd(100) };
}

/* The call at *t (or a little later); one of its activities in 50 names another call. */
static void soup_add(struct builder *b, uint64_t *t, const struct soup_call *sc, uint64_t calls)
{
	uint64_t c, g = *t + rnd(300);

	b->thread = sc->thread;
	*t += rnd(3) * rnd(100);
	c = builder_call(b, "cudaLaunchKernel", *t, *t + rnd(20));
	for (uint64_t k = 0; k < sc->n; k++, g += rnd(40)) {
		uint64_t corr = rnd(50) ? c : rnd(2 * calls + 1);

		if (sc->what)
			builder_kernel(b, sc->what, corr, 7, 0, g, g + rnd(50));
		else
			builder_memcpy(b, (uint32_t)sc->copy_kind, sc->bytes, corr, 7, 0, g, g + rnd(50));
	}
}

/*
 * Random soups of calls and activities on two threads, half of them a body
 * of calls repeated after some setup (so that periods come often): calls
 * that overlap, share a start, launch nothing or three things, activities
 * no call launched or that name a call of the other thread, GPU times that
 * go back. Whatever is found, the steps are in order, numbered, each inside
 * the run, and only the first is warm-up; the sanitizers watch the rest.
 */
static void test_random_soups(void)
{
	int found = 0;

	for (int trial = 0; trial < 3000; trial++) {
		struct builder b;
		struct replay rp;
		struct soup_call body[5], sc;
		uint64_t t = 0, setup = rnd(20), n_body = 1 + rnd(5), reps = trial % 2 ? 3 + rnd(5) : 0;
		uint64_t calls = setup + n_body * reps;

		builder_init(&b);
		builder_open_replay(&b, &rp);
		b.steps_from = PERIOD_WHOLE_RUN;
		for (uint64_t i = 0; i < setup; i++) {
			sc = soup_random();
			soup_add(&b, &t, &sc, calls);
		}
		for (uint64_t j = 0; j < n_body; j++)
			body[j] = soup_random();
		for (uint64_t r = 0; r < reps; r++)
			for (uint64_t j = 0; j < n_body; j++)
				soup_add(&b, &t, &body[j], calls);
		b.thread = 1;
		if (rnd(4))
			builder_step(&b, 0, false, 0, t + 100);
		CHECK(builder_close(&b, NULL) == 0, "build");
		if (!strncmp(rp.run.steps_from, "launch period: ", 15)) {
			found++;
			CHECK(rp.n_steps >= 2 && rp.n_measured_steps == rp.n_steps - 1, "trial %d: %zu steps", trial,
			      rp.n_steps);
		} else {
			CHECK_STR(rp.run.steps_from, "whole run");
		}
		for (size_t k = 0; k < rp.n_steps; k++) {
			const struct replay_step *s = &rp.steps[k];
			CHECK(s->start <= s->end && (k == 0 || rp.steps[k - 1].start <= s->start), "trial %d step %zu",
			      trial, k);
			if (!strncmp(rp.run.steps_from, "launch period: ", 15))
				CHECK(s->index == k && s->warmup == (k == 0) && s->start >= rp.t_min && s->end <= rp.t_max,
				      "trial %d step %zu", trial, k);
		}
		replay_release(&rp);
	}
	CHECK(found > 300, "periods found in %d soups of 3000", found);
	printf("random soups: a launch period in %d of 3000\n", found);
}

/* ---- reports ---------------------------------------------------------------- */

/* What a report prints in format f. Caller frees. */
/* The report printed in f; CSV's notes, which go to stderr, after a line "[stderr]". */
static char *printed(const struct replay *rp, int which, enum out_format f)
{
	struct report *r = report_new();
	FILE *tmp = tmpfile();
	struct capture c;
	char *s = NULL, *err;
	long n;

	if (!r || !tmp)
		exit(2);
	if (which == 0)
		CHECK(info_run(rp, &(struct info_opts){ 0 }, r) == 0, "info");
	else
		CHECK(steps_run(rp, true, r) == 0, "steps");
	capture_begin(&c, stderr);
	CHECK(report_print(r, f, tmp) == 0, "print");
	err = capture_end(&c);
	n = ftell(tmp);
	rewind(tmp);
	s = calloc(1, (size_t)n + strlen(err) + 16);
	if (!s || (n > 0 && fread(s, 1, (size_t)n, tmp) != (size_t)n))
		exit(2);
	if (f == OUT_CSV)
		sprintf(s + n, "[stderr]\n%s", err);
	free(err);
	fclose(tmp);
	report_free(r);
	return s;
}

/* `info` and `steps` say how the steps were found, in each format; a bundle that does not, nothing. */
static void test_reports(const char *dir)
{
	static const char *const found = "launch period: 7 launches per step, found by replay";
	char path[512], old_path[512];
	struct builder b;
	struct loop lp;
	struct replay rp, old;

	snprintf(path, sizeof(path), "%s/loop.stb", dir);
	snprintf(old_path, sizeof(old_path), "%s/old.stb", dir);
	builder_init(&b);
	CHECK(builder_open(&b, path) == 0, "open");
	b.steps_from = PERIOD_WHOLE_RUN;
	write_loop(&b, &lp, SETUP, BODY - 1);
	CHECK(builder_close(&b, "ok") == 0, "close");
	builder_init(&b);
	CHECK(builder_open(&b, old_path) == 0, "open");
	write_loop(&b, &lp, SETUP, BODY - 1);
	CHECK(builder_close(&b, "ok") == 0, "close");
	if (replay_load(&rp, path, NULL) < 0 || replay_load(&old, old_path, NULL) < 0) {
		CHECK(0, "load");
		return;
	}
	CHECK_STR(rp.run.footer.steps_from, "whole run");
	CHECK_STR(rp.run.steps_from, found);
	CHECK_U64(rp.n_steps, ITERS);
	CHECK_U64(old.n_steps, 1);

	for (int f = OUT_TABLE; f <= OUT_MD; f++) {
		char *info = printed(&rp, 0, f), *steps = printed(&rp, 1, f);
		char *info_old = printed(&old, 0, f), *steps_old = printed(&old, 1, f);
		static const char *const info_line[] = {
			"steps from  launch period: 7 launches per step, found by replay (the recorder's: whole run)",
			"steps from,\"launch period: 7 launches per step, found by replay (the recorder's: whole run)\"",
			"\"Value\": \"launch period: 7 launches per step, found by replay (the recorder's: whole run)\"",
			"| steps from | launch period: 7 launches per step, found by replay (the recorder's: whole run) |",
		};
		static const char *const steps_line[] = {
			"\nsteps from: launch period: 7 launches per step, found by replay\n",
			"\nsteps from: launch period: 7 launches per step, found by replay\n",   /* on stderr */
			"\"steps from: launch period: 7 launches per step, found by replay\"",
			"\n- steps from: launch period: 7 launches per step, found by replay\n",
		};

		CHECK(strstr(info, info_line[f]), "info --format %s:\n%s", out_format_names[f], info);
		CHECK(strstr(steps, steps_line[f]), "steps --format %s:\n%s", out_format_names[f], steps);
		CHECK(!strstr(info_old, "steps from") && !strstr(steps_old, "steps from"),
		      "a bundle that does not say: --format %s", out_format_names[f]);
		/* five steps listed, step 0 as warm-up */
		CHECK(count_lines(steps) > count_lines(steps_old) + 3, "steps --format %s lists the steps",
		      out_format_names[f]);
		free(info);
		free(steps);
		free(info_old);
		free(steps_old);
	}
	replay_release(&rp);
	replay_release(&old);
}

/* ---- bounded on a million launches ----------------------------------------- */

/* CPU seconds of the process (all its threads) since t0: work, which a busy machine does not stretch. */
static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

/*
 * A million launches of one kernel (period 1: a step each), and a million
 * of two kernels in the Thue-Morse order, which holds no cube: no period,
 * and the worst the border search meets. Linear: a few seconds of CPU
 * under the sanitizers; quadratic would be hours.
 */
static void test_million(void)
{
	enum { N = 1000000 };

	for (int order = 0; order < 2; order++) {
		struct builder b;
		struct replay rp;
		struct timespec t0;
		double s;

		builder_init(&b);
		builder_open_replay(&b, &rp);
		b.steps_from = PERIOD_WHOLE_RUN;
		for (uint64_t i = 0; i < N; i++) {
			const char *k = order == 0 || !(__builtin_popcountll(i) & 1) ? "k_even" : "k_odd";
			builder_launch(&b, k, 7, 0, 10 * i, 10 * i + 5, 10 * i + 1, 10 * i + 6);
		}
		builder_step(&b, 0, false, 0, 10ull * N);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
		CHECK(builder_close(&b, NULL) == 0, "build");
		s = seconds_since(&t0);
		if (order == 0) {
			CHECK_STR(rp.run.steps_from, "launch period: 1 launch per step, found by replay");
			CHECK(rp.n_steps == N && rp.steps[N - 1].kernels == 1 && rp.steps[1].start == 10 &&
			      rp.steps[1].end == 20, "period 1: %zu steps", rp.n_steps);
		} else {
			CHECK(rp.n_steps == 1 && !strcmp(rp.run.steps_from, "whole run"), "Thue-Morse: %zu steps",
			      rp.n_steps);
		}
		CHECK(s < 60, "a million launches (%s) took %.1f s of CPU to build", order ? "no period" : "period 1",
		      s);
		printf("a million launches, %s: built in %.2f s of CPU\n", order ? "no period" : "period 1", s);
		replay_release(&rp);
	}
}

int main(void)
{
	char dir[] = "/tmp/st-period-XXXXXX";

	if (!mkdtemp(dir))
		return 1;
	test_suffix();
	test_loop();
	test_cut_inside();
	test_no_period();
	test_graph_calls();
	test_size_classes();
	test_random_soups();
	test_untouched();
	test_reports(dir);
	test_million();
	{
		char cmd[600];
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot remove %s\n", dir);
	}
	return check_done("test_period");
}
