/*
 * replay.c: loading a bundle into a replay, the sorted arrays, lookups and
 * the measured-step filter. The range tree and its projection are in
 * project.c, the --range matcher in filter.c.
 */
#include "replay/internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/error.h"
#include "lib/grow.h"
#include "lib/human.h"
#include "lib/memlimit.h"
#include "lib/utf8.h"

#define ARENA_BLOCK (64 * 1024)

/* len + 1 bytes in the arena, the last one '\0'. NULL when out of memory. */
static char *arena_alloc(struct replay *rp, size_t len)
{
	struct replay_priv *pv = rp->priv;
	struct arena_block *b = pv->arena;

	if (!b || b->size - b->used < len + 1) {
		size_t size = len + 1 > ARENA_BLOCK ? len + 1 : ARENA_BLOCK;
		b = malloc(sizeof(*b) + size);
		if (!b)
			return NULL;
		b->next = pv->arena;
		b->used = 0;
		b->size = size;
		pv->arena = b;
	}
	char *p = b->data + b->used;
	p[len] = '\0';
	b->used += len + 1;
	return p;
}

char *replay_arena_strdup(struct replay *rp, const char *s, size_t len)
{
	char *p = arena_alloc(rp, len);

	if (p)
		memcpy(p, s, len);
	return p;
}

const char *replay_utf8(struct replay *rp, const char *s)
{
	char *fixed;

	if (utf8_valid(s))
		return s;
	fixed = arena_alloc(rp, utf8_repaired_len(s));
	if (!fixed) {
		error("out of memory for a string");
		return "";
	}
	return utf8_repair_into(fixed, s);
}

void replay_init(struct replay *rp)
{
	memset(rp, 0, sizeof(*rp));
	rp->priv = calloc(1, sizeof(struct replay_priv));
	rp->main_thread = 0;
}

void replay_release(struct replay *rp)
{
	struct replay_priv *pv = rp->priv;

	if (pv) {
		struct arena_block *b = pv->arena;
		while (b) {
			struct arena_block *next = b->next;
			free(b);
			b = next;
		}
		if (pv->reader)
			bundle_reader_free(pv->reader);
		free(pv->path_strs);
		free(pv->path_head);
		free(pv->jump);
		free(pv->jump_end);
		free(pv->param_groups);
		free(pv);
	}
	for (size_t i = 0; i < rp->n_streams; i++)
		free(rp->streams[i].acts);
	for (size_t i = 0; i < rp->n_threads; i++) {
		free(rp->threads[i].apis);
		free(rp->threads[i].ranges);
	}
	free(rp->strings);
	free(rp->activities);
	free(rp->kernel_cfg);
	free(rp->copies);
	free(rp->apis);
	free(rp->ranges);
	free(rp->paths);
	free(rp->ops);
	free(rp->steps);
	free(rp->mem);
	free(rp->others);
	free(rp->costs);
	free(rp->streams);
	free(rp->threads);
	memset(rp, 0, sizeof(*rp));
}

int replay_set_strings(struct replay *rp, const char *const *strings, uint32_t n)
{
	struct replay_priv *pv = rp->priv;

	if (!pv)
		return error("replay used before replay_init");
	if (ALLOC_GROW(rp->strings, n ? n : 1, pv->cap_strings) < 0)
		return -1;
	rp->strings[0] = "";
	for (uint32_t i = 1; i < n; i++) {
		const char *s = strings[i] ? strings[i] : "";
		char *copy = arena_alloc(rp, utf8_repaired_len(s));

		if (!copy)
			return error("out of memory for strings");
		rp->strings[i] = utf8_repair_into(copy, s);
	}
	rp->n_strings = n ? n : 1;
	pv->strings_owned = true;
	return 0;
}

static void add_activity(struct replay_activity *a, const struct st_event *ev)
{
	memset(a, 0, sizeof(*a));
	a->start = ev->start;
	a->end = ev->end;
	a->kind = (uint8_t)ev->kind;
	a->api = a->range = a->step = -1;
}

/* A size past REPLAY_SIZE_MAX: read as unknown (0), counted for replay_load's warning. */
static void unreal_size(struct replay *rp, uint64_t *v, const char *what)
{
	if (*v <= REPLAY_SIZE_MAX)
		return;
	if (!rp->unreal_sizes++) {
		rp->unreal_first = *v;
		rp->unreal_what = what;
	}
	*v = 0;
}

