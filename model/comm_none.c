/*
 * comm_none.c: comm.h where NCCL was not found when steptrace was built:
 * the multi-GPU commands say so in one line (comm_available), and nothing
 * else is reachable.
 */
#include "model/comm.h"

#include "lib/error.h"

int comm_available(void)
{
	error("this steptrace was built without NCCL (nccl.h and libnccl were not found): "
	      "--nproc, --ddp and 'bench allreduce' need a build with NCCL");
	return 0;
}

const char *comm_nccl_version(void)
{
	return "";
}

struct comm *comm_init(const struct rank_info *ri, double timeout_s, int max_ctas)
{
	comm_available();
	return NULL;
}

int comm_rank(const struct comm *c)
{
	return 0;
}

int comm_size(const struct comm *c)
{
	return 1;
}

int comm_device(const struct comm *c)
{
	return 0;
}

uint64_t comm_run_id(const struct comm *c)
{
	return 0;
}

int comm_allreduce(struct comm *c, const void *send, void *recv, size_t count, enum st_dtype dtype,
		   enum comm_reduce op, struct CUstream_st *stream)
{
	return error("no NCCL in this build");
}

int comm_sync(struct comm *c, struct CUstream_st *stream, const char *what)
{
	return error("no NCCL in this build");
}

int comm_allgather_host(struct comm *c, const void *mine, void *all, size_t bytes)
{
	return error("no NCCL in this build");
}

void comm_abort(struct comm *c)
{
}

void comm_free(struct comm *c)
{
}
