/* internal.h: replay's builder state, shared by the files of replay/ only. */
#ifndef STEPTRACE_REPLAY_INTERNAL_H
#define STEPTRACE_REPLAY_INTERNAL_H

#include "replay/replay.h"
#include "trace/bundle.h"

struct arena_block {
	struct arena_block *next;
	size_t used, size;
	char data[];
};

struct replay_priv {
	struct bundle_reader *reader;
	struct arena_block *arena;      /* owned strings: copies, synthetic names, paths */
	size_t cap_strings, cap_activities, cap_kernel_cfg, cap_copies, cap_apis;
	size_t cap_ranges, cap_ops, cap_steps, cap_mem, cap_others;
	bool strings_owned;             /* rp->strings is ours (not the reader's table) */
	bool built;
};

char *replay_arena_strdup(struct replay *rp, const char *s, size_t len);
/* The run's facts from the header and footer (either may be NULL); see run.c. */
void replay_run_fill(struct replay_run *run, const Steptrace__Header *h, const Steptrace__Footer *f);
/* Tree, paths, projection, steps: the second half of replay_build. */
int replay_project(struct replay *rp);

#endif
