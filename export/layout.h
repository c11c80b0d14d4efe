/*
 * layout.h: private to export/. The track layout that layout.c builds and
 * both trace writers walk (perfetto.c, chrome.c): tracks, slices placed on
 * them so that every track nests, counter values, and "marks" (slice
 * begins and ends, counter values, OOM instants) in time order; the
 * details of a slice both writers print; and the size estimates and check
 * every format makes before it writes.
 */
#ifndef STEPTRACE_EXPORT_LAYOUT_H
#define STEPTRACE_EXPORT_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "export/filter.h"
#include "export/intern.h"
#include "export/options.h"
#include "replay/memory.h"
#include "replay/replay.h"

#define OLD_BUNDLE_PID 1         /* the host's pid when the bundle does not say (before 1.2) */
#define STEPS_TID 0

/*
 * TK_PROCESS is the recording process (its real pid); TK_DEVICE a GPU, a
 * process of its own in Chrome (a pid after the host's range), a named
 * top-level track in Perfetto (no pid that could collide with a real one).
 */
enum track_kind { TK_PROCESS, TK_DEVICE, TK_THREAD, TK_CHILD, TK_COUNTER };

struct xtrack {
	uint64_t uuid, parent;        /* parent 0: a root; uuids derive from the bundle's identity */
	char *name;                   /* owned */
	uint8_t kind;
	int32_t pid, tid;             /* processes and threads; Chrome: every slice track */
};

enum slice_what { SL_ACTIVITY, SL_RANGE, SL_API, SL_STEP };

struct xslice {
	uint64_t start, end;
	uint32_t track, idx;          /* idx into the replay array of `what` */
	uint8_t what;
};

enum mark_type { MK_BEGIN, MK_END, MK_COUNTER, MK_INSTANT };

struct xmark {
	uint32_t ref;                 /* slice, counter value or OOM (rp->mem) index */
	uint8_t type;
};

/* One value of one counter track. */
struct xcount {
	uint64_t t;
	int64_t value;
	uint32_t track;
	uint16_t series;              /* Chrome: the series within its counter */
	uint16_t group;               /* Chrome: one "C" event per (group, t) */
};

/* One export: everything the writers walk. */
struct layout {
	const struct replay *rp;
	const struct export_options *opt;
	struct export_filter filter;
	struct xtrack *tracks;
	size_t n_tracks, cap_tracks;
	struct xslice *slices;
	size_t n_slices, cap_slices;
	struct xmark *marks;
	struct replay_key *keys;      /* key = time, idx = mark */
	size_t n_marks, cap_marks, cap_keys;
	struct xcount *counts;
	size_t n_counts, cap_counts;
	uint8_t *act_kept;            /* per activity: exported */
	uint32_t *gpu_track;          /* by device & 0xffff: its process's track + 1, 0 none yet */
	int32_t *thread_tid;          /* per rp->threads */
	uint32_t *thread_track;       /* per rp->threads: its track */
	int32_t next_tid;             /* Chrome tids of extra lanes */
	uint64_t extra_lanes;
	/* memory counters: per view, total + per category track (UINT32_MAX none) */
	uint32_t mem_track[2][ST_MEM_CATEGORY_COUNT + 1];
	int mem_device;
	uint32_t steps_track;         /* OOM instants go there */
	uint64_t identity;            /* hash of the header's created time, host and pid */
	int32_t host_pid;             /* the run's pid, or OLD_BUNDLE_PID */
	int32_t gpu_pid_base;         /* Chrome pid of GPU n: base + n, never the host's */
	/* one of several ranks (export_run_ranks): its place in the run's trace */
	int32_t rank;                 /* -1 for a bundle of its own */
	int64_t shift;                /* ns added to every time written: the run's time line */
	int64_t realtime_base;        /* CLOCK_REALTIME at written time 0 (Perfetto's clock snapshot) */
	uint32_t place;               /* its place among the run's ranks, 0 first: its flows' ids */
};

/*
 * The bytes a built layout holds (its arrays as allocated): what a trace of
 * several ranks claims from the analysis budget for each rank's
 * (lib/memlimit.h), all of them held until the file is written.
 */
uint64_t export_layout_bytes(const struct layout *L);

