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

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

/*
 * The bundle of trigger `trigger` of an armed recording (`record --armed`,
 * lib/armed.h) for process `id`: "rank0" for rank 0, a pid, or NULL for a
 * run's only process without a rank ("run.stb", 2, "rank1" ->
 * "run.2.rank1.stb"; NULL -> "run.2.stb"). -1 when it does not fit. A
 * window of `record --every` (trigger ARMED_PERIODIC | S) is "sS":
 * "run.s200.rank1.stb".
 */
int naming_trigger_bundle(char *out, size_t len, const char *output, uint64_t trigger, const char *id);
/* That number as the name has it ("2", "s200") into out. */
void naming_trigger_number(char *out, size_t len, uint64_t trigger);

/*
 * Which rank of which job this process is, as its launcher says: torchrun
 * (RANK, WORLD_SIZE, LOCAL_RANK; the run by TORCHELASTIC_RUN_ID,
 * MASTER_ADDR, MASTER_PORT and TORCHELASTIC_RESTART_COUNT), Open MPI
 * (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK; the run by PMIX_NAMESPACE
 * or OMPI_MCA_orte_ess_jobid) or Slurm (SLURM_PROCID, SLURM_NTASKS,
 * SLURM_LOCALID; the run by SLURM_JOB_ID and SLURM_STEP_ID), the first
 * that gives a rank below a world size of 2 or more. torchrun first: srun
 * or mpirun may start torchrun, whose ranks are the job's. The run id is a
 * hash of what names the run, the same in every rank of it on every host,
 * never 0. `launcher`: "torchrun", "mpi" or "slurm".
 */
struct naming_identity {
	uint32_t rank, world_size, local_rank;
	uint64_t run_id;
	const char *launcher;
};

/* true and *id filled when the environment (`get`) names a job of several ranks */
bool naming_identity(const char *(*get)(const char *name), struct naming_identity *id);

#endif
