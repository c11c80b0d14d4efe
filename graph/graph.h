/*
 * graph.h: a recorded run as a dependency graph, and that graph re-timed.
 *
 * Built from replays (one bundle, or the ranks of one run on their shared
 * time line, replay/ranks.h), it holds a node per host API call and per GPU
 * activity, and the edges that made each one wait:
 *
 *   GE_THREAD   a thread's API calls in order: a call starts after the one
 *               before it ends, plus the host's own work in between (the
 *               program's code: Python, the framework, data loading); a
 *               query that found the work done after two or more that found
 *               it not ready, over GRAPH_POLL_GAP or more (a polling loop),
 *               follows the call before them;
 *   GE_LAUNCH   a call -> the kernel, copy or memset it launched: the work
 *               starts after the call starts (the launch latency);
 *   GE_STREAM   a stream's activities in order;
 *   GE_WAIT     an activity that started later than its stream and its
 *               launch allow, right when one on another stream of its
 *               device ended: an event it waited for (cudaStreamWaitEvent;
 *               CUPTI does not say which event, so the edge is inferred,
 *               from the nearest end no more than GRAPH_WAIT_WINDOW before);
 *   GE_SYNC     an activity -> the end of a call that waited for it: a
 *               synchronisation (cudaStreamSynchronize, cudaDeviceSynchronize,
 *               cudaEventSynchronize, a blocking copy such as .item()'s) that
 *               returned once the latest work it covers had ended; or ->
 *               the start of a polling loop's last query (after the latest
 *               work that ended while it polled);
 *   GE_COLL     the ranks of one collective: NCCL's k-th collective kernel of
 *               each rank ends once the last of the other ranks' has
 *               started, plus its transfer (collectives matched as
 *               replay/ranks.h aligns them). The ranks meet at a node of
 *               their own (GN_COLL, after every rank's nodes): an edge from
 *               each rank's kernel's start to it, one from it to each
 *               kernel's end, 2R edges for R ranks rather than R(R - 1).
 *
 * Timing. Every edge carries a delay. A node starts at the latest of its
 * start edges (the source's end, or for GE_LAUNCH its start, plus the
 * delay) and ends at the latest of its start plus its own duration and its
 * end edges (GE_SYNC, GE_COLL). On the recorded run, the edge that decided
 * a node's start (its `bind`) keeps the delay measured; the others keep the
 * run's typical delay of their kind (the median over the edges of that kind
 * that did decide), or less where the measured times say less. So the graph
 * re-timed as it is gives back every recorded time exactly, and a change
 * (what-if rules, graph_what_if) moves each node only as far as the edges
 * that remain allow: a kernel that waited for its launch starts after its
 * stream's previous kernel once launches are free.
 *
 * Times are ns on the run's time line (a rank's own plus its offset).
 */
#ifndef STEPTRACE_GRAPH_GRAPH_H
#define STEPTRACE_GRAPH_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay/ranks.h"
#include "replay/replay.h"

/* An inferred cross-stream wait: the other stream's work ended at most this long before (ns). */
#define GRAPH_WAIT_WINDOW 20000
/* A polling loop: two not-ready queries or more, the done one at least this long after the first (ns). */
#define GRAPH_POLL_GAP 50000

/*
 * GN_COLL: where the ranks of a collective meet. It starts when the last
 * rank's kernel starts and takes no time; its `index` is that kernel's
 * node (the first of the ranks that arrived last), its `poll` the kernel
 * of the rank that arrived last of the others (-1: one rank), so that each
 * rank's end waits for the others only (graph_coll_source). `rank` is
 * GRAPH_NO_RANK.
 */
enum graph_node_kind { GN_API, GN_GPU, GN_COLL };
#define GRAPH_NO_RANK UINT32_MAX

enum graph_edge_kind { GE_THREAD, GE_LAUNCH, GE_STREAM, GE_WAIT, GE_SYNC, GE_COLL, GE_KIND_COUNT };

/* What a GPU node is, for the rules and the reports. */
enum graph_work { GW_HOST, GW_KERNEL, GW_COMM, GW_COPY };

