/*
 * export.c: `steptrace export` (see export.h): the entry points. A trace
 * is laid out once (layout.c) and handed to its writer (perfetto.c,
 * chrome.c), after an estimate of its size; a database is sqlite.c's.
 */
#include "export/export.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/common.h"
#include "export/chrome.h"
#include "export/layout.h"
#include "export/perfetto.h"
#include "export/sqlite.h"
#include "lib/error.h"
#include "lib/human.h"
#include "lib/memlimit.h"
#include "lib/output.h"

const char *const export_format_names[] = { "perfetto", "chrome", "json", "sqlite", NULL };

static void layout_stats(const struct layout *L, struct export_stats *stats)
{
	memset(stats, 0, sizeof(*stats));
	stats->tracks = L->n_tracks;
	stats->slices = L->n_slices;
	stats->counters = L->n_counts;
	stats->extra_lanes = L->extra_lanes;
	for (size_t i = 0; i < L->n_slices; i++)
		if (L->slices[i].what == SL_API && export_launch_flow(L, &L->rp->apis[L->slices[i].idx]))
			stats->flows++;
}

static int layout_write(const struct layout *L, FILE *out)
{
	return L->opt->format == EXPORT_PERFETTO ? export_write_perfetto(L, out) : export_write_chrome(L, out);
}

int export_write(const struct replay *rp, const struct export_options *opt, FILE *out,
		 struct export_stats *stats)
{
	struct layout L;
	int rc;

	rc = export_layout_build(&L, rp, opt);
	if (rc == 0)
		rc = layout_write(&L, out);
	if (rc == 0 && stats)
		layout_stats(&L, stats);
	export_layout_release(&L);
	return rc;
}

/*
 * The default output (no -o) replaces only a file an export of steptrace
 * wrote: Chrome JSON whose first 4 KiB carry its otherData's generator,
 * a Perfetto trace whose first 4 KiB intern this exporter's annotation
 * names ("gpu time (ns)", "registers per thread"), a database with
 * steptrace's RUN, STEPS and OPS tables.
 */
static bool export_is_ours(const char *path, const char *head, void *ctx)
{
	int format = *(const int *)ctx;

	if (format == EXPORT_SQLITE)
		return export_sqlite_is_ours(path);
	if (format == EXPORT_PERFETTO)
		return strstr(head, "gpu time (ns)") && strstr(head, "registers per thread");
	return strstr(head, "\"generator\":\"steptrace export") != NULL;
}

static int check_default_output(const char *path, int format)
{
	return output_check_default(path, "an export", export_is_ours, &format, NULL);
}

static const char *const format_what[] = { "Perfetto trace", "Chrome JSON", "Chrome JSON" };
static const char *const format_ext[] = { ".pftrace", ".json", ".json", ".sqlite" };

int export_run(const struct replay *rp, const struct export_options *opt)
{
	const char *output = opt->output;
	struct export_stats stats;
	struct output out;
	struct layout L;
	char *owned = NULL;
	uint64_t estimate = 0, bytes;
	char size[32];
	int rc = -1;

	if (!output)
		output = owned = bundle_output_name(rp->path, NULL, format_ext[opt->format]);
	if (!output)
		return error("out of memory");
	if (!opt->output && check_default_output(output, opt->format) < 0) {
		free(owned);
		return -1;
	}
	if (opt->format == EXPORT_SQLITE) {
		rc = export_sqlite_run(rp, opt, output);
		free(owned);
		return rc;
	}
	if (export_layout_build(&L, rp, opt) < 0 ||
	    (opt->format == EXPORT_PERFETTO ? export_estimate_perfetto(&L, &estimate)
					    : export_estimate_chrome(&L, false, &estimate)) < 0 ||
	    export_check_size(opt, estimate, format_what[opt->format], output) < 0 ||
	    output_open(&out, output, (const char *[]){ rp->path, NULL }) < 0)
		goto out;
	if (layout_write(&L, out.f) < 0) {
		output_discard(&out);
		goto out;
	}
	bytes = output_bytes(&out);
	if (output_close(&out) < 0)
		goto out;
	rc = 0;
	layout_stats(&L, &stats);
	fprintf(stderr, "wrote '%s'", output);
	if (bytes)
		fprintf(stderr, " (%s)", human_bytes(size, sizeof(size), (double)bytes));
	fprintf(stderr, ": %" PRIu64 " tracks, %" PRIu64 " slices, %" PRIu64
		" counter values, %" PRIu64 " launch flows", stats.tracks, stats.slices,
		stats.counters, stats.flows);
	if (stats.extra_lanes)
		fprintf(stderr, " (%" PRIu64 " extra lanes for slices that overlap without nesting)",
			stats.extra_lanes);
	fprintf(stderr, "\n%s\n", opt->format == EXPORT_PERFETTO
		? "open it at https://ui.perfetto.dev (Open trace file); the file stays on your machine"
		: "open it at https://ui.perfetto.dev or chrome://tracing");
out:
	export_layout_release(&L);
	free(owned);
	return rc;
}

