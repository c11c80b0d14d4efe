/* comm.c: `steptrace comm` (see comm.h). */
#include "analyze/comm.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/memlimit.h"
#include "replay/nccl.h"

/*
 * What a program's NCCL kernel is, as "allreduce (NCCL RING LL)": the
 * collective its name says, else the one of the NCCL range it was launched
 * under (ncclDevKernel_Generic), else "NCCL, collective unknown". *type its
 * enum st_collective, -1 unknown.
 */
static void nccl_name(const struct replay *rp, const int32_t *nccl_call, const struct replay_activity *a, char *buf,
		      size_t len, int *type, uint64_t *bytes, uint64_t *comm)
{
	struct nccl_kernel k;
	int32_t r = a->range >= 0 && (size_t)a->range < rp->n_ranges ? nccl_call[a->range] : -1;

	nccl_kernel(replay_str(rp, a->name), &k);
	*bytes = *comm = 0;
	/* the NCCL call it was launched under: its collective when the name has none, its payload's size */
	if (r >= 0) {
		int t = nccl_range(replay_str(rp, rp->ranges[r].name));

		if (k.type < 0)
			k.type = t;
		if (t == k.type) {
			*bytes = rp->ranges[r].bytes;
			*comm = rp->ranges[r].comm;
		}
	}
	*type = k.type;
	if (k.type < 0)
		snprintf(buf, len, "NCCL, collective unknown");
	else if (*k.algo || *k.proto)
		snprintf(buf, len, "%s (NCCL %s%s%s)", st_collective_names[k.type], k.algo, *k.algo && *k.proto ? " " : "",
			 k.proto);
	else
		snprintf(buf, len, "%s (NCCL)", st_collective_names[k.type]);
}

/* ---- computation's busy time ------------------------------------------------- */

/* The union of intervals, sorted and disjoint. */
struct spans {
	uint64_t *s, *e;
	size_t n, cap_s, cap_e;
};

static void spans_release(struct spans *sp)
{
	free(sp->s);
	free(sp->e);
	memset(sp, 0, sizeof(*sp));
}

/* Adds [s, e) to spans filled in order of start (replay's activities, calls and ranges are). */
static int spans_add(struct spans *sp, uint64_t s, uint64_t e)
{
	if (e <= s)
		return 0;
	if (sp->n && s <= sp->e[sp->n - 1]) {
		if (e > sp->e[sp->n - 1])
			sp->e[sp->n - 1] = e;
		return 0;
	}
	if (ALLOC_GROW(sp->s, sp->n + 1, sp->cap_s) || ALLOC_GROW(sp->e, sp->n + 1, sp->cap_e))
		return -1;
	sp->s[sp->n] = s;
	sp->e[sp->n++] = e;
	return 0;
}

/*
 * A collective's work: NCCL's kernels (nccl_collective), and the copies and
 * kernels of steptrace's own comm ops whatever they are (--allreduce-by ce
 * and exchange move the gradients by the copy engines: peer-to-peer copies,
 * a reduction kernel, a local copy). Each NCCL kernel is an instance of its
 * collective; any other work of a comm op joins the op's instance of that
 * step when there is one (joins).
 */
static const struct replay_op *comm_op(const struct replay *rp, const struct replay_activity *a)
{
	const struct replay_op *op = replay_op(rp, a->op);

	return op && !strcmp(replay_str(rp, op->phase), ST_OP_PHASE_COMM) ? op : NULL;
}

static bool comm_activity(const struct replay *rp, const struct replay_activity *a)
{
	return nccl_collective(rp, a) ||
	       ((a->kind == ST_MEMCPY || a->kind == ST_MEMSET) && comm_op(rp, a) != NULL);
}

/* Does a join the instance its op began in the same step (last_op, last_step): not an NCCL kernel. */
static bool joins(const struct replay *rp, const struct replay_activity *a, uint32_t last_op, int32_t last_step)
{
	return a->op && a->op == last_op && a->step == last_step &&
	       !(a->kind == ST_KERNEL && nccl_kernel(replay_str(rp, a->name), NULL));
}

/* The counted computation kernels of rp (activities come sorted by start). */
static int compute_spans(const struct replay *rp, bool warm, struct spans *sp)
{
	memset(sp, 0, sizeof(*sp));
	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];

		if (a->kind != ST_KERNEL || nccl_collective(rp, a) || !replay_counts(rp, a->step, warm))
			continue;
		if (spans_add(sp, a->start, a->end) < 0) {
			spans_release(sp);
			return -1;
		}
	}
	return 0;
}

static uint64_t spans_total(const struct spans *sp)
{
	uint64_t t = 0;

	for (size_t i = 0; i < sp->n; i++)
		t += sp->e[i] - sp->s[i];
	return t;
}

