/*
 * report_timeline.c: the timeline's data (see report_timeline.h). Numbers
 * are written as they are walked; strings get a local index the first time
 * they are seen and are written once, at the end.
 */
#include "analyze/report_timeline.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/category.h"
#include "analyze/html.h"
#include "analyze/svg.h"
#include "lib/error.h"
#include "lib/grow.h"

#define MAX_DEPTH 32   /* range rows per thread; deeper ranges are left out */

/* The document's strings: replay string ids and range paths, each once. */
struct strtab {
	const struct replay *rp;
	uint32_t *of_str, *of_path;    /* local index; 0 = not yet (local 0 is "") */
	struct strtab_entry {
		uint32_t id;
		bool path;
	} *order;
	size_t n, alloc;
	bool oom;
};

static int strtab_init(struct strtab *t, const struct replay *rp)
{
	memset(t, 0, sizeof(*t));
	t->rp = rp;
	t->of_str = calloc(rp->n_strings + 1, sizeof(*t->of_str));
	t->of_path = calloc(rp->n_paths + 1, sizeof(*t->of_path));
	if (!t->of_str || !t->of_path || ALLOC_GROW(t->order, 1, t->alloc) < 0)
		return error("out of memory for the timeline");
	t->order[t->n++] = (struct strtab_entry){ 0, false };
	return 0;
}

static void strtab_release(struct strtab *t)
{
	free(t->of_str);
	free(t->of_path);
	free(t->order);
}

/* The local index of string id (path false) or range path index (path true); 0 when unknown. */
static uint32_t strtab_add(struct strtab *t, uint32_t id, bool path)
{
	uint32_t *slot;

	if (path ? id >= t->rp->n_paths : id == 0 || id >= t->rp->n_strings)
		return 0;
	slot = path ? &t->of_path[id] : &t->of_str[id];
	if (*slot)
		return *slot;
	if (ALLOC_GROW(t->order, t->n + 1, t->alloc) < 0) {
		t->oom = true;
		return 0;
	}
	t->order[t->n] = (struct strtab_entry){ id, path };
	return *slot = (uint32_t)t->n++;
}

static void strtab_write(FILE *out, const struct strtab *t)
{
	for (size_t i = 0; i < t->n; i++) {
		const struct strtab_entry *e = &t->order[i];

		if (i)
			fputc(',', out);
		html_json_string(out, e->path ? replay_path_str(t->rp, e->id) : replay_str(t->rp, e->id));
	}
}

/* ---- which steps -------------------------------------------------------- */

struct selection {
	bool *step_in;          /* per replay step; NULL without steps (everything is in) */
	int32_t first;          /* the step the view opens on, -1 without steps */
	uint64_t t0, t1;        /* the window of the steps shown */
	uint64_t cut;           /* slices starting at or after this are left out; UINT64_MAX none */
	size_t cut_kept;        /* slices kept before the cut */
	size_t steps_left_out;
};