/* "runs/run.rank0.stb" -> "run" + ext: the run's name, without the rank. */
static char *run_output_name(const char *path, const char *ext)
{
	char *stem = bundle_output_name(path, NULL, ""), *dot, *end, *out;

	if (!stem)
		return NULL;
	dot = strrchr(stem, '.');
	if (dot && !strncmp(dot, ".rank", 5) && dot[5]) {
		strtol(dot + 5, &end, 10);
		if (!*end)
			*dot = '\0';
	}
	out = malloc(strlen(stem) + strlen(ext) + 1);
	if (out)
		sprintf(out, "%s%s", stem, ext);
	free(stem);
	return out;
}

/*
 * --per-rank DIR: each rank's trace in Kineto's flavour on the run's time
 * line, DIR/rank-R.json (R its rank; a bundle of its own is rank 0), as
 * Holistic Trace Analysis reads a run: one file per rank in a folder, its
 * rank in distributedInfo. The folder is made when missing.
 */
static int export_per_rank(const struct replay_ranks *rs, const struct export_options *opt)
{
	const char *dir = opt->per_rank;
	int64_t realtime = 0;
	uint64_t total = 0;
	int rc = 0;

	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		return error("cannot make the folder '%s': %s", dir, strerror(errno));
	for (size_t r = 0; r < rs->n; r++)
		if (rs->offset[r] == 0)
			realtime = rs->rank[r]->run.created_unix_ns;
	for (size_t r = 0; r < rs->n && rc == 0; r++) {
		const struct replay *rp = rs->rank[r];
		uint32_t rank = rs->n > 1 ? replay_ranks_rank(rs, r) : rp->run.world_size > 1 ? rp->run.rank : 0;
		struct layout_place place = { (int32_t)rank, rs->offset[r], realtime,
					      rp->run.pid && rp->run.pid <= INT32_MAX ? (int32_t)rp->run.pid
										: (1 << 22) + (int32_t)r, (uint32_t)r };
		struct export_stats stats;
		struct output out;
		struct layout L = { 0 };
		uint64_t estimate = 0, bytes = 0;
		char *path = malloc(strlen(dir) + 32), size[32];

		if (!path)
			return error("out of memory");
		sprintf(path, "%s/rank-%" PRIu32 ".json", dir, rank);
		rc = -1;
		if ((rs->n > 1 ? export_layout_build_placed(&L, rp, opt, &place) : export_layout_build(&L, rp, opt)) == 0 &&
		    export_estimate_chrome(&L, true, &estimate) == 0 &&
		    export_check_size(opt, estimate, "Chrome JSON", path) == 0 &&
		    output_open(&out, path, (const char *[]){ rp->path, NULL }) == 0) {
			if (export_write_chrome_kineto(&L, out.f) < 0) {
				output_discard(&out);
			} else {
				bytes = output_bytes(&out);
				rc = output_close(&out);
			}
		}
		if (rc == 0) {
			layout_stats(&L, &stats);
			total += stats.slices;
			fprintf(stderr, "wrote '%s' (%s): rank %" PRIu32 ", %" PRIu64 " slices, %" PRIu64
				" launch flows\n", path, human_bytes(size, sizeof(size), (double)bytes), rank,
				stats.slices, stats.flows);
		}
		export_layout_release(&L);
		free(path);
	}
	if (rc == 0)
		fprintf(stderr, "%zu rank%s as torch.profiler writes them: HolisticTraceAnalysis's "
			"TraceAnalysis(trace_dir=\"%s\") reads them\n", rs->n, rs->n == 1 ? "" : "s", dir);
	return rc;
}

