/*
 * timeline.c: the timeline's data (see timeline.h). Numbers
 * are written as they are walked; strings get a local index the first time
 * they are seen and are written once, at the end. Times are placed on the
 * run's time line (a rank's offset added) before anything compares them.
 */
#include "report/timeline.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/category.h"
#include "lib/error.h"
#include "lib/stats.h"
#include "lib/grow.h"
#include "render/html.h"
#include "render/svg.h"

#define MAX_DEPTH 32   /* range rows per thread; deeper ranges are left out */

/* The document's strings: each rank's replay string ids and range paths, each once. */
struct strtab {
	const struct report_timeline_rank *ranks;
	size_t n_ranks;
	uint32_t **of_str, **of_path;  /* per rank: local index; 0 = not yet (local 0 is "") */
	struct strtab_entry {
		uint32_t id, rank;
		bool path;
	} *order;
	size_t n, alloc;
	bool oom;
};

static void strtab_release(struct strtab *t)
{
	for (size_t k = 0; k < t->n_ranks; k++) {
		free(t->of_str ? t->of_str[k] : NULL);
		free(t->of_path ? t->of_path[k] : NULL);
	}
	free(t->of_str);
	free(t->of_path);
	free(t->order);
}

static int strtab_init(struct strtab *t, const struct report_timeline_rank *ranks, size_t n)
{
	memset(t, 0, sizeof(*t));
	t->ranks = ranks;
	t->n_ranks = n;
	t->of_str = calloc(n, sizeof(*t->of_str));
	t->of_path = calloc(n, sizeof(*t->of_path));
	if (!t->of_str || !t->of_path || ALLOC_GROW(t->order, 1, t->alloc) < 0)
		return error("out of memory for the timeline");
	for (size_t k = 0; k < n; k++) {
		t->of_str[k] = calloc(ranks[k].rp->n_strings + 1, sizeof(**t->of_str));
		t->of_path[k] = calloc(ranks[k].rp->n_paths + 1, sizeof(**t->of_path));
		if (!t->of_str[k] || !t->of_path[k])
			return error("out of memory for the timeline");
	}
	t->order[t->n++] = (struct strtab_entry){ 0, 0, false };
	return 0;
}

/* The local index of rank k's string id (path false) or range path index (path true); 0 when unknown. */
static uint32_t strtab_add(struct strtab *t, size_t k, uint32_t id, bool path)
{
	const struct replay *rp = t->ranks[k].rp;
	uint32_t *slot;

	if (path ? id >= rp->n_paths : id == 0 || id >= rp->n_strings)
		return 0;
	slot = path ? &t->of_path[k][id] : &t->of_str[k][id];
	if (*slot)
		return *slot;
	if (ALLOC_GROW(t->order, t->n + 1, t->alloc) < 0) {
		t->oom = true;
		return 0;
	}
	t->order[t->n] = (struct strtab_entry){ id, (uint32_t)k, path };
	return *slot = (uint32_t)t->n++;
}

static void strtab_write(FILE *out, const struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct strtab_entry *e = &t->order[i];
		const struct replay *rp = t->ranks[e->rank].rp;

		if (i)
			fputc(',', out);
		html_json_string(out, e->path ? replay_path_str(rp, e->id) : replay_str(rp, e->id));
	}
}

/* ---- which steps -------------------------------------------------------- */

/* Steps are the first rank's, by position: the ranks of one run record the same steps. */
struct selection {
	bool *step_in;          /* per step of the first rank; NULL without steps (everything is in) */
	size_t n_steps;         /* the first rank's */
	int32_t first;          /* the step the view opens on, -1 without steps */
	uint64_t t0, t1;        /* the window of the steps shown, on the run's time line */
	uint64_t cut;           /* slices starting at or after this are left out; UINT64_MAX none */
	size_t cut_kept;        /* slices kept before the cut */
	size_t steps_left_out;
};

/* t of rank r on the run's time line (unsigned: a bundle's times reach 2^63, as export's). */
static uint64_t at(const struct report_timeline_rank *r, uint64_t t)
{
	return t + (uint64_t)r->offset;
}

