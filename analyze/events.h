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
	bool kinds_given;              /* --kind named them (else: every kind) */
	const char *range;             /* only events under this NVTX path pattern, NULL: all */
	double from_ms, to_ms;         /* the window, ms since the first event; -1: open */
	int view;                      /* enum mem_view: whose allocations, frees and live memory; -1: see below */
	int format;                    /* enum out_format: text columns, or csv/json/md rows */
	bool full_names;               /* kernel names whole, not base names (analyze/common.h) */
};

/* The listing's output across the calls for the ranks of one run: one document. */
struct events_out {
	struct report *r;              /* csv, json, md: the one table, made by the first call */
	struct table *t;
	bool rank_column;              /* the table's first column is Rank */
	bool several;                  /* set by the caller: the bundles of several ranks are listed (a Rank column) */
	uint64_t listed;               /* events listed so far */
	uint64_t present;              /* events of the kinds asked (and the view) in the bundles */
	int ranks;                     /* bundles listed */
	bool failed;                   /* a listing failed (its error said): events_end writes nothing */
	bool cut;                      /* text: a range path was cut to fit TABLE_TEXT_WIDTH */
};

/*
 * Writes the listing of one bundle to stdout: fixed text columns (live
 * memory in MiB) under a header, or one row per event in csv, json or md
 * (live memory in bytes), streamed as it goes; a bundle of a run of
 * several ranks adds a first column, Rank. Allocations and frees are the
 * view's only (the same block is often recorded by both the model's
 * allocator and the driver): o->view, or without one the model
 * allocator's, the driver's when the model recorded none. 0, or -1 after
 * an error line. `out` starts zeroed; events_end closes it.
 */
int events_list(const struct replay *rp, const struct events_opts *o, struct events_out *out);
/*
 * Ends the listing: JSON's closing and, when no event was listed, one line
 * saying why (the bundle has no event of the kinds asked, "no oom event:
 * the run never ran out of memory", or the filters left none): in the
 * text format on stdout, a note in the others. Frees out's contents. 0, or
 * -1 after an error line (a failed write).
 */
int events_end(struct events_out *out, const struct events_opts *o);

/*
 * A kind's name in the listing (and for --kind): st_kind_name's, but "tag"
 * for ST_MEMTAG; and back, -1 for none.
 */
const char *events_kind_name(int kind);
int events_kind_from_name(const char *name);

#endif