int export_run_ranks(const struct replay_ranks *rs, const struct export_options *opt)
{
	const char *output = opt->output;
	struct layout *L = calloc(rs->n, sizeof(*L));
	const struct layout **view = calloc(rs->n, sizeof(*view));
	const char **inputs = calloc(rs->n + 1, sizeof(*inputs));
	struct export_stats stats, all = { 0 };
	struct output out;
	unsigned long long bytes;
	bool pids_clash = false;
	int64_t realtime = 0;
	uint64_t estimate = 0, one, claimed = 0;
	char *owned = NULL, size[32];
	size_t built = 0;
	int rc = -1;

	if (!L || !view || !inputs) {
		error("out of memory");
		goto out;
	}
	for (size_t r = 0; r < rs->n; r++)
		inputs[r] = rs->rank[r]->path;
	if (opt->per_rank) {
		rc = export_per_rank(rs, opt);
		goto out;
	}
	if (rs->n == 1) {
		rc = export_run(rs->rank[0], opt);
		goto out;
	}
	if (opt->format == EXPORT_SQLITE) {
		error("--format sqlite writes one rank's database: give one rank's bundle");
		goto out;
	}
	if (!output)
		output = owned = run_output_name(rs->rank[0]->path, format_ext[opt->format]);
	if (!output) {
		error("out of memory");
		goto out;
	}
	if (!opt->output && check_default_output(output, opt->format) < 0)
		goto out;
	/* the run's time 0 is its earliest-starting rank's, at that rank's real time */
	for (size_t r = 0; r < rs->n; r++) {
		if (rs->offset[r] == 0)
			realtime = rs->rank[r]->run.created_unix_ns;
		for (size_t q = 0; q < r; q++)
			pids_clash |= rs->rank[q]->run.pid == rs->rank[r]->run.pid;
	}
	for (size_t r = 0; r < rs->n; r++) {
		const struct replay *rp = rs->rank[r];
		struct layout_place place = { (int32_t)replay_ranks_rank(rs, r), rs->offset[r], realtime,
					      rp->run.pid && rp->run.pid <= INT32_MAX && !pids_clash
						      ? (int32_t)rp->run.pid : (1 << 22) + (int32_t)r, (uint32_t)r };

		built = r + 1;   /* released whether or not it was built whole */
		if (export_layout_build_placed(&L[r], rp, opt, &place) < 0)
			goto out;
		/* every rank's layout is held until the file is written: counted as each is built */
		{
			char what[80];

			snprintf(what, sizeof(what), "the trace of %zu ranks (rank %zu's layout)", rs->n, r);
			one = export_layout_bytes(&L[r]);
			if (memory_budget_claim(one, what) < 0)
				goto out;
			claimed += one;
		}
		view[r] = &L[r];
		if ((opt->format == EXPORT_PERFETTO ? export_estimate_perfetto(&L[r], &one)
						    : export_estimate_chrome(&L[r], false, &one)) < 0)
			goto out;
		estimate += one;
	}
	if (export_check_size(opt, estimate, format_what[opt->format], output) < 0 ||
	    output_open(&out, output, inputs) < 0)
		goto out;
	rc = 0;
	if (opt->format == EXPORT_PERFETTO) {
		for (size_t r = 0; r < rs->n && rc == 0; r++)
			rc = export_write_perfetto(&L[r], out.f);
	} else {
		rc = export_write_chrome_ranks(view, rs->n, out.f);
	}
	if (rc < 0) {
		output_discard(&out);
	} else {
		bytes = output_bytes(&out);
		rc = output_close(&out);
	}
	if (rc == 0) {
		for (size_t r = 0; r < rs->n; r++) {
			layout_stats(&L[r], &stats);
			all.tracks += stats.tracks;
			all.slices += stats.slices;
			all.counters += stats.counters;
			all.flows += stats.flows;
		}
		fprintf(stderr, "wrote '%s'", output);
		if (bytes)
			fprintf(stderr, " (%s)", human_bytes(size, sizeof(size), (double)bytes));
		fprintf(stderr, ": %zu ranks, each its own process, on one time line (%s): %" PRIu64
			" tracks, %" PRIu64 " slices, %" PRIu64 " counter values, %" PRIu64 " launch flows\n",
			rs->n, rs->alignment, all.tracks, all.slices, all.counters, all.flows);
		fprintf(stderr, "open it at https://ui.perfetto.dev%s\n",
			opt->format == EXPORT_PERFETTO ? " (Open trace file); the file stays on your machine"
						       : " or chrome://tracing");
	}
out:
	for (size_t r = 0; r < built; r++)
		export_layout_release(&L[r]);
	memory_budget_release(claimed);
	free(L);
	free(view);
	free(inputs);
	free(owned);
	return rc;
}