struct graph_edge {
	int32_t from, to;              /* node indices */
	int64_t delay;                 /* ns after the source's end (its start for GE_LAUNCH, GE_COLL) */
	uint8_t kind;                  /* enum graph_edge_kind */
	bool to_end;                   /* constrains the target's end (GE_SYNC, GE_COLL), not its start */
};

struct graph_node {
	uint64_t start, end;           /* as recorded, on the run's time line */
	uint64_t own;                  /* duration of its own: end - start, less any wait on an end edge */
	uint32_t rank;                 /* index of its replay */
	uint8_t kind;                  /* enum graph_node_kind */
	uint8_t work;                  /* enum graph_work */
	bool sync;                     /* an API call that synchronises (GE_SYNC edges end here) */
	int32_t index;                 /* into its replay's apis or activities */
	int32_t bind;                  /* the edge that decided its start (edge index), -1 none */
	int32_t bind_end;              /* the end edge that decided its end, -1: its own duration did */
	int32_t poll;                  /* a query that found the work done: the first of the polls before it, else -1 */
	uint32_t in, n_in;             /* its incoming edges: in_edges[in .. in + n_in) */
};

struct graph {
	const struct replay *const *rp;   /* the replays, by rank index */
	size_t n_ranks;
	const int64_t *offset;         /* per rank, added to its times (NULL: none) */
	struct graph_node *nodes;      /* per rank: its API calls, then its activities */
	size_t n_nodes;
	struct graph_edge *edges;
	size_t n_edges;
	uint32_t *in_edges;            /* edge indices grouped by target */
	uint32_t *order;               /* a topological order of the nodes' 2 events: 2n+0 start, 2n+1 end */
	int32_t **api_node;            /* per rank: rp->apis[i] -> node */
	int32_t **act_node;            /* per rank: rp->activities[i] -> node */
	int64_t typical[GE_KIND_COUNT];   /* median delay of the edges of each kind that decided */
	size_t cut;                    /* edges left out to break cycles of equal times (hostile input) */
	size_t n_colls;                /* GN_COLL nodes, the last of `nodes`: the collectives every rank ran */
	/* the ranks' collective kernels when they ran different numbers of them (else both 0) */
	size_t coll_fewest, coll_most;
	uint32_t coll_fewest_rank, coll_most_rank;   /* rank indices */
	uint64_t memory;               /* bytes claimed from the analysis budget (lib/memlimit.h) */
	/*
	 * The re-timed window (0 by graph_build: the whole run): a node recorded
	 * to start before `pin` keeps its recorded times under every rule, the
	 * others start at `pin` at the earliest (graph_retime). The caller sets
	 * it to the start of the steps it predicts, so that what ran before
	 * them (warm-up, compilation) neither moves into them nor out.
	 */
	uint64_t pin;
	/*
	 * The rule "unrecorded": ns of the recorder's per kernel launch beyond
	 * what the bundle's cost records hold, each record's stretch at most
	 * (0 by graph_build). explain sets it where an armed window measured
	 * what the program's steps took unrecorded (format 1.11).
	 */
	double unrecorded_launch_ns;
};

/*
 * The recorded time an end edge from a GN_COLL node counts from for its
 * target: the start of the last of the other ranks' kernels, and that
 * kernel's node in *from (UINT64_MAX and -1 when the target is the only rank).
 */
uint64_t graph_coll_source(const struct graph *g, const struct graph_edge *e, int32_t *from);

/*
 * Builds the graph of n replays (ranks of one run: `offset` places them on
 * one time line, NULL for a single replay). Its memory is claimed from the
 * analysis budget first (lib/memlimit.h), the re-timings' arrays included.
 * 0, or -1 after one line.
 */
int graph_build(struct graph *g, const struct replay *const *rp, size_t n, const int64_t *offset);
void graph_release(struct graph *g);

/* The node's time on the run's time line of a replay time t (unsigned: hostile times wrap, never overflow). */
static inline uint64_t graph_time(const struct graph *g, uint32_t rank, uint64_t t)
{
	return g->offset ? t + (uint64_t)g->offset[rank] : t;
}

