/*
 * nccl.h: NCCL's kernels and NVTX ranges known by their names, in every
 * version's spelling, so that communication is found in any program, not
 * only in steptrace's own step (whose ops say "comm").
 *
 * Kernels: ncclKernel_AllReduce_RING_LL_Sum_float (NCCL 2.x to 2.18, its
 * collective, algorithm, protocol, reduction and type), ncclDevKernel_
 * AllReduce_Sum_f32_RING_LL (2.19 on, the same in another order),
 * ncclDevKernel_Generic, ncclDevKernel_SendRecv, mangled (_Z..) or
 * demangled with their arguments. A kernel that names no collective
 * (Generic) takes it from the NCCL range it was launched under
 * (ncclAllReduce, ncclAllGather, ncclReduceScatter, ncclBroadcast,
 * ncclBcast, ncclReduce, ncclSend, ncclRecv). A name that has "nccl" in
 * it but none of these forms is NCCL's all the same, of no known
 * collective: it is counted, never dropped.
 */
#ifndef STEPTRACE_REPLAY_NCCL_H
#define STEPTRACE_REPLAY_NCCL_H

#include <stdbool.h>

struct replay;
struct replay_activity;

struct nccl_kernel {
	int type;              /* enum st_collective; -1 not named (Generic, an unknown spelling) */
	const char *algo;      /* "RING", "TREE", "NVLS", ...; "" not named */
	const char *proto;     /* "LL", "LL128", "SIMPLE"; "" not named */
	const char *redop;     /* "Sum", "Max", ...; "" */
	const char *dtype;     /* "f32", "bf16", ... (2.19's spelling for every version); "" */
};

/* true when `name` is one of NCCL's kernels; *k what the name says of it (k may be NULL) */
bool nccl_kernel(const char *name, struct nccl_kernel *k);

/*
 * True when activity a of rp is a collective's kernel: one of a "comm" op
 * (ST_OP_PHASE_COMM: steptrace's own step says so), or NCCL's by its name
 * (a program's NCCL kernels run under its modules' ops).
 */
bool nccl_collective(const struct replay *rp, const struct replay_activity *a);

/* The collective an NCCL API range names ("ncclAllReduce"): enum st_collective, -1 none. */
int nccl_range(const char *name);

#endif
