/*
 * comm.h: `steptrace comm`, the communication of a run on several GPUs
 * from its rank bundles (SPEC.md, "Analyses").
 *
 * A collective is a kernel of a communication op (phase "comm", the kind
 * naming it: "allreduce/bucket.3", its message size in the op's bytes), or
 * a kernel named nccl... that no op launched (nccl_collective,
 * replay/nccl.h). Per collective, over the measured steps: instances and
 * time per step and rank, bytes, the transfer time (from the last rank's
 * arrival to the last rank's end: the time the data moved while every rank
 * was in), algorithm bandwidth (bytes / transfer) and bus bandwidth
 * (nccl-tests' factor, st_bus_factor), and the share of its time hidden
 * under computation and exposed.
 *
 * Hidden and exposed, as Holistic Trace Analysis's computation-
 * communication overlap: on each rank, the part of a collective's kernel
 * time during which a computation kernel (any kernel that is not a
 * collective, on any stream of the rank) runs is hidden; the rest is
 * exposed.
 *
 * Skew, with two ranks or more: the k-th instance of a collective on each
 * rank is one collective; its ranks arrive when their kernels start (on
 * the run's time line, replay/ranks.h), the last one to arrive makes the
 * others wait: skew = last arrival - first arrival, a rank's wait = last
 * arrival - its arrival.
 */
#ifndef STEPTRACE_ANALYZE_COMM_H
#define STEPTRACE_ANALYZE_COMM_H

#include <stdbool.h>
#include <stdint.h>

#include "lib/table.h"
#include "replay/ranks.h"
#include "replay/replay.h"

struct comm_opts {
	bool include_warmup;   /* count warm-up steps and work outside steps */
	int top;               /* collectives shown, 0: all */
	const char *section;   /* --section: "instances" adds that table (COMM_INSTANCES) */
};

/*
 * The table only `--section instances` prints: every collective kernel
 * counted, one row each, a rank's reduction that merges with the others'
 * by SQL (docs/scale.md, scripts/ranks_merge.sql) into the report's tables:
 *   Rank, Collective, Bytes, Comm, Instance (its order among the rank's
 *   instances of that collective, from 0), Start, End, Launch (its launch
 *   call's start; the kernel's when later or unknown), Hidden (ns of it
 *   under computation), Steps (the rank's counted steps), World (the run's
 *   ranks)
 * Times are ns on the rank's clock from its time base (time_base_ns + t:
 * one host's CUPTI clock, which every rank of that host shares).
 */
#define COMM_INSTANCES "instances"

/* One replay's collectives (a rank's, or a pooled run's), counted steps only. */
struct comm_totals {
	uint64_t kernels;      /* collective kernels */
	uint64_t time_ns;      /* their time */
	uint64_t hidden_ns;    /* the part under computation */
	uint64_t compute_ns;   /* computation kernels' busy time (their union) */
};

/* 0, or -1 after an error line. */
int comm_totals(const struct replay *rp, bool include_warmup, struct comm_totals *t);

/*
 * The report: tables "collectives" (per collective and each kind's total),
 * "ranks" (per rank: communication, hidden, exposed, computation, step),
 * and, with two ranks or more, "skew"; notes with the run's totals. 0, or
 * -1 after an error line.
 */
int comm_run(const struct replay_ranks *rs, const struct comm_opts *o, struct report *r);

#endif
