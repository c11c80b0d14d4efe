/*
 * diff.h: the page of a pair (diff.c): a (baseline) against b (rank 0 of
 * each when they are runs), computed once by page_pair_init (0, or -1
 * after an error line; release it either way) and written by
 * page_pair_write (ctx: the pair) as often as asked.
 */
#ifndef STEPTRACE_REPORT_DIFF_H
#define STEPTRACE_REPORT_DIFF_H

#include <jansson.h>
#include <stdio.h>

#include "lib/table.h"
#include "replay/ranks.h"
#include "replay/replay.h"
#include "report/page.h"

struct page_pair {
	const struct replay *a, *b;
	struct page_data da, db;
	struct report *diff;               /* diff_run's tables */
	json_t *doc;                       /* and their JSON, for the charts */
};
int page_pair_init(struct page_pair *p, const struct replay_ranks *a, const struct replay_ranks *b);
int page_pair_write(void *ctx, FILE *out);
void page_pair_release(struct page_pair *p);

#endif
