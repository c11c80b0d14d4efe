/*
 * bundle.h: the one module that owns the trace bundle format.
 *
 * The writer streams events into zstd-compressed tar members of
 * proto/steptrace.proto; the reader hands them back one at a time with
 * absolute times, whatever chunk they came from. Nothing else in steptrace
 * touches libarchive or the generated protobuf-c code for events; the header
 * and footer messages are exposed read-only because reports print them.
 *
 * Errors: functions return -1 (or NULL) after printing one line through
 * error() (cli/error.h); the command layer decides to exit.
 */
#ifndef STEPTRACE_TRACE_BUNDLE_H
#define STEPTRACE_TRACE_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "steptrace.pb-c.h"

#define BUNDLE_FORMAT_MAJOR 1
#define BUNDLE_FORMAT_MINOR 1

/* Event kinds; the numbers are the Event oneof field numbers of the schema. */
enum st_kind {
	ST_KERNEL = 3,
	ST_MEMCPY = 4,
	ST_MEMSET = 5,
	ST_API = 6,
	ST_RANGE = 7,
	ST_ALLOC = 8,
	ST_FREE = 9,
	ST_OP = 10,
	ST_STEP = 11,
	ST_OOM = 12,
	ST_OVERHEAD = 13,
	ST_SYNC = 14,
};
#define ST_KIND_FIRST ST_KERNEL
#define ST_KIND_LAST ST_SYNC
#define ST_KIND_COUNT (ST_KIND_LAST + 1)

/* "kernel", "memcpy", ... (the schema's oneof field names); NULL if unknown. */
const char *st_kind_name(int kind);
/* Inverse of st_kind_name; -1 if unknown. */
int st_kind_from_name(const char *name);

/* Same numbering as the schema's MemCategory / DType enums. */
enum st_mem_category {
	ST_MEM_UNKNOWN = 0,
	ST_MEM_PARAMETER = 1,
	ST_MEM_GRADIENT = 2,
	ST_MEM_OPTIMIZER = 3,
	ST_MEM_ACTIVATION = 4,
	ST_MEM_TEMPORARY = 5,
	ST_MEM_WORKSPACE = 6,
	ST_MEM_INPUT = 7,
};
#define ST_MEM_CATEGORY_COUNT 8
const char *st_mem_category_name(int category); /* "parameter", "gradient", "optimizer", ... */

enum st_dtype {
	ST_DT_UNKNOWN = 0, ST_DT_F32 = 1, ST_DT_BF16 = 2, ST_DT_F16 = 3,
	ST_DT_I32 = 4, ST_DT_I64 = 5, ST_DT_F64 = 6, ST_DT_U8 = 7,
};
const char *st_dtype_name(int dtype); /* "f32", "bf16", ... */

enum st_mem_source { ST_SRC_MODEL = 0, ST_SRC_DRIVER = 1 };

#define ST_OP_MAX_INPUTS 8
#define ST_OP_MAX_OUTPUTS 4

/*
 * One event, decoded. Times are absolute ns on the bundle's clock (since
 * Header.time_base_ns); string fields are ids into the bundle's string table
 * (0 = none). Correlation ids are absolute.
 */
struct st_event {
	int kind; /* enum st_kind */
	uint64_t start, end;
	union {
		struct {
			uint32_t name, grid[3], block[3], registers;
			uint32_t static_smem, dynamic_smem, stream, device, op;
			uint64_t correlation;
		} kernel;
		struct {
			uint32_t copy_kind, src_kind, dst_kind, stream, device, op;
			uint64_t bytes, correlation;
		} memcpy;
		struct {
			uint32_t value, stream, device, op;
			uint64_t bytes, correlation;
		} memset;
		struct {
			uint32_t name, domain, cbid; /* domain: 0 runtime, 1 driver */
			int32_t status;
			uint64_t thread, correlation;
		} api;
		struct {
			uint32_t name, depth, domain;
			uint64_t thread;
		} range;
		struct { /* ST_ALLOC and ST_FREE */
			uint64_t address, size;
			uint32_t category, op, source, device;
		} mem;
		struct {
			uint32_t id, name, path, kind, phase;
			uint64_t flops, bytes;
			uint8_t n_inputs, n_outputs;
			uint8_t inputs[ST_OP_MAX_INPUTS], outputs[ST_OP_MAX_OUTPUTS];
		} op;
		struct {
			uint32_t index;
			bool warmup;
			uint64_t thread;
		} step;
		struct {
			uint64_t requested, live_bytes, capacity;
			uint32_t category, op, step;
		} oom;
		struct {
			uint32_t kind;
			uint64_t thread;
		} overhead;
		struct {
			uint32_t type, stream;
			uint64_t thread, correlation;
		} sync;
	};
};

