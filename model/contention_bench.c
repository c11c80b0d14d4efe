/* contention_bench.c: see contention_bench.h. */
#include "model/contention_bench.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cuda_runtime.h>

#include "kernels/cast.h"
#include "kernels/comm_check.h"
#include "kernels/init.h"
#include "kernels/residual.h"
#include "lib/error.h"
#include "lib/gpu_check.h"
#include "lib/human.h"
#include "lib/stats.h"
#include "model/gemm.h"

#define CUBLAS_WORKSPACE_BYTES (32u << 20)   /* as the model's */
/* The all-reduces beside one size's computations outlast them this many times (they slow down too)... */
#define AR_MARGIN 3.0
/* ...but are at most this many (the share covered says when that was too few). */
#define AR_MAX 20000

struct bench {
	struct comm *comm;
	int rank, ranks, warmup, iters;
	cudaStream_t compute, coll;       /* coll: the device's highest priority */
	struct gemm gemm;
	bool gemm_made;
	void *a, *b, *c;                  /* BF16: the largest product's (M, K), (K, N), (M, N) */
	float *x, *y, *out;               /* F32 (elements): the residual add's; x, y also draw a and b */
	void *workspace;
	void *send, *recv;                /* the all-reduce's, the largest size */
	cudaEvent_t go;                   /* coll: the first all-reduce beside is done */
	cudaEvent_t *ev;                  /* CONTENTION_WORKS * 2 * iters: each repetition's start, end */
	cudaEvent_t *ar;                  /* 2 * n_ar: each all-reduce's start, end */
	int n_ar;
	double *host_us;                  /* iters + AR_MAX: the host's time in each timed call */
	double *v;                        /* scratch for medians, AR_MAX */
};

static size_t dtype_size(int dt)
{
	return dt == ST_DT_F32 ? 4 : 2;
}

static double now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double median(double *v, size_t n)
{
	struct real_stats s;

	real_stats_compute(v, n, &s);
	return s.median;
}

/* ms from a to b (both recorded, done) in us, into *us. 0 or -1. */
static int elapsed_us(cudaEvent_t a, cudaEvent_t b, double *us)
{
	float ms = 0;

	if (CUDA_CHECK(cudaEventElapsedTime(&ms, a, b)))
		return -1;
	*us = (double)ms * 1e3;
	return 0;
}

static cudaEvent_t *rep_ev(struct bench *b, int w, int i, int end)
{
	return &b->ev[((size_t)w * (size_t)b->iters + (size_t)i) * 2 + (size_t)end];
}

/* One repetition of computation w on the compute stream. 0 or -1. */
static int work_once(struct bench *b, int w)
{
	const struct contention_work *k = &contention_works[w];

	if (k->kind == CONTENTION_PRODUCT)
		return gemm_rm(&b->gemm, false, false, k->m, k->n, k->k, 1.0f, b->a, k->k, 0, b->b, k->n, 0,
			       ST_DT_BF16, 0.0f, b->c, k->n, 0, ST_DT_BF16, 1);
	return CUDA_CHECK(residual_forward(b->out, b->x, b->y, k->elements, ST_DT_F32, b->compute)) ? -1 : 0;
}

/* Every computation in turn, warm-up then timed repetitions, enqueued on the compute stream. */
static int works_enqueue(struct bench *b)
{
	for (int w = 0; w < CONTENTION_WORKS; w++) {
		for (int i = 0; i < b->warmup; i++)
			if (work_once(b, w))
				return -1;
		for (int i = 0; i < b->iters; i++)
			if (CUDA_CHECK(cudaEventRecord(*rep_ev(b, w, i, 0), b->compute)) || work_once(b, w) ||
			    CUDA_CHECK(cudaEventRecord(*rep_ev(b, w, i, 1), b->compute)))
				return -1;
	}
	return 0;
}

