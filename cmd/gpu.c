/* gpu.c: see gpu.h. */
#include "cmd/gpu.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/error.h"
#include "model/comm.h"
#include "model/model.h"
#include "model/ranks.h"

#define SWEEP_MAX_LIST 16

int gpu_parse(int argc, const char **argv, const struct option *opts, const char *const usage[])
{
	argc = parse_options(argc, argv, opts, usage);
	if (argc < 0)
		return argc == PARSE_OPT_HELP ? 0 : EXIT_USAGE;
	if (argc > 0)
		return gpu_usage_error(usage, "unexpected argument '%s'", argv[0]);
	return GPU_GO;
}

int gpu_usage_error(const char *const usage[], const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	error("%s", msg);
	usage_hint(usage);
	return EXIT_USAGE;
}

int gpu_model_config(const struct gpu_model_args *a, struct model_config *c)
{
	if (model_config_resolve(a->model, &a->dims, c))
		return -1;
	c->precision = a->precision;
	c->mode = a->mode;
	c->kernels = a->kernels;
	c->attention = a->attention;
	if (a->attention < 0)
		c->attention = model_config_default_attention(c);
	c->seed = a->seed;
	if (!isnan(a->lr))
		c->lr = a->lr;
	if (!isnan(a->weight_decay))
		c->weight_decay = a->weight_decay;
	c->ddp = (enum st_ddp)a->ddp;
	if (!isnan(a->bucket_mb) && c->ddp != ST_DDP_BUCKET)
		return error("--bucket-mb is the bucket size of --ddp bucket");
	if (!isnan(a->bucket_mb))
		c->bucket_mb = a->bucket_mb;
	if ((a->sm_carveout != INT_MIN || a->nccl_ctas != INT_MIN) && !model_config_overlaps(c))
		return error("--sm-carveout and --nccl-ctas shape the all-reduces beside the backward: "
			     "--ddp overlap or bucket");
	if (a->allreduce != MODEL_ALLREDUCE_NCCL && c->ddp == ST_DDP_NONE)
		return error("--allreduce-by is how --ddp all-reduces the gradients");
	c->allreduce = a->allreduce;
	model_config_ddp_defaults(c);
	if (a->sm_carveout != INT_MIN)
		c->sm_carveout = a->sm_carveout;
	if (a->nccl_ctas != INT_MIN)
		c->nccl_ctas = a->nccl_ctas;
	return model_config_validate(c);
}

static int ctx_parse(const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || *end || end == s || v <= 0 || v > (1 << 24))
		return error("option '--ctx' expects positive integers up to %d, not '%s'", 1 << 24, s);
	*out = (int)v;
	return 0;
}

int gpu_sweep_configs(const struct gpu_sweep *s, const struct gpu_model_args *a,
		      struct model_config **out)
{
	const char *models[SWEEP_MAX_LIST] = { NULL }, *ctxs[SWEEP_MAX_LIST];
	const char *precs[SWEEP_MAX_LIST], *modes[SWEEP_MAX_LIST], *kerns[SWEEP_MAX_LIST];
	char *s_models = NULL, *s_ctxs = NULL, *s_precs = NULL, *s_modes = NULL, *s_kerns = NULL;
	int ctx[SWEEP_MAX_LIST], prec[SWEEP_MAX_LIST], mode[SWEEP_MAX_LIST], kern[SWEEP_MAX_LIST];
	int n_models = 1, n_ctxs, n_precs, n_modes, n_kerns, n = -1, k = 0;
	struct model_config *c = NULL;

