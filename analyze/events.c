/* events.c: the event listing of `steptrace replay` (see events.h). */
#include "analyze/events.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "analyze/common.h"
#include "lib/human.h"
#include "replay/memory.h"

enum src { SRC_ACT, SRC_API, SRC_RANGE, SRC_MEM, SRC_STEP, SRC_OTHER, SRC_COUNT };

struct lister {
	const struct replay *rp;
	const struct events_opts *a;
	struct replay_filter filter;
	bool filtering;
	const struct mem_timeline *tl;
	int32_t *point_of_mem;      /* rp->mem index -> tl point, -1 other view */
	/* With tags: the driver view's timeline, which knows what they named */
	const struct mem_timeline *drv;    /* NULL: the bundle has no tags */
	int32_t *tag_of_mem;        /* rp->mem index -> index into drv->tags, -1 not a tag */
	size_t next_point;          /* first tl point not yet applied */
	uint64_t live;
	FILE *out;
	struct table *t;            /* the row of csv, json and md; NULL for text */
	enum out_format format;
	int64_t rank;               /* the Rank column's value; -1: no such column */
	uint64_t *listed;           /* the output's count of events listed */
	bool *cut;                  /* the output's: a text line's range path was cut */
	struct kernel_names names;  /* what the kernels print (analyze/common.h) */
};

static uint64_t src_time(const struct replay *rp, int s, size_t i)
{
	switch (s) {
	case SRC_ACT: return rp->activities[i].start;
	case SRC_API: return rp->apis[i].start;
	case SRC_RANGE: return rp->ranges[i].start;
	case SRC_MEM: return rp->mem[i].ev.start;
	case SRC_STEP: return rp->steps[i].start;
	default: return rp->others[i].start;
	}
}

static size_t src_count(const struct replay *rp, int s)
{
	switch (s) {
	case SRC_ACT: return rp->n_activities;
	case SRC_API: return rp->n_apis;
	case SRC_RANGE: return rp->n_ranges;
	case SRC_MEM: return rp->n_mem;
	case SRC_STEP: return rp->n_steps;
	default: return rp->n_others;
	}
}

/* ns as milliseconds with 6 decimals, integers only */
static void put_ms(FILE *out, uint64_t ns, int width)
{
	fprintf(out, "%*" PRIu64 ".%06" PRIu64, width, ns / 1000000, ns % 1000000);
}

/*
 * The text columns: each header over its values, numbers right-aligned
 * (time and duration as put_ms writes them, live MiB with one decimal),
 * words left-aligned; a value wider than its column pushes the rest right.
 */
#define TIME_WIDTH 15     /* put_ms(t, 8) */
#define KIND_WIDTH 8
#define DUR_WIDTH 11      /* put_ms(dur, 4) */
#define WHERE_WIDTH 14    /* "thread" and a thread id of up to 7 digits */
#define LIVE_WIDTH 10

static void put_header(FILE *out, enum mem_view view)
{
	fprintf(out, "# times: ms since the bundle's first event; allocations, frees and live memory: %s\n",
		view == MEM_VIEW_DRIVER ? "the driver's (cudaMalloc), --view driver" : "the model allocator's, --view model");
	/* "#" takes the first blank of the right-aligned time column */
	fprintf(out, "#%*s %-*s %*s %-*s %*s %s %s\n", TIME_WIDTH - 1, "time (ms)", KIND_WIDTH, "kind",
		DUR_WIDTH, "dur (ms)", WHERE_WIDTH, "where", LIVE_WIDTH, "live (MiB)", "range", "name");
}

static bool path_ok(const struct lister *l, int32_t range)
{
	if (!l->filtering)
		return true;
	if (range < 0 || (size_t)range >= l->rp->n_ranges)
		return false;
	return replay_filter_range(&l->filter, &l->rp->ranges[range]);
}

static const char *range_path(const struct replay *rp, int32_t range)
{
	if (range < 0 || (size_t)range >= rp->n_ranges)
		return "";
	return replay_range_path(rp, &rp->ranges[range]);
}

