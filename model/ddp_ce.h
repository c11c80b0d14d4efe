/*
 * ddp_ce.h: the gradients' all-reduce by the copy engines (--allreduce-by ce),
 * for ranks on one host joined by NVLink or PCIe peer access.
 *
 * Why: NCCL's all-reduce runs on CTAs, one SM each, beside the backward's
 * kernels; Hopper's matrix products are persistent, a CTA per SM, so beside
 * NCCL they either run a second wave or are given fewer SMs (the
 * carve-out), and the backward took 18.7 -> 27.5 ms on two H200s (large
 * BF16, docs/multi-gpu.md). Here the bytes move by the GPUs' copy engines,
 * which take no SM, and one short kernel per bucket adds them up:
 *
 *   1. reduce-scatter: each rank copies the part of the bucket that rank p
 *      owns (its shard p: the bucket cut in `ranks` pieces) into p's inbox,
 *      then writes p's phase-1 flag for it (a stream memory operation, in
 *      stream order after the copy);
 *   2. each rank waits for every peer's phase-1 flag, then grad_reduce adds
 *      the peers' copies of its own shard into it and scales by 1/ranks;
 *   3. all-gather: each rank copies its averaged shard into every peer's
 *      inbox and writes their phase-2 flags; it waits for theirs and copies
 *      their averaged shards from its inbox into its gradients.
 *
 * --allreduce-by exchange (for two ranks, the same bytes over the links and
 * no kernel beside the backward): each rank copies each bucket whole into
 * every peer's inbox; after the backward the optimizer reads the ranks'
 * copies in rank order and averages them inside AdamW (kernels/adamw.h),
 * then tells the peers (a third flag) that the next step's copies may come.
 *
 * The inbox (one slot of the gradients' size per peer) and the flags are
 * cudaMalloc'd and shared through CUDA IPC handles exchanged over the
 * communicator; the flags carry a counter per lane that every rank
 * advances alike, one per collective, so a wait is "at least this
 * collective" (two lanes, each a stream, let one collective's copies run
 * beside the other's reduction). Every rank
 * reduces its shard once and sends the result: all ranks hold bitwise the
 * same gradients. Reuse is safe without more waits: a peer writes a region
 * of my inbox again only after its own step ended, which waited for my
 * phase-2 flag of every collective, written after I read that region.
 * exchange has no phase 2, and a peer may start its next step while my
 * optimizer still reads its copies: there each lane's first copy of a step
 * waits for the peer's "consumed" flag of the step before.
 */
#ifndef STEPTRACE_MODEL_DDP_CE_H
#define STEPTRACE_MODEL_DDP_CE_H

#include <stdbool.h>
#include <stddef.h>

struct comm;
struct ddp_ce;
struct CUstream_st;

/*
 * Sets up the exchange for gradients of `numel` FP32 elements on every rank
 * of comm (a collective call: every rank calls it). The reduction kernel
 * runs on at most max_ctas CTAs (0: as many as it needs). exchange
 * (--allreduce-by exchange): each collective copies its whole range to every
 * peer and nothing more; the average is formed by its reader
 * (ddp_ce_arrived, then AdamW or grad_reduce), and ddp_ce_consumed says
 * when the copies may be overwritten. NULL after one line: ranks on
 * several hosts, a pair of GPUs without peer access, no stream memory
 * operations, out of memory.
 */
struct ddp_ce *ddp_ce_create(struct comm *comm, size_t numel, int max_ctas, bool exchange);

/*
 * Enqueues on `stream` the average over the ranks of grads[offset ..
 * offset + count) (grads: this rank's gradients, numel elements), in place.
 * Every rank calls it for the same ranges in the same order, each on lane
 * 0 or 1 alike: the collectives of one lane must go to one stream (in
 * order), those of the two lanes may run at once on two. 0, or -1 after
 * one line.
 */
int ddp_ce_allreduce(struct ddp_ce *ce, int lane, float *grads, size_t offset, size_t count,
		     struct CUstream_st *stream);

/*
 * exchange: makes `stream` wait until every peer's copies of this step
 * have arrived, but for the last collective of lane hold_lane (-1: none;
 * ddp_ce_arrived_lane waits for it), and fills in[0 .. ranks) with the
 * ranks' gradients in rank order (grads for this rank, its inbox slots for
 * the others); returns the number of ranks. Without exchange: 0 (the
 * all-reduces did it all). -1 after one line.
 */
int ddp_ce_arrived(struct ddp_ce *ce, float *grads, const float **in, int hold_lane,
		   struct CUstream_st *stream);
/* exchange: makes `stream` wait for every peer's copies of the lane's last collective. 0 or -1. */
int ddp_ce_arrived_lane(struct ddp_ce *ce, int lane, struct CUstream_st *stream);

/*
 * exchange: after what read the copies of this step (enqueued on
 * `stream`), tells every peer it may send the next step's. 0 or -1.
 */
int ddp_ce_consumed(struct ddp_ce *ce, struct CUstream_st *stream);

/* Frees it (the device must have finished with it); NULL is fine. */
void ddp_ce_free(struct ddp_ce *ce);

#endif
