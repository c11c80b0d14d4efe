/* ranks.c: see ranks.h. */
#include "replay/ranks.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/error.h"
#include "lib/stats.h"
#include "lib/grow.h"
#include "lib/human.h"
#include "lib/strpool.h"
#include "replay/nccl.h"

#define POOL_GAP_NS 1000000ull   /* between one rank's last event and the next rank's first */
/*
 * A run's time line, the ranks' times placed on it, spans at most this (the
 * reader's bound on an event's start, 146 years): ranks further apart are
 * damage, not a run.
 */
#define RUN_SPAN_NS (1ull << 62)
/*
 * The ranks of one run start recording together: their time bases (or
 * real-time clocks, or collectives) placing two of them more than a day
 * apart is damage or two runs, refused rather than shown as a skew of years.
 */
#define RUN_APART_NS (86400ull * 1000000000ull)
/* Fewer collectives common to every rank leave ranks of different hosts on their real-time clocks. */
#define ALIGN_MIN_COLLECTIVES 3

uint32_t replay_ranks_rank(const struct replay_ranks *rs, size_t i)
{
	const struct replay_run *h = &rs->rank[i]->run;

	return h->world_size > 1 ? h->rank : (uint32_t)i;
}

/* ---- runs -------------------------------------------------------------------- */

