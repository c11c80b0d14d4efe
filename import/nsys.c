/*
 * nsys.c: an Nsight Systems SQLite export made into a bundle (nsys.h says
 * what becomes what).
 *
 * The database is hostile like every input: it is opened read-only and
 * defensive (no schema functions), only tables (never views) are read,
 * columns are found by name and every value is checked for its type and
 * range before it is used. Strings go through one cache from the export's
 * StringIds ids to the bundle's; when StringIds' id is not its INTEGER
 * PRIMARY KEY (a hand-made database), it is copied once into a temporary
 * table that has one, so that no lookup scans the table.
 */
#define _GNU_SOURCE   /* strcasestr */
#include "import/nsys.h"

#include <inttypes.h>
#include <stdarg.h>
#include <jansson.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "trace/bundle.h"

#define TIME_LIMIT (1ull << 62)   /* the reader rejects times past it */
#define NAME_BYTES 4096           /* a name is cut to this (the reader's BUNDLE_NAME_MAX) */
#define DEPTH_MAX 256             /* NVTX nesting followed per thread; deeper ranges share this depth */
#define DOMAINS_MAX 65536         /* NVTX domains named */
#define JSON_MAX 65536            /* a payload's JSON text read at most */
#define MISSING_MAX 16

/* NVTX event types (ENUM_NSYS_EVENT_TYPE) */
enum { NVTX_MARK = 34, NVTX_PUSHPOP = 59, NVTX_STARTEND = 60, NVTX_DOMAIN_CREATE = 75 };

/* Names that mark a step, compared without case and without a trailing number ("ProfilerStep#3"). */
static const char *const step_names[] = {
	"step", "train_step", "training_step", "trainstep", "train step", "training step",
	"profilerstep", "iteration", "iter", "train_iteration", "train_iter", NULL,
};
#define STEP_NAMES (sizeof(step_names) / sizeof(step_names[0]) - 1)

/* The tables read, by their role. */
enum table {
	T_KERNEL, T_MEMCPY, T_MEMSET, T_RUNTIME, T_DRIVER, T_SYNC, T_NVTX, T_MEMORY, T_COUNT
};
static const char *const table_names[T_COUNT] = {
	"CUPTI_ACTIVITY_KIND_KERNEL", "CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET",
	"CUPTI_ACTIVITY_KIND_RUNTIME", "CUPTI_ACTIVITY_KIND_DRIVER", "CUPTI_ACTIVITY_KIND_SYNCHRONIZATION",
	"NVTX_EVENTS", "CUDA_GPU_MEMORY_USAGE_EVENTS",
};

struct str_slot {
	int64_t key;      /* the export's StringIds id */
	uint32_t id;      /* the bundle's string id */
	int8_t step;      /* index into step_names, -1 none */
	bool used;
};

struct domain {
	int64_t id;
	char *text;       /* its name */
	uint32_t name;    /* the bundle's string id, 0 until used */
	bool nccl;
};

struct step {
	uint64_t start, end, thread;
};

/* What a column holds: present, and its index in the query. */
struct cols {
	char sql[2048];
	int n;
};

struct nsys {
	sqlite3 *db;
	const char *path;
	struct bundle_writer *w;
	sqlite3_stmt *str_stmt;
	bool tables[T_COUNT];
	bool has_rows[T_COUNT];
	struct str_slot *cache;
	size_t cache_n, cache_cap;
	struct domain *domains;
	size_t n_domains, cap_domains;
	struct step *steps;
	size_t n_steps, cap_steps;
	uint64_t steps_over;
	int step_name;            /* the chosen index into step_names, -1 none */
	int64_t pid;              /* the process imported; -1: no filter */
	uint64_t skipped[T_COUNT], missing_strings, open_ranges;
	uint64_t t_min, t_max;    /* over every event written */
	uint64_t thread_main;     /* the thread of a whole-run step */
	uint64_t events;
	char *missing[MISSING_MAX];
	size_t n_missing;
	bool failed;              /* an error line was printed */
};

/* ---- small helpers ------------------------------------------------------------- */

/*
 * One error line for the first failure of the database; later ones stay
 * silent. SQLite's message can quote the file's own schema (a damaged
 * one: "malformed database schema (T) - unrecognized token: ..."): its
 * line breaks and tabs become spaces, and it is cut at 160 bytes.
 */
static int db_error(struct nsys *n)
{
	char msg[168];
	const char *m = sqlite3_errmsg(n->db);
	size_t len = 0;

	for (; m && *m && len < 160; m++)
		if ((unsigned char)*m >= 0x20 || (len && msg[len - 1] != ' '))
			msg[len++] = (unsigned char)*m < 0x20 ? ' ' : *m;
	while (len && ((unsigned char)msg[len - 1] & 0xc0) == 0x80 && m && *m)
		len--;   /* not inside a UTF-8 character */
	if (len && ((unsigned char)msg[len - 1] & 0xc0) == 0xc0 && m && *m)
		len--;
	strcpy(msg + len, m && *m ? "..." : "");
	if (!n->failed)
		error("cannot read '%s' as an Nsight Systems export: %s", n->path, msg);
	n->failed = true;
	return -1;
}

static int add_missing(struct nsys *n, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int add_missing(struct nsys *n, const char *fmt, ...)
{
	va_list ap;
	char buf[512];

	if (n->n_missing >= MISSING_MAX)
		return 0;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (!(n->missing[n->n_missing] = strdup(buf)))
		return error("cannot import '%s': out of memory", n->path);
	n->n_missing++;
	return 0;
}

/* Prepares sql; NULL after an error line. */
static sqlite3_stmt *prepare(struct nsys *n, const char *sql)
{
	sqlite3_stmt *st = NULL;

	if (sqlite3_prepare_v2(n->db, sql, -1, &st, NULL) != SQLITE_OK) {
		db_error(n);
		sqlite3_finalize(st);
		return NULL;
	}
	return st;
}

static bool table_exists(struct nsys *n, const char *name)
{
	sqlite3_stmt *st;
	bool yes = false;

	st = prepare(n, "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?1");
	if (!st)
		return false;
	sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
	yes = sqlite3_step(st) == SQLITE_ROW;
	sqlite3_finalize(st);
	return yes;
}

/* Whether `table` has column `col` (PRAGMA table_info). */
static bool has_column(struct nsys *n, const char *table, const char *col)
{
	char sql[256];
	sqlite3_stmt *st;
	bool yes = false;

	snprintf(sql, sizeof(sql), "PRAGMA table_info(\"%s\")", table);
	if (!(st = prepare(n, sql)))
		return false;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 1);
		if (name && !strcmp(name, col)) {
			yes = true;
			break;
		}
	}
	sqlite3_finalize(st);
	return yes;
}

/*
 * Appends column `col` of `table` to the select list, or NULL where the
 * table has no such column; its index in the row is the return value.
 */
static int col(struct nsys *n, struct cols *c, const char *table, const char *name)
{
	size_t len = strlen(c->sql);
	bool have = has_column(n, table, name);

	snprintf(c->sql + len, sizeof(c->sql) - len, "%s%s%s%s", c->n ? ", " : "SELECT ",
		 have ? "\"" : "", have ? name : "NULL", have ? "\"" : "");
	return c->n++;
}

