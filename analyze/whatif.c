/*
 * whatif.c: the run's facts that graph/rules.c's rules need (whatif.h):
 * kernel classes and bytes, the BF16 rate ratio, ranks=N's calibration.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "analyze/whatif.h"

#include "analyze/category.h"
#include "lib/error.h"
#include "lib/stats.h"

/* The recorded products' precision by their names (by time): "fp32", "tf32", or NULL for 16 bits. */
static const char *names_precision(const struct graph *g, const uint8_t *cls)
{
	double t[3] = { 0, 0, 0 };   /* fp32, tf32, 16-bit */

	for (size_t i = 0; i < g->n_nodes; i++) {
		const struct replay *rp;
		const char *s;

		if (cls[i] != GK_PRODUCT)
			continue;
		rp = g->rp[g->nodes[i].rank];
		s = replay_str(rp, rp->activities[g->nodes[i].index].name);
		if (strstr(s, "tf32") || !strncmp(s, "nvjet_t", 7))
			t[1] += (double)g->nodes[i].own;
		else if (strstr(s, "bf16") || strstr(s, "f16") || strstr(s, "hgemm") || strstr(s, "_h_") ||
			 !strncmp(s, "nvjet_h", 7) || !strncmp(s, "nvjet_b", 7))
			t[2] += (double)g->nodes[i].own;
		else
			t[0] += (double)g->nodes[i].own;
	}
	return t[2] > t[0] && t[2] > t[1] ? NULL : t[1] > t[0] ? "tf32" : "fp32";
}

