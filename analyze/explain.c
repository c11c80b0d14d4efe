/*
 * explain.c: `steptrace explain` (explain.h): the step's time split into
 * parts, findings ranked by the saving the re-timed graph predicts, and
 * what-if predictions; the critical path is explain_path.c's. The parts,
 * the predictions, the findings and the report stay in one file: they
 * share one private context (struct ctx: the graph, rank 0's segments and
 * their running sums, the counted steps), and every finding re-times the
 * graph through predict() with rules of its own (graph/retime.c).
 */
#include "analyze/explain.h"
#include "analyze/whatif.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/common.h"
#include "analyze/explain_path.h"
#include "lib/error.h"
#include "lib/grow.h"
#include "lib/human.h"
#include "lib/stats.h"
#include "replay/memory.h"

const char *const explain_part_names[EP_COUNT] = {
	"compute", "exposed comm", "copies", "launch-bound", "sync stall", "data loading", "other idle",
};

/* A stretch of one rank's GPU time in one state. */
struct seg {
	uint64_t a, b;
	uint8_t part;                  /* enum explain_part */
};

struct ctx {
	const struct replay_ranks *rs;
	const struct explain_opts *o;
	struct graph g;
	const struct replay *rp;       /* rank 0 */
	uint8_t *path_phase;           /* rank 0's paths' phases */
	struct seg *segs;              /* rank 0's GPU time, in order, contiguous */
	size_t n_segs;
	double *cum;                   /* cum[p * (n_segs + 1) + i]: part p's time in segs[0 .. i) */
	int32_t *next_busy, *prev_busy;   /* per seg: the first busy seg at or after it, the last at or before; -1 */
	const struct replay_step *steps;   /* rank 0's, or `whole` when it has none */
	size_t n_steps;
	struct replay_step whole;      /* the whole run as one step, for a bundle without steps */
	uint32_t *meas;                /* the steps counted (measured, or all with --include-warmup) */
	size_t n_meas;
	double (*part)[EP_COUNT];      /* per step of rank 0 */
	uint64_t *idle_edge;           /* per step: idle at its start + at its end */
	double measured, replayed;
	double gpu_slack;              /* how far the recorded GPU time per step (gpu_floor) exceeds `measured` */
	/*
	 * The predicted window: from the first counted step's start (the graph's
	 * pin, graph.h) to the last's end, less what that span exceeded the sum
	 * of the counted steps by as recorded (gaps between steps): a monotone
	 * function of the re-timed graph, where a sum of per-step spans is not.
	 */
	size_t last_step;              /* the counted step that ends last */
	double span_extra;             /* ns per counted step */
	uint64_t *replayed_step;       /* per step */
	/* the typical replay (graph_retime_typical): per step, its mean, its error against the measured steps */
	uint64_t *typical_step;
	double typical, typical_err_mean, typical_err_max;   /* ns; |%| per counted step */
	double spread;                 /* the counted steps' mean |difference| from their mean, % of it: the noise */
	struct graph_typical typ;
	/* the recorder's own time (format 1.8), when rank 0's bundle has it */
	bool has_cost;
	struct replay_cost *step_cost; /* per step: its records summed */
	uint64_t *unrecorded_step;     /* per step: re-timed under "unrecorded", at least its GPU's time */
	double recorder, unrecorded;   /* means over the counted steps */
	uint64_t recorder_ns, taken_ns;   /* the run's recorder time, and what of it found host work to leave */
	double busy_unrecorded;        /* the GPU's span less its slack under "unrecorded", ns */
	double unrecorded_median;      /* the Unrecorded column's median over the counted steps, ns */
	/* an armed window's calibration (unrecorded_calibrate): ns added per launch, 0 none; the median before */
	double calibrated_ns, calibrated_from;
};

static double mean_of(const struct ctx *c, const double *v)
{
	double sum = 0;

	for (size_t i = 0; i < c->n_meas; i++)
		sum += v[c->meas[i]];
	return c->n_meas ? sum / (double)c->n_meas : 0;
}

/* The step of an activity: its own, or the whole run's (0) when the run has no steps. */
static int32_t act_step(const struct ctx *c, const struct replay_activity *a)
{
	return c->steps == &c->whole ? 0 : a->step;
}

/* ---- the parts ------------------------------------------------------- */

struct edge_ev {
	uint64_t t;
	int8_t delta;
	uint8_t work;
};

static int cmp_ev(const void *x, const void *y)
{
	const struct edge_ev *a = x, *b = y;

	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return (a->delta > b->delta) - (a->delta < b->delta);   /* ends first: no empty segments */
}