/* A column's value as an integer in [lo, hi]: *v, true; false for NULL, another type or out of range. */
static bool int_in(sqlite3_stmt *st, int i, int64_t lo, int64_t hi, int64_t *v)
{
	if (sqlite3_column_type(st, i) != SQLITE_INTEGER)
		return false;
	*v = sqlite3_column_int64(st, i);
	return *v >= lo && *v <= hi;
}

/* A count, size or id as a uint32_t field: 0 where the value is absent or out of range. */
static uint32_t u32_or_0(sqlite3_stmt *st, int i)
{
	int64_t v;

	return int_in(st, i, 0, UINT32_MAX, &v) ? (uint32_t)v : 0;
}

static uint64_t u62_or_0(sqlite3_stmt *st, int i)
{
	int64_t v;

	return int_in(st, i, 0, (int64_t)TIME_LIMIT - 1, &v) ? (uint64_t)v : 0;
}

/* The row's start and end (end_col -1: an instant); false for times that make no sense. */
static bool row_times(sqlite3_stmt *st, int start_col, int end_col, uint64_t *start, uint64_t *end)
{
	int64_t s, e;

	if (!int_in(st, start_col, 0, (int64_t)TIME_LIMIT - 1, &s))
		return false;
	e = s;
	if (end_col >= 0 && !int_in(st, end_col, s, (int64_t)TIME_LIMIT - 1, &e))
		return false;
	*start = (uint64_t)s;
	*end = (uint64_t)e;
	return true;
}

/* The system thread id and process id of a globalTid (nsys's serialized GlobalId). */
static uint64_t tid_of(int64_t global_tid)
{
	return (uint64_t)global_tid & 0xffffff;
}

/* Cuts s at NAME_BYTES, before a UTF-8 continuation byte; s is writable. */
static void cut_name(char *s, size_t len)
{
	if (len <= NAME_BYTES)
		return;
	len = NAME_BYTES;
	while (len > 0 && ((unsigned char)s[len] & 0xc0) == 0x80)
		len--;
	s[len] = '\0';
}

/* The index into step_names of a range's name, -1 when it names no step. */
static int step_name_of(const char *s)
{
	char buf[64];
	size_t len = strlen(s);

	while (len > 0 && strchr("0123456789#:_-. ", s[len - 1]))
		len--;
	if (len == 0 || len >= sizeof(buf))
		return -1;
	for (size_t i = 0; i < len; i++)
		buf[i] = (char)((s[i] >= 'A' && s[i] <= 'Z') ? s[i] - 'A' + 'a' : s[i]);
	buf[len] = '\0';
	for (size_t i = 0; i < STEP_NAMES; i++)
		if (!strcmp(buf, step_names[i]))
			return (int)i;
	return -1;
}

/* ---- strings -------------------------------------------------------------------- */

static struct str_slot *cache_slot(struct nsys *n, int64_t key)
{
	size_t i = hash_mix64((uint64_t)key) & (n->cache_cap - 1);

	while (n->cache[i].used && n->cache[i].key != key)
		i = (i + 1) & (n->cache_cap - 1);
	return &n->cache[i];
}

static int cache_grow(struct nsys *n)
{
	struct str_slot *old = n->cache;
	size_t old_cap = n->cache_cap;

	n->cache_cap = old_cap ? old_cap * 2 : 1024;
	if (!(n->cache = calloc(n->cache_cap, sizeof(*n->cache)))) {
		n->cache = old;
		n->cache_cap = old_cap;
		n->failed = true;
		return error("cannot import '%s': out of memory", n->path);
	}
	for (size_t i = 0; i < old_cap; i++)
		if (old[i].used)
			*cache_slot(n, old[i].key) = old[i];
	free(old);
	return 0;
}

/* An API call's name without its version suffix: "cudaLaunchKernel_v7000" -> "cudaLaunchKernel". */
static size_t api_base_len(const char *s, size_t len)
{
	size_t i = len;

	while (i > 0 && s[i - 1] >= '0' && s[i - 1] <= '9')
		i--;
	if (i < len && i > 2 && s[i - 1] == 'v' && s[i - 2] == '_')
		return i - 2;
	return len;
}

/* Interns the first len bytes of s (cut at NAME_BYTES); the API form drops a version suffix. */
static uint32_t intern_text(struct nsys *n, const char *s, bool api)
{
	size_t len = strlen(s), keep = api ? api_base_len(s, len) : len;
	char *copy;
	uint32_t id;

	if (keep == len && len <= NAME_BYTES)
		return bundle_writer_intern(n->w, s);
	if (!(copy = malloc(keep + 1))) {
		n->failed = true;
		error("cannot import '%s': out of memory", n->path);
		return 0;
	}
	memcpy(copy, s, keep);
	copy[keep] = '\0';
	cut_name(copy, keep);
	id = bundle_writer_intern(n->w, copy);
	free(copy);
	return id;
}

/*
 * The text of column i (a StringIds id, or the text itself), valid until
 * the next call; NULL for NULL, or an id StringIds lacks (counted when
 * `count`). -1 in *err after an error line.
 */
static const char *text_of(struct nsys *n, sqlite3_stmt *st, int i, bool count)
{
	int type = sqlite3_column_type(st, i), rc;

	if (type == SQLITE_NULL)
		return NULL;
	if (type != SQLITE_INTEGER)
		return (const char *)sqlite3_column_text(st, i);
	sqlite3_reset(n->str_stmt);
	sqlite3_bind_int64(n->str_stmt, 1, sqlite3_column_int64(st, i));
	rc = sqlite3_step(n->str_stmt);
	if (rc == SQLITE_ROW && sqlite3_column_type(n->str_stmt, 0) != SQLITE_NULL)
		return (const char *)sqlite3_column_text(n->str_stmt, 0);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		db_error(n);
	else if (count)
		n->missing_strings++;
	return NULL;
}

/*
 * The bundle string of column i: a StringIds id (through the cache) or
 * the text itself; `api`: an API call's name, without its version suffix.
 * *step (when not NULL) gets the index into step_names it names, -1 none.
 * 0 for NULL, "", or an id StringIds lacks (counted).
 */
static uint32_t string_of(struct nsys *n, sqlite3_stmt *st, int i, int *step, bool api)
{
	const char *s;
	struct str_slot *slot;

	if (step)
		*step = -1;
	if (sqlite3_column_type(st, i) != SQLITE_INTEGER) {
		if (!(s = text_of(n, st, i, true)))
			return 0;
		if (step)
			*step = step_name_of(s);
		return intern_text(n, s, api);
	}
	if ((n->cache_n + 1) * 2 > n->cache_cap && cache_grow(n))
		return 0;
	slot = cache_slot(n, sqlite3_column_int64(st, i));
	if (!slot->used) {
		s = text_of(n, st, i, true);
		if (n->failed)
			return 0;
		slot->id = s ? intern_text(n, s, api) : 0;
		slot->step = (int8_t)(s ? step_name_of(s) : -1);
		slot->key = sqlite3_column_int64(st, i);
		slot->used = true;
		n->cache_n++;
	}
	if (step)
		*step = slot->step;
	return slot->id;
}