static void unreal_sizes(struct replay *rp, struct st_event *e)
{
	switch (e->kind) {
	case ST_MEMCPY: unreal_size(rp, &e->memcpy.bytes, "a copy"); break;
	case ST_MEMSET: unreal_size(rp, &e->memset.bytes, "a memset"); break;
	case ST_RANGE: unreal_size(rp, &e->range.bytes, "an NCCL message"); break;
	case ST_OP: unreal_size(rp, &e->op.bytes, "an op's bytes"); break;
	case ST_ALLOC:
	case ST_FREE:
	case ST_MEMTAG: unreal_size(rp, &e->mem.size, "an allocation"); break;
	case ST_OOM:
		unreal_size(rp, &e->oom.requested, "a refused allocation");
		unreal_size(rp, &e->oom.live_bytes, "the memory live at an out-of-memory");
		unreal_size(rp, &e->oom.capacity, "the memory of an out-of-memory's device");
		break;
	default: break;
	}
}

int replay_add(struct replay *rp, const struct st_event *ev)
{
	struct replay_priv *pv = rp->priv;
	struct st_event e = *ev;

	if (!pv || pv->built)
		return error("replay_add after replay_build");
	unreal_sizes(rp, &e);
	if (e.end < e.start)
		e.end = e.start;
	if (e.kind >= ST_KIND_FIRST && e.kind <= ST_KIND_LAST)
		rp->counts[e.kind]++;

	switch (e.kind) {
	case ST_KERNEL: {
		struct replay_activity *a;
		struct replay_kernel_cfg *k;
		if (ALLOC_GROW(rp->activities, rp->n_activities + 1, pv->cap_activities) < 0 ||
		    ALLOC_GROW(rp->kernel_cfg, rp->n_kernel_cfg + 1, pv->cap_kernel_cfg) < 0)
			return -1;
		a = &rp->activities[rp->n_activities++];
		add_activity(a, &e);
		a->name = e.kernel.name;
		a->stream = e.kernel.stream;
		a->device = (uint16_t)e.kernel.device;
		a->op = e.kernel.op;
		a->correlation = e.kernel.correlation;
		a->detail = (uint32_t)rp->n_kernel_cfg;
		k = &rp->kernel_cfg[rp->n_kernel_cfg++];
		memcpy(k->grid, e.kernel.grid, sizeof(k->grid));
		memcpy(k->block, e.kernel.block, sizeof(k->block));
		k->registers = e.kernel.registers;
		k->static_smem = e.kernel.static_smem;
		k->dynamic_smem = e.kernel.dynamic_smem;
		break;
	}
	case ST_MEMCPY: {
		struct replay_activity *a;
		struct replay_copy *c;
		if (ALLOC_GROW(rp->activities, rp->n_activities + 1, pv->cap_activities) < 0 ||
		    ALLOC_GROW(rp->copies, rp->n_copies + 1, pv->cap_copies) < 0)
			return -1;
		a = &rp->activities[rp->n_activities++];
		add_activity(a, &e);
		a->stream = e.memcpy.stream;
		a->device = (uint16_t)e.memcpy.device;
		a->op = e.memcpy.op;
		a->correlation = e.memcpy.correlation;
		a->bytes = e.memcpy.bytes;
		a->detail = (uint32_t)rp->n_copies;
		c = &rp->copies[rp->n_copies++];
		c->copy_kind = e.memcpy.copy_kind;
		c->src_kind = e.memcpy.src_kind;
		c->dst_kind = e.memcpy.dst_kind;
		break;
	}
	case ST_MEMSET: {
		struct replay_activity *a;
		if (ALLOC_GROW(rp->activities, rp->n_activities + 1, pv->cap_activities) < 0)
			return -1;
		a = &rp->activities[rp->n_activities++];
		add_activity(a, &e);
		a->stream = e.memset.stream;
		a->device = (uint16_t)e.memset.device;
		a->op = e.memset.op;
		a->correlation = e.memset.correlation;
		a->bytes = e.memset.bytes;
		a->detail = e.memset.value;
		break;
	}
	case ST_API: {
		struct replay_api *c;
		if (ALLOC_GROW(rp->apis, rp->n_apis + 1, pv->cap_apis) < 0)
			return -1;
		c = &rp->apis[rp->n_apis++];
		memset(c, 0, sizeof(*c));
		c->start = e.start;
		c->end = e.end;
		c->thread = e.api.thread;
		c->correlation = e.api.correlation;
		c->name = e.api.name;
		c->cbid = e.api.cbid;
		c->status = e.api.status;
		c->domain = (uint8_t)e.api.domain;
		c->range = c->activity = -1;
		break;
	}
	case ST_RANGE: {
		struct replay_range *r;
		if (ALLOC_GROW(rp->ranges, rp->n_ranges + 1, pv->cap_ranges) < 0)
			return -1;
		r = &rp->ranges[rp->n_ranges++];
		memset(r, 0, sizeof(*r));
		r->start = e.start;
		r->end = e.end;
		r->thread = e.range.thread;
		r->name = e.range.name;
		r->domain = e.range.domain;
		r->comm = e.range.comm;
		r->bytes = e.range.bytes;
		r->recorded_depth = e.range.depth;
		r->parent = r->step = -1;
		break;
	}
	case ST_OP: {
		struct replay_op *o;
		if (e.op.id == 0)
			break; /* not a valid op; counted, not kept */
		if (ALLOC_GROW(rp->ops, rp->n_ops + 1, pv->cap_ops) < 0)
			return -1;
		o = &rp->ops[rp->n_ops++];
		memset(o, 0, sizeof(*o));
		o->id = e.op.id;
		o->name = e.op.name;
		o->path = e.op.path;
		o->kind = e.op.kind;
		o->phase = e.op.phase;
		o->flops = e.op.flops;
		o->bytes = e.op.bytes;
		o->n_inputs = e.op.n_inputs > ST_OP_MAX_INPUTS ? ST_OP_MAX_INPUTS : e.op.n_inputs;
		o->n_outputs = e.op.n_outputs > ST_OP_MAX_OUTPUTS ? ST_OP_MAX_OUTPUTS : e.op.n_outputs;
		memcpy(o->inputs, e.op.inputs, sizeof(o->inputs));
		memcpy(o->outputs, e.op.outputs, sizeof(o->outputs));
		break;
	}
	case ST_STEP: {
		struct replay_step *s;
		if (ALLOC_GROW(rp->steps, rp->n_steps + 1, pv->cap_steps) < 0)
			return -1;
		s = &rp->steps[rp->n_steps++];
		memset(s, 0, sizeof(*s));
		s->index = e.step.index;
		s->warmup = e.step.warmup;
		s->phases_only = e.step.phases_only;
		s->thread = e.step.thread;
		s->start = e.start;
		s->end = e.end;
		break;
	}
	case ST_ALLOC:
	case ST_FREE:
	case ST_OOM:
	case ST_MEMTAG: {
		struct replay_mem *m;
		if (ALLOC_GROW(rp->mem, rp->n_mem + 1, pv->cap_mem) < 0)
			return -1;
		m = &rp->mem[rp->n_mem++];
		m->ev = e;
		m->step = m->range = -1;
		break;
	}
	case ST_OVERHEAD:
	case ST_SYNC:
		if (ALLOC_GROW(rp->others, rp->n_others + 1, pv->cap_others) < 0)
			return -1;
		rp->others[rp->n_others++] = e;
		break;
	case ST_COST: {
		struct replay_cost *c;
		if (ALLOC_GROW(rp->costs, rp->n_costs + 1, pv->cap_costs) < 0)
			return -1;
		c = &rp->costs[rp->n_costs++];
		c->start = e.start;
		c->end = e.end;
		c->thread = e.cost.thread;
		c->callback_ns = e.cost.callback_ns;
		c->nvtx_ns = e.cost.nvtx_ns;
		c->hook_ns = e.cost.hook_ns;
		c->python_ns = e.cost.python_ns;
		c->launches = e.cost.launches;
		c->ranges = e.cost.ranges;
		c->modules = e.cost.modules;
		c->cupti_ns = 0;   /* replay_project: launches x the run's launch cost */
		c->step = -1;
		break;
	}
	default:
		break; /* unknown kinds from a newer minor version are skipped */
	}
	return 0;
}

