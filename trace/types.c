/* types.c: the name tables of types.h. */
#include "trace/types.h"

#include <string.h>

const char *const st_precision_names[] = { "fp32", "tf32", "bf16", NULL };
const char *const st_mode_names[] = { "forward", "fwdbwd", "train", NULL };
const char *const st_attention_names[] = { "naive", "flash", NULL };
const char *const st_kernels_names[] = { "plain", "fused", NULL };
const char *const st_peak_source_names[] = { "unknown", "measured", "datasheet", NULL };
const char *const st_ddp_names[] = { "none", "naive", "flat", "overlap", "bucket", NULL };
const char *const st_phase_names[] = { "forward", "backward", "optimizer", "zero_grad", "data", NULL };
const char *const st_collective_names[] = {
	"allreduce", "allgather", "reducescatter", "broadcast", "reduce", "sendrecv", NULL,
};

double st_bus_factor(int collective, int ranks)
{
	if (ranks < 1)
		return 0;
	switch (collective) {
	case ST_COLL_ALLREDUCE:
		return 2.0 * (ranks - 1) / ranks;
	case ST_COLL_ALLGATHER:
	case ST_COLL_REDUCESCATTER:
		return (double)(ranks - 1) / ranks;
	case ST_COLL_BROADCAST:
	case ST_COLL_REDUCE:
	case ST_COLL_SENDRECV:
		return 1.0;
	default:
		return 0;
	}
}

const char *st_name(const char *const *names, int v)
{
	for (int i = 0; names[i]; i++)
		if (i == v)
			return names[i];
	return "?";
}

bool st_ddp_overlaps(int ddp)
{
	return ddp == ST_DDP_OVERLAP || ddp == ST_DDP_BUCKET;
}

int st_lookup(const char *const *names, const char *s)
{
	for (int i = 0; s && names[i]; i++)
		if (strcmp(names[i], s) == 0)
			return i;
	return -1;
}

const char *st_phase_name(int phase)
{
	return phase >= 0 && phase < ST_PHASE_OTHER ? st_phase_names[phase] : "other";
}

/* The phase s[0..len) names, -1 when none. */
static int phase_of_word(const char *s, size_t len)
{
	for (int p = 0; p < ST_PHASE_OTHER; p++)
		if (strlen(st_phase_names[p]) == len && !memcmp(st_phase_names[p], s, len))
			return p;
	return -1;
}

int st_phase_from_name(const char *s)
{
	return s ? phase_of_word(s, strlen(s)) : -1;
}

int st_phase_of_path(const char *path)
{
	while (path && *path) {
		const char *slash = strchr(path, '/');
		size_t len = slash ? (size_t)(slash - path) : strlen(path);
		int p = phase_of_word(path, len);

		if (p >= 0)
			return p;
		path = slash ? slash + 1 : NULL;
	}
	return ST_PHASE_OTHER;
}

static const char *const kind_names[ST_KIND_COUNT] = {
	[ST_KERNEL] = "kernel",	    [ST_MEMCPY] = "memcpy", [ST_MEMSET] = "memset",
	[ST_API] = "api",	    [ST_RANGE] = "range",   [ST_ALLOC] = "alloc",
	[ST_FREE] = "free",	    [ST_OP] = "op",	    [ST_STEP] = "step",
	[ST_OOM] = "oom",	    [ST_OVERHEAD] = "overhead", [ST_SYNC] = "sync",
	[ST_MEMTAG] = "mem_tag",    [ST_COST] = "cost",
};

const char *st_kind_name(int kind)
{
	if (kind < ST_KIND_FIRST || kind > ST_KIND_LAST)
		return NULL;
	return kind_names[kind];
}

int st_kind_from_name(const char *name)
{
	for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST; k++)
		if (!strcmp(kind_names[k], name))
			return k;
	return -1;
}

const char *st_mem_category_name(int category)
{
	static const char *const names[ST_MEM_CATEGORY_COUNT] = {
		"unknown", "parameter", "gradient", "optimizer",
		"activation", "temporary", "workspace", "input",
	};
	if (category < 0 || category >= ST_MEM_CATEGORY_COUNT)
		return "unknown";
	return names[category];
}

const char *st_dtype_name(int dtype)
{
	static const char *const names[] = { "?", "f32", "bf16", "f16", "i32", "i64", "f64", "u8" };
	if (dtype < 0 || dtype >= (int)(sizeof(names) / sizeof(names[0])))
		return "?";
	return names[dtype];
}

const char *st_overhead_kind_name(uint32_t kind)
{
	/* CUPTI numbers its own overheads in steps of 1 << 16 */
	static const char *const cupti[] = {
		NULL, "buffer flush", "instrumentation", "resource", "runtime-triggered module loading",
		"lazy function loading", "command buffer full", "activity buffer request",
		"UVM activity init",
	};

	if (kind == 0)
		return "unknown";
	if (kind == 1)
		return "driver compiler";
	if (kind & 0xffff || (kind >> 16) >= sizeof(cupti) / sizeof(cupti[0]))
		return NULL;
	return cupti[kind >> 16];
}

const char *st_sync_type_name(uint32_t type)
{
	static const char *const names[] = {
		"unknown", "event synchronize", "stream wait event", "stream synchronize",
		"context synchronize",
	};

	return type < sizeof(names) / sizeof(names[0]) ? names[type] : NULL;
}
