/*
 * test_comm_stats.c: the multi-GPU benchmarks' arithmetic and tables
 * (model/comm_stats.c, trace/types.c's bus factor) on samples worked out by
 * hand: nccl-tests' algorithm and bus bandwidths, per-rank and slowest-rank
 * statistics, the check column, and the data-parallel step's phases, shares
 * and hidden communication.
 */
#include "tests/lib/check.h"
#include "model/comm_stats.h"

/* The report as CSV, into buf. */
static void csv(struct report *r, char *buf, size_t len)
{
	FILE *f = fmemopen(buf, len, "w");

	report_print(r, OUT_CSV, f);
	fclose(f);
}

static void test_bandwidth(void)
{
	CHECK_NEAR(st_bus_factor(ST_COLL_ALLREDUCE, 2), 1.0, 1e-12);
	CHECK_NEAR(st_bus_factor(ST_COLL_ALLREDUCE, 4), 1.5, 1e-12);
	CHECK_NEAR(st_bus_factor(ST_COLL_ALLREDUCE, 8), 1.75, 1e-12);
	CHECK_NEAR(st_bus_factor(ST_COLL_ALLREDUCE, 1), 0.0, 1e-12);
	CHECK_NEAR(st_bus_factor(ST_COLL_ALLGATHER, 4), 0.75, 1e-12);
	CHECK_NEAR(st_bus_factor(ST_COLL_REDUCESCATTER, 2), 0.5, 1e-12);
	CHECK_NEAR(st_bus_factor(ST_COLL_BROADCAST, 6), 1.0, 1e-12);
	CHECK_NEAR(st_bus_factor(ST_COLL_ALLREDUCE, 0), 0.0, 1e-12);
	CHECK_NEAR(st_bus_factor(99, 2), 0.0, 1e-12);
	/* PyTorch's 1 GiB FP32 all-reduce on 2 H200s: 3.34 ms is 321.5 GB/s */
	CHECK_NEAR(comm_gbps(1ull << 30, 3340), 321.48, 1e-4);
	CHECK_NEAR(comm_gbps(1000, 0), 0.0, 1e-12);
}

static void test_allreduce_table(void)
{
	/* rank 0: mean 100, min 90, max 110, std sqrt(200 / 3); the slowest of each iteration:
	   105, 110, 95, 120: mean 107.5, std sqrt(325 / 3); then the same numbers as 4 ranks
	   of 2 iterations */
	static const double us[8] = { 100, 110, 90, 100, 105, 100, 95, 120 };
	struct allreduce_result res = { 1048576, ST_DT_F32, 2, 4, us, 0 };
	struct report *r = report_new();
	char buf[4096];

	allreduce_rows(allreduce_table(r), &res);
	res.bytes = 4 << 20;
	res.dtype = ST_DT_BF16;
	res.ranks = 4;
	res.iters = 2;
	res.mismatches = 3;
	allreduce_rows(allreduce_table(r), &res);
	csv(r, buf, sizeof(buf));
	CHECK_STR(buf,
		  "# All-reduce (us per iteration; bandwidths in GB/s, nccl-tests' definitions)\n"
		  "size,bytes,dtype,ranks,rank,iters,mean_us,min_us,max_us,std_us,algbw_gbs,busbw_gbs,check\n"
		  "1 MiB,1048576,f32,2,0,4,100.0,90.0,110.0,8.2,10.49,10.49,ok\n"
		  "1 MiB,1048576,f32,2,1,4,105.0,95.0,120.0,10.8,9.99,9.99,ok\n"
		  "1 MiB,1048576,f32,2,all,4,107.5,95.0,120.0,10.4,9.75,9.75,ok\n"
		  "\n"
		  "# All-reduce (us per iteration; bandwidths in GB/s, nccl-tests' definitions)\n"
		  "size,bytes,dtype,ranks,rank,iters,mean_us,min_us,max_us,std_us,algbw_gbs,busbw_gbs,check\n"
		  "4 MiB,4194304,bf16,4,0,2,105.0,100.0,110.0,7.1,39.95,59.92,FAILED: 3 wrong\n"
		  "4 MiB,4194304,bf16,4,1,2,95.0,90.0,100.0,7.1,44.15,66.23,FAILED: 3 wrong\n"
		  "4 MiB,4194304,bf16,4,2,2,102.5,100.0,105.0,3.5,40.92,61.38,FAILED: 3 wrong\n"
		  "4 MiB,4194304,bf16,4,3,2,107.5,95.0,120.0,17.7,39.02,58.53,FAILED: 3 wrong\n"
		  "4 MiB,4194304,bf16,4,all,2,112.5,105.0,120.0,10.6,37.28,55.92,FAILED: 3 wrong\n");
	report_free(r);
}

