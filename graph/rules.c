/*
 * rules.c: the what-if rules that change the work (graph/rules.h):
 * precision=bf16, batch=xK, fuse=elementwise, bucket-mb=M, and ranks=N's
 * contention and host cost per collective call, as kernel factors and
 * edge delays for graph/retime.c.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/rules.h"

#include "lib/error.h"
#include "lib/stats.h"
#include "trace/types.h"

int graph_rules_parse(struct graph_rule *r, const char *text)
{
	const char *v;
	char *end;

	if (!strncmp(text, "precision", 9) && (!text[9] || text[9] == '=')) {
		if (strcmp(text, "precision=bf16"))
			return error("--what-if '%s': say precision=bf16 (an FP32 or TF32 recording in BF16)", text);
		r->kind = GR_PRECISION;
		return 0;
	}
	if (!strncmp(text, "fuse", 4) && (!text[4] || text[4] == '=')) {
		if (strcmp(text, "fuse=elementwise") && strcmp(text, "fuse=compile"))
			return error("--what-if '%s': say fuse=elementwise (chains of memory-bound kernels fused) or "
				     "fuse=compile (and the host's work between calls in the forward and backward gone)", text);
		r->kind = GR_FUSE;
		return 0;
	}
	if (!strncmp(text, "batch", 5) && (!text[5] || text[5] == '=' || !strncmp(text + 5, "\xc3\x97", 2))) {
		v = text[5] == '=' ? text + 6 : text[5] ? text + 7 : text + 5;
		if (*v == 'x' || *v == 'X')
			v++;
		errno = 0;
		r->factor = strtod(v, &end);
		if (errno || end == v || *end || !(r->factor > 0) || r->factor > 1000)
			return error("--what-if '%s': say batch=xK with K a number above 0, at most 1000 (batch=x2)", text);
		r->kind = GR_BATCH;
		return 0;
	}
	if (!strncmp(text, "data", 4) && (!text[4] || text[4] == '=')) {
		v = text + 5;
		errno = 0;
		r->factor = text[4] ? strtod(v, &end) : -1;
		if (!text[4] || errno || end == v || *end || !(r->factor >= 0) || r->factor > 1e6)
			return error("--what-if '%s': say data=K with K a factor from 0 to 1000000 (data=0.5)", text);
		r->kind = GR_DATA;
		return 0;
	}
	if (!strncmp(text, "bucket-mb", 9) && (!text[9] || text[9] == '=')) {
		v = text + 10;
		errno = 0;
		r->factor = text[9] ? strtod(v, &end) : 0;
		if (!text[9] || errno || end == v || *end || !(r->factor * 1e6 >= 1) || r->factor > 1e9)
			return error("--what-if '%s': say bucket-mb=M with M in MB, from 1e-6 to 1e9", text);
		r->kind = GR_BUCKET;
		return 0;
	}
	return 1;
}

/* ---- shared ------------------------------------------------------------------- */

static double *factors(const struct graph *g, double **kernel)
{
	if (!*kernel) {
		*kernel = malloc((g->n_nodes + 1) * sizeof(double));
		if (!*kernel) {
			error("out of memory");
			return NULL;
		}
		for (size_t k = 0; k < g->n_nodes; k++)
			(*kernel)[k] = 1;
	}
	return *kernel;
}

static int64_t *adds(const struct graph *g, int64_t **edge_add)
{
	if (!*edge_add) {
		*edge_add = calloc(g->n_edges + 1, sizeof(int64_t));
		if (!*edge_add)
			error("out of memory");
	}
	return *edge_add;
}

/* Each rank's path phases (replay_path_phases), for graph_activity_phase. NULL after an error line. */
static uint8_t **phases_new(const struct graph *g)
{
	uint8_t **ph = calloc(g->n_ranks + 1, sizeof(*ph));

	if (!ph) {
		error("out of memory");
		return NULL;
	}
	for (size_t r = 0; r < g->n_ranks; r++) {
		ph[r] = malloc(g->rp[r]->n_paths + 1);
		if (!ph[r]) {
			for (size_t k = 0; k < r; k++)
				free(ph[k]);
			free(ph);
			error("out of memory");
			return NULL;
		}
		replay_path_phases(g->rp[r], ph[r]);
	}
	return ph;
}

static void phases_free(const struct graph *g, uint8_t **ph)
{
	for (size_t r = 0; ph && r < g->n_ranks; r++)
		free(ph[r]);
	free(ph);
}

static int node_phase(const struct graph *g, uint8_t **ph, size_t i)
{
	const struct graph_node *n = &g->nodes[i];
	const struct replay *rp = g->rp[n->rank];

	return graph_activity_phase(rp, ph[n->rank], &rp->activities[n->index]);
}

/* A kernel's fixed cost: the run's shortest kernel (its launch and a wave's start), at least 1 ns. */
static double fixed_cost(const struct graph *g)
{
	uint64_t least = UINT64_MAX;

	for (size_t i = 0; i < g->n_nodes; i++)
		if (g->nodes[i].kind == GN_GPU && g->nodes[i].work == GW_KERNEL && g->nodes[i].own > 0 &&
		    g->nodes[i].own < least)
			least = g->nodes[i].own;
	return least == UINT64_MAX ? 1 : (double)least;
}

/* The factor that makes own's part above the fixed cost L k times as long. */
static double above(double own, double L, double k)
{
	if (own <= L)
		return 1;
	return (L + (own - L) * k) / own;
}

/* ---- precision, batch --------------------------------------------------------- */

static int beside_softmax(const struct graph *g, const struct graph_facts *f, uint8_t *mark);

/*
 * The bandwidth the forward's and backward's memory-bound kernels achieved:
 * their ops' bytes over their time (bytes a ns); 0 without bytes.
 */
static double memory_bandwidth(const struct graph *g, const struct graph_facts *f, uint8_t **ph)
{
	double b = 0, t = 0;

	for (size_t i = 0; f->bytes && i < g->n_nodes; i++) {
		const struct graph_node *n = &g->nodes[i];

		if (n->kind != GN_GPU || n->work != GW_KERNEL || !n->own || !(f->bytes[i] > 0) ||
		    (f->cls[i] != GK_MEMORY && f->cls[i] != GK_SOFTMAX) || (f->weights && f->weights[i]))
			continue;
		if (node_phase(g, ph, i) == ST_PHASE_OPTIMIZER)
			continue;
		b += f->bytes[i];
		t += (double)n->own;
	}
	return t > 0 ? b / t : 0;
}

