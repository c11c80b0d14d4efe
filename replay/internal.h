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
	size_t cap_ranges, cap_ops, cap_steps, cap_mem, cap_others, cap_costs;
	struct st_param_group *param_groups;   /* run.param_groups points here */
	bool strings_owned;             /* rp->strings is ours (not the reader's table) */
	const char **path_strs;         /* n_paths, each NULL until replay_path_str() builds it */
	uint16_t *path_head;            /* n_paths: the bytes before a cut path's "...", UINT16_MAX uncut */
	/*
	 * Jump pointers over the range tree (project.c): for each range an
	 * ancestor (-1: past the root) whose depth depends only on its own, and
	 * the latest end among the ranges from it up to that ancestor
	 * (excluded): searches up the tree take O(log depth), not O(depth).
	 */
	int32_t *jump;
	uint64_t *jump_end;
	bool built;
};

/*
 * Walking each activity's chain of ranges costs its depth: little for the
 * trees real recordings make (a few levels), 4 billion steps for 4,096
 * nested ranges over a million launches. Beyond this many steps per
 * activity and range, project.c's sweep computes the same in
 * O((activities + ranges) log).
 */
#define WALK_STEPS_PER_ITEM 16

char *replay_arena_strdup(struct replay *rp, const char *s, size_t len);
/*
 * s when it is valid UTF-8, else its copy in the arena with each invalid
 * subpart replaced by U+FFFD (lib/utf8.h): "" after an error line when out
 * of memory. Every string a bundle gives goes through here.
 */
const char *replay_utf8(struct replay *rp, const char *s);
/* rp->run from the header and footer (either may be NULL); see run.c. */
void replay_run_fill(struct replay *rp, const Steptrace__Header *h, const Steptrace__Footer *f);
/*
 * Sorts the ranges by (start, recorded depth), stably; remap (NULL, or
 * n_ranges entries) receives each range's new index by its old one.
 * -1 with an error line when out of memory.
 */
int replay_sort_ranges(struct replay *rp, int32_t *remap);
/* Tree, paths, steps of a launch period (period.h), projection: the second half of replay_build. */
int replay_project(struct replay *rp);

#endif
