/*
 * replay.h: a bundle rebuilt as timelines, the one thing every report walks.
 *
 * A replay holds, in memory and in time order:
 *   - GPU activities (kernels, memcpys, memsets) with their launching API
 *     call, innermost NVTX range and step resolved;
 *   - host API calls, NVTX ranges as a tree per thread, steps, ops;
 *   - the raw allocation, free and OOM events (for the memory timeline);
 *   - per-stream and per-thread orderings as index arrays.
 *
 * Lifetime (git style):
 *
 *   struct replay rp;
 *   if (replay_load(&rp, "x.stb", NULL) < 0)   // error line already printed
 *           return 1;
 *   for (size_t i = 0; i < rp.n_activities; i++) ...
 *   replay_release(&rp);
 *
 * Or, without a file (tests, synthetic input):
 *
 *   replay_init(&rp);
 *   replay_set_strings(&rp, names, n);          // id i is names[i]
 *   replay_add(&rp, &ev) ...;                   // any order
 *   replay_build(&rp);
 *
 * NVTX projection, as Nsight Systems does it. A GPU activity belongs to
 * every range on its launching thread's stack whose CPU span covers the
 * launching API call: the call is found by correlation id (activity
 * correlation == API call correlation), and a range covers it when
 * range.start <= call.start && call.end <= range.end -- both boundaries
 * inclusive, so a range that starts exactly when the call starts covers it,
 * and a range that ends exactly when a zero-length call happens covers it.
 * An activity with no launching call belongs to no range. A range's GPU span
 * runs from the start of its first activity to the end of its last (its own
 * and its descendants'); its GPU busy time is the union of those intervals,
 * so overlapping kernels on different streams count once. Memcpys and
 * memsets are projected like kernels (Nsight's GPU projection does too);
 * kernel counts are kept apart.
 *
 * Range tree: on each thread, ranges are ordered by start, then recorded
 * depth (so an outer and inner range with identical times nest the recorded
 * way); a range's parent is the nearest earlier range on the thread whose
 * recorded depth is smaller and whose span has not ended before it starts.
 * A range whose parent was lost (a truncated bundle: ranges are written when
 * they close) is a root.
 *
 * CUDA graphs: activities launched by cudaGraphLaunch/cuGraphLaunch with an
 * op are projected onto ranges made from their op's path instead (one per
 * component, on the launching thread, spanning their GPU time; consecutive
 * activities of one launch share a common prefix's ranges): the host ran
 * the ops' code when it captured the graph, not when it launched it.
 *
 * Steps: an activity belongs to the step whose host span [start, end] covers
 * its launching call's start (or, with no launching call, its own GPU start).
 * An instant shared by two steps belongs to the later one. A bundle whose
 * recorder found no steps (footer steps_from "whole run": one step over the
 * whole run) gets one step per repetition of its launch sequence's period
 * instead, when it has one (replay/period.h; run.steps_from says so).
 *
 * Indices are int32_t with -1 for "none"; string ids are uint32_t with 0 for
 * "none" (the empty string).
 */
#ifndef STEPTRACE_REPLAY_REPLAY_H
#define STEPTRACE_REPLAY_REPLAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/stats.h"
#include "trace/types.h"

struct replay_options {
	bool quiet;            /* no truncation warning (the caller reports it) */
	/*
	 * Bytes the replay may need (0: memory_limit_default()): loading ends
	 * with one line before it would need more (bundle_reader_set_budget),
	 * counting REPLAY_EVENT_BYTES for every event. Unless given, a small
	 * bundle (a regular file) gets less: memory_limit_for_bundle() of its
	 * size, so that a few kilobytes cannot claim gigabytes.
	 */
	uint64_t memory_limit;
	bool memory_limit_given;   /* the user's --memory-limit: used as it is */
	const char *limit_why;     /* why memory_limit is what it is, for the refusal's line; NULL: not said */
};