static int cmp_str(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

static bool multi(const struct replay *rp)
{
	return rp->run.world_size > 1 && rp->run.run_id != 0;
}

static int cmp_rank(const void *x, const void *y)
{
	const struct replay *a = *(const struct replay *const *)x, *b = *(const struct replay *const *)y;

	return a->run.rank < b->run.rank ? -1 : a->run.rank > b->run.rank;
}

/* What must be equal across the ranks of one run. */
static int agree(const struct replay *a, const struct replay *b)
{
	const struct replay_config *x = &a->run.config, *y = &b->run.config;

	if (a->run.world_size != b->run.world_size)
		return error("'%s' and '%s' disagree on the run's size (%" PRIu32 " and %" PRIu32 " ranks)",
			     a->path, b->path, a->run.world_size, b->run.world_size);
	if (strcmp(x->model, y->model) || x->d_model != y->d_model || x->layers != y->layers ||
	    x->batch != y->batch || x->ctx != y->ctx || strcmp(x->precision_name, y->precision_name) ||
	    strcmp(x->mode_name, y->mode_name) || strcmp(x->ddp_name, y->ddp_name))
		return error("'%s' and '%s' carry one run id but different configurations", a->path, b->path);
	return 0;
}

/* ---- the time line ------------------------------------------------------------ */

/* How many distinct hostnames the ranks carry (their headers'). */
static size_t count_hosts(const struct replay_ranks *rs)
{
	const char **name = malloc(rs->n * sizeof(*name));
	size_t n = 0;

	if (!name)
		return 0;
	for (size_t i = 0; i < rs->n; i++)
		name[i] = rs->rank[i]->run.hostname;
	qsort(name, rs->n, sizeof(*name), cmp_str);
	for (size_t i = 0; i < rs->n; i++)
		n += i == 0 || strcmp(name[i - 1], name[i]);
	free(name);
	return n;
}

/* Who the ranks are, for the alignment's text: "ranks on 2 hosts". */
static const char *who(const struct replay_ranks *rs, char *buf, size_t len)
{
	size_t hosts = count_hosts(rs);

	if (hosts > 1)
		snprintf(buf, len, "ranks on %zu hosts", hosts);
	else
		snprintf(buf, len, "ranks without a clock in common");
	return buf;
}

/* The ends of rp's collective kernels (ns on its own clock), in the order they start. */
static int collective_ends(const struct replay *rp, uint64_t **ends, size_t *n)
{
	size_t cap = 0;

	*ends = NULL;
	*n = 0;
	for (size_t i = 0; i < rp->n_activities; i++) {
		if (!nccl_collective(rp, &rp->activities[i]))
			continue;
		if (ALLOC_GROW(*ends, *n + 1, cap)) {
			free(*ends);
			*ends = NULL;
			return error("out of memory");
		}
		(*ends)[(*n)++] = rp->activities[i].end;
	}
	return 0;
}

/*
 * a - b for two placed times (below 2^64), held to +-(RUN_SPAN_NS + 1):
 * collectives further apart are damage, which the span check refuses.
 */
static int64_t signed_gap(uint64_t a, uint64_t b)
{
	if (a >= b)
		return a - b > RUN_SPAN_NS ? (int64_t)RUN_SPAN_NS + 1 : (int64_t)(a - b);
	return b - a > RUN_SPAN_NS ? -(int64_t)RUN_SPAN_NS - 1 : -(int64_t)(b - a);
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return a < b ? -1 : a > b;
}

/* |a - b| for two gaps (each within +-(RUN_SPAN_NS + 1)): unsigned, it fits. */
static uint64_t abs_gap(int64_t a, int64_t b)
{
	return a >= b ? (uint64_t)a - (uint64_t)b : (uint64_t)b - (uint64_t)a;
}

/* What refine works with: each rank's collective ends, m of them matched. */
struct matched {
	uint64_t **ends;
	size_t m;
	int64_t *gap;        /* m: end on rank 0 - end on rank r, placed */
	uint64_t *resid;     /* (n - 1) m: |gap - the rank's shift| */
	uint64_t *biased;    /* n: each rank's new offset + RUN_SPAN_NS + 1 */
};

static void matched_release(struct matched *mt, size_t n)
{
	for (size_t i = 0; mt->ends && i < n; i++)
		free(mt->ends[i]);
	free(mt->ends);
	free(mt->gap);
	free(mt->resid);
	free(mt->biased);
}

/* Rank r's shift onto rank 0: the lower median of its gaps; its residuals into resid. */
static int64_t shift_rank(const struct replay_ranks *rs, struct matched *mt, size_t r, uint64_t *resid)
{
	int64_t med;

	for (size_t k = 0; k < mt->m; k++)
		mt->gap[k] = signed_gap(mt->ends[0][k] + (uint64_t)rs->offset[0],
					mt->ends[r][k] + (uint64_t)rs->offset[r]);
	qsort(mt->gap, mt->m, sizeof(*mt->gap), cmp_i64);
	med = mt->gap[(mt->m - 1) / 2];
	for (size_t k = 0; k < mt->m; k++)
		resid[k] = abs_gap(mt->gap[k], med);
	return med;
}

/*
 * The offsets of ranks placed by their real-time clocks, refined by their
 * collectives' ends (ranks.h), and the alignment's text. 0, or -1 after an
 * error line.
 */
static int refine(struct replay_ranks *rs)
{
	struct matched mt = { .m = SIZE_MAX };
	uint64_t low = UINT64_MAX, moved = 0;
	char ranks[64], med[32], max[32], by[32];
	size_t n = rs->n, first = 0, nres;
	int rc = -1;

	mt.ends = calloc(n, sizeof(*mt.ends));
	if (!mt.ends)
		goto oom;
	for (size_t r = 0; r < n; r++) {
		size_t count;

		if (collective_ends(rs->rank[r], &mt.ends[r], &count))
			goto out;
		if (count < mt.m)
			mt.m = count;
	}
	who(rs, ranks, sizeof(ranks));
	if (mt.m < ALIGN_MIN_COLLECTIVES) {
		snprintf(rs->alignment, sizeof(rs->alignment), "%s placed by each host's real-time clock only, so "
			 "only as close as those clocks agree (%zu collective%s common to every rank, at least %d "
			 "needed to align them by their ends)", ranks, mt.m, mt.m == 1 ? "" : "s", ALIGN_MIN_COLLECTIVES);
		rc = 0;
		goto out;
	}
	nres = (n - 1) * mt.m;   /* at most the kernels of ranks 1 to n - 1 */
	mt.gap = malloc(mt.m * sizeof(*mt.gap));
	mt.resid = malloc(nres * sizeof(*mt.resid));
	mt.biased = malloc(n * sizeof(*mt.biased));
	if (!mt.gap || !mt.resid || !mt.biased)
		goto oom;
	/* biased by RUN_SPAN_NS + 1 so that a shift back stays unsigned: offset + shift + bias < 2^64 */
	mt.biased[0] = (uint64_t)rs->offset[0] + RUN_SPAN_NS + 1;
	for (size_t r = 1; r < n; r++) {
		int64_t shift = shift_rank(rs, &mt, r, mt.resid + (r - 1) * mt.m);

		mt.biased[r] = (uint64_t)rs->offset[r] + RUN_SPAN_NS + 1 + (uint64_t)shift;
		if (abs_gap(shift, 0) > moved)
			moved = abs_gap(shift, 0);
	}
	for (size_t r = 0; r < n; r++)
		if (mt.biased[r] < low) {
			low = mt.biased[r];
			first = r;
		}
	for (size_t r = 0; r < n; r++) {
		if (mt.biased[r] - low > RUN_APART_NS) {
			error("'%s' and '%s' are ranks of one run, but their collectives place them %.1f days apart: a run's "
			      "ranks start within a day of each other", rs->rank[first]->path, rs->rank[r]->path,
			      (double)(mt.biased[r] - low) / (double)RUN_APART_NS);
			goto out;
		}
		rs->offset[r] = (int64_t)(mt.biased[r] - low);
	}
	qsort(mt.resid, nres, sizeof(*mt.resid), stats_cmp_u64);
	snprintf(rs->alignment, sizeof(rs->alignment), "%s aligned by the ends of %zu collectives (moved up to %s "
		 "from their real-time clocks): residual median %s, max %s", ranks, mt.m,
		 human_time(by, sizeof(by), (double)moved), human_time(med, sizeof(med), (double)mt.resid[(nres - 1) / 2]),
		 human_time(max, sizeof(max), (double)mt.resid[nres - 1]));
	rc = 0;
	goto out;
oom:
	error("out of memory");
out:
	matched_release(&mt, n);
	return rc;
}

/*
 * The run's time line: one host's CUPTI clock, else the hosts' real-time
 * clocks refined by the collectives. 0, or -1 after an error line when
 * they place ranks more than RUN_SPAN_NS apart.
 */
static int align(struct replay_ranks *rs)
{
	bool one_host = true;
	uint64_t base = UINT64_MAX;
	int64_t created = INT64_MAX;
	size_t first_base = 0, first_created = 0;

	for (size_t i = 0; i < rs->n; i++) {
		const struct replay_run *h = &rs->rank[i]->run;

		one_host &= h->has_header && !strcmp(h->hostname, rs->rank[0]->run.hostname) &&
			    !strcmp(h->clock, rs->rank[0]->run.clock);
		if (h->time_base_ns < base) {
			base = h->time_base_ns;
			first_base = i;
		}
		if (h->created_unix_ns < created) {
			created = h->created_unix_ns;
			first_created = i;
		}
	}
	for (size_t i = 0; i < rs->n; i++) {
		const struct replay_run *h = &rs->rank[i]->run;
		/* unsigned: the difference of two int64_t fits a uint64_t */
		uint64_t off = one_host ? h->time_base_ns - base : (uint64_t)h->created_unix_ns - (uint64_t)created;

		if (off > RUN_APART_NS)
			return error("'%s' and '%s' are ranks of one run, but their %s place them %.1f days apart: a run's "
				     "ranks start within a day of each other",
				     rs->rank[one_host ? first_base : first_created]->path, rs->rank[i]->path,
				     one_host ? "time bases" : "creation times", (double)off / (double)RUN_APART_NS);
		rs->offset[i] = (int64_t)off;
	}
	if (rs->n >= 2 && !one_host)
		return refine(rs);
	snprintf(rs->alignment, sizeof(rs->alignment), "%s", rs->n < 2 ? "one rank" :
		 "the ranks share their host's clock: each placed by its time base");
	return 0;
}

/*
 * Warns about the ranks of world_size that no bundle holds. The world size
 * is the header's claim (up to 2^32 - 1), so this walks the ranks given and
 * the gaps between them only as far as the list has room.
 */
static void missing_ranks(const struct replay_ranks *rs)
{
	char list[256] = "";
	size_t len = 0;
	uint32_t next = 0;   /* the first rank not yet looked at */
	uint64_t n = (uint64_t)rs->world_size - rs->n, listed = 0;   /* ranks are distinct, below world_size */

	for (size_t j = 0; j <= rs->n && len + 16 < sizeof(list); j++) {
		uint32_t end = j < rs->n ? rs->rank[j]->run.rank : rs->world_size;

		for (; next < end && len + 16 < sizeof(list); next++, listed++)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%" PRIu32, len ? ", " : "", next);
		if (next == end && j < rs->n)
			next = end + 1;
	}
	if (listed < n)
		snprintf(list + len, sizeof(list) - len, ", ...");
	if (n)
		warning("the run of '%s' has %" PRIu32 " ranks but no bundle of rank%s %s: results cover the "
			"ranks given", rs->rank[0]->path, rs->world_size, n > 1 ? "s" : "", list);
}

/*
 * What two bundles are when they are one: "the same bundle given twice"
 * (one file: same device and inode) or "two copies of one bundle" (files of
 * the same bytes); NULL when they differ. Asked only once grouping has
 * failed on them, so reading both again costs nothing a good run pays.
 */
static const char *one_bundle(const char *a, const char *b)
{
	struct stat sa, sb;
	FILE *fa, *fb;
	const char *same = "two copies of one bundle";

	if (stat(a, &sa) != 0 || stat(b, &sb) != 0 || !S_ISREG(sa.st_mode) || !S_ISREG(sb.st_mode))
		return NULL;
	if (sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino)
		return "the same bundle given twice";
	if (sa.st_size != sb.st_size)
		return NULL;
	fa = fopen(a, "rb");
	fb = fopen(b, "rb");
	for (char x[65536], y[65536]; fa && fb;) {
		size_t n = fread(x, 1, sizeof(x), fa), m = fread(y, 1, sizeof(y), fb);

		if (n != m || memcmp(x, y, n)) {
			same = NULL;
			break;
		}
		if (n < sizeof(x))
			break;
	}
	if (!fa || !fb)
		same = NULL;
	if (fa)
		fclose(fa);
	if (fb)
		fclose(fb);
	return same;
}

/* The error for bundles a and b that cannot be one run: copies are called that. -1. */
static int not_one_run(const struct replay *a, const struct replay *b, const char *why)
{
	const char *same = one_bundle(a->path, b->path);

	if (same)
		return error("'%s' and '%s' are %s: give each bundle once", a->path, b->path, same);
	return error("%s", why);
}

void replay_runs_release(struct replay_ranks *runs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(runs[i].rank);
		free(runs[i].offset);
		memset(&runs[i], 0, sizeof(runs[i]));
	}
}

