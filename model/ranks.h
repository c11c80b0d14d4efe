/*
 * ranks.h: the processes of a run on several GPUs, one per GPU, and how
 * they find each other (SPEC.md, "Several GPUs"). Nothing here touches a
 * GPU or NCCL (model/comm.h builds the communicator on top), so all of it
 * runs and is tested on a machine without either.
 *
 * Who starts the ranks:
 *   - steptrace itself, with --nproc N: ranks_launch forks N ranks on this
 *     host and waits for them; when one fails, it stops the others and says
 *     which one failed and how;
 *   - a launcher: torchrun (RANK, WORLD_SIZE, LOCAL_RANK), mpirun
 *     (OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK) or srun (SLURM_PROCID,
 *     SLURM_NTASKS, SLURM_LOCALID): rank_info_detect reads its variables.
 *     Several hosts are the launcher's business.
 *
 * How they meet: NCCL's unique id goes from rank 0 to the others through a
 * rendezvous directory (rendezvous_exchange). Rank 0 writes it as a file
 * (a temporary, then rename, so nobody reads half of it); the others poll
 * for it, answer with a file of their own, and rank 0 waits for every
 * answer. Each wait has a deadline, and a rank that never comes is named.
 * --nproc uses a private temporary directory; under a launcher,
 * --rendezvous DIR names one every rank sees (on a shared file system when
 * they span hosts), and without it ranks on one host use
 * $TMPDIR/steptrace-<job id>, from the launcher's job id. No MPI library is
 * linked: under mpirun too the id travels through the file system.
 */
#ifndef STEPTRACE_MODEL_RANKS_H
#define STEPTRACE_MODEL_RANKS_H

#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct rank_info {
	int rank, size;              /* size 1: a single process */
	int local_rank;              /* on its host: picks the GPU */
	bool several_hosts;          /* the launcher says the ranks span hosts */
	const char *launcher;        /* "none", "steptrace --nproc", "torchrun", "mpirun", "srun" */
	char job[128];               /* the launcher's job id, file-name safe; "" unknown */
	char rendezvous[PATH_MAX];   /* the rendezvous directory, once chosen */
};

/*
 * The rank this process is, from the launcher's variables, read through
 * `get` (getenv when NULL). No launcher: rank 0 of 1. torchrun's variables
 * win over mpirun's, mpirun's over srun's (the innermost launcher sets the
 * later ones). -1 after one line naming the variable when one is malformed
 * or contradicts the others (a rank not below the size).
 */
int rank_info_detect(struct rank_info *ri, const char *(*get)(const char *name));

/*
 * Chooses ri->rendezvous: `given` (--rendezvous DIR) when set, else, for a
 * run of several ranks on one host, $TMPDIR (or /tmp) /steptrace-<job id>.
 * -1 after one line when the ranks span hosts or the job id is unknown and
 * no directory was given. A single process needs none ("" then).
 */
int rank_rendezvous_dir(struct rank_info *ri, const char *given);

/*
 * Sets, unless the user set them, the variables every rank runs with:
 * NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
 * NVSHMEM_DISABLE_NVLS=1 (NVLink multicast can take a host's GPUs out of
 * service). Before NCCL is initialised; ranks_launch calls it too.
 */
void rank_env_defaults(void);

/*
 * A rank's file from the run's: "run.stb" -> "run.rank1.stb" ("run" ->
 * "run.rank1"); the path itself for a run of one process. -1 after a line
 * when it does not fit in len.
 */
int rank_output_path(const char *path, int rank, int size, char *buf, size_t len);

/* The CUDA device of a rank: its local rank modulo the devices it sees. */
int rank_device(const struct rank_info *ri, int devices);

/*
 * Polls poll(ctx) until it returns nonzero, for at most timeout_s seconds:
 * without a pause for the first 200 us (a collective's launch settles in
 * microseconds), then sleeping a little longer each time (from 50 us to
 * 1 ms, so the end of a step is noticed at most a millisecond late, and a
 * recorded wait makes tens of cudaStreamQuery calls, not thousands). Returns what
 * poll returned (> 0 done, < 0 failed), or 0 when the time ran out. Every
 * wait of a rank on its peers goes through it, so no wait is unbounded.
 */
int rank_wait(int (*poll)(void *ctx), void *ctx, double timeout_s);

/*
 * A flag (a signal handler's: record's SIGINT/SIGTERM) that cuts every
 * rank_wait to 5 s once set: enough for the ranks to agree to stop after
 * ^C, short enough that a rank told to stop while a peer is gone is not
 * held in a collective until --timeout (the launcher's SIGKILL follows
 * 10 s after its SIGTERM). A wait cut short returns 0, as a timeout does;
 * rank_wait_stopped() then says why. NULL: none.
 */
void rank_wait_stop_on(volatile sig_atomic_t *flag);
bool rank_wait_stopped(void);

/* The largest blob rendezvous_exchange carries (NCCL's id is 128 bytes). */
#define RENDEZVOUS_MAX 1024

/*
 * Rank 0 gives `blob` (len bytes) to ranks 1..size-1 through `dir`, which
 * rank 0 creates if needed (mode 0700); they get it into `blob`. Rank 0
 * returns once every rank has it, having removed the files; the others
 * once they have it. 0, or -1 after one line: the time ran out (naming the
 * ranks that did not come, or rank 0), a file is not the rendezvous's, the
 * ranks disagree on the size, or a rank read an earlier run's file.
 */
int rendezvous_exchange(const char *dir, int rank, int size, void *blob, size_t len,
			double timeout_s);

/* What ranks_launch runs in each rank; its return value is the rank's exit status. */
typedef int (*rank_main_fn)(const struct rank_info *ri, void *ctx);

/*
 * Starts n ranks of this process on this host (fork: the caller must not
 * have initialised CUDA), rank r running fn with rank r of n, local rank r,
 * launcher "steptrace --nproc" and the rendezvous directory `rendezvous`,
 * or a private one made (and removed) here; messages of rank r start with
 * "rank r: ". The ranks share a process group of their own: SIGINT, SIGTERM
 * and SIGHUP sent to this process are passed on to them, and they get
 * SIGTERM if this process dies. When a rank fails (a non-zero exit status
 * or a signal), one line says which and how, the others get SIGTERM, and
 * SIGKILL grace_s seconds later. Returns 0 when every rank succeeded, else
 * the first failure's exit status (128 + the signal for a signal), or 1
 * when the ranks could not be started.
 */
int ranks_launch(int n, const char *rendezvous, rank_main_fn fn, void *ctx, double grace_s);

#endif