int whatif_facts(const struct graph *g, struct graph_rule *rules, size_t n, struct graph_facts *f)
{
	const struct replay *rp = g->rp[0];
	const struct replay_device *d = &rp->run.device;
	bool need = false;
	double *op_time = NULL, *op_calls = NULL;   /* per op: its kernels' time; its calls (the steps it ran in) */
	int64_t *op_last = NULL;                      /* per op: the step + 2 of its last kernel, 0 none */

	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < n; i++)
		need |= rules[i].kind == GR_PRECISION || rules[i].kind == GR_BATCH || rules[i].kind == GR_FUSE;
	if (!need)
		return 0;
	f->cls = calloc(g->n_nodes + 1, 1);
	f->bytes = calloc(g->n_nodes + 1, sizeof(double));
	f->flops = calloc(g->n_nodes + 1, sizeof(double));
	f->weights = calloc(g->n_nodes + 1, 1);
	if (!f->cls || !f->bytes || !f->flops || !f->weights) {
		whatif_facts_release(f);
		return error("out of memory");
	}
	for (size_t r = 0; r < g->n_ranks; r++) {
		struct category_cache cc;
		const struct replay *x = g->rp[r];

		if (category_cache_init(&cc, x) < 0) {
			whatif_facts_release(f);
			return -1;
		}
		free(op_time);
		free(op_calls);
		free(op_last);
		op_time = calloc(x->n_ops + 1, sizeof(double));
		op_calls = calloc(x->n_ops + 1, sizeof(double));
		op_last = calloc(x->n_ops + 1, sizeof(int64_t));
		if (!op_time || !op_calls || !op_last) {
			free(op_time);
			free(op_calls);
			free(op_last);
			category_cache_release(&cc);
			whatif_facts_release(f);
			return error("out of memory");
		}
		for (size_t i = 0; i < x->n_activities; i++) {
			int32_t k = g->act_node[r][i];
			const struct replay_activity *a = &x->activities[i];
			const struct replay_op *op;
			enum kernel_category c;
			size_t o;

			if (k < 0 || a->kind != ST_KERNEL || g->nodes[k].work != GW_KERNEL)
				continue;
			c = category_cached(&cc, a);
			op = replay_op(x, a->op);   /* its index: ids need not be dense */
			o = op ? (size_t)(op - x->ops) : 0;
			f->cls[k] = c == CAT_GEMM || c == CAT_ATTENTION ? GK_PRODUCT
				    : c == CAT_SOFTMAX ? GK_SOFTMAX
				    : c == CAT_ELEMENTWISE || c == CAT_REDUCTION || c == CAT_OPTIMIZER
					? GK_MEMORY
					: GK_OTHER;
			if (op) {
				op_time[o] += (double)g->nodes[k].own;
				if (op_last[o] != (int64_t)a->step + 2) {
					op_calls[o]++;
					op_last[o] = (int64_t)a->step + 2;
				}
			}
		}
		/* a kernel's bytes and FLOPs: its op's per call, shared among one call's kernels by their time */
		for (size_t i = 0; i < x->n_activities; i++) {
			int32_t k = g->act_node[r][i];
			const struct replay_activity *a = &x->activities[i];
			const struct replay_op *op;
			size_t o;

			if (k < 0 || a->kind != ST_KERNEL || g->nodes[k].work != GW_KERNEL)
				continue;
			op = replay_op(x, a->op);
			if (!op)
				continue;
			o = (size_t)(op - x->ops);
			if (op->bytes && op_time[o] > 0)
				f->bytes[k] = (double)op->bytes * (double)g->nodes[k].own * op_calls[o] / op_time[o];
			if (op->flops && op_time[o] > 0)
				f->flops[k] = (double)op->flops * (double)g->nodes[k].own * op_calls[o] / op_time[o];
			/* steptrace's own ops over the parameters, once a step whatever the batch */
			if (!strcmp(replay_str(x, op->kind), "cast_weights") ||
			    !strcmp(replay_str(x, op->kind), "zero_grad"))
				f->weights[k] = 1;
			/* a cast of the FP32 weights to their 16-bit copy: 2 of its 6 bytes per parameter written */
			if (!strcmp(replay_str(x, op->kind), "cast_weights") && op->n_inputs == 1 &&
			    op->n_outputs == 1 && op->inputs[0] == ST_DT_F32 &&
			    (op->outputs[0] == ST_DT_BF16 || op->outputs[0] == ST_DT_F16))
				f->weights[k] = 2;
		}
		category_cache_release(&cc);
	}
	free(op_time);
	free(op_calls);
	free(op_last);
	/* the recorded precision: the header's (steptrace's own model), else the products' names */
	if (rp->run.has_config && rp->run.config.precision >= 0)
		f->from = rp->run.config.precision == ST_BF16 ? NULL : rp->run.config.precision == ST_TF32 ? "tf32" : "fp32";
	else
		f->from = names_precision(g, f->cls);
	if (f->from) {
		double base = !strcmp(f->from, "tf32") ? d->peak_tf32_flops : d->peak_fp32_flops;

		f->product_ratio = base > 0 && d->peak_bf16_flops > 0 ? d->peak_bf16_flops / base : 0;
	}
	/* the products' ridge point, and the fastest rate a compute-bound one reached (batch=xK) */
	{
		double peak = !f->from ? d->peak_bf16_flops
			      : !strcmp(f->from, "tf32") ? d->peak_tf32_flops : d->peak_fp32_flops;

		f->ridge = peak > 0 && d->peak_bandwidth > 0 ? peak / d->peak_bandwidth : 0;
		for (size_t i = 0; f->ridge > 0 && i < g->n_nodes; i++) {
			double rate;

			if (f->cls[i] != GK_PRODUCT || !(f->flops[i] > 0) || !(f->bytes[i] > 0) || !g->nodes[i].own ||
			    f->flops[i] / f->bytes[i] < f->ridge)
				continue;
			rate = f->flops[i] / ((double)g->nodes[i].own * 1e-9);
			if (rate > f->product_rate)
				f->product_rate = rate;
		}
		if (f->product_rate > peak)
			f->product_rate = peak;
	}
	for (size_t i = 0; i < n; i++)
		if (rules[i].kind == GR_PRECISION || rules[i].kind == GR_BATCH || rules[i].kind == GR_FUSE)
			rules[i].facts = f;
	return 0;
}

void whatif_facts_release(struct graph_facts *f)
{
	free(f->cls);
	free(f->bytes);
	free(f->flops);
	free(f->weights);
	memset(f, 0, sizeof(*f));
}

/* Per API node, true where it launches a computation (a kernel other than a collective, a copy). NULL after an error line. */
static bool *launches_compute(const struct graph *g)
{
	bool *k = calloc(g->n_nodes + 1, sizeof(bool));

	if (!k) {
		error("out of memory");
		return NULL;
	}
	for (size_t e = 0; e < g->n_edges; e++) {
		const struct graph_edge *ed = &g->edges[e];

		if (ed->kind == GE_LAUNCH && ed->from >= 0 && ed->to >= 0 && (size_t)ed->from < g->n_nodes &&
		    (size_t)ed->to < g->n_nodes && g->nodes[ed->from].kind == GN_API && g->nodes[ed->to].kind == GN_GPU &&
		    g->nodes[ed->to].work != GW_COMM)
			k[ed->from] = true;
	}
	return k;
}