static int scale_work(const struct graph *g, const struct graph_rule *r, bool fused, double *kernel)
{
	const struct graph_facts *f = r->facts;
	uint8_t **ph;
	double L = fixed_cost(g), bw = 0;
	uint8_t *attn = NULL;   /* per node: a product beside a softmax (fuse=elementwise's attention) */

	if (r->kind == GR_PRECISION && (!f || !f->cls))
		return error("--what-if %s: needs the kernels' classes (products, memory-bound)", r->text);
	if (r->kind == GR_PRECISION && !f->from)
		return error("--what-if %s: the run already computes in 16 bits (its products are BF16 or FP16)", r->text);
	if (r->kind == GR_PRECISION && !(f->product_ratio > 0))
		return error("--what-if %s: the device's BF16 and %s peaks are unknown (no device facts in the bundle)",
			     r->text, f->from);
	ph = phases_new(g);
	if (!ph)
		return -1;
	if (r->kind == GR_PRECISION) {
		bw = memory_bandwidth(g, f, ph);
		/* beside fuse=elementwise attention's products keep their scores on chip: no floor */
		if (bw > 0 && fused && (attn = calloc(g->n_nodes + 1, 1)) != NULL && beside_softmax(g, f, attn) < 0) {
			free(attn);
			phases_free(g, ph);
			return -1;
		}
		if (bw > 0 && fused && !attn) {
			phases_free(g, ph);
			return error("out of memory");
		}
	}
	for (size_t i = 0; i < g->n_nodes; i++) {
		const struct graph_node *n = &g->nodes[i];
		const struct replay *rp;
		int phase;

		if (n->kind != GN_GPU || n->work == GW_COMM)
			continue;
		phase = node_phase(g, ph, i);
		if (phase == ST_PHASE_OPTIMIZER)
			continue;   /* FP32 master weights and moments, of the parameters' size */
		if (r->kind == GR_BATCH) {
			rp = g->rp[n->rank];
			if (n->work == GW_COPY && rp->activities[n->index].kind == ST_MEMCPY &&
			    rp->activities[n->index].detail < rp->n_copies &&
			    rp->copies[rp->activities[n->index].detail].copy_kind != 1)
				continue;   /* only the batch's copies to the device (CUPTI: 1 host to device) grow */
			if (n->work == GW_KERNEL && f && f->weights && f->weights[i])
				continue;   /* over the parameters (a cast of the weights, the gradients' zeroing) */
			if (n->work == GW_KERNEL && f && f->cls && f->cls[i] == GK_PRODUCT && f->product_rate > 0 &&
			    f->flops[i] > 0 && f->bytes[i] > 0 && f->flops[i] / f->bytes[i] >= f->ridge && n->own > 0) {
				/* compute-bound: only its FLOPs at the run's fastest product rate grow, its
				 * time above that (tails, ramp) stays */
				double ideal = fmin((double)n->own, f->flops[i] / f->product_rate * 1e9);

				kernel[i] *= ((double)n->own + (r->factor - 1) * ideal) / (double)n->own;
				continue;
			}
			kernel[i] *= n->work == GW_COPY ? r->factor : above((double)n->own, L, r->factor);
			continue;
		}
		if (n->work != GW_KERNEL)
			continue;
		if (f->cls[i] == GK_PRODUCT) {
			double k = above((double)n->own, L, 1 / f->product_ratio);

			/* at least its bytes, halved, at the run's memory bandwidth: a product
			 * its FP32 FLOPs bound (attention's batched ones) turns memory-bound */
			if (bw > 0 && f->bytes[i] > 0 && n->own > 0 && !(attn && attn[i]))
				k = fmin(1, fmax(k, f->bytes[i] / 2 / bw / (double)n->own));
			kernel[i] *= k;
		} else if (f->cls[i] == GK_MEMORY || f->cls[i] == GK_SOFTMAX) {
			kernel[i] *= above((double)n->own, L, 0.5);
		}
	}
	free(attn);
	phases_free(g, ph);
	return 0;
}

/* ---- fuse=elementwise --------------------------------------------------------- */

/* A kernel for the chains: its node, by rank, stream, step and start. */
struct chained {
	uint32_t rank, stream;
	int32_t step;
	uint64_t start;
	uint32_t node;
};

static int cmp_chained(const void *x, const void *y)
{
	const struct chained *a = x, *b = y;

	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->stream != b->stream)
		return a->stream < b->stream ? -1 : 1;
	if (a->step != b->step)
		return a->step < b->step ? -1 : 1;
	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	return a->node < b->node ? -1 : a->node > b->node;
}

/* The run's kernels for the chains, sorted by rank, stream, step and start; NULL after an error line. */
static struct chained *kernels_chained(const struct graph *g, size_t *n)
{
	struct chained *k;

	*n = 0;
	for (size_t i = 0; i < g->n_nodes; i++)
		*n += g->nodes[i].kind == GN_GPU && g->nodes[i].work == GW_KERNEL;
	k = malloc((*n + 1) * sizeof(*k));
	if (!k) {
		error("out of memory");
		return NULL;
	}
	*n = 0;
	for (size_t i = 0; i < g->n_nodes; i++) {
		const struct graph_node *x = &g->nodes[i];
		const struct replay_activity *a;

		if (x->kind != GN_GPU || x->work != GW_KERNEL)
			continue;
		a = &g->rp[x->rank]->activities[x->index];
		k[(*n)++] = (struct chained){ x->rank, a->stream, a->step, x->start, (uint32_t)i };
	}
	qsort(k, *n, sizeof(*k), cmp_chained);
	return k;
}

/* Two products one after the other on one stream, in one step. */
static bool in_row(const struct graph_facts *f, const struct chained *a, const struct chained *b)
{
	return a->rank == b->rank && a->stream == b->stream && a->step == b->step && f->cls[a->node] == GK_PRODUCT &&
	       f->cls[b->node] == GK_PRODUCT;
}

/*
 * Marks attention's products: those just before and after a softmax alone
 * between two products (as fuse=elementwise finds them), and the products
 * in a row with them.
 */
static int beside_softmax(const struct graph *g, const struct graph_facts *f, uint8_t *mark)
{
	size_t n;
	struct chained *k = kernels_chained(g, &n);

	if (!k)
		return -1;
	for (size_t j = 0; j + 2 < n; j++) {
		const struct chained *a = &k[j], *s = &k[j + 1], *b = &k[j + 2];

		if (f->cls[a->node] == GK_PRODUCT && f->cls[s->node] == GK_SOFTMAX && f->cls[b->node] == GK_PRODUCT &&
		    a->step >= 0 && a->rank == s->rank && a->rank == b->rank && a->stream == s->stream &&
		    a->stream == b->stream && a->step == s->step && a->step == b->step)
			mark[a->node] = mark[b->node] = 1;
	}
	/* and the products in a row on either side of those (FlashAttention's backward: four products) */
	for (size_t j = 1; j < n; j++)
		if (mark[k[j - 1].node] && in_row(f, &k[j - 1], &k[j]))
			mark[k[j].node] = 1;
	for (size_t j = n; j-- > 1;)
		if (mark[k[j].node] && in_row(f, &k[j - 1], &k[j]))
			mark[k[j - 1].node] = 1;
	free(k);
	return 0;
}

/* One chain, k[from .. to): the largest member takes the chain's bytes at its bandwidth, the others go. */
static void fuse_chain(const struct graph *g, const struct graph_facts *f, const struct chained *k, size_t from,
		       size_t to, double *kernel)
{
	double t = 0, b = 0, big_b = 0;
	size_t big = from;
	bool sized = f->bytes != NULL;

	for (size_t j = from; j < to; j++) {
		uint32_t i = k[j].node;

		t += (double)g->nodes[i].own;
		sized = sized && f->bytes[i] > 0;
		if (g->nodes[i].own > g->nodes[k[big].node].own)
			big = j;
	}
	if (sized) {
		for (size_t j = from; j < to; j++) {
			b += f->bytes[k[j].node];
			if (f->bytes[k[j].node] > big_b) {
				big_b = f->bytes[k[j].node];
				big = j;
			}
		}
	}
	for (size_t j = from; j < to; j++) {
		uint32_t i = k[j].node;

		if (j != big) {
			kernel[i] = 0;
		} else if (sized && b > 0 && g->nodes[i].own > 0) {
			double cost = big_b * t / b;   /* the largest member's bytes at the chain's achieved bandwidth */

			kernel[i] *= cost / (double)g->nodes[i].own;
		}
	}
}

