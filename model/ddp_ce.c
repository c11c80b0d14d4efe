/*
 * ddp_ce.c: the copy-engine all-reduce (ddp_ce.h says how and why).
 */
#include "model/ddp_ce.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cuda.h>
#include <cuda_runtime.h>

#include "kernels/grad_reduce.h"
#include "lib/error.h"
#include "lib/gpu_check.h"
#include "model/comm.h"

#define LANES 2
#define PHASES 3            /* 0: a copy arrived, 1: the averaged shard arrived, 2: consumed */
#define N_FLAGS(n) ((size_t)LANES * PHASES * (size_t)(n))

typedef CUresult (*write_value_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);
typedef CUresult (*wait_value_fn)(CUstream, CUdeviceptr, cuuint32_t, unsigned int);

/* What each rank tells the others. */
struct ce_card {
	char host[64];
	int device;
	cudaIpcMemHandle_t inbox, flags;
};

struct ddp_ce {
	int rank, ranks, max_ctas;
	bool exchange;             /* whole copies to every peer, averaged by the optimizer */
	size_t numel;
	float *inbox;              /* (ranks - 1) slots of numel: slot_of(p, rank) is p's */
	uint32_t *flags;           /* [LANES][2][ranks]: lane, phase, sender */
	float **peer_inbox;        /* [ranks]: rank p's inbox, opened here (NULL for this rank) */
	uint32_t **peer_flags;     /* [ranks] */
	uint32_t seq[LANES];       /* collectives so far per lane, every rank alike */
	uint32_t steps;            /* exchange: steps whose copies this rank has consumed */
	uint32_t pushed[LANES];    /* exchange: the step of the lane's last push, + 1 */
	write_value_fn write_value;
	wait_value_fn wait_value;
};

/* The slot of rank p's inbox that sender r writes. */
static size_t slot_of(int r, int p)
{
	return (size_t)(r < p ? r : r - 1);
}

/* Shard s of [offset, offset + count) over n ranks: its first element (s = n: the end). */
static size_t shard_lo(size_t offset, size_t count, int s, int n)
{
	size_t at;

	if (s <= 0)
		return offset;
	if (s >= n)
		return offset + count;
	at = (size_t)((unsigned __int128)count * (unsigned)s / (unsigned)n) & ~(size_t)63;  /* 256 B */
	return offset + at;
}

static int cu_check(CUresult r, const char *what)
{
	if (r == CUDA_SUCCESS)
		return 0;
	return error("CUDA %s failed (driver error %d)", what, (int)r);
}

static int entry_point(const char *name, void **fn)
{
	enum cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;

	if (cudaGetDriverEntryPointByVersion(name, fn, 12000, cudaEnableDefault, &q) != cudaSuccess ||
	    q != cudaDriverEntryPointSuccess || !*fn) {
		cudaGetLastError();
		return error("--allreduce-by ce: the driver has no %s", name);
	}
	return 0;
}

void ddp_ce_free(struct ddp_ce *ce)
{
	if (!ce)
		return;
	for (int p = 0; p < ce->ranks; p++) {
		if (ce->peer_inbox && ce->peer_inbox[p])
			cudaIpcCloseMemHandle(ce->peer_inbox[p]);
		if (ce->peer_flags && ce->peer_flags[p])
			cudaIpcCloseMemHandle(ce->peer_flags[p]);
	}
	if (ce->inbox)
		cudaFree(ce->inbox);
	if (ce->flags)
		cudaFree(ce->flags);
	cudaGetLastError();
	free(ce->peer_inbox);
	free(ce->peer_flags);
	free(ce);
}

struct ddp_ce *ddp_ce_create(struct comm *comm, size_t numel, int max_ctas, bool exchange)
{
	struct ddp_ce *ce = calloc(1, sizeof(*ce));
	struct ce_card mine = { 0 }, *all = NULL;
	int n = comm_size(comm);