/* One event: `where` is "stream", "thread" or "device" with its number, or NULL. */
static void put_line(struct lister *l, uint64_t t, const char *kind, uint64_t dur, const char *where,
		     uint64_t where_id, const char *path, const char *name)
{
	FILE *out = l->out;
	uint64_t tenths = (l->live * 10 + 524288) / 1048576;
	char buf[48];

	(*l->listed)++;
	if (l->t) {
		table_row(l->t);
		if (l->rank >= 0)
			table_int(l->t, l->rank);
		table_float(l->t, ns_to_ms(t - l->rp->t_min));
		table_str(l->t, kind);
		table_float(l->t, ns_to_ms(dur));
		if (where) {
			snprintf(buf, sizeof(buf), "%s %" PRIu64, where, where_id);
			table_str(l->t, buf);
		} else {
			table_empty(l->t);
		}
		table_int(l->t, (int64_t)l->live);
		table_str(l->t, *path ? path : NULL);
		table_str(l->t, name);
		table_stream_row(l->t, l->format, out);
		return;
	}
	put_ms(out, t - l->rp->t_min, TIME_WIDTH - 7);
	fprintf(out, " %-*s ", KIND_WIDTH, kind);
	put_ms(out, dur, DUR_WIDTH - 7);
	fputc(' ', out);
	if (where)
		fprintf(out, "%s %-*" PRIu64, where, WHERE_WIDTH - (int)strlen(where) - 1, where_id);
	else
		fprintf(out, "%-*s", WHERE_WIDTH, "-");
	/*
	 * A line wider than TABLE_TEXT_WIDTH: the range path is cut in the
	 * middle, down to 24 characters, then the name (an allocation's, which
	 * ends with its op's path).
	 */
	size_t room = TABLE_TEXT_WIDTH - (TIME_WIDTH + KIND_WIDTH + DUR_WIDTH + WHERE_WIDTH + LIVE_WIDTH + 6),
	       path_len = strlen(path), name_len = strlen(name);
	if (*path && path_len + name_len > room && !l->a->full_names) {
		size_t pw = name_len + 24 < room ? room - name_len : 24;
		char *pbuf = malloc(path_len + 4), *nbuf = malloc(name_len + 4);

		if (pbuf && nbuf) {
			const char *p = table_clip_middle(path, pw, pbuf, path_len + 4), *nm = name;
			size_t p_len = strlen(p);

			if (p_len + name_len > room)
				nm = table_clip_middle(name, room - p_len > 24 ? room - p_len : 24, nbuf, name_len + 4);
			*l->cut |= p != path || nm != name;
			fprintf(out, " %*" PRIu64 ".%" PRIu64 " %s %s\n", LIVE_WIDTH - 2, tenths / 10, tenths % 10, p,
				nm);
			free(pbuf);
			free(nbuf);
			return;
		}
		free(pbuf);
		free(nbuf);
	}
	fprintf(out, " %*" PRIu64 ".%" PRIu64 " %s %s\n", LIVE_WIDTH - 2, tenths / 10, tenths % 10,
		*path ? path : "-", name);
}

/* Applies the memory points up to time t (all of them at t when through_t). */
static void advance_live(struct lister *l, uint64_t t)
{
	while (l->next_point < l->tl->n_points && l->tl->points[l->next_point].t <= t)
		l->live = l->tl->points[l->next_point++].live;
}