/* How much of [s, e] the spans cover. */
static uint64_t covered(const struct spans *sp, uint64_t s, uint64_t e)
{
	size_t lo = 0, hi = sp->n;
	uint64_t c = 0;

	while (lo < hi) {   /* the first span ending after s */
		size_t mid = lo + (hi - lo) / 2;
		if (sp->e[mid] <= s)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i < sp->n && sp->s[i] < e; i++) {
		uint64_t a = sp->s[i] > s ? sp->s[i] : s, b = sp->e[i] < e ? sp->e[i] : e;
		if (b > a)
			c += b - a;
	}
	return c;
}

int comm_totals(const struct replay *rp, bool include_warmup, struct comm_totals *t)
{
	struct spans sp;

	int32_t *last;   /* per op: the step of its instance counted last, -2 none */

	memset(t, 0, sizeof(*t));
	last = malloc((rp->n_ops + 1) * sizeof(*last));
	if (!last || compute_spans(rp, include_warmup, &sp)) {
		free(last);
		return error("out of memory");
	}
	for (size_t i = 0; i <= rp->n_ops; i++)
		last[i] = -2;
	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];
		bool own = comm_op(rp, a) != NULL && a->op <= rp->n_ops;

		if (!comm_activity(rp, a) || !replay_counts(rp, a->step, include_warmup))
			continue;
		/* a comm op's copies and kernels of one step are one collective; NCCL's kernels each one */
		if (!own || !joins(rp, a, a->op, last[a->op]))
			t->kernels++;
		if (own)
			last[a->op] = a->step;
		t->time_ns += a->end - a->start;
		t->hidden_ns += covered(&sp, a->start, a->end);
	}
	t->compute_ns = spans_total(&sp);
	spans_release(&sp);
	free(last);
	return 0;
}

/* ---- per collective, across ranks ---------------------------------------------- */

/* One rank's instances of a collective, on the run's time line: kernel start and end, launch call's start. */
struct instances {
	uint64_t *start, *end, *launch, *hidden;
	size_t n, cap_s, cap_e, cap_l, cap_h;
	uint32_t last_op;            /* the op and step of instance n - 1 (what joins it: joins) */
	int32_t last_step;
};

struct coll {
	char *name;                  /* the op's kind, or what a program's NCCL kernel is (nccl_name) */
	int type;                    /* enum st_collective, -1 unknown */
	uint64_t bytes;              /* per instance, 0 unknown */
	uint64_t comm;               /* NCCL's communicator id (the same on every rank), 0 unknown */
	uint64_t count, time, hidden;   /* over the ranks */
	struct instances *inst;      /* per rank */
	/* matched across ranks */
	size_t matched;
	uint64_t transfer, skew_sum, skew_max, wait_sum;
	uint32_t *last;              /* per rank: times it arrived last */
	bool uneven;                 /* the ranks ran different numbers of it */
	/* why the last rank was late, summed over instances (see blame) */
	uint64_t host_late, gpu_late, sync_late, data_late;
};

struct rank_sum {
	uint64_t time, hidden, compute, steps;
	uint64_t kernels;            /* its collective kernels counted */
	double step_ms;
	/* the host's synchronisations and data loading, on the run's time line: why a rank is late */
	struct spans sync, data;
};

struct comm_work {
	const struct replay_ranks *rs;
	bool warm;
	struct coll *c;
	size_t n, cap;
	uint32_t *slots;             /* open addressing over c: index + 1, 0 empty */
	size_t n_slots;
	uint64_t claimed;            /* bytes claimed from the analysis budget (lib/memlimit.h) */
	struct rank_sum *rank;
};

/* The type named by a kind's first component: "allreduce/bucket.3" -> ST_COLL_ALLREDUCE. */
static int coll_type(const char *kind)
{
	char first[32];
	size_t n = strcspn(kind, "/");

	if (n >= sizeof(first))
		return -1;
	memcpy(first, kind, n);
	first[n] = '\0';
	return st_lookup(st_collective_names, first);
}

static uint64_t coll_hash(const char *name, uint64_t bytes, uint64_t comm)
{
	return hash_str(name) ^ hash_mix64(bytes) ^ hash_mix64(comm ^ 0x9e3779b97f4a7c15ull);
}

/* Claims bytes of the comm's tables from the analysis budget; 0, or -1 after one line. */
static int comm_claim(struct comm_work *w, uint64_t bytes)
{
	char what[96];

	snprintf(what, sizeof(what), "comm's table of the collectives of %zu rank%s", w->rs->n,
		 w->rs->n == 1 ? "" : "s");
	if (memory_budget_claim(bytes, what) < 0)
		return -1;
	w->claimed += bytes;
	return 0;
}

