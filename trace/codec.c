/*
 * codec.c: struct st_event <-> Event message. Start times are deltas from the
 * previous event of the chunk, correlation ids deltas from the previous
 * correlation id of the chunk; the zstd layer squeezes the rest.
 */
#include "trace/codec.h"

#include <stdint.h>
#include <string.h>

#include "lib/grow.h"

int byte_buf_reserve(struct byte_buf *b, size_t extra)
{
	if (b->len + extra <= b->cap)
		return 0;      /* every event comes through here: no call when it fits */
	return ALLOC_GROW(b->data, b->len + extra, b->cap);
}

size_t pb_put_varint(uint8_t *p, uint64_t v)
{
	size_t n = 0;

	while (v >= 0x80) {
		p[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p[n++] = (uint8_t)v;
	return n;
}

static int64_t corr_delta(struct chunk_state *st, uint64_t corr)
{
	int64_t d = (int64_t)(corr - st->prev_correlation);

	st->prev_correlation = corr;
	return d;
}

size_t event_encode(struct byte_buf *buf, struct chunk_state *st, const struct st_event *ev)
{
	Steptrace__Event m = STEPTRACE__EVENT__INIT;
	Steptrace__Kernel k = STEPTRACE__KERNEL__INIT;
	Steptrace__Memcpy mc = STEPTRACE__MEMCPY__INIT;
	Steptrace__Memset ms = STEPTRACE__MEMSET__INIT;
	Steptrace__ApiCall api = STEPTRACE__API_CALL__INIT;
	Steptrace__Range rg = STEPTRACE__RANGE__INIT;
	Steptrace__Alloc al = STEPTRACE__ALLOC__INIT;
	Steptrace__Free fr = STEPTRACE__FREE__INIT;
	Steptrace__Op op = STEPTRACE__OP__INIT;
	Steptrace__Step sp = STEPTRACE__STEP__INIT;
	Steptrace__Oom oom = STEPTRACE__OOM__INIT;
	Steptrace__Overhead ov = STEPTRACE__OVERHEAD__INIT;
	Steptrace__Sync sy = STEPTRACE__SYNC__INIT;
	Steptrace__MemTag tag = STEPTRACE__MEM_TAG__INIT;
	Steptrace__RecorderCost cost = STEPTRACE__RECORDER_COST__INIT;
	Steptrace__DType in[ST_OP_MAX_INPUTS], out[ST_OP_MAX_OUTPUTS];

	m.t = (int64_t)(ev->start - st->prev_start);
	st->prev_start = ev->start;
	m.dur = ev->end >= ev->start ? ev->end - ev->start : 0;

	switch (ev->kind) {
	case ST_KERNEL:
		k.name = ev->kernel.name;
		k.grid_x = ev->kernel.grid[0];
		k.grid_y = ev->kernel.grid[1];
		k.grid_z = ev->kernel.grid[2];
		k.block_x = ev->kernel.block[0];
		k.block_y = ev->kernel.block[1];
		k.block_z = ev->kernel.block[2];
		k.registers = ev->kernel.registers;
		k.static_smem = ev->kernel.static_smem;
		k.dynamic_smem = ev->kernel.dynamic_smem;
		k.stream = ev->kernel.stream;
		k.device = ev->kernel.device;
		k.correlation = corr_delta(st, ev->kernel.correlation);
		k.op = ev->kernel.op;
		m.kind_case = STEPTRACE__EVENT__KIND_KERNEL;
		m.kernel = &k;
		break;
	case ST_MEMCPY:
		mc.copy_kind = ev->memcpy.copy_kind;
		mc.src_kind = ev->memcpy.src_kind;
		mc.dst_kind = ev->memcpy.dst_kind;
		mc.bytes = ev->memcpy.bytes;
		mc.stream = ev->memcpy.stream;
		mc.device = ev->memcpy.device;
		mc.correlation = corr_delta(st, ev->memcpy.correlation);
		mc.op = ev->memcpy.op;
		m.kind_case = STEPTRACE__EVENT__KIND_MEMCPY;
		m.memcpy = &mc;
		break;
	case ST_MEMSET:
		ms.bytes = ev->memset.bytes;
		ms.value = ev->memset.value;
		ms.stream = ev->memset.stream;
		ms.device = ev->memset.device;
		ms.correlation = corr_delta(st, ev->memset.correlation);
		ms.op = ev->memset.op;
		m.kind_case = STEPTRACE__EVENT__KIND_MEMSET;
		m.memset = &ms;
		break;
	case ST_API:
		api.name = ev->api.name;
		api.domain = ev->api.domain ? STEPTRACE__API_DOMAIN__API_DRIVER
					    : STEPTRACE__API_DOMAIN__API_RUNTIME;
		api.thread = ev->api.thread;
		api.correlation = corr_delta(st, ev->api.correlation);
		api.cbid = ev->api.cbid;
		api.status = ev->api.status;
		m.kind_case = STEPTRACE__EVENT__KIND_API;
		m.api = &api;
		break;
	case ST_RANGE:
		rg.name = ev->range.name;
		rg.thread = ev->range.thread;
		rg.depth = ev->range.depth;
		rg.domain = ev->range.domain;
		rg.comm = ev->range.comm;
		rg.bytes = ev->range.bytes;
		m.kind_case = STEPTRACE__EVENT__KIND_RANGE;
		m.range = &rg;
		break;
	case ST_ALLOC:
		al.address = ev->mem.address;
		al.size = ev->mem.size;
		al.category = (Steptrace__MemCategory)ev->mem.category;
		al.op = ev->mem.op;
		al.source = (Steptrace__MemSource)ev->mem.source;
		al.device = ev->mem.device;
		m.kind_case = STEPTRACE__EVENT__KIND_ALLOC;
		m.alloc = &al;
		break;
	case ST_FREE:
		fr.address = ev->mem.address;
		fr.size = ev->mem.size;
		fr.category = (Steptrace__MemCategory)ev->mem.category;
		fr.op = ev->mem.op;
		fr.source = (Steptrace__MemSource)ev->mem.source;
		fr.device = ev->mem.device;
		m.kind_case = STEPTRACE__EVENT__KIND_FREE;
		m.free = &fr;
		break;
	case ST_OP:
		op.id = ev->op.id;
		op.name = ev->op.name;
		op.path = ev->op.path;
		op.kind = ev->op.kind;
		op.phase = ev->op.phase;
		op.flops = ev->op.flops;
		op.bytes = ev->op.bytes;
		op.n_inputs = ev->op.n_inputs <= ST_OP_MAX_INPUTS ? ev->op.n_inputs : ST_OP_MAX_INPUTS;
		op.n_outputs = ev->op.n_outputs <= ST_OP_MAX_OUTPUTS ? ev->op.n_outputs : ST_OP_MAX_OUTPUTS;
		for (size_t i = 0; i < op.n_inputs; i++)
			in[i] = (Steptrace__DType)ev->op.inputs[i];
		for (size_t i = 0; i < op.n_outputs; i++)
			out[i] = (Steptrace__DType)ev->op.outputs[i];
		op.inputs = in;
		op.outputs = out;
		m.kind_case = STEPTRACE__EVENT__KIND_OP;
		m.op = &op;
		break;
	case ST_STEP:
		sp.index = ev->step.index;
		sp.warmup = ev->step.warmup;
		sp.thread = ev->step.thread;
		sp.phases_only = ev->step.phases_only;
		m.kind_case = STEPTRACE__EVENT__KIND_STEP;
		m.step = &sp;
		break;
	case ST_OOM:
		oom.requested = ev->oom.requested;
		oom.category = (Steptrace__MemCategory)ev->oom.category;
		oom.op = ev->oom.op;
		oom.live_bytes = ev->oom.live_bytes;
		oom.capacity = ev->oom.capacity;
		oom.step = ev->oom.step;
		m.kind_case = STEPTRACE__EVENT__KIND_OOM;
		m.oom = &oom;
		break;
	case ST_OVERHEAD:
		ov.kind = ev->overhead.kind;
		ov.thread = ev->overhead.thread;
		m.kind_case = STEPTRACE__EVENT__KIND_OVERHEAD;
		m.overhead = &ov;
		break;
	case ST_MEMTAG:
		tag.address = ev->mem.address;
		tag.size = ev->mem.size;
		tag.category = (Steptrace__MemCategory)ev->mem.category;
		tag.device = ev->mem.device;
		m.kind_case = STEPTRACE__EVENT__KIND_MEM_TAG;
		m.mem_tag = &tag;
		break;
	case ST_SYNC:
		sy.type = ev->sync.type;
		sy.stream = ev->sync.stream;
		sy.thread = ev->sync.thread;
		sy.correlation = corr_delta(st, ev->sync.correlation);
		m.kind_case = STEPTRACE__EVENT__KIND_SYNC;
		m.sync = &sy;
		break;
	case ST_COST:
		cost.thread = ev->cost.thread;
		cost.callback_ns = ev->cost.callback_ns;
		cost.nvtx_ns = ev->cost.nvtx_ns;
		cost.hook_ns = ev->cost.hook_ns;
		cost.python_ns = ev->cost.python_ns;
		cost.launches = ev->cost.launches;
		cost.ranges = ev->cost.ranges;
		cost.modules = ev->cost.modules;
		m.kind_case = STEPTRACE__EVENT__KIND_COST;
		m.cost = &cost;
		break;
	default:
		return 0;
	}

	size_t len = steptrace__event__get_packed_size(&m);
	if (byte_buf_reserve(buf, len + 16))
		return 0;
	uint8_t *p = buf->data + buf->len;
	size_t n = pb_put_varint(p, (3u << 3) | 2u); /* EventChunk.events, length-delimited */
	n += pb_put_varint(p + n, len);
	n += steptrace__event__pack(&m, p + n);
	buf->len += n;
	return n;
}

/* ---- reading field by field ------------------------------------------ */

static int get_varint(const uint8_t *buf, size_t len, size_t *pos, uint64_t *v)
{
	uint64_t x = 0;

	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (*pos >= len)
			return -1;
		uint8_t b = buf[(*pos)++];
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return 0;
		}
	}
	return -1; /* more than 10 bytes */
}