/* The reader's memory budget (struct replay_options' memory_limit). */
static void set_budget(struct bundle_reader *r, const char *path, const struct replay_options *opt)
{
	uint64_t limit = opt && opt->memory_limit ? opt->memory_limit : memory_limit_default(), scaled;
	char why[96], size[32], bytes[32];
	struct stat st;

	if ((opt && opt->memory_limit_given) || stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
		bundle_reader_set_budget(r, limit, REPLAY_EVENT_BYTES, opt ? opt->limit_why : NULL);
		return;
	}
	scaled = memory_limit_for_bundle(limit, (uint64_t)st.st_size);
	snprintf(why, sizeof(why), "the default for a bundle of %s: %d times its size, at least %s",
		 human_bytes(size, sizeof(size), (double)st.st_size), MEMORY_PER_BUNDLE_BYTE,
		 human_bytes(bytes, sizeof(bytes), (double)MEMORY_LIMIT_SMALL));
	bundle_reader_set_budget(r, scaled, REPLAY_EVENT_BYTES, scaled < limit ? why : opt ? opt->limit_why : NULL);
}

/*
 * What the bundle lacks, in one line: what was cut off, what was dropped
 * while recording (both, the truncation first), nothing for a sound one.
 * Every analysis command loads its bundles here, each once, so each bundle
 * says it once.
 */