/* Each computation's median repetition (us), once the compute stream is done. */
static int works_read(struct bench *b, double *us)
{
	for (int w = 0; w < CONTENTION_WORKS; w++) {
		for (int i = 0; i < b->iters; i++)
			if (elapsed_us(*rep_ev(b, w, i, 0), *rep_ev(b, w, i, 1), &b->v[i]))
				return -1;
		us[w] = median(b->v, (size_t)b->iters);
	}
	return 0;
}

/* At least n all-reduces' events. */
static int ar_events(struct bench *b, int n)
{
	cudaEvent_t *ar;

	if (n <= b->n_ar)
		return 0;
	ar = realloc(b->ar, 2 * (size_t)n * sizeof(*ar));
	if (!ar)
		return error("out of memory");
	b->ar = ar;
	for (; b->n_ar < n; b->n_ar++) {
		b->ar[2 * b->n_ar] = b->ar[2 * b->n_ar + 1] = NULL;
		if (CUDA_CHECK(cudaEventCreate(&b->ar[2 * b->n_ar])) ||
		    CUDA_CHECK(cudaEventCreate(&b->ar[2 * b->n_ar + 1]))) {
			b->n_ar++;   /* freed with the rest */
			return -1;
		}
	}
	return 0;
}

/* An all-reduce on coll; *host_us (may be NULL): the host's time in the call. */
static int allreduce(struct bench *b, size_t count, int dt, double *host_us)
{
	double t0 = now_us();

	if (comm_allreduce(b->comm, b->send, b->recv, count, (enum st_dtype)dt, COMM_SUM,
			   (struct CUstream_st *)b->coll))
		return -1;
	if (host_us)
		*host_us = now_us() - t0;
	return 0;
}

/* All-reduce k (0-based), timed: events around it, the host's time into host_us[slot]. */
static int allreduce_timed(struct bench *b, size_t count, int dt, int k, int slot)
{
	if (CUDA_CHECK(cudaEventRecord(b->ar[2 * k], b->coll)) || allreduce(b, count, dt, &b->host_us[slot]) ||
	    CUDA_CHECK(cudaEventRecord(b->ar[2 * k + 1], b->coll)))
		return -1;
	return 0;
}

/*
 * How many all-reduces go beside the computations, the same on every rank:
 * from every rank's window of computations alone, all-reduce alone and
 * host time per call. Enqueuing them takes the host a call each while
 * they run, so each covers its time less a call (at least a quarter of it).
 */
static int ar_count(struct bench *b, double window_us, double ar_us, double call_us, int *n)
{
	double mine[3] = { window_us, ar_us, call_us }, *all = b->v, win = 0, ar = INFINITY, call = 0, per, k;

	if (comm_allgather_host(b->comm, mine, all, sizeof(mine)))
		return -1;
	for (int r = 0; r < b->ranks; r++) {
		win = fmax(win, all[3 * r]);
		ar = fmin(ar, all[3 * r + 1]);
		call = fmax(call, all[3 * r + 2]);
	}
	per = fmax(ar - call, ar / 4);
	k = per > 0 ? ceil(AR_MARGIN * win / per) + 2 : AR_MAX;
	*n = k > AR_MAX ? AR_MAX : k < 2 ? 2 : (int)k;
	return 0;
}