/*
 * fuse=compile's host side: in the forward and the backward (the compiled
 * region), the host's work between calls is gone: the compiled code issues
 * its calls back to back, each at its recorded own time (the per-launch
 * host cost); the optimizer, data loading and the rest stay as recorded.
 */
static int compiled(const struct graph *g, int64_t *edge_add)
{
	int64_t *in = malloc((g->n_nodes + 1) * sizeof(int64_t));
	uint8_t **ph = in ? phases_new(g) : NULL;

	if (!ph) {
		free(in);
		return in ? -1 : error("out of memory");
	}
	for (size_t i = 0; i < g->n_nodes; i++)
		in[i] = -1;
	for (size_t e = 0; e < g->n_edges; e++)
		if (g->edges[e].kind == GE_THREAD && g->edges[e].to >= 0 && (size_t)g->edges[e].to < g->n_nodes)
			in[g->edges[e].to] = (int64_t)e;
	for (size_t i = 0; i < g->n_nodes; i++) {
		const struct graph_node *x = &g->nodes[i];
		const struct replay *rp = g->rp[x->rank];
		int64_t e = in[i];
		int32_t range;
		int phase;

		if (x->kind != GN_API || e < 0 || x->index < 0 || (size_t)x->index >= rp->n_apis)
			continue;
		range = rp->apis[x->index].range;
		if (range < 0 || (size_t)range >= rp->n_ranges)
			continue;
		phase = ph[x->rank][rp->ranges[range].path];
		if ((phase == ST_PHASE_FORWARD || phase == ST_PHASE_BACKWARD) && g->edges[e].delay + edge_add[e] > 0)
			edge_add[e] = -g->edges[e].delay;
	}
	phases_free(g, ph);
	free(in);
	return 0;
}

/* The bytes of one tensor a softmax kernel moves (its op's inputs and outputs are of the scores' size); 0 unknown. */
static double scores_bytes(const struct graph *g, const struct graph_facts *f, uint32_t i)
{
	const struct replay *rp = g->rp[g->nodes[i].rank];
	const struct replay_op *op = replay_op(rp, rp->activities[g->nodes[i].index].op);

	if (!f->bytes || !(f->bytes[i] > 0) || !op || op->n_inputs + op->n_outputs == 0)
		return 0;
	return f->bytes[i] / (op->n_inputs + op->n_outputs);
}

/*
 * A product beside a softmax kept on chip: its bytes less the scores'
 * tensor, at the bandwidth it achieved, but no faster than its FLOPs at the
 * run's fastest product rate (nor its fixed cost L). Unchanged without its
 * bytes, its FLOPs or that rate, and in an FP32 or TF32 run (FlashAttention
 * is 16-bit only: an FP32 step keeps its products).
 */
static void on_chip(const struct graph *g, const struct graph_facts *f, uint32_t i, double tensor, double L,
		    double *kernel)
{
	double own = (double)g->nodes[i].own, t;

	if (f->from || !(tensor > 0) || !(own > 0) || !f->bytes || !(f->bytes[i] > 0) || !f->flops || !(f->flops[i] > 0) ||
	    !(f->product_rate > 0))
		return;
	t = own * fmax(0, f->bytes[i] - tensor) / f->bytes[i];
	t = fmax(t, fmax(L, f->flops[i] / f->product_rate * 1e9));
	if (t < own)
		kernel[i] *= t / own;
}

/*
 * The optimizer's memory-bound kernels' achieved bandwidth (bytes / ns):
 * their ops' bytes over their time, or without bytes registered AdamW in
 * FP32 over the run's parameters (read p g m v, write p m v) a step over
 * their time a step. 0 unknown, -1 after an error line.
 */
static double optimizer_bandwidth(const struct graph *g, const struct graph_facts *f)
{
	double b = 0, t = 0, t_all = 0, steps = 0, params;
	int64_t last = INT64_MIN;
	uint8_t **ph;

	if (!f->bytes || !f->cls)
		return 0;
	ph = phases_new(g);
	if (!ph)
		return -1;
	for (size_t i = 0; i < g->n_nodes; i++)
		if (g->nodes[i].kind == GN_GPU && g->nodes[i].work == GW_KERNEL && f->cls[i] == GK_MEMORY &&
		    node_phase(g, ph, i) == ST_PHASE_OPTIMIZER) {
			int64_t step = (int64_t)g->nodes[i].rank << 32 |
				       (uint32_t)g->rp[g->nodes[i].rank]->activities[g->nodes[i].index].step;

			steps += step != last;
			last = step;
			t_all += (double)g->nodes[i].own;
			if (f->bytes[i] > 0) {
				b += f->bytes[i];
				t += (double)g->nodes[i].own;
			}
		}
	phases_free(g, ph);
	params = (double)replay_parameters(&g->rp[0]->run);
	if (!(b > 0) && steps > 0 && params > 0) {
		b = GRAPH_ADAMW_BYTES_PER_PARAM * params;
		t = t_all / steps;
	}
	return b > 0 && t > 0 ? b / t : 0;
}

/*
 * The cast of the FP32 weights to their 16-bit copy folded into the
 * optimizer, which writes the copy as it writes the weights: the cast's
 * reading of the weights goes, its writing (2 of its 6 bytes a parameter)
 * stays, at the bandwidth the optimizer's kernels achieved.
 */
static int fold_casts(const struct graph *g, const struct graph_facts *f, double *kernel)
{
	double bw;

	if (!f->weights || !f->bytes)
		return 0;
	bw = optimizer_bandwidth(g, f);
	if (bw < 0)
		return -1;
	for (size_t i = 0; bw > 0 && i < g->n_nodes; i++)
		if (f->weights[i] == 2 && f->bytes[i] > 0 && g->nodes[i].own > 0)
			kernel[i] *= fmin(1, f->bytes[i] / 3 / bw / (double)g->nodes[i].own);
	return 0;
}

static int64_t *thread_edges_in(const struct graph *g);

/*
 * precision=bf16's casts of the FP32 master weights to their BF16 copy, once
 * a step: their bytes (an FP32 read and a BF16 write a parameter; only the
 * write when fuse=elementwise folds the cast into the optimizer) at the
 * optimizer's achieved bandwidth, added to the step's first forward kernel
 * (where steptrace's BF16 step runs its cast_weights; autocast casts each
 * weight at its first use in the forward: all of them at the start here),
 * and their launches' host work (one a weight tensor in a PyTorch run, one
 * kernel in steptrace's own step; none folded) added before the call that
 * launches that kernel: each the forward's typical launch of a memory-bound
 * kernel (the median of its call and the host's work before it). Without
 * the run's parameters or that bandwidth nothing is added.
 */