/* Where a rank's layout goes in a trace of several ranks. */
struct layout_place {
	int32_t rank;
	int64_t shift, realtime_base;
	int32_t host_pid;             /* its process's pid in the trace */
	uint32_t place;               /* its place among the run's ranks (rs->rank[place]), 0 first */
};

/* Chrome's pid of a device's process. */
static inline int32_t export_gpu_pid(const struct layout *L, uint32_t device)
{
	return L->gpu_pid_base + (int32_t)(device & 0xffff);
}

/* Lays out rp's tracks, slices, counters and marks under opt. -1 after an error line. */
int export_layout_build(struct layout *L, const struct replay *rp, const struct export_options *opt);
/* The same for one rank of several: its process named by its rank, its times moved. */
int export_layout_build_placed(struct layout *L, const struct replay *rp, const struct export_options *opt,
			       const struct layout_place *place);
void export_layout_release(struct layout *L);

/* Perfetto's trusted_packet_sequence_id for this bundle: nonzero, from its identity. */
uint32_t export_sequence_id(const struct layout *L);

/*
 * The flow from a launch call to the first activity it launched, 0 none:
 * its correlation id, and in a trace of several ranks the rank's place
 * above it (layout.c says why).
 */
uint64_t export_launch_flow(const struct layout *L, const struct replay_api *api);
/* The flow that ends at activity idx (a), 0 none. */
uint64_t export_activity_flow(const struct layout *L, const struct replay_activity *a, uint32_t idx);

/* The slice's name; a step's is formatted into buf. */
const char *export_slice_name(const struct layout *L, const struct xslice *s, char *buf, size_t len);
/* Where that name comes from (EXPORT_ID_STRING), 0 for a step's. */
uint64_t export_slice_name_id(const struct layout *L, const struct xslice *s);

extern const char *const export_slice_category[];   /* by enum slice_what: "cuda", "nvtx", "cuda", "step" */

/* Annotation keys; the Perfetto writer interns them as iid = index + 1. */
enum ann_key {
	ANN_OP, ANN_NVTX, ANN_CORRELATION, ANN_GRID, ANN_BLOCK, ANN_REGISTERS, ANN_SMEM,
	ANN_BYTES, ANN_PATH, ANN_GPU_NS, ANN_KERNELS, ANN_DTYPES,
	ANN_STREAM, ANN_DEVICE, ANN_CBID, ANN_COMM, ANN_COUNT
};
extern const char *const export_ann_names[ANN_COUNT];

/* One annotation: a string or an unsigned value. */
struct ann {
	uint8_t key;
	bool is_str;
	const char *str;
	uint64_t id;                  /* where str comes from (EXPORT_ID_*), 0: formatted */
	uint64_t u;
};

#define MAX_ANN 12

/*
 * The slice's annotations into a (at most MAX_ANN); strings may point into
 * the four buffers. GPU work: its op, NVTX path, correlation, launch
 * configuration or bytes, stream and device (Kineto's "stream" and
 * "device"), and under an NCCL call the call's payload: "communicator"
 * (its id in hex: JavaScript's numbers stop at 2^53) and "bytes" (the
 * message size); an NCCL range carries the same two; a launch call its
 * correlation and CUPTI callback id.
 */
size_t export_slice_annotations(const struct layout *L, const struct xslice *s, struct ann *a,
				char bufs[4][256]);

/* "OOM: N B category request by op" for rp->mem[mem]. */
void export_oom_name(const struct replay *rp, uint32_t mem, char *buf, size_t len);

/* Refuses an estimate above opt->max_size; says a large one before it is written. */
int export_check_size(const struct export_options *opt, uint64_t estimate, const char *what,
		      const char *output);

/*
 * Size estimates, before writing: a writer encodes its fixed parts (begin,
 * given the stream) and an even sample of the marks (mark, by index; all of
 * them when there are at most 20,000, so the estimate is exact) into a
 * stream that only counts bytes; export_estimate extrapolates. -1 after an
 * error line.
 */
int export_estimate(const struct layout *L, void *ctx, int (*begin)(void *ctx, FILE *f),
		    int (*mark)(void *ctx, size_t i), uint64_t *bytes);

#endif