static void warn_loss(const struct replay *rp)
{
	char dropped[512];

	replay_dropped_text(rp, dropped, sizeof(dropped));
	if (rp->truncated)
		warning("'%s' is truncated (%s): read %" PRIu32 " chunks, %" PRIu64
			" events; results cover only that part%s%s", rp->path,
			rp->truncation ? rp->truncation : "no footer", rp->chunks_read,
			rp->events_read, *dropped ? "; " : "", dropped);
	else if (*dropped)
		warning("'%s': %s", rp->path, dropped);
	if (rp->unreal_sizes)
		warning("'%s': %" PRIu64 " size%s past 2^53 bytes (%s of %" PRIu64 " B%s): no machine holds them, so "
			"they are read as unknown", rp->path, rp->unreal_sizes, rp->unreal_sizes == 1 ? "" : "s",
			rp->unreal_what, rp->unreal_first, rp->unreal_sizes > 1 ? ", the first" : "");
}

int replay_load(struct replay *rp, const char *path, const struct replay_options *opt)
{
	struct bundle_reader *r;
	struct st_event ev;
	int rc;

	replay_init(rp);
	if (!rp->priv)
		return error("out of memory");
	r = bundle_reader_open(path);
	if (!r)
		goto fail;
	((struct replay_priv *)rp->priv)->reader = r;
	set_budget(r, path, opt);
	while ((rc = bundle_reader_next(r, &ev)) > 0)
		if (replay_add(rp, &ev) < 0)
			goto fail;
	if (rc < 0)
		goto fail;

	rp->path = bundle_reader_path(r);
	replay_run_fill(rp, bundle_reader_header(r), bundle_reader_footer(r));
	rp->truncated = bundle_reader_truncated(r);
	rp->truncation = bundle_reader_truncation(r);
	rp->chunks_read = bundle_reader_chunks(r);
	rp->events_read = bundle_reader_events(r);
	rp->memory = bundle_reader_memory_kept(r);
	if (!(opt && opt->quiet))
		warn_loss(rp);

	/* The reader's string table, by pointer: the reader lives as long as rp. */
	{
		struct replay_priv *pv = rp->priv;
		uint32_t n = bundle_reader_string_count(r);
		if (n == 0)
			n = 1;
		if (ALLOC_GROW(rp->strings, n, pv->cap_strings) < 0)
			goto fail;
		for (uint32_t i = 0; i < n; i++) {
			const char *s = bundle_reader_string(r, i);
			rp->strings[i] = replay_utf8(rp, s ? s : "");
			if (s && *s && !*rp->strings[i])
				goto fail;   /* out of memory, said */
		}
		rp->n_strings = rp->strings_read = n;
	}
	if (replay_build(rp) < 0)
		goto fail;
	return 0;
fail:
	replay_release(rp);
	return -1;
}

/* ---- build: ordering --------------------------------------------------- */

