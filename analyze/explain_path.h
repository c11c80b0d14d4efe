/*
 * explain_path.h: the critical path of explain's steps (explain.h's
 * critical_path table): the chain of nodes and delays that decided each
 * step's end, back to its start, along the dependency graph's binding
 * edges, totalled by what they are: kernels by op, host work by range,
 * launches, waits, synchronisations.
 */
#ifndef STEPTRACE_ANALYZE_EXPLAIN_PATH_H
#define STEPTRACE_ANALYZE_EXPLAIN_PATH_H

#include <stddef.h>
#include <stdint.h>

#include "graph/graph.h"
#include "replay/replay.h"

/* One kind of stretch on the path ("kernel", "forward/attn/softmax") and its time summed over the steps. */
struct explain_path_entry {
	char *kind, *label;
	double ns;
};

struct explain_path {
	struct explain_path_entry *e;
	size_t n, alloc;
	int32_t *slot;                 /* open addressing over e, -1 empty */
	size_t n_slots;
};

/*
 * The critical paths of steps[counted[0 .. n)] (rank 0's steps, rp its
 * replay) summed into p (zeroed at first), sorted by time, longest first;
 * *walked the steps walked. Each node walked costs one of a budget the
 * steps share (8 per node of the graph, plus a million: overlapping steps
 * of hostile input would walk the whole graph each). 0, 1 when the budget
 * ran out first, -1 after an error line.
 */
int explain_paths(const struct graph *g, const struct replay *rp, const struct replay_step *steps,
		  const uint32_t *counted, size_t n, struct explain_path *p, size_t *walked);
void explain_path_release(struct explain_path *p);

#endif