static void list_mem(struct lister *l, size_t i)
{
	const struct replay *rp = l->rp;
	const struct replay_mem *m = &rp->mem[i];
	const struct st_event *ev = &m->ev;
	int32_t p = l->point_of_mem[i];
	char name[512], b1[32], b2[32];
	const struct replay_op *op;

	/* the live total right after this very event when it is in the view */
	if (p >= 0) {
		l->live = l->tl->points[p].live;
		if ((size_t)p + 1 > l->next_point)
			l->next_point = (size_t)p + 1;
	} else {
		advance_live(l, ev->start);
	}
	if (!l->a->kind_ok[ev->kind] || !path_ok(l, m->range))
		return;
	/* the other view's record of a block (the driver's of the model's, say) is not listed twice */
	if ((ev->kind == ST_ALLOC || ev->kind == ST_FREE) && ev->mem.source != (uint32_t)l->tl->view)
		return;
	if (ev->kind == ST_MEMTAG) {
		int32_t k = l->tag_of_mem ? l->tag_of_mem[i] : -1;

		snprintf(name, sizeof(name), "%s %s 0x%" PRIx64 "%s", human_bytes(b1, sizeof(b1), (double)ev->mem.size),
			 st_mem_category_name((int)ev->mem.category), ev->mem.address,
			 k < 0 || l->drv->tags[k].block < 0 ? " (names no live block: ignored)" : "");
		put_line(l, ev->start, events_kind_name(ev->kind), 0, "device", ev->mem.device,
			 range_path(rp, m->range), name);
		return;
	}
	op = replay_op(rp, ev->kind == ST_OOM ? ev->oom.op : ev->mem.op);
	if (ev->kind == ST_OOM) {
		snprintf(name, sizeof(name), "OOM request %s %s live %s capacity %" PRIu64 " op %s",
			 human_bytes(b1, sizeof(b1), (double)ev->oom.requested), st_mem_category_name((int)ev->oom.category),
			 human_bytes(b2, sizeof(b2), (double)ev->oom.live_bytes), ev->oom.capacity,
			 op ? replay_str(rp, op->path) : "-");
		put_line(l, ev->start, "oom", 0, NULL, 0, range_path(rp, m->range), name);
		return;
	}
	{
		/* the block as the view has it (a free's size is its block's) */
		const struct mem_timeline *v = l->tl;
		const struct mem_point *pt = p >= 0 ? &v->points[p] : NULL;
		bool unknown = ev->kind == ST_FREE && pt && pt->block < 0;
		uint64_t size = pt && pt->block >= 0 ? v->blocks[pt->block].size : ev->mem.size;
		int cat = pt && pt->block >= 0 ? pt->category : (int)ev->mem.category;

		/* the op's path, unless the range column says it already */
		const char *op_path = op && strcmp(replay_str(rp, op->path), range_path(rp, m->range))
					      ? replay_str(rp, op->path) : NULL;

		char opcut[48];

		if (op_path && !l->t && !l->a->full_names && strlen(op_path) > 40) {   /* text: the line keeps its address */
			op_path = table_clip_middle(op_path, 40, opcut, sizeof(opcut));
			*l->cut = true;
		}
		snprintf(name, sizeof(name), "%c%s %s 0x%" PRIx64 "%s%s%s", ev->kind == ST_ALLOC ? '+' : '-',
			 human_bytes(b1, sizeof(b1), (double)size), st_mem_category_name(cat), ev->mem.address,
			 ev->mem.source == ST_SRC_DRIVER ? " driver" : "", op_path ? " op " : "",
			 op_path ? op_path : "");
		if (unknown)
			strncat(name, " (unknown address)", sizeof(name) - strlen(name) - 1);
		put_line(l, ev->start, ev->kind == ST_ALLOC ? "alloc" : "free", 0, "device",
			 ev->mem.device, range_path(rp, m->range), name);
	}
}