int graph_rules_casts(const struct graph *g, const struct graph_rule *r, bool fused, double **kernel,
		      int64_t **edge_add)
{
	const struct graph_facts *f = r->facts;
	const struct replay *rp0 = g->rp[0];
	double params = (double)replay_parameters(&rp0->run), bw, gpu, host = 0, casts = 0;
	uint64_t *launch = NULL;
	int64_t *in = NULL;
	size_t n_launch = 0;
	int32_t *first = NULL;   /* per rank and step slot: its first forward kernel */
	size_t slots = 0;
	uint8_t **ph;
	int ret = -1;

	if (!f || !f->cls || !f->from || !(params > 0))
		return 0;
	bw = optimizer_bandwidth(g, f);
	if (bw < 0)
		return -1;
	if (!(bw > 0))
		return 0;
	gpu = (fused ? 2.0 : 6.0) * params / bw;
	if (rp0->run.has_config)
		casts = 1;   /* steptrace's own step: one cast_weights kernel */
	for (size_t k = 0; !rp0->run.has_config && k < rp0->run.n_param_groups; k++)
		casts += (double)rp0->run.param_groups[k].tensors;
	if (!factors(g, kernel) || !adds(g, edge_add))
		return -1;
	for (size_t rk = 0; rk < g->n_ranks; rk++)
		for (size_t s = 0; s < g->rp[rk]->n_steps; s++)
			slots++;
	ph = phases_new(g);
	in = ph ? thread_edges_in(g) : NULL;
	launch = in ? malloc((g->n_nodes + 1) * sizeof(uint64_t)) : NULL;
	first = launch ? malloc((slots + 1) * sizeof(int32_t)) : NULL;
	if (!first) {
		if (ph && in && launch)
			error("out of memory");
		goto out;
	}
	for (size_t s = 0; s < slots; s++)
		first[s] = -1;
	for (size_t i = 0; i < g->n_nodes; i++) {
		const struct graph_node *x = &g->nodes[i];
		const struct replay *rp = g->rp[x->rank];
		const struct replay_activity *a;
		size_t slot = 0;
		int32_t api;

		if (x->kind != GN_GPU || x->work != GW_KERNEL || node_phase(g, ph, i) != ST_PHASE_FORWARD)
			continue;
		a = &rp->activities[x->index];
		api = a->api >= 0 && (size_t)a->api < rp->n_apis ? g->api_node[x->rank][a->api] : -1;
		if (f->cls[i] == GK_MEMORY && api >= 0) {   /* its launch: the call, and the host's work before it */
			int64_t e = in[api];

			launch[n_launch++] = g->nodes[api].own + (e >= 0 && g->edges[e].delay > 0 ? (uint64_t)g->edges[e].delay : 0);
		}
		if (a->step < 0 || (size_t)a->step >= rp->n_steps)
			continue;
		for (size_t rk = 0; rk < x->rank; rk++)
			slot += g->rp[rk]->n_steps;
		slot += (size_t)a->step;
		if (first[slot] < 0 || x->start < g->nodes[first[slot]].start)
			first[slot] = (int32_t)i;
	}
	if (n_launch && !fused) {
		qsort(launch, n_launch, sizeof(uint64_t), stats_cmp_u64);
		host = casts * (double)launch[n_launch / 2];
	}
	for (size_t s = 0; s < slots; s++) {
		const struct graph_node *x;
		const struct replay *rp;
		int32_t api;

		if (first[s] < 0)
			continue;
		x = &g->nodes[first[s]];
		rp = g->rp[x->rank];
		if (x->own > 0)
			(*kernel)[first[s]] += gpu / (double)x->own;
		api = rp->activities[x->index].api;
		api = api >= 0 && (size_t)api < rp->n_apis ? g->api_node[x->rank][api] : -1;
		if (api >= 0 && in[api] >= 0)
			(*edge_add)[in[api]] += (int64_t)llround(host);
	}
	ret = 0;
out:
	free(first);
	free(launch);
	free(in);
	phases_free(g, ph);
	return ret;
}

static int fuse(const struct graph *g, const struct graph_rule *r, double *kernel, int64_t **edge_add)
{
	const struct graph_facts *f = r->facts;
	struct chained *k;
	size_t n = 0;
	double L = fixed_cost(g);

	if (!f || !f->cls)
		return error("--what-if %s: needs the kernels' classes (products, memory-bound)", r->text);
	k = kernels_chained(g, &n);
	if (!k)
		return -1;
	/* a chain: memory-bound kernels in a row on one stream and step, a product before and after */
	for (size_t j = 0; j < n;) {
		size_t from, to;

		if (f->cls[k[j].node] != GK_PRODUCT || k[j].step < 0) {
			j++;
			continue;
		}
		from = to = j + 1;
		while (to < n && k[to].rank == k[j].rank && k[to].stream == k[j].stream && k[to].step == k[j].step &&
		       (f->cls[k[to].node] == GK_MEMORY || f->cls[k[to].node] == GK_SOFTMAX))
			to++;
		if (to < n && k[to].rank == k[j].rank && k[to].stream == k[j].stream && k[to].step == k[j].step &&
		    f->cls[k[to].node] == GK_PRODUCT && to - from >= 2)
			fuse_chain(g, f, k, from, to, kernel);
		else if (to < n && k[to].rank == k[j].rank && k[to].stream == k[j].stream &&
			 k[to].step == k[j].step && f->cls[k[to].node] == GK_PRODUCT && to - from == 1 &&
			 f->cls[k[from].node] == GK_SOFTMAX) {
			/* attention: the scores' softmax kept on chip, as FlashAttention; the products
			 * beside it no longer write the scores or read the probabilities */
			double tensor = scores_bytes(g, f, k[from].node);

			kernel[k[from].node] = 0;
			on_chip(g, f, k[j].node, tensor, L, kernel);
			on_chip(g, f, k[to].node, tensor, L, kernel);
		}
		j = to > j + 1 ? to : j + 1;
	}
	free(k);
	if (fold_casts(g, f, kernel) < 0)
		return -1;
	if (strcmp(r->text, "fuse=compile"))
		return 0;
	return adds(g, edge_add) ? compiled(g, *edge_add) : -1;
}

/* ---- collectives: their size, their time -------------------------------------- */

/* A collective node's payload: its op's bytes (steptrace's own), else its NCCL call's range's; 0 unknown. */
static double coll_bytes(const struct graph *g, size_t i)
{
	const struct replay *rp = g->rp[g->nodes[i].rank];
	const struct replay_activity *a = &rp->activities[g->nodes[i].index];
	const struct replay_op *op = replay_op(rp, a->op);
	int32_t r = a->range;

	if (op && op->bytes)
		return (double)op->bytes;
	for (int depth = 0; r >= 0 && (size_t)r < rp->n_ranges && depth < 64; depth++) {
		if (rp->ranges[r].bytes)
			return (double)rp->ranges[r].bytes;
		r = rp->ranges[r].parent;
	}
	return 0;
}

void graph_coll_fit(const struct graph *g, struct graph_coll_fit *fit)
{
	double sx = 0, sy = 0, sxx = 0, sxy = 0, n = 0;

	memset(fit, 0, sizeof(*fit));
	for (size_t i = 0; i < g->n_nodes; i++) {
		double x, y;

		if (g->nodes[i].kind != GN_GPU || g->nodes[i].work != GW_COMM || !(x = coll_bytes(g, i)))
			continue;
		y = (double)g->nodes[i].own;
		sx += x;
		sy += y;
		sxx += x * x;
		sxy += x * y;
		n++;
	}
	fit->n = (size_t)n;
	if (!n)
		return;
	/* least squares of own time against bytes; a slope that is not positive: the mean bandwidth, no latency */
	if (n >= 2 && n * sxx - sx * sx > 0) {
		fit->ns_per_byte = (n * sxy - sx * sy) / (n * sxx - sx * sx);
		fit->latency_ns = (sy - fit->ns_per_byte * sx) / n;
	}
	if (!(fit->ns_per_byte > 0) || fit->latency_ns < 0) {
		fit->ns_per_byte = sx > 0 ? sy / sx : 0;
		fit->latency_ns = 0;
	}
}