int replay_runs_group(const struct replay *rps, size_t n, struct replay_ranks *runs, size_t max_runs,
		      const char *what)
{
	size_t nr = 0;

	for (size_t i = 0; i < n; i++) {
		const struct replay *rp = &rps[i];
		size_t k = 0;

		while (k < nr && !(multi(rp) && multi(runs[k].rank[0]) && runs[k].run_id == rp->run.run_id))
			k++;
		if (k == nr) {
			if (nr == max_runs) {
				char why[1024];
				const struct replay *other = runs[nr - 1].rank[0];

				/* a copy of a bundle already given, if one is */
				for (size_t q = 0; q < nr; q++)
					for (size_t j = 0; j < runs[q].n; j++)
						if (one_bundle(runs[q].rank[j]->path, rp->path)) {
							other = runs[q].rank[j];
							q = nr - 1;
							break;
						}
				snprintf(why, sizeof(why), "'%s' and '%s' are not ranks of one run: %s", other->path,
					 rp->path, what);
				not_one_run(other, rp, why);
				goto fail;
			}
			memset(&runs[nr], 0, sizeof(runs[nr]));
			runs[nr].rank = calloc(n, sizeof(*runs[nr].rank));
			runs[nr].offset = calloc(n, sizeof(*runs[nr].offset));
			runs[nr].run_id = multi(rp) ? rp->run.run_id : 0;
			runs[nr].world_size = multi(rp) ? rp->run.world_size : 1;
			nr++;
			if (!runs[k].rank || !runs[k].offset) {
				error("out of memory");
				goto fail;
			}
		}
		runs[k].rank[runs[k].n++] = rp;
	}
	for (size_t k = 0; k < nr; k++) {
		struct replay_ranks *rs = &runs[k];

		qsort(rs->rank, rs->n, sizeof(*rs->rank), cmp_rank);
		for (size_t i = 1; i < rs->n; i++) {
			if (rs->rank[i]->run.rank == rs->rank[i - 1]->run.rank) {
				char why[1024];

				snprintf(why, sizeof(why), "'%s' and '%s' are both rank %" PRIu32 " of one run",
					 rs->rank[i - 1]->path, rs->rank[i]->path, rs->rank[i]->run.rank);
				not_one_run(rs->rank[i - 1], rs->rank[i], why);
				goto fail;
			}
			if (agree(rs->rank[0], rs->rank[i]))
				goto fail;
		}
		if (rs->n && rs->rank[rs->n - 1]->run.rank >= rs->world_size && rs->run_id) {
			error("'%s' is rank %" PRIu32 " of a run of %" PRIu32, rs->rank[rs->n - 1]->path,
			      rs->rank[rs->n - 1]->run.rank, rs->world_size);
			goto fail;
		}
		if (align(rs) < 0)
			goto fail;
		if (rs->run_id)
			missing_ranks(rs);
	}
	return (int)nr;
fail:
	replay_runs_release(runs, nr);
	return -1;
}

