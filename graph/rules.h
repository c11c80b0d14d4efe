/*
 * rules.h: the what-if rules that change the work itself rather than who
 * waits for whom (docs/whatif.md has each one's model, inputs and limits).
 * Each is expressed as effects the re-timing (graph/retime.c) applies:
 * a factor on a kernel's own duration (0: the kernel removed) and a change
 * of an edge's delay.
 *
 *   precision=bf16    an FP32 (or TF32) step in BF16 with FP32 master weights:
 *                     products (GK_PRODUCT) by the device's BF16 / recorded
 *                     rate ratio (its datasheet's or measured peaks), at
 *                     least their bytes, halved, at the forward's and
 *                     backward's achieved memory bandwidth (not attention's
 *                     beside fuse=elementwise: on chip), the
 *                     forward's and backward's memory-bound kernels by their
 *                     bytes, halved; above each kernel's fixed cost (the
 *                     run's shortest kernel), which stays; the optimizer,
 *                     copies and collectives as recorded; the casts of the
 *                     weights to BF16 added once a step (graph_rules_casts)
 *   batch=xK          the batch K times larger (or smaller): every kernel of
 *                     the forward and backward, and the copies to the device,
 *                     above its fixed cost x K (products by their FLOPs and the
 *                     rest by their bytes, both linear in the batch); the
 *                     optimizer's fixed-size kernels as recorded
 *   fuse=elementwise  each chain of memory-bound kernels between two products
 *                     (consecutive on one stream within a step, two or more)
 *                     one kernel: the bytes of the chain's largest member (an
 *                     elementwise chain's inputs and outputs are tensors of one
 *                     size) at the chain's achieved bandwidth; its launches kept;
 *                     a softmax alone between two products (attention) removed
 *   fuse=compile      fuse=elementwise, and the host's work between calls in the
 *                     forward and backward phases gone (a compiled region issues
 *                     its calls back to back, each at its recorded own time)
 *   bucket-mb=M       a recorded data-parallel run's collectives (per rank and
 *                     step, in issue order) merged into buckets of at least M MB
 *                     as DDP fills them: each bucket's last collective takes the
 *                     bucket's time (latency + bytes / bandwidth, fitted to the
 *                     run's own collectives), the others removed, with the
 *                     host calls and work of the range that issued each alone;
 *                     collectives issued after the backward (naive) start as
 *                     their bucket is ready: after the backward kernel that
 *                     completes its share of the step's bytes (`after`)
 *   data=K            the host's data loading x K: its work between calls from
 *                     the last synchronisation (the previous step's end) to
 *                     each call that copies to the device (the batch's x.to(),
 *                     or from the previous such call); another thread's gap
 *                     between two calls that spans such loading whole (the
 *                     autograd engine's thread, idle till the forward is
 *                     done) shorter by what the loading saved
 *   ranks=N (graph.h) here also: the backward's kernels that run once the first
 *                     bucket is ready x contention (scaled by the share of that
 *                     time the all-reduces cover) and each collective call's
 *                     host time added after the launch that completes its bucket
 */
#ifndef STEPTRACE_GRAPH_RULES_H
#define STEPTRACE_GRAPH_RULES_H

#include <stdbool.h>
#include <stdint.h>

#include "graph/graph.h"

/* What a GPU node is, as analyze classifies it (analyze/category.h). */
/* GK_SOFTMAX: a memory-bound kernel that is a softmax (fuse=elementwise's attention sandwich) */
enum graph_kernel_class { GK_OTHER, GK_PRODUCT, GK_MEMORY, GK_SOFTMAX };

struct graph_facts {
	uint8_t *cls;                  /* per node: enum graph_kernel_class */
	double *bytes;                 /* per node: the bytes of its op, its share; 0 unknown */
	double *flops;                 /* per node: the FLOPs of its op, its share; 0 unknown */
	uint8_t *weights;              /* per node: 1 for work over the weights, once a step (cast_weights, zero_grad);
					* 2: a cast of the FP32 weights to 16 bits */
	double product_rate;           /* FLOP/s: the fastest compute-bound product's (batch=xK); 0 unknown */
	double ridge;                  /* FLOP/B: the products' peak over the bandwidth; 0 unknown */
	double product_ratio;          /* BF16 rate / the recorded products' rate (peaks); 0 unknown */
	const char *from;              /* the recorded precision ("fp32", "tf32"); NULL: already 16-bit */
};

/* Parses the rules above: 0, -1 after one line, 1 when `text` is none of them. */
int graph_rules_parse(struct graph_rule *r, const char *text);

/*
 * Rule r's effects on graph g: factors into (*kernel)[node], delays added
 * into (*edge_add)[edge], and (*after)[node]: a node recorded earlier whose
 * end a GPU node may start after instead of its launch and inferred waits
 * (its stream's order and its end edges kept; bucket-mb=M's collectives
 * issued after the backward, started as their bucket is ready), each array
 * allocated (1s, 0s, -1s) when first needed. Rules of other kinds change
 * nothing. 0, or -1 after one line.
 */
int graph_rules_effects(const struct graph *g, const struct graph_rule *r, bool fused, double **kernel,
			int64_t **edge_add, int32_t **after);

/*
 * precision=bf16 (rule r) adds the casts of the weights to their BF16 copy
 * once a step (graph/rules.c says where); fused: fuse=elementwise is among
 * the same prediction's rules, and folds them into the optimizer. After
 * every other rule's effects (the casts' time is added, not scaled). 0, or
 * -1 after one line.
 */
int graph_rules_casts(const struct graph *g, const struct graph_rule *r, bool fused, double **kernel,
		      int64_t **edge_add);

/*
 * An edge's delay d with what the rules added to it (add NULL: none): a
 * delay that was not negative stays so (data=0 after unrecorded took the
 * recorder's time out of the same gap: no call before the one it follows).
 */
static inline int64_t graph_rules_delay(int64_t d, const int64_t *add, size_t e)
{
	int64_t x;

	if (!add || !add[e])
		return d;
	x = d + add[e];
	return d >= 0 && x < 0 ? 0 : x;
}

/*
 * ranks=N's contention and host cost per collective call (rm->contention,
 * rm->call_ns); bucket_ns: a full bucket's all-reduce (graph_bw_table_time,
 * the caller's). Which kernels the all-reduces run beside, and how much
 * each slows, come from the kernels' recorded order and their durations
 * (own: per node, NULL the recorded ones) under the rules that change the
 * work (work: per node their factor, NULL none: precision, batch, fuse,
 * data, bucket-mb), not under the rules that only take time out: a kernel
 * those shrink would otherwise leave the others more of the all-reduces
 * to hide under, each slowed more, and the prediction could lengthen.
 */
int graph_rules_ranks(const struct graph *g, const struct graph_ranks_model *rm, double bucket_ns,
		      const uint64_t *own, const double *work, double **kernel, int64_t **edge_add);

/* The time to all-reduce `bytes` as the run's own collectives took: latency + bytes / bandwidth (ns). */
struct graph_coll_fit {
	double latency_ns, ns_per_byte;
	size_t n;                      /* collectives with a size it was fitted to */
};
void graph_coll_fit(const struct graph *g, struct graph_coll_fit *fit);

#endif