static void test_ddp_table(void)
{
	struct model_config c = { .name = "small", .ctx = 128, .precision = ST_BF16, .batch = 4,
				  .ddp = ST_DDP_BUCKET, .bucket_mb = 25 };
	/* fwd, bwd, comm, exposed, opt, step for rank 0's two steps, then rank 1's */
	static const double ms[2 * 2 * DP_COUNT] = {
		2, 4, 3, 1, 1, 9,
		2, 4, 3, 1, 1, 11,
		2, 4, 5, 2, 1, 10,
		2, 4, 5, 2, 1, 10,
	};
	struct ddp_result res = { &c, 2, 2, ms, 3.5 };
	struct report *r = report_new();
	char buf[4096];

	ddp_rows(ddp_table(r), &res);
	c.ddp = ST_DDP_FLAT;
	ddp_failed_row(ddp_table(r), &c, 2, "OOM");
	csv(r, buf, sizeof(buf));
	/*
	 * rank 0: step 10 (std sqrt 2), exposed 1 of comm 3: hidden 66.7%; rank 1: comm 5,
	 * exposed 2: hidden 60%; all: phases averaged (comm 4, exposed 1.5), step the
	 * slowest per step: 10 and 11, mean 10.5; 2 ranks x 4 x 128 tokens in 10.5 ms
	 */
	CHECK_STR(buf,
		  "# Data-parallel training step (ms: mean over measured steps; shares of the step time)\n"
		  "model,ctx,precision,ddp,ranks,rank,batch,forward_ms,backward_ms,comm_ms,exposed_ms,"
		  "optimizer_ms,step_ms,step_std,forward_pct,backward_pct,exposed_pct,optimizer_pct,"
		  "comm_pct,hidden_pct,tokens_per_s,peak_gib,status\n"
		  "small,128,bf16,bucket 25 MB,2,0,4,2.000,4.000,3.000,1.000,1.000,10.000,1.414,20.0,40.0,10.0,10.0,30.0,66.7,102400,3.500,ok\n"
		  "small,128,bf16,bucket 25 MB,2,1,4,2.000,4.000,5.000,2.000,1.000,10.000,0.000,20.0,40.0,20.0,10.0,50.0,60.0,102400,3.500,ok\n"
		  "small,128,bf16,bucket 25 MB,2,all,4,2.000,4.000,4.000,1.500,1.000,10.500,0.707,19.0,38.1,14.3,9.5,38.1,62.5,97524,3.500,ok\n"
		  "\n"
		  "# Data-parallel training step (ms: mean over measured steps; shares of the step time)\n"
		  "model,ctx,precision,ddp,ranks,rank,batch,forward_ms,backward_ms,comm_ms,exposed_ms,"
		  "optimizer_ms,step_ms,step_std,forward_pct,backward_pct,exposed_pct,optimizer_pct,"
		  "comm_pct,hidden_pct,tokens_per_s,peak_gib,status\n"
		  "small,128,bf16,flat,2,all,4,,,,,,,,,,,,,,,,OOM\n");
	report_free(r);
}

int main(void)
{
	test_bandwidth();
	test_allreduce_table();
	test_ddp_table();
	return check_done("multi.comm_stats");
}
