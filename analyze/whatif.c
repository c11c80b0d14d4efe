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
			enum kernel_category c;

			if (k < 0 || a->kind != ST_KERNEL || g->nodes[k].work != GW_KERNEL)
				continue;
			c = category_cached(&cc, a);
			f->cls[k] = c == CAT_GEMM || c == CAT_ATTENTION ? GK_PRODUCT
				    : c == CAT_SOFTMAX ? GK_SOFTMAX
				    : c == CAT_ELEMENTWISE || c == CAT_REDUCTION || c == CAT_OPTIMIZER
					? GK_MEMORY
					: GK_OTHER;
			if (a->op && a->op < x->n_ops) {
				op_time[a->op] += (double)g->nodes[k].own;
				if (op_last[a->op] != (int64_t)a->step + 2) {
					op_calls[a->op]++;
					op_last[a->op] = (int64_t)a->step + 2;
				}
			}
		}
		/* a kernel's bytes and FLOPs: its op's per call, shared among one call's kernels by their time */
		for (size_t i = 0; i < x->n_activities; i++) {
			int32_t k = g->act_node[r][i];
			const struct replay_activity *a = &x->activities[i];
			const struct replay_op *op;

			if (k < 0 || a->kind != ST_KERNEL || g->nodes[k].work != GW_KERNEL || !a->op || a->op >= x->n_ops)
				continue;
			op = replay_op(x, a->op);
			if (op && op->bytes && op_time[a->op] > 0)
				f->bytes[k] = (double)op->bytes * (double)g->nodes[k].own * op_calls[a->op] / op_time[a->op];
			if (op && op->flops && op_time[a->op] > 0)
				f->flops[k] = (double)op->flops * (double)g->nodes[k].own * op_calls[a->op] / op_time[a->op];
			/* steptrace's own ops over the parameters, once a step whatever the batch */
			if (op && (!strcmp(replay_str(x, op->kind), "cast_weights") ||
				   !strcmp(replay_str(x, op->kind), "zero_grad")))
				f->weights[k] = 1;
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
	/* each collective's call: its own time and the host's work before it on its thread */
	for (size_t i = 0; i < g->n_nodes; i++) {
		const struct graph_node *x = &g->nodes[i];
		const struct replay *rp;
		int32_t api, a;

		if (x->kind != GN_GPU)
			continue;
		if (x->work != GW_COMM)
			continue;
		rp = g->rp[x->rank];
		api = rp->activities[x->index].api;
		if (api < 0 || (size_t)api >= rp->n_apis)
			continue;
		a = g->api_node[x->rank][api];
		if (a < 0)
			continue;
		{
			uint64_t t = g->nodes[a].own;

			for (uint32_t e = 0; e < g->nodes[a].n_in; e++) {
				const struct graph_edge *ed = &g->edges[g->in_edges[g->nodes[a].in + e]];

				if (ed->kind == GE_THREAD && ed->delay > 0)
					t += (uint64_t)ed->delay;
			}
			calls[n++] = t;
		}
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
