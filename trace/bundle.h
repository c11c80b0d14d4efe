/*
 * bundle.h: the one module that owns the trace bundle format.
 *
 * The writer streams events into zstd-compressed tar members of
 * proto/steptrace.proto; the reader hands them back one at a time with
 * absolute times, whatever chunk they came from. Nothing else in steptrace
 * touches libarchive or the generated protobuf-c code for events; the header
 * and footer messages are exposed read-only for the recorder, which fills
 * the header, and for replay, which turns both into the run's facts
 * (struct replay_run): reports never see them.
 *
 * Errors: functions return -1 (or NULL) after printing one line through
 * error() (lib/error.h); the command layer decides to exit.
 */
#ifndef STEPTRACE_TRACE_BUNDLE_H
#define STEPTRACE_TRACE_BUNDLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "steptrace.pb-c.h"
#include "trace/types.h"

#define BUNDLE_FORMAT_MAJOR 1
#define BUNDLE_FORMAT_MINOR 12

/* ---- writer ---------------------------------------------------------- */

struct bundle_writer;

struct bundle_writer_options {
	size_t chunk_bytes;   /* flush a chunk when its encoding reaches this; 0 = 4 MiB */
	int zstd_level;       /* 0 = default (3) */
};

/*
 * Starts the bundle `path` and writes the header member. The bundle is
 * written through lib/output.h: under a temporary name beside `path`
 * (bundle_writer_file) until bundle_writer_close or _abort renames it onto
 * `path`, so a process that dies first leaves that temporary file, readable
 * up to its last whole chunk, and `path` as it was. `hdr` is copied; format
 * version and tool version are filled in by the writer. Returns NULL on error.
 */
struct bundle_writer *bundle_writer_open(const char *path, const Steptrace__Header *hdr,
					 const struct bundle_writer_options *opt);

/* The file being written: the temporary name until the bundle is closed. */
const char *bundle_writer_file(const struct bundle_writer *w);

/* Interns a string; returns its id (>= 1; 0 for NULL or ""). Ids are stable. */
uint32_t bundle_writer_intern(struct bundle_writer *w, const char *s);

/* Appends one event (copied). Flushes a chunk when full. -1 on write error. */
int bundle_writer_add(struct bundle_writer *w, const struct st_event *ev);

/* Counts records the source dropped, per kind, for the footer. */
void bundle_writer_count_dropped(struct bundle_writer *w, int kind, uint64_t n);

/* How the steps were found, for the footer's steps_from (copied; NULL or "" leaves it empty). */
void bundle_writer_set_steps_from(struct bundle_writer *w, const char *steps_from);

/*
 * The optimizer's parameter groups, for the footer's param_groups (1.8):
 * copied, at most ST_PARAM_GROUPS_MAX (the rest summed into the last); n 0
 * leaves none. -1 when out of memory.
 */
int bundle_writer_set_param_groups(struct bundle_writer *w, const struct st_param_group *g, size_t n);

/* CUPTI's cost per launch, for the footer's launch_cost (1.10); launches 0 leaves none. */
void bundle_writer_set_launch_cost(struct bundle_writer *w, const struct st_launch_cost *c);

/*
 * The wall times of the program's unrecorded steps before an armed window,
 * oldest first, for the footer's unrecorded_step_ns (1.11): copied, the
 * last ST_UNRECORDED_STEPS_MAX of them; n 0 leaves none.
 */
void bundle_writer_set_unrecorded_steps(struct bundle_writer *w, const uint64_t *ns, size_t n);
/* The recorder's own time while armed, over `span_ns` of the run before the window (1.11). */
void bundle_writer_set_armed_cost(struct bundle_writer *w, uint64_t recorder_ns, uint64_t span_ns);

/*
 * Flushes, writes the footer (complete = true, with `end_reason`, e.g. "ok"
 * or "oom"), closes the archive and renames the file onto its path. A write
 * that failed (a full disk) removes the temporary file instead and leaves
 * the path as it was. Frees `w` whatever happens. -1 on error.
 */