/* ---- bucket-mb=M -------------------------------------------------------------- */

static int64_t *thread_edges_out(const struct graph *g);

/* Per node, the thread edge into it (from its thread's previous call), -1 none. NULL after an error line. */
static int64_t *thread_edges_in(const struct graph *g)
{
	int64_t *in = malloc((g->n_nodes + 1) * sizeof(int64_t));

	if (!in) {
		error("out of memory");
		return NULL;
	}
	for (size_t i = 0; i < g->n_nodes; i++)
		in[i] = -1;
	for (size_t e = 0; e < g->n_edges; e++)
		if (g->edges[e].kind == GE_THREAD && g->edges[e].to >= 0 && (size_t)g->edges[e].to < g->n_nodes)
			in[g->edges[e].to] = (int64_t)e;
	return in;
}

/*
 * The host range that issued collective node c alone: the range open on
 * the run's main thread when its launch was called (NCCL may launch from a
 * thread of its own), up to its outermost ancestor holding no other GPU
 * work. -1 none.
 */
static int32_t call_range(const struct replay *rp, int32_t api)
{
	int32_t r = rp->apis[api].range, best = -1;

	if (r < 0)
		r = replay_range_at(rp, rp->main_thread, rp->apis[api].start);
	for (int d = 0; d < 4096 && r >= 0 && (size_t)r < rp->n_ranges; d++, r = rp->ranges[r].parent)
		if (rp->ranges[r].activities <= 1)
			best = r;
		else
			break;
	return best;
}

/* Of thread edge e's delay (the host's work between two calls), the part inside [lo, hi] taken out. */
static void work_removed(const struct graph *g, size_t e, int64_t *edge_add, uint64_t lo, uint64_t hi)
{
	const struct graph_edge *x = &g->edges[e];
	const struct replay *rp = g->rp[g->nodes[x->to].rank];
	uint64_t a, b, cut;

	if (x->delay <= 0 || g->nodes[x->from].kind != GN_API || g->nodes[x->to].kind != GN_API)
		return;
	a = rp->apis[g->nodes[x->from].index].end;
	b = rp->apis[g->nodes[x->to].index].start;
	a = a > lo ? a : lo;
	b = b < hi ? b : hi;
	cut = b > a ? b - a : 0;
	edge_add[e] -= cut < (uint64_t)x->delay ? (int64_t)cut : x->delay;
	if (x->delay + edge_add[e] < 0)
		edge_add[e] = -x->delay;
}

/* Call j of thread t (its apis[] index) launches GPU work that is a collective (1), other work (2), none (0). */
static int call_work(const struct graph *g, uint32_t rank, const struct replay_thread *t, size_t j)
{
	const struct replay *rp = g->rp[rank];
	int32_t a = rp->apis[t->apis[j]].activity;

	if (a < 0 || (size_t)a >= rp->n_activities)
		return 0;
	return g->act_node[rank][a] >= 0 && g->nodes[g->act_node[rank][a]].work == GW_COMM ? 1 : 2;
}

/*
 * The calls around a merged collective's launch (or the range that issued
 * it, r, when it is on the launching thread) on the launching thread that
 * launch no GPU work -- a wrapper's own calls
 * before and after the library's (PyTorch's ProcessGroupNCCL: its stream
 * capture checks, the events and stream waits that order the NCCL stream
 * after the compute stream and back, the Work's event) -- go with it, and
 * the host's work between them: on each side up to the thread's nearest
 * call that launches GPU work or synchronises (the work before the first
 * of them and after the last is the program's and stays). A side that
 * reaches another collective's launch first is left as it is: the calls
 * between two collectives cannot be told apart.
 */
static void call_cluster(const struct graph *g, const int64_t *in, const int64_t *out, uint32_t rank, int32_t api,
			 int32_t r, double *kernel, int64_t *edge_add)
{
	const struct replay *rp = g->rp[rank];
	const struct replay_thread *t = NULL;
	uint64_t thread = rp->apis[api].thread;
	bool own = r >= 0 && rp->ranges[r].thread == thread;   /* the range is on the launching thread */
	uint64_t lo = own ? rp->ranges[r].start : rp->apis[api].start;
	uint64_t hi = own ? rp->ranges[r].end : rp->apis[api].end;
	size_t j0 = 0, j1, a, b;

	for (size_t k = 0; k < rp->n_threads && !t; k++)
		if (rp->threads[k].thread == thread)
			t = &rp->threads[k];
	if (!t || !t->n_apis)
		return;
	for (j1 = t->n_apis; j0 < j1;) {   /* the thread's first call at or after lo */
		size_t m = j0 + (j1 - j0) / 2;

		if (rp->apis[t->apis[m]].start < lo)
			j0 = m + 1;
		else
			j1 = m;
	}
	for (j1 = j0; j1 < t->n_apis && rp->apis[t->apis[j1]].start < hi; j1++)
		;
	/* [a, j0): the calls before; [j1, b): after */
	for (a = j0; a > 0; a--) {
		int32_t at = g->api_node[rank][t->apis[a - 1]];

		if (at < 0 || g->nodes[at].sync || call_work(g, rank, t, a - 1))
			break;
	}
	if (a > 0 && a < j0 && call_work(g, rank, t, a - 1) == 1)
		a = j0;
	for (b = j1; b < t->n_apis; b++) {
		int32_t at = g->api_node[rank][t->apis[b]];

		if (at < 0 || g->nodes[at].sync || call_work(g, rank, t, b))
			break;
	}
	if (b < t->n_apis && b > j1 && call_work(g, rank, t, b) == 1)
		b = j1;
	if (a == j0 && b == j1)
		return;
	(void)out;
	for (size_t j = a; j < b; j++) {   /* the calls, and the work before each but the first */
		int32_t at = g->api_node[rank][t->apis[j]];

		if (j >= j0 && j < j1)
			continue;
		if (at >= 0)
			kernel[at] = 0;
		if (at >= 0 && in[at] >= 0 && j > a)
			work_removed(g, (size_t)in[at], edge_add, j < j0 ? rp->apis[t->apis[a]].start : hi,
				     j < j0 ? lo : rp->apis[t->apis[b - 1]].end);
	}
	if (a < j0 && j0 < t->n_apis && g->api_node[rank][t->apis[j0]] >= 0 &&
	    in[g->api_node[rank][t->apis[j0]]] >= 0)   /* from the last call before to the range */
		work_removed(g, (size_t)in[g->api_node[rank][t->apis[j0]]], edge_add, rp->apis[t->apis[a]].start, lo);
}

/*
 * Collective node c merged into a later one of its bucket: the host's work
 * that issued it goes too: its launch call, and the calls and the work
 * between them inside the range that issued it alone (call_range: its
 * events, its stream's wait, its NVTX ranges).
 */
