/*
 * period.c: the steps of a "whole run" bundle found by the period of its
 * launch sequence (the rules are in period.h).
 */
#include "replay/period.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "replay/internal.h"

int64_t period_suffix(const uint64_t *keys, size_t n, unsigned min_repeats, size_t *start)
{
	uint32_t *border;
	size_t best_len = 0, best_p = 0;

	*start = n;
	if (n == 0 || n > UINT32_MAX || min_repeats == 0)
		return 0;
	border = malloc(n * sizeof(*border));
	if (!border)
		return error("out of memory while looking for the launch period (%zu launches)", n);
	/*
	 * border[i]: the longest proper border of the reversed sequence's
	 * first i + 1 keys (the suffix of length i + 1 read backwards); that
	 * suffix's smallest period is i + 1 - border[i].
	 */
#define REV(i) keys[n - 1 - (i)]
	border[0] = 0;
	for (size_t i = 1; i < n; i++) {
		uint32_t k = border[i - 1];

		while (k > 0 && REV(i) != REV(k))
			k = border[k - 1];
		border[i] = k + (REV(i) == REV(k));
	}
#undef REV
	for (size_t len = 1; len <= n; len++) {
		size_t p = len - border[len - 1];

		if ((uint64_t)p * min_repeats <= len) {
			best_len = len;
			best_p = p;
		}
	}
	free(border);
	if (!best_len)
		return 0;
	*start = n - best_len;
	return (int64_t)best_p;
}

static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

int period_rotation(const uint64_t *gap, const uint8_t *cut_ok, size_t start, size_t n, size_t p,
		    size_t *rotation)
{
	uint64_t *score = calloc(p + 1, sizeof(*score));
	uint8_t *bad = calloc(p + 1, 1);
	int found = 0;

	if (!score || !bad) {
		free(score);
		free(bad);
		return error("out of memory while cutting the launch period (%zu launches)", p);
	}
	for (size_t i = start, r = 0; i < n; i++) {
		if (!cut_ok[i])
			bad[r] = 1;
		else
			score[r] = add_sat(score[r], gap[i]);
		if (++r == p)
			r = 0;
	}
	for (size_t r = 0; r < p; r++)
		if (!bad[r] && (!found || score[r] > score[*rotation])) {
			*rotation = r;
			found = 1;
		}
	free(score);
	free(bad);
	return found;
}

/* A launch's key: kernels by name, copies and memsets by name (their kind) and size class. */
static uint64_t launch_key(const struct replay_activity *a)
{
	unsigned size_class = 0;

	if (a->kind != ST_KERNEL)
		for (uint64_t b = a->bytes; b; b >>= 1)
			size_class++;
	return (uint64_t)a->kind << 48 | (uint64_t)a->name << 8 | size_class;
}

/* The thread whose calls launched most activities (lowest id on a tie), -1 when none did. */
static int32_t launching_thread(const struct replay *rp, const uint32_t *launched)
{
	int32_t best = -1;
	uint64_t most = 0;

	for (size_t ti = 0; ti < rp->n_threads; ti++) {
		const struct replay_thread *t = &rp->threads[ti];
		uint64_t sum = 0;

		for (size_t j = 0; j < t->n_apis; j++)
			sum += launched[t->apis[j]];
		if (sum > most) {
			most = sum;
			best = (int32_t)ti;
		}
	}
	return best;
}

/*
 * The end of the step whose last launching call is `last_call` and whose
 * GPU work ends at gpu_end: the latest end among the thread's calls from
 * last_call on that start by gpu_end.
 */
static uint64_t last_step_end(const struct replay *rp, const struct replay_thread *t, uint32_t last_call,
			      uint64_t gpu_end)
{
	size_t lo = 0, hi = t->n_apis;
	uint64_t end = rp->apis[last_call].end;

	while (lo < hi) {   /* t->apis is increasing: find last_call */
		size_t mid = lo + (hi - lo) / 2;
		if (t->apis[mid] < last_call)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < t->n_apis && rp->apis[t->apis[lo]].start <= gpu_end; lo++)
		if (rp->apis[t->apis[lo]].end > end)
			end = rp->apis[t->apis[lo]].end;
	return end;
}

/*
 * The launch sequence of thread `t`: activity indices in call order, *n of
 * them; `launched` (each call's activity count) is used up. NULL when out
 * of memory.
 */
