/*
 * explain.h: `steptrace explain`: why the step takes as long as it does,
 * and what a change would buy, from the run's dependency graph (graph/).
 *
 *   steps       each step's wall time split into parts that add up to it,
 *               by what the GPU of the step's rank was doing: compute
 *               (a kernel other than a collective running), exposed
 *               communication (collectives alone), copies (copies or
 *               memsets alone), and its idle time by what it waited for:
 *               launch-bound (the next work's launch decided when it ran:
 *               the host had not issued it yet), sync stall (the same,
 *               right after the host had waited in a synchronisation: the
 *               queue had drained), data loading (the host was in a "data"
 *               range, or the next work is a copy to the device), other
 *               idle (the next work waited for its stream, another stream
 *               or another rank); mean and share over the measured steps,
 *               the replayed step (the graph re-timed as recorded) and,
 *               when the bundle says what the recorder cost (format 1.8),
 *               the unrecorded step (re-timed under the rule "unrecorded",
 *               graph/unrecorded.h: the recorder's own host time taken out
 *               where it was spent; at least the GPU's time per step)
 *   replay      the replay's error: as recorded (0 by construction) and
 *               with typical delays and durations (graph_retime_typical:
 *               each latency at its kind's median, each duration at its
 *               key's), per step (the steps table's Typical column), for
 *               the run, and the steps' own spread about their mean
 *   critical_path   the chain of nodes and delays that decided each
 *               measured step's end, back to its start, totalled by what
 *               they are (kernels by op, host work by range, launches,
 *               waits): per step and share
 *   findings    what would save time, ranked by the saving the graph
 *               re-timed predicts (one that predicts none is a note, not a
 *               finding): launch-bound steps (the step as one CUDA
 *               graph), synchronisations inside the loop, exposed
 *               communication, a bandwidth-bound optimizer, many small
 *               kernels, idle at the step's start or end, memory headroom
 *   what_if     with --what-if rules: the step predicted under them beside
 *               the measured and replayed ones: the counted steps re-timed
 *               from the first one's start (graph.h, pin), a prediction
 *               that no rule removing time can lengthen
 */
#ifndef STEPTRACE_ANALYZE_EXPLAIN_H
#define STEPTRACE_ANALYZE_EXPLAIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "lib/table.h"
#include "replay/ranks.h"

#define EXPLAIN_MAX_RULES 16

struct explain_opts {
	const char *rules[EXPLAIN_MAX_RULES];   /* --what-if, as written */
	size_t n_rules;
	const char *allreduce;        /* --allreduce FILE: the bandwidth table of ranks=N */
	double bucket_mb;             /* --bucket-mb: 0 = the run's, else 25; ranks=N's buckets */
	bool naive;                   /* --naive: ranks=N all-reduces after the backward, not in buckets */
	const char *contention;       /* --contention FILE: ranks=N's calibration (analyze/whatif.h) */
	int top;                      /* critical-path rows (0: 15) */
	bool include_warmup;
	/* --estimate-unrecorded: the Unrecorded column from the recorder's own time alone, not calibrated
	 * on an armed window's unrecorded steps (format 1.11) */
	bool estimate_unrecorded;
};

/* The parts of a step's time (ns), in the order of the steps table. */
enum explain_part {
	EP_COMPUTE, EP_COMM, EP_COPY, EP_LAUNCH, EP_SYNC, EP_DATA, EP_IDLE, EP_COUNT
};
extern const char *const explain_part_names[EP_COUNT];

/* One rank's breakdown and predictions, for the report's card and tests. */
struct explain_summary {
	size_t steps;                 /* measured steps of rank 0 */
	double measured, replayed;    /* mean step, ns */
	double recorder, unrecorded;  /* mean per step, ns: the recorder's own time, the step without it; 0 when not recorded */
	double part[EP_COUNT];        /* mean per step, ns: sums to `measured` */
	struct {
		char title[96], evidence[512];
		double predicted, saving;     /* ns; predicted < 0: none predicted (memory headroom) */
		double lo, hi;                /* ns: the prediction's interval */
	} finding[8];
	size_t n_findings;
};

/*
 * Explains run `rs` (its ranks; one replay for a bundle): the tables and
 * notes into r, and the mean step, its parts and the findings into s
 * (either may be NULL). 0, or -1 after one line.
 */
int explain_run(const struct replay_ranks *rs, const struct explain_opts *o, struct report *r,
		struct explain_summary *s);

/*
 * The mean counted step (ns) predicted under each of n_sets sets of
 * o->rules, on one graph: sets[i] has a bit per rule of o->rules (bit k:
 * o->rules[k]), pred[i] its prediction (no bit: the replay). For the
 * property tests (every rule that shrinks time, added to any set, never
 * lengthens its prediction). 0, or -1 after one line.
 */
int explain_predict_sets(const struct replay_ranks *rs, const struct explain_opts *o, const uint32_t *sets,
			 size_t n_sets, double *pred);

#endif
