/*
 * events.h: `steptrace replay`'s listing: the rebuilt event stream in time
 * order, one line per event with its context (time, kind, duration, stream
 * or thread, live memory, range path, name), like `perf script`; filtered
 * by kind, range path and time window. A memory tag (ST_MEMTAG) is a line of
 * kind "tag": its size, category and address, and whether it named no live
 * block (replay/memory.h, Categories).
 *
 * The listing streams: a merge of replay's sorted arrays, integer-only
 * formatting and one big stdio buffer, so a million events print in well
 * under a second.
 */
#ifndef STEPTRACE_ANALYZE_EVENTS_H
#define STEPTRACE_ANALYZE_EVENTS_H

#include <stdbool.h>

#include "lib/table.h"
#include "replay/replay.h"

struct events_opts {
	bool kind_ok[ST_KIND_COUNT];   /* the kinds listed, by enum st_kind */
	const char *range;             /* only events under this NVTX path pattern, NULL: all */
	double from_ms, to_ms;         /* the window, ms since the first event; -1: open */
	int view;                      /* enum mem_view of the live-memory column */
	int format;                    /* enum out_format: text columns, or csv/json/md rows */
	bool full_names;               /* kernel names whole, not base names (analyze/common.h) */
};

/*
 * Writes the listing to stdout: fixed text columns (live memory in MiB), or
 * one row per event in csv, json or md (live memory in bytes), streamed as
 * it goes. 0, or -1 after an error line.
 */
int events_list(const struct replay *rp, const struct events_opts *o);

/*
 * A kind's name in the listing (and for --kind): st_kind_name's, but "tag"
 * for ST_MEMTAG; and back, -1 for none.
 */
const char *events_kind_name(int kind);
int events_kind_from_name(const char *name);

#endif
