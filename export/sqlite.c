/*
 * sqlite.c: a replay as one SQLite database, for SQL and pandas
 * users and their Nsight Systems queries. Nsight Systems' export tables and
 * column names where they exist (its schema 3.x: StringIds,
 * CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY, _MEMSET, _RUNTIME, NVTX_EVENTS,
 * TARGET_INFO_SESSION_START_TIME), with names stored once in StringIds and
 * referenced by id, times in ns since the bundle's time base, process and
 * thread ids serialized as nsys does (globalPid = pid << 24, globalTid =
 * globalPid | tid), and the ENUM_* tables its reports join for the values
 * written here. NVTX domains are numbered as nsys numbers them (0 the
 * default, a NvtxDomainCreate row naming each other one), so its nvtx_sum
 * names ranges "domain:name". Columns a bundle cannot fill are NULL (0
 * where nsys declares them NOT NULL). After nsys' columns, the activity tables add
 * steptrace's: the op that launched the work (opId), its step (stepId) and
 * its innermost NVTX path (nvtxPathId). steptrace's own tables: OPS,
 * ALLOCATIONS, STEPS and RUN (the run's facts as key/value rows).
 * docs/exports.md lists what is filled and how.
 *
 * --step and --range keep what they keep in the other formats (struct
 * export_filter). The database is built in a temporary file beside the
 * output and renamed over it when complete (lib/output.h).
 */
#include "export/sqlite.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "export/filter.h"
#include "export/intern.h"
#include "export/layout.h"
#include "lib/error.h"
#include "lib/human.h"
#include "lib/output.h"
#include "lib/utf8.h"
#include "replay/memory.h"

/*
 * Nsight Systems' enum tables, as its export (schema 3.16) writes them:
 * numerical value, symbol and label. Its reports name copies by the label
 * ("[CUDA memcpy Host-to-Device]", as replay names them) and NVTX events by
 * type. Memory kinds are nsys' own numbering, not CUPTI's (see nsys_mem_kind).
 */
struct nsys_enum {
	int id;
	const char *name, *label;
};

static const struct nsys_enum memcpy_opers[] = {
	{ 0, "CUDA_MEMCPY_KIND_UNKNOWN", "Unknown" },
	{ 1, "CUDA_MEMCPY_KIND_HTOD", "Host-to-Device" },
	{ 2, "CUDA_MEMCPY_KIND_DTOH", "Device-to-Host" },
	{ 3, "CUDA_MEMCPY_KIND_HTOA", "Host-to-Array" },
	{ 4, "CUDA_MEMCPY_KIND_ATOH", "Array-to-Host" },
	{ 5, "CUDA_MEMCPY_KIND_ATOA", "Array-to-Array" },
	{ 6, "CUDA_MEMCPY_KIND_ATOD", "Array-to-Device" },
	{ 7, "CUDA_MEMCPY_KIND_DTOA", "Device-to-Array" },
	{ 8, "CUDA_MEMCPY_KIND_DTOD", "Device-to-Device" },
	{ 9, "CUDA_MEMCPY_KIND_HTOH", "Host-to-Host" },
	{ 10, "CUDA_MEMCPY_KIND_PTOP", "Peer-to-Peer" },
	{ 11, "CUDA_MEMCPY_KIND_UVM_HTOD", "Unified Host-to-Device" },
	{ 12, "CUDA_MEMCPY_KIND_UVM_DTOH", "Unified Device-to-Host" },
	{ 13, "CUDA_MEMCPY_KIND_UVM_DTOD", "Unified Device-to-Device" },
	{ 0, NULL, NULL },
};

static const struct nsys_enum mem_kinds[] = {
	{ 0, "CUDA_MEMOPR_MEMORY_KIND_PAGEABLE", "Pageable" },
	{ 1, "CUDA_MEMOPR_MEMORY_KIND_PINNED", "Pinned" },
	{ 2, "CUDA_MEMOPR_MEMORY_KIND_DEVICE", "Device" },
	{ 3, "CUDA_MEMOPR_MEMORY_KIND_ARRAY", "Array" },
	{ 4, "CUDA_MEMOPR_MEMORY_KIND_MANAGED", "Managed" },
	{ 5, "CUDA_MEMOPR_MEMORY_KIND_DEVICE_STATIC", "Device Static" },
	{ 6, "CUDA_MEMOPR_MEMORY_KIND_MANAGED_STATIC", "Managed Static" },
	{ 7, "CUDA_MEMOPR_MEMORY_KIND_UNKNOWN", "Unknown" },
	{ 0, NULL, NULL },
};

/* The NVTX event types (the export writes 34, 59 and 75; nsys' reports read the others too). */
enum { NVTX_MARK = 34, NVTX_PUSH_POP_RANGE = 59, NVTX_DOMAIN_CREATE = 75 };

static const struct nsys_enum event_types[] = {
	{ 33, "NvtxCategory", "NvtxCategory" },
	{ NVTX_MARK, "NvtxMark", "NvtxMark" },
	{ 39, "NvtxThread", "NvtxThread" },
	{ NVTX_PUSH_POP_RANGE, "NvtxPushPopRange", "NvtxPushPopRange" },
	{ 60, "NvtxStartEndRange", "NvtxStartEndRange" },
	{ 70, "NvtxtPushPopRange", "NvtxtPushPopRange" },
	{ 71, "NvtxtStartEndRange", "NvtxtStartEndRange" },
	{ NVTX_DOMAIN_CREATE, "NvtxDomainCreate", "NvtxDomainCreate" },
	{ 76, "NvtxDomainDestroy", "NvtxDomainDestroy" },
	{ 0, NULL, NULL },
};

/*
 * CUPTI's memory kind (the bundle's) as nsys numbers it: CUPTI counts
 * unknown 0, pageable 1, ... managed static 7; nsys pageable 0, ...
 * managed static 6, unknown 7.
 */
