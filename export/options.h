/*
 * options.h: what an export keeps and where it goes (export.h): the
 * options every writer of export/ reads, apart from the entry points that
 * dispatch to them.
 */
#ifndef STEPTRACE_EXPORT_OPTIONS_H
#define STEPTRACE_EXPORT_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

/* "json" is the name chrome had first: the same format. */
enum export_format { EXPORT_PERFETTO, EXPORT_CHROME, EXPORT_JSON, EXPORT_SQLITE };

struct export_options {
	int format;            /* enum export_format */
	int32_t step;          /* only this step's work (index into rp->steps); -1 = everything */
	const char *range;     /* only work under NVTX ranges matching this (--range); NULL = all */
	bool no_api;           /* leave host API calls out (smaller files) */
	uint64_t max_size;     /* export_run: refuse an output estimated larger; 0 = no limit */
	const char *output;    /* export_run: the file, "-" for stdout; NULL: the bundle's name
				  with .pftrace, .json or .sqlite, in the current directory */
	const char *per_rank;  /* export_run_ranks: a folder for one Chrome JSON file per rank,
				  rank-R.json, in Kineto's flavour (HTA's TraceAnalysis reads it);
				  NULL: one file */
};

#endif
