/* sqlite.h: private to export/. `export --format sqlite` (sqlite.c). */
#ifndef STEPTRACE_EXPORT_SQLITE_H
#define STEPTRACE_EXPORT_SQLITE_H

#include <stdbool.h>
#include "export/options.h"
#include "replay/replay.h"

/* The replay as one database written to output. -1 after an error line. */
int export_sqlite_run(const struct replay *rp, const struct export_options *opt, const char *output);

/* Whether the file at path is a database export_sqlite_run wrote (its RUN, STEPS and OPS tables). */
bool export_sqlite_is_ours(const char *path);

#endif