static bool step_of(const struct selection *s, const struct replay *rp, int32_t step)
{
	return step >= 0 && (size_t)step < s->n_steps && (size_t)step < rp->n_steps;
}

static bool selected(const struct selection *s, const struct report_timeline_rank *r, int32_t step, uint64_t start)
{
	if (at(r, start) >= s->cut)
		return false;
	if (!s->step_in)
		return true;
	return step_of(s, r->rp, step) && s->step_in[step];
}

/* The start of the budget-th earliest slice of `step` (-1: of everything) over the ranks, where the cut goes. */
static int cut_at_budget(struct selection *s, const struct report_timeline_rank *ranks, size_t n_ranks,
			 int32_t step, size_t budget)
{
	size_t total = 0, n = 0;
	uint64_t *starts;

	for (size_t k = 0; k < n_ranks; k++)
		total += ranks[k].rp->n_activities + ranks[k].rp->n_ranges;
	starts = malloc((total + 1) * sizeof(*starts));
	if (!starts)
		return error("out of memory for the timeline");
	for (size_t k = 0; k < n_ranks; k++) {
		const struct replay *rp = ranks[k].rp;

		for (size_t i = 0; i < rp->n_activities; i++)
			if (step < 0 || rp->activities[i].step == step)
				starts[n++] = at(&ranks[k], rp->activities[i].start);
		for (size_t i = 0; i < rp->n_ranges; i++)
			if (step < 0 || rp->ranges[i].step == step)
				starts[n++] = at(&ranks[k], rp->ranges[i].start);
	}
	if (n > budget) {
		qsort(starts, n, sizeof(*starts), stats_cmp_u64);
		s->cut = starts[budget];
		s->cut_kept = budget;
	}
	free(starts);
	return 0;
}

/* Every rank's slices per step of the first rank; the caller frees it. NULL after an error line. */
static size_t *count_per_step(const struct selection *s, const struct report_timeline_rank *ranks, size_t n_ranks)
{
	size_t *count = calloc(s->n_steps, sizeof(*count));

	if (!count) {
		error("out of memory for the timeline");
		return NULL;
	}
	for (size_t k = 0; k < n_ranks; k++) {
		const struct replay *rp = ranks[k].rp;

		for (size_t i = 0; i < rp->n_activities; i++)
			if (step_of(s, rp, rp->activities[i].step))
				count[rp->activities[i].step]++;
		for (size_t i = 0; i < rp->n_ranges; i++)
			if (step_of(s, rp, rp->ranges[i].step))
				count[rp->ranges[i].step]++;
	}
	return count;
}

/* The window: every rank's events, or the steps chosen, on the run's time line. */
static void select_window(struct selection *s, const struct report_timeline_rank *ranks, size_t n_ranks)
{
	s->t0 = UINT64_MAX;
	s->t1 = 0;
	for (size_t k = 0; k < n_ranks; k++) {
		const struct report_timeline_rank *r = &ranks[k];

		if (!s->step_in) {
			s->t0 = at(r, r->rp->t_min) < s->t0 ? at(r, r->rp->t_min) : s->t0;
			s->t1 = at(r, r->rp->t_max) > s->t1 ? at(r, r->rp->t_max) : s->t1;
			continue;
		}
		for (size_t i = 0; i < s->n_steps && i < r->rp->n_steps; i++) {
			const struct replay_step *st = &r->rp->steps[i];
			if (!s->step_in[i])
				continue;
			s->t0 = at(r, st->start) < s->t0 ? at(r, st->start) : s->t0;
			s->t1 = at(r, st->end) > s->t1 ? at(r, st->end) : s->t1;
			s->t1 = at(r, st->gpu_end) > s->t1 ? at(r, st->gpu_end) : s->t1;
		}
	}
}

