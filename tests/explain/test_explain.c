/*
 * test_explain.c: the dependency graph (graph/) and `steptrace explain`'s
 * numbers (analyze/explain.c) on hand-built steps whose parts, critical
 * paths and predictions are worked out by hand below. Times in us (x1000).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/explain.h"
#include "graph/graph.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

#define US 1000ull

/* g re-timed under the one rule `text` into t. */
static void retime_under(const struct graph *g, const char *text, struct graph_times *t)
{
	struct graph_rule rule;

	CHECK(graph_rule_parse(&rule, text) == 0, "%s", text);
	CHECK(graph_retime(g, &rule, 1, NULL, t) == 0, "%s", text);
	free((char *)rule.pattern);
}

static struct replay_ranks one(const struct replay **rps)
{
	static int64_t zero[1];

	return (struct replay_ranks){ .rank = rps, .n = 1, .offset = zero, .world_size = 1 };
}

/*
 * Launch-bound: ten launches 100 us apart, each call 5 us, its kernel
 * 10 us after the call starts and 30 us long; the step [0, 1000].
 *   compute 10 x 30 = 300; launch-bound: 10 before the first kernel and
 *   9 x 70 between them = 640; other idle: 940..1000 = 60 (no work after).
 *   Critical path: all host: 10 calls of 5 us (50) and the host's work
 *   between and after them (950).
 *   graph: the calls take no time, the kernels follow each other on the
 *   stream from the first launch's latency on: predicted = the GPU's time
 *   from the step's start, 10 + 300 = 310.
 */
static void build_launch_bound(struct replay *rp)
{
	struct builder b;

	builder_init(&b);
	builder_open_replay(&b, rp);
	builder_push(&b, "step", 0);
	for (uint64_t i = 0; i < 10; i++)
		builder_launch(&b, "k", 7, 0, 100 * i * US, (100 * i + 5) * US, (100 * i + 10) * US,
			       (100 * i + 40) * US);
	builder_pop(&b, 1000 * US);
	builder_step(&b, 0, false, 0, 1000 * US);
	CHECK(builder_close(&b, "ok") == 0);
}

static void test_launch_bound(void)
{
	struct replay rp;
	const struct replay *rps[1] = { &rp };
	struct replay_ranks rs = one(rps);
	struct explain_opts o = { 0 };
	struct explain_summary s;
	struct graph g;
	struct graph_times t;

	build_launch_bound(&rp);
	CHECK(graph_build(&g, rps, 1, NULL) == 0);
	CHECK_U64(g.typical[GE_LAUNCH], 10 * US);
	/* every kernel was decided by its launch */
	for (size_t i = 0; i < rp.n_activities; i++) {
		const struct graph_node *n = &g.nodes[g.act_node[0][i]];

		CHECK(n->bind >= 0 && g.edges[n->bind].kind == GE_LAUNCH, "kernel %zu", i);
	}
	/* re-timed as recorded: every time comes back */
	CHECK(graph_retime(&g, NULL, 0, NULL, &t) == 0);
	for (size_t i = 0; i < g.n_nodes; i++) {
		CHECK_U64(t.start[i], g.nodes[i].start);
		CHECK_U64(t.end[i], g.nodes[i].end);
	}
	graph_times_release(&t);
	/* as one CUDA graph: the kernels back to back from 10 us */
	retime_under(&g, "graph", &t);
	CHECK_U64(t.start[g.act_node[0][0]], 10 * US);
	CHECK_U64(t.end[g.act_node[0][9]], 310 * US);
	graph_times_release(&t);
	graph_release(&g);

	CHECK(explain_run(&rs, &o, NULL, &s) == 0);
	CHECK_U64(s.steps, 1);
	CHECK_NEAR(s.measured, 1000 * US, 0);
	CHECK_NEAR(s.replayed, 1000 * US, 0);
	CHECK_NEAR(s.part[EP_COMPUTE], 300 * US, 0);
	CHECK_NEAR(s.part[EP_LAUNCH], 640 * US, 0);
	CHECK_NEAR(s.part[EP_IDLE], 60 * US, 0);
	CHECK_NEAR(s.part[EP_SYNC] + s.part[EP_COMM] + s.part[EP_COPY] + s.part[EP_DATA], 0, 0);
	CHECK(s.n_findings >= 1);
	CHECK(strstr(s.finding[0].title, "launch-bound") != NULL, "%s", s.finding[0].title);
	CHECK_NEAR(s.finding[0].predicted, 310 * US, 0);
	CHECK_NEAR(s.finding[0].saving, 690 * US, 0);
	replay_release(&rp);
}