/* The hash table over w->c at twice its size or more. -1 when out of memory. */
static int slots_grow(struct comm_work *w)
{
	size_t n = w->n_slots ? 2 * w->n_slots : 256;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -1;
	for (size_t i = 0; i < w->n; i++) {
		size_t j = coll_hash(w->c[i].name, w->c[i].bytes, w->c[i].comm) & (n - 1);

		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = (uint32_t)i + 1;
	}
	free(w->slots);
	w->slots = s;
	w->n_slots = n;
	return 0;
}

/*
 * The collective of that name, size and communicator (instances of one are
 * matched across ranks by order), looked up by hash: a run whose every
 * collective has a communicator of its own has as many as it has kernels.
 * NULL after an error line.
 */
static struct coll *coll_of(struct comm_work *w, const char *name, uint64_t bytes, uint64_t comm, int type)
{
	struct coll *c;
	size_t j;

	if ((w->n + 1) * 2 > w->n_slots && slots_grow(w) < 0)
		goto oom;
	for (j = coll_hash(name, bytes, comm) & (w->n_slots - 1); w->slots[j]; j = (j + 1) & (w->n_slots - 1)) {
		c = &w->c[w->slots[j] - 1];
		if (c->bytes == bytes && c->comm == comm && !strcmp(c->name, name))
			return c;
	}
	/* a collective: its instances and arrivals per rank */
	if (comm_claim(w, sizeof(*c) + w->rs->n * (sizeof(*c->inst) + sizeof(*c->last)) + strlen(name) + 1) < 0)
		return NULL;
	if (ALLOC_GROW(w->c, w->n + 1, w->cap))
		goto oom;
	c = &w->c[w->n];
	memset(c, 0, sizeof(*c));
	c->inst = calloc(w->rs->n, sizeof(*c->inst));
	c->last = calloc(w->rs->n, sizeof(*c->last));
	c->name = strdup(name);
	if (!c->inst || !c->last || !c->name) {
		free(c->inst);
		free(c->last);
		free(c->name);
		goto oom;
	}
	c->type = type;
	c->comm = comm;
	c->bytes = bytes;
	w->slots[j] = (uint32_t)++w->n;
	return c;
oom:
	error("out of memory");
	return NULL;
}

/*
 * A rank's host time that makes it late to a collective, on the run's time
 * line: its synchronisations (cudaStreamSynchronize, cudaDeviceSynchronize,
 * cudaEventSynchronize, cuCtxSynchronize, ...: the host waits for the GPU)
 * and its data loading (the "data" phase's ranges).
 */
static int host_spans(const struct replay *rp, int64_t off, struct rank_sum *rs)
{
	for (size_t i = 0; i < rp->n_apis; i++)
		if (strstr(replay_str(rp, rp->apis[i].name), "ynchronize") &&
		    spans_add(&rs->sync, rp->apis[i].start + (uint64_t)off, rp->apis[i].end + (uint64_t)off) < 0)
			return -1;
	for (size_t i = 0; i < rp->n_ranges; i++)
		if (!strcmp(replay_str(rp, rp->ranges[i].name), "data") &&
		    spans_add(&rs->data, rp->ranges[i].start + (uint64_t)off, rp->ranges[i].end + (uint64_t)off) < 0)
			return -1;
	return 0;
}

/*
 * Each range's NCCL call: itself when it is one (nccl_range), else its
 * nearest ancestor that is, -1 none; worked out once per range, not walked
 * up from each NCCL kernel (4,095 nested ranges over each of 100,000).
 * NULL after an error line.
 */
static int32_t *nccl_calls(const struct replay *rp)
{
	int32_t *call = malloc((rp->n_ranges + 1) * sizeof(*call));
	uint8_t *done = calloc(rp->n_ranges + 1, 1);
	int32_t *chain = malloc((rp->n_ranges + 1) * sizeof(*chain));

	if (!call || !done || !chain) {
		free(call);
		free(done);
		free(chain);
		error("out of memory");
		return NULL;
	}
	for (size_t i = 0; i < rp->n_ranges; i++) {
		size_t n = 0;
		int32_t r = (int32_t)i, found = -1;

		/* up to a range already done, an NCCL call or the root; then down again */
		while (r >= 0 && (size_t)r < rp->n_ranges && !done[r] && n <= rp->n_ranges) {
			if (nccl_range(replay_str(rp, rp->ranges[r].name)) >= 0) {
				found = r;
				break;
			}
			chain[n++] = r;
			r = rp->ranges[r].parent;
		}
		if (found < 0 && r >= 0 && (size_t)r < rp->n_ranges && done[r])
			found = call[r];
		if (found >= 0 && !done[found]) {
			call[found] = found;
			done[found] = 1;
		}
		while (n--) {
			call[chain[n]] = found;
			done[chain[n]] = 1;
		}
	}
	free(done);
	free(chain);
	return call;
}