/* A name, or "[nsys string N]" for one StringIds lacks. */
static uint32_t name_of(struct nsys *n, sqlite3_stmt *st, int i, const char *what, bool api)
{
	uint32_t id = string_of(n, st, i, NULL, api);
	char buf[64];

	if (id || n->failed)
		return id;
	if (sqlite3_column_type(st, i) == SQLITE_INTEGER)
		snprintf(buf, sizeof(buf), "[nsys string %" PRId64 "]", (int64_t)sqlite3_column_int64(st, i));
	else
		snprintf(buf, sizeof(buf), "[%s without a name]", what);
	return bundle_writer_intern(n->w, buf);
}

/* StringIds with an indexed id: the table itself, or a temporary copy that has one. */
static int strings_open(struct nsys *n)
{
	const char *sql = "SELECT NULL WHERE 0 = ?1";
	sqlite3_stmt *st;
	bool pk = false;

	if (table_exists(n, "StringIds") && has_column(n, "StringIds", "id") &&
	    has_column(n, "StringIds", "value")) {
		if (!(st = prepare(n, "PRAGMA table_info(\"StringIds\")")))
			return -1;
		while (sqlite3_step(st) == SQLITE_ROW) {
			const char *name = (const char *)sqlite3_column_text(st, 1);
			const char *type = (const char *)sqlite3_column_text(st, 2);
			if (name && type && !strcmp(name, "id") && !strcasecmp(type, "INTEGER") &&
			    sqlite3_column_int(st, 5) == 1)
				pk = true;
		}
		sqlite3_finalize(st);
		if (pk) {
			sql = "SELECT value FROM StringIds WHERE id = ?1";
		} else {
			if (sqlite3_exec(n->db,
					 "CREATE TEMP TABLE st_strings (id INTEGER PRIMARY KEY, value TEXT);"
					 "INSERT OR IGNORE INTO st_strings SELECT id, value FROM main.StringIds "
					 "WHERE typeof(id) = 'integer'",
					 NULL, NULL, NULL) != SQLITE_OK)
				return db_error(n);
			sql = "SELECT value FROM temp.st_strings WHERE id = ?1";
		}
	}
	return (n->str_stmt = prepare(n, sql)) ? 0 : -1;
}

/* ---- events --------------------------------------------------------------------- */

static int put(struct nsys *n, struct st_event *ev, uint64_t start, uint64_t end)
{
	if (n->failed)
		return -1;
	ev->start = start;
	ev->end = end;
	if (start < n->t_min)
		n->t_min = start;
	if (end > n->t_max)
		n->t_max = end;
	n->events++;
	if (bundle_writer_add(n->w, ev)) {
		n->failed = true;
		return -1;
	}
	return 0;
}

/* " WHERE <process filter>" on column `gcol` (a globalPid or globalTid), or "" */
static void pid_filter(struct nsys *n, const char *table, const char *gcol, char *buf, size_t size)
{
	buf[0] = '\0';
	if (n->pid >= 0 && has_column(n, table, gcol))
		snprintf(buf, size, " WHERE ((\"%s\" >> 24) & 16777215) = %" PRId64, gcol, n->pid);
}

/* Steps a statement to its end, handing each row to fn; -1 after an error line. */
static int each_row(struct nsys *n, sqlite3_stmt *st, enum table t,
		    int (*fn)(struct nsys *n, sqlite3_stmt *st, enum table t, const int *c), const int *c)
{
	int rc;

	while ((rc = sqlite3_step(st)) == SQLITE_ROW)
		if (fn(n, st, t, c))
			break;
	if (n->failed)
		return -1;
	if (rc != SQLITE_DONE && rc != SQLITE_ROW)
		return db_error(n);
	return 0;
}

/* Every row of table tt that the process filter keeps (by pid_col), in start order, through fn; q names the columns. */
static int each_row_by_start(struct nsys *n, struct cols *q, enum table tt, const char *pid_col,
			     int (*fn)(struct nsys *n, sqlite3_stmt *st, enum table t, const int *c), const int *c)
{
	const char *t = table_names[tt];
	char where[128];
	sqlite3_stmt *st;
	int ret;

	pid_filter(n, t, pid_col, where, sizeof(where));
	snprintf(q->sql + strlen(q->sql), sizeof(q->sql) - strlen(q->sql), " FROM \"%s\"%s ORDER BY \"start\"", t,
		 where);
	if (!(st = prepare(n, q->sql)))
		return -1;
	ret = each_row(n, st, tt, fn, c);
	sqlite3_finalize(st);
	return ret;
}

enum { K_START, K_END, K_NAME, K_SHORT, K_GX, K_GY, K_GZ, K_BX, K_BY, K_BZ, K_REGS, K_SSMEM, K_DSMEM,
       K_STREAM, K_DEVICE, K_CORR, K_N };

static int kernel_row(struct nsys *n, sqlite3_stmt *st, enum table t, const int *c)
{
	struct st_event ev = { .kind = ST_KERNEL };
	uint64_t start, end;

	if (!row_times(st, c[K_START], c[K_END], &start, &end)) {
		n->skipped[t]++;
		return 0;
	}
	ev.kernel.name = string_of(n, st, c[K_NAME], NULL, false);
	if (!ev.kernel.name && !n->failed)
		ev.kernel.name = name_of(n, st, c[K_SHORT], "kernel", false);
	ev.kernel.grid[0] = u32_or_0(st, c[K_GX]);
	ev.kernel.grid[1] = u32_or_0(st, c[K_GY]);
	ev.kernel.grid[2] = u32_or_0(st, c[K_GZ]);
	ev.kernel.block[0] = u32_or_0(st, c[K_BX]);
	ev.kernel.block[1] = u32_or_0(st, c[K_BY]);
	ev.kernel.block[2] = u32_or_0(st, c[K_BZ]);
	ev.kernel.registers = u32_or_0(st, c[K_REGS]);
	ev.kernel.static_smem = u32_or_0(st, c[K_SSMEM]);
	ev.kernel.dynamic_smem = u32_or_0(st, c[K_DSMEM]);
	ev.kernel.stream = u32_or_0(st, c[K_STREAM]);
	ev.kernel.device = u32_or_0(st, c[K_DEVICE]);
	ev.kernel.correlation = u32_or_0(st, c[K_CORR]);
	return put(n, &ev, start, end);
}

static int import_kernels(struct nsys *n)
{
	const char *t = table_names[T_KERNEL];
	struct cols q = { .n = 0 };
	int c[K_N];

	c[K_START] = col(n, &q, t, "start");
	c[K_END] = col(n, &q, t, "end");
	c[K_NAME] = col(n, &q, t, "demangledName");
	c[K_SHORT] = col(n, &q, t, "shortName");
	c[K_GX] = col(n, &q, t, "gridX");
	c[K_GY] = col(n, &q, t, "gridY");
	c[K_GZ] = col(n, &q, t, "gridZ");
	c[K_BX] = col(n, &q, t, "blockX");
	c[K_BY] = col(n, &q, t, "blockY");
	c[K_BZ] = col(n, &q, t, "blockZ");
	c[K_REGS] = col(n, &q, t, "registersPerThread");
	c[K_SSMEM] = col(n, &q, t, "staticSharedMemory");
	c[K_DSMEM] = col(n, &q, t, "dynamicSharedMemory");
	c[K_STREAM] = col(n, &q, t, "streamId");
	c[K_DEVICE] = col(n, &q, t, "deviceId");
	c[K_CORR] = col(n, &q, t, "correlationId");
	return each_row_by_start(n, &q, T_KERNEL, "globalPid", kernel_row, c);
}

