/*
 * naming.h: where each process of `steptrace record -o run.stb -- COMMAND`
 * writes its bundle. Every process that creates a CUDA context writes
 * run.<id>.stb, the id its rank (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID,
 * LOCAL_RANK: the first set to a number) or else its pid; when the
 * command has ended, steptrace renames the bundle to run.stb if it is the
 * only one. Two processes with the same rank (a DataLoader worker inherits
 * its trainer's RANK) are told apart by pid: run.<rank>.<pid>.stb.
 */
#ifndef STEPTRACE_RECORD_NAMING_H
#define STEPTRACE_RECORD_NAMING_H

#include <stddef.h>

/* The variables naming_rank reads, in order, NULL-terminated. */
extern const char *const naming_rank_vars[];

/*
 * The process's rank from `get` (getenv, or a test's table): the first of
 * naming_rank_vars set to a decimal number of at most 9 digits; NULL when none is.
 */
const char *naming_rank(const char *(*get)(const char *name));

/*
 * The bundle `output` becomes for process `id` ("run.stb", "3" ->
 * "run.3.stb"; "trace" -> "trace.3.stb") into out. -1 when it does not fit.
 */
int naming_bundle(char *out, size_t len, const char *output, const char *id);

#endif