/*
 * A synchronisation stall: k1 [10, 500] launched by a call [5, 8]; the host
 * waits in cudaStreamSynchronize [20, 505] (.item()); launches k2 with a
 * call [600, 605], the kernel [612, 700]; the step [0, 710].
 *   compute 490 + 88 = 578; launch-bound 10 (before k1); sync stall
 *   500..612 = 112 (k2's launch decided it, right after the host waited);
 *   other idle 700..710 = 10.
 *   no-sync: the wait gone, the synchronisation takes its own 5 us:
 *   [20, 25]; k2's call at 25 + 95 = 120, k2 after k1 on its stream:
 *   [500, 588]; the host's span 230 us, less than the GPU's time from
 *   the step's start: predicted 588.
 */
static void test_sync_stall(void)
{
	struct replay rp;
	const struct replay *rps[1] = { &rp };
	struct replay_ranks rs = one(rps);
	struct explain_opts o = { .rules = { "no-sync", "host=0" }, .n_rules = 2 };
	struct explain_summary s;
	struct builder b;
	struct graph g;
	struct graph_times t;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_push(&b, "step", 0);
	builder_launch(&b, "k1", 7, 0, 5 * US, 8 * US, 10 * US, 500 * US);
	builder_call(&b, "cudaStreamSynchronize", 20 * US, 505 * US);
	builder_launch(&b, "k2", 7, 0, 600 * US, 605 * US, 612 * US, 700 * US);
	builder_pop(&b, 710 * US);
	builder_step(&b, 0, false, 0, 710 * US);
	CHECK(builder_close(&b, "ok") == 0);

	CHECK(graph_build(&g, rps, 1, NULL) == 0);
	{
		const struct graph_node *sync = &g.nodes[g.api_node[0][1]];

		CHECK(sync->sync);
		CHECK(sync->bind_end >= 0 && g.edges[sync->bind_end].kind == GE_SYNC);
		CHECK_U64(sync->own, 5 * US);
	}
	retime_under(&g, "no-sync", &t);
	CHECK_U64(t.end[g.api_node[0][1]], 25 * US);
	CHECK_U64(t.start[g.api_node[0][2]], 120 * US);
	CHECK_U64(t.start[g.act_node[0][1]], 500 * US);
	CHECK_U64(t.end[g.act_node[0][1]], 588 * US);
	graph_times_release(&t);
	graph_release(&g);

	CHECK(explain_run(&rs, &o, NULL, &s) == 0);
	CHECK_NEAR(s.part[EP_COMPUTE], 578 * US, 0);
	CHECK_NEAR(s.part[EP_LAUNCH], 10 * US, 0);
	CHECK_NEAR(s.part[EP_SYNC], 112 * US, 0);
	CHECK_NEAR(s.part[EP_IDLE], 10 * US, 0);
	{
		bool found = false;

		for (size_t i = 0; i < s.n_findings; i++)
			if (strstr(s.finding[i].title, "synchronisations")) {
				found = true;
				CHECK_NEAR(s.finding[i].predicted, 588 * US, 0);
			}
		CHECK(found);
	}
	replay_release(&rp);
}

/*
 * An inferred wait: k1 on stream 1 [0, 100]; k2 on stream 2 launched at
 * [1, 2], started at 103, right after k1: its stream and launch explain
 * 2 + 1 at most, k1's end 100 explains it. kernels:k1=0.5 moves it to 53.
 */
