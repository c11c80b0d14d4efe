/*
 * kineto.h: a torch.profiler trace (Kineto's Chrome trace JSON) made into a
 * bundle (import/kineto.c; docs/import.md).
 */
#ifndef STEPTRACE_IMPORT_KINETO_H
#define STEPTRACE_IMPORT_KINETO_H

#include <stdint.h>

struct kineto_trace;

/*
 * Reads a Kineto trace through once (import/kineto.c): its metadata, and
 * its CPU-side ranges, kept to build steps, phases and ops. NULL after one
 * line.
 */
struct kineto_trace *kineto_scan(const char *path);
/* distributedInfo's rank and world_size; world_size 0 when the trace has none. */
void kineto_rank(const struct kineto_trace *t, uint32_t *rank, uint32_t *world_size);
/* Writes the bundle `out` (reading the trace a second time). 0, or -1 after one line. */
int kineto_write(struct kineto_trace *t, const char *out, uint64_t run_id, const char *command_line);
void kineto_free(struct kineto_trace *t);

#endif