/*
 * What loading and building a replay take per event, its share of the sorts
 * and the reports' own arrays included (bytes): measured peaks are 130-150
 * (`summary` of a million events of st-gen's bench, of 1.7 million kernels).
 */
#define REPLAY_EVENT_BYTES 200

/* A kernel, memcpy or memset on the GPU. */
struct replay_activity {
	uint64_t start, end;   /* GPU ns */
	uint64_t correlation;
	uint64_t bytes;        /* memcpy/memset; 0 for kernels */
	uint32_t name;         /* string id; copies get "[CUDA memcpy Host-to-Device]", "[CUDA memset]" */
	uint32_t stream;
	uint32_t op;           /* Op id that launched it, 0 = none (see replay_op) */
	int32_t api;           /* index into apis of the launching call, -1 none */
	int32_t range;         /* innermost covering NVTX range, -1 none */
	int32_t step;          /* index into steps, -1 outside every step */
	uint32_t detail;       /* kernel: index into kernel_cfg; memcpy: into copies; memset: value */
	uint16_t device;
	uint8_t kind;          /* ST_KERNEL, ST_MEMCPY or ST_MEMSET */
};

struct replay_kernel_cfg {
	uint32_t grid[3], block[3];
	uint32_t registers, static_smem, dynamic_smem;
};

struct replay_copy {
	uint32_t copy_kind, src_kind, dst_kind;   /* CUPTI numbering */
};

struct replay_api {
	uint64_t start, end;
	uint64_t thread, correlation;
	uint32_t name;         /* string id, e.g. "cudaLaunchKernel" */
	uint32_t cbid;
	int32_t status;
	int32_t range;         /* innermost covering range on its thread, -1 none */
	int32_t activity;      /* first activity it launched, -1 none */
	uint8_t domain;        /* 0 runtime, 1 driver */
};

struct replay_range {
	uint64_t start, end;           /* CPU ns */
	uint64_t gpu_start, gpu_end;   /* projected span; both 0 when no GPU work */
	uint64_t gpu_busy;             /* union of its activities' intervals */
	uint64_t thread;
	uint32_t name;                 /* string id of its own name */
	uint32_t domain;               /* string id of the NVTX domain, 0 default */
	uint32_t path;                 /* index into paths: "step/forward/layer.3/attn" */
	int32_t parent;                /* -1 for a root */
	uint32_t depth;                /* in the rebuilt tree, 0 = root */
	uint32_t recorded_depth;       /* as the bundle says */
	uint32_t kernels;              /* kernels projected onto it (descendants' included) */
	uint32_t activities;           /* kernels + memcpys + memsets */
	int32_t step;                  /* step covering its midpoint, -1 none */
	uint64_t comm, bytes;          /* an NCCL call's communicator id and message size; 0 none */
};

/*
 * A distinct range path; ranges with the same path share one. A path is a
 * node of the tree of paths: its parent's path and its own name, never the
 * whole string, which replay_path_str() builds when asked (4,096 nested
 * ranges with 1 KB names would otherwise hold 8.6 GB of paths).
 */
struct replay_path {
	uint32_t name;                 /* last component's string id */
	int32_t parent;                /* path of the parent, -1 at the root; always a smaller index */
	uint32_t depth;                /* components - 1 */
};

struct replay_op {
	uint32_t id;
	uint32_t name, path, kind, phase;   /* string ids */
	uint64_t flops, bytes;
	uint8_t n_inputs, n_outputs;
	uint8_t inputs[ST_OP_MAX_INPUTS], outputs[ST_OP_MAX_OUTPUTS];
};

struct replay_step {
	uint32_t index;
	bool warmup;
	bool phases_only;              /* (1.8) its module ranges were left out (replay_counts_modules) */
	uint64_t thread;
	uint64_t start, end;           /* host wall span (synchronised) */
	uint64_t gpu_start, gpu_end;   /* first activity start, last activity end; 0 if none */
	uint64_t gpu_busy;             /* union of its activities' intervals */
	uint32_t kernels, activities;
};

