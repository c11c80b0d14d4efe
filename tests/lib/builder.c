/*
 * builder.c: synthetic bundles and replays for tests (builder.h).
 */
#include "tests/lib/builder.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/grow.h"

void builder_init(struct builder *b)
{
	memset(b, 0, sizeof(*b));
	steptrace__header__init(&b->header);
	steptrace__run_config__init(&b->config);
	steptrace__device_info__init(&b->device);
	b->header.config = &b->config;
	b->header.device = &b->device;
	b->header.clock = "synthetic";
	b->thread = 1;
	b->source = ST_SRC_MODEL;
}

void builder_small_model(struct builder *b, const char *precision)
{
	b->config.model = "small";
	b->config.d_model = 768;
	b->config.d_ff = 3072;
	b->config.layers = 12;
	b->config.heads = 12;
	b->config.vocab = 10000;
	b->config.batch = 4;
	b->config.ctx = 128;
	b->config.precision = (char *)precision;
	b->config.mode = "train";
	b->config.attention = "naive";
}

void builder_peaks(struct builder *b, double fp32, double tf32, double bf16, double bytes_per_second)
{
	b->device.peak_fp32_flops = fp32;
	b->device.peak_tf32_flops = tf32;
	b->device.peak_bf16_flops = bf16;
	b->device.peak_fp16_flops = bf16;
	b->device.peak_bandwidth = bytes_per_second;
	b->device.peak_source = STEPTRACE__PEAK_SOURCE__PEAK_DATASHEET;
}

void builder_h100(struct builder *b, const char *name)
{
	b->device.name = (char *)name;
	b->device.sm_count = 132;
	b->device.cc_major = 9;
	b->device.memory_bytes = 80ull << 30;
	b->device.sm_clock_khz = 1980000;
	builder_peaks(b, 67e12, 494e12, 989e12, 3.35e12);
	b->device.peak_note = "H100 SXM datasheet";
	b->device.cuda_runtime_version = 13000;
}

void builder_rank(struct builder *b, uint32_t rank, uint32_t world, uint64_t run_id, const char *ddp)
{
	b->header.rank = rank;
	b->header.world_size = world;
	b->header.local_rank = rank;
	b->header.run_id = run_id;
	b->header.nccl_version = "2.28.9";
	b->config.ddp = (char *)(ddp ? ddp : "");
	b->device.index = rank;
	b->gpu = rank;
}

uint32_t builder_comm_op(struct builder *b, const char *path, uint64_t bytes)
{
	const char *kind = strstr(path, "comm/");

	return builder_op(b, &(struct builder_op){ .path = path, .kind = kind ? kind + 5 : path,
				  .phase = "comm", .bytes = bytes, .inputs = { ST_DT_F32 },
				  .outputs = { ST_DT_F32 } });
}

int builder_open(struct builder *b, const char *path)
{
	b->writer = bundle_writer_open(path, &b->header, NULL);
	return b->writer ? 0 : -1;
}

void builder_open_replay(struct builder *b, struct replay *rp)
{
	replay_init(rp);
	b->replay = rp;
}

uint32_t builder_string(struct builder *b, const char *s)
{
	if (b->writer)
		return bundle_writer_intern(b->writer, s);
	if (!s || !*s)
		return 0;
	/* a replay: id 0 is "", the others in the order first seen */
	for (size_t i = 1; i < b->n_strings; i++)
		if (!strcmp(b->strings[i], s))
			return (uint32_t)i;
	if (ALLOC_GROW(b->strings, b->n_strings ? b->n_strings + 1 : 2, b->alloc_strings) < 0)
		goto fail;
	if (!b->n_strings)
		b->strings[b->n_strings++] = NULL;
	b->strings[b->n_strings] = strdup(s);
	if (!b->strings[b->n_strings])
		goto fail;
	return (uint32_t)b->n_strings++;
fail:
	b->failed = true;
	return 0;
}

void builder_add(struct builder *b, const struct st_event *ev)
{
	int rc = b->writer ? bundle_writer_add(b->writer, ev) : replay_add(b->replay, ev);

	if (rc < 0)
		b->failed = true;
}