/* ---- the pooled replay ----------------------------------------------------------- */

struct pool {
	struct strpool s;           /* the pooled table (id 0: ""); points into the ranks' replays */
	uint32_t *map;              /* this rank's string id -> pooled id + 1 (0: not yet) */
	bool failed;
};

static uint32_t intern(struct pool *p, const char *s)
{
	uint32_t id;

	if (!*s)
		return 0;
	if (strpool_intern(&p->s, s, &id, NULL)) {
		p->failed = true;
		return 0;
	}
	return id;
}

/* One rank's placement in the pooled replay. */
struct move {
	const struct replay *rp;
	struct pool *pool;
	int64_t shift;              /* ns */
	uint32_t op_base;
	uint64_t corr_tag, thread_tag, addr_tag;
	uint64_t main_thread, common_main;
};

static uint32_t str(struct move *m, uint32_t id)
{
	if (!id || id >= m->rp->n_strings)
		return 0;
	if (!m->pool->map[id])
		m->pool->map[id] = intern(m->pool, replay_str(m->rp, id)) + 1;
	return m->pool->map[id] - 1;
}

static uint64_t t(const struct move *m, uint64_t v)
{
	return (uint64_t)((int64_t)v + m->shift);
}

static uint32_t op(const struct move *m, uint32_t id)
{
	return id ? id + m->op_base : 0;
}