/* An allocation, free or OOM (ev.kind ST_ALLOC, ST_FREE, ST_OOM), in time order. */
struct replay_mem {
	struct st_event ev;
	int32_t step;                  /* step covering ev.start, -1 none */
	int32_t range;                 /* innermost range covering ev.start on the main thread, -1 none */
};

/*
 * (1.8) The recorder's own host time on one thread over [start, end]: its
 * CUPTI callbacks (inside the API calls that made them), NVTX handlers,
 * entry points (the Python side's, the built-in step's observer) and the
 * Python side's own time, and what it handled (RecorderCost).
 */
struct replay_cost {
	uint64_t start, end;           /* the stretch between step boundaries it was spent in, host ns */
	uint64_t thread;
	uint64_t callback_ns, nvtx_ns, hook_ns, python_ns;
	uint64_t launches, ranges, modules;
	uint64_t cupti_ns;             /* (1.10) CUPTI's own work in its launches: launches x the run's launch cost */
	int32_t step;                  /* the step holding its middle and half its span at least, -1 none */
};

/*
 * (1.10) CUPTI's own host time per kernel launch from the footer's
 * launch_cost, ns; 0 where the bundle has none, or one that is not a cost
 * (traced not above untraced, or over REPLAY_LAUNCH_COST_MAX_NS: hostile).
 */
#define REPLAY_LAUNCH_COST_MAX_NS 100000.0
struct replay_run;
double replay_launch_cost_ns(const struct replay_run *run);

/*
 * The run's trainable parameters: the run configuration's (steptrace's own
 * step), else (1.8) the elements of the optimizer's parameter groups (a
 * PyTorch recording's footer), saturating; 0 unknown.
 */
uint64_t replay_parameters(const struct replay_run *run);

/*
 * (1.11) The wall times of the program's unrecorded steps before an armed
 * window (the footer's unrecorded_step_ns), summarised into *st (st->n:
 * how many, whatever their number); true where there are at least
 * REPLAY_UNRECORDED_MIN of them to use.
 */
#define REPLAY_UNRECORDED_MIN 3
#define REPLAY_ARMED_THREADS_MAX 64
bool replay_unrecorded_steps(const struct replay_run *run, struct dur_stats *st);

/* The recorder's host time of a cost record: its parts' sum, CUPTI's work in its launches (1.10) included. */
static inline uint64_t replay_cost_ns(const struct replay_cost *c)
{
	return c->callback_ns + c->nvtx_ns + c->hook_ns + c->python_ns + c->cupti_ns;
}

/* A (device, stream) and its activities in start order. */
struct replay_stream {
	uint32_t device, stream;
	uint32_t *acts;                /* indices into activities */
	size_t n;
};

/* A host thread: its API calls and ranges in start order. */
struct replay_thread {
	uint64_t thread;
	uint32_t *apis;                /* indices into apis */
	size_t n_apis;
	uint32_t *ranges;              /* indices into ranges, by (start, recorded depth) */
	size_t n_ranges;
};

/*
 * The run's facts, from the bundle's header and footer: what was recorded,
 * on what, and how the recording ended. Strings are "" when absent and
 * owned by the replay. A replay built without a file has none of them
 * (every has_* false).
 */
struct replay_config {
	const char *model;             /* "small", "medium", ..., or "custom" */
	uint32_t d_model, d_ff, layers, heads, vocab, batch, ctx;
	int precision;                 /* enum st_precision; -1 when precision_name is none of them */
	int mode;                      /* enum st_mode; -1 likewise */
	int attention;                 /* enum st_attention; -1 likewise */
	int kernels;                   /* enum st_kernels; plain when not recorded (before 1.4) */
	const char *precision_name, *mode_name, *attention_name;   /* as recorded */
	const char *kernels_name;      /* as recorded, "" before 1.4 */
	uint32_t warmup_steps, measured_steps;
	uint64_t parameters, seed;
	double lr;
	int ddp;                       /* enum st_ddp; ST_DDP_NONE when not recorded, -1 unknown name */
	const char *ddp_name;          /* as recorded, "" for a single process */
	double bucket_mb;              /* bucket mode's bucket size, MB */
	uint32_t sm_carveout, nccl_ctas;   /* (1.7) --sm-carveout, --nccl-ctas; 0 before */
	const char *allreduce;         /* (1.12) --allreduce-by: "nccl", "ce", "exchange"; "" before or
					  for a single process (NCCL's, where there were ranks) */
};