int bundle_writer_close(struct bundle_writer *w, const char *end_reason);

/*
 * Closes without a footer, as a crash would leave it only tidier: flushes
 * what it has, closes the archive and renames the file onto its path (unless
 * a write failed). For exit paths and tests.
 */
void bundle_writer_abort(struct bundle_writer *w);

/* Gives up: removes the temporary file and leaves the path as it was (an import that failed). Frees `w`. */
void bundle_writer_discard(struct bundle_writer *w);

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

/*
 * A memory budget for reading, set before the first bundle_reader_next():
 * reading ends with one error line ("bundle 'x.stb' needs at least 5.10 GiB
 * of memory ..., over the limit of 4.00 GiB: raise it with --memory-limit")
 * before an allocation would take what it needs over `limit` bytes (0: no
 * limit; without a call, memory_limit_default() of lib/memlimit.h and no
 * per-event cost). What it counts: the strings, the buffers of the members
 * and of the decoded chunks, and `per_event` bytes for every event read,
 * what the caller keeps of each (replay's cost), all known before the
 * allocations (member sizes from the archive, event counts from a scan of
 * each chunk). `why`, when not NULL, says what the limit is, in parentheses
 * after it ("the default for a bundle of 12.7 KiB"); copied.
 */
void bundle_reader_set_budget(struct bundle_reader *r, uint64_t limit, uint64_t per_event, const char *why);
/* What the budget has counted so far, in bytes. */
uint64_t bundle_reader_memory(const struct bundle_reader *r);
/*
 * What of that stays once reading is done: the strings and the caller's
 * per_event bytes, not the members' and decoded chunks' buffers, which are
 * freed then (what the next bundle of a run of many ranks may still use).
 */
uint64_t bundle_reader_memory_kept(const struct bundle_reader *r);

/* The decoded header; owned by the reader. */
const Steptrace__Header *bundle_reader_header(const struct bundle_reader *r);

/*
 * Next event into *ev. Returns 1 for an event, 0 at the end, -1 on an error
 * that ends reading (one line printed). A truncated or footer-less bundle
 * ends with 0 and bundle_reader_truncated() true; events before the cut are
 * all delivered.
 */
int bundle_reader_next(struct bundle_reader *r, struct st_event *ev);

/*
 * A string by id; "" for 0, NULL for an id not (yet) defined. Owned by the
 * reader. A string of the bundle longer than BUNDLE_NAME_MAX bytes is kept
 * to its first bytes, cut at a UTF-8 character, and "..." (BUNDLE_NAME_MAX
 * in all at most): every report hashes, compares or prints names per event,
 * and a bundle of a few kilobytes can hold names of megabytes.
 */
#define BUNDLE_NAME_MAX 4096
const char *bundle_reader_string(const struct bundle_reader *r, uint32_t id);
uint32_t bundle_reader_string_count(const struct bundle_reader *r); /* ids are < this */

/* After reading to the end: the footer, or NULL when the bundle has none. */
const Steptrace__Footer *bundle_reader_footer(const struct bundle_reader *r);

/*
 * True when the bundle ended early: no footer, a cut member, a zstd frame
 * without its end (a cut in its last bytes), or data after the frame's end
 * (garbage, a second bundle).
 */
bool bundle_reader_truncated(const struct bundle_reader *r);
/* Why it ended early, for the warning line; NULL when it did not. */
const char *bundle_reader_truncation(const struct bundle_reader *r);

/* Chunks and events read so far. */
uint32_t bundle_reader_chunks(const struct bundle_reader *r);
uint64_t bundle_reader_events(const struct bundle_reader *r);

const char *bundle_reader_path(const struct bundle_reader *r);

void bundle_reader_free(struct bundle_reader *r);

#endif