static bool selected(const struct selection *s, const struct replay *rp, int32_t step, uint64_t start)
{
	if (start >= s->cut)
		return false;
	if (!s->step_in)
		return true;
	return step >= 0 && (size_t)step < rp->n_steps && s->step_in[step];
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The start of the budget-th earliest slice of `step` (-1: of everything), where the cut goes. */
static int cut_at_budget(struct selection *s, const struct replay *rp, int32_t step, size_t budget)
{
	uint64_t *starts = malloc((rp->n_activities + rp->n_ranges + 1) * sizeof(*starts));
	size_t n = 0;

	if (!starts)
		return error("out of memory for the timeline");
	for (size_t i = 0; i < rp->n_activities; i++)
		if (step < 0 || rp->activities[i].step == step)
			starts[n++] = rp->activities[i].start;
	for (size_t i = 0; i < rp->n_ranges; i++)
		if (step < 0 || rp->ranges[i].step == step)
			starts[n++] = rp->ranges[i].start;
	if (n > budget) {
		qsort(starts, n, sizeof(*starts), cmp_u64);
		s->cut = starts[budget];
		s->cut_kept = budget;
	}
	free(starts);
	return 0;
}

static int select_steps(struct selection *s, const struct replay *rp, size_t budget)
{
	size_t *count, total;

	memset(s, 0, sizeof(*s));
	s->cut = UINT64_MAX;
	s->first = -1;
	if (rp->n_steps == 0) {
		s->t0 = rp->t_min;
		s->t1 = rp->t_max;
		return rp->n_activities + rp->n_ranges > budget ? cut_at_budget(s, rp, -1, budget) : 0;
	}
	count = calloc(rp->n_steps, sizeof(*count));
	s->step_in = calloc(rp->n_steps, sizeof(*s->step_in));   /* the caller frees it */
	if (!count || !s->step_in) {
		free(count);
		return error("out of memory for the timeline");
	}
	for (size_t i = 0; i < rp->n_activities; i++)
		if (rp->activities[i].step >= 0 && (size_t)rp->activities[i].step < rp->n_steps)
			count[rp->activities[i].step]++;
	for (size_t i = 0; i < rp->n_ranges; i++)
		if (rp->ranges[i].step >= 0 && (size_t)rp->ranges[i].step < rp->n_steps)
			count[rp->ranges[i].step]++;
	s->first = 0;
	for (size_t i = 0; i < rp->n_steps; i++)
		if (!rp->steps[i].warmup) {
			s->first = (int32_t)i;
			break;
		}
	s->step_in[s->first] = true;
	total = count[s->first];
	for (size_t i = 0; i < rp->n_steps; i++) {
		if (s->step_in[i])
			continue;
		if (total + count[i] <= budget) {
			s->step_in[i] = true;
			total += count[i];
		} else {
			s->steps_left_out++;
		}
	}
	s->t0 = UINT64_MAX;
	for (size_t i = 0; i < rp->n_steps; i++) {
		const struct replay_step *st = &rp->steps[i];
		if (!s->step_in[i])
			continue;
		s->t0 = st->start < s->t0 ? st->start : s->t0;
		s->t1 = st->end > s->t1 ? st->end : s->t1;
		s->t1 = st->gpu_end > s->t1 ? st->gpu_end : s->t1;
	}
	free(count);
	return total > budget ? cut_at_budget(s, rp, s->first, budget) : 0;
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

static void write_steps(FILE *out, const struct replay *rp, const struct selection *s)
{
	int first = 0, n = 0;

	fputs("\"steps\":[", out);
	for (size_t i = 0; i < rp->n_steps; i++) {
		const struct replay_step *st = &rp->steps[i];
		if (!s->step_in[i])
			continue;
		if ((int32_t)i == s->first)
			first = n;
		fprintf(out, "%s[%" PRIu32 ",%d,%" PRId64 ",%" PRId64 "]", n++ ? "," : "", st->index, st->warmup ? 1 : 0,
			rel(st->start, s->t0), rel(st->end > st->gpu_end ? st->end : st->gpu_end, s->t0));
	}
	fprintf(out, "],\"first\":%d,\n", first);
}

/*
 * Before a track's item: the track's object ({"name": ..., "KEY": [) for
 * its first, a comma for the others. *n counts the track's items, *tracks
 * the tracks written; a track without items is not written at all.
 */
static void track_item(FILE *out, size_t *n, int *tracks, const char *name, const char *key)
{
	if ((*n)++) {
		fputc(',', out);
		return;
	}
	fprintf(out, "%s\n{\"name\":", (*tracks)++ ? "," : "");
	html_json_string(out, name);
	fprintf(out, ",\"%s\":[", key);
}

static int write_streams(FILE *out, const struct replay *rp, const struct selection *s, struct strtab *st)
{
	struct category_cache cc;
	bool devices = false;
	int written = 0;

	if (category_cache_init(&cc, rp) < 0)
		return -1;
	for (size_t i = 1; i < rp->n_streams; i++)
		devices |= rp->streams[i].device != rp->streams[0].device;
	fputs("\"streams\":[", out);
	for (size_t i = 0; i < rp->n_streams; i++) {
		const struct replay_stream *sm = &rp->streams[i];
		char name[64];
		size_t n = 0;

		if (devices)
			snprintf(name, sizeof(name), "GPU %" PRIu32 " stream %" PRIu32, sm->device, sm->stream);
		else
			snprintf(name, sizeof(name), "stream %" PRIu32, sm->stream);
		for (size_t k = 0; k < sm->n; k++) {
			const struct replay_activity *a = &rp->activities[sm->acts[k]];
			const struct replay_op *op = replay_op(rp, a->op);
			uint32_t path;

			if (!selected(s, rp, a->step, a->start))
				continue;
			track_item(out, &n, &written, name, "s");
			path = op && op->path ? strtab_add(st, op->path, false)
			     : a->range >= 0 ? strtab_add(st, rp->ranges[a->range].path, true) : 0;
			fprintf(out, "%" PRId64 ",%" PRIu64 ",%" PRIu32 ",%d,%" PRIu32, rel(a->start, s->t0),
				dur(a->start, a->end), strtab_add(st, a->name, false), (int)category_cached(&cc, a), path);
		}
		if (n)
			fputs("]}", out);
	}
	fputs("],\n", out);
	category_cache_release(&cc);
	return 0;
}

/* Returns the number of ranges left out for their depth. */
static size_t write_threads(FILE *out, const struct replay *rp, const struct selection *s, struct strtab *st)
{
	size_t too_deep = 0;
	int written = 0;

	fputs("\"threads\":[", out);
	for (size_t i = 0; i < rp->n_threads; i++) {
		const struct replay_thread *th = &rp->threads[i];
		char name[64];
		size_t n = 0;

		snprintf(name, sizeof(name), "thread %" PRIu64 "%s", th->thread,
			 th->thread == rp->main_thread ? " (main)" : "");
		for (size_t k = 0; k < th->n_ranges; k++) {
			const struct replay_range *r = &rp->ranges[th->ranges[k]];

			if (!selected(s, rp, r->step, r->start))
				continue;
			if (r->depth >= MAX_DEPTH) {
				too_deep++;
				continue;
			}
			track_item(out, &n, &written, name, "r");
			fprintf(out, "%" PRId64 ",%" PRIu64 ",%" PRIu32 ",%" PRIu32 ",%" PRIu32 ",%" PRIu64,
				rel(r->start, s->t0), dur(r->start, r->end), r->depth, strtab_add(st, r->name, false),
				strtab_add(st, r->path, true), r->gpu_busy);
		}
		if (n)
			fputs("]}", out);
	}
	fputs("],\n", out);
	return too_deep;
}

/* The live total over the window, from the last value before it. Returns points left out. */
static size_t write_memory(FILE *out, const struct mem_timeline *tl, const struct selection *s, size_t budget)
{
	uint64_t before = 0;
	size_t i = 0, n = 0;

	fputs("\"mem\":{\"view\":", out);
	html_json_string(out, tl && tl->n_points ? mem_view_name(tl->view) : "");
	fputs(",\"p\":[", out);
	if (!tl || !tl->n_points) {
		fputs("]},\n", out);
		return 0;
	}
	for (; i < tl->n_points && tl->points[i].t < s->t0; i++)
		before = tl->points[i].live;
	fprintf(out, "0,%" PRIu64, before);
	for (; i < tl->n_points && tl->points[i].t <= s->t1 && tl->points[i].t < s->cut; i++) {
		if (n++ >= budget)
			break;
		fprintf(out, ",%" PRId64 ",%" PRIu64, rel(tl->points[i].t, s->t0), tl->points[i].live);
	}
	fputs("]},\n", out);
	return n > budget ? 1 : 0;
}

static void write_omitted(FILE *out, const struct replay *rp, const struct selection *s, size_t budget,
			  size_t too_deep, size_t mem_cut)
{
	char text[1024] = "";
	size_t len = 0;

	if (s->steps_left_out)
		len += (size_t)snprintf(text + len, sizeof(text) - len, "%zu of %zu steps are left out to keep the page "
					"small (at most %zu slices); steptrace export writes every step. ",
					s->steps_left_out, rp->n_steps, budget);
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

int report_timeline_write(FILE *out, const struct replay *rp, const struct mem_timeline *tl, const char *id,
			  size_t budget)
{
	struct selection s = { .step_in = NULL };
	struct strtab st;
	size_t too_deep, mem_cut;
	int rc = -1;

	if (strtab_init(&st, rp) < 0 || select_steps(&s, rp, budget) < 0)
		goto out;
	fputs("<script type=\"application/json\"", out);
	html_attr(out, "id", "%s", id);
	fprintf(out, ">{\"t0\":%" PRIu64 ",\n", s.t0 - rp->t_min);
	if (s.step_in)
		write_steps(out, rp, &s);
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
	if (write_streams(out, rp, &s, &st) < 0)
		goto out;
	too_deep = write_threads(out, rp, &s, &st);
	mem_cut = write_memory(out, tl, &s, budget);
	write_omitted(out, rp, &s, budget, too_deep, mem_cut);
	fputs("\"strings\":[", out);
	strtab_write(out, &st);
	fputs("]}</script>\n", out);
	rc = st.oom ? error("out of memory for the timeline") : 0;
out:
	free(s.step_in);
	strtab_release(&st);
	return rc;
}