/* Interns a name the bundle does not store (copy names); reuses an equal string. */
static uint32_t synthetic_name(struct replay *rp, const char *s)
{
	struct replay_priv *pv = rp->priv;

	for (uint32_t i = rp->n_strings; i-- > 1;)
		if (strcmp(rp->strings[i], s) == 0)
			return i;
	if (ALLOC_GROW(rp->strings, rp->n_strings + 1, pv->cap_strings) < 0)
		return 0;
	rp->strings[rp->n_strings] = s; /* static storage */
	return rp->n_strings++;
}

/* "[CUDA memcpy Host-to-Device]" for a CUPTI memcpy kind (Nsight's names). */
static const char *memcpy_name(uint32_t copy_kind)
{
	static const char *const names[] = {
		"[CUDA memcpy Unknown]",
		"[CUDA memcpy Host-to-Device]",
		"[CUDA memcpy Device-to-Host]",
		"[CUDA memcpy Host-to-Array]",
		"[CUDA memcpy Array-to-Host]",
		"[CUDA memcpy Array-to-Array]",
		"[CUDA memcpy Array-to-Device]",
		"[CUDA memcpy Device-to-Array]",
		"[CUDA memcpy Device-to-Device]",
		"[CUDA memcpy Host-to-Host]",
		"[CUDA memcpy Peer-to-Peer]",
	};
	return copy_kind < sizeof(names) / sizeof(names[0]) ? names[copy_kind] : names[0];
}

/* Sorts n elements of size `elem` at *base by key (stable) through `keys`. */
static int permute(void **base, size_t n, size_t elem, struct replay_key *keys)
{
	char *src = *base, *dst;
	size_t i = 0;

	while (i < n && keys[i].idx == i)
		i++;
	if (i == n)
		return 0; /* already in order */
	dst = malloc(n * elem);
	if (!dst)
		return -1;
	for (i = 0; i < n; i++)
		memcpy(dst + i * elem, src + (size_t)keys[i].idx * elem, elem);
	free(src);
	*base = dst;
	return 0;
}

#define SORT_BY(rp, arr, n, field, keys, tmp)                                      \
	do {                                                                        \
		for (size_t i_ = 0; i_ < (rp)->n; i_++) {                           \
			keys[i_].key = (rp)->arr[i_].field;                         \
			keys[i_].idx = (uint32_t)i_;                                \
		}                                                                   \
		replay_sort_keys(keys, tmp, (rp)->n);                               \
		if (permute((void **)&(rp)->arr, (rp)->n, sizeof(*(rp)->arr), keys) < 0) \
			goto oom;                                                   \
	} while (0)

static bool ranges_in_order(const struct replay *rp)
{
	for (size_t i = 1; i < rp->n_ranges; i++) {
		const struct replay_range *a = &rp->ranges[i - 1], *b = &rp->ranges[i];
		if (a->start > b->start || (a->start == b->start && a->recorded_depth > b->recorded_depth))
			return false;
	}
	return true;
}

static int sort_all(struct replay *rp)
{
	size_t n = rp->n_activities;
	struct replay_key *keys, *tmp;

	if (rp->n_apis > n) n = rp->n_apis;
	if (rp->n_ranges > n) n = rp->n_ranges;
	if (rp->n_ops > n) n = rp->n_ops;
	if (rp->n_steps > n) n = rp->n_steps;
	if (rp->n_mem > n) n = rp->n_mem;
	if (rp->n_others > n) n = rp->n_others;
	if (rp->n_costs > n) n = rp->n_costs;
	if (n > UINT32_MAX)
		return error("too many events (%zu) for one replay", n);
	keys = malloc((n + 1) * sizeof(*keys));
	tmp = malloc((n + 1) * sizeof(*tmp));
	if (!keys || !tmp)
		goto oom;

	SORT_BY(rp, activities, n_activities, start, keys, tmp);
	SORT_BY(rp, apis, n_apis, start, keys, tmp);
	SORT_BY(rp, ops, n_ops, id, keys, tmp);
	SORT_BY(rp, steps, n_steps, start, keys, tmp);
	SORT_BY(rp, mem, n_mem, ev.start, keys, tmp);
	SORT_BY(rp, others, n_others, start, keys, tmp);
	SORT_BY(rp, costs, n_costs, end, keys, tmp);
	free(keys);
	free(tmp);
	return replay_sort_ranges(rp, NULL);
oom:
	free(keys);
	free(tmp);
	return error("out of memory while sorting events");
}

