/*
 * info.h: what a bundle is: its header (format, tool, command line, run
 * configuration, device and peaks with their source), its footer (complete
 * or not, why it ended, how the steps were found when it says: "steps
 * from", with the recorder's word beside the replay's when replay found
 * them itself), event counts per kind as the footer states them
 * and as read, dropped records (loudly: also a warning line), truncation.
 */
#ifndef STEPTRACE_ANALYZE_INFO_H
#define STEPTRACE_ANALYZE_INFO_H

#include "lib/table.h"
#include "replay/replay.h"

/* Adds the header, footer and counts tables and the notes to r. 0. */
int info_run(const struct replay *rp, struct report *r);

#endif