/* t + d, at least 0 and at most UINT64_MAX: times and delays of hostile input never overflow. */
static inline uint64_t graph_add(uint64_t t, int64_t d)
{
	if (d >= 0)
		return t > UINT64_MAX - (uint64_t)d ? UINT64_MAX : t + (uint64_t)d;
	return t > (uint64_t)-(d + 1) ? t - (uint64_t)-(d + 1) - 1 : 0;
}

/* Replay rp's thread `thread` (threads are by id: a binary search), NULL none. */
const struct replay_thread *graph_thread(const struct replay *rp, uint64_t thread);

/*
 * The phase (enum st_phase) of an activity: its innermost range's path's
 * (path_phase from replay_path_phases), else its op's, else ST_PHASE_OTHER.
 */
int graph_activity_phase(const struct replay *rp, const uint8_t *path_phase, const struct replay_activity *a);

/* ---- what-if -------------------------------------------------------- */

/*
 * The bytes FP32 AdamW moves per parameter (reads the weight, gradient and
 * both moments, writes the weight and moments): the optimizer's traffic
 * where the bundle registered no bytes of its kernels, from the header's
 * parameter count (explain's optimizer finding, fuse=elementwise).
 */
#define GRAPH_ADAMW_BYTES_PER_PARAM 28.0

enum graph_rule_kind {
	GR_KERNELS,     /* kernels matching `pattern` (name, op kind or range path glob): duration x factor */
	GR_GRAPH,       /* the step as one CUDA graph: the host's work and calls take no time but its */
	                /* synchronisations', launches their typical latency at most */
	GR_HOST,        /* the host's own work (between calls, and calls' own time): x factor */
	GR_COMM_BW,     /* collectives' transfer: / factor (bandwidth x factor) */
	GR_COMM_OVERLAP,/* collectives fully overlapped: nothing waits for them */
	GR_NO_SYNC,     /* host synchronisations inside the loop removed */
	GR_NO_CONTENTION, /* kernels beside a collective as long as the same kernels alone (graph_contention) */
	GR_RANKS,       /* data parallelism over `ranks` GPUs (graph_ranks_rule) */
	GR_UNRECORDED,  /* the recorder's own host time (format 1.8) taken out of the host's work where it was spent */
	GR_PRECISION,   /* precision=bf16: an FP32/TF32 step in BF16 (graph/rules.h) */
	GR_BATCH,       /* batch=xK: the batch K times larger (graph/rules.h) */
	GR_FUSE,        /* fuse=elementwise: each chain of memory-bound kernels between two products fused (graph/rules.h) */
	GR_BUCKET,      /* bucket-mb=M: a recorded data-parallel run's collectives in buckets of M MB (graph/rules.h) */
	GR_DATA,        /* data=K: the host's data loading before each copy to the device x K (graph/rules.h) */
	GR_KIND_COUNT
};

struct graph_rule {
	int kind;                      /* enum graph_rule_kind */
	const char *pattern;           /* GR_KERNELS: a glob (owned), or NULL with `below` */
	uint64_t below;                /* GR_KERNELS "kernels:<10us=K": those shorter than this (ns) */
	double factor;
	uint32_t ranks;                /* GR_RANKS */
	const char *text;              /* as the user wrote it */
	const struct graph_facts *facts;   /* GR_PRECISION, GR_BATCH, GR_FUSE: what each kernel is (graph/rules.h) */
	/*
	 * The rule's own calibration error, relative (0.05: its predictions
	 * measured within +-5%); 0: none known (graph_rule_parse leaves 0; a
	 * rule validated against measurements sets it). explain widens a
	 * prediction's interval by it (the root of the squares of its rules').
	 */
	double error;
};

/*
 * Parses one --what-if rule: "graph", "no-sync", "comm-overlap",
 * "host=K", "comm-bw=K", "kernels:GLOB=K", "kernels:<DUR=K" (DUR in ns,
 * us or ms: kernels shorter), "ranks=N", "unrecorded", and graph/rules.h's
 * "precision=bf16", "batch=xK", "fuse=elementwise", "data=K", "bucket-mb=M".
 * 0, or -1 after one line. `text` is kept, not copied; free(pattern) when done.
 */