enum { C_START, C_END, C_KIND, C_SRC, C_DST, C_BYTES, C_VALUE, C_STREAM, C_DEVICE, C_CORR, C_N };

/* nsys's memory kinds (ENUM_CUDA_MEM_KIND: 0 pageable ... 6 managed static, 7 unknown) as CUPTI's (0 unknown, 1 pageable ...). */
static uint32_t cupti_mem_kind(sqlite3_stmt *st, int i)
{
	int64_t v;

	return int_in(st, i, 0, 6, &v) ? (uint32_t)v + 1 : 0;
}

static int copy_row(struct nsys *n, sqlite3_stmt *st, enum table t, const int *c)
{
	struct st_event ev = { .kind = t == T_MEMCPY ? ST_MEMCPY : ST_MEMSET };
	uint64_t start, end;

	if (!row_times(st, c[C_START], c[C_END], &start, &end)) {
		n->skipped[t]++;
		return 0;
	}
	if (t == T_MEMCPY) {
		ev.memcpy.copy_kind = u32_or_0(st, c[C_KIND]);
		ev.memcpy.src_kind = cupti_mem_kind(st, c[C_SRC]);
		ev.memcpy.dst_kind = cupti_mem_kind(st, c[C_DST]);
		ev.memcpy.bytes = u62_or_0(st, c[C_BYTES]);
		ev.memcpy.stream = u32_or_0(st, c[C_STREAM]);
		ev.memcpy.device = u32_or_0(st, c[C_DEVICE]);
		ev.memcpy.correlation = u32_or_0(st, c[C_CORR]);
	} else {
		ev.memset.value = u32_or_0(st, c[C_VALUE]);
		ev.memset.bytes = u62_or_0(st, c[C_BYTES]);
		ev.memset.stream = u32_or_0(st, c[C_STREAM]);
		ev.memset.device = u32_or_0(st, c[C_DEVICE]);
		ev.memset.correlation = u32_or_0(st, c[C_CORR]);
	}
	return put(n, &ev, start, end);
}

static int import_copies(struct nsys *n, enum table tt)
{
	const char *t = table_names[tt];
	struct cols q = { .n = 0 };
	int c[C_N];

	c[C_START] = col(n, &q, t, "start");
	c[C_END] = col(n, &q, t, "end");
	c[C_KIND] = col(n, &q, t, "copyKind");
	c[C_SRC] = col(n, &q, t, "srcKind");
	c[C_DST] = col(n, &q, t, "dstKind");
	c[C_BYTES] = col(n, &q, t, "bytes");
	c[C_VALUE] = col(n, &q, t, "value");
	c[C_STREAM] = col(n, &q, t, "streamId");
	c[C_DEVICE] = col(n, &q, t, "deviceId");
	c[C_CORR] = col(n, &q, t, "correlationId");
	return each_row_by_start(n, &q, tt, "globalPid", copy_row, c);
}

enum { A_START, A_END, A_NAME, A_TID, A_CORR, A_RET, A_N };

static int api_row(struct nsys *n, sqlite3_stmt *st, enum table t, const int *c)
{
	struct st_event ev = { .kind = ST_API };
	uint64_t start, end;
	int64_t v;

	if (!row_times(st, c[A_START], c[A_END], &start, &end)) {
		n->skipped[t]++;
		return 0;
	}
	ev.api.name = name_of(n, st, c[A_NAME], "API call", true);
	ev.api.domain = t == T_DRIVER ? 1 : 0;
	ev.api.thread = sqlite3_column_type(st, c[A_TID]) == SQLITE_INTEGER ? tid_of(sqlite3_column_int64(st, c[A_TID])) : 0;
	ev.api.correlation = u32_or_0(st, c[A_CORR]);
	ev.api.status = int_in(st, c[A_RET], INT32_MIN, INT32_MAX, &v) ? (int32_t)v : 0;
	return put(n, &ev, start, end);
}

static int import_api(struct nsys *n, enum table tt)
{
	const char *t = table_names[tt];
	struct cols q = { .n = 0 };
	int c[A_N];

	c[A_START] = col(n, &q, t, "start");
	c[A_END] = col(n, &q, t, "end");
	c[A_NAME] = col(n, &q, t, "nameId");
	c[A_TID] = col(n, &q, t, "globalTid");
	c[A_CORR] = col(n, &q, t, "correlationId");
	c[A_RET] = col(n, &q, t, "returnValue");
	return each_row_by_start(n, &q, tt, "globalTid", api_row, c);
}

enum { Y_START, Y_END, Y_TYPE, Y_STREAM, Y_TID, Y_CORR, Y_N };

static int sync_row(struct nsys *n, sqlite3_stmt *st, enum table t, const int *c)
{
	struct st_event ev = { .kind = ST_SYNC };
	uint64_t start, end;

	if (!row_times(st, c[Y_START], c[Y_END], &start, &end)) {
		n->skipped[t]++;
		return 0;
	}
	ev.sync.type = u32_or_0(st, c[Y_TYPE]);
	ev.sync.stream = sqlite3_column_type(st, c[Y_STREAM]) == SQLITE_INTEGER ? u32_or_0(st, c[Y_STREAM]) : UINT32_MAX;
	ev.sync.thread = sqlite3_column_type(st, c[Y_TID]) == SQLITE_INTEGER ? tid_of(sqlite3_column_int64(st, c[Y_TID])) : 0;
	ev.sync.correlation = u32_or_0(st, c[Y_CORR]);
	return put(n, &ev, start, end);
}

static int import_syncs(struct nsys *n)
{
	const char *t = table_names[T_SYNC];
	struct cols q = { .n = 0 };
	int c[Y_N];

	c[Y_START] = col(n, &q, t, "start");
	c[Y_END] = col(n, &q, t, "end");
	c[Y_TYPE] = col(n, &q, t, "syncType");
	c[Y_STREAM] = col(n, &q, t, "streamId");
	c[Y_TID] = col(n, &q, t, "globalTid");
	c[Y_CORR] = col(n, &q, t, "correlationId");
	return each_row_by_start(n, &q, T_SYNC, has_column(n, t, "globalPid") ? "globalPid" : "globalTid", sync_row, c);
}

enum { M_START, M_DEVICE, M_ADDR, M_BYTES, M_KIND, M_OP, M_N };

static int memory_row(struct nsys *n, sqlite3_stmt *st, enum table t, const int *c)
{
	struct st_event ev = { 0 };
	uint64_t start, end;
	int64_t op, kind, addr;

	if (!row_times(st, c[M_START], -1, &start, &end) || !int_in(st, c[M_OP], 0, 1, &op) ||
	    sqlite3_column_type(st, c[M_ADDR]) != SQLITE_INTEGER) {
		n->skipped[t]++;
		return 0;
	}
	/* host memory (pageable, pinned) is not the device's */
	if (int_in(st, c[M_KIND], 0, 1, &kind))
		return 0;
	addr = sqlite3_column_int64(st, c[M_ADDR]);
	ev.kind = op == 0 ? ST_ALLOC : ST_FREE;
	ev.mem.address = (uint64_t)addr;
	ev.mem.size = u62_or_0(st, c[M_BYTES]);
	ev.mem.category = ST_MEM_UNKNOWN;
	ev.mem.source = ST_SRC_DRIVER;
	ev.mem.device = u32_or_0(st, c[M_DEVICE]);
	return put(n, &ev, start, end);
}

