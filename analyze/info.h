/*
 * info.h: what a bundle is: its header (format, tool, command line, run
 * configuration, device and peaks with their source), its footer (complete
 * or not, why it ended, how the steps were found when it says: "steps
 * from", with the recorder's word beside the replay's when replay found
 * them itself), event counts per kind as the footer states them
 * and as read, dropped records (loudly: a note, beside the warning line
 * replay_load prints for every command), truncation.
 */
#ifndef STEPTRACE_ANALYZE_INFO_H
#define STEPTRACE_ANALYZE_INFO_H

#include "lib/table.h"
#include "replay/replay.h"

struct info_opts {
	/* values wider than this go on rows of their own, broken between words (0: never) */
	size_t wrap;
};

/* The text table's wrap: the command line, the peaks' note. */
#define INFO_WRAP 120

/* Adds the header, footer and counts tables and the notes to r. 0. */
int info_run(const struct replay *rp, const struct info_opts *o, struct report *r);

#endif
