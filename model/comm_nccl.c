/*
 * comm_nccl.c: comm.h on NCCL (see comm.h): a non-blocking communicator
 * whose every state change and every stream this rank waits on is polled
 * with rank_wait, so a lost peer ends in ncclCommAbort and one line rather
 * than a hang.
 */
#include "model/comm.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>
#include <nccl.h>

#include "lib/error.h"
#include "lib/gpu_check.h"

struct comm {
	ncclComm_t nccl;
	int rank, size, device;
	uint64_t run_id;
	double timeout_s;
	cudaStream_t stream;      /* comm_allgather_host's */
	void *stage;              /* its device buffer */
	size_t stage_bytes;
	bool aborted;             /* by a failure: only comm_free is left to call */
};

/* What rank 0 gives the others through the rendezvous. */
struct bootstrap {
	ncclUniqueId id;
	uint64_t run_id;
};

int comm_available(void)
{
	return 1;
}

const char *comm_nccl_version(void)
{
	static char buf[32];
	int v = 0;

	if (!buf[0] && ncclGetVersion(&v) == ncclSuccess)
		snprintf(buf, sizeof(buf), "%d.%d.%d", v / 10000, v / 100 % 100, v % 100);
	return buf;
}

static ncclDataType_t nccl_dtype(enum st_dtype dt)
{
	switch (dt) {
	case ST_DT_BF16: return ncclBfloat16;
	case ST_DT_F16: return ncclFloat16;
	case ST_DT_I32: return ncclInt32;
	case ST_DT_I64: return ncclInt64;
	case ST_DT_F64: return ncclFloat64;
	case ST_DT_U8: return ncclUint8;
	default: return ncclFloat32;
	}
}

/* One line for an NCCL failure, with NCCL's own last words when it has some; aborts. */
static int comm_fail(struct comm *c, ncclResult_t r, const char *what)
{
	const char *last = c && c->nccl ? ncclGetLastError(c->nccl) : NULL;

	error("NCCL %s failed: %s%s%s", what, ncclGetErrorString(r), last && *last ? ": " : "",
	      last && *last ? last : "");
	comm_abort(c);
	return -1;
}

/* rank_wait's poll: the communicator's state. 1 settled, 0 in progress, -1 failed. */
static int poll_state(void *ctx)
{
	struct comm *c = ctx;
	ncclResult_t state = ncclSuccess;
	ncclResult_t r = ncclCommGetAsyncError(c->nccl, &state);

	if (r != ncclSuccess)
		return -1;
	if (state == ncclInProgress)
		return 0;
	return state == ncclSuccess ? 1 : -1;
}

/* A wait on the peers that ended without an answer (rank_wait's 0): one line, then abort. */
static int wait_lost(struct comm *c, const char *what)
{
	if (rank_wait_stopped())
		error("%s interrupted by a signal; communicator aborted", what);
	else
		error("%s did not finish within %g s: a peer rank failed or stopped answering; "
		      "communicator aborted", what, c->timeout_s);
	comm_abort(c);
	return -1;
}

/* After a call that may answer ncclInProgress: waits for the communicator to settle. */
static int settle(struct comm *c, ncclResult_t r, const char *what)
{
	ncclResult_t state = ncclSuccess;
	int rc;

	if (r != ncclSuccess && r != ncclInProgress)
		return comm_fail(c, r, what);
	rc = rank_wait(poll_state, c, c->timeout_s);
	if (rc > 0)
		return 0;
	if (rc == 0) {
		char nccl_what[96];

		snprintf(nccl_what, sizeof(nccl_what), "NCCL %s", what);
		return wait_lost(c, nccl_what);
	}
	ncclCommGetAsyncError(c->nccl, &state);
	return comm_fail(c, state, what);
}

struct comm *comm_init(const struct rank_info *ri, double timeout_s, int max_ctas)
{
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	struct bootstrap boot;
	struct comm *c;
	int devices = 0;
	ncclResult_t r;