/* One size and dtype: measured on this rank, gathered on all, rows (and *cal) on rank 0. */
static int one(struct bench *b, uint64_t bytes, int dt, struct table *t, struct contention_calibration *cal)
{
	size_t count = bytes / dtype_size(dt);
	struct contention_sample me = { 0 }, *all = NULL;
	double window = 0, call, start, end;
	int n_ar, calls, rc = -1;
	char size[32], what[128];

	human_bytes(size, sizeof(size), (double)bytes);
	if (b->rank == 0) {
		fprintf(stderr, "bench contention: %s %s on %d ranks ...", size, st_dtype_name(dt), b->ranks);
		fflush(stderr);
	}
	if (CUDA_CHECK(comm_check_fill(b->send, count, (enum st_dtype)dt, b->rank, b->coll)) ||
	    ar_events(b, b->iters))
		return -1;

	/* the all-reduce alone (its first ones also bring the ranks together) */
	for (int i = 0; i < b->warmup; i++)
		if (allreduce(b, count, dt, NULL))
			return -1;
	for (int i = 0; i < b->iters; i++)
		if (allreduce_timed(b, count, dt, i, i))
			return -1;
	snprintf(what, sizeof(what), "the all-reduces of %s %s alone", size, st_dtype_name(dt));
	if (comm_sync(b->comm, (struct CUstream_st *)b->coll, what))
		return -1;
	for (int i = 0; i < b->iters; i++)
		if (elapsed_us(b->ar[2 * i], b->ar[2 * i + 1], &b->v[i]))
			return -1;
	me.ar_alone_us = median(b->v, (size_t)b->iters);
	memcpy(b->v, b->host_us, (size_t)b->iters * sizeof(double));
	call = median(b->v, (size_t)b->iters);

	/* the computations alone */
	if (works_enqueue(b) || comm_sync(b->comm, (struct CUstream_st *)b->compute, "the computations alone") ||
	    works_read(b, me.alone_us))
		return -1;
	for (int w = 0; w < CONTENTION_WORKS; w++)
		window += (double)(b->warmup + b->iters) * me.alone_us[w];

	/* beside: the first all-reduce brings the ranks together, the computations start when it ends */
	if (ar_count(b, window, me.ar_alone_us, call, &n_ar) || ar_events(b, n_ar))
		return -1;
	if (allreduce(b, count, dt, NULL) || CUDA_CHECK(cudaEventRecord(b->go, b->coll)))
		return -1;
	for (int k = 0; k < n_ar; k++)
		if (allreduce_timed(b, count, dt, k, b->iters + k))
			return -1;
	if (CUDA_CHECK(cudaStreamWaitEvent(b->compute, b->go, 0)) || works_enqueue(b))
		return -1;
	snprintf(what, sizeof(what), "the all-reduces of %s %s beside the computations", size, st_dtype_name(dt));
	if (comm_sync(b->comm, (struct CUstream_st *)b->compute, "the computations beside the all-reduces") ||
	    comm_sync(b->comm, (struct CUstream_st *)b->coll, what) || works_read(b, me.beside_us))
		return -1;
	calls = b->iters + n_ar;
	memcpy(b->v, b->host_us, (size_t)calls * sizeof(double));
	me.call_us = median(b->v, (size_t)calls);
	me.calls = calls;

	/* each computation's timed window, and the all-reduces during it (times from `go`) */
	for (int w = 0; w < CONTENTION_WORKS; w++) {
		double busy = 0;
		size_t inside = 0, over = 0;

		if (elapsed_us(b->go, *rep_ev(b, w, 0, 0), &start) ||
		    elapsed_us(b->go, *rep_ev(b, w, b->iters - 1, 1), &end))
			return -1;
		/* inside first, at the front of v; those that only overlap from the back */
		for (int k = 0; k < n_ar; k++) {
			double s, e;

			if (elapsed_us(b->go, b->ar[2 * k], &s) || elapsed_us(b->go, b->ar[2 * k + 1], &e))
				return -1;
			if (e <= start || s >= end)
				continue;
			busy += fmin(e, end) - fmax(s, start);
			if (s >= start && e <= end)
				b->v[inside++] = e - s;
			else
				b->v[AR_MAX - 1 - over++] = e - s;
		}
		if (inside)
			me.ar_beside_us[w] = median(b->v, inside);
		else if (over)
			me.ar_beside_us[w] = median(b->v + AR_MAX - over, over);
		me.covered[w] = end > start ? fmin(1.0, busy / (end - start)) : 0;
	}

	/* every rank's sample to every rank; rank 0's rows */
	all = calloc((size_t)b->ranks, sizeof(*all));
	if (!all) {
		error("out of memory");
		goto out;
	}
	if (comm_allgather_host(b->comm, &me, all, sizeof(me)))
		goto out;
	if (b->rank == 0) {
		struct contention_result res = { count * dtype_size(dt), (enum st_dtype)dt, b->ranks, b->iters, all };
		double least = 1;

		if (t)
			contention_rows(t, &res);
		if (cal && contention_calibrate(&res, cal))
			goto out;
		for (int r = 0; r < b->ranks; r++)
			for (int w = 0; w < CONTENTION_WORKS; w++)
				least = fmin(least, all[r].covered[w]);
		fprintf(stderr, " %d all-reduces beside, ok%s\n", n_ar,
			least < 0.99 ? " (they did not cover every computation: see covered_pct)" : "");
	}
	rc = 0;
out:
	free(all);
	return rc;
}