struct replay_device {
	const char *name;
	uint32_t index, sm_count, cc_major, cc_minor;
	uint64_t memory_bytes, l2_bytes;
	uint32_t sm_clock_khz, mem_clock_khz, mem_bus_bits;
	/* peaks in FLOP/s and bytes/s, 0 when unknown */
	double peak_fp32_flops, peak_tf32_flops, peak_bf16_flops, peak_fp16_flops, peak_bandwidth;
	enum st_peak_source peak_source;
	const char *peak_note;
	uint32_t cuda_runtime_version, cuda_driver_version, cupti_version, cublas_version;
	const char *driver_version;    /* e.g. "580.159.04" */
};

struct replay_footer {
	bool complete;
	const char *end_reason;        /* "ok", "oom", "error", "interrupted" */
	const char *steps_from;        /* how the recorder found the steps (1.5); "" when not said */
	uint64_t events, dropped;
	uint32_t chunks, strings;
	int64_t finished_unix_ns;
	/* per enum st_kind, as the footer counts them; has_count false where it names the kind not */
	bool has_count[ST_KIND_COUNT];
	uint64_t count_events[ST_KIND_COUNT], count_dropped[ST_KIND_COUNT];
};

struct replay_run {
	bool has_header, has_config, has_device;   /* config and device only with a header */
	bool has_footer;               /* false for a truncated bundle */
	uint32_t format_major, format_minor;
	const char *tool_version, *command_line, *hostname;
	int64_t created_unix_ns;
	const char *clock;             /* "cupti" or "synthetic" */
	uint64_t time_base_ns;         /* event times are ns since this instant of the clock */
	const char *api_calls;         /* the API calls recorded: "all", or the rule leaving some out; "" all */
	uint32_t pid;                  /* the recording process, 0 when unknown (format before 1.2) */
	/* several ranks (format 1.3): world_size 0 or 1 is a single process */
	uint32_t rank, world_size, local_rank;
	uint64_t run_id;               /* shared by the bundles of one run's ranks, 0 single */
	const char *nccl_version;      /* "2.28.9", "" without NCCL */
	/* (1.9) an imported trace: "torch.profiler: FILE" or "nsys: FILE", "" for a recording */
	const char *imported_from;
	const char *import_missing;    /* (1.9) what the source lacks, one line each, '\n' between; "" none */
	/* (1.8) the optimizer's parameter groups (the footer's), owned by the replay; none before 1.8 */
	const struct st_param_group *param_groups;
	size_t n_param_groups;
	struct st_launch_cost launch_cost;   /* (1.10) the footer's; launches 0: not measured */
	/* (1.11) an armed window's: the program's unrecorded steps before it, ns, oldest first (see
	 * replay_unrecorded_steps); values of 0 or over an hour (hostile) are left out */
	uint64_t unrecorded_step_ns[ST_UNRECORDED_STEPS_MAX];
	size_t n_unrecorded_steps;
	/* (1.11) the recorder's own time while armed over armed_span_ns before the window; both 0 where not
	 * measured, or hostile (no span, or more than REPLAY_ARMED_THREADS_MAX threads' worth of it) */
	uint64_t armed_recorder_ns, armed_span_ns;
	/*
	 * How the steps were found: the footer's steps_from, or the replay's
	 * own "launch period: N launches per step, found by replay" when it cut
	 * a "whole run" into steps (replay/period.h); "" when not said. Never
	 * NULL after replay_build.
	 */
	const char *steps_from;
	struct replay_config config;
	struct replay_device device;
	struct replay_footer footer;
};