	c = calloc(1, sizeof(*c));
	if (!c) {
		error("out of memory");
		return NULL;
	}
	c->rank = ri->rank;
	c->size = ri->size;
	c->timeout_s = timeout_s;
	if (CUDA_CHECK(cudaGetDeviceCount(&devices)))
		goto fail;
	c->device = rank_device(ri, devices);
	if (CUDA_CHECK(cudaSetDevice(c->device)) ||
	    CUDA_CHECK(cudaStreamCreateWithFlags(&c->stream, cudaStreamNonBlocking)))
		goto fail;
	memset(&boot, 0, sizeof(boot));
	if (ri->rank == 0) {
		struct timespec ts;

		if ((r = ncclGetUniqueId(&boot.id)) != ncclSuccess) {
			error("NCCL cannot make its unique id: %s", ncclGetErrorString(r));
			goto fail;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		boot.run_id = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
			      (uint64_t)(uint8_t)boot.id.internal[0] << 56;
	}
	if (rendezvous_exchange(ri->rendezvous, ri->rank, ri->size, &boot, sizeof(boot), timeout_s))
		goto fail;
	c->run_id = boot.run_id;
	config.blocking = 0;
	if (max_ctas > 0)
		config.maxCTAs = max_ctas;
	r = ncclCommInitRankConfig(&c->nccl, c->size, boot.id, c->rank, &config);
	if (r != ncclSuccess && r != ncclInProgress) {
		error("NCCL cannot create the communicator of rank %d of %d: %s", c->rank, c->size,
		      ncclGetErrorString(r));
		c->nccl = NULL;
		goto fail;
	}
	if (settle(c, r, "communicator creation"))
		goto fail;
	return c;
fail:
	comm_abort(c);
	comm_free(c);
	return NULL;
}

int comm_rank(const struct comm *c)
{
	return c->rank;
}

int comm_size(const struct comm *c)
{
	return c->size;
}

int comm_device(const struct comm *c)
{
	return c->device;
}

uint64_t comm_run_id(const struct comm *c)
{
	return c->run_id;
}

int comm_allreduce(struct comm *c, const void *send, void *recv, size_t count, enum st_dtype dtype,
		   enum comm_reduce op, struct CUstream_st *stream)
{
	static const ncclRedOp_t ops[] = { [COMM_SUM] = ncclSum, [COMM_AVG] = ncclAvg, [COMM_MAX] = ncclMax };
	ncclResult_t r;

	if (c->aborted)
		return error("the communicator was aborted");
	r = ncclAllReduce(send, recv, count, nccl_dtype(dtype), ops[op], c->nccl, (cudaStream_t)stream);
	if (r == ncclSuccess)
		return 0;
	return settle(c, r, "all-reduce");
}

struct stream_wait {
	struct comm *c;
	cudaStream_t s;
	cudaError_t err;
};

/* 1 when the stream is done, 0 while it works, -1 on a CUDA or NCCL error. */
static int poll_stream(void *ctx)
{
	struct stream_wait *w = ctx;
	cudaError_t e = cudaStreamQuery(w->s);

	if (e == cudaSuccess)
		return 1;
	if (e != cudaErrorNotReady) {
		w->err = e;
		return -1;
	}
	return poll_state(w->c) < 0 ? -1 : 0;
}

int comm_sync(struct comm *c, struct CUstream_st *stream, const char *what)
{
	struct stream_wait w = { c, (cudaStream_t)stream, cudaSuccess };
	ncclResult_t state = ncclSuccess;
	int rc;

	if (c->aborted)
		return error("the communicator was aborted");
	rc = rank_wait(poll_stream, &w, c->timeout_s);
	if (rc > 0)
		return 0;
	if (rc == 0)
		return wait_lost(c, what);
	if (w.err != cudaSuccess) {
		error("%s failed: %s", what, cudaGetErrorString(w.err));
		comm_abort(c);
		return -1;
	}
	ncclCommGetAsyncError(c->nccl, &state);
	return comm_fail(c, state, what);
}

int comm_allgather_host(struct comm *c, const void *mine, void *all, size_t bytes)
{
	size_t need = bytes * (size_t)(c->size + 1);
	ncclResult_t r;

	if (c->aborted)
		return error("the communicator was aborted");
	if (need > c->stage_bytes) {
		cudaFree(c->stage);
		c->stage = NULL;
		c->stage_bytes = 0;
		if (CUDA_CHECK(cudaMalloc(&c->stage, need)))
			return -1;
		c->stage_bytes = need;
	}
	/* [mine | everyone's] */
	if (CUDA_CHECK(cudaMemcpyAsync(c->stage, mine, bytes, cudaMemcpyHostToDevice, c->stream)))
		return -1;
	r = ncclAllGather(c->stage, (char *)c->stage + bytes, bytes, ncclUint8, c->nccl, c->stream);
	if (r != ncclSuccess && settle(c, r, "all-gather"))
		return -1;
	if (comm_sync(c, (struct CUstream_st *)c->stream, "the all-gather of results"))
		return -1;
	return CUDA_CHECK(cudaMemcpy(all, (char *)c->stage + bytes, bytes * (size_t)c->size,
				     cudaMemcpyDeviceToHost));
}

static void release(struct comm *c)
{
	if (c->stage)
		cudaFree(c->stage);
	if (c->stream)
		cudaStreamDestroy(c->stream);
	cudaGetLastError();
	free(c);
}

void comm_abort(struct comm *c)
{
	if (!c || c->aborted)
		return;
	if (c->nccl)
		ncclCommAbort(c->nccl);
	c->aborted = true;
	c->nccl = NULL;
}

void comm_free(struct comm *c)
{
	if (!c)
		return;
	/* a finalisation that fails or times out aborts it */
	if (c->nccl && !c->aborted && !settle(c, ncclCommFinalize(c->nccl), "communicator finalisation"))
		ncclCommDestroy(c->nccl);
	c->nccl = NULL;
	release(c);
}
