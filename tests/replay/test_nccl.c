/*
 * test_nccl.c: replay/nccl.c, NCCL's kernels known by name in the spellings
 * of NCCL 2.x to 2.18 (ncclKernel_<Coll>_<ALGO>_<PROTO>_<Op>_<ctype>),
 * 2.19 on (ncclDevKernel_<Coll>_<Op>_<type>_<ALGO>_<PROTO>, Generic,
 * SendRecv), mangled or demangled; NCCL's API ranges; names that are not
 * NCCL's.
 */
#include "replay/nccl.h"
#include "tests/lib/check.h"
#include "trace/types.h"

static void kernel(const char *name, int type, const char *algo, const char *proto, const char *redop,
		   const char *dtype)
{
	struct nccl_kernel k;

	CHECK(nccl_kernel(name, &k), "%s: not NCCL's", name);
	CHECK(k.type == type, "%s: type %d, want %d", name, k.type, type);
	CHECK_STR(k.algo, algo);
	CHECK_STR(k.proto, proto);
	CHECK_STR(k.redop, redop);
	CHECK_STR(k.dtype, dtype);
}

static void test_kernels(void)
{
	/* NCCL 2.7-2.11: its argument a work element */
	kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclWorkElem)", ST_COLL_ALLREDUCE, "RING", "LL", "Sum", "f32");
	/* 2.12-2.18 */
	kernel("ncclKernel_AllReduce_TREE_LL128_Sum_half(ncclDevComm*, unsigned long, ncclWork*)",
	       ST_COLL_ALLREDUCE, "TREE", "LL128", "Sum", "f16");
	kernel("ncclKernel_AllGather_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
	       ST_COLL_ALLGATHER, "RING", "LL", "Sum", "i8");
	kernel("ncclKernel_ReduceScatter_RING_SIMPLE_Sum___nv_bfloat16(ncclDevComm*, unsigned long, ncclWork*)",
	       ST_COLL_REDUCESCATTER, "RING", "SIMPLE", "Sum", "bf16");
	kernel("ncclKernel_SendRecv_RING_SIMPLE_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)",
	       ST_COLL_SENDRECV, "RING", "SIMPLE", "Sum", "i8");
	kernel("ncclKernel_AllReduce_COLLNET_DIRECT_SIMPLE_Max_uint64_t", ST_COLL_ALLREDUCE, "COLLNET_DIRECT",
	       "SIMPLE", "Max", "u64");
	/* 2.19 on: reduction and type before the algorithm */
	kernel("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", ST_COLL_ALLREDUCE,
	       "RING", "LL", "Sum", "f32");
	kernel("ncclDevKernel_AllReduce_Sum_bf16_NVLS_TREE_SIMPLE(ncclDevKernelArgsStorage<4096ul>)",
	       ST_COLL_ALLREDUCE, "NVLS_TREE", "SIMPLE", "Sum", "bf16");
	kernel("ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
	       ST_COLL_REDUCESCATTER, "RING", "LL", "Sum", "bf16");
	kernel("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)", ST_COLL_ALLGATHER, "RING", "LL",
	       "", "");
	kernel("ncclDevKernel_Broadcast_RING_LL(ncclDevKernelArgsStorage<4096ul>)", ST_COLL_BROADCAST, "RING", "LL",
	       "", "");
	kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", ST_COLL_SENDRECV, "", "", "", "");
	/* no collective in the name: the range it was launched under says */
	kernel("ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)", -1, "", "", "", "");
	kernel("ncclDevKernel_Generic_4(ncclDevKernelArgsStorage<4096ul>)", -1, "", "", "", "");
	/* mangled: the stated length ends the name; its arguments' encoding is not read as words */
	kernel("_Z39ncclDevKernel_AllReduce_Sum_f32_RING_LL24ncclDevKernelArgsStorageILm4096EE",
	       ST_COLL_ALLREDUCE, "RING", "LL", "Sum", "f32");
	kernel("_Z38ncclKernel_AllReduce_RING_LL_Sum_floatP11ncclDevCommmP8ncclWork", ST_COLL_ALLREDUCE,
	       "RING", "LL", "Sum", "f32");
	/* some other NCCL kernel: NCCL's, of no known collective */
	kernel("ncclSomeFutureKernel_Xyz", -1, "", "", "", "");
	/* not NCCL's */
	CHECK(!nccl_kernel("void at::native::vectorized_elementwise_kernel<4>(int)", NULL));
	CHECK(!nccl_kernel("sm90_xmma_gemm_bf16bf16_bf16f32", NULL));
	CHECK(!nccl_kernel("NCCL", NULL));
	CHECK(!nccl_kernel(NULL, NULL));
}

static void test_ranges(void)
{
	CHECK(nccl_range("ncclAllReduce") == ST_COLL_ALLREDUCE);
	CHECK(nccl_range("ncclAllGather") == ST_COLL_ALLGATHER);
	CHECK(nccl_range("ncclReduceScatter") == ST_COLL_REDUCESCATTER);
	CHECK(nccl_range("ncclBroadcast") == ST_COLL_BROADCAST);
	CHECK(nccl_range("ncclBcast") == ST_COLL_BROADCAST);
	CHECK(nccl_range("ncclReduce") == ST_COLL_REDUCE);
	CHECK(nccl_range("ncclSend") == ST_COLL_SENDRECV);
	CHECK(nccl_range("ncclRecv") == ST_COLL_SENDRECV);
	CHECK(nccl_range("ncclGroupEnd") == -1);
	CHECK(nccl_range("ncclCommInitRank") == -1);
	CHECK(nccl_range("AllReduce") == -1);
	CHECK(nccl_range(NULL) == -1);
}

int main(void)
{
	test_kernels();
	test_ranges();
	return check_done("test_nccl");
}
