/* allreduce_bench.c: see allreduce_bench.h. */
#include "model/allreduce_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "kernels/comm_check.h"
#include "lib/error.h"
#include "lib/gpu_check.h"
#include "lib/human.h"
#include "model/comm_stats.h"

static size_t dtype_size(int dt)
{
	return dt == ST_DT_F32 ? 4 : 2;
}

struct bench {
	struct comm *comm;
	int rank, ranks, iters;
	cudaStream_t s;
	void *send, *recv;
	unsigned long long *bad;     /* device */
	cudaEvent_t *ev;             /* 2 * iters */
	double *mine, *all;          /* iters + 1 per rank: the times, then the wrong elements */
	double *us;                  /* ranks * iters, for the table */
};

/* One size and dtype: timed on this rank, gathered on all, a row set on rank 0. */
static int one(struct bench *b, const struct allreduce_opts *o, uint64_t bytes, int dt,
	       struct table *t, uint64_t *wrong)
{
	size_t count = bytes / dtype_size(dt), stride = (size_t)b->iters + 1;
	unsigned long long bad = 0;
	char what[96], size[32];

	human_bytes(size, sizeof(size), (double)bytes);
	snprintf(what, sizeof(what), "the all-reduce of %s %s", size, st_dtype_name(dt));
	if (b->rank == 0) {
		fprintf(stderr, "bench allreduce: %s %s on %d ranks ...", size, st_dtype_name(dt), b->ranks);
		fflush(stderr);
	}
	if (CUDA_CHECK(comm_check_fill(b->send, count, (enum st_dtype)dt, b->rank, b->s)) ||
	    CUDA_CHECK(cudaMemsetAsync(b->bad, 0, sizeof(*b->bad), b->s)))
		return -1;
	for (int i = 0; i < o->warmup; i++)
		if (comm_allreduce(b->comm, b->send, b->recv, count, (enum st_dtype)dt, COMM_SUM,
				   (struct CUstream_st *)b->s))
			return -1;
	for (int i = 0; i < b->iters; i++)
		if (CUDA_CHECK(cudaEventRecord(b->ev[2 * i], b->s)) ||
		    comm_allreduce(b->comm, b->send, b->recv, count, (enum st_dtype)dt, COMM_SUM,
				   (struct CUstream_st *)b->s) ||
		    CUDA_CHECK(cudaEventRecord(b->ev[2 * i + 1], b->s)))
			return -1;
	if (CUDA_CHECK(comm_check_sum(b->recv, count, (enum st_dtype)dt, b->ranks, b->bad, b->s)) ||
	    comm_sync(b->comm, (struct CUstream_st *)b->s, what) ||
	    CUDA_CHECK(cudaMemcpy(&bad, b->bad, sizeof(bad), cudaMemcpyDeviceToHost)))
		return -1;
	for (int i = 0; i < b->iters; i++) {
		float ms = 0;

		if (CUDA_CHECK(cudaEventElapsedTime(&ms, b->ev[2 * i], b->ev[2 * i + 1])))
			return -1;
		b->mine[i] = ms * 1e3;
	}
	b->mine[b->iters] = (double)bad;
	if (comm_allgather_host(b->comm, b->mine, b->all, stride * sizeof(double)))
		return -1;
	if (b->rank == 0) {
		struct allreduce_result res = { count * dtype_size(dt), (enum st_dtype)dt, b->ranks,
						b->iters, b->us, 0 };

		for (int r = 0; r < b->ranks; r++) {
			memcpy(b->us + (size_t)r * b->iters, b->all + (size_t)r * stride,
			       (size_t)b->iters * sizeof(double));
			res.mismatches += (uint64_t)b->all[(size_t)r * stride + b->iters];
		}
		allreduce_rows(t, &res);
		*wrong += res.mismatches;
		fprintf(stderr, " %s\n", res.mismatches ? "WRONG SUM" : "ok");
	}
	return 0;
}

int allreduce_bench_run(struct comm *comm, const struct allreduce_opts *o, struct report *rep,
			uint64_t *wrong)
{
	struct bench b = { .comm = comm, .rank = comm_rank(comm), .ranks = comm_size(comm),
			   .iters = o->iters };
	struct table *t = b.rank == 0 && rep ? allreduce_table(rep) : NULL;
	uint64_t max = 0;
	int rc = -1;

	*wrong = 0;
	for (size_t i = 0; i < o->n_sizes; i++)
		if (o->sizes[i] > max)
			max = o->sizes[i];
	b.ev = calloc(2 * (size_t)o->iters, sizeof(*b.ev));
	b.mine = calloc((size_t)o->iters + 1, sizeof(*b.mine));
	b.all = calloc(((size_t)o->iters + 1) * (size_t)b.ranks, sizeof(*b.all));
	b.us = calloc((size_t)o->iters * (size_t)b.ranks, sizeof(*b.us));
	if (!b.ev || !b.mine || !b.all || !b.us) {
		error("out of memory");
		goto out;
	}
	if (CUDA_CHECK(cudaStreamCreateWithFlags(&b.s, cudaStreamNonBlocking)) ||
	    CUDA_CHECK(cudaMalloc(&b.send, max)) || CUDA_CHECK(cudaMalloc(&b.recv, max)) ||
	    CUDA_CHECK(cudaMalloc((void **)&b.bad, sizeof(*b.bad))))
		goto out;
	for (int i = 0; i < 2 * o->iters; i++)
		if (CUDA_CHECK(cudaEventCreate(&b.ev[i])))
			goto out;
	for (size_t d = 0; d < o->n_dtypes; d++)
		for (size_t i = 0; i < o->n_sizes; i++)
			if (one(&b, o, o->sizes[i], o->dtypes[d], t, wrong))
				goto out;
	if (t)
		report_note(rep, "%d warm-up and %d timed iterations per size; every rank's input element i "
			    "is ((rank + i) mod 4) + 1 and the check compares each result element with the "
			    "exact sum", o->warmup, o->iters);
	rc = 0;
out:
	if (b.ev)
		for (int i = 0; i < 2 * o->iters; i++)
			if (b.ev[i])
				cudaEventDestroy(b.ev[i]);
	cudaFree(b.send);
	cudaFree(b.recv);
	cudaFree(b.bad);
	if (b.s)
		cudaStreamDestroy(b.s);
	cudaGetLastError();
	free(b.ev);
	free(b.mine);
	free(b.all);
	free(b.us);
	return rc;
}