int replay_sort_ranges(struct replay *rp, int32_t *remap)
{
	size_t n = rp->n_ranges;
	struct replay_key *keys, *tmp;
	int rc = -1;

	for (size_t i = 0; remap && i < n; i++)
		remap[i] = (int32_t)i;
	if (ranges_in_order(rp))
		return 0;
	keys = malloc((n + 1) * sizeof(*keys));
	tmp = malloc((n + 1) * sizeof(*tmp));
	if (!keys || !tmp)
		goto out;
	/* depth first, then stably by start: depth order within a start */
	for (size_t i = 0; i < n; i++) {
		keys[i].key = rp->ranges[i].recorded_depth;
		keys[i].idx = (uint32_t)i;
	}
	replay_sort_keys(keys, tmp, n);
	for (size_t i = 0; i < n; i++)
		keys[i].key = rp->ranges[keys[i].idx].start;
	replay_sort_keys(keys, tmp, n);
	for (size_t i = 0; remap && i < n; i++)
		remap[keys[i].idx] = (int32_t)i;
	rc = permute((void **)&rp->ranges, n, sizeof(*rp->ranges), keys);
out:
	free(keys);
	free(tmp);
	return rc < 0 ? error("out of memory while sorting events") : 0;
}

int replay_build(struct replay *rp)
{
	struct replay_priv *pv = rp->priv;

	if (!pv || pv->built)
		return error("replay_build called twice");
	pv->built = true;
	if (rp->n_strings == 0 && replay_set_strings(rp, NULL, 0) < 0)
		return -1;
	if (sort_all(rp) < 0)
		return -1;

	/* ops: duplicates keep the first definition */
	if (rp->n_ops) {
		size_t w = 1;
		for (size_t i = 1; i < rp->n_ops; i++)
			if (rp->ops[i].id != rp->ops[w - 1].id)
				rp->ops[w++] = rp->ops[i];
		rp->n_ops = w;
	}
	for (size_t i = 0; i < rp->n_steps; i++) {
		if (!rp->steps[i].warmup)
			rp->n_measured_steps++;
		if (rp->steps[i].phases_only)
			rp->n_phases_only++;
		else if (!rp->steps[i].warmup)
			rp->n_measured_modules++;
	}

	/* Nsight's names for copies; slot 0 of the cache is memset's */
	uint32_t copy_names[12] = { 0 };
	for (size_t i = 0; i < rp->n_activities; i++) {
		struct replay_activity *a = &rp->activities[i];
		if (a->kind == ST_MEMCPY || a->kind == ST_MEMSET) {
			uint32_t ck = a->kind == ST_MEMSET ? 0 : rp->copies[a->detail].copy_kind;
			unsigned slot = a->kind == ST_MEMSET ? 0 : (ck <= 10 ? ck + 1 : 1);
			if (!copy_names[slot])
				copy_names[slot] = synthetic_name(rp, a->kind == ST_MEMSET ? "[CUDA memset]"
								  : memcpy_name(ck));
			a->name = copy_names[slot];
		} else if (a->name >= rp->n_strings) {
			a->name = 0;
		}
	}
	return replay_project(rp);
}

/* ---- lookups ----------------------------------------------------------- */

bool replay_step_costs(const struct replay *rp, struct replay_cost *out, struct replay_cost *outside)
{
	memset(out, 0, rp->n_steps * sizeof(*out));
	if (outside)
		memset(outside, 0, sizeof(*outside));
	for (size_t i = 0; i < rp->n_costs; i++) {
		const struct replay_cost *c = &rp->costs[i];
		struct replay_cost *to = c->step >= 0 && (size_t)c->step < rp->n_steps ? &out[c->step] : outside;

		if (!to)
			continue;
		to->callback_ns += c->callback_ns;
		to->nvtx_ns += c->nvtx_ns;
		to->hook_ns += c->hook_ns;
		to->python_ns += c->python_ns;
		to->launches += c->launches;
		to->ranges += c->ranges;
		to->modules += c->modules;
		to->cupti_ns += c->cupti_ns;
	}
	return rp->n_costs > 0;
}