static void test_wait(void)
{
	struct replay rp;
	const struct replay *rps[1] = { &rp };
	struct builder b;
	struct graph g;
	struct graph_times t;
	const struct graph_node *k2;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_launch(&b, "k1", 1, 0, 0, 1 * US, 0, 100 * US);
	builder_launch(&b, "k2", 2, 0, 1 * US, 2 * US, 103 * US, 150 * US);
	builder_step(&b, 0, false, 0, 200 * US);
	CHECK(builder_close(&b, "ok") == 0);
	CHECK(graph_build(&g, rps, 1, NULL) == 0);
	k2 = &g.nodes[g.act_node[0][1]];
	CHECK(k2->bind >= 0 && g.edges[k2->bind].kind == GE_WAIT);
	retime_under(&g, "kernels:k1=0.5", &t);
	CHECK_U64(t.end[g.act_node[0][0]], 50 * US);
	CHECK_U64(t.start[g.act_node[0][1]], 53 * US);
	graph_times_release(&t);
	graph_release(&g);
	replay_release(&rp);
}

/*
 * A polling loop: k [10, 500] launched by a call [5, 8]; cudaStreamQuery
 * not ready at 100, 200, 300, 400, done at [502, 504]; k2's call
 * [510, 515], k2 [520, 600]. The done query follows the launch call (its
 * polls are waits, not the host's work) and k's end: with k halved,
 * k [10, 255], the query at 255 + 2, k2's call at 259 + 6 = 265 and k2 at
 * its launch, 265 + 10.
 */
static void test_poll(void)
{
	struct replay rp;
	const struct replay *rps[1] = { &rp };
	struct builder b;
	struct graph g;
	struct graph_times t;
	int32_t done;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_launch(&b, "k", 7, 0, 5 * US, 8 * US, 10 * US, 500 * US);
	b.status = 600;
	for (uint64_t i = 1; i <= 4; i++)
		builder_call(&b, "cudaStreamQuery", 100 * i * US, (100 * i + 2) * US);
	b.status = 0;
	builder_call(&b, "cudaStreamQuery", 502 * US, 504 * US);
	builder_launch(&b, "k2", 7, 0, 510 * US, 515 * US, 520 * US, 600 * US);
	builder_step(&b, 0, false, 0, 610 * US);
	CHECK(builder_close(&b, "ok") == 0);
	CHECK(graph_build(&g, rps, 1, NULL) == 0);
	done = g.api_node[0][5];
	CHECK(g.nodes[done].poll == g.api_node[0][1], "poll %d", g.nodes[done].poll);
	CHECK(g.nodes[done].bind >= 0 && g.edges[g.nodes[done].bind].kind == GE_SYNC);
	CHECK(graph_retime(&g, NULL, 0, NULL, &t) == 0);
	for (size_t i = 0; i < g.n_nodes; i++)
		CHECK_U64(t.start[i], g.nodes[i].start);
	graph_times_release(&t);
	retime_under(&g, "kernels:k=0.5", &t);
	CHECK_U64(t.end[g.act_node[0][0]], 255 * US);
	CHECK_U64(t.start[done], 257 * US);
	CHECK_U64(t.start[g.api_node[0][6]], 265 * US);
	CHECK_U64(t.start[g.act_node[0][1]], 275 * US);
	graph_times_release(&t);
	graph_release(&g);
	replay_release(&rp);
}

static void test_rules(void)
{
	struct graph_rule r;

	CHECK(graph_rule_parse(&r, "kernels:*gemm*=0.5") == 0 && r.kind == GR_KERNELS && r.factor == 0.5);
	CHECK_STR(r.pattern, "*gemm*");
	free((char *)r.pattern);
	CHECK(graph_rule_parse(&r, "kernels:<10us=0") == 0 && r.below == 10 * US && !r.pattern);
	CHECK(graph_rule_parse(&r, "ranks=8") == 0 && r.kind == GR_RANKS && r.ranks == 8);
	CHECK(graph_rule_parse(&r, "comm-bw=2") == 0 && r.kind == GR_COMM_BW && r.factor == 2);
	CHECK(graph_rule_parse(&r, "no-contention") == 0 && r.kind == GR_NO_CONTENTION);
	fprintf(stderr, "(six error lines expected)\n");
	CHECK(graph_rule_parse(&r, "ranks=1") < 0);
	CHECK(graph_rule_parse(&r, "comm-bw=0") < 0);
	CHECK(graph_rule_parse(&r, "graph=2") < 0);
	CHECK(graph_rule_parse(&r, "host=x") < 0);
	CHECK(graph_rule_parse(&r, "kernels:=2") < 0);
	CHECK(graph_rule_parse(&r, "faster") < 0);
}