static int select_steps(struct selection *s, const struct report_timeline_rank *ranks, size_t n_ranks,
			size_t budget)
{
	const struct replay *lead = ranks[0].rp;
	size_t *count, total = 0;

	memset(s, 0, sizeof(*s));
	s->cut = UINT64_MAX;
	s->first = -1;
	if (lead->n_steps == 0) {
		select_window(s, ranks, n_ranks);
		for (size_t k = 0; k < n_ranks; k++)
			total += ranks[k].rp->n_activities + ranks[k].rp->n_ranges;
		return total > budget ? cut_at_budget(s, ranks, n_ranks, -1, budget) : 0;
	}
	s->n_steps = lead->n_steps;
	count = count_per_step(s, ranks, n_ranks);
	s->step_in = calloc(lead->n_steps, sizeof(*s->step_in));   /* the caller frees it */
	if (!count || !s->step_in) {
		free(count);
		return count ? error("out of memory for the timeline") : -1;
	}
	s->first = 0;
	for (size_t i = 0; i < lead->n_steps; i++)
		if (!lead->steps[i].warmup) {
			s->first = (int32_t)i;
			break;
		}
	s->step_in[s->first] = true;
	total = count[s->first];
	for (size_t i = 0; i < lead->n_steps; i++) {
		if (s->step_in[i])
			continue;
		if (total + count[i] <= budget) {
			s->step_in[i] = true;
			total += count[i];
		} else {
			s->steps_left_out++;
		}
	}
	free(count);
	select_window(s, ranks, n_ranks);
	return total > budget ? cut_at_budget(s, ranks, n_ranks, s->first, budget) : 0;
}

/* ---- the document ------------------------------------------------------- */

/* t - t0 as a signed number: a range may start before the first step it belongs to. */
static int64_t rel(uint64_t t, uint64_t t0)
{
	return t >= t0 ? (int64_t)(t - t0) : -(int64_t)(t0 - t);
}

static uint64_t dur(uint64_t start, uint64_t end)
{
	return end > start ? end - start : 0;
}

/* A step's span: the union of its ranks' (host and GPU). */
static void step_span(const struct report_timeline_rank *ranks, size_t n_ranks, size_t i, uint64_t *start,
		      uint64_t *end)
{
	*start = UINT64_MAX;
	*end = 0;
	for (size_t k = 0; k < n_ranks; k++) {
		const struct replay_step *st;

		if (i >= ranks[k].rp->n_steps)
			continue;
		st = &ranks[k].rp->steps[i];
		*start = at(&ranks[k], st->start) < *start ? at(&ranks[k], st->start) : *start;
		*end = at(&ranks[k], st->end) > *end ? at(&ranks[k], st->end) : *end;
		*end = at(&ranks[k], st->gpu_end) > *end ? at(&ranks[k], st->gpu_end) : *end;
	}
}

static void write_steps(FILE *out, const struct report_timeline_rank *ranks, size_t n_ranks,
			const struct selection *s)
{
	const struct replay *lead = ranks[0].rp;
	int first = 0, n = 0;
	uint64_t start, end;

	fputs("\"steps\":[", out);
	for (size_t i = 0; i < lead->n_steps; i++) {
		const struct replay_step *st = &lead->steps[i];
		if (!s->step_in[i])
			continue;
		if ((int32_t)i == s->first)
			first = n;
		step_span(ranks, n_ranks, i, &start, &end);
		fprintf(out, "%s[%" PRIu32 ",%d,%" PRId64 ",%" PRId64 "]", n++ ? "," : "", st->index, st->warmup ? 1 : 0,
			rel(start, s->t0), rel(end, s->t0));
	}
	fprintf(out, "],\"first\":%d,\n", first);
}

/*
 * Before a track's item: the track's object ({"name": ..., "rank": k,
 * "KEY": [) for its first, a comma for the others. *n counts the track's
 * items, *tracks the tracks written; a track without items is not written
 * at all.
 */
static void track_item(FILE *out, size_t *n, int *tracks, const char *name, size_t rank, const char *key)
{
	if ((*n)++) {
		fputc(',', out);
		return;
	}
	fprintf(out, "%s\n{\"name\":", (*tracks)++ ? "," : "");
	html_json_string(out, name);
	fprintf(out, ",\"rank\":%zu,\"%s\":[", rank, key);
}

/* Rank k's streams; *written counts the tracks written so far. */
static int write_streams(FILE *out, const struct report_timeline_rank *r, size_t k, const struct selection *s,
			 struct strtab *st, int *written)
{
	const struct replay *rp = r->rp;
	struct category_cache cc;
	bool devices = false;