/* One rank's collectives into w. */
static int gather_rank(struct comm_work *w, size_t r)
{
	const struct replay *rp = w->rs->rank[r];
	int64_t off = w->rs->offset[r];
	struct rank_sum *rs = &w->rank[r];
	struct spans sp;
	uint64_t wall = 0;
	size_t n_wall = 0;
	int32_t *call = nccl_calls(rp);

	if (!call)
		return -1;
	if (compute_spans(rp, w->warm, &sp)) {
		free(call);
		return error("out of memory");
	}
	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];
		const struct replay_op *op;
		struct instances *in;
		struct coll *c;
		uint64_t hidden;
		char name[96];
		int type;

		if (!comm_activity(rp, a) || !replay_counts(rp, a->step, w->warm))
			continue;
		op = comm_op(rp, a);
		if (op) {
			const char *kind = replay_str(rp, op->kind ? op->kind : op->path);
			c = coll_of(w, kind, op->bytes, 0, coll_type(kind));
		} else {
			uint64_t bytes, comm;

			nccl_name(rp, call, a, name, sizeof(name), &type, &bytes, &comm);
			c = coll_of(w, name, bytes, comm, type);
		}
		if (!c)
			goto fail;
		hidden = covered(&sp, a->start, a->end);
		c->time += a->end - a->start;
		c->hidden += hidden;
		rs->time += a->end - a->start;
		rs->hidden += hidden;
		in = &c->inst[r];
		if (op && in->n && joins(rp, a, in->last_op, in->last_step)) {
			/* the same collective's next copy or kernel (--allreduce-by ce, exchange) */
			in->hidden[in->n - 1] += hidden;
			if (a->end + (uint64_t)off > in->end[in->n - 1])
				in->end[in->n - 1] = a->end + (uint64_t)off;
			continue;
		}
		in->last_op = a->op;
		in->last_step = a->step;
		c->count++;
		rs->kernels++;
		if (in->n == in->cap_s && comm_claim(w, 4 * sizeof(uint64_t) * (in->cap_s ? in->cap_s : 16)) < 0)
			goto fail;   /* the arrays grow by doubling, from 16 (lib/grow.h) */
		if (ALLOC_GROW(in->start, in->n + 1, in->cap_s) || ALLOC_GROW(in->end, in->n + 1, in->cap_e) ||
		    ALLOC_GROW(in->launch, in->n + 1, in->cap_l) || ALLOC_GROW(in->hidden, in->n + 1, in->cap_h))
			goto oom;
		in->hidden[in->n] = hidden;
		in->start[in->n] = a->start + (uint64_t)off;   /* unsigned: times reach 2^63 */
		in->launch[in->n] = (a->api >= 0 && (size_t)a->api < rp->n_apis && rp->apis[a->api].start <= a->start ?
				     rp->apis[a->api].start : a->start) + (uint64_t)off;
		in->end[in->n++] = a->end + (uint64_t)off;
	}
	if (host_spans(rp, off, rs) < 0)
		goto oom;
	rs->compute = spans_total(&sp);
	rs->steps = replay_step_divisor(rp, w->warm);
	for (size_t i = 0; i < rp->n_steps; i++)
		if (replay_counts(rp, (int32_t)i, w->warm)) {
			wall += rp->steps[i].end - rp->steps[i].start;
			n_wall++;
		}
	rs->step_ms = n_wall ? (double)wall / (double)n_wall / 1e6 : 0;
	spans_release(&sp);
	free(call);
	return 0;
oom:
	error("out of memory");
fail:
	spans_release(&sp);
	free(call);
	return -1;
}

/*
 * Why rank `last` started instance j later than rank `first`: the skew is
 * its launch call's lateness on the host plus its kernel's longer wait
 * on the GPU (queued behind earlier work). Of the host's part, what its
 * synchronisations and data loading took between the two launches.
 */
static void blame(struct comm_work *w, struct coll *c, size_t j, size_t first, size_t last)
{
	const struct instances *f = &c->inst[first], *l = &c->inst[last];
	uint64_t skew = l->start[j] - f->start[j], host = 0;
	const struct rank_sum *rs = &w->rank[last];

	if (l->launch[j] > f->launch[j])
		host = l->launch[j] - f->launch[j] < skew ? l->launch[j] - f->launch[j] : skew;
	c->host_late += host;
	c->gpu_late += skew - host;
	if (host) {
		uint64_t from = l->launch[j] - host;
		c->sync_late += covered(&rs->sync, from, l->launch[j]);
		c->data_late += covered(&rs->data, from, l->launch[j]);
	}
}