static size_t at_least(size_t a, size_t b)
{
	return a > b ? a : b;
}

/* The buffers, streams, events and cuBLASLt, for sizes up to max_bytes. 0 or -1. */
static int setup(struct bench *b, uint64_t max_bytes)
{
	size_t a = 0, bb = 0, c = 0, e = 0;
	int least = 0, greatest = 0;

	for (int w = 0; w < CONTENTION_WORKS; w++) {
		const struct contention_work *k = &contention_works[w];

		if (k->kind == CONTENTION_PRODUCT) {
			a = at_least(a, (size_t)k->m * (size_t)k->k);
			bb = at_least(bb, (size_t)k->k * (size_t)k->n);
			c = at_least(c, (size_t)k->m * (size_t)k->n);
		} else {
			e = at_least(e, (size_t)k->elements);
		}
	}
	e = at_least(at_least(e, a), bb);    /* x and y also draw a and b */
	b->ev = calloc((size_t)CONTENTION_WORKS * 2 * (size_t)b->iters, sizeof(*b->ev));
	b->host_us = calloc((size_t)b->iters + AR_MAX, sizeof(*b->host_us));
	b->v = calloc((size_t)b->iters + AR_MAX, sizeof(*b->v));
	if (!b->ev || !b->host_us || !b->v)
		return error("out of memory");
	if (CUDA_CHECK(cudaDeviceGetStreamPriorityRange(&least, &greatest)) ||
	    CUDA_CHECK(cudaStreamCreateWithFlags(&b->compute, cudaStreamNonBlocking)) ||
	    CUDA_CHECK(cudaStreamCreateWithPriority(&b->coll, cudaStreamNonBlocking, greatest)) ||
	    CUDA_CHECK(cudaEventCreate(&b->go)))
		return -1;
	for (int i = 0; i < CONTENTION_WORKS * 2 * b->iters; i++)
		if (CUDA_CHECK(cudaEventCreate(&b->ev[i])))
			return -1;
	if (CUDA_CHECK(cudaMalloc(&b->a, a * 2)) || CUDA_CHECK(cudaMalloc(&b->b, bb * 2)) ||
	    CUDA_CHECK(cudaMalloc(&b->c, c * 2)) || CUDA_CHECK(cudaMalloc((void **)&b->x, e * 4)) ||
	    CUDA_CHECK(cudaMalloc((void **)&b->y, e * 4)) || CUDA_CHECK(cudaMalloc((void **)&b->out, e * 4)) ||
	    CUDA_CHECK(cudaMalloc(&b->workspace, CUBLAS_WORKSPACE_BYTES)) ||
	    CUDA_CHECK(cudaMalloc(&b->send, max_bytes)) || CUDA_CHECK(cudaMalloc(&b->recv, max_bytes)))
		return -1;
	b->gemm_made = true;
	if (gemm_init(&b->gemm, b->compute, ST_BF16, b->workspace, CUBLAS_WORKSPACE_BYTES))
		return -1;
	/* operands of a normal distribution, each rank its own */
	if (CUDA_CHECK(init_trunc_normal(b->x, (long long)e, 1.0f, 3.0f, 2 * (uint64_t)b->rank + 1, b->compute)) ||
	    CUDA_CHECK(init_trunc_normal(b->y, (long long)e, 1.0f, 3.0f, 2 * (uint64_t)b->rank + 2, b->compute)) ||
	    CUDA_CHECK(cast_f32_to_bf16(b->a, b->x, (long long)a, b->compute)) ||
	    CUDA_CHECK(cast_f32_to_bf16(b->b, b->y, (long long)bb, b->compute)) ||
	    comm_sync(b->comm, (struct CUstream_st *)b->compute, "the operands' initialisation"))
		return -1;
	return 0;
}