	*out = NULL;
	/* no --model: NULL, small or (with --d-model) custom */
	if (s->models)
		n_models = split_list(s->models, models, SWEEP_MAX_LIST, &s_models);
	n_ctxs = split_list(s->ctxs ? s->ctxs : "128", ctxs, SWEEP_MAX_LIST, &s_ctxs);
	n_precs = split_list(s->precisions ? s->precisions : "fp32", precs, SWEEP_MAX_LIST,
			     &s_precs);
	n_modes = split_list(s->modes ? s->modes : "train", modes, SWEEP_MAX_LIST, &s_modes);
	n_kerns = split_list(s->kernels ? s->kernels : "plain", kerns, SWEEP_MAX_LIST, &s_kerns);
	if (n_models < 0 || n_ctxs < 0 || n_precs < 0 || n_modes < 0 || n_kerns < 0)
		goto free_lists;
	for (int i = 0; i < n_ctxs; i++)
		if (ctx_parse(ctxs[i], &ctx[i]))
			goto free_lists;
	for (int i = 0; i < n_precs; i++)
		if (parse_choice(precs[i], st_precision_names, "--precision", &prec[i]))
			goto free_lists;
	for (int i = 0; i < n_modes; i++)
		if (parse_choice(modes[i], st_mode_names, "--mode", &mode[i]))
			goto free_lists;
	for (int i = 0; i < n_kerns; i++)
		if (parse_choice(kerns[i], st_kernels_names, "--kernels", &kern[i]))
			goto free_lists;
	c = malloc((size_t)n_models * n_ctxs * n_precs * n_modes * n_kerns * sizeof(*c));
	if (!c) {
		error("out of memory for the sweep");
		goto free_lists;
	}
	for (int im = 0; im < n_models; im++)
		for (int ic = 0; ic < n_ctxs; ic++)
			for (int ip = 0; ip < n_precs; ip++)
				for (int io = 0; io < n_modes; io++)
					for (int ik = 0; ik < n_kerns; ik++) {
						struct gpu_model_args one = *a;

						one.model = models[im];
						one.dims.ctx = ctx[ic];
						one.precision = prec[ip];
						one.mode = mode[io];
						one.kernels = kern[ik];
						if (gpu_model_config(&one, &c[k++]))
							goto free_lists;
					}
	*out = c;
	c = NULL;
	n = k;
free_lists:
	free(c);
	free(s_models);
	free(s_ctxs);
	free(s_precs);
	free(s_modes);
	free(s_kerns);
	return n;
}

/* ---- several GPUs ------------------------------------------------------ */

#define GRACE_S 10.0   /* after a rank fails, how long the others get to end before SIGKILL */

int gpu_ranks_check(const struct gpu_ranks_args *a)
{
	if (a->nproc < 0 || a->nproc > 1024)
		return error("--nproc must be between 1 and 1024, not %d", a->nproc);
	if (!(a->timeout_s > 0 && a->timeout_s <= 86400))
		return error("--timeout must be above 0 and at most a day, not %g", a->timeout_s);
	return 0;
}

struct rank_run {
	const struct gpu_ranks_args *a;
	gpu_rank_fn body;
	void *ctx;
};

/* One rank: its communicator, its work, and the communicator's end. */
static int rank_main(const struct rank_info *given, void *p)
{
	struct rank_run *rr = p;
	struct rank_info ri = *given;
	struct comm *comm;
	int status;

	if (!ri.rendezvous[0] && rank_rendezvous_dir(&ri, rr->a->rendezvous))
		return 1;
	rank_env_defaults();
	/* no GPU or no driver: the one plain line, before NCCL says it its way */
	if (!model_gpu_available())
		return 1;
	comm = comm_init(&ri, rr->a->timeout_s, rr->a->nccl_ctas);
	if (!comm)
		return 1;
	status = rr->body(&ri, comm, rr->ctx);
	if (status)
		comm_abort(comm);   /* the others may be waiting for us: don't wait for them */
	comm_free(comm);
	return status;
}

int gpu_ranks_run(const struct gpu_ranks_args *a, gpu_rank_fn body, void *ctx)
{
	struct rank_run rr = { a, body, ctx };
	struct rank_info ri;
	char prefix[32];

	if (!comm_available() || rank_info_detect(&ri, NULL))
		return 1;
	if (a->nproc > 0 && ri.size > 1) {
		error("--nproc starts ranks itself: leave it out under %s, which started %d already",
		      ri.launcher, ri.size);
		return EXIT_USAGE;
	}
	if (a->nproc > 1)
		return ranks_launch(a->nproc, a->rendezvous, rank_main, &rr, GRACE_S);
	if (ri.size > 1) {
		snprintf(prefix, sizeof(prefix), "rank %d", ri.rank);
		error_set_prefix(prefix);
	}
	return rank_main(&ri, &rr);
}