	if (category_cache_init(&cc, rp) < 0)
		return -1;
	for (size_t i = 1; i < rp->n_streams; i++)
		devices |= rp->streams[i].device != rp->streams[0].device;
	for (size_t i = 0; i < rp->n_streams; i++) {
		const struct replay_stream *sm = &rp->streams[i];
		char name[64];
		size_t n = 0;

		if (devices)
			snprintf(name, sizeof(name), "GPU %" PRIu32 " stream %" PRIu32, sm->device, sm->stream);
		else
			snprintf(name, sizeof(name), "stream %" PRIu32, sm->stream);
		for (size_t j = 0; j < sm->n; j++) {
			const struct replay_activity *a = &rp->activities[sm->acts[j]];
			const struct replay_op *op = replay_op(rp, a->op);
			uint32_t path;

			if (!selected(s, r, a->step, a->start))
				continue;
			track_item(out, &n, written, name, k, "s");
			path = op && op->path ? strtab_add(st, k, op->path, false)
			     : a->range >= 0 ? strtab_add(st, k, rp->ranges[a->range].path, true) : 0;
			fprintf(out, "%" PRId64 ",%" PRIu64 ",%" PRIu32 ",%d,%" PRIu32, rel(at(r, a->start), s->t0),
				dur(a->start, a->end), strtab_add(st, k, a->name, false), (int)category_cached(&cc, a),
				path);
		}
		if (n)
			fputs("]}", out);
	}
	category_cache_release(&cc);
	return 0;
}

/* Rank k's threads; returns the number of ranges left out for their depth. */
static size_t write_threads(FILE *out, const struct report_timeline_rank *r, size_t k, const struct selection *s,
			    struct strtab *st, int *written)
{
	const struct replay *rp = r->rp;
	size_t too_deep = 0;

	for (size_t i = 0; i < rp->n_threads; i++) {
		const struct replay_thread *th = &rp->threads[i];
		char name[64];
		size_t n = 0;

		snprintf(name, sizeof(name), "thread %" PRIu64 "%s", th->thread,
			 th->thread == rp->main_thread ? " (main)" : "");
		for (size_t j = 0; j < th->n_ranges; j++) {
			const struct replay_range *rg = &rp->ranges[th->ranges[j]];

			if (!selected(s, r, rg->step, rg->start))
				continue;
			if (rg->depth >= MAX_DEPTH) {
				too_deep++;
				continue;
			}
			track_item(out, &n, written, name, k, "r");
			fprintf(out, "%" PRId64 ",%" PRIu64 ",%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%" PRIu64,
				rel(at(r, rg->start), s->t0), dur(rg->start, rg->end), rg->depth,
				strtab_add(st, k, rg->name, false), strtab_add(st, k, rg->path, true), rg->gpu_busy);
		}
		if (n)
			fputs("]}", out);
	}
	return too_deep;
}

/* Rank k's live total over the window, from the last value before it. Returns points left out. */
static size_t write_memory(FILE *out, const struct report_timeline_rank *r, size_t k, const struct selection *s,
			   size_t budget)
{
	const struct mem_timeline *tl = r->tl;
	uint64_t before = 0;
	size_t i = 0, n = 0;

	fprintf(out, "%s{\"view\":", k ? "," : "");
	html_json_string(out, tl && tl->n_points ? mem_view_name(tl->view) : "");
	fprintf(out, ",\"rank\":%zu,\"p\":[", k);
	if (!tl || !tl->n_points) {
		fputs("]}", out);
		return 0;
	}
	for (; i < tl->n_points && at(r, tl->points[i].t) < s->t0; i++)
		before = tl->points[i].live;
	fprintf(out, "0,%" PRIu64, before);
	for (; i < tl->n_points && at(r, tl->points[i].t) <= s->t1 && at(r, tl->points[i].t) < s->cut; i++) {
		if (n++ >= budget)
			break;
		fprintf(out, ",%" PRId64 ",%" PRIu64, rel(at(r, tl->points[i].t), s->t0), tl->points[i].live);
	}
	fputs("]}", out);
	return n > budget ? 1 : 0;
}