/* The all-reduce table: its measured times at its sizes, the ring's factor for other counts of GPUs. */
static void test_table(void)
{
	struct graph_bw_table t;
	char path[] = "/tmp/st-test-allreduce-XXXXXX";
	int fd = mkstemp(path);
	FILE *f = fd >= 0 ? fdopen(fd, "w") : NULL;

	CHECK(f != NULL);
	if (!f)
		return;
	fputs("size,bytes,dtype,ranks,rank,iters,mean_us,min_us,max_us,std_us,algbw_gbs,busbw_gbs,check\n"
	      "1 MiB,1048576,f32,2,0,20,90.0,49.6,197.1,48.6,11.05,11.05,ok\n"
	      "1 MiB,1048576,f32,2,all,20,100.0,49.7,197.1,51.7,10.49,10.49,ok\n"
	      "16 MiB,16777216,f32,2,all,20,400.0,86.3,90.0,1.0,41.9,41.9,ok\n", f);
	fclose(f);
	CHECK(graph_bw_table_load(&t, path) == 0);
	CHECK_U64(t.n, 2);   /* the "all" rows alone */
	CHECK_U64(t.ranks, 2);
	CHECK_NEAR(graph_bw_table_time(&t, 1048576, 2), 100e-6, 1e-9);
	CHECK_NEAR(graph_bw_table_time(&t, 16777216, 2), 400e-6, 1e-9);
	CHECK_NEAR(graph_bw_table_time(&t, 4194304, 2), 200e-6, 1e-9);   /* halfway in log size and log time */
	CHECK_NEAR(graph_bw_table_time(&t, 1024, 2), 100e-6, 1e-9);      /* below: the smallest's latency */
	CHECK_NEAR(graph_bw_table_time(&t, 1048576, 8), 175e-6, 1e-9);   /* 2·7/8 over 2·1/2 */
	graph_bw_table_release(&t);
	unlink(path);
}

/*
 * Computation beside communication: "gemm" alone [10, 110] and
 * [120, 220]; then [230, 430] while an all-reduce (an NCCL kernel on a
 * stream of its own, no launch recorded, [200, 500]) runs: 200 us against
 * the 100 of its twins alone; then [430, 530] (launched at 226, queued
 * behind it), also beside it but no longer than alone; the host waits for
 * it (a synchronisation [230, 535]), the step [0, 540]. graph_contention:
 * the third at 100/200, the rest 1; two kernels beside the collective.
 * no-contention: the third [230, 330], the fourth [330, 430], the
 * synchronisation's return at 435, the step's end 440; the all-reduce
 * still ends at 500: predicted 500, a saving of 40 us. explain: 100 us of
 * 540 slowed (over the 2% threshold) -> the finding.
 */
