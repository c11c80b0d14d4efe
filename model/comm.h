/*
 * comm.h: one rank's NCCL communicator, with every wait on a peer bounded
 * (model/ranks.h says how ranks are started and meet).
 *
 * comm_init makes the rank's GPU current, takes NCCL's unique id from rank
 * 0 through the rendezvous directory, and creates a non-blocking
 * communicator. Every call that could wait for a peer (the creation, a
 * collective's launch, a stream synchronisation) polls with a deadline;
 * when a peer does not answer in time (it died, ran out of memory, was
 * killed, hangs) or NCCL reports an error, the communicator is aborted
 * (ncclCommAbort, which also ends NCCL's kernels spinning on the lost peer)
 * and the call fails with one line that says what was waited for, so no
 * rank hangs; the rank then exits and its launcher stops the others.
 *
 * Built from comm_nccl.c where NCCL is found, from comm_none.c (every call
 * fails saying so) where it is not; no caller needs NCCL's header.
 */
#ifndef STEPTRACE_MODEL_COMM_H
#define STEPTRACE_MODEL_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "model/ranks.h"
#include "trace/types.h"

struct comm;
struct CUstream_st;   /* cudaStream_t's target */

enum comm_reduce { COMM_SUM, COMM_AVG, COMM_MAX };

/* 1 when this build has NCCL, else 0 after one line saying that it has not. */
int comm_available(void);

/* The loaded NCCL's version, "2.28.9"; "" without NCCL. */
const char *comm_nccl_version(void);

/*
 * Rank ri->rank of ri->size: its device (rank_device) made current, NCCL's
 * id through ri->rendezvous, the communicator created, every later wait
 * bounded by timeout_s seconds; its collectives run on at most max_ctas
 * CTAs (SMs) each, 0: as many as NCCL chooses. NULL after one line.
 */
struct comm *comm_init(const struct rank_info *ri, double timeout_s, int max_ctas);

int comm_rank(const struct comm *c);
int comm_size(const struct comm *c);
int comm_device(const struct comm *c);
/* The run's id, drawn by rank 0 and shared by every rank (bundle headers carry it). */
uint64_t comm_run_id(const struct comm *c);

/*
 * Enqueues the all-reduce of `count` elements of `dtype` from send into
 * recv (the same pointer for in place) on `stream`. 0, or -1 after one line
 * (the communicator is then aborted).
 */
int comm_allreduce(struct comm *c, const void *send, void *recv, size_t count, enum st_dtype dtype,
		   enum comm_reduce op, struct CUstream_st *stream);

/*
 * Waits, at most the timeout, until `stream` has done what was enqueued on
 * it, watching the communicator for errors meanwhile. 0, or -1 after one
 * line naming `what` (the communicator is then aborted).
 */
int comm_sync(struct comm *c, struct CUstream_st *stream, const char *what);

/*
 * Every rank's `bytes` of host memory `mine` into `all` (size * bytes, in
 * rank order), through the device; bounded like comm_sync. 0 or -1.
 */
int comm_allgather_host(struct comm *c, const void *mine, void *all, size_t bytes);

/*
 * Ends the communicator after a failure, without waiting for peers (the
 * failing calls above have done it already); only comm_free is left to
 * call. NULL is fine.
 */
void comm_abort(struct comm *c);
/* Ends it (finalize and destroy, bounded, unless aborted) and frees c; NULL is fine. */
void comm_free(struct comm *c);

#endif
