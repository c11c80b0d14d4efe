/*
 * check_record.c: reads a bundle written by `steptrace record` back through
 * trace/bundle.h and checks what the recorder promises (SPEC.md,
 * "Recording"). A failed check prints what it found, so a failure on the
 * GPU machine explains itself.
 *
 *   check_record BUNDLE STATS [--expect ok|oom|interrupted] [--peaks measured|datasheet]
 *
 * STATS is the file `steptrace record` wrote under STEPTRACE_RECORD_STATS:
 * the launch API calls its CUPTI callbacks counted per step.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "tests/lib/check.h"
#include "trace/bundle.h"

/* ---- the recorder's own counts --------------------------------------- */

#define MAX_STEPS 100000

struct stats {
	uint32_t n_steps;
	uint64_t launches[MAX_STEPS], copies[MAX_STEPS];
	int warmup[MAX_STEPS];
	char end_reason[32];
	uint64_t dropped;
};

static int read_stats(const char *path, struct stats *st)
{
	char line[256];
	FILE *f = fopen(path, "r");

	memset(st, 0, sizeof(*st));
	if (!f) {
		printf("FAIL cannot open the recorder's stats file '%s'\n", path);
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		unsigned i;
		int w;
		unsigned long long l, c;

		if (sscanf(line, "step %u warmup %d launches %llu copies %llu", &i, &w, &l, &c) == 4 &&
		    i < MAX_STEPS) {
			st->launches[i] = l;
			st->copies[i] = c;
			st->warmup[i] = w;
			if (i + 1 > st->n_steps)
				st->n_steps = i + 1;
		} else if (sscanf(line, "end_reason %31s", st->end_reason) == 1) {
		} else if (sscanf(line, "dropped %llu", &l) == 1) {
			st->dropped = l;
		}
	}
	fclose(f);
	return 0;
}

/* ---- what the bundle holds ------------------------------------------ */

struct launch { uint64_t corr, start; };
struct work { uint64_t start, corr; uint32_t op, name; int kind; };
struct range { uint64_t start, end, thread; uint32_t name, depth; };
struct step { uint64_t start, end; uint32_t index; bool warmup; };
struct mem { uint64_t address, size; uint32_t category, op; bool alloc; };

struct bundle {
	struct bundle_reader *r;
	struct launch *api; size_t n_api, cap_api;
	struct work *work; size_t n_work, cap_work;
	struct range *ranges; size_t n_ranges, cap_ranges;
	struct step *steps; size_t n_steps, cap_steps;
	struct mem *mem; size_t n_mem, cap_mem;
	uint8_t *registered; uint32_t max_op;      /* registered[id] */
	bool bf16_op;                              /* an op with a BF16 input or output */
	uint64_t events, driver_allocs, driver_frees, ooms, oom_requested;
	uint64_t launch_apis, query_apis;
	uint64_t *mem_api; size_t n_mem_api, cap_mem_api;   /* start of each cudaMalloc... or cudaFree... call */
};

static void add_op(struct bundle *b, const struct st_event *ev)
{
	uint32_t id = ev->op.id, i;

	if (id >= b->max_op) {
		uint32_t ncap = id * 2 + 64;

		b->registered = realloc(b->registered, ncap);
		memset(b->registered + b->max_op, 0, ncap - b->max_op);
		b->max_op = ncap;
	}
	b->registered[id]++;
	for (i = 0; i < ev->op.n_inputs; i++)
		b->bf16_op |= ev->op.inputs[i] == ST_DT_BF16;
	for (i = 0; i < ev->op.n_outputs; i++)
		b->bf16_op |= ev->op.outputs[i] == ST_DT_BF16;
}

static void add_work(struct bundle *b, int kind, uint64_t start, uint64_t corr, uint32_t op,
		     uint32_t name)
{
	if (ALLOC_GROW(b->work, b->n_work + 1, b->cap_work))
		exit(2);
	b->work[b->n_work++] = (struct work){ start, corr, op, name, kind };
}