int pb_field_next(const uint8_t *buf, size_t len, size_t *pos, struct pb_field *f)
{
	uint64_t tag;

	if (*pos >= len)
		return 0;
	if (get_varint(buf, len, pos, &tag) < 0 || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
		return -1;
	f->number = (uint32_t)(tag >> 3);
	f->wire = (enum pb_wire)(tag & 7);
	f->data = NULL;
	f->len = 0;
	f->value = 0;
	switch (f->wire) {
	case PB_VARINT:
		return get_varint(buf, len, pos, &f->value) < 0 ? -1 : 1;
	case PB_FIXED64:
	case PB_FIXED32: {
		size_t n = f->wire == PB_FIXED64 ? 8 : 4;
		if (len - *pos < n)
			return -1;
		for (size_t i = n; i-- > 0;)
			f->value = f->value << 8 | buf[*pos + i];
		*pos += n;
		return 1;
	}
	case PB_BYTES: {
		uint64_t n;
		if (get_varint(buf, len, pos, &n) < 0 || n > len - *pos)
			return -1;
		f->data = buf + *pos;
		f->len = (size_t)n;
		*pos += (size_t)n;
		return 1;
	}
	default:
		return -1; /* groups (3, 4) and unused wire types */
	}
}

int chunk_scan(struct chunk_view *c, const uint8_t *data, size_t len, const char **why, size_t *at)
{
	struct pb_field f;
	size_t pos = 0;
	int ret;

	*c = (struct chunk_view){ .data = data, .len = len };
	*at = SIZE_MAX;
	while ((ret = pb_field_next(data, len, &pos, &f)) > 0) {
		if (f.number == 3) {
			if (f.wire != PB_BYTES)
				goto malformed;
			*at = c->n_events;
			if (f.len == 0) {
				*why = "holds an event with no content";
				return -1;
			}
			if (f.len > MAX_EVENT_BYTES) {
				*why = "holds an event over 64 KiB";
				return -1;
			}
			c->n_events++;
		} else if (f.number == 1 || f.number == 2) {
			if (f.wire != PB_VARINT)
				goto malformed;
			if (f.number == 1)
				c->index = (uint32_t)f.value;
			else
				c->base_ns = f.value;
		}
		/* other fields: a newer minor version's; skipped */
	}
	if (ret == 0)
		return 0;
malformed:
	*why = "does not decode";
	return -1;
}

int chunk_next_event(const struct chunk_view *c, size_t *pos, const uint8_t **ev, size_t *ev_len)
{
	struct pb_field f;

	while (pb_field_next(c->data, c->len, pos, &f) > 0) {
		if (f.number == 3) {
			*ev = f.data;
			*ev_len = f.len;
			return 1;
		}
	}
	return 0;
}

/* ---- decoding ---------------------------------------------------------- */

#define CHECK_STR(id)                                          \
	do {                                                   \
		if ((id) >= strings) {                         \
			*why = "an event names an undefined string"; \
			return -1;                             \
		}                                              \
	} while (0)

static uint64_t corr_undelta(struct chunk_state *st, int64_t d)
{
	st->prev_correlation += (uint64_t)d;
	return st->prev_correlation;
}

static int category_ok(int c)
{
	return c >= 0 && c < ST_MEM_CATEGORY_COUNT;
}

int event_decode(const Steptrace__Event *m, struct chunk_state *st, uint32_t strings,
		 struct st_event *ev, const char **why)
{
	memset(ev, 0, sizeof(*ev));

	/* Times: unsigned wrap-around arithmetic, then bounds. A start that wraps
	 * below zero or past 2^62 ns (146 years) is corruption. */
	uint64_t start = st->prev_start + (uint64_t)m->t;
	if (start > (UINT64_C(1) << 62) || m->dur > (UINT64_C(1) << 62)) {
		*why = "an event time is out of range";
		return -1;
	}
	st->prev_start = start;
	ev->start = start;
	ev->end = start + m->dur;

	switch (m->kind_case) {
	case STEPTRACE__EVENT__KIND_KERNEL: {
		const Steptrace__Kernel *k = m->kernel;
		CHECK_STR(k->name);
		ev->kind = ST_KERNEL;
		ev->kernel.name = k->name;
		ev->kernel.grid[0] = k->grid_x;
		ev->kernel.grid[1] = k->grid_y;
		ev->kernel.grid[2] = k->grid_z;
		ev->kernel.block[0] = k->block_x;
		ev->kernel.block[1] = k->block_y;
		ev->kernel.block[2] = k->block_z;
		ev->kernel.registers = k->registers;
		ev->kernel.static_smem = k->static_smem;
		ev->kernel.dynamic_smem = k->dynamic_smem;
		ev->kernel.stream = k->stream;
		ev->kernel.device = k->device;
		ev->kernel.correlation = corr_undelta(st, k->correlation);
		ev->kernel.op = k->op;
		break;
	}
	case STEPTRACE__EVENT__KIND_MEMCPY: {
		const Steptrace__Memcpy *c = m->memcpy;
		ev->kind = ST_MEMCPY;
		ev->memcpy.copy_kind = c->copy_kind;
		ev->memcpy.src_kind = c->src_kind;
		ev->memcpy.dst_kind = c->dst_kind;
		ev->memcpy.bytes = c->bytes;
		ev->memcpy.stream = c->stream;
		ev->memcpy.device = c->device;
		ev->memcpy.correlation = corr_undelta(st, c->correlation);
		ev->memcpy.op = c->op;
		break;
	}
	case STEPTRACE__EVENT__KIND_MEMSET: {
		const Steptrace__Memset *s = m->memset;
		ev->kind = ST_MEMSET;
		ev->memset.bytes = s->bytes;
		ev->memset.value = s->value;
		ev->memset.stream = s->stream;
		ev->memset.device = s->device;
		ev->memset.correlation = corr_undelta(st, s->correlation);
		ev->memset.op = s->op;
		break;
	}
	case STEPTRACE__EVENT__KIND_API: {
		const Steptrace__ApiCall *a = m->api;
		CHECK_STR(a->name);
		ev->kind = ST_API;
		ev->api.name = a->name;
		ev->api.domain = a->domain == STEPTRACE__API_DOMAIN__API_DRIVER;
		ev->api.thread = a->thread;
		ev->api.correlation = corr_undelta(st, a->correlation);
		ev->api.cbid = a->cbid;
		ev->api.status = a->status;
		break;
	}
	case STEPTRACE__EVENT__KIND_RANGE: {
		const Steptrace__Range *r = m->range;
		CHECK_STR(r->name);
		CHECK_STR(r->domain);
		if (r->depth > 4096) {
			*why = "a range nests deeper than 4096";
			return -1;
		}
		ev->kind = ST_RANGE;
		ev->range.name = r->name;
		ev->range.thread = r->thread;
		ev->range.depth = r->depth;
		ev->range.domain = r->domain;
		ev->range.comm = r->comm;
		ev->range.bytes = r->bytes;
		break;
	}
	case STEPTRACE__EVENT__KIND_ALLOC:
	case STEPTRACE__EVENT__KIND_FREE: {
		int is_alloc = m->kind_case == STEPTRACE__EVENT__KIND_ALLOC;
		uint64_t address = is_alloc ? m->alloc->address : m->free->address;
		uint64_t size = is_alloc ? m->alloc->size : m->free->size;
		int category = is_alloc ? (int)m->alloc->category : (int)m->free->category;
		int source = is_alloc ? (int)m->alloc->source : (int)m->free->source;
		if (!category_ok(category) || (source != ST_SRC_MODEL && source != ST_SRC_DRIVER)) {
			*why = "a memory event has an unknown category or source";
			return -1;
		}
		if (size > (UINT64_C(1) << 56)) {
			*why = "a memory event's size is out of range";
			return -1;
		}
		ev->kind = is_alloc ? ST_ALLOC : ST_FREE;
		ev->mem.address = address;
		ev->mem.size = size;
		ev->mem.category = (uint32_t)category;
		ev->mem.op = is_alloc ? m->alloc->op : m->free->op;
		ev->mem.source = (uint32_t)source;
		ev->mem.device = is_alloc ? m->alloc->device : m->free->device;
		break;
	}
	case STEPTRACE__EVENT__KIND_OP: {
		const Steptrace__Op *o = m->op;
		CHECK_STR(o->name);
		CHECK_STR(o->path);
		CHECK_STR(o->kind);
		CHECK_STR(o->phase);
		if (o->id == 0 || o->n_inputs > ST_OP_MAX_INPUTS || o->n_outputs > ST_OP_MAX_OUTPUTS) {
			*why = "an op has id 0 or too many inputs or outputs";
			return -1;
		}
		ev->kind = ST_OP;
		ev->op.id = o->id;
		ev->op.name = o->name;
		ev->op.path = o->path;
		ev->op.kind = o->kind;
		ev->op.phase = o->phase;
		ev->op.flops = o->flops;
		ev->op.bytes = o->bytes;
		ev->op.n_inputs = (uint8_t)o->n_inputs;
		ev->op.n_outputs = (uint8_t)o->n_outputs;
		for (size_t i = 0; i < o->n_inputs; i++)
			ev->op.inputs[i] = (uint8_t)o->inputs[i];
		for (size_t i = 0; i < o->n_outputs; i++)
			ev->op.outputs[i] = (uint8_t)o->outputs[i];
		break;
	}
	case STEPTRACE__EVENT__KIND_STEP:
		ev->kind = ST_STEP;
		ev->step.index = m->step->index;
		ev->step.warmup = m->step->warmup;
		ev->step.thread = m->step->thread;
		ev->step.phases_only = m->step->phases_only;
		break;
	case STEPTRACE__EVENT__KIND_OOM:
		if (!category_ok((int)m->oom->category)) {
			*why = "an OOM event has an unknown category";
			return -1;
		}
		ev->kind = ST_OOM;
		ev->oom.requested = m->oom->requested;
		ev->oom.category = (uint32_t)m->oom->category;
		ev->oom.op = m->oom->op;
		ev->oom.live_bytes = m->oom->live_bytes;
		ev->oom.capacity = m->oom->capacity;
		ev->oom.step = m->oom->step;
		break;
	case STEPTRACE__EVENT__KIND_OVERHEAD:
		ev->kind = ST_OVERHEAD;
		ev->overhead.kind = m->overhead->kind;
		ev->overhead.thread = m->overhead->thread;
		break;
	case STEPTRACE__EVENT__KIND_MEM_TAG:
		if (!category_ok((int)m->mem_tag->category)) {
			*why = "a memory tag has an unknown category";
			return -1;
		}
		ev->kind = ST_MEMTAG;
		ev->mem.address = m->mem_tag->address;
		ev->mem.size = m->mem_tag->size;
		ev->mem.category = (uint32_t)m->mem_tag->category;
		ev->mem.device = m->mem_tag->device;
		ev->mem.source = ST_SRC_DRIVER;
		break;
	case STEPTRACE__EVENT__KIND_SYNC:
		ev->kind = ST_SYNC;
		ev->sync.type = m->sync->type;
		ev->sync.stream = m->sync->stream;
		ev->sync.thread = m->sync->thread;
		ev->sync.correlation = corr_undelta(st, m->sync->correlation);
		break;
	case STEPTRACE__EVENT__KIND_COST: {
		const Steptrace__RecorderCost *c = m->cost;

		/* taken as written: the reports clamp what does not fit its span */
		ev->kind = ST_COST;
		ev->cost.thread = c->thread;
		ev->cost.callback_ns = c->callback_ns;
		ev->cost.nvtx_ns = c->nvtx_ns;
		ev->cost.hook_ns = c->hook_ns;
		ev->cost.python_ns = c->python_ns;
		ev->cost.launches = c->launches;
		ev->cost.ranges = c->ranges;
		ev->cost.modules = c->modules;
		break;
	}
	case STEPTRACE__EVENT__KIND__NOT_SET:
		if (m->base.n_unknown_fields == 0) {
			*why = "an event has no kind";
			return -1;
		}
		return 1; /* a kind from a newer minor version of the schema: skip it */
	default:
		return 1;
	}
	return 0;
}