static void call_removed(const struct graph *g, const int64_t *in, const int64_t *out, uint32_t c, double *kernel,
			 int64_t *edge_add)
{
	const struct graph_node *x = &g->nodes[c];
	const struct replay *rp = g->rp[x->rank];
	int32_t api = rp->activities[x->index].api, r;
	const struct replay_thread *t = NULL;
	uint64_t lo, hi;
	size_t j0 = 0, j1;

	if (api < 0 || (size_t)api >= rp->n_apis || g->api_node[x->rank][api] < 0)
		return;
	kernel[g->api_node[x->rank][api]] = 0;
	r = call_range(rp, api);
	call_cluster(g, in, out, x->rank, api, r, kernel, edge_add);
	if (r < 0)
		return;
	lo = rp->ranges[r].start;
	hi = rp->ranges[r].end;
	for (size_t k = 0; k < rp->n_threads && !t; k++)
		if (rp->threads[k].thread == rp->ranges[r].thread)
			t = &rp->threads[k];
	if (!t)
		return;
	for (j1 = t->n_apis; j0 < j1;) {   /* the thread's first call at or after lo (calls by start) */
		size_t m = j0 + (j1 - j0) / 2;

		if (rp->apis[t->apis[m]].start < lo)
			j0 = m + 1;
		else
			j1 = m;
	}
	for (size_t j = j0; j < t->n_apis && rp->apis[t->apis[j]].start < hi; j++) {
		int32_t at = g->api_node[x->rank][t->apis[j]];

		if (at < 0 || g->nodes[at].sync)
			continue;
		if (rp->apis[t->apis[j]].end <= hi)
			kernel[at] = 0;
		if (in[at] >= 0)
			work_removed(g, (size_t)in[at], edge_add, lo, hi);
		if (out[at] >= 0 && (j + 1 == t->n_apis || rp->apis[t->apis[j + 1]].start >= hi))
			work_removed(g, (size_t)out[at], edge_add, lo, hi);
	}
}

/*
 * Collectives issued after the backward (a naive or flat run: one
 * all-reduce per parameter, last first) in the buckets DDP would fill as
 * the backward finishes their gradients: each bucket (collectives k[j ..
 * to) of one rank and step) may start once the backward kernel that
 * completes its last gradient ends (after[]), instead of after its launch
 * and the waits recorded. Which kernel: the backward split by bytes in the
 * collectives' issue order (the gradients' reverse parameter order, the
 * order the backward finishes them), as ranks=N splits it: the bucket is
 * ready once the backward's recorded GPU time done reaches the share of
 * the step's collective bytes up to and with it. Only a step whose
 * collectives were all recorded to start after its backward ended moves
 * (a bucketed run's collectives keep where their hooks issued them), and
 * only to a kernel the re-timing reaches first (its end before the
 * collective's start in the graph's order).
 */
struct anchors {
	const struct chained *bw;      /* the backward's kernels, by rank, step and start */
	size_t n_bw;
	const uint32_t *pos;           /* per event (2 node + 0 start, + 1 end), its place in g->order */
};

static void bucket_anchor(const struct graph *g, const struct anchors *an, const struct chained *k, size_t first,
			  size_t j, size_t to, double before, double total, int32_t *after)
{
	size_t b0 = 0, b1 = an->n_bw;
	double busy = 0, done = 0, upto = before;
	int32_t at = -1;

	for (size_t m = j; m < to; m++)
		upto += coll_bytes(g, k[m].node);
	while (b0 < b1) {   /* the rank's and step's first backward kernel */
		size_t m = b0 + (b1 - b0) / 2;

		if (an->bw[m].rank < k[j].rank || (an->bw[m].rank == k[j].rank && an->bw[m].step < k[j].step))
			b0 = m + 1;
		else
			b1 = m;
	}
	for (b1 = b0; b1 < an->n_bw && an->bw[b1].rank == k[j].rank && an->bw[b1].step == k[j].step; b1++)
		busy += (double)g->nodes[an->bw[b1].node].own;
	/* every collective of the step recorded after its backward ended: a naive or flat run */
	if (b1 == b0 || !(busy > 0) || !(total > 0) || g->nodes[an->bw[b1 - 1].node].end > g->nodes[k[first].node].start)
		return;
	for (size_t b = b0; b < b1 && at < 0; b++) {
		done += (double)g->nodes[an->bw[b].node].own;
		if (b + 1 == b1 || done * total >= upto * busy)
			at = (int32_t)an->bw[b].node;
	}
	for (size_t m = j; m < to; m++) {
		uint32_t i = k[m].node;

		/* the kernel before it in the re-timing's order */
		if (an->pos[2 * (size_t)at + 1] < an->pos[2 * (size_t)i])
			after[i] = at;
	}
}

static int bucket(const struct graph *g, const struct graph_rule *r, double *kernel, int64_t *edge_add,
		  int32_t *after)
{
	struct graph_coll_fit fit;
	double cap = r->factor * 1e6;
	struct chained *k, *bw = NULL;
	int64_t *in, *out;
	uint32_t *pos = NULL;
	uint8_t **ph = NULL;
	size_t n = 0, unsized = 0, n_bw = 0, first = 0;
	double before = 0, total = 0;

	graph_coll_fit(g, &fit);
	for (size_t i = 0; i < g->n_nodes; i++)
		if (g->nodes[i].kind == GN_GPU && g->nodes[i].work == GW_COMM) {
			n++;
			unsized += !coll_bytes(g, i);
		}
	if (!n)
		return error("--what-if %s: the run has no collectives to bucket (a data-parallel run's ranks, "
			     "RUN.rank*.stb)", r->text);
	if (unsized || !(fit.ns_per_byte > 0))
		return error("--what-if %s: %zu of the run's %zu collectives have no size (no NCCL ranges or ops)",
			     r->text, unsized, n);
	k = malloc((n + 1) * sizeof(*k));
	in = thread_edges_in(g);
	out = in ? thread_edges_out(g) : NULL;
	ph = out ? phases_new(g) : NULL;
	bw = malloc((g->n_nodes + 1) * sizeof(*bw));
	pos = malloc((2 * g->n_nodes + 1) * sizeof(uint32_t));
	if (!k || !in || !out || !ph || !bw || !pos) {
		free(k);
		free(in);
		free(out);
		phases_free(g, ph);
		free(bw);
		free(pos);
		return in && out && ph ? error("out of memory") : -1;
	}
	for (size_t v = 0; v < 2 * g->n_nodes; v++)
		pos[g->order[v]] = (uint32_t)v;
	for (size_t i = 0; i < g->n_nodes; i++) {
		const struct graph_node *x = &g->nodes[i];

		if (x->kind == GN_GPU && x->work == GW_KERNEL && node_phase(g, ph, i) == ST_PHASE_BACKWARD)
			bw[n_bw++] = (struct chained){ x->rank, 0, g->rp[x->rank]->activities[x->index].step, x->start,
						       (uint32_t)i };
	}
	qsort(bw, n_bw, sizeof(*bw), cmp_chained);
	n = 0;
	for (size_t i = 0; i < g->n_nodes; i++) {
		const struct graph_node *x = &g->nodes[i];

		if (x->kind == GN_GPU && x->work == GW_COMM)
			k[n++] = (struct chained){ x->rank, 0, g->rp[x->rank]->activities[x->index].step, x->start,
						   (uint32_t)i };
	}
	qsort(k, n, sizeof(*k), cmp_chained);
	for (size_t j = 0; j < n;) {
		size_t to = j;
		double sum = 0;

		if (!j || k[j].rank != k[j - 1].rank || k[j].step != k[j - 1].step) {   /* a rank's step: its bytes */
			before = total = 0;
			first = j;
			for (size_t m = j; m < n && k[m].rank == k[j].rank && k[m].step == k[j].step; m++)
				total += coll_bytes(g, k[m].node);
		}
		/* a bucket: collectives of one rank and step, in issue order, until it holds at least M */
		while (to < n && k[to].rank == k[j].rank && k[to].step == k[j].step && (to == j || sum < cap))
			sum += coll_bytes(g, k[to++].node);
		for (size_t m = j; m < to; m++) {
			uint32_t i = k[m].node;
			double f = m + 1 < to ? 0
					      : (fit.latency_ns + sum * fit.ns_per_byte) /
							(fit.latency_ns + coll_bytes(g, i) * fit.ns_per_byte);
			const struct graph_node *x = &g->nodes[i];

			kernel[i] *= f;
			if (m + 1 < to)
				call_removed(g, in, out, i, kernel, edge_add);
			/* its ranks' meeting: the transfer after the last arrival scales alike */
			for (uint32_t e = 0; e < x->n_in; e++) {
				const struct graph_edge *ed = &g->edges[g->in_edges[x->in + e]];

				if (ed->kind == GE_COLL && ed->to_end && ed->delay > 0)
					edge_add[g->in_edges[x->in + e]] =
						(int64_t)(f * (double)(ed->delay + edge_add[g->in_edges[x->in + e]])) - ed->delay;
			}
		}
		if (k[j].step >= 0)
			bucket_anchor(g, &(struct anchors){ bw, n_bw, pos }, k, first, j, to, before, total, after);
		before += sum;
		j = to;
	}
	free(k);
	free(in);
	free(out);
	phases_free(g, ph);
	free(bw);
	free(pos);
	return 0;
}