/* A range of an NCCL call: its communicator or message size recorded, or NCCL's name ("ncclAllReduce"). */
static bool nccl_range(const struct replay *rp, const struct replay_range *x)
{
	const char *name = replay_str(rp, x->name);

	return x->comm || x->bytes || (name && !strncmp(name, "nccl", 4) && strcmp(name, "ncclGroupEnd") &&
				       strcmp(name, "ncclGroupStart"));
}

/* An NCCL call's range not inside another's. */
static bool nccl_call(const struct replay *rp, uint32_t i)
{
	const struct replay_range *x = &rp->ranges[i];

	return nccl_range(rp, x) &&
	       (x->parent < 0 || (size_t)x->parent >= rp->n_ranges || !nccl_range(rp, &rp->ranges[x->parent]));
}

/*
 * The host's time per collective call: on each thread, the time from the end
 * of the call that launched a computation before an NCCL call's range to the
 * start of the one that launches the next computation (what the collective
 * took of the host: the framework's bucket bookkeeping, NCCL's enqueue, the
 * events around it, whichever thread launches its kernel), shared among the
 * NCCL calls begun in it, less the thread's median such time between two
 * computations' launches with no NCCL call between (what that gap costs
 * anyway). One value per NCCL call into `calls` (room for one per node);
 * returns their number, SIZE_MAX after an error line.
 */
static size_t host_per_call(const struct graph *g, uint64_t *calls)
{
	bool *k = launches_compute(g);
	uint64_t *plain = k ? malloc((g->n_nodes + 1) * sizeof(uint64_t)) : NULL;
	size_t n = 0, n_plain = 0;

	if (!plain) {
		if (k)
			error("out of memory");
		free(k);
		return SIZE_MAX;
	}
	for (int pass = 0; pass < 2; pass++) {
		uint64_t typical = 0;

		if (pass == 1 && n_plain) {
			qsort(plain, n_plain, sizeof(uint64_t), stats_cmp_u64);
			typical = plain[n_plain / 2];
		}
		for (size_t r = 0; r < g->n_ranks; r++) {
			const struct replay *rp = g->rp[r];

			for (size_t t = 0; t < rp->n_threads; t++) {
				const struct replay_thread *th = &rp->threads[t];
				int32_t from = -1;
				size_t q = 0;   /* the thread's next range (by start) */

				for (size_t j = 0; j < th->n_apis; j++) {
					int32_t x = th->apis[j] < rp->n_apis ? g->api_node[r][th->apis[j]] : -1;
					size_t colls = 0;
					uint64_t w;

					if (x < 0 || !k[x])
						continue;
					/* the NCCL calls begun before this launch, since the last */
					for (; q < th->n_ranges && th->ranges[q] < rp->n_ranges &&
					       rp->ranges[th->ranges[q]].start < rp->apis[th->apis[j]].start; q++)
						if (from >= 0 && nccl_call(rp, th->ranges[q]))
							colls++;
					if (from >= 0 && g->nodes[x].start >= g->nodes[from].end && n < g->n_nodes) {
						w = g->nodes[x].start - g->nodes[from].end;
						if (pass == 0 && !colls)
							plain[n_plain++] = w;
						for (size_t c = 0; pass == 1 && c < colls && n < g->n_nodes; c++)
							calls[n++] = (w > typical ? w - typical : 0) / colls;
					}
					from = x;
				}
			}
		}
	}
	free(k);
	free(plain);
	return n;
}