static int import_memory(struct nsys *n)
{
	const char *t = table_names[T_MEMORY];
	struct cols q = { .n = 0 };
	int c[M_N];
	char where[128];
	sqlite3_stmt *st;
	int ret;

	c[M_START] = col(n, &q, t, "start");
	c[M_DEVICE] = col(n, &q, t, "deviceId");
	c[M_ADDR] = col(n, &q, t, "address");
	c[M_BYTES] = col(n, &q, t, "bytes");
	c[M_KIND] = col(n, &q, t, "memKind");
	c[M_OP] = col(n, &q, t, "memoryOperationType");
	pid_filter(n, t, "globalPid", where, sizeof(where));
	/* a free at the same instant as an allocation comes first: it makes room (FORMAT.md 6.5) */
	snprintf(q.sql + strlen(q.sql), sizeof(q.sql) - strlen(q.sql),
		 " FROM \"%s\"%s ORDER BY \"start\", \"memoryOperationType\" DESC", t, where);
	if (!has_column(n, t, "memoryOperationType"))
		return 0;
	if (!(st = prepare(n, q.sql)))
		return -1;
	ret = each_row(n, st, T_MEMORY, memory_row, c);
	sqlite3_finalize(st);
	return ret;
}

/* ---- NVTX ----------------------------------------------------------------------- */

static int domain_cmp(const void *a, const void *b)
{
	const struct domain *x = a, *y = b;

	return (x->id > y->id) - (x->id < y->id);
}

static struct domain *domain_find(const struct nsys *n, int64_t id)
{
	struct domain key = { .id = id };

	return n->n_domains ? bsearch(&key, n->domains, n->n_domains, sizeof(key), domain_cmp) : NULL;
}

/* The domains NVTX_EVENTS creates (event type 75: domainId and its name). */
static int read_domains(struct nsys *n)
{
	const char *t = table_names[T_NVTX];
	struct cols q = { .n = 0 };
	int c_id, c_text, c_textid;
	sqlite3_stmt *st;
	int rc;

	c_id = col(n, &q, t, "domainId");
	c_text = col(n, &q, t, "text");
	c_textid = col(n, &q, t, "textId");
	if (!has_column(n, t, "eventType"))
		return 0;
	snprintf(q.sql + strlen(q.sql), sizeof(q.sql) - strlen(q.sql), " FROM \"%s\" WHERE \"eventType\" = %d", t,
		 NVTX_DOMAIN_CREATE);
	if (!(st = prepare(n, q.sql)))
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const char *name;
		int64_t id;
		char *copy;

		if (!int_in(st, c_id, INT64_MIN, INT64_MAX, &id) || n->n_domains >= DOMAINS_MAX)
			continue;
		if (!(name = text_of(n, st, c_text, false)) && !n->failed)
			name = text_of(n, st, c_textid, false);
		if (n->failed)
			break;
		if (!name || !*name)
			continue;
		if (ALLOC_GROW(n->domains, n->n_domains + 1, n->cap_domains) < 0 ||
		    !(copy = strndup(name, NAME_BYTES))) {
			n->failed = true;
			break;
		}
		n->domains[n->n_domains] = (struct domain){ .id = id, .text = copy, .nccl = !strcmp(copy, "NCCL") };
		n->n_domains++;
	}
	sqlite3_finalize(st);
	if (n->failed)
		return -1;
	if (rc != SQLITE_DONE)
		return db_error(n);
	qsort(n->domains, n->n_domains, sizeof(*n->domains), domain_cmp);
	return 0;
}

enum { N_START, N_END, N_TYPE, N_TEXT, N_TEXTID, N_DOMAIN, N_TID, N_JSON, N_JSONID, N_N };

static void nvtx_columns(struct nsys *n, struct cols *q, int *c)
{
	const char *t = table_names[T_NVTX];

	c[N_START] = col(n, q, t, "start");
	c[N_END] = col(n, q, t, "end");
	c[N_TYPE] = col(n, q, t, "eventType");
	c[N_TEXT] = col(n, q, t, "text");
	c[N_TEXTID] = col(n, q, t, "textId");
	c[N_DOMAIN] = col(n, q, t, "domainId");
	c[N_TID] = col(n, q, t, "globalTid");
	c[N_JSON] = col(n, q, t, "jsonText");
	c[N_JSONID] = col(n, q, t, "jsonTextId");
}

static uint32_t nvtx_name(struct nsys *n, sqlite3_stmt *st, const int *c, int *step)
{
	uint32_t id = string_of(n, st, c[N_TEXT], step, false);

	if (!id && !n->failed)
		id = string_of(n, st, c[N_TEXTID], step, false);
	return id;
}

/* Pass 1: which step name the ranges use most (outside NCCL's domain); n->step_name, -1 none. */
static int choose_step_name(struct nsys *n)
{
	const char *t = table_names[T_NVTX];
	struct cols q = { .n = 0 };
	uint64_t count[STEP_NAMES] = { 0 };
	int c[N_N], rc;
	sqlite3_stmt *st;
	char where[128];

	nvtx_columns(n, &q, c);
	pid_filter(n, t, "globalTid", where, sizeof(where));
	snprintf(q.sql + strlen(q.sql), sizeof(q.sql) - strlen(q.sql), " FROM \"%s\"%s%s \"eventType\" IN (%d, %d)",
		 t, where, where[0] ? " AND" : " WHERE", NVTX_PUSHPOP, NVTX_STARTEND);
	if (!(st = prepare(n, q.sql)))
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		const struct domain *d;
		int64_t dom;
		int step;

		if (int_in(st, c[N_DOMAIN], INT64_MIN, INT64_MAX, &dom) && (d = domain_find(n, dom)) && d->nccl)
			continue;
		nvtx_name(n, st, c, &step);
		if (n->failed)
			break;
		if (step >= 0)
			count[step]++;
	}
	sqlite3_finalize(st);
	if (n->failed)
		return -1;
	if (rc != SQLITE_DONE)
		return db_error(n);
	n->step_name = -1;
	for (size_t i = 0; i < STEP_NAMES; i++)
		if (count[i] && (n->step_name < 0 || count[i] > count[n->step_name]))
			n->step_name = (int)i;
	return 0;
}