static void test_contention(void)
{
	struct replay rp;
	const struct replay *rps[1] = { &rp };
	struct replay_ranks rs = one(rps);
	struct explain_opts o = { 0 };
	struct explain_summary s;
	struct builder b;
	struct graph g;
	struct graph_times t;
	double *f;
	bool found = false;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	builder_push(&b, "step", 0);
	builder_launch(&b, "gemm", 7, 0, 0, 5 * US, 10 * US, 110 * US);
	builder_launch(&b, "gemm", 7, 0, 110 * US, 115 * US, 120 * US, 220 * US);
	builder_launch(&b, "gemm", 7, 0, 220 * US, 225 * US, 230 * US, 430 * US);
	builder_kernel(&b, "ncclDevKernel_AllReduce_Sum_f32_RING_LL", 0, 9, 0, 200 * US, 500 * US);
	builder_launch(&b, "gemm", 7, 0, 226 * US, 229 * US, 430 * US, 530 * US);
	builder_call(&b, "cudaStreamSynchronize", 230 * US, 535 * US);
	builder_pop(&b, 540 * US);
	builder_step(&b, 0, false, 0, 540 * US);
	CHECK(builder_close(&b, "ok") == 0);
	CHECK(graph_build(&g, rps, 1, NULL) == 0);
	f = malloc(g.n_nodes * sizeof(double));
	CHECK(f != NULL);
	if (!f)
		return;
	CHECK(graph_contention(&g, f) == 2);
	/* activities in start order: gemm, gemm, the all-reduce, the slowed gemm, gemm */
	for (size_t i = 0; i < rp.n_activities; i++)
		CHECK_NEAR(f[g.act_node[0][i]], i == 3 ? 0.5 : 1, 1e-12);
	free(f);
	retime_under(&g, "no-contention", &t);
	CHECK_U64(t.start[g.act_node[0][3]], 230 * US);
	CHECK_U64(t.end[g.act_node[0][3]], 330 * US);
	CHECK_U64(t.end[g.act_node[0][4]], 430 * US);
	CHECK_U64(t.end[g.api_node[0][4]], 435 * US);
	CHECK_U64(t.end[g.act_node[0][0]], 110 * US);
	graph_times_release(&t);
	graph_release(&g);

	CHECK(explain_run(&rs, &o, NULL, &s) == 0);
	for (size_t i = 0; i < s.n_findings; i++)
		if (strstr(s.finding[i].title, "beside communication")) {
			found = true;
			CHECK(strstr(s.finding[i].evidence, "2 kernels per step") == NULL);   /* only the slowed one */
			CHECK(strstr(s.finding[i].evidence, "1 kernels per step started while a collective ran and "
						"took 0.100 ms longer (2.00x)") != NULL, "%s", s.finding[i].evidence);
			CHECK_NEAR(s.finding[i].predicted, 500 * US, 0);
			CHECK_NEAR(s.finding[i].saving, 40 * US, 0);
		}
	CHECK(found, "no contention finding");
	replay_release(&rp);
}

/* Whether explain's steps table (and its notes) name `name`. */
static bool steps_column(const struct replay_ranks *rs, const char *name)
{
	struct explain_opts o = { 0 };
	struct report *r = report_new();
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool found;

	CHECK(explain_run(rs, &o, r, NULL) == 0);
	CHECK(report_keep_table(r, "steps") == 0);
	report_print(r, OUT_TABLE, f);
	fclose(f);
	found = buf && strstr(buf, name) != NULL;
	free(buf);
	report_free(r);
	return found;
}

/*
 * The typical replay's host work per step (graph_retime_typical): a
 * warm-up step and five counted ones, 1000 us each, each four launches of
 * 5 us calls (kernels of 10 us, 10 us after their call): host-bound. The
 * host works 100 us after each of the first three calls, except 400 us
 * after one of them, a different one step after step (after call 1, 2, 0,
 * 1, 2: each place's median is 100); then until the next step's first
 * call (380 us; 680 after the warm-up). Each step's host work between
 * calls adds up to 980 us (1280 in the first counted step): their medians
 * by place (380 + 3 x 100 = 680) would make every step 700 us long; at the
 * steps' median total, 980 us spread over the pieces by their medians,
 * each step is 1000 us again, and the 400 us piece of a step is no longer
 * its own (100 x 980/680 like the others).
 */
static void test_typical_totals(void)
{
	struct replay rp;
	const struct replay *rps[1] = { &rp };
	struct graph g;
	struct graph_times t;
	struct graph_typical info;
	struct builder b;
	uint64_t gap[6][3];

	builder_init(&b);
	builder_open_replay(&b, &rp);
	for (uint64_t s = 0; s < 6; s++) {
		uint64_t at = 1000 * s * US;

		for (int k = 0; k < 3; k++)
			gap[s][k] = s && (s % 3) == (uint64_t)(k + 2) % 3 ? 400 * US : 100 * US;
		builder_push(&b, "step", at);
		for (int k = 0; k < 4; k++) {
			builder_launch(&b, "k", 7, 0, at, at + 5 * US, at + 10 * US, at + 20 * US);
			at += 5 * US + (k < 3 ? gap[s][k] : 0);
		}
		builder_pop(&b, 1000 * (s + 1) * US);
		builder_step(&b, (uint32_t)s, s == 0, 1000 * s * US, 1000 * (s + 1) * US);
	}
	CHECK(builder_close(&b, "ok") == 0);
	CHECK(graph_build(&g, rps, 1, NULL) == 0);
	g.pin = 1000 * US;
	CHECK(graph_retime_typical(&g, NULL, 0, NULL, &t, &info) == 0);
	CHECK(!info.skipped);
	{
		int32_t first2 = g.api_node[0][4 * 2], first5 = g.api_node[0][4 * 5];
		int32_t c0 = g.api_node[0][4 * 3], c1 = g.api_node[0][4 * 3 + 1];

		/* steps 2, 3 and 4 from one first call to the next: 3 x 1000 us */
		CHECK_NEAR((double)(t.start[first5] - t.start[first2]), 3000.0 * US, 1e-5);
		/* step 3's 400 us piece after its first call: its place's median, scaled */
		CHECK_NEAR((double)(t.start[c1] - t.end[c0]), 100.0 * 980 / 680 * US, 1e-5);
	}
	graph_times_release(&t);
	graph_release(&g);
	replay_release(&rp);
}

