/*
 * gen_ranks.c: the rank bundles of a synthetic data-parallel run with
 * known answers, as `steptrace record --nproc 2 --ddp MODE` would write them:
 *
 *   gen_ranks DIR NAME MODE [RUN_ID [RANKS [CLOCK_GAP [CLOCK_ERR]]]]   writes DIR/NAME.rank0.stb ...
 *
 * MODE bucket: two buckets started from the backward; naive: two all-
 * reduces after it; torch: the bucket run as a PyTorch program records it
 * (`record -- torchrun ...`): no op says "comm", the NCCL kernels run
 * under the backward's module op inside NCCL's own "ncclAllReduce" ranges,
 * bucket.0's kernel named by NCCL 2.19's spelling, bucket.1's
 * ncclDevKernel_Generic (its collective only in the range); rank 1's host
 * launches bucket.0 150 us after rank 0's, 100 us of that in a
 * cudaStreamSynchronize (the other 50 us of its 200 us skew are its GPU's);
 * none: the bucket run's step without its collectives; ce and exchange: the
 * bucket run with --allreduce-by ce (each collective a peer-to-peer copy,
 * grad_reduce, a copy back, end to end over the same span) and exchange
 * (one peer-to-peer copy over it). 1 warm-up and 2
 * measured steps; step s starts at
 * 10 + 20 s ms on the run's time line. Rank 1's clock base is 5 ms later
 * than rank 0's, so its events are written 5 ms earlier: placed by their
 * time bases, both ranks land on the time line below (ms into a step).
 * CLOCK_GAP (ns) puts rank 1's clock base that much later instead, its
 * events written as before: a run no time line holds when it is huge.
 * CLOCK_ERR (ns, may be negative) puts rank 1 on another host, "node2",
 * whose real-time clock is that far off: both ranks' created_unix_ns are
 * read at their time bases (rank 1's 5 ms later), rank 1's then off by
 * CLOCK_ERR, so only the collectives can place it exactly; its warm-up
 * step's collectives end 3 and 8 us late (NCCL's ends agree only nearly),
 * which the measured steps' numbers do not see.
 *
 *   compute (stream 7): forward 1-3, backward 3-6, optimizer after the
 *   last all-reduce for 1 ms
 *   memory: 64 MiB of parameters throughout, 16 MiB (rank 1: 32 MiB) of
 *   activations from 1.1 to 5 ms of each step
 *   bucket: bucket.0 (100 MB) rank 0 4.0-5.0, rank 1 4.2-5.0
 *           bucket.1 (200 MB) rank 0 5.5-7.5, rank 1 5.6-7.5; step 9 ms
 *   naive:  layers.0.ffn.w1.weight (100 MB) rank 0 6.0-7.0, rank 1 6.3-7.0
 *           lm_head.weight (200 MB) rank 0 7.0-9.0, rank 1 7.05-9.0; step 10.5 ms
 *
 * tests/comm/comm.sh works out what `steptrace comm`, summary, diff and
 * export must say about them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/builder.h"

#define MS 1000000ull
#define US 1000ull

struct coll {
	const char *path;
	uint64_t bytes;
	uint64_t start[2], end;   /* per rank, ns into the step */
};

static const struct coll bucket[] = {
	{ "step/backward/comm/allreduce/bucket.0", 100000000, { 4000 * US, 4200 * US }, 5000 * US },
	{ "step/backward/comm/allreduce/bucket.1", 200000000, { 5500 * US, 5600 * US }, 7500 * US },
};
static const struct coll naive[] = {
	{ "step/comm/allreduce/layers.0.ffn.w1.weight", 100000000, { 6000 * US, 6300 * US }, 7000 * US },
	{ "step/comm/allreduce/lm_head.weight", 200000000, { 7000 * US, 7050 * US }, 9000 * US },
};

/* How rank 1's clocks are off: its time base's gap (0: 5 ms), another host's real-time clock's error. */
struct clocks {
	uint64_t gap;
	bool other_host;
	int64_t err;
};

/* How late rank 1's k-th collective of step s ends on another host. */
static uint64_t late(const struct clocks *ck, int rank, uint32_t s, int k)
{
	return ck->other_host && rank == 1 && s == 0 ? (k ? 8 : 3) * US : 0;
}