/* NCCL's payload in a range's JSON text: the communicator and the message size, by their entry names. */
static void nccl_payload(struct nsys *n, sqlite3_stmt *st, const int *c, uint64_t *comm, uint64_t *bytes)
{
	const char *text = NULL;
	int len = 0;
	json_t *root, *v;
	const char *key;

	if (sqlite3_column_type(st, c[N_JSON]) == SQLITE_TEXT) {
		text = (const char *)sqlite3_column_text(st, c[N_JSON]);
		len = sqlite3_column_bytes(st, c[N_JSON]);
	} else if (sqlite3_column_type(st, c[N_JSONID]) == SQLITE_INTEGER) {
		sqlite3_reset(n->str_stmt);
		sqlite3_bind_int64(n->str_stmt, 1, sqlite3_column_int64(st, c[N_JSONID]));
		if (sqlite3_step(n->str_stmt) == SQLITE_ROW) {
			text = (const char *)sqlite3_column_text(n->str_stmt, 0);
			len = sqlite3_column_bytes(n->str_stmt, 0);
		}
	}
	if (!text || len <= 0 || len > JSON_MAX || !(root = json_loadb(text, (size_t)len, 0, NULL)))
		return;
	if (json_is_object(root)) {
		json_object_foreach(root, key, v) {
			if (!json_is_integer(v) || json_integer_value(v) < 0)
				continue;
			if (strcasestr(key, "communicator") && !strcasestr(key, "parent"))
				*comm = (uint64_t)json_integer_value(v);
			else if (strcasestr(key, "message size"))
				*bytes = (uint64_t)json_integer_value(v);
		}
	}
	json_decref(root);
}

struct open_range {
	uint64_t start, end;
	bool step;
};

/* Pass 2: every range and mark, thread by thread in start order, with its depth; the steps kept. */
static int import_nvtx(struct nsys *n)
{
	const char *t = table_names[T_NVTX];
	struct cols q = { .n = 0 };
	struct open_range stack[DEPTH_MAX];
	size_t depth = 0, step_depth = 0;
	int64_t cur_tid = INT64_MIN;
	int c[N_N], rc;
	sqlite3_stmt *st;
	char where[128];

	nvtx_columns(n, &q, c);
	pid_filter(n, t, "globalTid", where, sizeof(where));
	snprintf(q.sql + strlen(q.sql), sizeof(q.sql) - strlen(q.sql),
		 " FROM \"%s\"%s%s \"eventType\" IN (%d, %d, %d) ORDER BY \"globalTid\", \"start\", \"end\" DESC", t,
		 where, where[0] ? " AND" : " WHERE", NVTX_MARK, NVTX_PUSHPOP, NVTX_STARTEND);
	if (!has_column(n, t, "globalTid") || !has_column(n, t, "eventType"))
		return 0;
	if (!(st = prepare(n, q.sql)))
		return -1;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		struct st_event ev = { .kind = ST_RANGE };
		struct domain *d = NULL;
		uint64_t start, end;
		int64_t type, tid, dom;
		int step;
		bool mark;

		if (!int_in(st, c[N_TYPE], 0, 1000, &type) ||
		    !int_in(st, c[N_TID], INT64_MIN, INT64_MAX, &tid)) {
			n->skipped[T_NVTX]++;
			continue;
		}
		mark = type == NVTX_MARK || sqlite3_column_type(st, c[N_END]) == SQLITE_NULL;
		if (mark && type != NVTX_MARK) {
			n->open_ranges++;   /* a range that did not end while nsys recorded */
			continue;
		}
		if (!row_times(st, c[N_START], mark ? -1 : c[N_END], &start, &end)) {
			n->skipped[T_NVTX]++;
			continue;
		}
		if (tid != cur_tid) {
			cur_tid = tid;
			depth = step_depth = 0;
		}
		while (depth > 0 && (stack[depth - 1].end < start ||
				     (stack[depth - 1].end == start && stack[depth - 1].start < start))) {
			depth--;
			if (stack[depth].step)
				step_depth--;
		}
		ev.range.name = nvtx_name(n, st, c, &step);
		if (n->failed)
			break;
		if (!ev.range.name)
			ev.range.name = name_of(n, st, c[N_TEXTID], "NVTX range", false);
		if (int_in(st, c[N_DOMAIN], INT64_MIN, INT64_MAX, &dom) && dom != 0) {
			d = domain_find(n, dom);
			if (d) {
				if (!d->name)
					d->name = bundle_writer_intern(n->w, d->text);
				ev.range.domain = d->name;
			} else {
				char buf[64];
				snprintf(buf, sizeof(buf), "[nsys domain %" PRId64 "]", dom);
				ev.range.domain = bundle_writer_intern(n->w, buf);
			}
		}
		ev.range.thread = tid_of(tid);
		ev.range.depth = (uint32_t)depth;
		if (d && d->nccl)
			nccl_payload(n, st, c, &ev.range.comm, &ev.range.bytes);
		if (put(n, &ev, start, end))
			break;
		if (mark)
			continue;
		bool is_step = step >= 0 && step == n->step_name && !(d && d->nccl);
		if (is_step && step_depth == 0) {
			if (n->n_steps >= IMPORT_NSYS_STEPS_MAX) {
				n->steps_over++;
			} else if (ALLOC_GROW(n->steps, n->n_steps + 1, n->cap_steps) < 0) {
				n->failed = true;
				break;
			} else {
				n->steps[n->n_steps++] = (struct step){ start, end, tid_of(tid) };
			}
		}
		if (depth < DEPTH_MAX) {
			stack[depth++] = (struct open_range){ start, end, is_step };
			if (is_step)
				step_depth++;
		}
	}
	sqlite3_finalize(st);
	if (n->failed)
		return -1;
	if (rc != SQLITE_DONE)
		return db_error(n);
	return 0;
}

static int step_cmp(const void *a, const void *b)
{
	const struct step *x = a, *y = b;

	if (x->start != y->start)
		return (x->start > y->start) - (x->start < y->start);
	return (x->thread > y->thread) - (x->thread < y->thread);
}

/* The steps: the ranges kept, in start order, the first of two or more warm-up; else one over the whole run. */
static int write_steps(struct nsys *n)
{
	char from[128];

	if (!n->n_steps) {
		struct st_event ev = { .kind = ST_STEP };

		bundle_writer_set_steps_from(n->w, "whole run");
		if (!n->events)
			return 0;
		ev.step.thread = n->thread_main;
		return put(n, &ev, n->t_min, n->t_max);
	}
	qsort(n->steps, n->n_steps, sizeof(*n->steps), step_cmp);
	for (size_t i = 0; i < n->n_steps; i++) {
		struct st_event ev = { .kind = ST_STEP };

		ev.step.index = (uint32_t)i;
		ev.step.warmup = i == 0 && n->n_steps >= 2;
		ev.step.thread = n->steps[i].thread;
		if (put(n, &ev, n->steps[i].start, n->steps[i].end))
			return -1;
	}
	snprintf(from, sizeof(from), "NVTX range '%s'", step_names[n->step_name]);
	bundle_writer_set_steps_from(n->w, from);
	if (n->steps_over)
		warning("'%s': %" PRIu64 " step ranges past the first %d left out", n->path, n->steps_over,
			IMPORT_NSYS_STEPS_MAX);
	return 0;
}

/* ---- the run's facts ------------------------------------------------------------ */