/* The first rank-0 activity starting at or after t, as its node; -1 none. */
static int32_t next_activity(const struct ctx *c, uint64_t t)
{
	size_t lo = 0, hi = c->rp->n_activities;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (c->g.nodes[c->g.act_node[0][mid]].start < t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < c->rp->n_activities ? c->g.act_node[0][lo] : -1;
}

/* Why the GPU was idle over [a, b): what decided when the work after it started. */
static uint8_t idle_part(const struct ctx *c, uint64_t a, uint64_t b)
{
	int32_t x = next_activity(c, b);
	const struct graph_node *n;
	const struct graph_edge *e;
	const struct replay_activity *act;
	const struct replay_api *api;
	const struct replay_thread *th;

	if (x < 0)
		return EP_IDLE;
	n = &c->g.nodes[x];
	if (n->bind < 0)
		return EP_IDLE;
	e = &c->g.edges[n->bind];
	if (e->kind != GE_LAUNCH)
		return EP_IDLE;
	act = &c->rp->activities[n->index];
	api = &c->rp->apis[c->g.nodes[e->from].index];
	if (act->kind == ST_MEMCPY && act->detail < c->rp->n_copies && c->rp->copies[act->detail].copy_kind == 1)
		return EP_DATA;   /* CUPTI_ACTIVITY_MEMCPY_KIND_HTOD */
	if (api->range >= 0 && (size_t)api->range < c->rp->n_ranges &&
	    c->path_phase[c->rp->ranges[api->range].path] == ST_PHASE_DATA)
		return EP_DATA;
	th = graph_thread(c->rp, api->thread);
	if (th) {
		/* the launching call's place on its thread, then back while calls end within the gap */
		size_t lo = 0, hi = th->n_apis;
		int looked = 0;

		while (lo < hi) {
			size_t mid = (lo + hi) / 2;

			if (c->rp->apis[th->apis[mid]].start < api->start)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k-- > 0 && looked < 256; looked++) {
			const struct graph_node *s = &c->g.nodes[c->g.api_node[0][th->apis[k]]];

			if (s->end + 1000 < a)
				break;
			if (s->sync)
				return EP_SYNC;
		}
	}
	return EP_LAUNCH;
}

static int build_segments(struct ctx *c)
{
	size_t n = c->rp->n_activities, alloc = 0, cnt[4] = { 0 };
	struct edge_ev *ev = malloc((2 * n + 1) * sizeof(*ev));
	uint64_t at = 0;

	if (!ev)
		return error("out of memory");
	for (size_t i = 0; i < n; i++) {
		const struct graph_node *x = &c->g.nodes[c->g.act_node[0][i]];

		ev[2 * i] = (struct edge_ev){ x->start, +1, x->work };
		ev[2 * i + 1] = (struct edge_ev){ x->end, -1, x->work };
	}
	qsort(ev, 2 * n, sizeof(*ev), cmp_ev);
	for (size_t i = 0; i < 2 * n; i++) {
		uint8_t part = cnt[GW_KERNEL] ? EP_COMPUTE : cnt[GW_COMM] ? EP_COMM : cnt[GW_COPY] ? EP_COPY : EP_IDLE;

		if (i > 0 && ev[i].t > at) {
			if (part == EP_IDLE)
				part = idle_part(c, at, ev[i].t);
			if (c->n_segs && c->segs[c->n_segs - 1].part == part && c->segs[c->n_segs - 1].b == at) {
				c->segs[c->n_segs - 1].b = ev[i].t;
			} else {
				if (ALLOC_GROW(c->segs, c->n_segs + 1, alloc) < 0) {
					free(ev);
					return -1;
				}
				c->segs[c->n_segs++] = (struct seg){ at, ev[i].t, part };
			}
		}
		at = ev[i].t;
		if (ev[i].delta > 0)
			cnt[ev[i].work]++;
		else if (cnt[ev[i].work])
			cnt[ev[i].work]--;
	}
	free(ev);
	/* prefix sums, so that a step's parts cost O(log n) however steps overlap */
	c->cum = calloc(EP_COUNT * (c->n_segs + 1), sizeof(double));
	c->next_busy = malloc((c->n_segs + 1) * sizeof(int32_t));
	c->prev_busy = malloc((c->n_segs + 1) * sizeof(int32_t));
	if (!c->cum || !c->next_busy || !c->prev_busy)
		return error("out of memory");
	for (size_t i = 0; i < c->n_segs; i++)
		for (int p = 0; p < EP_COUNT; p++)
			c->cum[p * (c->n_segs + 1) + i + 1] = c->cum[p * (c->n_segs + 1) + i] +
				(c->segs[i].part == p ? (double)(c->segs[i].b - c->segs[i].a) : 0);
	for (size_t i = 0, last = (size_t)-1; i < c->n_segs; i++) {
		if (c->segs[i].part <= EP_COPY)
			last = i;
		c->prev_busy[i] = last == (size_t)-1 ? -1 : (int32_t)last;
	}
	for (size_t i = c->n_segs, next = (size_t)-1; i-- > 0;) {
		if (c->segs[i].part <= EP_COPY)
			next = i;
		c->next_busy[i] = next == (size_t)-1 ? -1 : (int32_t)next;
	}
	return 0;
}

/* Adds [S, E)'s parts into part[]; idle at its start and end into *edge. O(log n). */
static void window_parts(const struct ctx *c, uint64_t S, uint64_t E, double *part, uint64_t *edge)
{
	size_t lo = 0, hi = c->n_segs, end, n1 = c->n_segs + 1;
	uint64_t first_busy = E, last_busy = S;

	*edge = E - S;
	while (lo < hi) {   /* the first segment ending after S */
		size_t mid = (lo + hi) / 2;

		if (c->segs[mid].b <= S)
			lo = mid + 1;
		else
			hi = mid;
	}
	end = lo;
	hi = c->n_segs;
	while (end < hi) {   /* the first segment starting at or after E */
		size_t mid = (end + hi) / 2;

		if (c->segs[mid].a < E)
			end = mid + 1;
		else
			hi = mid;
	}
	if (lo >= end) {
		part[idle_part(c, S, E)] += (double)(E - S);
		return;
	}
	if (c->segs[lo].a > S)
		part[idle_part(c, S, c->segs[lo].a)] += (double)(c->segs[lo].a - S);   /* before the run's first work */
	for (int p = 0; p < EP_COUNT; p++)
		part[p] += c->cum[p * n1 + end] - c->cum[p * n1 + lo];
	/* the first and last segments, cut to the window */
	if (c->segs[lo].a < S)
		part[c->segs[lo].part] -= (double)(S - c->segs[lo].a);
	if (c->segs[end - 1].b > E)
		part[c->segs[end - 1].part] -= (double)(c->segs[end - 1].b - E);
	if (c->segs[end - 1].b < E)
		part[idle_part(c, c->segs[end - 1].b, E)] += (double)(E - c->segs[end - 1].b);
	if (c->next_busy[lo] >= 0 && (size_t)c->next_busy[lo] < end) {
		const struct seg *f = &c->segs[c->next_busy[lo]], *l = &c->segs[c->prev_busy[end - 1]];

		first_busy = f->a > S ? f->a : S;
		last_busy = l->b < E ? l->b : E;
		*edge = (first_busy - S) + (E - last_busy);
	}
}

/* ---- steps ------------------------------------------------------------ */

static uint64_t step_pred(const struct ctx *c, const struct graph_times *t, size_t s, double host)
{
	const struct replay_step *st = &c->steps[s];
	uint64_t a = graph_instant(&c->g, t, 0, st->thread, st->start, host);
	uint64_t b = graph_instant(&c->g, t, 0, st->thread, st->end, host);

	return b > a ? b - a : 0;
}

/*
 * The GPU's time per counted step as re-timed: from the window's start (the
 * pin) to the last end of their work, over their number (what the steps
 * take once the GPU is the bottleneck, its idle gaps included). Measured
 * from the pin, not from their first work's start: a rule that moves that
 * work earlier must not lengthen the prediction.
 */
static double gpu_span(const struct ctx *c, const struct graph_times *t)
{
	const struct replay *rp = c->rp;
	uint8_t *counted = calloc(c->n_steps + 1, 1);
	uint64_t last = 0;

	if (!counted)
		return 0;
	for (size_t i = 0; i < c->n_meas; i++)
		counted[c->meas[i]] = 1;
	for (size_t i = 0; i < rp->n_activities; i++)
		if (act_step(c, &rp->activities[i]) >= 0 && counted[act_step(c, &rp->activities[i])]) {
			int32_t k = c->g.act_node[0][i];

			if (t->end[k] > last)
				last = t->end[k];
		}
	free(counted);
	return c->n_meas && last > c->g.pin ? (double)(last - c->g.pin) / (double)c->n_meas : 0;
}

/* The counted steps' host span as re-timed, per step: the window's end less its start, less the recorded gaps. */
static double window_span(const struct ctx *c, const struct graph_times *t, double host)
{
	const struct replay_step *st = &c->steps[c->last_step];
	uint64_t b = graph_instant(&c->g, t, 0, st->thread, st->end, host);
	double span = c->n_meas && b > c->g.pin ? (double)(b - c->g.pin) / (double)c->n_meas - c->span_extra : 0;

	return span > 0 ? span : 0;
}

/*
 * Each step's GPU time as re-timed: from its work's first start to its last
 * end, less what that exceeded the step by as recorded (floor[s], ns).
 */
static void step_floors(const struct ctx *c, const struct graph_times *t, double *floor)
{
	const struct replay *rp = c->rp;
	uint64_t *lo = malloc(4 * (c->n_steps + 1) * sizeof(uint64_t));

	for (size_t s = 0; s < c->n_steps; s++)
		floor[s] = 0;
	if (!lo)
		return;   /* out of memory: no floors, the means' still stands */
	for (size_t s = 0; s < c->n_steps; s++) {
		lo[4 * s] = lo[4 * s + 2] = UINT64_MAX;
		lo[4 * s + 1] = lo[4 * s + 3] = 0;
	}
	for (size_t i = 0; i < rp->n_activities; i++) {
		int32_t s = act_step(c, &rp->activities[i]), k = c->g.act_node[0][i];
		uint64_t *v;

		if (s < 0)
			continue;
		v = &lo[4 * s];
		if (t->start[k] < v[0]) v[0] = t->start[k];
		if (t->end[k] > v[1]) v[1] = t->end[k];
		if (c->g.nodes[k].start < v[2]) v[2] = c->g.nodes[k].start;
		if (c->g.nodes[k].end > v[3]) v[3] = c->g.nodes[k].end;
	}
	for (size_t s = 0; s < c->n_steps; s++) {
		const uint64_t *v = &lo[4 * s];
		double wall = (double)(c->steps[s].end - c->steps[s].start), slack;

		if (v[1] <= v[0])
			continue;
		slack = (double)(v[3] - v[2]) > wall ? (double)(v[3] - v[2]) - wall : 0;
		floor[s] = (double)(v[1] - v[0]) > slack ? (double)(v[1] - v[0]) - slack : 0;
	}
	free(lo);
}

/* A prediction: the mean counted step, and its interval (ns). */
struct prediction {
	double mean, lo, hi;
};

/* The q-quantile of v[0 .. n) (sorted), interpolated between ranks. */
static double quantile(const double *v, size_t n, double q)
{
	double at = q * (double)(n - 1);
	size_t i = (size_t)at;

	return i + 1 < n ? v[i] + (at - (double)i) * (v[i + 1] - v[i]) : v[n - 1];
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;

	return (a > b) - (a < b);
}

/*
 * The interval of a prediction `mean` from the re-timed graph t: each
 * counted step predicted on its own, as the window is (window_span,
 * gpu_span) but from the step before's end: the later of its host end and
 * of the last end of its and earlier steps' work, less the earlier's
 * (the first from the pin); their spread about their mean, as a share of
 * it, from the 10th to the 90th percentile, applied to `mean`; widened by
 * the rules' own calibration errors (graph_rule.error, relative) and the
 * model's error on this very run (the typical replay against the measured
 * steps, typical_steps), combined as independent: the root of their
 * squares. Always lo <= mean <= hi.
 */
static void interval(const struct ctx *c, const struct graph_times *t, const struct graph_rule *rules, size_t n,
		     double host, struct prediction *p)
{
	const struct replay *rp = c->rp;
	uint64_t *gpu_end = calloc(c->n_steps + 1, sizeof(uint64_t));
	double *d = malloc((c->n_meas + 1) * sizeof(double));
	double sum = 0, err = 0, qlo = 0, qhi = 0;

	for (size_t i = 0; i < n; i++)
		err += rules[i].error * rules[i].error;
	if (c->measured > 0 && c->typical > 0)   /* the model's own error on this run (typical_steps) */
		err += (c->typical - c->measured) * (c->typical - c->measured) / (c->measured * c->measured);
	err = sqrt(err);
	if (gpu_end && d && c->n_meas) {
		uint64_t host_before = c->g.pin, gpu_before = c->g.pin;

		for (size_t i = 0; i < rp->n_activities; i++) {
			int32_t s = act_step(c, &rp->activities[i]), k = c->g.act_node[0][i];

			if (s >= 0 && t->end[k] > gpu_end[s])
				gpu_end[s] = t->end[k];
		}
		for (size_t i = 0; i < c->n_meas; i++) {
			const struct replay_step *st = &c->steps[c->meas[i]];
			uint64_t b = graph_instant(&c->g, t, 0, st->thread, st->end, host);
			uint64_t g = gpu_end[c->meas[i]] > gpu_before ? gpu_end[c->meas[i]] : gpu_before;

			d[i] = (double)(b > host_before ? b - host_before : 0);
			if ((double)(g - gpu_before) - c->gpu_slack > d[i])
				d[i] = (double)(g - gpu_before) - c->gpu_slack;
			host_before = b > host_before ? b : host_before;
			gpu_before = g;
			sum += d[i];
		}
		for (size_t i = 0; i < c->n_meas && sum > 0; i++)
			d[i] = d[i] / (sum / (double)c->n_meas) - 1;
		if (sum > 0) {
			qsort(d, c->n_meas, sizeof(*d), cmp_double);
			qlo = quantile(d, c->n_meas, 0.1);
			qhi = quantile(d, c->n_meas, 0.9);
		}
	}
	p->lo = p->mean * (1 + (qlo < 0 ? qlo : 0) - err);
	p->hi = p->mean * (1 + (qhi > 0 ? qhi : 0) + err);
	if (p->lo < 0)
		p->lo = 0;
	free(gpu_end);
	free(d);
}

/*
 * The mean counted step under rules: the steps' host span as re-timed, at
 * least the GPU's time per step (gpu_span: a host that runs ahead waits
 * for it in the end), and its interval (interval()). The mean is monotone
 * in every delay and duration of the graph, so a rule that only shrinks
 * them never lengthens it. -1 after an error line.
 */
static int predict(const struct ctx *c, const struct graph_rule *rules, size_t n, const struct graph_ranks_model *rm,
		   struct prediction *p)
{
	struct graph_times t;
	double host = 1, busy;

	if (graph_retime(&c->g, rules, n, rm, &t) < 0)
		return -1;
	for (size_t i = 0; i < n; i++)
		if (rules[i].kind == GR_HOST)
			host *= rules[i].factor;
		else if (rules[i].kind == GR_GRAPH)
			host = 0;   /* the host's work takes no time: up to the step's end too */
	p->mean = window_span(c, &t, host);
	/* less what the recorded run's GPU time already exceeded its steps by: no rule, no change */
	busy = gpu_span(c, &t) - c->gpu_slack;
	if (busy > p->mean)
		p->mean = busy;
	interval(c, &t, rules, n, host, p);
	graph_times_release(&t);
	return 0;
}

/*
 * c->unrecorded_step re-timed under "unrecorded" with the graph's extra
 * per launch as it is, each at least the step's GPU time, and their median
 * over the counted steps (c->unrecorded_median). -1 after an error line.
 */
static int unrecorded_pass(struct ctx *c, double *floor)
{
	struct graph_rule rule;
	struct graph_times t;
	uint64_t *v = malloc((c->n_meas + 1) * sizeof(*v));
	struct dur_stats st;

	if (!v)
		return error("out of memory");
	if (graph_rule_parse(&rule, "unrecorded") < 0 || graph_retime(&c->g, &rule, 1, NULL, &t) < 0) {
		free(v);
		return -1;
	}
	step_floors(c, &t, floor);
	for (size_t s = 0; s < c->n_steps; s++) {
		double p = (double)step_pred(c, &t, s, 1);

		c->unrecorded_step[s] = (uint64_t)(p > floor[s] ? p : floor[s]);
	}
	for (size_t i = 0; i < c->n_meas; i++)
		v[i] = c->unrecorded_step[c->meas[i]];
	dur_stats_compute(v, c->n_meas, &st);
	c->unrecorded_median = st.median;
	c->busy_unrecorded = gpu_span(c, &t) - c->gpu_slack;
	c->recorder_ns = t.recorder_ns;
	c->taken_ns = t.taken_ns;
	free(v);
	graph_times_release(&t);
	return 0;
}

/*
 * An armed window (1.11) measured the program's steps unrecorded just
 * before it: where the estimate's median is above that, the recorder's
 * time per launch that the cost records lack (CUPTI's own work on the
 * program's launches, beyond what the calibration's empty kernel showed)
 * is found by bisection so that it meets it, at most UNRECORDED_LAUNCH_MAX
 * ns a launch; c->calibrated_ns says what was added (0: nothing).
 */
#define UNRECORDED_LAUNCH_MAX 50000.0
static int unrecorded_calibrate(struct ctx *c, double *floor)
{
	struct dur_stats before;
	double from = c->unrecorded_median, lo = 0, hi = UNRECORDED_LAUNCH_MAX;

	c->calibrated_ns = 0;
	if (!replay_unrecorded_steps(&c->rp->run, &before) || c->n_meas == 0 || from <= before.median ||
	    c->o->estimate_unrecorded)
		return 0;
	for (int i = 0; i < 24 && hi - lo > 1; i++) {
		c->g.unrecorded_launch_ns = (lo + hi) / 2;
		if (unrecorded_pass(c, floor) < 0)
			return -1;
		if (c->unrecorded_median > before.median)
			lo = c->g.unrecorded_launch_ns;
		else
			hi = c->g.unrecorded_launch_ns;
	}
	c->g.unrecorded_launch_ns = hi;
	c->calibrated_ns = hi;
	c->calibrated_from = from;
	return unrecorded_pass(c, floor);
}

/*
 * The step without the recorder (the rule "unrecorded"), when rank 0's
 * bundle says what it cost: per step, and the mean, each at least the
 * GPU's time. -1 after an error line.
 */
static int unrecorded_steps(struct ctx *c)
{
	double *floor, sum = 0, csum = 0;

	c->step_cost = calloc(c->n_steps + 1, sizeof(*c->step_cost));
	if (!c->step_cost)
		return error("out of memory");
	c->has_cost = c->steps != &c->whole && replay_step_costs(c->rp, c->step_cost, NULL);
	if (!c->has_cost)
		return 0;
	c->unrecorded_step = calloc(c->n_steps, sizeof(uint64_t));
	floor = malloc((c->n_steps + 1) * sizeof(double));
	if (!c->unrecorded_step || !floor) {
		free(floor);
		return error("out of memory");
	}
	if (unrecorded_pass(c, floor) < 0 || unrecorded_calibrate(c, floor) < 0) {
		free(floor);
		return -1;
	}
	for (size_t i = 0; i < c->n_meas; i++) {
		sum += (double)c->unrecorded_step[c->meas[i]];
		csum += (double)replay_cost_ns(&c->step_cost[c->meas[i]]);
	}
	c->unrecorded = c->n_meas ? sum / (double)c->n_meas : 0;
	c->recorder = c->n_meas ? csum / (double)c->n_meas : 0;
	if (c->busy_unrecorded > c->unrecorded)
		c->unrecorded = c->busy_unrecorded;
	free(floor);
	return 0;
}

/*
 * The run replayed with typical delays and durations (graph_retime_typical):
 * each step's host span, their mean, and each counted step's error against
 * its measured time. -1 after an error line.
 */
static int typical_steps(struct ctx *c)
{
	struct graph_times t;
	double sum = 0, err = 0, worst = 0;

	if (graph_retime_typical(&c->g, NULL, 0, NULL, &t, &c->typ) < 0)
		return -1;
	if (c->typ.skipped)
		return 0;   /* past the memory budget: said in a note */
	c->typical_step = calloc(c->n_steps + 1, sizeof(uint64_t));
	if (!c->typical_step) {
		graph_times_release(&t);
		return error("out of memory");
	}
	for (size_t s = 0; s < c->n_steps; s++)
		c->typical_step[s] = step_pred(c, &t, s, 1);
	for (size_t i = 0; i < c->n_meas; i++) {
		const struct replay_step *st = &c->steps[c->meas[i]];
		double m = (double)(st->end - st->start), p = (double)c->typical_step[c->meas[i]];
		double e = m > 0 ? 100 * fabs(p - m) / m : 0;

		sum += p;
		err += e;
		worst = e > worst ? e : worst;
	}
	c->typical = c->n_meas ? sum / (double)c->n_meas : 0;
	c->typical_err_mean = c->n_meas ? err / (double)c->n_meas : 0;
	c->typical_err_max = worst;
	for (size_t i = 0; i < c->n_meas && c->measured > 0; i++) {
		const struct replay_step *st = &c->steps[c->meas[i]];

		c->spread += 100 * fabs((double)(st->end - st->start) - c->measured) / c->measured / (double)c->n_meas;
	}
	graph_times_release(&t);
	return 0;
}

/* ---- setup ------------------------------------------------------------- */

static void ctx_release(struct ctx *c)
{
	graph_release(&c->g);
	free(c->path_phase);
	free(c->segs);
	free(c->cum);
	free(c->next_busy);
	free(c->prev_busy);
	free(c->meas);
	free(c->part);
	free(c->idle_edge);
	free(c->replayed_step);
	free(c->typical_step);
	free(c->step_cost);
	free(c->unrecorded_step);
}

static int ctx_init(struct ctx *c, const struct replay_ranks *rs, const struct explain_opts *o)
{
	const struct replay *rp = rs->rank[0];
	struct graph_times t;
	double *dm, *dr;

	memset(c, 0, sizeof(*c));
	c->rs = rs;
	c->o = o;
	c->rp = rp;
	c->steps = rp->steps;
	c->n_steps = rp->n_steps;
	if (!rp->n_steps) {
		/* no steps: the whole run, as one */
		c->whole = (struct replay_step){ .start = rp->t_min, .end = rp->t_max, .thread = rp->main_thread };
		c->steps = &c->whole;
		c->n_steps = 1;
	}
	if (graph_build(&c->g, rs->rank, rs->n, rs->n > 1 ? rs->offset : NULL) < 0)
		return -1;
	c->path_phase = malloc(rp->n_paths + 1);
	c->meas = malloc(c->n_steps * sizeof(*c->meas));
	c->part = calloc(c->n_steps, sizeof(*c->part));
	c->idle_edge = calloc(c->n_steps, sizeof(*c->idle_edge));
	c->replayed_step = calloc(c->n_steps, sizeof(*c->replayed_step));
	dm = calloc(c->n_steps, sizeof(double));
	dr = calloc(c->n_steps, sizeof(double));
	if (!c->path_phase || !c->meas || !c->part || !c->idle_edge || !c->replayed_step || !dm || !dr) {
		free(dm);
		free(dr);
		ctx_release(c);
		return error("out of memory");
	}
	replay_path_phases(rp, c->path_phase);
	for (size_t s = 0; s < c->n_steps; s++)
		if (o->include_warmup || !c->steps[s].warmup || !rp->n_measured_steps)
			c->meas[c->n_meas++] = (uint32_t)s;
	/* the predicted window: what ran before the first counted step keeps its recorded times */
	for (size_t i = 0; i < c->n_meas; i++) {
		const struct replay_step *st = &c->steps[c->meas[i]];

		if (!i || graph_time(&c->g, 0, st->start) < c->g.pin)
			c->g.pin = graph_time(&c->g, 0, st->start);
		if (!i || st->end > c->steps[c->last_step].end)
			c->last_step = c->meas[i];
	}
	if (build_segments(c) < 0 || graph_retime(&c->g, NULL, 0, NULL, &t) < 0) {
		free(dm);
		free(dr);
		ctx_release(c);
		return -1;
	}
	for (size_t s = 0; s < c->n_steps; s++) {
		const struct replay_step *st = &c->steps[s];

		window_parts(c, graph_time(&c->g, 0, st->start), graph_time(&c->g, 0, st->end), c->part[s],
			     &c->idle_edge[s]);
		c->replayed_step[s] = step_pred(c, &t, s, 1);
		dm[s] = (double)(st->end - st->start);
		dr[s] = (double)c->replayed_step[s];
	}
	c->measured = mean_of(c, dm);
	c->replayed = mean_of(c, dr);
	c->gpu_slack = gpu_span(c, &t) > c->measured ? gpu_span(c, &t) - c->measured : 0;
	if (c->n_meas) {
		const struct replay_step *st = &c->steps[c->last_step];
		uint64_t b = graph_instant(&c->g, &t, 0, st->thread, st->end, 1);

		c->span_extra = (b > c->g.pin ? (double)(b - c->g.pin) / (double)c->n_meas : 0) - c->measured;
	}
	graph_times_release(&t);
	free(dm);
	free(dr);
	if (typical_steps(c) < 0 || unrecorded_steps(c) < 0) {
		ctx_release(c);
		return -1;
	}
	return 0;
}

/* ---- findings ---------------------------------------------------------- */

struct finding {
	char title[96], evidence[512];
	double predicted, saving;      /* ns; predicted < 0: none predicted (memory) */
	double lo, hi;                 /* the prediction's interval (predict()); both `predicted` when none */
	bool at_most;
};

static int finding_predict(const struct ctx *c, struct finding *f, const char *rule_text)
{
	struct graph_rule rule;
	struct prediction p;
	int ret;

	if (graph_rule_parse(&rule, rule_text) < 0)
		return -1;
	ret = predict(c, &rule, 1, NULL, &p);
	free((char *)rule.pattern);
	if (ret < 0)
		return -1;
	f->predicted = p.mean;
	f->lo = p.lo;
	f->hi = p.hi;
	f->saving = c->measured - f->predicted;
	return 0;
}

static double part_mean(const struct ctx *c, int p)
{
	double sum = 0;

	for (size_t i = 0; i < c->n_meas; i++)
		sum += c->part[c->meas[i]][p];
	return c->n_meas ? sum / (double)c->n_meas : 0;
}

/* The findings; host: the host's share of the critical path, ns per step. */
static int findings(const struct ctx *c, double host, struct finding *f, size_t *n_out)
{
	const struct replay *rp = c->rp;
	double m = c->measured, per = c->n_meas ? 1.0 / (double)c->n_meas : 0;
	size_t n = 0;
	uint8_t *counted = calloc(c->n_steps + 1, 1);

	if (!counted)
		return error("out of memory");
	for (size_t i = 0; i < c->n_meas; i++)
		counted[c->meas[i]] = 1;
	if (!(m > 0))
		goto done;

	/* launch-bound, or host-bound: the host's work decides the step */
	{
		double lb = part_mean(c, EP_LAUNCH), stall = part_mean(c, EP_SYNC);
		size_t kernels = 0;

		for (size_t i = 0; i < rp->n_activities; i++)
			kernels += act_step(c, &rp->activities[i]) >= 0 && counted[act_step(c, &rp->activities[i])];
		if (lb >= 0.05 * m || (host >= 0.5 * m && lb + stall >= 0.05 * m)) {
			snprintf(f[n].title, sizeof(f[n].title), "%s: the step as one CUDA graph",
				 lb >= 0.05 * m ? "launch-bound" : "host-bound");
			snprintf(f[n].evidence, sizeof(f[n].evidence),
				 "the GPU waited %.1f%% of the step (%.3f ms) for the host to launch its next work%s; "
				 "the host's work and calls are %.0f%% of the critical path; %.0f launches per step, "
				 "typical launch latency %.1f us; CUDA graphs or torch.compile(mode=\"reduce-overhead\") "
				 "launch the step at once",
				 100 * (lb + stall) / m, (lb + stall) / 1e6, stall > 0.01 * m ? ", after synchronisations included" : "",
				 100 * host / m, (double)kernels * per, (double)c->g.typical[GE_LAUNCH] / 1e3);
			if (finding_predict(c, &f[n], "graph") < 0)
				goto fail;
			n++;
		}
	}
	/* synchronisations inside the loop */
	{
		size_t syncs = 0;
		double stall = part_mean(c, EP_SYNC);

		for (size_t i = 0; i < rp->n_apis; i++) {
			const struct graph_node *x = &c->g.nodes[c->g.api_node[0][i]];
			int32_t s = c->steps == &c->whole ? 0 : replay_step_at(rp, rp->apis[i].start);

			if (x->sync && x->bind_end >= 0 && s >= 0 && counted[s])
				syncs++;
		}
		if (syncs && (stall >= 0.01 * m || (double)syncs * per > 1)) {
			snprintf(f[n].title, sizeof(f[n].title), "host synchronisations inside the loop");
			snprintf(f[n].evidence, sizeof(f[n].evidence),
				 "%.1f calls per step waited for the GPU (.item(), cudaStreamSynchronize, a blocking "
				 "copy); the GPU then sat idle %.3f ms per step (%.1f%%) while the host refilled its queue",
				 (double)syncs * per, stall / 1e6, 100 * stall / m);
			if (finding_predict(c, &f[n], "no-sync") < 0)
				goto fail;
			n++;
		}
	}
	/* exposed communication */
	{
		double comm = part_mean(c, EP_COMM);

		if (comm >= 0.02 * m) {
			snprintf(f[n].title, sizeof(f[n].title), "exposed communication");
			snprintf(f[n].evidence, sizeof(f[n].evidence),
				 "collectives ran with no computation beside them %.3f ms per step (%.1f%%): larger "
				 "buckets, earlier all-reduces or overlap with the backward hide them",
				 comm / 1e6, 100 * comm / m);
			if (finding_predict(c, &f[n], "comm-overlap") < 0)
				goto fail;
			n++;
		}
	}
	/* computation slowed beside communication */
	{
		double *fac = malloc((c->g.n_nodes + 1) * sizeof(double));
		double excess = 0, t_beside = 0, slowed = 0, wide = 0, ratio;
		uint32_t sms = rp->run.has_device ? rp->run.device.sm_count : 0;
		long beside;

		if (!fac) {
			error("out of memory");
			goto fail;
		}
		beside = graph_contention(&c->g, fac);
		for (size_t i = 0; beside > 0 && i < rp->n_activities; i++) {
			const struct replay_activity *a = &rp->activities[i];
			int32_t node = c->g.act_node[0][i], s = act_step(c, a);

			if (node < 0 || a->kind != ST_KERNEL || s < 0 || !counted[s] || !(fac[node] < 1))
				continue;
			slowed++;
			excess += (double)c->g.nodes[node].own * (1 - fac[node]);
			t_beside += (double)c->g.nodes[node].own;
			if (sms && a->detail < rp->n_kernel_cfg) {
				const uint32_t *gd = rp->kernel_cfg[a->detail].grid;
				double ctas = (double)gd[0] * gd[1] * gd[2];

				wide += ctas >= 0.9 * sms && ctas <= sms;   /* a CTA per SM: persistent */
			}
		}
		free(fac);
		if (beside < 0)
			goto fail;
		ratio = t_beside > excess ? t_beside / (t_beside - excess) : 0;
		excess *= per;
		if (excess >= 0.02 * m) {
			char persistent[160] = "";

			if (wide > 0)
				snprintf(persistent, sizeof(persistent),
					 "; %.0f of them launch about a CTA per SM (%u SMs): persistent kernels, whose last "
					 "CTAs beside NCCL's wait for a second wave", wide * per, sms);
			snprintf(f[n].title, sizeof(f[n].title), "computation slowed beside communication");
			snprintf(f[n].evidence, sizeof(f[n].evidence),
				 "%.0f kernels per step started while a collective ran and took %.3f ms longer (%.2fx) "
				 "than the same kernels (name and grid) with none running%s; predicted as long as alone: "
				 "fewer SMs for the products beside it (steptrace --sm-carveout; PyTorch's experimental "
				 "sm_carveout) or fewer CTAs for NCCL (NCCL_MAX_CTAS)",
				 slowed * per, excess / 1e6, ratio, persistent);
			if (finding_predict(c, &f[n], "no-contention") < 0)
				goto fail;
			n++;
		}
	}
	/* a bandwidth-bound optimizer */
	{
		double t_opt = 0, bytes = 0, peak = rp->run.device.peak_bandwidth;

		for (size_t i = 0; i < rp->n_activities; i++) {
			const struct replay_activity *a = &rp->activities[i];

			if (a->kind == ST_KERNEL && act_step(c, a) >= 0 && counted[act_step(c, a)] &&
			    graph_activity_phase(c->rp, c->path_phase, a) == ST_PHASE_OPTIMIZER)
				t_opt += (double)(a->end - a->start);
		}
		t_opt *= per;
		if (rp->run.has_config && rp->run.config.parameters)
			bytes = GRAPH_ADAMW_BYTES_PER_PARAM * (double)rp->run.config.parameters;
		if (t_opt >= 0.10 * m) {
			double achieved = bytes > 0 ? bytes / (t_opt / 1e9) : 0;
			double k = peak > 0 && achieved > 0 && achieved < 0.7 * peak ? achieved / peak : 0.5;
			char rule[64];

			snprintf(f[n].title, sizeof(f[n].title), "a bandwidth-bound optimizer");
			/* more than twice the device's peak: the header's parameter count is not the run's */
			if (achieved > 0 && peak > 0 && achieved <= 2 * peak)
				snprintf(f[n].evidence, sizeof(f[n].evidence),
					 "the optimizer's kernels take %.3f ms per step (%.1f%%), moving about %.2f GB "
					 "(AdamW in FP32: %.0f B per parameter) at %.0f GB/s, %.0f%% of the %.0f GB/s peak; %s",
					 t_opt / 1e6, 100 * t_opt / m, bytes / 1e9, GRAPH_ADAMW_BYTES_PER_PARAM, achieved / 1e9, 100 * achieved / peak,
					 peak / 1e9,
					 k < 0.5 ? "predicted at the peak bandwidth (a fused, multi-tensor optimizer)"
						 : "near the peak already: predicted with half its bytes (BF16 moments, or "
						   "the update fused into the backward)");
			else
				snprintf(f[n].evidence, sizeof(f[n].evidence),
					 "the optimizer's kernels take %.3f ms per step (%.1f%%); predicted with half "
					 "their bytes (BF16 moments, a fused multi-tensor update)",
					 t_opt / 1e6, 100 * t_opt / m);
			snprintf(rule, sizeof(rule), "kernels:optimizer*=%.4f", k);
			if (finding_predict(c, &f[n], rule) < 0)
				goto fail;
			n++;
		}
	}
	/* many small kernels */
	{
		size_t small = 0, all = 0;
		double t_small = 0;

		for (size_t i = 0; i < rp->n_activities; i++) {
			const struct replay_activity *a = &rp->activities[i];

			if (a->kind != ST_KERNEL || act_step(c, a) < 0 || !counted[act_step(c, a)])
				continue;
			all++;
			if (a->end - a->start < 10000) {
				small++;
				t_small += (double)(a->end - a->start);
			}
		}
		if (all && small * 2 >= all && (double)small * per >= 100) {
			snprintf(f[n].title, sizeof(f[n].title), "many small kernels");
			snprintf(f[n].evidence, sizeof(f[n].evidence),
				 "%.0f of the step's %.0f kernels run under 10 us (%.3f ms in all): each costs a launch "
				 "and a pass over memory; predicted with them fused away (their time gone, their "
				 "launches kept)",
				 (double)small * per, (double)all * per, t_small * per / 1e6);
			if (finding_predict(c, &f[n], "kernels:<10us=0") < 0)
				goto fail;
			n++;
		}
	}
	/* idle at the step's start or end */
	{
		double edge = 0;

		for (size_t i = 0; i < c->n_meas; i++)
			edge += (double)c->idle_edge[c->meas[i]];
		edge *= per;
		if (edge >= 0.03 * m) {
			snprintf(f[n].title, sizeof(f[n].title), "GPU idle at the step's start or end");
			snprintf(f[n].evidence, sizeof(f[n].evidence),
				 "before its first and after its last work the GPU is idle %.3f ms per step (%.1f%%): "
				 "the host's work between steps (logging, data, the loop) not overlapped with the GPU's",
				 edge / 1e6, 100 * edge / m);
			f[n].predicted = f[n].lo = f[n].hi = m - edge;
			f[n].saving = edge;
			f[n].at_most = true;
			n++;
		}
	}
	/* memory headroom */
	if (rp->run.has_device && rp->run.device.memory_bytes) {
		struct mem_timeline tl;

		if (mem_timeline_build(&tl, rp, mem_default_view(rp)) == 0) {
			double cap = (double)rp->run.device.memory_bytes * 0.95, peak = (double)tl.peak.bytes;
			double dep = (double)(tl.peak.by_category[ST_MEM_ACTIVATION] + tl.peak.by_category[ST_MEM_TEMPORARY]);

			if (peak > 0 && dep > 0 && cap > peak) {
				double k = (cap - (peak - dep)) / dep;
				uint32_t batch = rp->run.has_config ? rp->run.config.batch : 0;

				snprintf(f[n].title, sizeof(f[n].title), "memory headroom");
				if (batch)
					snprintf(f[n].evidence, sizeof(f[n].evidence),
						 "the peak is %.2f GiB of %.2f GiB, activations and temporaries %.2f GiB of it: "
						 "a batch of about %u (x%.1f) would still fit in 95%% of the device "
						 "(check with replay --capacity)",
						 peak / 1073741824.0, cap / 0.95 / 1073741824.0, dep / 1073741824.0,
						 (unsigned)floor(batch * k), k);
				else
					snprintf(f[n].evidence, sizeof(f[n].evidence),
						 "the peak is %.2f GiB of %.2f GiB, activations and temporaries %.2f GiB of it: "
						 "about x%.1f the batch would still fit in 95%% of the device",
						 peak / 1073741824.0, cap / 0.95 / 1073741824.0, dep / 1073741824.0, k);
				f[n].predicted = -1;
				f[n].saving = -1;
				n++;
			}
			mem_timeline_release(&tl);
		}
	}
done:
	free(counted);
	*n_out = n;
	return 0;
fail:
	free(counted);
	return -1;
}

/* A finding whose predicted saving is under this share of the step predicts none. */
#define NO_SAVING 0.005

/*
 * The findings (ranked) less those whose re-timing predicts no saving:
 * their time is real but not the step's to lose (the DDP sample's exposed
 * communication beside a host-bound step); their titles and times go to
 * `none` for a note. Returns how many are left.
 */
static size_t drop_no_saving(const struct ctx *c, struct finding *f, size_t n, char *none, size_t size)
{
	size_t kept = 0, at = 0;

	for (size_t i = 0; i < n; i++) {
		if (f[i].predicted < 0 || f[i].saving >= NO_SAVING * c->measured) {
			f[kept++] = f[i];
			continue;
		}
		if (at + 2 < size)
			at += (size_t)snprintf(none + at, size - at, "%s%s (predicted %.3f ms)", at ? "; " : "",
					       f[i].title, f[i].predicted / 1e6);
	}
	return kept;
}

static int cmp_finding(const void *pa, const void *pb)
{
	const struct finding *a = pa, *b = pb;
	double x = a->predicted < 0 ? -1e300 : a->saving, y = b->predicted < 0 ? -1e300 : b->saving;

	return (x < y) - (x > y);
}

/* ---- the report -------------------------------------------------------- */

static int ranks_model(const struct ctx *c, struct graph_bw_table *table, struct graph_ranks_model *rm,
		       uint64_t **tensors)
{
	const struct replay *rp = c->rp;
	struct mem_timeline tl;

	memset(rm, 0, sizeof(*rm));
	if (!c->o->allreduce)
		return error("--what-if ranks=N needs --allreduce FILE: `steptrace bench allreduce --format csv` "
			     "output, or a table of the same columns");
	if (graph_bw_table_load(table, c->o->allreduce) < 0)
		return -1;
	rm->table = table;
	if (mem_timeline_build(&tl, rp, mem_default_view(rp)) == 0) {
		rm->grad_bytes = tl.peak.by_category[ST_MEM_GRADIENT];
		mem_timeline_release(&tl);
	}
	if (!rm->grad_bytes)   /* (1.8) the optimizer's parameter groups: a gradient has its parameter's dtype */
		for (size_t k = 0; k < rp->run.n_param_groups; k++)   /* at most 2^53 + 1: refused below */
			rm->grad_bytes = rp->run.param_groups[k].bytes > GRAPH_RANKS_MAX_BYTES ||
						 rm->grad_bytes > GRAPH_RANKS_MAX_BYTES
					 ? GRAPH_RANKS_MAX_BYTES + 1 : rm->grad_bytes + rp->run.param_groups[k].bytes;
	if (!rm->grad_bytes && rp->run.has_config) {
		/* a header's count can be anything: 4 bytes each of at most 2^51 parameters */
		if (rp->run.config.parameters > GRAPH_RANKS_MAX_BYTES / 4)
			return error("--what-if ranks=N: '%s' claims %" PRIu64 " parameters, %.3g bytes of gradients: past "
				     "2^53 bytes, not a run to model", rp->path ? rp->path : "the bundle",
				     rp->run.config.parameters, 4.0 * (double)rp->run.config.parameters);
		rm->grad_bytes = 4 * rp->run.config.parameters;
	}
	if (!rm->grad_bytes)
		return error("--what-if ranks=N: the run's gradients have no size (no gradient memory recorded, no "
			     "parameter groups and no parameter count)");
	if (rm->grad_bytes > GRAPH_RANKS_MAX_BYTES)
		return error("--what-if ranks=N: '%s' has %" PRIu64 " bytes of gradients: past 2^53 bytes, not a run to "
			     "model", rp->path ? rp->path : "the bundle", rm->grad_bytes);
	if (c->o->contention ? whatif_calibration_load(c->o->contention, rm) < 0 : whatif_calibration_default(rm) < 0)
		return -1;
	if (!c->o->naive) {
		double mb = c->o->bucket_mb > 0 ? c->o->bucket_mb : rp->run.config.bucket_mb > 0 ? rp->run.config.bucket_mb : 25;
		const char *from = c->o->bucket_mb > 0 ? "--bucket-mb" : rp->run.config.bucket_mb > 0 ? "the bundle's header"
												: "the default";

		/* a header's bucket size can be anything too: from a byte to 2^53 bytes, and at most a million buckets */
		if (!(mb * 1e6 >= 1) || !(mb * 1e6 <= (double)GRAPH_RANKS_MAX_BYTES))
			return error("--what-if ranks=N: buckets of %g MB (%s) are %s: give --bucket-mb", mb, from,
				     mb * 1e6 >= 1 ? "past 2^53 bytes" : "smaller than a byte");
		rm->bucket_bytes = (uint64_t)(mb * 1e6);
		if (rm->grad_bytes / rm->bucket_bytes >= GRAPH_RANKS_MAX_BUCKETS)
			return error("--what-if ranks=N: buckets of %g MB (%s) make %.3g buckets of the %" PRIu64 " bytes of "
				     "gradients, over %d: give --bucket-mb", mb, from,
				     ceil((double)rm->grad_bytes / (double)rm->bucket_bytes), rm->grad_bytes,
				     GRAPH_RANKS_MAX_BUCKETS);
		return 0;
	}
	/*
	 * naive, on steptrace's own model: its parameter tensors (model/params.c),
	 * each all-reduced on its own as `--ddp naive` does, at the gradients'
	 * bytes per parameter
	 */
	if (rp->run.has_config && rp->run.config.parameters && rp->run.config.layers &&
	    rp->run.config.layers <= 4096 && rp->run.config.d_model && rp->run.config.d_ff && rp->run.config.vocab) {
		const struct replay_config *k = &rp->run.config;
		double per = (double)rm->grad_bytes / (double)k->parameters;
		uint64_t d = k->d_model, ff = k->d_ff, layer[9] = { d, d * d, d * d, d * d, d * d, d, ff * d, d * ff, ff * d };
		size_t n = 0;

		*tensors = malloc((3 + 9 * (size_t)k->layers) * sizeof(uint64_t));
		if (!*tensors)
			return error("out of memory");
		(*tensors)[n++] = (uint64_t)(per * (double)k->vocab * (double)d);
		for (uint32_t l = 0; l < k->layers; l++)
			for (int x = 0; x < 9; x++)
				(*tensors)[n++] = (uint64_t)(per * (double)layer[x]);
		(*tensors)[n++] = (uint64_t)(per * (double)d);
		(*tensors)[n++] = (uint64_t)(per * (double)k->vocab * (double)d);
		rm->tensors = *tensors;
		rm->n_tensors = n;
	} else if (whatif_group_tensors(rp, rm, tensors) < 0) {   /* (1.8) a PyTorch run's parameter groups */
		return -1;
	}
	return 0;
}

static void ms_cell(struct table *t, double ns)
{
	table_float(t, ns / 1e6);
}

static int what_if_table(const struct ctx *c, struct report *r)
{
	const struct explain_opts *o = c->o;
	struct graph_rule rules[EXPLAIN_MAX_RULES];
	struct graph_bw_table table = { 0 };
	struct graph_ranks_model rm = { 0 };
	uint64_t *tensors = NULL;
	struct graph_facts facts = { 0 };
	struct table *t;
	bool need_ranks = false;
	int ret = -1;
	size_t parsed = 0;

	for (; parsed < o->n_rules; parsed++) {
		if (graph_rule_parse(&rules[parsed], o->rules[parsed]) < 0)
			goto out;
		need_ranks |= rules[parsed].kind == GR_RANKS;
	}
	if (need_ranks && ranks_model(c, &table, &rm, &tensors) < 0)
		goto out;
	if (whatif_facts(&c->g, rules, parsed, &facts) < 0)   /* precision, batch, fuse: analyze/whatif.h */
		goto out;
	t = report_add_table(r, "what_if", "What if: the step re-timed under each rule, and all together (ms)");
	table_add_column(t, "Rule", COL_STR, 0);
	table_column_elastic(t);   /* all the rules together can be long: the text table fits 160 columns */
	table_add_column(t, "Measured", COL_FLOAT, 3);
	table_add_column(t, "Replayed", COL_FLOAT, 3);
	table_add_column(t, "Predicted", COL_FLOAT, 3);
	table_add_column(t, "Low", COL_FLOAT, 3);
	table_add_column(t, "High", COL_FLOAT, 3);
	table_add_column(t, "Change (%)", COL_FLOAT, 1);
	for (size_t i = 0; i <= o->n_rules; i++) {
		struct prediction p;
		char all[512];

		if (i == o->n_rules && o->n_rules < 2)
			break;
		if (predict(c, i < o->n_rules ? &rules[i] : rules, i < o->n_rules ? 1 : o->n_rules, &rm, &p) < 0)
			goto out;
		table_row(t);
		if (i < o->n_rules) {
			snprintf(all, sizeof(all), "%s", o->rules[i]);
		} else {
			size_t at = 0;

			all[0] = 0;
			for (size_t k = 0; k < o->n_rules && at + 2 < sizeof(all); k++)
				at += (size_t)snprintf(all + at, sizeof(all) - at, "%s%s", k ? " + " : "", o->rules[k]);
		}
		table_str(t, all);
		ms_cell(t, c->measured);
		ms_cell(t, c->replayed);
		ms_cell(t, p.mean);
		ms_cell(t, p.lo);
		ms_cell(t, p.hi);
		table_float(t, c->measured > 0 ? 100 * (p.mean - c->measured) / c->measured : 0);
		report_note(r, "what if %.400s: predicted %.3f ms [%.3f, %.3f]", all, p.mean / 1e6, p.lo / 1e6, p.hi / 1e6);
	}
	report_note(r, "what if: [low, high]: each counted step predicted on its own, their spread about their mean (10th "
		       "to 90th percentile) applied to the prediction, widened by a rule's own calibration error where it "
		       "has one");
	if (need_ranks)
		report_note(r, "ranks=N: %.1f MB of gradients all-reduced over N GPUs %s, each all-reduce as long as '%s' "
			    "measured its size (interpolated; scaled by the ring's 2(N-1)/N), on a stream of their own, "
			    "the optimizer's work waiting for the last; the backward beside them x%.3g, %.1f us of host "
			    "time per collective call (%s)",
			    (double)rm.grad_bytes / 1e6,
			    rm.bucket_bytes ? "in buckets as the backward produces them"
			    : rm.tensors ? "after the backward, each parameter tensor on its own (--naive)"
					 : "after the backward, at once (--naive)",
			    o->allreduce, rm.contention > 0 ? rm.contention : 1, (double)rm.call_ns / 1e3,
			    o->contention ? o->contention : WHATIF_CALIBRATION_DEFAULT_SOURCE);
	ret = 0;
out:
	for (size_t i = 0; i < parsed; i++)
		free((char *)rules[i].pattern);
	whatif_facts_release(&facts);
	graph_bw_table_release(&table);
	free(tensors);
	return ret;
}

/* A multi-rank run's calibration of ranks=N (analyze/whatif.h): its contention and host time per collective call. */
static int calibration_table(const struct ctx *c, struct report *r)
{
	double contention, call_us;
	long beside;
	size_t calls;
	struct table *t;

	if (whatif_calibrate(&c->g, &contention, &call_us, &beside, &calls) < 0)
		return -1;
	t = report_add_table(r, "calibration", "Calibration of ranks=N from this run (--contention FILE)");
	table_add_column(t, "contention", COL_FLOAT, 3);
	table_add_column(t, "call_us", COL_FLOAT, 1);
	table_add_column(t, "kernels_beside", COL_INT, 0);
	table_add_column(t, "calls", COL_INT, 0);
	table_row(t);
	table_float(t, contention);
	table_float(t, call_us);
	table_int(t, beside);
	table_int(t, (int64_t)calls);
	return 0;
}

int explain_predict_sets(const struct replay_ranks *rs, const struct explain_opts *o, const uint32_t *sets,
			 size_t n_sets, double *pred)
{
	struct ctx c;
	struct graph_rule rules[EXPLAIN_MAX_RULES], pick[EXPLAIN_MAX_RULES];
	struct graph_bw_table table = { 0 };
	struct graph_ranks_model rm = { 0 };
	uint64_t *tensors = NULL;
	size_t parsed = 0;
	bool need_ranks = false;
	int ret = -1;

	if (ctx_init(&c, rs, o) < 0)
		return -1;
	for (; parsed < o->n_rules; parsed++) {
		if (graph_rule_parse(&rules[parsed], o->rules[parsed]) < 0)
			goto out;
		need_ranks |= rules[parsed].kind == GR_RANKS;
	}
	if (need_ranks && ranks_model(&c, &table, &rm, &tensors) < 0)
		goto out;
	for (size_t i = 0; i < n_sets; i++) {
		size_t n = 0;
		struct prediction p;

		for (size_t k = 0; k < o->n_rules; k++)
			if (sets[i] >> k & 1)
				pick[n++] = rules[k];
		if (predict(&c, pick, n, need_ranks ? &rm : NULL, &p) < 0)
			goto out;
		pred[i] = p.mean;
	}
	ret = 0;
out:
	for (size_t i = 0; i < parsed; i++)
		free((char *)rules[i].pattern);
	graph_bw_table_release(&table);
	free(tensors);
	ctx_release(&c);
	return ret;
}

/* What the unrecorded column is, and what went into it. */
static void unrecorded_note(const struct ctx *c, struct report *r)
{
	double cb = 0, nvtx = 0, hook = 0, py = 0, cupti = 0, per = c->n_meas ? 1.0 / (double)c->n_meas : 0;
	char inside[96] = "";
	struct dur_stats before;
	bool measured = replay_unrecorded_steps(&c->rp->run, &before);

	for (size_t i = 0; i < c->n_meas; i++) {
		const struct replay_cost *k = &c->step_cost[c->meas[i]];

		cb += (double)k->callback_ns;
		nvtx += (double)k->nvtx_ns;
		hook += (double)k->hook_ns;
		py += (double)k->python_ns;
		cupti += (double)k->cupti_ns;
	}
	if (cupti > 0)
		snprintf(inside, sizeof(inside), ", CUPTI inside the launches %.3f ms (%.0f ns a launch, measured in the process)",
			 cupti * per / 1e6, replay_launch_cost_ns(&c->rp->run));
	report_note(r, "unrecorded: the step as it would have run without the recorder: its own host time, %.3f ms per "
		       "step (%.1f%%: CUPTI callbacks %.3f, NVTX handlers %.3f, entry points %.3f, Python side %.3f ms%s), "
		       "taken out of the host's work between the calls of the thread and step it was spent in; at least the "
		       "GPU's time per step",
		    c->recorder / 1e6, c->measured > 0 ? 100 * c->recorder / c->measured : 0, cb * per / 1e6,
		    nvtx * per / 1e6, hook * per / 1e6, py * per / 1e6, inside);
	if (c->calibrated_ns > 0)
		report_note(r, "unrecorded: calibrated on the program's %zu unrecorded steps just before this window (median "
			       "%.3f ms): from the recorder's own time alone the column's median was %.3f ms (%+.1f%%); %.0f ns "
			       "more of the recorder's per kernel launch (CUPTI's work on the program's own launches, which "
			       "its records lack) meets it",
			    (size_t)before.n, before.median / 1e6, c->calibrated_from / 1e6,
			    100 * (c->calibrated_from - before.median) / before.median, c->calibrated_ns);
	else if (measured && c->n_meas)
		report_note(r, "unrecorded: measured in the process: the program's %zu unrecorded steps just before this "
			       "window took %.3f ms (median); the column's median %.3f ms is %+.1f%% from it",
			    (size_t)before.n, before.median / 1e6, c->unrecorded_median / 1e6,
			    100 * (c->unrecorded_median - before.median) / before.median);
	if (c->taken_ns + 1000 < c->recorder_ns)
		report_note(r, "unrecorded: %.3f ms of the recorder's %.3f ms in the run found no host work of its thread to "
			       "come out of (a thread that made no call then, or more than its thread's work); it is left in",
			    (double)(c->recorder_ns - c->taken_ns) / 1e6, (double)c->recorder_ns / 1e6);
}

/* n[i] as a share of n[0 .. 4), in %. */
static double share(const size_t *n, int i)
{
	size_t all = n[0] + n[1] + n[2] + n[3];

	return all ? 100.0 * (double)n[i] / (double)all : 0;
}

/* The replay's error: as recorded (exact, by construction) and with typical delays and durations. */
static void replay_table(const struct ctx *c, struct report *r)
{
	struct table *t = report_add_table(r, "replay", "Replay error: the run re-timed as recorded, and with typical "
					  "delays and durations (ms)");
	const struct graph_typical *k = &c->typ;
	double err = c->measured > 0 ? 100 * (c->typical - c->measured) / c->measured : 0;

	if (fabs(err) < 0.05)
		err = 0;   /* printed +0.0%, not -0.0% */

	table_add_column(t, "Replay", COL_STR, 0);
	table_add_column(t, "Measured", COL_FLOAT, 3);
	table_add_column(t, "Replayed", COL_FLOAT, 3);
	table_add_column(t, "Error (%)", COL_FLOAT, 1);
	table_add_column(t, "Step error mean (%)", COL_FLOAT, 1);
	table_add_column(t, "Step error max (%)", COL_FLOAT, 1);
	table_add_column(t, "Step spread (%)", COL_FLOAT, 1);
	table_row(t);
	table_str(t, "recorded delays");
	ms_cell(t, c->measured);
	ms_cell(t, c->replayed);
	table_float(t, c->measured > 0 ? 100 * (c->replayed - c->measured) / c->measured : 0);
	table_float(t, 0);
	table_float(t, 0);
	table_float(t, c->spread);
	if (k->skipped) {
		char need[32];

		report_note(r, "replay with typical delays: not done: it needs %s more than the memory limit leaves "
			       "(--memory-limit)", human_bytes(need, sizeof(need), (double)k->skipped));
		return;
	}
	table_row(t);
	table_str(t, "typical delays");
	ms_cell(t, c->measured);
	ms_cell(t, c->typical);
	table_float(t, err);
	table_float(t, c->typical_err_mean);
	table_float(t, c->typical_err_max);
	table_float(t, c->spread);
	report_note(r, "replay with typical delays: %.3f ms vs measured %.3f ms, error %+.1f%% (per step: mean %.1f%%, max "
		       "%.1f%%; the steps' own spread about their mean %.1f%%)", c->typical / 1e6, c->measured / 1e6, err,
		    c->typical_err_mean, c->typical_err_max, c->spread);
	report_note(r, "typical delays: each latency at its kind's median where it decided (launch %.1f us, stream %.1f us, "
		       "inferred wait %.1f us, synchronisation's return %.1f us, poll %.1f us); each duration at the "
		       "median of its key's: the host's calls and work between them by their names, ranges and place in "
		       "the step %.0f%%, without their place %.0f%%, by names alone %.0f%%, one of a kind %.0f%%; the "
		       "GPU's work by its name, shape and range %.0f%%, without its range %.0f%%, by name alone %.0f%%, "
		       "one of a kind %.0f%%",
		    (double)k->delay[GE_LAUNCH] / 1e3, (double)k->delay[GE_STREAM] / 1e3, (double)k->delay[GE_WAIT] / 1e3,
		    (double)k->sync_end / 1e3, (double)k->delay[GE_SYNC] / 1e3, share(k->host, 1), share(k->host, 2),
		    share(k->host, 3), share(k->host, 0), share(k->gpu, 1), share(k->gpu, 2), share(k->gpu, 3),
		    share(k->gpu, 0));
}

static void summarise(const struct ctx *c, const struct finding *f, size_t n, struct explain_summary *s)
{
	memset(s, 0, sizeof(*s));
	s->steps = c->n_meas;
	s->measured = c->measured;
	s->replayed = c->replayed;
	s->recorder = c->has_cost ? c->recorder : 0;
	s->unrecorded = c->has_cost ? c->unrecorded : 0;
	for (int p = 0; p < EP_COUNT; p++)
		s->part[p] = part_mean(c, p);
	for (size_t i = 0; i < n && i < sizeof(s->finding) / sizeof(s->finding[0]); i++) {
		memcpy(s->finding[i].title, f[i].title, sizeof(f[i].title));
		memcpy(s->finding[i].evidence, f[i].evidence, sizeof(f[i].evidence));
		s->finding[i].predicted = f[i].predicted;
		s->finding[i].saving = f[i].saving;
		s->finding[i].lo = f[i].lo;
		s->finding[i].hi = f[i].hi;
		s->n_findings++;
	}
}

/*
 * The steps whose critical path is walked: the counted ones that have module
 * ranges (replay_counts_modules), so that the ops on the path are named by
 * module; c->meas itself on a bundle whose steps all have them.
 */
static int path_steps(const struct ctx *c, uint32_t **out, size_t *n)
{
	*out = c->meas;
	*n = c->n_meas;
	if (!c->rp->n_phases_only || c->steps == &c->whole)
		return 0;
	*out = malloc((c->n_meas + 1) * sizeof(**out));
	if (!*out)
		return error("out of memory");
	*n = 0;
	for (size_t i = 0; i < c->n_meas; i++)
		if (!c->steps[c->meas[i]].phases_only)
			(*out)[(*n)++] = c->meas[i];
	return 0;
}

int explain_run(const struct replay_ranks *rs, const struct explain_opts *o, struct report *r,
		struct explain_summary *sum)
{
	struct ctx c;
	struct table *t;
	struct finding f[12] = { 0 };
	struct explain_path cp = { 0 };
	uint32_t *on_path = NULL;
	size_t n_f = 0, walked, n_path = 0, n_edges[GE_KIND_COUNT] = { 0 };
	int top = o->top > 0 ? o->top : 15, walk;
	char coll_note[128] = "", none[512] = "";
	double total_cp = 0, host = 0;

	if (ctx_init(&c, rs, o) < 0)
		return -1;
	if (path_steps(&c, &on_path, &n_path) < 0)
		goto fail;
	walk = explain_paths(&c.g, c.rp, c.steps, on_path, n_path, &cp, &walked);
	if (walk < 0)
		goto fail;
	for (size_t i = 0; i < cp.n; i++) {
		total_cp += cp.e[i].ns;
		if (!strncmp(cp.e[i].kind, "host", 4))
			host += cp.e[i].ns;
	}
	if (findings(&c, n_path ? host / (double)n_path : 0, f, &n_f) < 0)
		goto fail;
	qsort(f, n_f, sizeof(f[0]), cmp_finding);
	n_f = drop_no_saving(&c, f, n_f, none, sizeof(none));
	if (sum)
		summarise(&c, f, n_f, sum);
	if (!r)
		goto done;

	t = report_add_table(r, "steps", "Step time, split into parts that add up to it (ms)");
	table_add_column(t, "Step", COL_STR, 0);
	table_add_column(t, "Wall", COL_FLOAT, 3);
	for (int p = 0; p < EP_COUNT; p++) {
		char name[48];

		snprintf(name, sizeof(name), "%c%s", toupper((unsigned char)explain_part_names[p][0]),
			 explain_part_names[p] + 1);
		table_add_column(t, name, COL_FLOAT, 3);
	}
	table_add_column(t, "Replayed", COL_FLOAT, 3);
	if (!c.typ.skipped)
		table_add_column(t, "Typical", COL_FLOAT, 3);
	if (c.has_cost)
		table_add_column(t, "Unrecorded", COL_FLOAT, 3);
	for (size_t i = 0; i < c.n_meas; i++) {
		size_t s = c.meas[i];
		char label[32];

		snprintf(label, sizeof(label), "%u%s", c.steps[s].index, c.steps[s].warmup ? " (warm-up)" : "");
		table_row(t);
		table_str(t, label);
		ms_cell(t, (double)(c.steps[s].end - c.steps[s].start));
		for (int p = 0; p < EP_COUNT; p++)
			ms_cell(t, c.part[s][p]);
		ms_cell(t, (double)c.replayed_step[s]);
		if (!c.typ.skipped)
			ms_cell(t, (double)c.typical_step[s]);
		if (c.has_cost)
			ms_cell(t, (double)c.unrecorded_step[s]);
	}
	table_row(t);
	table_str(t, "mean");
	ms_cell(t, c.measured);
	for (int p = 0; p < EP_COUNT; p++)
		ms_cell(t, part_mean(&c, p));
	ms_cell(t, c.replayed);
	if (!c.typ.skipped)
		ms_cell(t, c.typical);
	if (c.has_cost)
		ms_cell(t, c.unrecorded);
	table_row(t);
	table_str(t, "share (%)");
	table_float(t, 100);
	for (int p = 0; p < EP_COUNT; p++)
		table_float(t, c.measured > 0 ? 100 * part_mean(&c, p) / c.measured : 0);
	table_float(t, c.measured > 0 ? 100 * c.replayed / c.measured : 0);
	if (!c.typ.skipped)
		table_float(t, c.measured > 0 ? 100 * c.typical / c.measured : 0);
	if (c.has_cost)
		table_float(t, c.measured > 0 ? 100 * c.unrecorded / c.measured : 0);
	if (c.has_cost)
		unrecorded_note(&c, r);

	replay_table(&c, r);

	/* the critical path */
	if (walk > 0)
		report_note(r, "critical path: over the first %zu of the %zu steps (their paths cross the whole "
			       "graph many times over: steps overlap)", walked, n_path);
	if (on_path != c.meas)
		module_steps_note(c.rp, o->include_warmup, false, r);
	t = report_add_table(r, "critical_path", "Critical path: what decided the step's end, per step");
	table_add_column(t, "Kind", COL_STR, 0);
	table_add_column(t, "On the path", COL_STR, 0);
	table_column_elastic(t);
	table_add_column(t, "Time (ms)", COL_FLOAT, 3);
	table_add_column(t, "Share (%)", COL_FLOAT, 1);
	for (size_t i = 0; i < cp.n && (int)i < top; i++) {
		table_row(t);
		table_str(t, cp.e[i].kind);
		table_str(t, cp.e[i].label);
		ms_cell(t, n_path ? cp.e[i].ns / (double)n_path : 0);
		table_float(t, total_cp > 0 ? 100 * cp.e[i].ns / total_cp : 0);
	}
	if (cp.n > (size_t)top)
		report_note(r, "critical path: %zu more entries (--top N shows more)", cp.n - (size_t)top);

	/* findings */
	t = report_add_table(r, "findings", "Findings, by the saving the re-timed graph predicts");
	table_add_column(t, "#", COL_INT, 0);
	table_add_column(t, "Finding", COL_STR, 0);
	table_add_column(t, "Evidence", COL_STR, 0);
	table_column_elastic(t);
	table_add_column(t, "Predicted (ms)", COL_FLOAT, 3);
	table_add_column(t, "Low", COL_FLOAT, 3);
	table_add_column(t, "High", COL_FLOAT, 3);
	table_add_column(t, "Saving (ms)", COL_FLOAT, 3);
	table_add_column(t, "Saving (%)", COL_FLOAT, 1);
	for (size_t i = 0; i < n_f; i++) {
		char title[112];

		table_row(t);
		table_int(t, (int64_t)i + 1);
		snprintf(title, sizeof(title), "%.95s%s", f[i].title, f[i].at_most ? " (at most)" : "");
		table_str(t, title);
		table_str(t, f[i].evidence);
		if (f[i].predicted < 0) {
			for (int k = 0; k < 5; k++)
				table_empty(t);
		} else {
			ms_cell(t, f[i].predicted);
			ms_cell(t, f[i].lo);
			ms_cell(t, f[i].hi);
			ms_cell(t, f[i].saving);
			table_float(t, 100 * f[i].saving / c.measured);
		}
	}
	for (size_t i = 0; i < n_f; i++)
		report_note(r, "finding %zu, %s: %s", i + 1, f[i].title, f[i].evidence);
	if (none[0])
		report_note(r, "no saving predicted: %s: re-timed without each, the step is no shorter (by under %.1f%% of it): "
			       "another part of the step decides it", none, 100 * NO_SAVING);
	if (!n_f)
		report_note(r, "findings: none above their thresholds (launch-bound 5%%, sync stalls 1%%, exposed "
			       "communication 2%%, optimizer 10%%, idle at the edges 3%% of the step)");

	if (o->n_rules && what_if_table(&c, r) < 0)
		goto fail;
	if (rs->n > 1 && calibration_table(&c, r) < 0)   /* ranks=N's --contention, learned from this run */
		goto fail;

	for (size_t e = 0; e < c.g.n_edges; e++)
		n_edges[c.g.edges[e].kind]++;
	if (c.g.n_colls)
		snprintf(coll_note, sizeof(coll_note), " (%zu collectives, each rank's kernel joined to the others' "
			 "through one node)", c.g.n_colls);
	report_note(r,
		    "graph: %zu nodes (calls and GPU work of %zu rank%s), edges: %zu thread, %zu launch, %zu stream, "
		    "%zu inferred waits, %zu synchronisations, %zu collective%s; typical delays: launch %.1f us, "
		    "between a stream's kernels %.1f us",
		    c.g.n_nodes - c.g.n_colls, rs->n, rs->n == 1 ? "" : "s", n_edges[GE_THREAD], n_edges[GE_LAUNCH], n_edges[GE_STREAM],
		    n_edges[GE_WAIT], n_edges[GE_SYNC], n_edges[GE_COLL], coll_note, (double)c.g.typical[GE_LAUNCH] / 1e3,
		    (double)c.g.typical[GE_STREAM] / 1e3);
	report_note(r, "parts: of rank %u's GPU over each step's host span; replayed: the graph re-timed with no rule "
		       "(every deciding edge keeps its recorded delay, so it gives the recorded times back); "
		       "predictions re-time the counted steps from the first one's start (what ran before keeps its recorded "
		       "times) and are at least the GPU's time per step (from that start to the last end of their work, "
		       "over their number, less what that exceeded the measured step by)",
		    replay_ranks_rank(rs, 0));
	{
		size_t apis = 0, gpu = 0;

		for (size_t i = 0; i < c.g.n_nodes; i++) {
			apis += c.g.nodes[i].kind == GN_API;
			gpu += c.g.nodes[i].kind == GN_GPU;
		}
		if (gpu && !apis)
			report_note(r, "host: the bundle holds no API calls (%zu kernels, copies and memsets, 0 calls): the "
				       "host is not in the graph, so launch-bound, host work, Unrecorded and the rules that "
				       "change the host (graph, host=K, no-sync, unrecorded, fuse=compile, data=K) see nothing "
				       "of it (an armed window recorded before 2026-11-29 held none: record it again)", gpu);
	}
	if (c.g.cut)
		report_note(r, "graph: %zu events of equal times formed cycles; they keep their recorded order", c.g.cut);
	if (c.g.coll_most)
		report_note(r, "collectives: the ranks ran different numbers of them (rank %u %zu, rank %u %zu): the "
			       "k-th of each rank are taken as one, the first %zu; the rest wait for no other rank",
			    replay_ranks_rank(rs, c.g.coll_fewest_rank), c.g.coll_fewest,
			    replay_ranks_rank(rs, c.g.coll_most_rank), c.g.coll_most, c.g.coll_fewest);
done:
	if (on_path != c.meas)
		free(on_path);
	explain_path_release(&cp);
	ctx_release(&c);
	return 0;
fail:
	if (on_path != c.meas)
		free(on_path);
	explain_path_release(&cp);
	ctx_release(&c);
	return -1;
}