uint32_t builder_op(struct builder *b, const struct builder_op *op)
{
	struct st_event ev = { .kind = ST_OP };
	const char *name = op->name;

	if (!name) {
		name = strrchr(op->path, '/');
		name = name ? name + 1 : op->path;
	}
	ev.op.id = op->id ? op->id : b->last_op + 1;
	ev.op.name = builder_string(b, name);
	ev.op.path = builder_string(b, op->path);
	ev.op.kind = builder_string(b, op->kind);
	ev.op.phase = builder_string(b, op->phase);
	ev.op.flops = op->flops;
	ev.op.bytes = op->bytes;
	while (ev.op.n_inputs < ST_OP_MAX_INPUTS && op->inputs[ev.op.n_inputs])
		ev.op.inputs[ev.op.n_inputs] = op->inputs[ev.op.n_inputs], ev.op.n_inputs++;
	while (ev.op.n_outputs < ST_OP_MAX_OUTPUTS && op->outputs[ev.op.n_outputs])
		ev.op.outputs[ev.op.n_outputs] = op->outputs[ev.op.n_outputs], ev.op.n_outputs++;
	builder_add(b, &ev);
	b->last_op = ev.op.id;
	return ev.op.id;
}

void builder_range(struct builder *b, const char *name, uint32_t depth, uint64_t start, uint64_t end)
{
	struct st_event ev = { .kind = ST_RANGE, .start = start, .end = end };

	ev.range.name = builder_string(b, name);
	ev.range.thread = b->thread;
	ev.range.depth = depth;
	builder_add(b, &ev);
}

void builder_nccl_range(struct builder *b, const char *name, uint32_t depth, uint64_t start, uint64_t end,
			uint64_t comm, uint64_t bytes)
{
	struct st_event ev = { .kind = ST_RANGE, .start = start, .end = end };

	ev.range.name = builder_string(b, name);
	ev.range.domain = builder_string(b, "NCCL");
	ev.range.thread = b->thread;
	ev.range.depth = depth;
	ev.range.comm = comm;
	ev.range.bytes = bytes;
	builder_add(b, &ev);
}

void builder_ranges(struct builder *b, uint64_t t0, const struct builder_span *spans, size_t n)
{
	for (size_t i = 0; i < n; i++)
		builder_range(b, spans[i].name, spans[i].depth, t0 + spans[i].start, t0 + spans[i].end);
}

void builder_push(struct builder *b, const char *name, uint64_t start)
{
	if (b->depth == BUILDER_MAX_DEPTH) {
		error("builder: ranges nested deeper than %d at '%s'", BUILDER_MAX_DEPTH, name);
		b->failed = true;
		return;
	}
	/* copied: callers format names into one buffer; interned at pop, as a recorder would */
	b->open[b->depth].name = strdup(name);
	b->open[b->depth].start = start;
	b->open[b->depth].thread = b->thread;
	if (!b->open[b->depth].name)
		b->failed = true;
	b->depth++;
}

void builder_pop(struct builder *b, uint64_t end)
{
	uint64_t thread = b->thread;

	if (!b->depth) {
		error("builder: pop without a range open");
		b->failed = true;
		return;
	}
	b->depth--;
	b->thread = b->open[b->depth].thread;
	builder_range(b, b->open[b->depth].name, (uint32_t)b->depth, b->open[b->depth].start, end);
	b->thread = thread;
	free(b->open[b->depth].name);
}

uint64_t builder_call(struct builder *b, const char *name, uint64_t start, uint64_t end)
{
	struct st_event ev = { .kind = ST_API, .start = start, .end = end };

	ev.api.name = builder_string(b, name);
	ev.api.thread = b->thread;
	ev.api.correlation = ++b->correlation;
	ev.api.cbid = b->cbid;
	ev.api.status = b->status;
	builder_add(b, &ev);
	return b->correlation;
}

void builder_kernel(struct builder *b, const char *name, uint64_t correlation, uint32_t stream,
		    uint32_t op, uint64_t start, uint64_t end)
{
	struct st_event ev = { .kind = ST_KERNEL, .start = start, .end = end };
	const struct builder_geometry *g = &b->geometry;

	ev.kernel.name = builder_string(b, name);
	ev.kernel.correlation = correlation;
	ev.kernel.stream = stream;
	ev.kernel.device = b->gpu;
	ev.kernel.op = op;
	memcpy(ev.kernel.grid, g->grid, sizeof(g->grid));
	memcpy(ev.kernel.block, g->block, sizeof(g->block));
	ev.kernel.registers = g->registers;
	ev.kernel.static_smem = g->static_smem;
	ev.kernel.dynamic_smem = g->dynamic_smem;
	builder_add(b, &ev);
}