static int write_rank(const char *path, int rank, int ranks, uint64_t run_id, const char *mode,
		      const struct clocks *ck)
{
	const struct coll *cl = strcmp(mode, "naive") ? bucket : naive;
	bool is_bucket = cl == bucket, torch = !strcmp(mode, "torch"), none = !strcmp(mode, "none");
	bool ce = !strcmp(mode, "ce"), exchange = !strcmp(mode, "exchange");
	uint64_t shift = (uint64_t)rank * 5 * MS;   /* this rank's clock starts later */
	uint64_t opt_start = is_bucket ? 7500 * US : 9000 * US, step_len = is_bucket ? 9 * MS : 10500 * US;
	struct builder b;
	uint32_t comm_op[2];

	builder_init(&b);
	builder_small_model(&b, "bf16");
	builder_h100(&b, "NVIDIA H200");
	builder_rank(&b, (uint32_t)rank, (uint32_t)ranks, run_id, torch ? "none" : ce || exchange ? "bucket" : mode);
	b.config.allreduce = ce || exchange ? (char *)mode : "";
	b.config.bucket_mb = is_bucket ? 25 : 0;
	b.config.warmup_steps = 1;
	b.config.measured_steps = 2;
	b.header.hostname = ck->other_host && rank == 1 ? "node2" : "node1";
	b.header.pid = 100 + (uint32_t)rank;
	b.header.time_base_ns = 1000000000000ull + (ck->gap ? (uint64_t)rank * ck->gap : shift);
	if (ck->other_host)   /* 2023-11-14, each rank's real time at its time base, rank 1's off by err */
		b.header.created_unix_ns = 1700000000000000000ll + (int64_t)shift + (rank ? ck->err : 0);
	if (builder_open(&b, path) < 0)
		return -1;
	builder_op(&b, &(struct builder_op){ .id = 1, .path = "step/forward/layer.0/ffn/w1", .kind = "ffn/w1",
					     .phase = "forward", .flops = 1000000000 });
	builder_op(&b, &(struct builder_op){ .id = 2, .path = "step/backward/layer.0/ffn/w1", .kind = "ffn/w1",
					     .phase = "backward", .flops = 2000000000 });
	builder_op(&b, &(struct builder_op){ .id = 3, .path = "step/optimizer/adamw", .kind = "adamw",
					     .phase = "optimizer" });
	/* a module's backward under which DDP's hook launches (its kind reads as a norm's) */
	if (torch)
		builder_op(&b, &(struct builder_op){ .id = 4, .path = "step/backward/layer.0/norm", .kind = "norm",
						     .phase = "backward" });
	for (int k = 0; k < 2; k++)
		comm_op[k] = torch || none ? 0 : builder_comm_op(&b, cl[k].path, cl[k].bytes);
	/* parameters for the run; each step's activations (rank 1's twice rank 0's), freed by its end */
	builder_alloc(&b, 5 * MS - shift, 0x7f0000000000ull, 64 << 20, ST_MEM_PARAMETER, 0);
	for (uint32_t s = 0; s < 3; s++) {
		uint64_t S = 10 * MS + s * 20 * MS - shift;   /* the step's start, in this rank's time */

		builder_alloc(&b, S + 1100 * US, 0x7f1000000000ull, (uint64_t)(16 << 20) * (rank + 1),
			      ST_MEM_ACTIVATION, 1);
		builder_free(&b, S + 5000 * US, 0x7f1000000000ull, 0, 0, 2);

		builder_push(&b, "step", S);
		builder_push(&b, "forward", S + 500 * US);
		builder_launch(&b, "gemm_fwd", 7, 1, S + 600 * US, S + 610 * US, S + 1 * MS, S + 3 * MS);
		builder_pop(&b, S + 700 * US);
		builder_push(&b, "backward", S + 2900 * US);
		builder_launch(&b, "gemm_bwd", 7, 2, S + 2950 * US, S + 2960 * US, S + 3 * MS, S + 6 * MS);
		for (int k = 0; is_bucket && torch && k < 2; k++) {
			/* rank 1's host launches bucket.0 150 us late, 100 us of it in a cudaStreamSynchronize */
			uint64_t late = rank == 1 && k == 0 ? 150 * US : 0;

			if (late)
				builder_call(&b, "cudaStreamSynchronize", S + 3540 * US, S + 3640 * US);
			/* a module's range on the main thread, NCCL's own range (with its payload) in it */
			builder_push(&b, "DistributedDataParallel", S + 3400 * US + k * MS);
			builder_launch(&b, k == 0 ? BUILDER_NCCL_ALLREDUCE :
				       "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", 9, 4,
				       S + 3500 * US + k * MS + late, S + 3510 * US + k * MS + late, S + cl[k].start[rank],
				       S + cl[k].end);
			builder_nccl_range(&b, "ncclAllReduce", 2, S + 3401 * US + k * MS, S + 3520 * US + k * MS + late,
					   0x5eed, cl[k].bytes);
			builder_pop(&b, S + 3521 * US + k * MS + late);
		}
		for (int k = 0; is_bucket && !torch && !none && k < 2; k++) {
			uint64_t c0 = S + cl[k].start[rank], c3 = S + cl[k].end + late(ck, rank, s, k);
			uint64_t c1 = c0 + (c3 - c0) / 3, c2 = c0 + 2 * (c3 - c0) / 3;

			builder_push(&b, "comm", S + 3400 * US + k * MS);
			builder_push(&b, "allreduce", S + 3401 * US + k * MS);
			if (exchange)   /* the copy engines: one copy to the peer, the collective's whole span */
				builder_memcpy(&b, 10, cl[k].bytes, builder_call(&b, "cudaMemcpyAsync", S + 3500 * US + k * MS,
										S + 3510 * US + k * MS), 9, comm_op[k], c0, c3);
			else if (ce) {   /* a copy, the reduction, a copy back, end to end over the same span */
				builder_memcpy(&b, 10, cl[k].bytes / 2, builder_call(&b, "cudaMemcpyAsync",
					       S + 3500 * US + k * MS, S + 3510 * US + k * MS), 9, comm_op[k], c0, c1);
				builder_launch(&b, "grad_reduce_vec_kernel(float4*, grad_in, int, long long, float)", 9,
					       comm_op[k], S + 3511 * US + k * MS, S + 3512 * US + k * MS, c1, c2);
				builder_memcpy(&b, 10, cl[k].bytes / 2, builder_call(&b, "cudaMemcpyAsync",
					       S + 3513 * US + k * MS, S + 3514 * US + k * MS), 9, comm_op[k], c2, c3);
			} else
			builder_launch(&b, BUILDER_NCCL_ALLREDUCE, 9, comm_op[k], S + 3500 * US + k * MS,
				       S + 3510 * US + k * MS, c0, c3);
			builder_pop(&b, S + 3520 * US + k * MS);
			builder_pop(&b, S + 3521 * US + k * MS);
		}
		builder_pop(&b, S + 6000 * US);
		for (int k = 0; !is_bucket && k < 2; k++) {
			builder_push(&b, "comm", S + 6010 * US + k * 100 * US);
			builder_push(&b, "allreduce", S + 6011 * US + k * 100 * US);
			builder_launch(&b, BUILDER_NCCL_ALLREDUCE, 9, comm_op[k], S + 6020 * US + k * 100 * US,
				       S + 6030 * US + k * 100 * US, S + cl[k].start[rank], S + cl[k].end);
			builder_pop(&b, S + 6040 * US + k * 100 * US);
			builder_pop(&b, S + 6041 * US + k * 100 * US);
		}
		builder_push(&b, "optimizer", S + 6100 * US);
		builder_launch(&b, "adamw_kernel", 7, 3, S + 6200 * US, S + 6210 * US, S + opt_start,
			       S + opt_start + 1 * MS);
		builder_pop(&b, S + 6300 * US);
		builder_pop(&b, S + step_len);
		builder_step(&b, s, s == 0, S, S + step_len);
	}
	builder_free(&b, 70 * MS - shift, 0x7f0000000000ull, 0, 0, 0);
	return builder_close(&b, "ok");
}

int main(int argc, char **argv)
{
	uint64_t run_id = argc > 4 ? strtoull(argv[4], NULL, 0) : 0xabcdef;
	int ranks = argc > 5 ? atoi(argv[5]) : 2;
	struct clocks ck = { .gap = argc > 6 ? strtoull(argv[6], NULL, 0) : 0, .other_host = argc > 7,
			     .err = argc > 7 ? strtoll(argv[7], NULL, 0) : 0 };
	char path[4096];

	if (argc < 4 || ranks < 1 || ranks > 2) {
		fprintf(stderr, "usage: gen_ranks DIR NAME bucket|naive|torch|none|ce|exchange [RUN_ID [RANKS (1 or 2) "
			"[CLOCK_GAP [CLOCK_ERR]]]]\n");
		return 2;
	}
	for (int r = 0; r < 2; r++) {
		snprintf(path, sizeof(path), "%s/%s.rank%d.stb", argv[1], argv[2], r);
		if (r < ranks && write_rank(path, r, 2, run_id, argv[3], &ck) < 0)
			return 1;
	}
	return 0;
}
