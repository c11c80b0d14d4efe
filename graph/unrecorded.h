/*
 * unrecorded.h: private to graph/: the what-if rule "unrecorded"
 * (GR_UNRECORDED), the run as it would have gone without the recorder.
 *
 * The bundle says how much host time the recorder spent on each thread in
 * each step (format 1.8, replay's costs). It is taken out of the host's
 * own work on that thread in that step -- the time between its calls (the
 * thread edges' delays), and on the step's own thread the time from the
 * step's start to its first call and from its last call to its end where
 * no edge holds them -- in proportion to each piece of it: a thread's host
 * work in step s shrinks by the factor k = (G - C) / G, G its length, C the
 * recorder's time there (0 when C >= G: what is left, C - G, came out of
 * nothing and is counted as not taken). A piece of host work that spans a
 * step boundary shrinks part by part. The callbacks' time is taken out the
 * same way: it runs inside the calls, but the host's order of calls is
 * what adds up to the step.
 */
#ifndef STEPTRACE_GRAPH_UNRECORDED_H
#define STEPTRACE_GRAPH_UNRECORDED_H

#include <stdint.h>

#include "graph/graph.h"

/*
 * The factors of g's host work: allocated into *out (NULL when no replay
 * of g has cost records: nothing to take out), the thread edges' new
 * delays into delay[] (one per edge of g; a thread edge of a thread with
 * no recorder time keeps its own), and the recorder's time in all and the
 * part of it taken out (ns). 0, or -1 after one line.
 */
int graph_unrecorded_build(const struct graph *g, struct graph_host_scale **out, int64_t *delay,
			   uint64_t *recorded, uint64_t *taken);
/* The host work [a, b] (run times) of `thread` on replay `rank`, shrunk as hs says; b - a without hs. */
double graph_host_span(const struct graph_host_scale *hs, const struct graph *g, uint32_t rank, uint64_t thread,
		       uint64_t a, uint64_t b);
void graph_host_scale_free(struct graph_host_scale *hs);

#endif