static void write_omitted(FILE *out, const struct selection *s, size_t budget, size_t too_deep, size_t mem_cut)
{
	char text[1024] = "";
	size_t len = 0;

	if (s->steps_left_out)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%zu of %zu steps are left out to keep the page "
					"small (at most %zu slices); steptrace export writes every step. ",
					s->steps_left_out, s->n_steps, budget);
	if (s->cut != UINT64_MAX && len < sizeof(text))
		len += (size_t)snprintf(text + len, sizeof(text) - len, "Only the first %zu slices %s are drawn; "
					"steptrace export writes all of it. ", s->cut_kept,
					s->first >= 0 ? "of the step" : "of the recording");
	if (too_deep && len < sizeof(text))
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%zu ranges deeper than %d levels are left "
					"out. ", too_deep, MAX_DEPTH);
	if (mem_cut && len < sizeof(text))
		snprintf(text + len, sizeof(text) - len, "The memory counter stops after %zu changes. ", budget);
	fputs("\"omitted\":", out);
	html_json_string(out, text);
	fputs(",\n", out);
}

/* "t0": the window's start after the first event of any rank. */
static uint64_t first_event(const struct report_timeline_rank *ranks, size_t n_ranks)
{
	uint64_t t = UINT64_MAX;

	for (size_t k = 0; k < n_ranks; k++)
		t = at(&ranks[k], ranks[k].rp->t_min) < t ? at(&ranks[k], ranks[k].rp->t_min) : t;
	return t;
}

static void write_head(FILE *out, const struct report_timeline_rank *ranks, size_t n_ranks,
		       const struct selection *s, const char *id)
{
	fputs("<script type=\"application/json\"", out);
	html_attr(out, "id", "%s", id);
	fprintf(out, ">{\"t0\":%" PRIu64 ",\n\"ranks\":[", s->t0 - first_event(ranks, n_ranks));
	for (size_t k = 0; n_ranks > 1 && k < n_ranks; k++)
		fprintf(out, "%s%" PRIu32, k ? "," : "", ranks[k].rank);
	fputs("],\n", out);
	if (s->step_in)
		write_steps(out, ranks, n_ranks, s);
	else
		fprintf(out, "\"steps\":[],\"first\":0,\n");
	fputs("\"cats\":[", out);
	for (int c = 0; c < CAT_COUNT; c++) {
		fputs(c ? ",[" : "[", out);
		html_json_string(out, category_name((enum kernel_category)c));
		fputc(',', out);
		html_json_string(out, svg_series_color(c));
		fputc(']', out);
	}
	fputs("],\n", out);
}

int report_timeline_write_ranks(FILE *out, const struct report_timeline_rank *ranks, size_t n_ranks, const char *id,
				size_t budget)
{
	struct selection s = { .step_in = NULL };
	struct strtab st;
	size_t too_deep = 0, mem_cut = 0;
	int written = 0, rc = -1;

	if (strtab_init(&st, ranks, n_ranks) < 0 || select_steps(&s, ranks, n_ranks, budget) < 0)
		goto out;
	write_head(out, ranks, n_ranks, &s, id);
	fputs("\"streams\":[", out);
	for (size_t k = 0; k < n_ranks; k++)
		if (write_streams(out, &ranks[k], k, &s, &st, &written) < 0)
			goto out;
	fputs("],\n\"threads\":[", out);
	written = 0;
	for (size_t k = 0; k < n_ranks; k++)
		too_deep += write_threads(out, &ranks[k], k, &s, &st, &written);
	fputs("],\n\"mem\":[", out);
	for (size_t k = 0; k < n_ranks; k++)
		mem_cut += write_memory(out, &ranks[k], k, &s, budget);
	fputs("],\n", out);
	write_omitted(out, &s, budget, too_deep, mem_cut);
	fputs("\"strings\":[", out);
	strtab_write(out, &st);
	fputs("]}</script>\n", out);
	rc = st.oom ? error("out of memory for the timeline") : 0;
out:
	free(s.step_in);
	strtab_release(&st);
	return rc;
}

int report_timeline_write(FILE *out, const struct replay *rp, const struct mem_timeline *tl, const char *id,
			  size_t budget)
{
	const struct report_timeline_rank one = { rp, tl, 0, 0 };

	return report_timeline_write_ranks(out, &one, 1, id, budget);
}