static void teardown(struct bench *b)
{
	if (b->gemm_made)
		gemm_release(&b->gemm);   /* before its workspace goes */
	if (b->ev)
		for (int i = 0; i < CONTENTION_WORKS * 2 * b->iters; i++)
			if (b->ev[i])
				cudaEventDestroy(b->ev[i]);
	for (int i = 0; i < 2 * b->n_ar; i++)
		if (b->ar[i])
			cudaEventDestroy(b->ar[i]);
	if (b->go)
		cudaEventDestroy(b->go);
	cudaFree(b->a);
	cudaFree(b->b);
	cudaFree(b->c);
	cudaFree(b->x);
	cudaFree(b->y);
	cudaFree(b->out);
	cudaFree(b->workspace);
	cudaFree(b->send);
	cudaFree(b->recv);
	if (b->compute)
		cudaStreamDestroy(b->compute);
	if (b->coll)
		cudaStreamDestroy(b->coll);
	cudaGetLastError();
	free(b->ev);
	free(b->ar);
	free(b->host_us);
	free(b->v);
}

int contention_bench_run(struct comm *comm, const struct contention_opts *o, struct report *rep,
			 struct contention_calibration *cal)
{
	struct bench b = { .comm = comm, .rank = comm_rank(comm), .ranks = comm_size(comm),
			   .warmup = o->warmup, .iters = o->iters };
	struct table *t = b.rank == 0 && rep ? contention_table(rep) : NULL;
	uint64_t max = 0;
	size_t largest = 0;
	int rc = -1;

	for (size_t i = 0; i < o->n_sizes; i++)
		if (o->sizes[i] > max) {
			max = o->sizes[i];
			largest = i;
		}
	if (setup(&b, max))
		goto out;
	for (size_t d = 0; d < o->n_dtypes; d++)
		for (size_t i = 0; i < o->n_sizes; i++)
			if (one(&b, o->sizes[i], o->dtypes[d], t, d == 0 && i == largest ? cal : NULL))
				goto out;
	if (t) {
		char size[32];

		report_note(rep, "%d warm-up and %d timed repetitions of each computation, alone, then beside "
			    "all-reduces back-to-back on a stream of the device's highest priority on every rank; "
			    "covered_pct: the share of a computation's timed window an all-reduce ran (under 100: "
			    "the ratio understates)", o->warmup, o->iters);
		report_note(rep, "products: BF16 through cuBLASLt, M x N x K (FP32 accumulation, BF16 out); the "
			    "residual add: out = x + y in FP32; call_us: the host's time in one comm_allreduce call");
		if (cal) {
			human_bytes(size, sizeof(size), (double)cal->bytes);
			report_note(rep, "calibration (--calibration FILE, explain's --contention): contention %.3f "
				    "(the products' time beside over alone at %s %s, measured %.3f; at least 1), "
				    "call_us %.1f", cal->contention, size, st_dtype_name(cal->dtype), cal->measured,
				    cal->call_us);
		}
	}
	rc = 0;
out:
	teardown(&b);
	return rc;
}