static uint64_t corr(const struct move *m, uint64_t c)
{
	return c ? c + m->corr_tag : 0;
}

static uint64_t thread(const struct move *m, uint64_t th)
{
	return th == m->main_thread ? m->common_main : th + m->thread_tag;
}

static void activity_event(struct move *m, const struct replay_activity *a, struct st_event *ev)
{
	const struct replay *rp = m->rp;

	ev->kind = a->kind;
	if (a->kind == ST_KERNEL) {
		const struct replay_kernel_cfg *k = &rp->kernel_cfg[a->detail];

		ev->kernel.name = str(m, a->name);
		memcpy(ev->kernel.grid, k->grid, sizeof(k->grid));
		memcpy(ev->kernel.block, k->block, sizeof(k->block));
		ev->kernel.registers = k->registers;
		ev->kernel.static_smem = k->static_smem;
		ev->kernel.dynamic_smem = k->dynamic_smem;
		ev->kernel.stream = a->stream;
		ev->kernel.device = a->device;
		ev->kernel.correlation = corr(m, a->correlation);
		ev->kernel.op = op(m, a->op);
	} else if (a->kind == ST_MEMCPY) {
		const struct replay_copy *c = &rp->copies[a->detail];

		ev->memcpy.copy_kind = c->copy_kind;
		ev->memcpy.src_kind = c->src_kind;
		ev->memcpy.dst_kind = c->dst_kind;
		ev->memcpy.bytes = a->bytes;
		ev->memcpy.stream = a->stream;
		ev->memcpy.device = a->device;
		ev->memcpy.correlation = corr(m, a->correlation);
		ev->memcpy.op = op(m, a->op);
	} else {
		ev->memset.bytes = a->bytes;
		ev->memset.value = a->detail;
		ev->memset.stream = a->stream;
		ev->memset.device = a->device;
		ev->memset.correlation = corr(m, a->correlation);
		ev->memset.op = op(m, a->op);
	}
}