static int read_bundle(const char *path, struct bundle *b)
{
	struct st_event ev;
	int rc;

	memset(b, 0, sizeof(*b));
	b->r = bundle_reader_open(path);
	if (!b->r) {
		CHECK(false, "bundle '%s' opens", path);
		return -1;
	}
	while ((rc = bundle_reader_next(b->r, &ev)) == 1) {
		b->events++;
		switch (ev.kind) {
		case ST_KERNEL:
			add_work(b, ST_KERNEL, ev.start, ev.kernel.correlation, ev.kernel.op, ev.kernel.name);
			break;
		case ST_MEMCPY:
			add_work(b, ST_MEMCPY, ev.start, ev.memcpy.correlation, ev.memcpy.op, 0);
			break;
		case ST_MEMSET:
			add_work(b, ST_MEMSET, ev.start, ev.memset.correlation, ev.memset.op, 0);
			break;
		case ST_API: {
			const char *name = bundle_reader_string(b->r, ev.api.name);

			if (ALLOC_GROW(b->api, b->n_api + 1, b->cap_api))
				exit(2);
			b->api[b->n_api++] = (struct launch){ ev.api.correlation, ev.start };
			if (name && strstr(name, "Launch"))
				b->launch_apis++;
			if (name && (strstr(name, "Get") || !strcmp(name, "cudaPeekAtLastError")))
				b->query_apis++;
			if (name && (!strncmp(name, "cudaMalloc", 10) || !strncmp(name, "cudaFree", 8))) {
				if (ALLOC_GROW(b->mem_api, b->n_mem_api + 1, b->cap_mem_api))
					exit(2);
				b->mem_api[b->n_mem_api++] = ev.start;
			}
			break;
		}
		case ST_RANGE:
			if (ALLOC_GROW(b->ranges, b->n_ranges + 1, b->cap_ranges))
				exit(2);
			b->ranges[b->n_ranges++] = (struct range){ ev.start, ev.end, ev.range.thread,
								   ev.range.name, ev.range.depth };
			break;
		case ST_STEP:
			if (ALLOC_GROW(b->steps, b->n_steps + 1, b->cap_steps))
				exit(2);
			b->steps[b->n_steps++] = (struct step){ ev.start, ev.end, ev.step.index,
								ev.step.warmup };
			break;
		case ST_ALLOC:
		case ST_FREE:
			if (ev.mem.source == ST_SRC_DRIVER) {
				if (ev.kind == ST_ALLOC)
					b->driver_allocs++;
				else
					b->driver_frees++;
				break;
			}
			if (ALLOC_GROW(b->mem, b->n_mem + 1, b->cap_mem))
				exit(2);
			b->mem[b->n_mem++] = (struct mem){ ev.mem.address, ev.mem.size, ev.mem.category,
							   ev.mem.op, ev.kind == ST_ALLOC };
			break;
		case ST_OP:
			add_op(b, &ev);
			break;
		case ST_OOM:
			b->ooms++;
			b->oom_requested = ev.oom.requested;
			break;
		default:
			break;
		}
	}
	CHECK(rc == 0, "bundle reads to its end without error (%" PRIu64 " events)", b->events);
	CHECK(!bundle_reader_truncated(b->r), "bundle is not truncated%s%s",
	      bundle_reader_truncated(b->r) ? ": " : "",
	      bundle_reader_truncated(b->r) ? bundle_reader_truncation(b->r) : "");
	return rc < 0 ? -1 : 0;
}

static bool registered(const struct bundle *b, uint32_t op)
{
	return op != 0 && op < b->max_op && b->registered[op];
}

static const char *str(const struct bundle *b, uint32_t id)
{
	const char *s = bundle_reader_string(b->r, id);

	return s ? s : "(undefined string id)";
}

/* ---- checks ------------------------------------------------------------ */

/* --api work (default) leaves query calls out and says so; --api all keeps them. */
static void check_api_calls(const struct bundle *b)
{
	const Steptrace__Header *h = bundle_reader_header(b->r);
	bool all = h->command_line && strstr(h->command_line, "--api all");
	const char *rule = h->api_calls ? h->api_calls : "";

	if (all) {
		CHECK(!strcmp(rule, "all"), "header: API calls recorded '%s' (want 'all')", rule);
		CHECK(b->query_apis > 0, "--api all: query calls recorded (%" PRIu64 ", e.g. cudaGetLastError)",
		      b->query_apis);
	} else {
		CHECK(!strncmp(rule, "all but queries", 15), "header: API calls recorded '%s'", rule);
		CHECK(b->query_apis == 0, "no query calls recorded (%" PRIu64 " found)", b->query_apis);
	}
}