/* ---- data=K ------------------------------------------------------------------- */

/* Whether API node i launched a copy from the host to the device (CUPTI's copy kind 1). */
static bool copies_in(const struct graph *g, int32_t i)
{
	const struct graph_node *n = &g->nodes[i];
	const struct replay *rp = g->rp[n->rank];
	int32_t a = rp->apis[n->index].activity;

	if (a < 0 || (size_t)a >= rp->n_activities || rp->activities[a].kind != ST_MEMCPY)
		return false;
	return rp->activities[a].detail < rp->n_copies && rp->copies[rp->activities[a].detail].copy_kind == 1;
}

/* A stretch of loading data=K scaled: a thread's host gap (recorded, on the run's time line) and what it saved (ns). */
struct loading {
	uint64_t from, to, thread;
	uint32_t rank;
	int64_t saved;
};

static int cmp_loading(const void *x, const void *y)
{
	const struct loading *a = x, *b = y;

	return (a->from > b->from) - (a->from < b->from);
}

static uint64_t node_thread(const struct graph *g, int32_t i)
{
	return g->rp[g->nodes[i].rank]->apis[g->nodes[i].index].thread;
}

/*
 * The other threads of the rank: a thread edge whose host gap spans a
 * stretch of loading whole (a thread idle from before the loading to
 * after it: PyTorch's autograd engine thread, whose backward waits for
 * the loop's forward; the graph has no edge between threads) shrinks by
 * what the loading saved: it waited for the loop, not worked.
 */
static void idle_threads(const struct graph *g, const struct loading *ld, size_t n, int64_t *edge_add)
{
	for (size_t e = 0; e < g->n_edges && n; e++) {
		const struct graph_edge *x = &g->edges[e];
		uint64_t a, b, thread;
		int64_t saved = 0;
		size_t lo = 0, hi = n;

		if (x->kind != GE_THREAD || x->delay <= 0 || g->nodes[x->from].kind != GN_API)
			continue;
		a = g->nodes[x->from].end;
		b = g->nodes[x->to].start;
		thread = node_thread(g, x->from);
		while (lo < hi) {   /* the first stretch starting at a or after */
			size_t mid = (lo + hi) / 2;

			if (ld[mid].from < a)
				lo = mid + 1;
			else
				hi = mid;
		}
		for (size_t k = lo; k < n && ld[k].from <= b; k++)
			if (ld[k].to <= b && ld[k].rank == g->nodes[x->from].rank && ld[k].thread != thread)
				saved += ld[k].saved;
		if (!saved)
			continue;
		edge_add[e] -= saved;
		if (x->delay + edge_add[e] < 0)   /* at most its whole gap */
			edge_add[e] = -x->delay;
	}
}

static int data(const struct graph *g, const struct graph_rule *r, int64_t *edge_add)
{
	int64_t *in = malloc((g->n_nodes + 1) * sizeof(int64_t));
	struct loading *ld = NULL;
	size_t n_ld = 0, cap = 0;

	if (!in)
		return error("out of memory");
	/* each call's thread edge in */
	for (size_t i = 0; i < g->n_nodes; i++)
		in[i] = -1;
	for (size_t e = 0; e < g->n_edges; e++)
		if (g->edges[e].kind == GE_THREAD && g->edges[e].to >= 0 && (size_t)g->edges[e].to < g->n_nodes)
			in[g->edges[e].to] = (int64_t)e;
	for (size_t i = 0; i < g->n_nodes; i++) {
		int32_t at = (int32_t)i;

		if (g->nodes[i].kind != GN_API || !copies_in(g, at))
			continue;
		/* back along its thread to the last synchronisation or copy to the device */
		for (int steps = 0; steps < 100000 && in[at] >= 0; steps++) {
			const struct graph_edge *e = &g->edges[in[at]];

			if (e->delay > 0) {   /* of the delay as other rules left it: data=0.5 twice is data=0.25 */
				int64_t was = edge_add[in[at]];

				edge_add[in[at]] = (int64_t)(r->factor * (double)(e->delay + was)) - e->delay;
				if (n_ld == cap) {
					struct loading *more = realloc(ld, (cap ? 2 * cap : 64) * sizeof(*ld));

					if (!more) {
						free(ld);
						free(in);
						return error("out of memory");
					}
					ld = more;
					cap = cap ? 2 * cap : 64;
				}
				ld[n_ld++] = (struct loading){ g->nodes[e->from].end, g->nodes[e->to].start,
							       node_thread(g, e->to), g->nodes[e->to].rank,
							       was - edge_add[in[at]] };
			}
			at = e->from;
			if (g->nodes[at].sync || copies_in(g, at))
				break;
		}
	}
	free(in);
	if (n_ld)   /* qsort's array may not be NULL, even empty */
		qsort(ld, n_ld, sizeof(*ld), cmp_loading);
	idle_threads(g, ld, n_ld, edge_add);
	free(ld);
	return 0;
}

/* Per node, the node whose end it may start after instead (-1: its recorded edges), allocated when first needed. */
static int32_t *starts(const struct graph *g, int32_t **after)
{
	if (!*after) {
		*after = malloc((g->n_nodes + 1) * sizeof(int32_t));
		if (!*after) {
			error("out of memory");
			return NULL;
		}
		for (size_t k = 0; k < g->n_nodes; k++)
			(*after)[k] = -1;
	}
	return *after;
}