static void op_event(struct move *m, const struct replay_op *o, struct st_event *ev)
{
	ev->kind = ST_OP;
	ev->op.id = op(m, o->id);
	ev->op.name = str(m, o->name);
	ev->op.path = str(m, o->path);
	ev->op.kind = str(m, o->kind);
	ev->op.phase = str(m, o->phase);
	ev->op.flops = o->flops;
	ev->op.bytes = o->bytes;
	ev->op.n_inputs = o->n_inputs;
	ev->op.n_outputs = o->n_outputs;
	memcpy(ev->op.inputs, o->inputs, sizeof(o->inputs));
	memcpy(ev->op.outputs, o->outputs, sizeof(o->outputs));
}

/*
 * The pooled run's drops are every rank's (its facts are rank 0's
 * otherwise): totals across the ranks undercount by all of them.
 */
static void pool_dropped(struct replay *out, const struct replay_ranks *rs)
{
	struct replay_footer *f = &out->run.footer;

	for (size_t r = 1; r < rs->n; r++) {
		const struct replay_footer *g = &rs->rank[r]->run.footer;

		f->dropped += g->dropped;
		for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST; k++) {
			f->has_count[k] |= g->has_count[k];
			f->count_dropped[k] += g->count_dropped[k];
		}
	}
}

/* Every event of one rank into out, moved. -1 on allocation failure. */
static int move_rank(struct move *m, struct replay *out)
{
	const struct replay *rp = m->rp;
	struct st_event ev;
	int rc = 0;

#define ADD(set_times)                                         \
	do {                                                   \
		set_times;                                     \
		rc |= replay_add(out, &ev);                    \
	} while (0)
	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];
		memset(&ev, 0, sizeof(ev));
		activity_event(m, a, &ev);
		ADD((ev.start = t(m, a->start), ev.end = t(m, a->end)));
	}
	for (size_t i = 0; i < rp->n_apis; i++) {
		const struct replay_api *a = &rp->apis[i];
		memset(&ev, 0, sizeof(ev));
		ev.kind = ST_API;
		ev.api.name = str(m, a->name);
		ev.api.domain = a->domain;
		ev.api.cbid = a->cbid;
		ev.api.status = a->status;
		ev.api.thread = thread(m, a->thread);
		ev.api.correlation = corr(m, a->correlation);
		ADD((ev.start = t(m, a->start), ev.end = t(m, a->end)));
	}
	for (size_t i = 0; i < rp->n_ranges; i++) {
		const struct replay_range *r = &rp->ranges[i];
		memset(&ev, 0, sizeof(ev));
		ev.kind = ST_RANGE;
		ev.range.name = str(m, r->name);
		ev.range.domain = str(m, r->domain);
		ev.range.depth = r->recorded_depth;
		ev.range.thread = thread(m, r->thread);
		ADD((ev.start = t(m, r->start), ev.end = t(m, r->end)));
	}
	for (size_t i = 0; i < rp->n_ops; i++) {
		memset(&ev, 0, sizeof(ev));
		op_event(m, &rp->ops[i], &ev);
		ADD((ev.start = ev.end = t(m, rp->t_min)));
	}
	for (size_t i = 0; i < rp->n_steps; i++) {
		const struct replay_step *s = &rp->steps[i];
		memset(&ev, 0, sizeof(ev));
		ev.kind = ST_STEP;
		ev.step.index = s->index;
		ev.step.warmup = s->warmup;
		ev.step.phases_only = s->phases_only;
		ev.step.thread = thread(m, s->thread);
		ADD((ev.start = t(m, s->start), ev.end = t(m, s->end)));
	}
	for (size_t i = 0; i < rp->n_mem; i++) {
		ev = rp->mem[i].ev;
		if (ev.kind == ST_OOM) {
			ev.oom.op = op(m, ev.oom.op);
		} else {   /* alloc, free and tag (op 0): a tag names its block by address, so they move alike */
			ev.mem.op = op(m, ev.mem.op);
			ev.mem.address += m->addr_tag;
		}
		ADD((ev.start = t(m, ev.start), ev.end = t(m, ev.end)));
	}
	for (size_t i = 0; i < rp->n_others; i++) {
		ev = rp->others[i];
		if (ev.kind == ST_OVERHEAD) {
			ev.overhead.thread = ev.overhead.thread ? thread(m, ev.overhead.thread) : 0;
		} else if (ev.kind == ST_SYNC) {
			ev.sync.thread = ev.sync.thread ? thread(m, ev.sync.thread) : 0;
			ev.sync.correlation = corr(m, ev.sync.correlation);
		}
		ADD((ev.start = t(m, ev.start), ev.end = t(m, ev.end)));
	}
	for (size_t i = 0; i < rp->n_costs; i++) {
		const struct replay_cost *c = &rp->costs[i];
		memset(&ev, 0, sizeof(ev));
		ev.kind = ST_COST;
		ev.cost.thread = thread(m, c->thread);
		ev.cost.callback_ns = c->callback_ns;
		ev.cost.nvtx_ns = c->nvtx_ns;
		ev.cost.hook_ns = c->hook_ns;
		ev.cost.python_ns = c->python_ns;
		ev.cost.launches = c->launches;
		ev.cost.ranges = c->ranges;
		ev.cost.modules = c->modules;
		ADD((ev.start = t(m, c->start), ev.end = t(m, c->end)));
	}
