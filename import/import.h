/*
 * import.h: traces of other tools made into bundles (`steptrace import`):
 * torch.profiler's (Kineto's Chrome JSON, plain or gzip'd, one file per
 * rank) and Nsight Systems' SQLite export (import/nsys.h). Which one a file
 * is comes from its first bytes, never its name. docs/import.md says what
 * each source becomes.
 *
 * Errors: -1 after one line through error() (lib/error.h).
 */
#ifndef STEPTRACE_IMPORT_IMPORT_H
#define STEPTRACE_IMPORT_IMPORT_H

#include <stdbool.h>
#include <stdint.h>

struct import_options {
	const char *output;          /* -o: the bundle, or RUN.stb for RUN.rankN.stb; NULL: from the input's name */
	bool force;                  /* replace an output that is not a bundle */
	const char *command_line;    /* for the header */
	bool quiet;                  /* no "wrote" lines */
};

/* Imports `paths` (files, or folders of *.pt.trace.json[.gz]). 0, or -1 after one line. */
int import_traces(const char *const *paths, int n, const struct import_options *o);

#endif