/*
 * A bundle of kernels and no API call (an armed window recorded before
 * 2026-11-29): explain says the host is not in it, and one with calls
 * does not.
 */
static void test_no_calls_note(void)
{
	for (int calls = 0; calls < 2; calls++) {
		struct replay rp;
		const struct replay *rps[1] = { &rp };
		int64_t offset[1] = { 0 };
		struct replay_ranks rs = { .rank = rps, .n = 1, .offset = offset, .world_size = 1 };
		struct builder b;

		builder_init(&b);
		builder_open_replay(&b, &rp);
		for (uint64_t s = 0; s < 3; s++) {
			uint64_t at = 1000 * s * US;

			builder_push(&b, "step", at);
			if (calls)
				builder_launch(&b, "k", 7, 0, at, at + 5 * US, at + 10 * US, at + 500 * US);
			else
				builder_kernel(&b, "k", s + 1, 7, 0, at + 10 * US, at + 500 * US);
			builder_pop(&b, at + 1000 * US);
			builder_step(&b, (uint32_t)s, s == 0, at, at + 1000 * US);
		}
		CHECK(builder_close(&b, "ok") == 0);
		CHECK(steps_column(&rs, "the bundle holds no API calls (3 kernels") == !calls, "calls %d", calls);
		replay_release(&rp);
	}
}

/*
 * The typical replay's kernels by their range path too: a GPU-bound step
 * (three launches at its start) of one kernel at one grid under three
 * ranges, "a" and "b" 45 us, "c" 162 us (as cuBLAS's Kernel2 runs the
 * FP32 step's dW products of different sizes at one grid), four counted
 * steps. By name and shape alone every instance would take the median of
 * 45, 45 and 162 (45): steps of 135 us of kernels instead of 252. By its
 * range path each takes its own place's median: the step replays as
 * measured, and the note counts every kernel at the finest key.
 */
static void test_typical_kernels_by_range(void)
{
	static const char *const names[3] = { "a", "b", "c" };
	static const uint64_t dur[3] = { 45, 45, 162 };
	struct replay rp;
	const struct replay *rps[1] = { &rp };
	struct graph g;
	struct graph_times t;
	struct graph_typical info;
	struct builder b;

	builder_init(&b);
	builder_open_replay(&b, &rp);
	for (uint64_t s = 0; s < 5; s++) {
		uint64_t at = 1000 * s * US, gpu = at + 20 * US;

		builder_push(&b, "step", at);
		for (int k = 0; k < 3; k++) {
			builder_push(&b, names[k], at + 5 * US * (uint64_t)k);
			builder_launch(&b, "Kernel2", 7, 0, at + 5 * US * (uint64_t)k, at + 5 * US * (uint64_t)k + 3 * US,
				       gpu, gpu + dur[k] * US);
			builder_pop(&b, at + 5 * US * (uint64_t)k + 4 * US);
			gpu += dur[k] * US + 1 * US;
		}
		builder_pop(&b, at + 300 * US);
		builder_step(&b, (uint32_t)s, s == 0, at, at + 300 * US);
	}
	CHECK(builder_close(&b, "ok") == 0);
	CHECK(graph_build(&g, rps, 1, NULL) == 0);
	g.pin = 1000 * US;
	CHECK(graph_retime_typical(&g, NULL, 0, NULL, &t, &info) == 0);
	CHECK(!info.skipped);
	for (uint64_t s = 1; s < 5; s++) {
		/* the step's third kernel ends where it did: 20 + 45 + 1 + 45 + 1 + 162 us into the step */
		int32_t last = g.act_node[0][0];
		uint64_t end = 0;

		for (size_t i = 0; i < rp.n_activities; i++)
			if (rp.activities[i].step == (int32_t)s && g.nodes[g.act_node[0][i]].end > end) {
				last = g.act_node[0][i];
				end = g.nodes[last].end;
			}
		CHECK_NEAR((double)(t.end[last] - t.start[last]), 162.0 * US, 1e-9);
		CHECK_NEAR((double)t.end[last] - (double)(1000 * s * US), 274.0 * US, 0.01);
	}
	CHECK_U64(info.gpu[1], 12);   /* the 4 counted steps' 12 kernels, each by name, shape and range */
	graph_times_release(&t);
	graph_release(&g);
	replay_release(&rp);
}