struct replay {
	struct replay_run run;         /* zero (no facts, steps_from "") after replay_build without a file */
	const char *path;              /* the bundle's path, NULL without a file */
	bool truncated;
	const char *truncation;        /* why, NULL when complete */
	uint32_t chunks_read;
	uint64_t events_read;
	uint64_t memory;                      /* bytes the budget counted for it (replay_options) */
	/*
	 * Sizes past REPLAY_SIZE_MAX bytes (a copy's, a memset's, an NCCL
	 * message's, an op's, an allocation's): no machine holds them, so they
	 * are read as unknown (0), and replay_load warns once with the first.
	 */
	uint64_t unreal_sizes, unreal_first;
	const char *unreal_what;              /* what the first sized: "an NCCL message" */
	uint64_t counts[ST_KIND_COUNT];   /* events read, per enum st_kind */

	/* Strings: id < n_strings; the bundle's (ids < strings_read), then synthetic ones. */
	const char **strings;
	uint32_t n_strings;
	uint32_t strings_read;                /* the bundle's own, id 0 included */

	struct replay_activity *activities;   /* by start (stable) */
	size_t n_activities;
	struct replay_kernel_cfg *kernel_cfg;
	size_t n_kernel_cfg;
	struct replay_copy *copies;
	size_t n_copies;

	struct replay_api *apis;              /* by start */
	size_t n_apis;
	struct replay_range *ranges;          /* by start */
	size_t n_ranges;
	struct replay_path *paths;
	size_t n_paths;
	struct replay_op *ops;                /* by id */
	size_t n_ops;
	struct replay_step *steps;            /* by start */
	size_t n_steps;
	size_t n_measured_steps;              /* steps not flagged warm-up */
	size_t n_phases_only;                 /* steps flagged phases only (1.8), warm-up or not */
	size_t n_measured_modules;            /* measured steps not flagged phases only */
	struct replay_mem *mem;               /* alloc/free/oom by time */
	size_t n_mem;
	struct st_event *others;              /* overhead and sync records, by start */
	size_t n_others;
	struct replay_cost *costs;            /* (1.8) the recorder's own time, by end; none before */
	size_t n_costs;

	struct replay_stream *streams;        /* by (device, stream) */
	size_t n_streams;
	struct replay_thread *threads;        /* by thread id */
	size_t n_threads;
	uint64_t main_thread;                 /* thread of the steps (or with most ranges) */

	uint64_t t_min, t_max;                /* over every timed event; 0 when empty */

	void *priv;                           /* builder state, reader, arenas */
};

/*
 * Records the bundle says were lost while recording (its footer's dropped
 * counts; 0 without a footer): of kind k (enum st_kind), or, for k = -1, in
 * all: the kinds' sum, or the footer's total when that says more. CUPTI
 * does not say of which kind the activity records it dropped were: the
 * recorder books them under ST_KERNEL, copies and memsets among them.
 */
uint64_t replay_dropped(const struct replay *rp, int kind);

/*
 * What was dropped, for people, into buf (len), "" when nothing was; the
 * counts per kind, why where the recorder knows, and what undercounts:
 *   2,637 kernel records were dropped while recording (CUPTI's buffers were
 *   full; it does not say of which kind: copies and memsets may be among
 *   them): kernel totals undercount
 * replay_load warns with it; info and diff say it in their notes. Returns buf.
 */
const char *replay_dropped_text(const struct replay *rp, char *buf, size_t len);

/* ---- lifetime -------------------------------------------------------- */

void replay_init(struct replay *rp);

/*
 * Reads the whole bundle through trace/bundle.h and builds it. A bundle
 * that lost records warns in one line (unless opt->quiet), whatever it
 * lost: a truncated bundle loads what it holds,
 *   warning: 'x.stb' is truncated (why): read N chunks, M events; results cover only that part
 * and one whose footer counts dropped records (replay_dropped_text) says so,
 * after the truncation when both; sizes past REPLAY_SIZE_MAX are a line of
 * their own:
 *   warning: 'x.stb': 2,637 kernel records were dropped while recording (...): kernel totals undercount
 * Anything else wrong prints one error line and returns -1 (rp is then
 * released). opt may be NULL.
 */