/* The first row's integer of a one-column query; `dflt` when it has none. -1 after an error line. */
static int query_int(struct nsys *n, const char *sql, int64_t dflt, int64_t *v, int64_t *second)
{
	sqlite3_stmt *st = prepare(n, sql);
	int rc;

	*v = dflt;
	if (second)
		*second = 0;
	if (!st)
		return -1;
	rc = sqlite3_step(st);
	if (rc == SQLITE_ROW) {
		if (sqlite3_column_type(st, 0) == SQLITE_INTEGER)
			*v = sqlite3_column_int64(st, 0);
		if (second && sqlite3_column_type(st, 1) == SQLITE_INTEGER)
			*second = sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_error(n);
	return 0;
}

/* The process that ran the most kernels (else made the most API calls); how many processes the export has. */
static int choose_process(struct nsys *n, int64_t *processes)
{
	static const struct { enum table t; const char *col; } by[] = {
		{ T_KERNEL, "globalPid" }, { T_RUNTIME, "globalTid" }, { T_NVTX, "globalTid" },
	};
	char sql[512];
	int64_t count;

	n->pid = -1;
	*processes = 0;
	for (size_t i = 0; i < sizeof(by) / sizeof(by[0]); i++) {
		const char *t = table_names[by[i].t];

		if (!n->has_rows[by[i].t] || !has_column(n, t, by[i].col))
			continue;
		snprintf(sql, sizeof(sql),
			 "SELECT (\"%s\" >> 24) & 16777215, count(*) FROM \"%s\" WHERE typeof(\"%s\") = 'integer' "
			 "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1",
			 by[i].col, t, by[i].col);
		if (query_int(n, sql, -1, &n->pid, &count))
			return -1;
		snprintf(sql, sizeof(sql),
			 "SELECT count(DISTINCT (\"%s\" >> 24) & 16777215) FROM \"%s\" WHERE typeof(\"%s\") = 'integer'",
			 by[i].col, t, by[i].col);
		if (query_int(n, sql, 0, processes, NULL))
			return -1;
		return 0;
	}
	return 0;
}

/* The thread that made the most API calls: a whole-run step's. */
static int main_thread(struct nsys *n)
{
	char sql[512], pid[96] = "";
	int64_t tid;

	if (!n->has_rows[T_RUNTIME] || !has_column(n, table_names[T_RUNTIME], "globalTid"))
		return 0;
	if (n->pid >= 0)
		snprintf(pid, sizeof(pid), " AND ((\"globalTid\" >> 24) & 16777215) = %" PRId64, n->pid);
	snprintf(sql, sizeof(sql),
		 "SELECT \"globalTid\" & 16777215, count(*) FROM \"%s\" WHERE typeof(\"globalTid\") = 'integer'%s "
		 "GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1",
		 table_names[T_RUNTIME], pid);
	if (query_int(n, sql, 0, &tid, NULL))
		return -1;
	n->thread_main = (uint64_t)tid;
	return 0;
}

/* The device the kernels ran on (the most kernels), from TARGET_INFO_GPU. */
static int read_device(struct nsys *n, Steptrace__DeviceInfo *dev, char *name, size_t name_size)
{
	const char *t = "TARGET_INFO_GPU";
	struct cols q = { .n = 0 };
	int c_id, c_name, c_sm, c_maj, c_min, c_mem, c_l2, c_clock, c_bw;
	int64_t device = 0, v;
	sqlite3_stmt *st;
	int rc;

	if (n->has_rows[T_KERNEL] && has_column(n, table_names[T_KERNEL], "deviceId") &&
	    query_int(n, "SELECT \"deviceId\", count(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY 1 ORDER BY 2 DESC, 1 LIMIT 1",
		      0, &device, NULL))
		return -1;
	if (!table_exists(n, t))
		return 1;
	c_id = col(n, &q, t, "id");
	c_name = col(n, &q, t, "name");
	c_sm = col(n, &q, t, "smCount");
	c_maj = col(n, &q, t, "computeMajor");
	c_min = col(n, &q, t, "computeMinor");
	c_mem = col(n, &q, t, "totalMemory");
	c_l2 = col(n, &q, t, "l2CacheSize");
	c_clock = col(n, &q, t, "clockRate");
	c_bw = col(n, &q, t, "memoryBandwidth");
	snprintf(q.sql + strlen(q.sql), sizeof(q.sql) - strlen(q.sql), " FROM \"%s\"", t);
	if (!(st = prepare(n, q.sql)))
		return -1;
	rc = SQLITE_DONE;
	bool found = false;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		bool match = int_in(st, c_id, 0, INT32_MAX, &v) && v == device;
		if (found && !match)
			continue;
		found = true;
		dev->index = (uint32_t)device;
		const char *s = (const char *)sqlite3_column_text(st, c_name);
		snprintf(name, name_size, "%s", s ? s : "");
		dev->name = name;
		dev->sm_count = u32_or_0(st, c_sm);
		dev->cc_major = u32_or_0(st, c_maj);
		dev->cc_minor = u32_or_0(st, c_min);
		dev->memory_bytes = u62_or_0(st, c_mem);
		dev->l2_bytes = u62_or_0(st, c_l2);
		dev->sm_clock_khz = (uint32_t)(u62_or_0(st, c_clock) / 1000 > UINT32_MAX ? 0 : u62_or_0(st, c_clock) / 1000);
		dev->peak_bandwidth = (double)u62_or_0(st, c_bw);
		if (match)
			break;
	}
	sqlite3_finalize(st);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		return db_error(n);
	return found ? 0 : 1;
}

/* The tables there, and whether each has rows. */
static int survey(struct nsys *n)
{
	char sql[256];
	int64_t v;

	for (int t = 0; t < T_COUNT; t++) {
		n->tables[t] = table_exists(n, table_names[t]);
		if (n->failed)
			return -1;
		if (!n->tables[t])
			continue;
		if (!has_column(n, table_names[t], "start") && !n->failed)
			return error("'%s' is not an Nsight Systems export: its %s has no column start", n->path,
				     table_names[t]);
		snprintf(sql, sizeof(sql), "SELECT EXISTS (SELECT 1 FROM \"%s\")", table_names[t]);
		if (n->failed || query_int(n, sql, 0, &v, NULL))
			return -1;
		n->has_rows[t] = v != 0;
	}
	return 0;
}

static int list_missing(struct nsys *n, bool has_device, int64_t processes, bool nccl_payloads)
{
	bool nccl = false;

	for (size_t i = 0; i < n->n_domains; i++)
		nccl |= n->domains[i].nccl;
	if (!n->has_rows[T_KERNEL] && add_missing(n, "no kernels: the export has no CUDA kernel trace (nsys profile --trace=cuda)"))
		return -1;
	if (!n->has_rows[T_RUNTIME] &&
	    add_missing(n, "no CUDA API calls: activities are placed in steps by their GPU start"))
		return -1;
	if (!n->has_rows[T_NVTX] &&
	    add_missing(n, "no NVTX ranges: no range paths, and steps are cut by the launch period"))
		return -1;
	if (!n->has_rows[T_MEMORY] &&
	    add_missing(n, "no allocations: memory reports empty (nsys profile --cuda-memory-usage=true records them)"))
		return -1;
	if (add_missing(n, "no ops: Nsight Systems records no framework ops (summary --by op, flops have none)"))
		return -1;
	if (!has_device && add_missing(n, "no device facts: TARGET_INFO_GPU is absent"))
		return -1;
	if (add_missing(n, "no FLOP/s peaks: the export gives the device's memory bandwidth at most"))
		return -1;
	if (nccl && !nccl_payloads &&
	    add_missing(n, "no NCCL payloads: the communicator and message size of collectives are unknown"))
		return -1;
	if (processes > 1 &&
	    add_missing(n, "%" PRId64 " other processes left out: this bundle is pid %" PRId64 " (the most kernels)",
			processes - 1, n->pid))
		return -1;
	return 0;
}