int whatif_calibrate(const struct graph *g, double *contention, double *call_us, long *n_beside, size_t *n_calls)
{
	double *factor = malloc((g->n_nodes + 1) * sizeof(double));
	uint64_t *calls = malloc((g->n_nodes + 1) * sizeof(uint64_t));
	double slow = 0, alone = 0;
	size_t n = 0;

	*contention = 1;
	*call_us = 0;
	*n_beside = 0;
	*n_calls = 0;
	if (!factor || !calls) {
		free(factor);
		free(calls);
		return error("out of memory");
	}
	*n_beside = graph_contention(g, factor);
	if (*n_beside < 0) {
		free(factor);
		free(calls);
		return -1;
	}
	for (size_t i = 0; i < g->n_nodes; i++)
		if (factor[i] < 1 && factor[i] > 0) {
			slow += (double)g->nodes[i].own;
			alone += (double)g->nodes[i].own * factor[i];
		}
	n = host_per_call(g, calls);
	if (n == SIZE_MAX) {
		free(factor);
		free(calls);
		return -1;
	}
	if (alone > 0)
		*contention = slow / alone;
	if (n) {
		qsort(calls, n, sizeof(uint64_t), stats_cmp_u64);
		*call_us = (n % 2 ? (double)calls[n / 2] : ((double)calls[n / 2 - 1] + (double)calls[n / 2]) / 2) / 1e3;
	}
	*n_calls = n;
	free(factor);
	free(calls);
	return 0;
}

int whatif_calibration_load(const char *path, struct graph_ranks_model *rm)
{
	FILE *fp = fopen(path, "r");
	char line[4096];
	int c_cont = -1, c_call = -1;
	bool header = true;

	if (!fp)
		return error("cannot open '%s': %s", path, strerror(errno));
	while (fgets(line, sizeof(line), fp)) {
		char *field[32], *p = line;
		int n = 0;

		line[strcspn(line, "\r\n")] = 0;
		while (n < 32) {
			field[n++] = p;
			p = strchr(p, ',');
			if (!p)
				break;
			*p++ = 0;
		}
		if (header) {
			for (int i = 0; i < n; i++) {
				if (!strcasecmp(field[i], "contention"))
					c_cont = i;
				else if (!strcasecmp(field[i], "call_us"))
					c_call = i;
			}
			if (c_cont < 0 && c_call < 0) {
				fclose(fp);
				return error("'%s': not a calibration table: its first line names no 'contention' or 'call_us' "
					     "column (`steptrace explain RUN.rank*.stb --section calibration --format csv` "
					     "writes one)", path);
			}
			header = false;
			continue;
		}
		{
			double v;
			char *end;

			if (c_cont >= 0 && c_cont < n) {
				errno = 0;
				v = strtod(field[c_cont], &end);
				if (errno || end == field[c_cont] || *end || !(v >= 1) || v > 100) {
					fclose(fp);
					return error("'%s': contention '%s': a factor from 1 to 100", path, field[c_cont]);
				}
				rm->contention = v;
			}
			if (c_call >= 0 && c_call < n) {
				errno = 0;
				v = strtod(field[c_call], &end);
				if (errno || end == field[c_call] || *end || !(v >= 0) || v > 1e6) {
					fclose(fp);
					return error("'%s': call_us '%s': microseconds from 0 to 1000000", path, field[c_call]);
				}
				rm->call_ns = (uint64_t)llround(v * 1e3);
			}
			fclose(fp);
			return 0;
		}
	}
	fclose(fp);
	return error("'%s': a calibration table without a row", path);
}

int whatif_calibration_default(struct graph_ranks_model *rm)
{
	rm->contention = WHATIF_CALIBRATION_DEFAULT_CONTENTION;
	rm->call_ns = WHATIF_CALIBRATION_DEFAULT_CALL_NS;
	return 0;
}

int whatif_group_tensors(const struct replay *rp, struct graph_ranks_model *rm, uint64_t **tensors)
{
	uint64_t n = 0;
	size_t k = 0;

	for (size_t g = 0; g < rp->run.n_param_groups; g++)
		n += rp->run.param_groups[g].tensors;
	/* a footer's counts can claim anything: at most a million tensors, each at least a byte */
	if (!n)
		return 0;
	if (n > GRAPH_RANKS_MAX_BUCKETS)
		return error("--what-if ranks=N --naive: %llu parameter tensors, over %d: not a run to model",
			     (unsigned long long)n, GRAPH_RANKS_MAX_BUCKETS);
	*tensors = malloc((size_t)n * sizeof(uint64_t));
	if (!*tensors)
		return error("out of memory");
	for (size_t g = 0; g < rp->run.n_param_groups; g++) {
		const struct st_param_group *p = &rp->run.param_groups[g];

		for (uint64_t t = 0; t < p->tensors; t++)
			(*tensors)[k++] = p->bytes / p->tensors + (t < p->bytes % p->tensors);
	}
	rm->tensors = *tensors;
	rm->n_tensors = k;
	return 0;
}