static uint32_t *launch_sequence(const struct replay *rp, const struct replay_thread *t, uint32_t *launched,
				 size_t *n)
{
	uint32_t *seq;
	size_t total = 0;

	for (size_t j = 0; j < t->n_apis; j++)
		total += launched[t->apis[j]];
	seq = malloc((total + 1) * sizeof(*seq));
	if (!seq)
		return NULL;
	/* launched[c] becomes the next slot of call c's activities; UINT32_MAX off the thread */
	for (size_t i = 0; i < rp->n_apis; i++)
		if (rp->apis[i].thread != t->thread)
			launched[i] = UINT32_MAX;
	for (size_t j = 0, at = 0; j < t->n_apis; j++) {
		uint32_t c = t->apis[j], k = launched[c];
		launched[c] = (uint32_t)at;
		at += k;
	}
	for (size_t i = 0; i < rp->n_activities; i++) {
		int32_t c = rp->activities[i].api;
		if (c >= 0 && launched[c] != UINT32_MAX)
			seq[launched[c]++] = (uint32_t)i;
	}
	*n = total;
	return seq;
}

static int replace_steps(struct replay *rp, const struct replay_thread *t, const uint32_t *seq, size_t n,
			 size_t start, size_t p)
{
	struct replay_priv *pv = rp->priv;
	struct replay_step *steps;
	size_t m = (n - start) / p, k;
	char buf[96];
	char *from;

	/* the full repetitions from the first cut, `start` (at least 2 of 3) */
	steps = calloc(m + 1, sizeof(*steps));
	snprintf(buf, sizeof(buf), "launch period: %zu launch%s per step, found by replay", p,
		 p == 1 ? "" : "es");
	from = replay_arena_strdup(rp, buf, strlen(buf));
	if (!steps || !from) {
		free(steps);
		return error("out of memory while making the steps of the launch period");
	}
	for (k = 0; k < m; k++) {
		struct replay_step *s = &steps[k];
		size_t cut = start + k * p, next = cut + p;

		s->index = (uint32_t)k;
		s->warmup = k == 0;
		s->thread = t->thread;
		s->start = rp->apis[rp->activities[seq[cut]].api].start;
		if (next < n) {
			s->end = rp->apis[rp->activities[seq[next]].api].start;
			if (k == m - 1 && s->end > s->start)
				s->end--;   /* the partial repetition after it is in no step */
		} else {
			uint64_t gpu_end = 0;
			for (size_t i = cut; i < n; i++)
				if (rp->activities[seq[i]].end > gpu_end)
					gpu_end = rp->activities[seq[i]].end;
			s->end = last_step_end(rp, t, (uint32_t)rp->activities[seq[n - 1]].api, gpu_end);
		}
	}
	free(rp->steps);
	rp->steps = steps;
	rp->n_steps = m;
	pv->cap_steps = m + 1;
	rp->n_measured_steps = m - 1;
	rp->run.steps_from = from;
	return 0;
}

int replay_period_steps(struct replay *rp)
{
	const char *recorded = rp->run.footer.steps_from;
	uint32_t *launched = NULL, *seq = NULL;
	uint64_t *keys = NULL;
	uint8_t *cut_ok = NULL;
	size_t n = 0, start, r;
	int64_t p;
	int32_t ti;
	int rc = -1;

	if (!rp->run.steps_from)
		rp->run.steps_from = recorded ? recorded : "";
	if (!recorded || strcmp(recorded, PERIOD_WHOLE_RUN) || rp->n_steps > 1)
		return 0;

	launched = calloc(rp->n_apis + 1, sizeof(*launched));
	if (!launched)
		goto oom;
	for (size_t i = 0; i < rp->n_activities; i++)
		if (rp->activities[i].api >= 0)
			launched[rp->activities[i].api]++;
	ti = launching_thread(rp, launched);
	if (ti < 0) {
		rc = 0;
		goto out;
	}
	seq = launch_sequence(rp, &rp->threads[ti], launched, &n);
	free(launched);
	launched = NULL;
	keys = malloc((n + 1) * sizeof(*keys));
	if (!seq || !keys)
		goto oom;
	for (size_t i = 0; i < n; i++)
		keys[i] = launch_key(&rp->activities[seq[i]]);
	p = period_suffix(keys, n, PERIOD_MIN_REPEATS, &start);
	if (p < 0)
		goto out;
	if (p == 0 || 2 * (n - start) < n) {
		rc = 0;
		goto out;
	}

	/* rule 4; the keys are done with: their room holds the gaps */
	cut_ok = malloc(n + 1);
	if (!cut_ok)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		const struct replay_api *c = &rp->apis[rp->activities[seq[i]].api], *prev;

		keys[i] = 0;
		cut_ok[i] = 1;
		if (i == 0)
			continue;
		prev = &rp->apis[rp->activities[seq[i - 1]].api];
		if (prev == c)
			cut_ok[i] = 0;
		else if (c->start > prev->end)
			keys[i] = c->start - prev->end;
	}
	rc = period_rotation(keys, cut_ok, start, n, (size_t)p, &r);
	if (rc > 0)
		rc = replace_steps(rp, &rp->threads[ti], seq, n, start + r, (size_t)p);
	goto out;
oom:
	error("out of memory while looking for the launch period");
out:
	free(launched);
	free(seq);
	free(keys);
	free(cut_ok);
	return rc;
}
