/*
 * steps.h: per-step host wall time, GPU busy time and GPU span, and mean ±
 * std over measured steps; with include_warmup the same over all steps and
 * over the warm-up steps alone, which shows the effect of warm-up. A note
 * says how the steps were found ("steps from: ...") when the bundle or the
 * replay says (replay_run.steps_from); older bundles say nothing.
 */
#ifndef STEPTRACE_ANALYZE_STEPS_H
#define STEPTRACE_ANALYZE_STEPS_H

#include <stdbool.h>

#include "lib/table.h"
#include "replay/replay.h"

/* Adds the step table, the statistics table and notes to r. 0, or -1 after an error line. */
int steps_run(const struct replay *rp, bool include_warmup, struct report *r);

#endif