static int64_t nsys_mem_kind(uint32_t cupti)
{
	return cupti >= 1 && cupti <= 7 ? (int64_t)cupti - 1 : 7;
}

/* Estimate: bytes per row, indexes included (calibrated on samples/), and SQLite's default page. */
#define SQLITE_ROW_BYTES 84
#define SQLITE_PAGE_BYTES 4096

static const char schema[] =
	"CREATE TABLE StringIds (\n"
	"  id INTEGER NOT NULL PRIMARY KEY,\n"
	"  value TEXT NOT NULL);\n"
	"CREATE TABLE TARGET_INFO_SESSION_START_TIME (\n"
	"  utcEpochNs INTEGER,              -- CLOCK_REALTIME at the time base (ns)\n"
	"  utcTime TEXT,\n"
	"  localTime TEXT);\n"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (\n"
	"  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,\n"
	"  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,\n"
	"  correlationId INTEGER, globalPid INTEGER,\n"
	"  demangledName INTEGER NOT NULL,  -- REFERENCES StringIds(id)\n"
	"  shortName INTEGER NOT NULL,      -- REFERENCES StringIds(id)\n"
	"  mangledName INTEGER, launchType INTEGER, cacheConfig INTEGER,\n"
	"  registersPerThread INTEGER NOT NULL,\n"
	"  gridX INTEGER NOT NULL, gridY INTEGER NOT NULL, gridZ INTEGER NOT NULL,\n"
	"  blockX INTEGER NOT NULL, blockY INTEGER NOT NULL, blockZ INTEGER NOT NULL,\n"
	"  staticSharedMemory INTEGER NOT NULL, dynamicSharedMemory INTEGER NOT NULL,\n"
	"  localMemoryPerThread INTEGER NOT NULL, localMemoryTotal INTEGER NOT NULL,\n"
	"  gridId INTEGER NOT NULL, sharedMemoryExecuted INTEGER, graphNodeId INTEGER,\n"
	"  sharedMemoryLimitConfig INTEGER,\n"
	"  opId INTEGER,                    -- steptrace: REFERENCES OPS(id)\n"
	"  stepId INTEGER,                  -- steptrace: REFERENCES STEPS(id)\n"
	"  nvtxPathId INTEGER,              -- steptrace: REFERENCES StringIds(id)\n"
	"  ncclComm TEXT,                   -- steptrace: the NCCL call's communicator id (hex)\n"
	"  ncclBytes INTEGER);              -- steptrace: and its message size (NCCL's payload)\n"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMCPY (\n"
	"  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,\n"
	"  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,\n"
	"  correlationId INTEGER, globalPid INTEGER,\n"
	"  bytes INTEGER NOT NULL,\n"
	"  copyKind INTEGER NOT NULL,       -- REFERENCES ENUM_CUDA_MEMCPY_OPER(id)\n"
	"  deprecatedSrcId INTEGER,\n"
	"  srcKind INTEGER, dstKind INTEGER,   -- REFERENCES ENUM_CUDA_MEM_KIND(id)\n"
	"  srcDeviceId INTEGER, srcContextId INTEGER,\n"
	"  dstDeviceId INTEGER, dstContextId INTEGER, migrationCause INTEGER,\n"
	"  graphNodeId INTEGER, virtualAddress INTEGER, copyCount INTEGER,\n"
	"  opId INTEGER, stepId INTEGER, nvtxPathId INTEGER);\n"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_MEMSET (\n"
	"  start INTEGER NOT NULL, end INTEGER NOT NULL, deviceId INTEGER NOT NULL,\n"
	"  contextId INTEGER NOT NULL, greenContextId INTEGER, streamId INTEGER NOT NULL,\n"
	"  correlationId INTEGER, globalPid INTEGER,\n"
	"  value INTEGER NOT NULL, bytes INTEGER NOT NULL, graphNodeId INTEGER, memKind INTEGER,\n"
	"  opId INTEGER, stepId INTEGER, nvtxPathId INTEGER);\n"
	"CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (\n"
	"  start INTEGER NOT NULL, end INTEGER NOT NULL,\n"
	"  eventClass INTEGER NOT NULL,     -- 0 runtime API, 1 driver API\n"
	"  globalTid INTEGER, correlationId INTEGER,\n"
	"  nameId INTEGER NOT NULL,         -- REFERENCES StringIds(id)\n"
	"  returnValue INTEGER NOT NULL, callchainId INTEGER,\n"
	"  cbid INTEGER);                   -- steptrace: CUPTI callback id\n"
	"CREATE TABLE NVTX_EVENTS (\n"
	"  start INTEGER NOT NULL, end INTEGER,\n"
	"  eventType INTEGER NOT NULL,      -- REFERENCES ENUM_NSYS_EVENT_TYPE(id): 59, 34, 75\n"
	"  rangeId INTEGER, category INTEGER, color INTEGER,\n"
	"  text TEXT,                       -- the range's name; a domain's name (eventType 75)\n"
	"  globalTid INTEGER, endGlobalTid INTEGER,\n"
	"  textId INTEGER,                  -- REFERENCES StringIds(id): the name again\n"
	"  domainId INTEGER,                -- 0 the default domain, else its NvtxDomainCreate row's\n"
	"  uint64Value INTEGER, int64Value INTEGER, doubleValue REAL,\n"
	"  uint32Value INTEGER, int32Value INTEGER, floatValue REAL,\n"
	"  jsonTextId INTEGER, jsonText TEXT, binaryData TEXT,   -- nsys' payload columns: NULL\n"
	"  nvtxPathId INTEGER,              -- steptrace: REFERENCES StringIds(id)\n"
	"  depth INTEGER, stepId INTEGER,   -- steptrace\n"
	"  ncclComm TEXT,                   -- steptrace: an NCCL call's communicator id (hex)\n"
	"  ncclBytes INTEGER);              -- steptrace: and its message size (NCCL's payload)\n"
	"CREATE TABLE ThreadNames (\n"
	"  nameId INTEGER NOT NULL,         -- REFERENCES StringIds(id)\n"
	"  priority INTEGER, globalTid INTEGER);\n"
	"CREATE TABLE TARGET_INFO_GPU (\n"
	"  id INTEGER NOT NULL PRIMARY KEY, name TEXT, busLocation TEXT, isDiscrete INTEGER,\n"
	"  l2CacheSize INTEGER, totalMemory INTEGER, memoryBandwidth INTEGER, clockRate INTEGER,\n"
	"  smCount INTEGER, computeMajor INTEGER, computeMinor INTEGER, chipName TEXT, uuid TEXT);\n"
	"CREATE TABLE TARGET_INFO_CUDA_DEVICE (\n"
	"  gpuId INTEGER,                   -- REFERENCES TARGET_INFO_GPU(id)\n"
	"  cudaId INTEGER, pid INTEGER, uuid TEXT, numMultiprocessors INTEGER);\n"
	"CREATE TABLE OPS (\n"
	"  id INTEGER PRIMARY KEY, name TEXT, path TEXT, kind TEXT, phase TEXT,\n"
	"  flops INTEGER, bytes INTEGER, inputs TEXT, outputs TEXT);\n"
	"CREATE TABLE ALLOCATIONS (\n"
	"  start INTEGER NOT NULL,          -- allocated (ns)\n"
	"  end INTEGER,                     -- freed; NULL when never freed\n"
	"  address INTEGER NOT NULL, bytes INTEGER NOT NULL,\n"
	"  category TEXT, source TEXT,      -- 'model' (the allocator) or 'driver' (cudaMalloc)\n"
	"  phase TEXT, opId INTEGER, deviceId INTEGER, stepId INTEGER);\n"
	"CREATE TABLE STEPS (\n"
	"  id INTEGER PRIMARY KEY,          -- what --step and stepId refer to\n"
	"  stepIndex INTEGER, warmup INTEGER NOT NULL,\n"
	"  start INTEGER NOT NULL, end INTEGER NOT NULL,   -- host wall span (synchronised)\n"
	"  globalTid INTEGER, gpuStart INTEGER, gpuEnd INTEGER, gpuBusy INTEGER,\n"
	"  kernels INTEGER, activities INTEGER);\n"
	"CREATE TABLE RUN (\n"
	"  key TEXT PRIMARY KEY, value);\n"
	"CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);\n"
	"CREATE TABLE ENUM_CUDA_MEM_KIND (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);\n"
	"CREATE TABLE ENUM_NSYS_EVENT_TYPE (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);\n";

static const char indexes[] =
	"CREATE INDEX kernel_correlationId ON CUPTI_ACTIVITY_KIND_KERNEL(correlationId);\n"
	"CREATE INDEX kernel_start ON CUPTI_ACTIVITY_KIND_KERNEL(start);\n"
	"CREATE INDEX kernel_demangledName ON CUPTI_ACTIVITY_KIND_KERNEL(demangledName);\n"
	"CREATE INDEX kernel_shortName ON CUPTI_ACTIVITY_KIND_KERNEL(shortName);\n"
	"CREATE INDEX memcpy_correlationId ON CUPTI_ACTIVITY_KIND_MEMCPY(correlationId);\n"
	"CREATE INDEX memset_correlationId ON CUPTI_ACTIVITY_KIND_MEMSET(correlationId);\n"
	"CREATE INDEX runtime_correlationId ON CUPTI_ACTIVITY_KIND_RUNTIME(correlationId);\n"
	"CREATE INDEX runtime_start ON CUPTI_ACTIVITY_KIND_RUNTIME(start);\n"
	"CREATE INDEX runtime_nameId ON CUPTI_ACTIVITY_KIND_RUNTIME(nameId);\n"
	"CREATE INDEX nvtx_start ON NVTX_EVENTS(start);\n"
	"CREATE INDEX nvtx_textId ON NVTX_EVENTS(textId);\n"
	"CREATE INDEX allocations_start ON ALLOCATIONS(start);\n";

enum sq_table { T_STRING, T_KERNEL, T_MEMCPY, T_MEMSET, T_RUNTIME, T_NVTX, T_DOMAIN, T_OPS, T_ALLOC,
		T_STEPS, T_RUN, T_SESSION, T_ENUM_MEMCPY, T_ENUM_MEM_KIND, T_ENUM_EVENT, T_THREAD, T_GPU,
		T_CUDA_DEVICE, T_COUNT };

static const char *const insert_sql[T_COUNT] = {
	"INSERT INTO StringIds VALUES (?,?)",
	"INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES "
	"(?,?,?,0,NULL,?,?,?,?,?,NULL,NULL,NULL,?,?,?,?,?,?,?,?,?,0,0,0,NULL,NULL,NULL,?,?,?,?,?)",
	"INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES "
	"(?,?,?,0,NULL,?,?,?,?,?,NULL,?,?,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,?,?,?)",
	"INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (?,?,?,0,NULL,?,?,?,?,?,NULL,NULL,?,?,?)",
	"INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (?,?,?,?,?,?,?,NULL,?)",
	"INSERT INTO NVTX_EVENTS VALUES (?,?,?,NULL,NULL,NULL,?,?,NULL,?,?,"
	"NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,NULL,?,?,?,?,?)",
	"INSERT INTO NVTX_EVENTS (start, eventType, text, globalTid, domainId) VALUES (?,75,?,?,?)",
	"INSERT INTO OPS VALUES (?,?,?,?,?,?,?,?,?)",
	"INSERT INTO ALLOCATIONS VALUES (?,?,?,?,?,?,?,?,?,?)",
	"INSERT INTO STEPS VALUES (?,?,?,?,?,?,?,?,?,?,?)",
	"INSERT INTO RUN VALUES (?,?)",
	"INSERT INTO TARGET_INFO_SESSION_START_TIME VALUES (?,?,NULL)",
	"INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (?,?,?)",
	"INSERT INTO ENUM_CUDA_MEM_KIND VALUES (?,?,?)",
	"INSERT INTO ENUM_NSYS_EVENT_TYPE VALUES (?,?,?)",
	"INSERT INTO ThreadNames VALUES (?,NULL,?)",
	"INSERT INTO TARGET_INFO_GPU VALUES (?,?,NULL,1,?,?,?,?,?,?,?,?,NULL)",
	"INSERT INTO TARGET_INFO_CUDA_DEVICE VALUES (?,?,?,NULL,?)",
};

static const struct {
	enum sq_table table;
	const struct nsys_enum *rows;
} nsys_enums[] = {
	{ T_ENUM_MEMCPY, memcpy_opers },
	{ T_ENUM_MEM_KIND, mem_kinds },
	{ T_ENUM_EVENT, event_types },
};

struct sq {
	sqlite3 *db;
	sqlite3_stmt *ins[T_COUNT];
	const struct replay *rp;
	const struct export_filter *f;
	const char *output;
	int64_t global_pid;
	struct export_interner names;   /* every string written, to its StringIds id */
	uint64_t *sid;                  /* replay string id -> StringIds id */
	uint64_t *short_sid;            /* replay string id -> its short name's id (0: not yet) */
	uint64_t *path_sid;             /* replay path -> StringIds id */
	uint32_t *domain_id;            /* replay string id of a domain -> nsys' domainId (0: not yet) */
	uint32_t n_domains;
	uint64_t rows[T_COUNT];
};

static int sq_fail(struct sq *q)
{
	return error("cannot write '%s': %s", q->output, sqlite3_errmsg(q->db));
}

/* Binds the values (i64 or NULL) and steps one insert. */
struct sq_val {
	enum { V_NULL, V_INT, V_TEXT, V_REAL } type;
	int64_t i;
	const char *s;
	double d;
};
#define I(x) ((struct sq_val){ V_INT, (int64_t)(x), NULL, 0 })
#define S(x) ((struct sq_val){ V_TEXT, 0, (x), 0 })
#define D(x) ((struct sq_val){ V_REAL, 0, NULL, (x) })
#define NUL ((struct sq_val){ V_NULL, 0, NULL, 0 })
/* An id or NULL for 0 ("none"). */
#define ID(x) ((x) ? I(x) : NUL)

static int sq_insert(struct sq *q, enum sq_table t, const struct sq_val *v, int n)
{
	sqlite3_stmt *st = q->ins[t];
	int rc = SQLITE_OK;
	char *fixed;

	for (int i = 0; i < n && rc == SQLITE_OK; i++) {
		switch (v[i].type) {
		case V_INT:
			rc = sqlite3_bind_int64(st, i + 1, v[i].i);
			break;
		case V_TEXT:
			/* TEXT is UTF-8: a path given on the command line may not be (lib/utf8.h) */
			if (utf8_valid(v[i].s))
				rc = sqlite3_bind_text(st, i + 1, v[i].s, -1, SQLITE_STATIC);
			else if ((fixed = utf8_repair(v[i].s)))
				rc = sqlite3_bind_text(st, i + 1, fixed, -1, free);
			else
				return error("out of memory");
			break;
		case V_REAL:
			rc = sqlite3_bind_double(st, i + 1, v[i].d);
			break;
		default:
			rc = sqlite3_bind_null(st, i + 1);
			break;
		}
	}
	if (rc != SQLITE_OK || sqlite3_step(st) != SQLITE_DONE)
		return sq_fail(q);
	sqlite3_reset(st);
	q->rows[t]++;
	return 0;
}

#define INSERT(q, t, ...) \
	sq_insert((q), (t), (const struct sq_val[]){ __VA_ARGS__ }, \
		  (int)(sizeof((struct sq_val[]){ __VA_ARGS__ }) / sizeof(struct sq_val)))

/* ---- strings --------------------------------------------------------------- */

/* The StringIds id of s, inserting it the first time. 0 after an error line. */
static uint64_t sq_string(struct sq *q, const char *s)
{
	bool fresh = false;
	uint64_t id = export_intern(&q->names, 0, s, &fresh);

	if (!id) {
		error("out of memory");
		return 0;
	}
	if (fresh && INSERT(q, T_STRING, I(id), S(s)) < 0)
		return 0;
	return id;
}

/*
 * Nsight's "base kernel function name": without the parameter list, the
 * template arguments, the return type and the scope
 * ("void ns::k<4>(float*, int)" -> "k"). A name that is not of that shape
 * stays whole.
 */
static void short_name(const char *name, char *buf, size_t len)
{
	size_t end = strlen(name), start;

	for (int pass = 0; pass < 2 && end > 0; pass++) {
		char open = pass == 0 ? '(' : '<', close = pass == 0 ? ')' : '>';
		size_t depth = 0, i = end;
		if (name[end - 1] != close)
			continue;
		while (i-- > 0) {
			if (name[i] == close)
				depth++;
			else if (name[i] == open && --depth == 0)
				break;
		}
		if (depth != 0 || i == 0)
			break;               /* unbalanced, or nothing before: keep it whole */
		end = i;
	}
	for (start = end; start > 0; start--) {
		char c = name[start - 1];
		if (!(c == '_' || c == '$' || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
		      (c >= 'A' && c <= 'Z')))
			break;
	}
	if (start == end) {          /* an operator, or nothing like a function name */
		start = 0;
		end = strlen(name);
	}
	snprintf(buf, len, "%.*s", (int)(end - start), name + start);
}

static uint64_t sq_short_name(struct sq *q, uint32_t name)
{
	char buf[1024];

	if (name >= q->rp->n_strings)
		return q->sid[0];
	if (!q->short_sid[name]) {
		short_name(q->rp->strings[name] ? q->rp->strings[name] : "", buf, sizeof(buf));
		q->short_sid[name] = sq_string(q, buf);
	}
	return q->short_sid[name];
}

static uint64_t sq_sid(const struct sq *q, uint32_t id)
{
	return q->sid[id < q->rp->n_strings ? id : 0];
}

static uint64_t sq_path(const struct sq *q, int32_t range)
{
	const struct replay *rp = q->rp;

	if (range < 0 || (size_t)range >= rp->n_ranges || rp->ranges[range].path >= rp->n_paths)
		return 0;
	return q->path_sid[rp->ranges[range].path];
}

static int sq_strings(struct sq *q)
{
	const struct replay *rp = q->rp;

	q->sid = calloc(rp->n_strings + 1, sizeof(*q->sid));
	q->short_sid = calloc(rp->n_strings + 1, sizeof(*q->short_sid));
	q->path_sid = calloc(rp->n_paths + 1, sizeof(*q->path_sid));
	q->domain_id = calloc(rp->n_strings + 1, sizeof(*q->domain_id));
	if (!q->sid || !q->short_sid || !q->path_sid || !q->domain_id)
		return error("out of memory");
	for (uint32_t i = 0; i < rp->n_strings; i++)
		if (!(q->sid[i] = sq_string(q, rp->strings[i] ? rp->strings[i] : "")))
			return -1;
	if (!rp->n_strings && !(q->sid[0] = sq_string(q, "")))
		return -1;
	for (size_t i = 0; i < rp->n_paths; i++) {
		const char *path = replay_path_str(rp, (uint32_t)i);

		if (!(q->path_sid[i] = sq_string(q, path ? path : "")))
			return -1;
	}
	return 0;
}

/* ---- rows --------------------------------------------------------------------- */

static int64_t global_tid(const struct sq *q, uint64_t thread)
{
	return q->global_pid | (int64_t)(thread & 0xffffff);
}

static struct sq_val sq_step(int32_t step)
{
	return step >= 0 ? I(step) : NUL;
}

/*
 * The NCCL call whose payload a kernel carries: the innermost range covering
 * its launch, or one of the few above it, with a payload (only NCCL's own
 * ranges have one); NULL none. (export_slice_annotations reads it alike.)
 */
static const struct replay_range *payload_range(const struct replay *rp, int32_t r)
{
	for (int up = 0; up < 8 && r >= 0 && (size_t)r < rp->n_ranges; up++, r = rp->ranges[r].parent)
		if (rp->ranges[r].comm || rp->ranges[r].bytes)
			return &rp->ranges[r];
	return NULL;
}

static int sq_activities(struct sq *q)
{
	const struct replay *rp = q->rp;

	for (size_t i = 0; i < rp->n_activities; i++) {
		const struct replay_activity *a = &rp->activities[i];
		struct sq_val corr = ID(a->correlation), op = ID(a->op), path = ID(sq_path(q, a->range));
		int rc = 0;

		if (!export_keep_activity(q->f, a))
			continue;
		if (a->kind == ST_KERNEL) {
			static const struct replay_kernel_cfg none;
			const struct replay_kernel_cfg *k = a->detail < rp->n_kernel_cfg ? &rp->kernel_cfg[a->detail]
											  : &none;
			uint64_t shortn = sq_short_name(q, a->name);
			if (!shortn)
				return -1;
			const struct replay_range *nccl = payload_range(rp, a->range);
			char comm[24];
			if (nccl && nccl->comm)
				snprintf(comm, sizeof(comm), "0x%" PRIx64, nccl->comm);
			rc = INSERT(q, T_KERNEL, I(a->start), I(a->end), I(a->device), I(a->stream), corr,
				    I(q->global_pid), I(sq_sid(q, a->name)), I(shortn), I(k->registers),
				    I(k->grid[0]), I(k->grid[1]), I(k->grid[2]), I(k->block[0]), I(k->block[1]),
				    I(k->block[2]), I(k->static_smem), I(k->dynamic_smem),
				    op, sq_step(a->step), path, nccl && nccl->comm ? S(comm) : NUL,
				    nccl ? ID(nccl->bytes) : NUL);
		} else if (a->kind == ST_MEMCPY) {
			const struct replay_copy *c = a->detail < rp->n_copies ? &rp->copies[a->detail] : NULL;
			rc = INSERT(q, T_MEMCPY, I(a->start), I(a->end), I(a->device), I(a->stream), corr,
				    I(q->global_pid), I(a->bytes), I(c ? c->copy_kind : 0),
				    c ? I(nsys_mem_kind(c->src_kind)) : NUL, c ? I(nsys_mem_kind(c->dst_kind)) : NUL,
				    op, sq_step(a->step), path);
		} else {
			rc = INSERT(q, T_MEMSET, I(a->start), I(a->end), I(a->device), I(a->stream), corr,
				    I(q->global_pid), I(a->detail), I(a->bytes), op, sq_step(a->step), path);
		}
		if (rc < 0)
			return -1;
	}
	return 0;
}

/* Every thread by the name the traces give it ("thread 746 (main)"), as nsys' reports join them. */
static int sq_threads(struct sq *q)
{
	const struct replay *rp = q->rp;
	char name[64];

	for (size_t i = 0; i < rp->n_threads; i++) {
		uint64_t id = rp->threads[i].thread, sid;
		snprintf(name, sizeof(name), "thread %" PRIu64 "%s", id, id == rp->main_thread ? " (main)" : "");
		if (!(sid = sq_string(q, name)) || INSERT(q, T_THREAD, I(sid), I(global_tid(q, id))) < 0)
			return -1;
	}
	return 0;
}

/*
 * The recording's GPU (the header's device): TARGET_INFO_GPU, id 0, and
 * its CUDA index for this process in TARGET_INFO_CUDA_DEVICE, through
 * which nsys' GPU reports name a device. Every other device the
 * activities name gets a row of its index alone (a bundle describes one).
 */
static int sq_gpus(struct sq *q)
{
	const struct replay *rp = q->rp;
	const struct replay_device *d = &rp->run.device;
	uint8_t *seen = calloc(0x10000, 1);
	int64_t pid = q->global_pid >> 24;
	uint32_t next = 0;
	int rc = 0;

	if (!seen)
		return error("out of memory");
	if (rp->run.has_device) {
		seen[d->index & 0xffff] = 1;
		/* bytes/s: the bus's bytes a clock, twice a clock (DDR) */
		rc = INSERT(q, T_GPU, I(next), S(d->name ? d->name : ""), I(d->l2_bytes), I(d->memory_bytes),
			    d->mem_bus_bits && d->mem_clock_khz
				    ? I((uint64_t)d->mem_bus_bits / 8 * 2 * d->mem_clock_khz * 1000) : NUL,
			    I((uint64_t)d->sm_clock_khz * 1000), I(d->sm_count), I(d->cc_major), I(d->cc_minor),
			    S(d->name ? d->name : ""));
		if (rc == 0)
			rc = INSERT(q, T_CUDA_DEVICE, I(next), I(d->index), I(pid), I(d->sm_count));
		next++;
	}
	for (size_t i = 0; rc == 0 && i < rp->n_activities; i++) {
		uint16_t dev = rp->activities[i].device;
		if (seen[dev])
			continue;
		seen[dev] = 1;
		rc = INSERT(q, T_GPU, I(next), S("unknown GPU"), NUL, NUL, NUL, NUL, NUL, NUL, NUL, NUL);
		if (rc == 0)
			rc = INSERT(q, T_CUDA_DEVICE, I(next), I(dev), I(pid), NUL);
		next++;
	}
	free(seen);
	return rc;
}

static int sq_apis(struct sq *q)
{
	const struct replay *rp = q->rp;

	for (size_t i = 0; i < rp->n_apis; i++) {
		const struct replay_api *a = &rp->apis[i];
		if (export_keep_api(q->f, a) &&
		    INSERT(q, T_RUNTIME, I(a->start), I(a->end), I(a->domain), I(global_tid(q, a->thread)),
			   ID(a->correlation), I(sq_sid(q, a->name)), I(a->status), I(a->cbid)) < 0)
			return -1;
	}
	return 0;
}

/*
 * nsys' domainId of a range's domain: 0 the default; the others 1, 2, ... in
 * the order their first range starts, each named by a NvtxDomainCreate row
 * (its text) at that range's start on its thread, where nsys writes one
 * when the program creates the domain. nsys' reports find a domain's name
 * through that row, by domainId and process.
 */
static int sq_domain(struct sq *q, const struct replay_range *r, int64_t *id)
{
	uint32_t d = r->domain < q->rp->n_strings ? r->domain : 0;

	if (d && !q->domain_id[d]) {
		q->domain_id[d] = ++q->n_domains;
		if (INSERT(q, T_DOMAIN, I(r->start), S(replay_str(q->rp, d)), I(global_tid(q, r->thread)),
			   I(q->domain_id[d])) < 0)
			return -1;
	}
	*id = d ? q->domain_id[d] : 0;
	return 0;
}

/* Ranges by start (replay's order), so each domain's row comes before its first range. */
static int sq_ranges(struct sq *q)
{
	const struct replay *rp = q->rp;

	for (size_t i = 0; i < rp->n_ranges; i++) {
		const struct replay_range *r = &rp->ranges[i];
		bool mark = r->end <= r->start;
		int64_t domain;
		char comm[24];

		if (!export_keep_range(q->f, r))
			continue;
		snprintf(comm, sizeof(comm), "0x%" PRIx64, r->comm);
		if (sq_domain(q, r, &domain) < 0 ||
		    INSERT(q, T_NVTX, I(r->start), mark ? NUL : I(r->end), I(mark ? NVTX_MARK : NVTX_PUSH_POP_RANGE),
			   S(replay_str(rp, r->name)), I(global_tid(q, r->thread)), I(sq_sid(q, r->name)), I(domain),
			   ID(sq_path(q, (int32_t)i)), I(r->depth), sq_step(r->step), r->comm ? S(comm) : NUL,
			   ID(r->bytes)) < 0)
			return -1;
	}
	return 0;
}

static int sq_enums(struct sq *q)
{
	for (size_t t = 0; t < sizeof(nsys_enums) / sizeof(nsys_enums[0]); t++)
		for (const struct nsys_enum *e = nsys_enums[t].rows; e->name; e++)
			if (INSERT(q, nsys_enums[t].table, I(e->id), S(e->name), S(e->label)) < 0)
				return -1;
	return 0;
}

static void dtypes(char *buf, size_t len, const uint8_t *d, int n, int max)
{
	size_t k = 0;

	buf[0] = '\0';
	for (int i = 0; i < n && i < max && k < len; i++)
		k += (size_t)snprintf(buf + k, len - k, "%s%s", i ? ", " : "", st_dtype_name(d[i]));
}

static int sq_ops(struct sq *q)
{
	const struct replay *rp = q->rp;
	char in[128], out[128];

	for (size_t i = 0; i < rp->n_ops; i++) {
		const struct replay_op *op = &rp->ops[i];
		dtypes(in, sizeof(in), op->inputs, op->n_inputs, ST_OP_MAX_INPUTS);
		dtypes(out, sizeof(out), op->outputs, op->n_outputs, ST_OP_MAX_OUTPUTS);
		if (INSERT(q, T_OPS, I(op->id), S(replay_str(rp, op->name)), S(replay_str(rp, op->path)),
			   S(replay_str(rp, op->kind)), S(replay_str(rp, op->phase)), I(op->flops), I(op->bytes),
			   S(in), S(out)) < 0)
			return -1;
	}
	return 0;
}

static int sq_allocations(struct sq *q, enum mem_view view)
{
	const struct replay *rp = q->rp;
	struct mem_timeline tl;
	int rc = 0;

	if (mem_timeline_build(&tl, rp, view) < 0)
		return -1;
	for (size_t i = 0; i < tl.n_blocks && rc == 0; i++) {
		const struct mem_block *b = &tl.blocks[i];
		uint32_t mem = tl.points[b->alloc_point].mem;
		/* blocks live at some time in the window */
		if (q->f->windowed && (b->t_alloc > q->f->to || b->t_free < q->f->from))
			continue;
		rc = INSERT(q, T_ALLOC, I(b->t_alloc), b->t_free == UINT64_MAX ? NUL : I(b->t_free), I(b->address),
			    I(b->size), S(st_mem_category_name(b->category)), S(mem_view_short_names[view]),
			    S(st_phase_name(b->phase)), ID(b->op), I(b->device),
			    sq_step(mem < rp->n_mem ? rp->mem[mem].step : -1));
	}
	mem_timeline_release(&tl);
	return rc;
}

static int sq_steps(struct sq *q)
{
	const struct replay *rp = q->rp;

	for (size_t i = 0; i < rp->n_steps; i++) {
		const struct replay_step *s = &rp->steps[i];
		bool gpu = s->gpu_end > s->gpu_start;
		if (export_keep_step(q->f, i) &&
		    INSERT(q, T_STEPS, I(i), I(s->index), I(s->warmup), I(s->start), I(s->end),
			   I(global_tid(q, s->thread)), gpu ? I(s->gpu_start) : NUL, gpu ? I(s->gpu_end) : NUL,
			   I(s->gpu_busy), I(s->kernels), I(s->activities)) < 0)
			return -1;
	}
	return 0;
}

/* ---- the run's facts -------------------------------------------------------------- */

/* stops at the first failure: one error line */
#define KV(key, val) (rc = rc ? rc : INSERT(q, T_RUN, S(key), val))

static int sq_run(struct sq *q, const struct export_options *opt)
{
	const struct replay_run *r = &q->rp->run;
	const struct replay_config *c = &r->config;
	const struct replay_device *d = &r->device;
	char fmt[32];
	int rc = 0;

	KV("bundle", S(q->rp->path ? q->rp->path : ""));
	KV("exported_step", opt->step >= 0 ? I(opt->step) : NUL);
	KV("exported_range", opt->range ? S(opt->range) : NUL);
	KV("truncated", I(q->rp->truncated));
	if (r->has_header) {
		snprintf(fmt, sizeof(fmt), "%" PRIu32 ".%" PRIu32, r->format_major, r->format_minor);
		KV("format", S(fmt));
		KV("tool_version", S(r->tool_version));
		KV("command_line", S(r->command_line));
		KV("hostname", S(r->hostname));
		KV("pid", r->pid ? I(r->pid) : NUL);
		KV("created_unix_ns", I(r->created_unix_ns));
		KV("clock", S(r->clock));
		KV("time_base_ns", I(r->time_base_ns));   /* below 2^63 by the reader's rules */
		KV("api_calls", S(*r->api_calls ? r->api_calls : "all"));
	}
	if (r->has_config) {
		KV("model", S(c->model));
		KV("d_model", I(c->d_model));
		KV("d_ff", I(c->d_ff));
		KV("layers", I(c->layers));
		KV("heads", I(c->heads));
		KV("vocab", I(c->vocab));
		KV("batch", I(c->batch));
		KV("ctx", I(c->ctx));
		KV("precision", S(c->precision_name));
		KV("mode", S(c->mode_name));
		KV("attention", S(c->attention_name));
		KV("warmup_steps", I(c->warmup_steps));
		KV("measured_steps", I(c->measured_steps));
		KV("parameters", I(c->parameters));
	}
	if (r->has_device) {
		KV("device", S(d->name));
		KV("device_index", I(d->index));
		KV("sm_count", I(d->sm_count));
		snprintf(fmt, sizeof(fmt), "%" PRIu32 ".%" PRIu32, d->cc_major, d->cc_minor);
		KV("compute_capability", S(fmt));
		KV("memory_bytes", I(d->memory_bytes));
		KV("peak_fp32_flops", D(d->peak_fp32_flops));
		KV("peak_tf32_flops", D(d->peak_tf32_flops));
		KV("peak_bf16_flops", D(d->peak_bf16_flops));
		KV("peak_bandwidth", D(d->peak_bandwidth));
		KV("driver_version", S(d->driver_version));
	}
	if (r->has_footer) {
		KV("complete", I(r->footer.complete));
		KV("end_reason", S(r->footer.end_reason));
		KV("events", I(r->footer.events));
		KV("dropped", I(r->footer.dropped));
	}
	return rc;
}

static int sq_session_start(struct sq *q)
{
	const struct replay_run *r = &q->rp->run;
	time_t secs = (time_t)(r->created_unix_ns / 1000000000);
	struct tm tm;
	char utc[32];

	if (!r->has_header || r->created_unix_ns <= 0 || !gmtime_r(&secs, &tm))
		return 0;
	strftime(utc, sizeof(utc), "%Y-%m-%dT%H:%M:%S", &tm);
	return INSERT(q, T_SESSION, I(r->created_unix_ns), S(utc));
}

/* ---- the database ------------------------------------------------------------- */

static int sq_exec(struct sq *q, const char *sql)
{
	return sqlite3_exec(q->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : sq_fail(q);
}

static int sq_write(struct sq *q, const char *path, const struct export_options *opt)
{
	if (sqlite3_open_v2(path, &q->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
		return q->db ? sq_fail(q) : error("out of memory");
	/* a fresh temporary, renamed only when complete: no journal needed; output_close syncs */
	if (sq_exec(q, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF; BEGIN") < 0 ||
	    sq_exec(q, schema) < 0)
		return -1;
	for (int t = 0; t < T_COUNT; t++)
		if (sqlite3_prepare_v2(q->db, insert_sql[t], -1, &q->ins[t], NULL) != SQLITE_OK)
			return sq_fail(q);
	if (sq_strings(q) < 0 || sq_enums(q) < 0 || sq_session_start(q) < 0 || sq_run(q, opt) < 0 ||
	    sq_steps(q) < 0 || sq_ops(q) < 0 || sq_ranges(q) < 0 || sq_apis(q) < 0 || sq_activities(q) < 0 ||
	    sq_threads(q) < 0 || sq_gpus(q) < 0 ||
	    sq_allocations(q, MEM_VIEW_MODEL) < 0 || sq_allocations(q, MEM_VIEW_DRIVER) < 0)
		return -1;
	return sq_exec(q, indexes) < 0 || sq_exec(q, "COMMIT") < 0 ? -1 : 0;
}

static void sq_release(struct sq *q)
{
	for (int t = 0; t < T_COUNT; t++)
		sqlite3_finalize(q->ins[t]);
	if (q->db && sqlite3_close(q->db) != SQLITE_OK)
		error("cannot close '%s': %s", q->output, sqlite3_errmsg(q->db));
	export_interner_release(&q->names);
	free(q->sid);
	free(q->short_sid);
	free(q->path_sid);
	free(q->domain_id);
	memset(q, 0, sizeof(*q));
}

/*
 * The database's size before it is written: SQLITE_ROW_BYTES a row, plus
 * the text each row holds beyond it (every string and range path once in
 * StringIds, a range's name again in NVTX_EVENTS, an op's names in OPS).
 */
static uint64_t sq_estimate(const struct replay *rp, const struct export_filter *f)
{
	uint64_t rows = rp->n_mem + rp->n_steps + 64, text = 0, pages = 2;   /* the schema's, RUN's key */

	/* every table and index takes a page of its own however few its rows */
	for (const char *p = schema; (p = strstr(p, "CREATE ")); p++)
		pages++;
	for (const char *p = indexes; (p = strstr(p, "CREATE ")); p++)
		pages++;

	for (uint32_t i = 0; i < rp->n_strings; i++)
		text += strlen(replay_str(rp, i));
	for (size_t i = 0; i < rp->n_paths; i++)
		text += strlen(replay_path_str(rp, (uint32_t)i));
	rows += rp->n_strings + rp->n_paths;
	for (size_t i = 0; i < rp->n_activities; i++)
		rows += export_keep_activity(f, &rp->activities[i]);
	for (size_t i = 0; i < rp->n_apis; i++)
		rows += export_keep_api(f, &rp->apis[i]);
	for (size_t i = 0; i < rp->n_ranges; i++)
		if (export_keep_range(f, &rp->ranges[i])) {
			rows++;
			text += strlen(replay_str(rp, rp->ranges[i].name));
		}
	for (size_t i = 0; i < rp->n_ops; i++) {
		const struct replay_op *op = &rp->ops[i];
		rows++;
		text += strlen(replay_str(rp, op->name)) + strlen(replay_str(rp, op->path)) +
			strlen(replay_str(rp, op->kind)) + strlen(replay_str(rp, op->phase));
	}
	return pages * SQLITE_PAGE_BYTES + rows * SQLITE_ROW_BYTES + text;
}

bool export_sqlite_is_ours(const char *path)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *q = NULL;
	bool ours = false;

	if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
	    sqlite3_prepare_v2(db, "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
			       "name IN ('RUN', 'STEPS', 'OPS')", -1, &q, NULL) == SQLITE_OK &&
	    sqlite3_step(q) == SQLITE_ROW)
		ours = sqlite3_column_int(q, 0) == 3;
	sqlite3_finalize(q);
	sqlite3_close(db);
	return ours;
}

int export_sqlite_run(const struct replay *rp, const struct export_options *opt, const char *output)
{
	struct export_filter f;
	struct output out;
	struct sq q = { .rp = rp, .f = &f, .output = output };
	uint64_t rows[T_COUNT], bytes = 0;
	char size[32];
	int rc = -1;

	if (export_filter_init(&f, rp, opt) < 0)
		return -1;
	if (export_check_size(opt, sq_estimate(rp, &f), "SQLite", output) < 0 ||
	    output_open(&out, output, (const char *[]){ rp->path, NULL }) < 0)
		goto out;
	if (!out.tmp) {   /* SQLite opens its file by name: standard output, a pipe or a device won't do */
		output_discard(&out);
		rc = error("cannot write '%s': the sqlite format needs a regular file, not %s", output,
			   strcmp(output, "-") == 0 ? "standard output" : "a pipe or a device");
		goto out;
	}
	q.global_pid = (int64_t)(rp->run.pid ? rp->run.pid : OLD_BUNDLE_PID) << 24;
	rc = sq_write(&q, out.tmp, opt);   /* SQLite writes the temporary by name */
	memcpy(rows, q.rows, sizeof(rows));
	sq_release(&q);   /* closes the database before it is renamed */
	if (rc == 0) {
		bytes = output_bytes(&out);
		rc = output_close(&out);
	} else {
		output_discard(&out);
	}
	if (rc == 0)
		fprintf(stderr, "wrote '%s' (%s): %" PRIu64 " kernels, %" PRIu64 " memcpys, %" PRIu64
			" memsets, %" PRIu64 " API calls, %" PRIu64 " NVTX ranges, %" PRIu64 " allocations, %"
			PRIu64 " strings\n", output, human_bytes(size, sizeof(size), (double)bytes),
			rows[T_KERNEL], rows[T_MEMCPY], rows[T_MEMSET], rows[T_RUNTIME], rows[T_NVTX],
			rows[T_ALLOC], rows[T_STRING]);
	if (rc == 0)
		fprintf(stderr, "query it with sqlite3 or pandas: Nsight Systems' tables (CUPTI_ACTIVITY_KIND_KERNEL, "
			"...) and steptrace's (OPS, STEPS, ...)\n");
out:
	export_filter_release(&f);
	return rc;
}
