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

/*
 * A note for reports that sum work by module (replay_counts_modules): on a
 * bundle whose module ranges are on a sample of its steps, how many of the
 * counted steps have them (phases_all: the report counts steps, phases and
 * ranges other than modules in every step, the modules in those); nothing
 * on any other bundle.
 */
void module_steps_note(const struct replay *rp, bool include_warmup, bool phases_all, struct report *r);

/* ---- kernel names for people ------------------------------------------ */

/* The widest a shortened kernel name prints: a long one is cut in the middle ("..."). */
#define KERNEL_NAME_WIDTH 60

/*
 * A kernel's base name, as Nsight Systems shows base names: its demangled
 * signature without the return type, template argument lists and
 * parameter list ("void at::native::vectorized_elementwise_kernel<8, ...>
 * (int, ...)" -> "at::native::vectorized_elementwise_kernel"); a name
 * without a parameter list (nvjet_sm90_..., triton_..., a CUTLASS or
 * cuDNN generated name, "[CUDA memcpy ...]") as it is. Into buf (cut to
 * len - 1 bytes); returns buf.
 */
const char *kernel_base_name(const char *name, char *buf, size_t len);

/*
 * The names the rows of one table print for their kernels (summary, diff,
 * replay): base names fitted to a width, and where two distinct
 * kernels would print alike (the rows stay apart, they are distinct keys),
 * their template arguments each reduced to its base name
 * ("swiglu_forward_kernel<float>", "...<8, CUDAFunctor_add, array>"),
 * cut where they still differ, then, where still alike, " #1", " #2". With
 * `whole` (--full-names, and csv and json, which programs read), every
 * name as it is.
 */
struct kernel_names {
	const char **full;          /* the distinct names, sorted */
	char **shown;               /* what each prints; owned */
	size_t n;
	size_t width;               /* the widest a shortened name prints */
};

/*
 * names[0..n): the kernels of the table, repeats allowed; width: the widest
 * a name prints, KERNEL_NAME_WIDTH but where a table has less room (at
 * least 20). 0, or -1 after an error line.
 */
int kernel_names_init(struct kernel_names *kn, const char *const *names, size_t n, size_t width,
		      bool whole);
/* What `name` prints as; `name` itself when it is not one of the table's. */
const char *kernel_names_get(const struct kernel_names *kn, const char *name);
/* Whether any name prints other than whole; then a report says so in KERNEL_NAMES_NOTE. */
bool kernel_names_shortened(const struct kernel_names *kn);
#define KERNEL_NAMES_NOTE "kernel names shortened to their base names: --full-names prints them whole"
void kernel_names_release(struct kernel_names *kn);

/* Bytes in a MiB, for the MiB columns. */
#define MIB (1024.0 * 1024.0)

#endif