/* The k-th instances of each rank taken as one collective. */
static void match(struct comm_work *w, struct coll *c)
{
	size_t n = w->rs->n, m = SIZE_MAX;

	for (size_t r = 0; r < n; r++) {
		if (c->inst[r].n != c->inst[0].n)
			c->uneven = true;
		if (c->inst[r].n < m)
			m = c->inst[r].n;
	}
	for (size_t j = 0; j < m; j++) {
		uint64_t max_s = 0, min_s = UINT64_MAX, max_e = 0;
		size_t last = 0, first = 0;

		for (size_t r = 0; r < n; r++) {
			uint64_t start = c->inst[r].start[j];

			if (r == 0 || start > max_s) {
				max_s = start;
				last = r;
			}
			if (start < min_s) {
				min_s = start;
				first = r;
			}
			if (c->inst[r].end[j] > max_e)
				max_e = c->inst[r].end[j];
		}
		c->transfer += max_e > max_s ? max_e - max_s : 0;
		c->skew_sum += max_s - min_s;
		if (max_s - min_s > c->skew_max)
			c->skew_max = max_s - min_s;
		c->last[last]++;
		for (size_t r = 0; r < n; r++)
			if (r != last)
				c->wait_sum += max_s - c->inst[r].start[j];
		if (n > 1)
			blame(w, c, j, first, last);
	}
	c->matched = m == SIZE_MAX ? 0 : m;
}

static int cmp_coll(const void *x, const void *y)
{
	const struct coll *a = x, *b = y;

	if (a->time != b->time)
		return a->time < b->time ? 1 : -1;
	return strcmp(a->name, b->name);
}

static double pct(uint64_t part, uint64_t whole)
{
	return whole ? 100.0 * (double)part / (double)whole : 0;
}

/* ---- the tables ------------------------------------------------------------------ */

static void coll_columns(struct table *t)
{
	table_add_column(t, "Collective", COL_STR, 0);
	table_add_column(t, "Count", COL_FLOAT, 2);
	table_add_column(t, "Bytes", COL_FLOAT, 1);   /* a type's total per step may be fractional: 0.2 × 216 + 0.2 × 12 */
	table_add_column(t, "Time (ms)", COL_FLOAT, 3);
	table_add_column(t, "Transfer (us)", COL_FLOAT, 1);
	table_add_column(t, "Algbw (GB/s)", COL_FLOAT, 2);
	table_add_column(t, "Busbw (GB/s)", COL_FLOAT, 2);
	table_add_column(t, "Hidden (%)", COL_FLOAT, 1);
	table_add_column(t, "Exposed (%)", COL_FLOAT, 1);
}

/*
 * The most ranks a run's world can have and still be taken for real (2^20,
 * as plan's devices): a header claiming more gets no bus bandwidth, which
 * depends on it, only the warning that its ranks are missing.
 */
#define COMM_WORLD_MAX (1u << 20)

/*
 * A row: per step and rank `per` (steps * ranks) of count and time; bytes
 * and transfer per instance (a collective) or per step (a type's total).
 */
static void coll_row(struct table *t, const char *name, double count, double bytes, double time_ns,
		     double transfer_ns, int type, uint32_t world, uint64_t hidden, uint64_t total)
{
	double alg = transfer_ns > 0 && bytes > 0 ? bytes / transfer_ns : 0;

	table_row(t);
	table_str(t, name);
	table_count(t, count);
	if (bytes > 0)
		table_count(t, bytes);   /* whole bytes print whole, a mean per step with its decimal */
	else
		table_empty(t);
	table_float(t, time_ns / 1e6);
	if (transfer_ns > 0)
		table_float(t, transfer_ns / 1e3);
	else
		table_empty(t);
	if (alg > 0) {
		table_float(t, alg);
		if (type >= 0 && world >= 1 && world <= COMM_WORLD_MAX)
			table_float(t, alg * st_bus_factor(type, (int)world));
		else
			table_empty(t);
	} else {
		table_empty(t);
		table_empty(t);
	}
	table_float(t, pct(hidden, total));
	table_float(t, total ? 100.0 - pct(hidden, total) : 0);
}