int graph_rules_effects(const struct graph *g, const struct graph_rule *r, bool fused, double **kernel,
			int64_t **edge_add, int32_t **after)
{
	switch (r->kind) {
	case GR_PRECISION:
	case GR_BATCH:
		return factors(g, kernel) ? scale_work(g, r, fused, *kernel) : -1;
	case GR_FUSE:
		return factors(g, kernel) ? fuse(g, r, *kernel, edge_add) : -1;
	case GR_BUCKET:
		return factors(g, kernel) && adds(g, edge_add) && starts(g, after) ? bucket(g, r, *kernel, *edge_add, *after)
										    : -1;
	case GR_DATA:
		return adds(g, edge_add) ? data(g, r, *edge_add) : -1;
	default:
		return 0;
	}
}

/* ---- ranks=N: contention, the host's cost per collective call ------------------ */

/* Per API node, the thread edge out of it (to its thread's next call), -1 none. NULL after an error line. */
static int64_t *thread_edges_out(const struct graph *g)
{
	int64_t *out = malloc((g->n_nodes + 1) * sizeof(int64_t));

	if (!out) {
		error("out of memory");
		return NULL;
	}
	for (size_t i = 0; i < g->n_nodes; i++)
		out[i] = -1;
	for (size_t e = 0; e < g->n_edges; e++)
		if (g->edges[e].kind == GE_THREAD && g->edges[e].from >= 0 && (size_t)g->edges[e].from < g->n_nodes)
			out[g->edges[e].from] = (int64_t)e;
	return out;
}

/* ns of host time after the launch of activity `act` (rank 0): on its call's thread edge out. */
static void host_after(const struct graph *g, const int64_t *out, uint32_t act, uint64_t ns, int64_t *edge_add)
{
	const struct replay *rp = g->rp[0];
	int32_t api = rp->activities[act].api;

	if (api >= 0 && (size_t)api < rp->n_apis && ns && g->api_node[0][api] >= 0 && out[g->api_node[0][api]] >= 0)
		edge_add[out[g->api_node[0][api]]] += (int64_t)ns;
}

int graph_rules_ranks(const struct graph *g, const struct graph_ranks_model *rm, double bucket_ns,
		      const uint64_t *own, const double *work, double **kernel, int64_t **edge_add)
{
	const struct replay *rp = g->rp[0];
	double c = rm->contention > 0 ? rm->contention : 1;
	uint64_t bucket_b = rm->bucket_bytes && rm->bucket_bytes < rm->grad_bytes ? rm->bucket_bytes : rm->grad_bytes;
	size_t n_buckets = bucket_b ? (size_t)((rm->grad_bytes + bucket_b - 1) / bucket_b) : 0;
	double t_comm = (double)n_buckets * bucket_ns;
	uint8_t **ph;
	uint32_t *all, *at;
	int64_t *out;

	if ((c == 1 && !rm->call_ns) || !n_buckets)
		return 0;
	if (!factors(g, kernel) || !adds(g, edge_add))
		return -1;
	ph = phases_new(g);
	out = ph ? thread_edges_out(g) : NULL;
	all = malloc((rp->n_activities + 1) * sizeof(uint32_t));
	at = calloc(rp->n_steps + 2, sizeof(uint32_t));
	if (!ph || !out || !all || !at) {
		phases_free(g, ph);
		free(out);
		free(all);
		free(at);
		return ph && out ? error("out of memory") : -1;
	}
	/* each step's activities, in their order (a counting sort by step) */
	for (size_t i = 0; i < rp->n_activities; i++)
		if (rp->activities[i].step >= 0 && (size_t)rp->activities[i].step < rp->n_steps)
			at[rp->activities[i].step + 1]++;
	for (size_t s = 0; s < rp->n_steps; s++)
		at[s + 1] += at[s];
	for (size_t i = 0; i < rp->n_activities; i++)
		if (rp->activities[i].step >= 0 && (size_t)rp->activities[i].step < rp->n_steps)
			all[at[rp->activities[i].step]++] = (uint32_t)i;
	for (size_t s = rp->n_steps; s > 0; s--)
		at[s] = at[s - 1];
	at[0] = 0;
	for (size_t s = 0; s < rp->n_steps; s++) {
		uint64_t opt = UINT64_MAX, busy0 = 0, done0 = 0;
		double busy = 0, done = 0, after = 0;
		size_t n = at[s + 1] - at[s], b = 0, first = SIZE_MAX;
		const uint32_t *acts = all + at[s];
		uint32_t last = UINT32_MAX;

		/* the backward: its kernels that began before the optimizer's first, as recorded */
		for (size_t j = 0; j < n; j++) {
			int32_t k = g->act_node[0][acts[j]];

			if (node_phase(g, ph, (size_t)k) == ST_PHASE_OPTIMIZER && g->nodes[k].start < opt)
				opt = g->nodes[k].start;
		}
		for (size_t j = 0; j < n; j++) {
			int32_t k = g->act_node[0][acts[j]];

			if (node_phase(g, ph, (size_t)k) == ST_PHASE_BACKWARD && g->nodes[k].start < opt) {
				busy0 += g->nodes[k].own;
				busy += (double)(own ? own[k] : g->nodes[k].own) * (work ? work[k] : 1);
			}
		}
		if (!busy)
			continue;
		/*
		 * where the host's cost per call goes: after the launch of the kernel that
		 * completes each bucket, by the recorded times (the other rules' change to
		 * the kernels moves no host time: the prediction stays monotone in them)
		 */
		for (size_t j = 0, b0 = 0; j < n && busy0 && rm->bucket_bytes; j++) {
			int32_t k = g->act_node[0][acts[j]];

			if (node_phase(g, ph, (size_t)k) != ST_PHASE_BACKWARD || g->nodes[k].start >= opt)
				continue;
			done0 += g->nodes[k].own;
			for (; b0 < n_buckets && (double)done0 * (double)n_buckets >= (double)(b0 + 1) * (double)busy0; b0++)
				host_after(g, out, acts[j], rm->call_ns, *edge_add);
		}
		for (size_t j = 0; j < n; j++) {
			int32_t k = g->act_node[0][acts[j]];
			double d;

			if (node_phase(g, ph, (size_t)k) != ST_PHASE_BACKWARD || g->nodes[k].start >= opt)
				continue;
			d = (double)(own ? own[k] : g->nodes[k].own) * (work ? work[k] : 1);
			if (first != SIZE_MAX)
				after += d;
			done += d;
			last = acts[j];
			while (b < n_buckets && done * (double)n_buckets >= (double)(b + 1) * busy) {
				if (rm->bucket_bytes && first == SIZE_MAX)
					first = j;
				b++;
			}
		}
		if (!rm->bucket_bytes) {   /* naive: every call after the backward */
			if (last != UINT32_MAX)
				host_after(g, out, last, rm->call_ns * (rm->tensors ? rm->n_tensors : 1), *edge_add);
			continue;
		}
		/* the backward's kernels beside the all-reduces: slowed by the share of their time those cover */
		if (first == SIZE_MAX || !(after > 0) || c == 1)
			continue;
		for (size_t j = first + 1; j < n; j++) {
			int32_t k = g->act_node[0][acts[j]];

			if (g->nodes[k].work == GW_KERNEL && node_phase(g, ph, (size_t)k) == ST_PHASE_BACKWARD &&
			    g->nodes[k].start < opt)
				(*kernel)[k] *= 1 + (c - 1) * fmin(1, t_comm / after);
		}
	}
	phases_free(g, ph);
	free(out);
	free(all);
	free(at);
	return 0;
}