int graph_rule_parse(struct graph_rule *r, const char *text);

/*
 * An all-reduce bandwidth table: bus bandwidth (bytes/s) by message size,
 * for GR_RANKS: `bench allreduce --format csv` output (its rows of all
 * ranks, "all", when it has them), or a recorded run's collectives
 * (`comm RUN.rank*.stb --section collectives --format csv`: Bytes and
 * Busbw, its totals left out). Interpolated in log size; outside its sizes
 * the nearest row's.
 */
struct graph_bw_table {
	double *bytes, *busbw;
	double *mean_us;               /* the measured time of each size (its mean_us column), 0 when absent */
	size_t n;                      /* rows, by size (sorted when loaded, equal sizes in the file's order) */
	uint32_t ranks;                /* the GPUs it was measured on, 0 unknown */
	bool has_times;                /* every row has its time, and the GPU count is known */
};
int graph_bw_table_load(struct graph_bw_table *t, const char *path);   /* -1 after one line */
/*
 * Seconds to all-reduce `bytes` over `ranks` GPUs: the table's measured time
 * of that size (interpolated in log size; past its largest, its largest's
 * bus bandwidth) times the ring's 2(N-1)/N over the table's own; without
 * times or its GPU count, 2(N-1)/N x bytes / bus bandwidth. Small messages
 * so keep their latency.
 */
double graph_bw_table_time(const struct graph_bw_table *t, double bytes, uint32_t ranks);
void graph_bw_table_release(struct graph_bw_table *t);

/*
 * What GR_RANKS adds to a single-GPU graph: the gradients' all-reduce in
 * buckets of `bucket_bytes` (0: one after the backward, the naive way), of
 * `grad_bytes` in all, over `ranks` GPUs at the table's bandwidth, on a
 * stream of its own, each bucket once the backward has done its share.
 */
/*
 * What GR_RANKS takes as real: at most 2^53 bytes of gradients (8 PiB), in
 * at most a million buckets (25 MB buckets of 25 TB of gradients). The
 * caller refuses more in one line (a header's parameter count or bucket
 * size can claim anything); graph_retime refuses it too.
 */
#define GRAPH_RANKS_MAX_BYTES (UINT64_C(1) << 53)
#define GRAPH_RANKS_MAX_BUCKETS 1000000

struct graph_ranks_model {
	uint64_t grad_bytes, bucket_bytes;
	const struct graph_bw_table *table;
	/* naive (bucket_bytes 0): the gradient tensors' bytes, each all-reduced on its own; NULL: all at once */
	const uint64_t *tensors;
	size_t n_tensors;
	/* graph/rules.h: the backward's kernels beside the all-reduces x contention (1: none), ns of host per collective call */
	double contention;
	uint64_t call_ns;
};

/*
 * The graph re-timed under rules (n may be 0: the run as recorded):
 * start[i], end[i] per node (arrays of g->n_nodes); rm for GR_RANKS (else
 * NULL). 0, or -1 after one line.
 *
 * GR_UNRECORDED (graph/unrecorded.h has the rule): the recorder's own host
 * time, by thread and step (a replay's costs), comes out of the host's work
 * of that thread in that step, in proportion to each piece of it:
 * recorder_ns is the recorder's time in the run, taken_ns how much of it
 * found host work to come out of (the rest, on a thread without calls, or
 * more than its thread worked, does not move anything). Both 0 without the
 * rule, or for bundles without cost records.
 */
struct graph_host_scale;
struct graph_times {
	uint64_t *start, *end;
	uint64_t recorder_ns, taken_ns;
	struct graph_host_scale *host_scale;   /* GR_UNRECORDED's, for graph_instant; NULL without */
	bool between;                  /* graph_instant: an instant between two calls as far between them (typical) */
};
/* What one re-timing takes per node (counted by graph_build): its times, kernel factors and gates. */
#define GRAPH_RETIME_NODE_BYTES (2 * sizeof(uint64_t) + sizeof(double) + 16)
int graph_retime(const struct graph *g, const struct graph_rule *rules, size_t n,
		 const struct graph_ranks_model *rm, struct graph_times *t);