static void collectives_table(struct comm_work *w, const struct comm_opts *o, struct report *r)
{
	struct table *t = report_add_table(r, "collectives",
		"Collectives per measured step and rank (bytes and transfer per instance; mean over ranks)");
	double per = (double)w->rank[0].steps * (double)w->rs->n;
	size_t shown = o->top > 0 && (size_t)o->top < w->n ? (size_t)o->top : w->n;

	if (o->include_warmup)
		report_note(r, "steps: every recorded step, warm-up included");
	coll_columns(t);
	for (size_t i = 0; i < shown; i++) {
		const struct coll *c = &w->c[i];

		coll_row(t, c->name, (double)c->count / per, (double)c->bytes, (double)c->time / per,
			 c->matched ? (double)c->transfer / (double)c->matched : 0, c->type,
			 w->rs->world_size, c->hidden, c->time);
	}
	/* each type's total per step: its bytes and transfers added up */
	for (int type = -1; type < ST_COLL_COUNT; type++) {
		uint64_t count = 0, time = 0, hidden = 0, kinds = 0;
		double transfer = 0, bytes = 0;
		char name[64];

		for (size_t i = 0; i < w->n; i++) {
			const struct coll *c = &w->c[i];
			if (c->type != type)
				continue;
			kinds++;
			count += c->count;
			time += c->time;
			hidden += c->hidden;
			bytes += (double)c->bytes * (double)c->count / per;
			if (c->matched)
				transfer += (double)c->transfer / (double)c->matched * (double)c->count / per;
		}
		if (kinds < 2)
			continue;
		snprintf(name, sizeof(name), "%s (total per step)",
			 type >= 0 ? st_collective_names[type] : "other");
		coll_row(t, name, (double)count / per, bytes, (double)time / per, transfer, type,
			 w->rs->world_size, hidden, time);
	}
	if (shown < w->n)
		report_note(r, "%zu of %zu collectives shown (--top %d)", shown, w->n, o->top);
}

/* In every report (empty for one rank), so JSON's keys do not depend on the bundles. */
static void skew_table(struct comm_work *w, struct report *r, bool ranks)
{
	struct table *t = report_add_table(r, "skew", "Arrival skew between ranks (kernel starts on the run's time line)");

	table_optional(t);

	table_add_column(t, "Collective", COL_STR, 0);
	table_add_column(t, "Instances", COL_INT, 0);
	table_add_column(t, "Skew Mean (us)", COL_FLOAT, 1);
	table_add_column(t, "Skew Max (us)", COL_FLOAT, 1);
	table_add_column(t, "Last Rank", COL_INT, 0);
	table_add_column(t, "Last (%)", COL_FLOAT, 1);
	table_add_column(t, "Wait Mean (us)", COL_FLOAT, 1);
	table_add_column(t, "Host Late (us)", COL_FLOAT, 1);
	table_add_column(t, "GPU Late (us)", COL_FLOAT, 1);
	size_t uneven = 0, partial = 0;
	const struct coll *first_partial = NULL;

	for (size_t i = 0; ranks && i < w->n; i++) {
		const struct coll *c = &w->c[i];
		size_t most = 0;

		if (!c->matched) {
			/* some ranks never ran it: nothing to compare */
			partial++;
			first_partial = first_partial ? first_partial : c;
			continue;
		}
		for (size_t k = 1; k < w->rs->n; k++)
			if (c->last[k] > c->last[most])
				most = k;
		table_row(t);
		table_str(t, c->name);
		table_int(t, (int64_t)c->matched);
		table_float(t, (double)c->skew_sum / (double)c->matched / 1e3);
		table_float(t, (double)c->skew_max / 1e3);
		table_int(t, replay_ranks_rank(w->rs, most));
		table_float(t, pct(c->last[most], c->matched));
		table_float(t, (double)c->wait_sum / ((double)c->matched * (double)(w->rs->n - 1)) / 1e3);
		table_float(t, (double)c->host_late / (double)c->matched / 1e3);
		table_float(t, (double)c->gpu_late / (double)c->matched / 1e3);
		if (c->uneven && uneven++ < 10)
			report_note(r, "the ranks ran '%s' a different number of times: skew compares the first %zu",
				    c->name, c->matched);
	}
	if (uneven > 10)
		report_note(r, "and %zu more collectives the ranks ran a different number of times", uneven - 10);
	if (partial) {
		size_t on = 0;

		for (size_t k = 0; k < w->rs->n; k++)
			on += first_partial->inst[k].n > 0;
		report_note(r, "%zu collective%s ran on some ranks only (the first, '%s', on %zu of the %zu): no skew "
			       "for %s", partial, partial == 1 ? "" : "s", first_partial->name, on, w->rs->n,
			    partial == 1 ? "it" : "them");
	}
}

/*
 * Stragglers with a cause: the rank that arrives last most often, how much
 * of the skew its host's late launches explain (and of those what its
 * synchronisations and data loading took) and how much its GPU's queue.
 */