void builder_memcpy(struct builder *b, uint32_t copy_kind, uint64_t bytes, uint64_t correlation,
		    uint32_t stream, uint32_t op, uint64_t start, uint64_t end)
{
	struct st_event ev = { .kind = ST_MEMCPY, .start = start, .end = end };

	ev.memcpy.copy_kind = copy_kind;
	ev.memcpy.bytes = bytes;
	ev.memcpy.correlation = correlation;
	ev.memcpy.stream = stream;
	ev.memcpy.device = b->gpu;
	ev.memcpy.op = op;
	builder_add(b, &ev);
}

void builder_memset(struct builder *b, uint64_t bytes, uint64_t correlation, uint32_t stream,
		    uint32_t op, uint64_t start, uint64_t end)
{
	struct st_event ev = { .kind = ST_MEMSET, .start = start, .end = end };

	ev.memset.bytes = bytes;
	ev.memset.correlation = correlation;
	ev.memset.stream = stream;
	ev.memset.device = b->gpu;
	ev.memset.op = op;
	builder_add(b, &ev);
}

uint64_t builder_launch(struct builder *b, const char *kernel, uint32_t stream, uint32_t op,
			uint64_t call_start, uint64_t call_end, uint64_t start, uint64_t end)
{
	uint64_t c = builder_call(b, "cudaLaunchKernel", call_start, call_end);

	builder_kernel(b, kernel, c, stream, op, start, end);
	return c;
}

static void mem(struct builder *b, int kind, uint64_t t, uint64_t address, uint64_t size, int category,
		uint32_t op)
{
	struct st_event ev = { .kind = kind, .start = t, .end = t };

	ev.mem.address = address;
	ev.mem.size = size;
	ev.mem.category = (uint32_t)category;
	ev.mem.op = op;
	ev.mem.source = b->source;
	builder_add(b, &ev);
}

void builder_alloc(struct builder *b, uint64_t t, uint64_t address, uint64_t size, int category,
		   uint32_t op)
{
	mem(b, ST_ALLOC, t, address, size, category, op);
}

void builder_free(struct builder *b, uint64_t t, uint64_t address, uint64_t size, int category,
		  uint32_t op)
{
	mem(b, ST_FREE, t, address, size, category, op);
}

void builder_tag(struct builder *b, uint64_t t, uint64_t address, uint64_t size, int category)
{
	struct st_event ev = { .kind = ST_MEMTAG, .start = t, .end = t };

	ev.mem.address = address;
	ev.mem.size = size;
	ev.mem.category = (uint32_t)category;
	ev.mem.source = ST_SRC_DRIVER;
	builder_add(b, &ev);
}

void builder_oom(struct builder *b, uint64_t t, uint64_t requested, int category, uint32_t op,
		 uint64_t live_bytes, uint64_t capacity, uint32_t step)
{
	struct st_event ev = { .kind = ST_OOM, .start = t, .end = t };

	ev.oom.requested = requested;
	ev.oom.category = (uint32_t)category;
	ev.oom.op = op;
	ev.oom.live_bytes = live_bytes;
	ev.oom.capacity = capacity;
	ev.oom.step = step;
	builder_add(b, &ev);
}

void builder_step(struct builder *b, uint32_t index, bool warmup, uint64_t start, uint64_t end)
{
	struct st_event ev = { .kind = ST_STEP, .start = start, .end = end };

	ev.step.index = index;
	ev.step.warmup = warmup;
	ev.step.thread = b->thread;
	builder_add(b, &ev);
}

void builder_cost(struct builder *b, uint64_t start, uint64_t end, const struct builder_cost *c)
{
	struct st_event ev = { .kind = ST_COST, .start = start, .end = end };

	ev.cost.thread = b->thread;
	ev.cost.callback_ns = c->callback_ns;
	ev.cost.nvtx_ns = c->nvtx_ns;
	ev.cost.hook_ns = c->hook_ns;
	ev.cost.python_ns = c->python_ns;
	ev.cost.launches = c->launches;
	ev.cost.ranges = c->ranges;
	ev.cost.modules = c->modules;
	builder_add(b, &ev);
}