	if (!ce) {
		error("out of host memory for the copy-engine all-reduce");
		return NULL;
	}
	ce->rank = comm_rank(comm);
	ce->ranks = n;
	ce->numel = numel;
	ce->max_ctas = max_ctas;
	ce->exchange = exchange;
	if (n > GRAD_REDUCE_MAX_IN) {
		error("--allreduce-by %s: at most %d ranks, not %d", exchange ? "exchange" : "ce",
		      GRAD_REDUCE_MAX_IN, n);
		goto fail;
	}
	ce->peer_inbox = calloc((size_t)n, sizeof(*ce->peer_inbox));
	ce->peer_flags = calloc((size_t)n, sizeof(*ce->peer_flags));
	all = calloc((size_t)n, sizeof(*all));
	if (!ce->peer_inbox || !ce->peer_flags || !all) {
		error("out of host memory for the copy-engine all-reduce");
		goto fail;
	}
	if (entry_point("cuStreamWriteValue32", (void **)&ce->write_value) ||
	    entry_point("cuStreamWaitValue32", (void **)&ce->wait_value))
		goto fail;
	if (gethostname(mine.host, sizeof(mine.host) - 1))
		snprintf(mine.host, sizeof(mine.host), "?");
	mine.device = comm_device(comm);
	if (n == 1) {   /* a run of one rank: no peer, nothing to share; every average is its own */
		free(all);
		return ce;
	}
	if (CUDA_CHECK(cudaMalloc((void **)&ce->inbox, (size_t)(n - 1) * numel * sizeof(float))) ||
	    CUDA_CHECK(cudaMalloc((void **)&ce->flags, N_FLAGS(n) * sizeof(uint32_t))) ||
	    CUDA_CHECK(cudaMemset(ce->flags, 0, N_FLAGS(n) * sizeof(uint32_t))) ||
	    CUDA_CHECK(cudaIpcGetMemHandle(&mine.inbox, ce->inbox)) ||
	    CUDA_CHECK(cudaIpcGetMemHandle(&mine.flags, ce->flags)) ||
	    CUDA_CHECK(cudaDeviceSynchronize()))
		goto fail;
	/* a barrier too: every rank's flags are zero before anyone writes them */
	if (comm_allgather_host(comm, &mine, all, sizeof(mine)))
		goto fail;
	for (int p = 0; p < n; p++) {
		int ok = 1;

		if (p == ce->rank)
			continue;
		if (strcmp(all[p].host, mine.host)) {
			error("--allreduce-by ce needs every rank on one host: rank %d is on %s, rank %d on %s",
			      ce->rank, mine.host, p, all[p].host);
			goto fail;
		}
		if (all[p].device != mine.device &&
		    (CUDA_CHECK(cudaDeviceCanAccessPeer(&ok, mine.device, all[p].device)) || !ok)) {
			error("--allreduce-by ce: GPU %d (rank %d) cannot reach GPU %d (rank %d) directly",
			      mine.device, ce->rank, all[p].device, p);
			goto fail;
		}
		if (CUDA_CHECK(cudaIpcOpenMemHandle((void **)&ce->peer_inbox[p], all[p].inbox,
						    cudaIpcMemLazyEnablePeerAccess)) ||
		    CUDA_CHECK(cudaIpcOpenMemHandle((void **)&ce->peer_flags[p], all[p].flags,
						    cudaIpcMemLazyEnablePeerAccess)))
			goto fail;
	}
	free(all);
	return ce;
fail:
	free(all);
	ddp_ce_free(ce);
	return NULL;
}

/* Flag (lane, phase, sender) in a rank's flags. */
static uint32_t *flag_at(uint32_t *flags, int n, int lane, int phase, int sender)
{
	return flags + ((size_t)lane * PHASES + (size_t)phase) * (size_t)n + (size_t)sender;
}

/* Copies every shard but `keep` to the rank that owns it, then flags each peer's phase. */
static int push(struct ddp_ce *ce, int lane, const float *grads, size_t offset, size_t count, int phase,
		cudaStream_t s)
{
	int r = ce->rank, n = ce->ranks;

	for (int p = 0; p < n; p++) {
		int shard = phase == 0 ? p : r;   /* phase 1: p's shard; phase 2: my averaged one */
		size_t lo = shard_lo(offset, count, shard, n), hi = shard_lo(offset, count, shard + 1, n);

		if (ce->exchange)
			lo = offset, hi = offset + count;   /* the whole range */
		float *to;

		if (p == r)
			continue;
		to = ce->peer_inbox[p] + slot_of(r, p) * ce->numel + lo;
		if (hi > lo && CUDA_CHECK(cudaMemcpyAsync(to, grads + lo, (hi - lo) * sizeof(float),
							  cudaMemcpyDeviceToDevice, s)))
			return -1;
		if (cu_check(ce->write_value(s, (CUdeviceptr)flag_at(ce->peer_flags[p], n, lane, phase, r), ce->seq[lane],
					     CU_STREAM_WRITE_VALUE_DEFAULT),
			     "cuStreamWriteValue32"))
			return -1;
	}
	return 0;
}