/* Whether any NCCL range has a JSON payload to read. */
static int have_nccl_payloads(struct nsys *n, bool *yes)
{
	const char *t = table_names[T_NVTX];
	char sql[512];
	int64_t v = 0;

	*yes = false;
	for (size_t i = 0; i < n->n_domains; i++) {
		if (!n->domains[i].nccl)
			continue;
		bool json = has_column(n, t, "jsonText"), json_id = has_column(n, t, "jsonTextId");
		if (!json && !json_id)
			return 0;
		snprintf(sql, sizeof(sql), "SELECT EXISTS (SELECT 1 FROM \"%s\" WHERE \"domainId\" = %" PRId64 " AND (%s OR %s))",
			 t, n->domains[i].id, json ? "\"jsonText\" IS NOT NULL" : "0",
			 json_id ? "\"jsonTextId\" IS NOT NULL" : "0");
		if (query_int(n, sql, 0, &v, NULL))
			return -1;
		if (v)
			*yes = true;
	}
	return 0;
}

static int64_t session_start(struct nsys *n)
{
	int64_t v = 0;

	if (table_exists(n, "TARGET_INFO_SESSION_START_TIME") &&
	    has_column(n, "TARGET_INFO_SESSION_START_TIME", "utcEpochNs") &&
	    query_int(n, "SELECT \"utcEpochNs\" FROM TARGET_INFO_SESSION_START_TIME", 0, &v, NULL))
		return -1;
	return v >= 0 && (uint64_t)v < TIME_LIMIT ? v : 0;
}

/* ---- the import ----------------------------------------------------------------- */

static void warn_skipped(const struct nsys *n)
{
	for (int t = 0; t < T_COUNT; t++)
		if (n->skipped[t])
			warning("'%s': %" PRIu64 " rows of %s skipped (a time that is NULL, not an integer, negative, "
				"before its start or past 2^62 ns)",
				n->path, n->skipped[t], table_names[t]);
	if (n->missing_strings)
		warning("'%s': %" PRIu64 " string ids not in StringIds: named \"[nsys string N]\"", n->path,
			n->missing_strings);
	if (n->open_ranges)
		warning("'%s': %" PRIu64 " NVTX ranges without an end left out", n->path, n->open_ranges);
}

static const char *base_name(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

static int import_events(struct nsys *n)
{
	if (n->has_rows[T_NVTX] && choose_step_name(n))
		return -1;
	if ((n->has_rows[T_KERNEL] && import_kernels(n)) || (n->has_rows[T_MEMCPY] && import_copies(n, T_MEMCPY)) ||
	    (n->has_rows[T_MEMSET] && import_copies(n, T_MEMSET)) || (n->has_rows[T_RUNTIME] && import_api(n, T_RUNTIME)) ||
	    (n->has_rows[T_DRIVER] && import_api(n, T_DRIVER)) || (n->has_rows[T_SYNC] && import_syncs(n)) ||
	    (n->has_rows[T_MEMORY] && import_memory(n)) || (n->has_rows[T_NVTX] && import_nvtx(n)))
		return -1;
	if (n->failed)
		return -1;
	if (!n->events)
		return error("'%s' holds nothing to import: every row was skipped", n->path);
	return write_steps(n);
}

static int run(struct nsys *n, const char *out_path)
{
	Steptrace__Header hdr = STEPTRACE__HEADER__INIT;
	Steptrace__DeviceInfo dev = STEPTRACE__DEVICE_INFO__INIT;
	char dev_name[256] = "", from[512], line[600];
	int64_t processes, base;
	bool nccl_payloads = false, any = false;
	int rc;

	if (survey(n))
		return -1;
	for (int t = 0; t < T_COUNT; t++)
		any |= n->tables[t];
	if (!any)
		return error("'%s' is not an Nsight Systems export: it has none of its CUPTI_ACTIVITY_KIND_*, "
			     "NVTX_EVENTS or CUDA_GPU_MEMORY_USAGE_EVENTS tables",
			     n->path);
	if (!n->has_rows[T_KERNEL] && !n->has_rows[T_MEMCPY] && !n->has_rows[T_MEMSET] &&
	    !n->has_rows[T_RUNTIME] && !n->has_rows[T_DRIVER] && !n->has_rows[T_NVTX])
		return error("'%s' holds nothing to import: no kernel, copy, API call or NVTX range", n->path);
	if (strings_open(n) || choose_process(n, &processes) || main_thread(n))
		return -1;
	if ((rc = read_device(n, &dev, dev_name, sizeof(dev_name))) < 0 || (base = session_start(n)) < 0)
		return -1;
	if (n->has_rows[T_NVTX] && (read_domains(n) || have_nccl_payloads(n, &nccl_payloads)))
		return -1;
	if (n->failed || list_missing(n, rc == 0, processes, nccl_payloads))
		return -1;

	snprintf(from, sizeof(from), "nsys: %s", base_name(n->path));
	snprintf(line, sizeof(line), "nsys export %s", base_name(n->path));
	hdr.command_line = line;
	hdr.clock = "nsys";
	hdr.time_base_ns = (uint64_t)base;
	hdr.created_unix_ns = base;
	hdr.pid = n->pid >= 0 && n->pid <= UINT32_MAX ? (uint32_t)n->pid : 0;
	hdr.api_calls = "all";
	hdr.device = &dev;
	hdr.imported_from = from;
	hdr.n_import_missing = n->n_missing;
	hdr.import_missing = n->missing;
	if (rc == 0)
		dev.peak_note = "memory bandwidth from nsys's TARGET_INFO_GPU; no FLOP/s peaks";
	if (!(n->w = bundle_writer_open(out_path, &hdr, NULL)))
		return -1;
	if (import_events(n)) {
		bundle_writer_discard(n->w);
		n->w = NULL;
		return -1;
	}
	warn_skipped(n);
	rc = bundle_writer_close(n->w, "ok");
	n->w = NULL;
	return rc;
}

static void nsys_release(struct nsys *n)
{
	sqlite3_finalize(n->str_stmt);
	sqlite3_close(n->db);
	for (size_t i = 0; i < n->n_missing; i++)
		free(n->missing[i]);
	for (size_t i = 0; i < n->n_domains; i++)
		free(n->domains[i].text);
	free(n->domains);
	free(n->cache);
	free(n->steps);
}

int import_nsys(const char *sqlite_path, const char *out_path)
{
	struct nsys n = { .path = sqlite_path, .pid = -1, .step_name = -1, .t_min = UINT64_MAX };
	int ret;

	if (sqlite3_open_v2(sqlite_path, &n.db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
		ret = error("cannot open '%s': %s", sqlite_path, n.db ? sqlite3_errmsg(n.db) : "out of memory");
		nsys_release(&n);
		return ret;
	}
	sqlite3_db_config(n.db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
	sqlite3_db_config(n.db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
	sqlite3_db_config(n.db, SQLITE_DBCONFIG_ENABLE_TRIGGER, 0, NULL);
	sqlite3_db_config(n.db, SQLITE_DBCONFIG_ENABLE_VIEW, 0, NULL);
	sqlite3_limit(n.db, SQLITE_LIMIT_LENGTH, 16 << 20);   /* a value of 16 MiB at most */
	ret = run(&n, out_path);
	nsys_release(&n);
	return ret;
}