/* ---- writer ---------------------------------------------------------- */

struct bundle_writer;

struct bundle_writer_options {
	size_t chunk_bytes;   /* flush a chunk when its encoding reaches this; 0 = 4 MiB */
	int zstd_level;       /* 0 = default (3) */
};

/*
 * Creates `path` and writes the header member. `hdr` is copied; format
 * version and tool version are filled in by the writer. Returns NULL on error.
 */
struct bundle_writer *bundle_writer_open(const char *path, const Steptrace__Header *hdr,
					 const struct bundle_writer_options *opt);

/* Interns a string; returns its id (>= 1; 0 for NULL or ""). Ids are stable. */
uint32_t bundle_writer_intern(struct bundle_writer *w, const char *s);

/* Appends one event (copied). Flushes a chunk when full. -1 on write error. */
int bundle_writer_add(struct bundle_writer *w, const struct st_event *ev);

/* Counts records the source dropped, per kind, for the footer. */
void bundle_writer_count_dropped(struct bundle_writer *w, int kind, uint64_t n);

/* Writes pending strings and events as members now (a crash after this loses nothing before it). */
int bundle_writer_flush(struct bundle_writer *w);

/*
 * Flushes, writes the footer (complete = true, with `end_reason`, e.g. "ok"
 * or "oom") and closes the archive. Frees `w` whatever happens. -1 on error.
 */
int bundle_writer_close(struct bundle_writer *w, const char *end_reason);

/*
 * Closes without a footer, as a crash would leave it only tidier: flushes
 * what it has and closes the archive. For signal paths and tests.
 */
void bundle_writer_abort(struct bundle_writer *w);

/* ---- reader ---------------------------------------------------------- */

/*
 * A reader belongs to one thread at a time. Behind bundle_reader_next() it
 * decodes chunks ahead on worker threads of its own (started by the first
 * call, stopped and joined by bundle_reader_free(), not used for bundles
 * under 256 KiB); what the functions below return, and every message, is as
 * if reading were sequential.
 */
struct bundle_reader;

/*
 * Opens a bundle and reads its header. Refuses a newer major version, a file
 * that is not a zstd tar, or one whose first member is not a header.
 * Returns NULL after printing one error line naming `path`.
 */
struct bundle_reader *bundle_reader_open(const char *path);

/* The decoded header; owned by the reader. */
const Steptrace__Header *bundle_reader_header(const struct bundle_reader *r);

/*
 * Next event into *ev. Returns 1 for an event, 0 at the end, -1 on an error
 * that ends reading (one line printed). A truncated or footer-less bundle
 * ends with 0 and bundle_reader_truncated() true; events before the cut are
 * all delivered.
 */
int bundle_reader_next(struct bundle_reader *r, struct st_event *ev);

/* A string by id; "" for 0, NULL for an id not (yet) defined. Owned by the reader. */
const char *bundle_reader_string(const struct bundle_reader *r, uint32_t id);
uint32_t bundle_reader_string_count(const struct bundle_reader *r); /* ids are < this */

/* After reading to the end: the footer, or NULL when the bundle has none. */
const Steptrace__Footer *bundle_reader_footer(const struct bundle_reader *r);

/* True when the bundle ended early (no footer, cut member, bad trailing data). */
bool bundle_reader_truncated(const struct bundle_reader *r);
/* Why it ended early, for the warning line; NULL when it did not. */
const char *bundle_reader_truncation(const struct bundle_reader *r);

/* Chunks and events read so far. */
uint32_t bundle_reader_chunks(const struct bundle_reader *r);
uint64_t bundle_reader_events(const struct bundle_reader *r);

const char *bundle_reader_path(const struct bundle_reader *r);

void bundle_reader_free(struct bundle_reader *r);

#endif