int replay_load(struct replay *rp, const char *path, const struct replay_options *opt);

/* The largest size of bytes a bundle's event may carry: 2^53 (8 PiB, and exact in a double). */
#define REPLAY_SIZE_MAX (UINT64_C(1) << 53)

/* Strings for events added by hand: id i is strings[i] (strings[0] is ignored). Copied. */
int replay_set_strings(struct replay *rp, const char *const *strings, uint32_t n);

/* Adds one event (copied), in any order. -1 on allocation failure. */
int replay_add(struct replay *rp, const struct st_event *ev);

/* Sorts, resolves and projects what was added. Call once. -1 on error (one line printed). */
int replay_build(struct replay *rp);

/* Frees everything; rp is then as after replay_init. */
void replay_release(struct replay *rp);

/* ---- lookups --------------------------------------------------------- */

/* A string by id; "" for 0 or an unknown id. */
const char *replay_str(const struct replay *rp, uint32_t id);

/* The op with this id, NULL for 0 or unknown. */
const struct replay_op *replay_op(const struct replay *rp, uint32_t id);

/*
 * A path's string, e.g. "step/forward/layer.3/attn": built the first time it
 * is asked for and kept as long as the replay; "" for an index out of range
 * (or, after an error line, when memory runs out). One longer than
 * REPLAY_PATH_MAX bytes is cut in the middle, at UTF-8 characters: its
 * first bytes (a third), "..." and its last, REPLAY_PATH_MAX in all, so that
 * deep trees of long names (4,096 ranges of 4 KiB names nest into paths of
 * 16 MiB each) cost O(REPLAY_PATH_MAX) a path in time and memory.
 */
#define REPLAY_PATH_MAX 8192
const char *replay_path_str(const struct replay *rp, uint32_t path);

/* A range's full path: replay_path_str() of its path. */
const char *replay_range_path(const struct replay *rp, const struct replay_range *r);

/* Innermost range on `thread` whose span covers t (inclusive), -1 none. O(log n + depth). */
int32_t replay_range_at(const struct replay *rp, uint64_t thread, uint64_t t);

/* The activity's range path, or "" when it has no range. */
const char *replay_activity_path(const struct replay *rp, const struct replay_activity *a);

/*
 * The phase range of a range: the outermost range enclosing `range` (itself
 * included) whose name is a phase's ("forward", "zero_grad", ...; see enum
 * st_phase), -1 when none, with that phase in *phase (ST_PHASE_OTHER when
 * none). A range is a phase's span when it is its own phase range: a
 * "zero_grad" range inside "backward" is part of the backward, and a phase
 * range nested in one of the same name counts once. O(depth).
 */
int32_t replay_phase_range(const struct replay *rp, int32_t range, int *phase);
/* The phase whose span range i is (it is its own phase range), -1 when none. O(1) unless it is. */
int replay_range_phase(const struct replay *rp, size_t i);

/*
 * The enum st_phase of every path (rp->n_paths values into `phase`): the
 * first of its components that names a phase (st_phase_of_path), else
 * ST_PHASE_OTHER. O(n_paths).
 */
void replay_path_phases(const struct replay *rp, uint8_t *phase);

/*
 * The step whose host span covers t (rp->steps index), -1 when none: the
 * last one to start at or before t, when it has not ended by then, so that
 * an instant shared by two steps is the later one's, as events are placed
 * (see Steps above). O(log steps).
 */
int32_t replay_step_at(const struct replay *rp, uint64_t t);

/*
 * The recorder's own time per step (1.8): out[s] sums the cost records of
 * step s (rp->n_steps entries, zeroed first); *outside, when not NULL,
 * those of no step. False when the bundle has no cost records (older
 * bundles): the reports then say nothing of it.
 */