/* Waits on s until every peer's flag (lane, phase) is at least want. */
static int wait_value(struct ddp_ce *ce, int lane, int phase, uint32_t want, cudaStream_t s)
{
	for (int p = 0; p < ce->ranks; p++)
		if (p != ce->rank &&
		    cu_check(ce->wait_value(s, (CUdeviceptr)flag_at(ce->flags, ce->ranks, lane, phase, p), want,
					    CU_STREAM_WAIT_VALUE_GEQ),
			     "cuStreamWaitValue32"))
			return -1;
	return 0;
}

/* Waits on s until every peer has flagged this collective's phase (2: consumed the last step). */
static int wait_peers(struct ddp_ce *ce, int lane, int phase, cudaStream_t s)
{
	return wait_value(ce, lane, phase, phase == 2 ? ce->steps : ce->seq[lane], s);
}

int ddp_ce_arrived_lane(struct ddp_ce *ce, int lane, struct CUstream_st *stream)
{
	if (!ce->exchange || lane < 0 || lane >= LANES || !ce->seq[lane])
		return 0;
	return wait_peers(ce, lane, 0, stream);
}

int ddp_ce_allreduce(struct ddp_ce *ce, int lane, float *grads, size_t offset, size_t count,
		     struct CUstream_st *stream)
{
	cudaStream_t s = stream;
	int r = ce->rank, n = ce->ranks;
	size_t lo = shard_lo(offset, count, r, n), hi = shard_lo(offset, count, r + 1, n);
	const float *in[GRAD_REDUCE_MAX_IN];

	if (offset + count > ce->numel || offset + count < offset)
		return error("--allreduce-by ce: elements %zu..%zu past the gradients' %zu", offset,
			     offset + count, ce->numel);
	if (lane < 0 || lane >= LANES)
		return error("--allreduce-by ce: no lane %d", lane);
	ce->seq[lane]++;
	if (ce->exchange) {
		/* the lane's first copy of a step waits until every peer consumed the last step's */
		if (ce->pushed[lane] != ce->steps + 1) {
			ce->pushed[lane] = ce->steps + 1;
			if (ce->steps && wait_peers(ce, 0, 2, s))
				return -1;
		}
		return push(ce, lane, grads, offset, count, 0, s);
	}
	if (push(ce, lane, grads, offset, count, 0, s) || wait_peers(ce, lane, 0, s))
		return -1;
	for (int p = 0; p < n; p++)
		in[p] = p == r ? grads + lo : ce->inbox + slot_of(p, r) * ce->numel + lo;
	if (hi > lo && CUDA_CHECK(grad_reduce(grads + lo, in, n, (long long)(hi - lo), 1.0f / (float)n,
					      ce->max_ctas, s)))
		return -1;
	if (push(ce, lane, grads, offset, count, 1, s) || wait_peers(ce, lane, 1, s))
		return -1;
	for (int p = 0; p < n; p++) {
		size_t plo = shard_lo(offset, count, p, n), phi = shard_lo(offset, count, p + 1, n);

		if (p != r && phi > plo &&
		    CUDA_CHECK(cudaMemcpyAsync(grads + plo, ce->inbox + slot_of(p, r) * ce->numel + plo,
					       (phi - plo) * sizeof(float), cudaMemcpyDeviceToDevice, s)))
			return -1;
	}
	return 0;
}

int ddp_ce_arrived(struct ddp_ce *ce, float *grads, const float **in, int hold_lane,
		   struct CUstream_st *stream)
{
	if (!ce->exchange)
		return 0;
	for (int lane = 0; lane < LANES; lane++) {
		uint32_t want = ce->seq[lane] - (lane == hold_lane);

		if (want && wait_value(ce, lane, 0, want, stream))
			return -1;
	}
	for (int p = 0; p < ce->ranks; p++)
		in[p] = p == ce->rank ? grads : ce->inbox + slot_of(p, ce->rank) * ce->numel;
	return ce->ranks;
}

int ddp_ce_consumed(struct ddp_ce *ce, struct CUstream_st *stream)
{
	if (!ce->exchange)
		return 0;
	ce->steps++;
	for (int p = 0; p < ce->ranks; p++)
		if (p != ce->rank &&
		    cu_check(ce->write_value(stream, (CUdeviceptr)flag_at(ce->peer_flags[p], ce->ranks, 0, 2, ce->rank),
					     ce->steps, CU_STREAM_WRITE_VALUE_DEFAULT),
			     "cuStreamWriteValue32"))
			return -1;
	return 0;
}