/* The launch-bound step of test_unrecorded (a launch every 100 us in a 1 ms step), its cost event on b->thread. */
static void launch_bound_costed(struct builder *b, const struct builder_cost *cost)
{
	builder_push(b, "step", 0);
	for (uint64_t i = 0; i < 10; i++)
		builder_launch(b, "k", 7, 0, 100 * i * US, (100 * i + 5) * US, (100 * i + 10) * US,
			       (100 * i + 40) * US);
	builder_pop(b, 1000 * US);
	builder_step(b, 0, false, 0, 1000 * US);
	builder_cost(b, 0, 1000 * US, cost);
}

/*
 * The step without the recorder (format 1.8: cost events; the rule
 * "unrecorded"). On the launch-bound step above (calls every 100 us, 5 us
 * each, the last ending at 905, the step ending at 1000: 9 x 95 + 95 =
 * 950 us of host work between its calls and after the last), the recorder
 * spent 300 us on the step's thread: the unrecorded step is 1000 - 300 =
 * 700 us, every piece of host work x 650/950. Spent on a thread that made
 * no call, it moves nothing. More than the host worked (1200 us): the
 * host's work all gone, the step no shorter than the GPU's time in it
 * (its kernels back to back as launched, 10 to 670 us... here the calls
 * alone, 50 us, then the kernels: first at 10 us, last ending at 300 us,
 * the GPU's floor). A GPU-bound step (ten 200 us kernels launched 10 us
 * apart, a synchronisation waiting for the last): the recorder's 50 us of
 * host work leave it as it was. Without cost events, no column.
 */