bool replay_step_costs(const struct replay *rp, struct replay_cost *out, struct replay_cost *outside);

/* ---- filters --------------------------------------------------------- */

/*
 * Measured-step filter. True when the bundle has no steps (everything
 * counts), or step_index is a measured (non-warm-up) step; with
 * include_warmup, everything counts (warm-up steps and work outside steps).
 */
bool replay_counts(const struct replay *rp, int32_t step_index, bool include_warmup);

/* Number of steps a --per-step division uses: measured ones (all with include_warmup); >= 1. */
size_t replay_step_divisor(const struct replay *rp, bool include_warmup);

/*
 * The module filter (format 1.8). A PyTorch recording puts module ranges
 * on a sample of its steps and flags the others phases only
 * (Step.phases_only): their phases are there, their kernels sit under the
 * phase. The reports that sum work by module (summary --by op or --range,
 * module ranges below the phases, flops, diff by op or range, explain's critical
 * path, the report's layers) take only the steps that have them, so that a module's share is
 * of the steps that could hold it; step times and phases take every step.
 * replay_counts_modules is replay_counts less the phases-only steps, and
 * replay_module_step_divisor the number of steps it counts (>= 1); in a
 * bundle without phases-only steps both are replay_counts' and
 * replay_step_divisor's.
 */
bool replay_counts_modules(const struct replay *rp, int32_t step_index, bool include_warmup);
size_t replay_module_step_divisor(const struct replay *rp, bool include_warmup);

/*
 * --range PATH. Components separated by '/', each an fnmatch glob
 * ("layer.*"); a path matches when the pattern matches a contiguous run of
 * its components, anywhere, or at the root with a leading '/'. So "forward"
 * keeps everything under any "forward" range, and the pattern made of
 * "layer.*", "attn", "softmax" keeps everything under any layer's softmax.
 */
#define RANGE_PATTERN_MAX 64    /* components */
struct range_pattern {
	char *storage;
	const char **comp;
	int n;
	bool anchored;
};
int range_pattern_compile(struct range_pattern *p, const char *pattern); /* -1 with an error line */
bool range_pattern_match(const struct range_pattern *p, const char *path);
void range_pattern_release(struct range_pattern *p);

/*
 * A path filter for the whole replay: one flag per path (NULL pattern keeps
 * everything). Activities are kept when their innermost range's path
 * matches; when the bundle has no ranges at all, the path of the op that
 * launched them is matched instead. Ranges are kept when their path matches.
 */
struct replay_filter {
	uint8_t *path_ok;              /* n_paths flags, NULL = keep all */
	uint8_t *op_ok;                /* by op index, used when there are no ranges */
	bool all;
};
int replay_filter_init(struct replay_filter *f, const struct replay *rp, const char *pattern);
bool replay_filter_activity(const struct replay_filter *f, const struct replay *rp,
			    const struct replay_activity *a);
bool replay_filter_range(const struct replay_filter *f, const struct replay_range *r);
void replay_filter_release(struct replay_filter *f);

/*
 * A --range pattern must keep something: 0 when it matches a path of any
 * of the n replays (an op's path in one without ranges; a NULL pattern
 * keeps everything), else -1 after one error line naming the nearest
 * existing paths: up to 5 about as near as the nearest, by the edits of
 * the components the pattern does not match, those it matches as typed
 * ("--range 'forwrd' matches no range path; the nearest: 'forward'").
 */
int replay_range_check(const struct replay *rps, size_t n, const char *pattern);

/* ---- helpers --------------------------------------------------------- */

/*
 * Stable sort of (key, index) pairs by key, LSD radix: O(n), what every
 * ordering here uses. `tmp` must hold n pairs.
 */
struct replay_key {
	uint64_t key;
	uint32_t idx;
};
void replay_sort_keys(struct replay_key *a, struct replay_key *tmp, size_t n);

#endif
