/*
 * period.h: steps found by the period of the launch sequence, for a
 * program that repeats an iteration without saying where one begins (a
 * C++/CUDA or JAX training loop recorded with `record -- COMMAND`: the
 * recorder wrote one step over the whole run, footer steps_from "whole
 * run").
 *
 * The rule, applied by replay_build to a bundle whose footer says "whole
 * run" and which holds at most one step:
 *
 *   1. The launching thread: the host thread whose API calls launched the
 *      most kernels, memcpys and memsets (ties: the lowest thread id).
 *   2. The sequence: what it launched, in the order of the launching calls
 *      (one call's activities, a graph's, in GPU start order), each keyed
 *      by its name (a kernel's name; a copy's kind, "[CUDA memcpy
 *      Host-to-Device]" or "[CUDA memset]") and, for copies and memsets, its
 *      size class (bytes rounded down to a power of two).
 *   3. The periodic part: the longest suffix of the sequence that is at
 *      least 3 repetitions of its smallest period p (KMP's failure function
 *      on the reversed sequence: O(n)), provided it holds at least half of
 *      the sequence: three equal copies back to the host at the very end
 *      are a coincidence, not the loop. Without one the bundle's steps stay.
 *   4. The cut: of the p rotations of the period, the one whose positions
 *      in the periodic part follow the largest host gaps, summed (a
 *      position's gap: its call's start minus the previous launching call's
 *      end, 0 when they overlap), so a loop that waits for the GPU once an
 *      iteration (cudaStreamSynchronize, a blocking copy back) is cut where
 *      it waits; ties go to the earliest rotation. A rotation that would cut
 *      between two activities of one call (a graph launch) is not eligible.
 *   5. The steps: one per full repetition from a cut to the next. Step k's
 *      host span runs from the start of the call at its cut to the start of
 *      the call at the next cut (an instant two steps share is the later
 *      one's). The last step ends 1 ns before the next cut's call when a
 *      partial repetition follows it, else (the sequence ends with it) with
 *      the latest end among the thread's API calls that start between its
 *      last launching call and the end of its GPU work (the wait for it),
 *      at least with its last launching call. Launches before the first cut
 *      (setup, a partial repetition) and after the last full repetition are
 *      outside every step.
 *   6. Step 0 is flagged warm-up: its launches are the others', but its
 *      host time carries the one-time costs (each kernel's module loaded on
 *      first launch, library handles and workspaces, the allocator's
 *      growth), as `--warmup 1` would flag it; the others are measured.
 *      Steps are numbered from 0 on the launching thread, and the run says
 *      "launch period: N launches per step, found by replay"
 *      (replay_run.steps_from).
 *
 * Time and memory are linear in the launches (a radix sort, KMP, one pass
 * per step), whatever the bundle holds.
 */
#ifndef STEPTRACE_REPLAY_PERIOD_H
#define STEPTRACE_REPLAY_PERIOD_H

#include <stddef.h>
#include <stdint.h>

#include "replay/replay.h"

/* At least this many repetitions make a period. */
#define PERIOD_MIN_REPEATS 3

/* What replay's footer says of a bundle whose recorder found no steps. */
#define PERIOD_WHOLE_RUN "whole run"

/*
 * The longest suffix of keys[0..n) that is at least `min_repeats`
 * repetitions of its smallest period: it starts at *start and its period
 * is the return value; 0 when no suffix is (n < min_repeats, or no key
 * repeats at the end). -1 after an error line (out of memory). O(n) time,
 * 4n bytes.
 */
int64_t period_suffix(const uint64_t *keys, size_t n, unsigned min_repeats, size_t *start);

/*
 * Rule 4 on a periodic part [start, n) of period p: gap[i] is position i's
 * host gap, and cut_ok[i] false where i continues the previous position's
 * call. *rotation gets the r in [0, p) whose positions start + r + k*p
 * score most: 1; 0 when every rotation has a position that may not be
 * cut; -1 after an error line (out of memory). O(n - start + p).
 */
int period_rotation(const uint64_t *gap, const uint8_t *cut_ok, size_t start, size_t n, size_t p,
		    size_t *rotation);

/*
 * Replaces a "whole run" bundle's step by the steps of its launch period
 * (rules above) and sets rp->run.steps_from (never NULL afterwards).
 * Needs the launch links and the threads; the steps' GPU times are left
 * to the projection. 0 (also when it changes nothing), or -1 after an
 * error line.
 */
int replay_period_steps(struct replay *rp);

#endif
