/*
 * whatif.h: what the rules of graph/rules.h need to know of a run that
 * only the analyses can say: each kernel's class (a product, memory-bound,
 * other: analyze/category.h), the bytes of its op (its share, by time), the
 * device's BF16 rate against the recorded precision's (the header's peaks),
 * and for ranks=N the contention and host cost per collective call
 * (--contention FILE, or learned from a recorded multi-rank run).
 */
#ifndef STEPTRACE_ANALYZE_WHATIF_H
#define STEPTRACE_ANALYZE_WHATIF_H

#include "graph/graph.h"
#include "graph/rules.h"

/*
 * Fills f for graph g (rank 0's replay says the precision and peaks) when
 * a rule of `rules` needs it (precision, batch, fuse); sets those rules'
 * `facts`. 0, or -1 after one line. whatif_facts_release frees it.
 */
int whatif_facts(const struct graph *g, struct graph_rule *rules, size_t n, struct graph_facts *f);
void whatif_facts_release(struct graph_facts *f);

/*
 * A recorded multi-rank run's calibration for ranks=N: how much longer its
 * kernels ran beside a collective than the same kernels alone (time-weighted,
 * graph_contention), and the host's time per collective call (the median over
 * the NCCL calls' ranges of the host time between the launches of the
 * computations around each, shared by the calls in it, less the thread's
 * median such time with no NCCL call between).
 * -1 after one line; 0 with *n_beside 0 when nothing ran beside a collective.
 */
int whatif_calibrate(const struct graph *g, double *contention, double *call_us, long *n_beside, size_t *n_calls);

/*
 * --contention FILE: a CSV with the columns contention and call_us (what
 * `explain RUN.rank*.stb --section calibration --format csv` writes), its
 * first row; into rm. 0, or -1 after one line.
 */
int whatif_calibration_load(const char *path, struct graph_ranks_model *rm);

/*
 * Without --contention: the calibration of the shipped PyTorch DDP sample
 * (samples/pytorch-ddp.rank*.stb: tests/foreign/ddp_train.py, two H200s,
 * `explain ... --section calibration`): contention 1.382, 142.1 us a call
 * (the sample recorded on two H100s before it: 1.357, 175.4 us).
 */
#define WHATIF_CALIBRATION_DEFAULT_CONTENTION 1.382
#define WHATIF_CALIBRATION_DEFAULT_CALL_NS 142100
#define WHATIF_CALIBRATION_DEFAULT_SOURCE \
	"the default without --contention: samples/pytorch-ddp.rank*.stb's calibration, PyTorch DDP on two H200s"
int whatif_calibration_default(struct graph_ranks_model *rm);

/*
 * ranks=N --naive on a run without steptrace's model (1.8: its parameter
 * groups): each group's tensors, each of the group's mean size, into
 * *tensors (owned by the caller) and rm. 0 (nothing when there are no
 * groups), or -1 after one line.
 */
int whatif_group_tensors(const struct replay *rp, struct graph_ranks_model *rm, uint64_t **tensors);

#endif
