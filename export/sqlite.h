/* sqlite.h: private to export/. `export --format sqlite` (sqlite.c). */
#ifndef STEPTRACE_EXPORT_SQLITE_H
#define STEPTRACE_EXPORT_SQLITE_H

#include "export/options.h"
#include "replay/replay.h"

/* The replay as one database written to output. -1 after an error line. */
int export_sqlite_run(const struct replay *rp, const struct export_options *opt, const char *output);

#endif