static void straggler_note(struct comm_work *w, struct report *r)
{
	uint64_t skew = 0, host = 0, gpu = 0, sync = 0, data = 0, matched = 0;
	uint64_t *last = calloc(w->rs->n, sizeof(*last));
	size_t most = 0;

	if (!last)
		return;
	for (size_t i = 0; i < w->n; i++) {
		const struct coll *c = &w->c[i];

		skew += c->skew_sum;
		host += c->host_late;
		gpu += c->gpu_late;
		sync += c->sync_late;
		data += c->data_late;
		matched += c->matched;
		for (size_t k = 0; k < w->rs->n; k++)
			last[k] += c->last[k];
	}
	for (size_t k = 1; k < w->rs->n; k++)
		if (last[k] > last[most])
			most = k;
	if (matched && skew) {
		report_note(r, "straggler: rank %" PRIu32 " arrives last at %.1f%% of %" PRIu64 " collectives; of the "
			    "mean skew of %.1f us, %.1f%% is the last rank's host launching later (synchronisation "
			    "%.1f%%, data loading %.1f%%, other host work %.1f%%) and %.1f%% its GPU still busy with "
			    "earlier work", replay_ranks_rank(w->rs, most), pct(last[most], matched), matched,
			    (double)skew / (double)matched / 1e3, pct(host, skew), pct(sync, skew), pct(data, skew),
			    pct(host - sync - data, skew), pct(gpu, skew));
	}
	free(last);
}

static void ranks_table(struct comm_work *w, struct report *r)
{
	struct table *t = report_add_table(r, "ranks", "Communication and computation per measured step");
	uint64_t time = 0, hidden = 0;
	double steps = 0, exposed_ms = 0, step_ms = 0;

	table_add_column(t, "Rank", COL_INT, 0);
	table_add_column(t, "Comm (ms)", COL_FLOAT, 3);
	table_add_column(t, "Hidden (ms)", COL_FLOAT, 3);
	table_add_column(t, "Exposed (ms)", COL_FLOAT, 3);
	table_add_column(t, "Hidden (%)", COL_FLOAT, 1);
	table_add_column(t, "Exposed (%)", COL_FLOAT, 1);
	table_add_column(t, "Compute (ms)", COL_FLOAT, 3);
	table_add_column(t, "Step (ms)", COL_FLOAT, 3);
	table_add_column(t, "Exposed of Step (%)", COL_FLOAT, 1);
	for (size_t k = 0; k < w->rs->n; k++) {
		const struct rank_sum *s = &w->rank[k];
		double d = (double)s->steps * 1e6, exposed = (double)(s->time - s->hidden) / d;

		table_row(t);
		table_int(t, replay_ranks_rank(w->rs, k));
		table_float(t, (double)s->time / d);
		table_float(t, (double)s->hidden / d);
		table_float(t, exposed);
		table_float(t, pct(s->hidden, s->time));
		table_float(t, s->time ? 100.0 - pct(s->hidden, s->time) : 0);
		table_float(t, (double)s->compute / d);
		if (s->step_ms > 0) {
			table_float(t, s->step_ms);
			table_float(t, 100.0 * exposed / s->step_ms);
		} else {
			table_empty(t);
			table_empty(t);
		}
		time += s->time;
		hidden += s->hidden;
		steps += (double)s->steps;
		exposed_ms += exposed;
		step_ms += s->step_ms;
	}
	{
		size_t lo = 0, hi = 0;

		for (size_t k = 1; k < w->rs->n; k++) {
			lo = w->rank[k].kernels < w->rank[lo].kernels ? k : lo;
			hi = w->rank[k].kernels > w->rank[hi].kernels ? k : hi;
		}
		if (w->rank[lo].kernels != w->rank[hi].kernels)
			report_note(r, "the ranks ran different numbers of collective kernels (rank %u %" PRIu64 ", rank "
				       "%u %" PRIu64 "): each collective's instances are matched by their order on each "
				       "rank", replay_ranks_rank(w->rs, lo), w->rank[lo].kernels,
				    replay_ranks_rank(w->rs, hi), w->rank[hi].kernels);
	}
	if (!time)
		return;
	exposed_ms /= (double)w->rs->n;
	step_ms /= (double)w->rs->n;
	report_note(r, "communication %.3f ms per step and rank: %.1f%% hidden under computation, %.1f%% "
		    "exposed (%.3f ms)", (double)time / steps / 1e6, pct(hidden, time),
		    100.0 - pct(hidden, time), exposed_ms);
	if (step_ms > 0)
		report_note(r, "exposed communication is %.1f%% of the %.3f ms step", 100.0 * exposed_ms / step_ms,
			    step_ms);
}