#undef ADD
	return rc;
}

int replay_ranks_pool(struct replay *out, const struct replay_ranks *rs)
{
	struct pool pool = { 0 };
	uint64_t cursor = 0, common = 0;
	uint32_t op_base = 0;
	int rc = -1;

	replay_init(out);
	if (!out->priv)
		return error("out of memory");
	for (size_t r = 0; r < rs->n && !common; r++)
		common = rs->rank[r]->main_thread;
	if (!common)
		common = 1;
	for (size_t r = 0; r < rs->n; r++) {
		const struct replay *rp = rs->rank[r];
		struct move m = { .rp = rp, .pool = &pool, .main_thread = rp->main_thread,
				  .common_main = common, .op_base = op_base };
		uint32_t max_op = 0;

		if (r > 0) {
			m.corr_tag = (uint64_t)r << 40;
			m.thread_tag = (uint64_t)r << 48;
			m.addr_tag = (uint64_t)r << 52;
		}
		/* one after another on one time line, which must hold them all */
		if (r > 0 && (rp->t_max - rp->t_min > RUN_SPAN_NS || cursor > RUN_SPAN_NS - (rp->t_max - rp->t_min))) {
			error("the ranks of '%s' span over 146 years on one time line", rs->rank[0]->path);
			goto out;
		}
		m.shift = r == 0 ? 0 : (int64_t)(cursor - rp->t_min);
		pool.map = calloc(rp->n_strings + 1, sizeof(*pool.map));
		if (!pool.map) {
			error("out of memory");
			goto out;
		}
		if (move_rank(&m, out) || pool.failed) {
			error("out of memory pooling the ranks");
			goto out;
		}
		free(pool.map);
		pool.map = NULL;
		for (size_t i = 0; i < rp->n_ops; i++)
			if (rp->ops[i].id > max_op)
				max_op = rp->ops[i].id;
		op_base += max_op;
		cursor = t(&m, rp->t_max) + POOL_GAP_NS;
		if (rp->truncated && !out->truncated) {
			out->truncated = true;
			out->truncation = rp->truncation;
		}
		out->chunks_read += rp->chunks_read;
		out->events_read += rp->events_read;
	}
	if (replay_set_strings(out, pool.s.str, (uint32_t)pool.s.n + 1) || replay_build(out))
		goto out;
	if (rs->n) {
		out->run = rs->rank[0]->run;
		out->path = rs->rank[0]->path;
		pool_dropped(out, rs);
	}
	rc = 0;
out:
	free(pool.map);
	strpool_release(&pool.s);
	if (rc)
		replay_release(out);
	return rc;
}