static void list_one(struct lister *l, int s, size_t i)
{
	const struct replay *rp = l->rp;
	char name[256];

	if (s == SRC_MEM) {
		list_mem(l, i);
		return;
	}
	advance_live(l, src_time(rp, s, i));
	switch (s) {
	case SRC_ACT: {
		const struct replay_activity *a = &rp->activities[i];
		static const char *const kinds[] = { [ST_KERNEL] = "kernel", [ST_MEMCPY] = "memcpy", [ST_MEMSET] = "memset" };

		if (a->kind > ST_MEMSET || !l->a->kind_ok[a->kind])
			return;
		if (l->filtering && !replay_filter_activity(&l->filter, rp, a))
			return;
		put_line(l, a->start, kinds[a->kind] ? kinds[a->kind] : "gpu", a->end - a->start, "stream",
			 a->stream, range_path(rp, a->range), kernel_names_get(&l->names, replay_str(rp, a->name)));
		break;
	}
	case SRC_API: {
		const struct replay_api *a = &rp->apis[i];

		if (!l->a->kind_ok[ST_API] || !path_ok(l, a->range))
			return;
		put_line(l, a->start, "api", a->end - a->start, "thread", a->thread,
			 range_path(rp, a->range), replay_str(rp, a->name));
		break;
	}
	case SRC_RANGE: {
		const struct replay_range *r = &rp->ranges[i];

		if (!l->a->kind_ok[ST_RANGE] || (l->filtering && !replay_filter_range(&l->filter, r)))
			return;
		put_line(l, r->start, "range", r->end - r->start, "thread", r->thread,
			 replay_range_path(rp, r), replay_str(rp, r->name));
		break;
	}
	case SRC_STEP: {
		const struct replay_step *st = &rp->steps[i];

		if (!l->a->kind_ok[ST_STEP] || l->filtering)
			return;
		snprintf(name, sizeof(name), "step %" PRIu32 "%s", st->index, st->warmup ? " (warm-up)" : "");
		put_line(l, st->start, "step", st->end - st->start, "thread", st->thread, "", name);
		break;
	}
	default: {
		const struct st_event *ev = &rp->others[i];

		if (ev->kind < 0 || ev->kind >= ST_KIND_COUNT || !l->a->kind_ok[ev->kind] || l->filtering)
			return;
		if (ev->kind == ST_SYNC) {
			const char *type = st_sync_type_name(ev->sync.type);
			int n = type ? snprintf(name, sizeof(name), "%s", type)
				     : snprintf(name, sizeof(name), "sync type %" PRIu32, ev->sync.type);

			/* CUPTI's invalid id where no one stream is concerned */
			if (ev->sync.stream != UINT32_MAX)
				snprintf(name + n, sizeof(name) - (size_t)n, ", stream %" PRIu32, ev->sync.stream);
		} else if (st_overhead_kind_name(ev->overhead.kind)) {
			snprintf(name, sizeof(name), "%s", st_overhead_kind_name(ev->overhead.kind));
		} else {
			snprintf(name, sizeof(name), "overhead kind %" PRIu32, ev->overhead.kind);
		}
		put_line(l, ev->start, st_kind_name(ev->kind) ? st_kind_name(ev->kind) : "other", ev->end - ev->start,
			 "thread", ev->kind == ST_SYNC ? ev->sync.thread : ev->overhead.thread, "", name);
		break;
	}
	}
}

const char *events_kind_name(int kind)
{
	return kind == ST_MEMTAG ? "tag" : st_kind_name(kind);
}

int events_kind_from_name(const char *name)
{
	for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST; k++)
		if (!strcmp(events_kind_name(k), name))
			return k;
	return -1;
}

/*
 * With tags in the bundle, the driver view that matched them: the listing's
 * own timeline in the driver view, else one built in *drv. 0, or -1 after
 * an error line.
 */
static int tags_init(struct lister *l, const struct mem_timeline *tl, struct mem_timeline *drv)
{
	const struct replay *rp = l->rp;
	size_t n = 0;

	for (size_t i = 0; i < rp->n_mem; i++)
		n += rp->mem[i].ev.kind == ST_MEMTAG;
	if (!n)
		return 0;
	if (tl->view == MEM_VIEW_DRIVER) {
		l->drv = tl;
	} else {
		if (mem_timeline_build(drv, rp, MEM_VIEW_DRIVER) < 0)
			return -1;
		l->drv = drv;
	}
	l->tag_of_mem = malloc(rp->n_mem * sizeof(*l->tag_of_mem));
	if (!l->tag_of_mem)
		return error("out of memory");
	memset(l->tag_of_mem, 0xff, rp->n_mem * sizeof(*l->tag_of_mem));
	for (size_t k = 0; k < l->drv->n_tags; k++)
		l->tag_of_mem[l->drv->tags[k].mem] = (int32_t)k;
	return 0;
}

/* The events of the kinds asked in the bundle, allocations and frees of the view only. */
static uint64_t events_present(const struct replay *rp, const struct events_opts *a, enum mem_view view)
{
	uint64_t n = 0;

	for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST; k++)
		if (a->kind_ok[k] && k != ST_ALLOC && k != ST_FREE)
			n += rp->counts[k];
	for (size_t i = 0; i < rp->n_mem; i++) {
		const struct st_event *ev = &rp->mem[i].ev;

		n += (ev->kind == ST_ALLOC || ev->kind == ST_FREE) && a->kind_ok[ev->kind] &&
		     ev->mem.source == (uint32_t)view;
	}
	return n;
}