static void check_header(const struct bundle *b, const char *peaks)
{
	const Steptrace__Header *h = bundle_reader_header(b->r);
	const Steptrace__DeviceInfo *d = h->device;
	const Steptrace__RunConfig *c = h->config;

	CHECK(h->time_base_ns > 0 && h->clock && !strcmp(h->clock, "cupti"),
	      "header: clock '%s', time base %" PRIu64, h->clock ? h->clock : "", h->time_base_ns);
	CHECK(h->command_line && !strncmp(h->command_line, "steptrace record", 16),
	      "header: command line '%s'", h->command_line ? h->command_line : "");
	CHECK(h->hostname && *h->hostname, "header: hostname '%s'", h->hostname ? h->hostname : "");
	CHECK(c && c->warmup_steps + c->measured_steps > 0 && c->parameters > 0 && c->precision,
	      "header: run config present (%s, %s, %s, %" PRIu64 " parameters)",
	      c && c->model ? c->model : "?", c && c->precision ? c->precision : "?",
	      c && c->mode ? c->mode : "?", c ? c->parameters : 0);
	if (!d) {
		CHECK(false, "header: device info present");
		return;
	}
	CHECK(d->name && *d->name && d->sm_count > 0 && d->cc_major >= 7 && d->memory_bytes > 0 &&
	      d->sm_clock_khz > 0 && d->l2_bytes > 0,
	      "header: device '%s', %u SMs, cc %u.%u, %" PRIu64 " bytes, %u kHz, L2 %" PRIu64,
	      d->name ? d->name : "", d->sm_count, d->cc_major, d->cc_minor, d->memory_bytes,
	      d->sm_clock_khz, d->l2_bytes);
	CHECK(d->cuda_runtime_version && d->cuda_driver_version && d->cupti_version &&
	      d->cublas_version,
	      "header: versions runtime %u driver %u CUPTI %u cuBLAS %u, driver '%s'",
	      d->cuda_runtime_version, d->cuda_driver_version, d->cupti_version,
	      d->cublas_version, d->driver_version ? d->driver_version : "");
	if (!strcmp(peaks, "measured")) {
		CHECK(d->peak_source == STEPTRACE__PEAK_SOURCE__PEAK_MEASURED &&
		      d->peak_fp32_flops > 1e12 && d->peak_tf32_flops > d->peak_fp32_flops &&
		      d->peak_bf16_flops > d->peak_tf32_flops && d->peak_bandwidth > 1e11,
		      "header: measured peaks fp32 %.1f tf32 %.1f bf16 %.1f TFLOP/s, %.0f GB/s (%s)",
		      d->peak_fp32_flops / 1e12, d->peak_tf32_flops / 1e12,
		      d->peak_bf16_flops / 1e12, d->peak_bandwidth / 1e9,
		      d->peak_note ? d->peak_note : "");
	} else if (!strcmp(peaks, "datasheet")) {
		bool known = d->peak_source == STEPTRACE__PEAK_SOURCE__PEAK_DATASHEET;

		CHECK((known && d->peak_bf16_flops > 0 && d->peak_bandwidth > 0) ||
		      (d->peak_source == STEPTRACE__PEAK_SOURCE__PEAK_UNKNOWN && d->peak_bf16_flops == 0),
		      "header: %s peaks bf16 %.1f TFLOP/s, %.0f GB/s (%s)",
		      known ? "datasheet" : "unknown", d->peak_bf16_flops / 1e12,
		      d->peak_bandwidth / 1e9, d->peak_note ? d->peak_note : "");
	}
}

static void check_footer(const struct bundle *b, const char *expect)
{
	const Steptrace__Footer *f = bundle_reader_footer(b->r);
	uint64_t per_kind = 0;
	size_t i;

	if (!f) {
		CHECK(false, "footer present");
		return;
	}
	CHECK(f->complete, "footer says complete");
	CHECK(f->end_reason && !strcmp(f->end_reason, expect), "footer end_reason '%s' (want '%s')",
	      f->end_reason ? f->end_reason : "", expect);
	for (i = 0; i < f->n_counts; i++)
		per_kind += f->counts[i]->dropped;
	CHECK(f->dropped == 0 && per_kind == 0, "no dropped records (footer: %" PRIu64 " total, %" PRIu64
	      " by kind)", f->dropped, per_kind);
	CHECK(f->events == b->events, "footer counts %" PRIu64 " events, %" PRIu64 " read",
	      f->events, b->events);
}

