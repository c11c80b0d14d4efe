/*
 * export.h: a replay written for other tools: traces for timeline viewers,
 * or a database for SQL.
 *
 *   perfetto  Perfetto's own protobuf trace (proto/perfetto_trace.proto), for
 *             ui.perfetto.dev: one track per GPU stream, one per host thread
 *             with its NVTX ranges nested and its API calls inside them,
 *             flows from each launch call to its kernel, a steps track, and
 *             counter tracks of live device memory by category.
 *   chrome    the JSON Trace Event Format (chrome://tracing, Perfetto too):
 *             complete "X" events in microseconds with the nanoseconds kept,
 *             "M" names, "C" memory counters, "s"/"f" launch flows.
 *   sqlite    one SQLite database with Nsight Systems' export tables and
 *             column names where they exist, plus OPS, ALLOCATIONS, STEPS
 *             and RUN (sqlite.c).
 *
 * The two traces walk one layout: every slice placed on a track so that
 * slices on a track nest properly (a slice that would overlap its neighbour
 * without nesting goes to an extra lane of its stream or thread), then
 * ordered by time. Every format keeps what --step, --range and --no-api
 * keep. Times are the bundle's, exact to the nanosecond.
 */
#ifndef STEPTRACE_EXPORT_EXPORT_H
#define STEPTRACE_EXPORT_EXPORT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "export/options.h"
#include "replay/ranks.h"
#include "replay/replay.h"

/* --max-size's default for a database: no bundle the default --memory-limit lets in needs more. */
#define EXPORT_SQLITE_MAX_SIZE (UINT64_C(4) << 30)

extern const char *const export_format_names[];   /* by enum export_format: "perfetto", "chrome", "json", "sqlite" */

struct export_stats {
	uint64_t tracks, slices, counters, flows;
	uint64_t extra_lanes;  /* lanes added for slices that did not nest */
};

/* Writes the trace (perfetto or chrome) to `out`. -1 after one error line. */
int export_write(const struct replay *rp, const struct export_options *opt, FILE *out,
		 struct export_stats *stats);

/*
 * `steptrace export`: estimates the size (refusing one above
 * opt->max_size, announcing a large one), writes opt->output through
 * lib/output.h (never the bundle itself; a failed write leaves the target
 * as it was), then says on stderr what was written and where to open it.
 * 0, or -1 after an error line.
 */
int export_run(const struct replay *rp, const struct export_options *opt);

/*
 * The same for the ranks of one run on several GPUs, into one trace: each
 * rank its own process ("rank R"), with its threads and GPUs, on the run's
 * time line (replay/ranks.h); the default output drops ".rankN" from rank
 * 0's name. A run of one rank is export_run's. SQLite takes one rank.
 */
int export_run_ranks(const struct replay_ranks *rs, const struct export_options *opt);

#endif