void graph_times_release(struct graph_times *t);

/*
 * The typical replay: the graph re-timed (under rules, n may be 0) with
 * nothing kept of what the recorded run's own instances took. Every
 * latency edge at its kind's typical delay (the lower median over the
 * edges of that kind that decided: a launch from its call, an inferred
 * wait, a synchronisation's return after the work it waited for, a poll's
 * after the work, each in `info`), and every duration at the median of its
 * key over the counted steps (the window from the graph's pin; what ran
 * before it stays as recorded, as in graph_retime): a kernel's time by its
 * name, grid, block and range path, and whether a collective ran beside it
 * (then without its range path: one kernel at one grid can be products of
 * other sizes, their K no part of the grid); a copy's or
 * memset's by its name and bytes; a collective's (and its transfer) by its
 * name, grid and place among the step's collectives (its bucket); the
 * GPU's gap between a stream's two kernels by their names; a call's own
 * time by its name, range path and place in the step (the k-th of its key
 * in one step is the same work as the k-th in another); the host's work
 * between two calls of a thread (and an anchor: work no recorded call
 * launched, a thread's first call) by both calls' names, range paths and
 * place. A key of one instance says nothing typical: such a duration takes
 * a coarser key's median (graph_typical below), a stream's gap its kind's.
 * The host's work of one kind (a thread's calls, or its work between two
 * calls, by the calls' names alone) then adds up, in each step, to the
 * median over the steps of what it took in each: its pieces scaled
 * together, so that the medians say where in the step it goes and the
 * steps' total how much (the sum of many right-skewed pieces is near the
 * sum of their means, not of their medians).
 * Its instants (graph_instant) between two calls of a thread lie as far
 * between them as recorded. It needs about 40 bytes more per node and per
 * edge than a re-timing; past the analysis budget (lib/memlimit.h) it is
 * not done, and says so in info->skipped, t left empty. 0, or -1 after one
 * line.
 */
struct graph_typical {
	int64_t delay[GE_KIND_COUNT];  /* per kind, of its start edges (GE_COLL's: 0) */
	int64_t sync_end;              /* a synchronisation's return after the work it waited for */
	/*
	 * The durations in the re-timed window, by the key whose median they
	 * took: [0] none (one of a kind at every level: its own time), [1] the
	 * finest (the host's: its calls' names, ranges and place in the step;
	 * a kernel's name, shape and range path), [2] the host's without its
	 * place, a kernel's without its range path, [3] the coarsest (the
	 * host's calls' names alone; a kernel's name alone).
	 */
	size_t gpu[4];                 /* work on the GPU (collectives' transfers too) */
	size_t host[4];                /* calls' own times and the host's work between calls */
	uint64_t skipped;              /* not done: the bytes it needs are past the analysis budget (t empty) */
};
int graph_retime_typical(const struct graph *g, const struct graph_rule *rules, size_t n,
			 const struct graph_ranks_model *rm, struct graph_times *t, struct graph_typical *info);

/*
 * How much longer computation ran beside communication: factor[i] (one per
 * node) is 1, except for a kernel that started while a collective of its
 * rank ran and took longer than the same kernels (name and grid) of that
 * rank that started with none running, typically (their lower median):
 * then that median over its own time. A kernel with no such twin keeps 1.
 * (On Hopper, persistent products, a CTA per SM, run a second wave beside
 * NCCL's CTAs: docs/multi-gpu.md.) Returns the number of kernels that
 * ran beside a collective, or -1 after one line.
 */
long graph_contention(const struct graph *g, double *factor);

/*
 * A host instant of replay `rank`'s thread `thread` (a step's start or
 * end), moved as the graph moved the calls around it: inside a call, as
 * far into it (at most its new length); between two calls of a typical
 * replay (t->between), as far between them; else after the last call before
 * it by the host work between, scaled by `host` (1, or GR_HOST's factor)
 * and shrunk by GR_UNRECORDED where t has it; else before the first call
 * after it likewise.
 */
uint64_t graph_instant(const struct graph *g, const struct graph_times *t, uint32_t rank, uint64_t thread,
		       uint64_t instant, double host);

#endif
