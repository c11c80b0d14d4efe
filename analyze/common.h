/*
 * common.h: what the reports share: Nsight-style statistics rows over
 * groups of durations (one helper for summary, ranges and the rest).
 */
#ifndef STEPTRACE_ANALYZE_COMMON_H
#define STEPTRACE_ANALYZE_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/stats.h"
#include "lib/table.h"
#include "replay/replay.h"

/* ---- groups of durations ----------------------------------------------- */

/* (key, duration) pairs accumulated by a report, then summarised per key. */
struct dur_collect {
	struct replay_key *keys;   /* key = group, idx = index into durs */
	uint64_t *durs;
	size_t n, alloc_keys, alloc_durs;
};

struct dur_group {
	uint64_t key;
	const char *name;          /* set by the caller before dur_groups_sort */
	struct dur_stats s;
	uint64_t extra[2];         /* the caller's own sums (e.g. GPU time per range path) */
};

struct dur_groups {
	struct dur_group *g;
	size_t n;
	uint64_t total;            /* sum over every group: the 100% of Time (%) */
};

void dur_collect_init(struct dur_collect *c);
int dur_collect_add(struct dur_collect *c, uint64_t key, uint64_t dur);
/* Groups by key (ascending) with dur_stats_compute on each; empties c. */
int dur_collect_groups(struct dur_collect *c, struct dur_groups *out);
void dur_collect_release(struct dur_collect *c);

/* Total time descending, then name ascending (Nsight's order). */
void dur_groups_sort(struct dur_groups *g);
void dur_groups_release(struct dur_groups *g);

/*
 * Nsight's statistics columns: Time (%), Total Time (ns), Instances,
 * Avg (ns), Med (ns), Min (ns), Max (ns), StdDev (ns). With per_step > 1
 * Total Time and Instances are divided by it (the others are per instance).
 */
void nsys_stat_columns(struct table *t, double per_step);
void nsys_stat_cells(struct table *t, const struct dur_stats *s, uint64_t grand_total, double per_step);

/* "12.345 ms" style helpers for notes */
double ns_to_ms(uint64_t ns);

/*
 * The default name of a file made from a bundle, in the current directory:
 * "runs/a.stb" -> "a" + ext; with a second bundle, "a-vs-b" + ext. Owned by
 * the caller; NULL when out of memory.
 */
char *bundle_output_name(const char *a, const char *b, const char *ext);

/*
 * Each step's label: the name of its outermost NVTX range on the step's
 * thread ("step" for the model's steps; the configuration's name, e.g.
 * "attn d64 seq4096 b8 h1 bf16 naive", in an attention sweep), "" where
 * none. An array of rp->n_steps strings owned by the replay (free the array
 * only), NULL after an error line. *differ: the labels are not all equal,
 * so a report should show them.
 */
const char **step_labels(const struct replay *rp, bool *differ);

/* Bytes in a MiB, for the MiB columns. */
#define MIB (1024.0 * 1024.0)

#endif