/* The output's one table for csv, json and md, made by the first bundle listed. */
static void out_table(struct events_out *out, bool ranks)
{
	struct table *t;

	out->r = report_new();
	out->t = t = report_add_table(out->r, "events", "Events in time order (ms since the bundle's first event)");
	if (ranks)
		table_add_column(t, "Rank", COL_INT, 0);
	table_add_column(t, "Time (ms)", COL_FLOAT, 6);
	table_add_column(t, "Kind", COL_STR, 0);
	table_add_column(t, "Duration (ms)", COL_FLOAT, 6);
	table_add_column(t, "Where", COL_STR, 0);
	table_add_column(t, "Live (bytes)", COL_INT, 0);
	table_add_column(t, "Range", COL_STR, 0);
	table_add_column(t, "Name", COL_STR, 0);
}

/* A kernel's name follows its range path on a line: less room than in a table. */
#define EVENTS_NAME_WIDTH (KERNEL_NAME_WIDTH - 12)

/* What the activities' names print: one table of the bundle's distinct kernel names. */
static int activity_names(struct kernel_names *kn, const struct replay *rp, bool whole)
{
	uint32_t top = 0;
	uint8_t *seen;
	const char **names;
	size_t n = 0;
	int rc;

	memset(kn, 0, sizeof(*kn));
	if (whole)
		return 0;   /* no names: each prints as it is */
	for (size_t i = 0; i < rp->n_activities; i++)
		top = rp->activities[i].name > top ? rp->activities[i].name : top;
	seen = calloc((size_t)top + 1, 1);
	names = malloc(((size_t)top + 1) * sizeof(*names));
	if (!seen || !names) {
		free(seen);
		free(names);
		return error("out of memory");
	}
	/* a flag, not a count: a byte's count wraps at 256 and would list a name again, past names' end */
	for (size_t i = 0; i < rp->n_activities; i++)
		if (!seen[rp->activities[i].name]) {
			seen[rp->activities[i].name] = 1;
			names[n++] = replay_str(rp, rp->activities[i].name);
		}
	rc = kernel_names_init(kn, names, n, EVENTS_NAME_WIDTH, false);
	free(seen);
	free(names);
	return rc;
}

int events_list(const struct replay *rp, const struct events_opts *a, struct events_out *out)
{
	struct mem_timeline tl, drv = { 0 };
	struct lister l = { .rp = rp, .a = a, .out = stdout, .format = a->format, .rank = -1, .listed = &out->listed,
			  .cut = &out->cut };
	enum mem_view view = a->view >= 0 ? (enum mem_view)a->view : mem_default_view(rp);
	size_t head[SRC_COUNT] = { 0 }, n[SRC_COUNT];
	uint64_t from = 0, to = UINT64_MAX;
	static char buf[1 << 20];
	int rc = 0;

	if (mem_timeline_build(&tl, rp, view) < 0) {
		out->failed = true;
		return -1;
	}
	l.tl = &tl;
	l.point_of_mem = malloc((rp->n_mem ? rp->n_mem : 1) * sizeof(*l.point_of_mem));
	if (!l.point_of_mem) {
		mem_timeline_release(&tl);
		out->failed = true;
		return error("out of memory");
	}
	memset(l.point_of_mem, 0xff, (rp->n_mem ? rp->n_mem : 1) * sizeof(*l.point_of_mem));
	for (size_t p = 0; p < tl.n_points; p++)
		l.point_of_mem[tl.points[p].mem] = (int32_t)p;
	if (tags_init(&l, &tl, &drv) < 0 || activity_names(&l.names, rp, a->full_names) < 0) {
		rc = -1;
		goto out;
	}
	if (a->range) {
		if (replay_filter_init(&l.filter, rp, a->range) < 0) {
			rc = -1;
			goto out;
		}
		l.filtering = true;
	}
	if (a->from_ms >= 0)
		from = rp->t_min + (uint64_t)llround(a->from_ms * 1e6);
	if (a->to_ms >= 0)
		to = rp->t_min + (uint64_t)llround(a->to_ms * 1e6);
	for (int s = 0; s < SRC_COUNT; s++)
		n[s] = src_count(rp, s);
	out->present += events_present(rp, a, view);
	out->ranks++;

	setvbuf(stdout, buf, _IOFBF, sizeof(buf));
	if (l.format == OUT_TABLE) {
		put_header(stdout, view);
	} else {
		/* the ranks of a run: one table, each row saying whose */
		if (!out->t) {
			out->rank_column = out->several;   /* one rank's bundle alone needs no Rank column */
			out_table(out, out->rank_column);
		}
		l.t = out->t;
		if (out->rank_column)
			l.rank = rp->run.rank;
	}
	for (;;) {
		int best = -1;
		uint64_t bt = 0;

		for (int s = 0; s < SRC_COUNT; s++) {
			if (head[s] < n[s]) {
				uint64_t t = src_time(rp, s, head[s]);

				if (best < 0 || t < bt) {
					best = s;
					bt = t;
				}
			}
		}
		if (best < 0 || bt > to)
			break;
		if (bt >= from)
			list_one(&l, best, head[best]);
		else if (best == SRC_MEM && l.point_of_mem[head[best]] >= 0)
			l.live = tl.points[l.point_of_mem[head[best]]].live, l.next_point = (size_t)l.point_of_mem[head[best]] + 1;
		head[best]++;
	}
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = error("cannot write to standard output: %s", strerror(errno ? errno : EIO));
	if (l.filtering)
		replay_filter_release(&l.filter);
out:
	out->failed |= rc < 0;
	setvbuf(stdout, NULL, _IOFBF, BUFSIZ);
	free(l.point_of_mem);
	free(l.tag_of_mem);
	kernel_names_release(&l.names);
	mem_timeline_release(&drv);
	mem_timeline_release(&tl);
	return rc;
}