static void release(struct builder *b)
{
	while (b->depth)
		free(b->open[--b->depth].name);
	for (size_t i = 0; i < b->n_strings; i++)
		free(b->strings[i]);
	free(b->strings);
	b->strings = NULL;
	b->n_strings = b->alloc_strings = 0;
	b->writer = NULL;
	b->replay = NULL;
}

int builder_close(struct builder *b, const char *end_reason)
{
	int ret = 0;

	if (b->depth)
		ret = error("builder: %d range(s) still open at the end", b->depth);
	if (b->writer) {
		bundle_writer_set_steps_from(b->writer, b->steps_from);
		bundle_writer_set_launch_cost(b->writer, &b->launch_cost);
		if (bundle_writer_close(b->writer, end_reason) < 0)
			ret = -1;
	} else if (b->replay) {
		b->replay->run.footer.steps_from = b->steps_from;
		b->replay->run.launch_cost = b->launch_cost;
		if (replay_set_strings(b->replay, (const char *const *)b->strings, (uint32_t)b->n_strings) < 0 ||
		    replay_build(b->replay) < 0)
			ret = -1;
	}
	if (b->failed)
		ret = -1;
	release(b);
	return ret;
}

void builder_abort(struct builder *b)
{
	if (b->writer)
		bundle_writer_abort(b->writer);
	release(b);
}

struct builder_raw {
	struct archive *a;
	struct archive_entry *e;
	char *path;
	bool failed;
};

static int raw_failed(struct builder_raw *raw)
{
	raw->failed = true;
	return error("builder: cannot write '%s': %s", raw->path,
		     archive_error_string(raw->a) ? archive_error_string(raw->a) : "out of memory");
}

struct builder_raw *builder_raw_open(const char *path, int level)
{
	struct builder_raw *raw = calloc(1, sizeof(*raw));
	char opt[32];

	if (!raw || !(raw->path = strdup(path)) || !(raw->a = archive_write_new()) ||
	    !(raw->e = archive_entry_new())) {
		error("builder: out of memory");
		builder_raw_close(raw);
		return NULL;
	}
	snprintf(opt, sizeof(opt), "zstd:compression-level=%d", level ? level : 3);
	if (archive_write_add_filter_zstd(raw->a) != ARCHIVE_OK ||
	    archive_write_set_options(raw->a, opt) != ARCHIVE_OK ||
	    archive_write_set_format_pax_restricted(raw->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(raw->a, 0) != ARCHIVE_OK ||
	    archive_write_open_filename(raw->a, path) != ARCHIVE_OK) {
		raw_failed(raw);
		builder_raw_close(raw);
		return NULL;
	}
	return raw;
}

int builder_raw_member(struct builder_raw *raw, const char *name, const void *data, size_t len)
{
	archive_entry_clear(raw->e);
	archive_entry_set_pathname(raw->e, name);
	archive_entry_set_size(raw->e, (la_int64_t)len);
	archive_entry_set_filetype(raw->e, AE_IFREG);
	archive_entry_set_perm(raw->e, 0644);
	if (archive_write_header(raw->a, raw->e) != ARCHIVE_OK ||
	    (len && archive_write_data(raw->a, data, len) != (la_ssize_t)len))
		return raw_failed(raw);
	return 0;
}

int builder_raw_close(struct builder_raw *raw)
{
	int ret;

	if (!raw)
		return -1;
	ret = raw->failed ? -1 : 0;
	if (raw->a && !raw->failed && archive_write_close(raw->a) != ARCHIVE_OK)
		ret = raw_failed(raw);
	if (raw->a)
		archive_write_free(raw->a);
	if (raw->e)
		archive_entry_free(raw->e);
	free(raw->path);
	free(raw);
	return ret;
}

uint8_t *builder_header_bytes(struct builder *b, size_t *len)
{
	uint8_t *p;

	b->header.format_major = BUNDLE_FORMAT_MAJOR;
	b->header.format_minor = BUNDLE_FORMAT_MINOR;
	*len = steptrace__header__get_packed_size(&b->header);
	p = malloc(*len + 1);
	if (p)
		steptrace__header__pack(&b->header, p);
	return p;
}