static void test_unrecorded(void)
{
	struct replay rp, gpu;
	const struct replay *rps[1] = { &rp }, *gps[1] = { &gpu };
	struct replay_ranks rs = one(rps), gs = one(gps);
	struct explain_opts o = { 0 };
	struct explain_summary s;
	struct builder b;
	struct builder_cost cost = { .callback_ns = 50 * US, .nvtx_ns = 100 * US, .python_ns = 150 * US,
				     .launches = 10, .ranges = 20, .modules = 4 };

	/* no cost events: as before, and no column */
	build_launch_bound(&rp);
	CHECK(explain_run(&rs, &o, NULL, &s) == 0);
	CHECK_NEAR(s.recorder, 0, 0);
	CHECK_NEAR(s.unrecorded, 0, 0);
	CHECK(!steps_column(&rs, "Unrecorded"), "a bundle without cost events has an Unrecorded column");
	replay_release(&rp);

	/* 300 us on the step's thread */
	builder_init(&b);
	builder_open_replay(&b, &rp);
	launch_bound_costed(&b, &cost);
	b.thread = 2;   /* a thread without calls: nothing to take it from */
	builder_cost(&b, 0, 1000 * US, &cost);
	CHECK(builder_close(&b, "ok") == 0);
	CHECK(explain_run(&rs, &o, NULL, &s) == 0);
	CHECK_NEAR(s.measured, 1000 * US, 0);
	CHECK_NEAR(s.recorder, 600 * US, 0);   /* both threads' */
	CHECK_NEAR(s.unrecorded, 700 * US, 1);
	CHECK(steps_column(&rs, "Unrecorded"), "no Unrecorded column");
	{
		struct graph g;
		struct graph_times t;

		CHECK(graph_build(&g, rps, 1, NULL) == 0);
		retime_under(&g, "unrecorded", &t);
		CHECK_U64(t.recorder_ns, 600 * US);
		CHECK_U64(t.taken_ns, 300 * US);
		CHECK_U64(t.start[g.api_node[0][9]], 9 * 5 * US + 9 * 65 * US);   /* 95 us gaps, x 650/950 */
		graph_times_release(&t);
		graph_release(&g);
	}
	replay_release(&rp);

	/*
	 * (1.10) CUPTI's cost per launch measured in the process, 15 us (128
	 * launches: 2,560 us traced, 640 us untraced a batch): the step thread's
	 * 10 launches add 150 us to its 300, so the step is 1000 - 450 = 550 us.
	 * A cost not above its untraced time, or absurd per launch, is not used.
	 */
	for (int k = 0; k < 3; k++) {
		builder_init(&b);
		builder_open_replay(&b, &rp);
		b.launch_cost = (struct st_launch_cost){ .launches = 128, .rounds = 9, .traced_ns = 2560 * US,
							 .untraced_ns = 640 * US };
		if (k == 1)
			b.launch_cost.traced_ns = 600 * US;            /* not above untraced: none */
		if (k == 2)
			b.launch_cost.traced_ns = UINT64_MAX;          /* hostile: over the bound */
		launch_bound_costed(&b, &cost);
		CHECK(builder_close(&b, "ok") == 0);
		CHECK(explain_run(&rs, &o, NULL, &s) == 0);
		CHECK_NEAR(replay_launch_cost_ns(&rp.run), k ? 0 : 15 * US, 1e-6);
		CHECK_NEAR(s.recorder, k ? 300 * US : 450 * US, 0);
		CHECK_NEAR(s.unrecorded, k ? 700 * US : 550 * US, 1);
		replay_release(&rp);
	}

	/* more than the host worked: its work all gone, the GPU's time left */
	cost = (struct builder_cost){ .python_ns = 1200 * US };
	builder_init(&b);
	builder_open_replay(&b, &rp);
	for (uint64_t i = 0; i < 10; i++)
		builder_launch(&b, "k", 7, 0, 100 * i * US, (100 * i + 5) * US, (100 * i + 10) * US,
			       (100 * i + 40) * US);
	builder_step(&b, 0, false, 0, 1000 * US);
	builder_cost(&b, 0, 1000 * US, &cost);
	CHECK(builder_close(&b, "ok") == 0);
	CHECK(explain_run(&rs, &o, NULL, &s) == 0);
	CHECK_NEAR(s.unrecorded, 300 * US, 1);
	replay_release(&rp);

	/* GPU-bound: as recorded */
	cost = (struct builder_cost){ .callback_ns = 20 * US, .hook_ns = 30 * US };
	builder_init(&b);
	builder_open_replay(&b, &gpu);
	for (uint64_t i = 0; i < 10; i++)
		builder_launch(&b, "k", 7, 0, 10 * i * US, (10 * i + 5) * US, (10 + 200 * i) * US,
			       (10 + 200 * (i + 1)) * US);
	builder_call(&b, "cudaStreamSynchronize", 100 * US, 2015 * US);
	builder_step(&b, 0, false, 0, 2020 * US);
	builder_cost(&b, 0, 2020 * US, &cost);
	CHECK(builder_close(&b, "ok") == 0);
	CHECK(explain_run(&gs, &o, NULL, &s) == 0);
	CHECK_NEAR(s.measured, 2020 * US, 0);
	CHECK(s.unrecorded >= 2000 * US && s.unrecorded <= 2020 * US, "GPU-bound step unrecorded: %.0f ns",
	      s.unrecorded);
	replay_release(&gpu);
}

int main(void)
{
	test_table();
	test_launch_bound();
	test_sync_stall();
	test_wait();
	test_poll();
	test_rules();
	test_contention();
	test_unrecorded();
	test_typical_totals();
	test_typical_kernels_by_range();
	test_no_calls_note();
	return check_done("explain");
}