/* The kinds asked, "kernel or oom", into buf. */
static const char *kinds_asked(const struct events_opts *a, char *buf, size_t len)
{
	size_t used = 0, n = 0, k_n = 0;

	for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST; k++)
		k_n += a->kind_ok[k];
	buf[0] = '\0';
	for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST && used < len; k++)
		if (a->kind_ok[k])
			used += (size_t)snprintf(buf + used, len - used, "%s%s", !n++ ? "" : n == k_n ? " or " : ", ",
						 events_kind_name(k));
	return buf;
}

int events_end(struct events_out *out, const struct events_opts *a)
{
	char why[512], kinds[256];
	const char *bundle = out->ranks > 1 ? "bundles have" : "bundle has";
	int rc = 0;

	why[0] = '\0';
	if (out->failed) {
		report_free(out->r);
		memset(out, 0, sizeof(*out));
		return 0;
	}
	if (out->listed == 0 && out->present == 0 && !a->kinds_given)
		snprintf(why, sizeof(why), "no events listed: the %s none", bundle);
	else if (out->listed == 0 && out->present == 0 && a->kind_ok[ST_OOM] &&
		 !strcmp(kinds_asked(a, kinds, sizeof(kinds)), "oom"))
		snprintf(why, sizeof(why), "no events listed: the run never ran out of memory (the %s no oom event)",
			 bundle);
	else if (out->listed == 0 && out->present == 0)
		snprintf(why, sizeof(why), "no events listed: the %s no %s event", bundle,
			 kinds_asked(a, kinds, sizeof(kinds)));
	else if (out->listed == 0)
		snprintf(why, sizeof(why), "no events listed: none of the %s's %" PRIu64 " %s%s%s matches %s%s%s%s%s",
			 out->ranks > 1 ? "bundles" : "bundle", out->present, a->kinds_given ? kinds_asked(a, kinds, sizeof(kinds)) : "",
			 a->kinds_given ? " " : "", out->present == 1 ? "event" : "events",
			 a->range ? "--range '" : "", a->range ? a->range : "", a->range ? "'" : "",
			 a->range && (a->from_ms >= 0 || a->to_ms >= 0) ? " and " : "",
			 a->from_ms >= 0 || a->to_ms >= 0 ? "the time window (--from, --to)" : "");
	errno = 0;
	if (out->t)
		table_stream_end(out->t, (enum out_format)a->format, stdout, *why ? why : NULL);
	else if (*why)
		printf("# %s\n", why);
	if (!out->t && out->cut)
		printf("# range paths and names cut in the middle (...) to fit %d columns; --format csv, json or md prints them whole\n",
		       TABLE_TEXT_WIDTH);
	if (fflush(stdout) != 0 || ferror(stdout))
		rc = error("cannot write to standard output: %s", strerror(errno ? errno : EIO));
	report_free(out->r);
	memset(out, 0, sizeof(*out));
	return rc;
}