static void check_attribution(const struct bundle *b)
{
	size_t i, bad = 0, unnamed = 0, n[ST_KIND_COUNT] = { 0 };

	for (i = 0; i < b->n_work; i++) {
		const struct work *w = &b->work[i];

		n[w->kind]++;
		if (w->kind == ST_KERNEL && (!w->name || !bundle_reader_string(b->r, w->name)))
			unnamed++;
		if (registered(b, w->op))
			continue;
		if (bad++ < 10)
			printf("     %s correlation %" PRIu64 " '%s' has op %u, %s\n", st_kind_name(w->kind),
			       w->corr, w->kind == ST_KERNEL ? str(b, w->name) : "", w->op,
			       w->op ? "never registered" : "none (launched outside op_begin/op_end)");
	}
	CHECK(n[ST_KERNEL] > 0, "kernels recorded: %zu (memcpy %zu, memset %zu)", n[ST_KERNEL],
	      n[ST_MEMCPY], n[ST_MEMSET]);
	CHECK(bad == 0, "every kernel, memcpy and memset carries a registered op (%zu do not)", bad);
	CHECK(unnamed == 0, "every kernel has a name (%zu do not)", unnamed);
	CHECK(b->launch_apis > 0, "launch API calls recorded: %" PRIu64, b->launch_apis);
}

static int cmp_launch(const void *a, const void *b)
{
	const struct launch *x = a, *y = b;

	return x->corr < y->corr ? -1 : x->corr > y->corr;
}

static const struct launch *find_launch(const struct bundle *b, uint64_t corr)
{
	struct launch key = { corr, 0 };

	return bsearch(&key, b->api, b->n_api, sizeof(key), cmp_launch);
}