/*
 * Every counted collective kernel of every rank, a row each (COMM_INSTANCES,
 * comm.h): times back on each rank's own clock from its time base, so that
 * ranks reduced one by one line up as the run's time line does.
 */
static void instances_table(struct comm_work *w, struct report *r)
{
	struct table *t = report_add_table(r, COMM_INSTANCES, "Collective kernels, one row each (ns on each rank's clock)");

	table_add_column(t, "Rank", COL_INT, 0);
	table_add_column(t, "Collective", COL_STR, 0);
	table_add_column(t, "Bytes", COL_INT, 0);
	table_add_column(t, "Comm", COL_STR, 0);
	table_add_column(t, "Instance", COL_INT, 0);
	table_add_column(t, "Start", COL_INT, 0);
	table_add_column(t, "End", COL_INT, 0);
	table_add_column(t, "Launch", COL_INT, 0);
	table_add_column(t, "Hidden", COL_INT, 0);
	table_add_column(t, "Steps", COL_INT, 0);
	table_add_column(t, "World", COL_INT, 0);
	for (size_t k = 0; k < w->rs->n; k++) {
		/* back from the run's time line to the rank's clock: its time base */
		uint64_t back = w->rs->rank[k]->run.time_base_ns - (uint64_t)w->rs->offset[k];
		char comm[24];

		for (size_t i = 0; i < w->n; i++) {
			const struct coll *c = &w->c[i];
			const struct instances *in = &c->inst[k];

			snprintf(comm, sizeof(comm), "%" PRIx64, c->comm);
			for (size_t j = 0; j < in->n; j++) {
				table_row(t);
				table_int(t, replay_ranks_rank(w->rs, k));
				table_str(t, c->name);
				table_int(t, (int64_t)c->bytes);
				table_str(t, comm);
				table_int(t, (int64_t)j);
				table_int(t, (int64_t)(in->start[j] + back));
				table_int(t, (int64_t)(in->end[j] + back));
				table_int(t, (int64_t)(in->launch[j] + back));
				table_int(t, (int64_t)in->hidden[j]);
				table_int(t, (int64_t)w->rank[k].steps);
				table_int(t, w->rs->world_size);
			}
		}
	}
}

static void work_release(struct comm_work *w)
{
	for (size_t i = 0; i < w->n; i++) {
		for (size_t r = 0; r < w->rs->n; r++) {
			free(w->c[i].inst[r].start);
			free(w->c[i].inst[r].end);
			free(w->c[i].inst[r].launch);
			free(w->c[i].inst[r].hidden);
		}
		free(w->c[i].inst);
		free(w->c[i].last);
		free(w->c[i].name);
	}
	free(w->c);
	free(w->slots);
	memory_budget_release(w->claimed);
	for (size_t k = 0; w->rank && k < w->rs->n; k++) {
		spans_release(&w->rank[k].sync);
		spans_release(&w->rank[k].data);
	}
	free(w->rank);
}

int comm_run(const struct replay_ranks *rs, const struct comm_opts *o, struct report *r)
{
	struct comm_work w = { .rs = rs, .warm = o->include_warmup };
	int rc = -1;

	w.rank = calloc(rs->n, sizeof(*w.rank));
	if (!w.rank)
		return error("out of memory");
	for (size_t k = 0; k < rs->n; k++)
		if (gather_rank(&w, k))
			goto out;
	for (size_t i = 0; i < w.n; i++)
		match(&w, &w.c[i]);
	if (w.n > 1)
		qsort(w.c, w.n, sizeof(*w.c), cmp_coll);
	collectives_table(&w, o, r);
	skew_table(&w, r, rs->n > 1);
	if (rs->n > 1)
		straggler_note(&w, r);
	ranks_table(&w, r);
	if (o->section && !strcmp(o->section, COMM_INSTANCES))
		instances_table(&w, r);
	if (!w.n)
		report_note(r, "no collectives: the bundle%s hold%s no NCCL kernel (record a program that "
			    "communicates, or steptrace's own step with --ddp on several GPUs)", rs->n > 1 ? "s" : "",
			    rs->n > 1 ? "" : "s");
	if (rs->n > 1)
		report_note(r, "%zu ranks; time line: %s", rs->n, rs->alignment);
	if (rs->world_size > rs->n)
		report_note(r, "%zu of the run's %" PRIu32 " ranks given: bus bandwidth counts the run's "
			    "ranks, skew and totals the ranks given", rs->n, rs->world_size);
	else if (rs->n == 1)
		report_note(r, "one rank: no skew (give every rank's bundle)");
	rc = 0;
out:
	work_release(&w);
	return rc;
}