const char *replay_str(const struct replay *rp, uint32_t id)
{
	return id < rp->n_strings && rp->strings[id] ? rp->strings[id] : "";
}

const struct replay_op *replay_op(const struct replay *rp, uint32_t id)
{
	size_t lo = 0, hi = rp->n_ops;

	if (id == 0)
		return NULL;
	if (id <= rp->n_ops && rp->ops[id - 1].id == id)
		return &rp->ops[id - 1]; /* dense ids: the usual case */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rp->ops[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < rp->n_ops && rp->ops[lo].id == id ? &rp->ops[lo] : NULL;
}

/* The length of the first at most `max` bytes of s (len bytes), ending before a UTF-8 character. */
static size_t utf8_prefix(const char *s, size_t len, size_t max)
{
	size_t n = len > max ? max : len;

	while (n > 0 && n < len && ((unsigned char)s[n] & 0xC0) == 0x80)
		n--;
	return n;
}

/* Where the last at most `max` bytes of s (len bytes) start, at a UTF-8 character. */
static size_t utf8_suffix(const char *s, size_t len, size_t max)
{
	size_t i = len > max ? len - max : 0;

	while (i < len && ((unsigned char)s[i] & 0xC0) == 0x80)
		i++;
	return i;
}

#define PATH_HEAD ((REPLAY_PATH_MAX - 3) / 3)   /* a cut path keeps a third for its root, as tables do */
#define PATH_WHOLE UINT16_MAX

/*
 * Path `path`'s string from its parent's, already built: the parent's and
 * "/name" when that fits REPLAY_PATH_MAX, else the first bytes of the whole
 * path (the parent's own head when it was cut), "..." and its last bytes,
 * which end with the parent's tail and "/name". O(REPLAY_PATH_MAX + name).
 */
static int path_build(const struct replay *rp, uint32_t path, char **scratch, size_t *cap)
{
	struct replay_priv *pv = rp->priv;
	int32_t parent = rp->paths[path].parent;
	const char *name = replay_str(rp, rp->paths[path].name), *head = NULL, *tail = "";
	size_t head_len = 0, tail_len = 0, name_len = strlen(name), len, from;
	char *s;

	if (parent >= 0) {
		const char *ps = pv->path_strs[parent];
		size_t ps_len = strlen(ps);

		if (pv->path_head[parent] == PATH_WHOLE) {
			tail = ps, tail_len = ps_len;
		} else {
			head = ps, head_len = pv->path_head[parent];
			tail = ps + head_len + 3, tail_len = ps_len - head_len - 3;
		}
	}
	/* the end of the whole path: the parent's (tail), '/', the name */
	len = tail_len + (parent >= 0) + name_len;
	if (len + 1 > *cap) {
		char *p = realloc(*scratch, len + 1);
		if (!p)
			return -1;
		*scratch = p;
		*cap = len + 1;
	}
	memcpy(*scratch, tail, tail_len);
	if (parent >= 0)
		(*scratch)[tail_len] = '/';
	memcpy(*scratch + len - name_len, name, name_len);
	if (!head && len <= REPLAY_PATH_MAX) {
		pv->path_head[path] = PATH_WHOLE;
		return (pv->path_strs[path] = replay_arena_strdup((struct replay *)rp, *scratch, len)) ? 0 : -1;
	}
	if (!head) {   /* cut here first: the whole path is in scratch, longer than the cut one */
		head = *scratch;
		head_len = utf8_prefix(*scratch, len, PATH_HEAD);
	}
	from = utf8_suffix(*scratch, len, REPLAY_PATH_MAX - 3 - head_len);
	s = arena_alloc((struct replay *)rp, head_len + 3 + len - from);
	if (!s)
		return -1;
	memcpy(s, head, head_len);
	memcpy(s + head_len, "...", 3);
	memcpy(s + head_len + 3, *scratch + from, len - from);
	pv->path_head[path] = (uint16_t)head_len;
	pv->path_strs[path] = s;
	return 0;
}

const char *replay_path_str(const struct replay *rp, uint32_t path)
{
	struct replay_priv *pv = rp->priv;
	uint32_t *todo;
	size_t n = 0, cap = 0;
	char *scratch = NULL;
	int rc = 0;

	if (path >= rp->n_paths || !pv)
		return "";
	if (!pv->path_strs && !(pv->path_strs = calloc(rp->n_paths, sizeof(*pv->path_strs))))
		goto oom;
	if (!pv->path_head && !(pv->path_head = calloc(rp->n_paths, sizeof(*pv->path_head))))
		goto oom;
	if (pv->path_strs[path])
		return pv->path_strs[path];
	/* the ancestors not built yet, innermost first (parents have smaller indices); then from the root down */
	for (int32_t p = (int32_t)path; p >= 0 && !pv->path_strs[p]; p = rp->paths[p].parent)
		n++;
	todo = malloc(n * sizeof(*todo));
	if (!todo)
		goto oom;
	n = 0;
	for (int32_t p = (int32_t)path; p >= 0 && !pv->path_strs[p]; p = rp->paths[p].parent)
		todo[n++] = (uint32_t)p;
	while (n && rc == 0)
		rc = path_build(rp, todo[--n], &scratch, &cap);
	free(todo);
	free(scratch);
	if (rc < 0)
		goto oom;
	return pv->path_strs[path];
oom:
	error("out of memory for a range path");
	return "";
}

const char *replay_range_path(const struct replay *rp, const struct replay_range *r)
{
	return replay_path_str(rp, r->path);
}

const char *replay_activity_path(const struct replay *rp, const struct replay_activity *a)
{
	return a->range >= 0 ? replay_range_path(rp, &rp->ranges[a->range]) : "";
}

int32_t replay_phase_range(const struct replay *rp, int32_t range, int *phase)
{
	int32_t found = -1;

	*phase = ST_PHASE_OTHER;
	for (int32_t r = range; r >= 0 && (size_t)r < rp->n_ranges; r = rp->ranges[r].parent) {
		int p = st_phase_from_name(replay_str(rp, rp->ranges[r].name));

		if (p >= 0) {
			found = r;
			*phase = p;
		}
	}
	return found;
}

int replay_range_phase(const struct replay *rp, size_t i)
{
	int p = i < rp->n_ranges ? st_phase_from_name(replay_str(rp, rp->ranges[i].name)) : -1;

	for (int32_t r = p >= 0 ? rp->ranges[i].parent : -1; r >= 0; r = rp->ranges[r].parent)
		if (st_phase_from_name(replay_str(rp, rp->ranges[r].name)) >= 0)
			return -1;
	return p;
}

void replay_path_phases(const struct replay *rp, uint8_t *phase)
{
	/* a parent always has a smaller index */
	for (size_t i = 0; i < rp->n_paths; i++) {
		int32_t parent = rp->paths[i].parent;

		phase[i] = (uint8_t)(parent >= 0 && phase[parent] != ST_PHASE_OTHER
				     ? phase[parent] : st_phase_of_path(replay_str(rp, rp->paths[i].name)));
	}
}

int32_t replay_step_at(const struct replay *rp, uint64_t t)
{
	size_t lo = 0, hi = rp->n_steps;   /* the first step that starts after t */

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (rp->steps[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return -1;
	return t <= rp->steps[lo - 1].end ? (int32_t)(lo - 1) : -1;
}

bool replay_counts(const struct replay *rp, int32_t step_index, bool include_warmup)
{
	if (rp->n_steps == 0 || include_warmup)
		return true;
	return step_index >= 0 && (size_t)step_index < rp->n_steps && !rp->steps[step_index].warmup;
}

size_t replay_step_divisor(const struct replay *rp, bool include_warmup)
{
	size_t n = include_warmup ? rp->n_steps : rp->n_measured_steps;
	return n ? n : 1;
}

bool replay_counts_modules(const struct replay *rp, int32_t step_index, bool include_warmup)
{
	if (!replay_counts(rp, step_index, include_warmup))
		return false;
	if (!rp->n_phases_only)
		return true;
	return step_index >= 0 && (size_t)step_index < rp->n_steps && !rp->steps[step_index].phases_only;
}

size_t replay_module_step_divisor(const struct replay *rp, bool include_warmup)
{
	size_t n;

	if (!rp->n_phases_only)
		return replay_step_divisor(rp, include_warmup);
	n = include_warmup ? rp->n_steps - rp->n_phases_only : rp->n_measured_modules;
	return n ? n : 1;
}