/* The step whose wall time holds t (steps are in time order), or -1. */
static long step_at(const struct bundle *b, uint64_t t)
{
	size_t lo = 0, hi = b->n_steps;

	while (lo < hi) {               /* first step starting after t */
		size_t mid = (lo + hi) / 2;

		if (b->steps[mid].start <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo > 0 && t <= b->steps[lo - 1].end ? (long)lo - 1 : -1;
}

/* The allocator caches freed blocks by size: after the first step, a step makes no memory calls. */
static void check_no_memory_calls(const struct bundle *b)
{
	size_t i, later = 0;

	for (i = 0; i < b->n_mem_api; i++)
		later += step_at(b, b->mem_api[i]) >= 1;
	CHECK(b->n_steps < 2 || later == 0,
	      "no cudaMalloc*/cudaFree* calls in steps after the first (%zu found, %zu in the run)",
	      later, b->n_mem_api);
}

static void check_steps(struct bundle *b, const struct stats *st, const char *expect)
{
	const Steptrace__RunConfig *c = bundle_reader_header(b->r)->config;
	uint32_t warmup = c ? c->warmup_steps : 0, total = c ? warmup + c->measured_steps : 0;
	uint64_t *kernels = calloc(b->n_steps + 1, sizeof(*kernels));
	size_t i, j, orphans = 0, outside = 0, bad_flags = 0, bad_index = 0, bad_counts = 0, bad_wall = 0;

	if (!strcmp(expect, "ok"))
		CHECK(b->n_steps == total, "%zu step events for %u warm-up + %u measured steps",
		      b->n_steps, warmup, total - warmup);
	else
		CHECK(true, "%zu step events (run ended '%s')", b->n_steps, expect);
	for (i = 0; i < b->n_steps; i++) {
		if (b->steps[i].index != i)
			bad_index++;
		if (b->steps[i].warmup != (b->steps[i].index < warmup))
			bad_flags++;
	}
	CHECK(bad_index == 0, "steps numbered 0, 1, ... in order (%zu out of place)", bad_index);
	CHECK(bad_flags == 0, "steps flagged warm-up exactly when index < %u (%zu wrong)", warmup,
	      bad_flags);
	if (!b->n_steps) {
		free(kernels);
		return;
	}

	/* Kernels per step through their launch call's time: exact, by correlation id. */
	qsort(b->api, b->n_api, sizeof(*b->api), cmp_launch);
	for (i = 0; i < b->n_work; i++) {
		const struct launch *l;

		if (b->work[i].kind != ST_KERNEL)
			continue;
		l = find_launch(b, b->work[i].corr);
		if (!l) {
			orphans++;
			continue;
		}
		long k = step_at(b, l->start);

		if (k >= 0)
			kernels[k]++;
		else
			outside++;
	}
	CHECK(orphans == 0, "every kernel has its launch API record (%zu do not)", orphans);
	for (j = 0; j < b->n_steps; j++) {
		uint32_t idx = b->steps[j].index;
		uint64_t want = idx < st->n_steps ? st->launches[idx] : 0;
		bool ok = idx < st->n_steps && kernels[j] == want;

		if (!ok)
			bad_counts++;
		if (b->steps[j].end <= b->steps[j].start)
			bad_wall++;
		if (j < 12 || (!ok && bad_counts <= 12))
			printf("     step %u (%s, %.3f ms): %" PRIu64 " kernels in the bundle, %" PRIu64
			       " launches counted by the recorder, %" PRIu64 " memcpy/memset calls%s\n",
			       idx, b->steps[j].warmup ? "warm-up" : "measured",
			       (b->steps[j].end - b->steps[j].start) / 1e6, kernels[j], want,
			       idx < st->n_steps ? st->copies[idx] : 0, ok ? "" : "  <-- differ");
	}
	CHECK(bad_counts == 0, "kernels per step equal the launches the recorder's callbacks counted "
	      "(%zu of %zu steps differ)", bad_counts, b->n_steps);
	CHECK(bad_wall == 0, "every step has a wall time (%zu do not)", bad_wall);
	printf("     (%zu kernels launched outside the steps: model setup)\n", outside);
	free(kernels);
}

static int cmp_range(const void *a, const void *b)
{
	const struct range *x = a, *y = b;

	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	if (x->end != y->end)
		return x->end > y->end ? -1 : 1;        /* the enclosing range first */
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* Ranges on each thread nest, and each one's depth is the number enclosing it. */
static void check_nesting(struct bundle *b)
{
	struct range **stack = calloc(b->n_ranges + 1, sizeof(*stack));
	size_t i, depth = 0, backwards = 0, bad_depth = 0, crossing = 0;
	uint64_t thread = 0;

	qsort(b->ranges, b->n_ranges, sizeof(*b->ranges), cmp_range);
	for (i = 0; i < b->n_ranges; i++) {
		struct range *r = &b->ranges[i];

		if (r->end < r->start)
			backwards++;
		if (i == 0 || r->thread != thread) {
			thread = r->thread;
			depth = 0;
		}
		while (depth && stack[depth - 1]->end <= r->start)
			depth--;
		if (depth && r->end > stack[depth - 1]->end) {
			if (crossing++ < 5)
				printf("     range '%s' [%" PRIu64 ", %" PRIu64 "] crosses '%s' [%" PRIu64
				       ", %" PRIu64 "]\n", str(b, r->name), r->start, r->end,
				       str(b, stack[depth - 1]->name), stack[depth - 1]->start,
				       stack[depth - 1]->end);
		}
		if (r->depth != depth && bad_depth++ < 5)
			printf("     range '%s' at %" PRIu64 " has depth %u, %zu ranges enclose it\n",
			       str(b, r->name), r->start, r->depth, depth);
		stack[depth++] = r;
	}
	CHECK(b->n_ranges > 0, "NVTX ranges recorded: %zu", b->n_ranges);
	CHECK(backwards == 0, "every range ends at or after its start (%zu do not)", backwards);
	CHECK(crossing == 0, "ranges on each thread nest (%zu cross)", crossing);
	CHECK(bad_depth == 0, "every range's depth is its nesting depth (%zu wrong)", bad_depth);
	free(stack);
}

static void check_step_ranges(const struct bundle *b)
{
	static const char *const names[] = { "step", "forward", "backward", "optimizer" };
	const Steptrace__RunConfig *c = bundle_reader_header(b->r)->config;
	const char *mode = c && c->mode ? c->mode : "train";
	size_t want = !strcmp(mode, "forward") ? 2 : !strcmp(mode, "fwdbwd") ? 3 : 4;
	size_t (*count)[4] = calloc(b->n_steps + 1, sizeof(*count));
	size_t i, k, bad = 0;

	for (i = 0; i < b->n_ranges; i++) {
		const struct range *r = &b->ranges[i];
		const char *name = str(b, r->name);
		long st = step_at(b, r->start);

		for (k = 0; k < 4 && strcmp(name, names[k]); k++)
			;
		if (k < 4 && st >= 0 && r->end <= b->steps[st].end)
			count[st][k]++;
	}
	for (i = 0; i < b->n_steps; i++) {
		char missing[160] = "";

		for (k = 0; k < want; k++)
			if (count[i][k] != 1)
				snprintf(missing + strlen(missing), sizeof(missing) - strlen(missing),
					 " %s x%zu", names[k], count[i][k]);
		if (missing[0] && bad++ < 10)
			printf("     step %u holds%s\n", b->steps[i].index, missing);
	}
	CHECK(bad == 0, "each of %zu steps holds exactly one each of the step/forward%s%s ranges "
	      "(%zu do not)", b->n_steps, want > 2 ? "/backward" : "", want > 3 ? "/optimizer" : "", bad);
	free(count);
}

/* Model allocator events in file order (the recorder writes them in program order). */
static void check_memory(const struct bundle *b, bool whole_run)
{
	size_t cap = 1, i, live = 0, bad_free = 0, bad_cat = 0, allocs = 0;
	struct mem **table;

	while (cap < 2 * b->n_mem + 16)
		cap *= 2;
	table = calloc(cap, sizeof(*table));
	for (i = 0; i < b->n_mem; i++) {
		const struct mem *m = &b->mem[i];
		size_t j = (size_t)((m->address * 0x9E3779B97F4A7C15ull) >> 17) & (cap - 1);

		if (m->alloc) {
			allocs++;
			if (m->category == ST_MEM_UNKNOWN || m->category >= ST_MEM_CATEGORY_COUNT)
				bad_cat++;
			while (table[j] && table[j] != (void *)1)
				j = (j + 1) & (cap - 1);
			table[j] = (struct mem *)m;
			live++;
			continue;
		}
		while (table[j] && (table[j] == (void *)1 || table[j]->address != m->address))
			j = (j + 1) & (cap - 1);
		if (!table[j]) {
			if (bad_free++ < 5)
				printf("     free of %#" PRIx64 " (%" PRIu64 " bytes) without a live alloc\n",
				       m->address, m->size);
			continue;
		}
		table[j] = (struct mem *)1;   /* tombstone */
		live--;
	}
	CHECK(allocs > 0 || !whole_run, "model allocator events: %zu allocs", allocs);
	CHECK(bad_cat == 0, "every model alloc has a category (%zu do not)", bad_cat);
	CHECK(bad_free == 0, "every model free matches a live alloc (%zu do not)", bad_free);
	if (live) {
		size_t shown = 0;

		for (i = 0; i < cap && shown < 5; i++)
			if (table[i] && table[i] != (void *)1 && ++shown)
				printf("     still live: %#" PRIx64 " %" PRIu64 " bytes %s\n",
				       table[i]->address, table[i]->size,
				       st_mem_category_name((int)table[i]->category));
	}
	CHECK(live == 0, "every model alloc is freed by the end (%zu live)", live);
	CHECK(!whole_run || b->driver_allocs > 0, "CUPTI MEMORY2 allocations recorded: %" PRIu64 " allocs, %" PRIu64
	      " frees", b->driver_allocs, b->driver_frees);
	free(table);
}

static void check_dtypes(const struct bundle *b)
{
	const Steptrace__RunConfig *c = bundle_reader_header(b->r)->config;
	bool bf16 = c && c->precision && !strcmp(c->precision, "bf16");

	CHECK(b->bf16_op == bf16, "ops %s BF16 dtypes under --precision %s", b->bf16_op ? "carry" : "carry no",
	      c && c->precision ? c->precision : "?");
}

int main(int argc, char **argv)
{
	static struct stats st;
	struct bundle b;
	const char *expect = "ok", *peaks = "any";
	int i;

	if (argc < 3) {
		fprintf(stderr, "usage: check_record BUNDLE STATS [--expect ok|oom|interrupted] "
			"[--peaks measured|datasheet]\n");
		return 2;
	}
	for (i = 3; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--expect"))
			expect = argv[i + 1];
		else if (!strcmp(argv[i], "--peaks"))
			peaks = argv[i + 1];
	}
	if (read_stats(argv[2], &st) || read_bundle(argv[1], &b))
		return 1;
	CHECK(!strcmp(st.end_reason, expect), "recorder's stats say end_reason '%s'", st.end_reason);
	check_header(&b, peaks);
	check_api_calls(&b);
	check_footer(&b, expect);
	if (!strcmp(expect, "oom")) {
		CHECK(b.ooms >= 1 && b.oom_requested > 0, "an Oom event (%" PRIu64 ", last request %" PRIu64
		      " bytes)", b.ooms, b.oom_requested);
	} else {
		CHECK(b.ooms == 0, "no Oom event");
		check_attribution(&b);
		check_steps(&b, &st, expect);
		check_no_memory_calls(&b);
		check_nesting(&b);
		check_step_ranges(&b);
		check_dtypes(&b);
	}
	check_memory(&b, strcmp(expect, "oom") != 0);
	bundle_reader_free(b.r);
	return check_done("check_record");
}
