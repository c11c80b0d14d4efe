/* plan.c: `steptrace plan`, the seeds' parallelism accounting from a model's sizes (analyze/plan.c). */
#include "analyze/plan.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"
#include "lib/error.h"
#include "model/config.h"
#include "replay/replay.h"

static const char *const usage[] = {
	"steptrace plan [<options>] --d-model N --d-ff N --blocks N",
	"steptrace plan [<options>] --model NAME",
	"steptrace plan [<options>] --params N",
	"steptrace plan [<options>] RUN.stb",
	"",
	"steptrace plan: " CMD_PLAN_HELP,
	NULL,
};

/* 2^53: counts stay exact in the doubles the tables print. */
#define PLAN_COUNT_MAX 0x1p53
/* More devices than this in one job is no machine plan speaks of: 2^20. */
#define PLAN_DEVICES_MAX (1 << 20)

/*
 * The sizes from --model (a preset of model/config.c, any size given
 * overriding it) or from the sizes alone, and the full model's parameters
 * counted as the built-in step counts them (model_config_params, whose FFN
 * is SwiGLU's three matrices; with --ffn-matrices 2, two). --params gives P
 * itself, and the sizes become optional.
 */
static int resolve_model(const char *name, const struct model_dims *dims, uint64_t params, struct plan_opts *o)
{
	struct model_config c = { .d_model = dims->d_model, .d_ff = dims->d_ff, .layers = dims->layers,
				  .vocab = dims->vocab ? dims->vocab : 10000 };
	int k = plan_ffn_matrices(o);

	if (name && model_config_resolve(name, dims, &c) < 0)
		return -1;
	o->d_model = c.d_model;
	o->d_ff = c.d_ff;
	o->blocks = c.layers;
	if (params) {
		if ((double)params > PLAN_COUNT_MAX)
			return error("--params %llu is past 2^53, what plan counts exactly", (unsigned long long)params);
		o->params = params;
		o->params_given = true;
		return 0;
	}
	if (!c.d_model || !c.d_ff || !c.layers)
		return error("plan needs the model's sizes: --model, --d-model, --d-ff and --blocks, or --params");
	if ((double)c.layers * k * c.d_model * c.d_ff > PLAN_COUNT_MAX ||
	    (double)c.layers * (4.0 * c.d_model * c.d_model + (double)k * c.d_model * c.d_ff) +
	    2.0 * c.vocab * c.d_model > PLAN_COUNT_MAX)
		return error("a model of over 2^53 parameters is past what plan counts exactly");
	if (k == 3)
		o->params = model_config_params(&c);
	else
		o->params = 2 * (uint64_t)c.vocab * (uint64_t)c.d_model + (uint64_t)c.d_model +
			    (uint64_t)c.layers * (4 * (uint64_t)c.d_model * (uint64_t)c.d_model +
						  (uint64_t)k * (uint64_t)c.d_model * (uint64_t)c.d_ff + 2 * (uint64_t)c.d_model);
	return 0;
}

/*
 * Value rules across options, and degrees no machine has: -1 after one
 * error line.
 */
static int check(const struct plan_opts *o)
{
	int d = plan_dp_degree(o);
	double devices = (double)o->tp * o->pp * d;

	if (!o->batch != !o->seq)
		return error("--batch and --seq go together (the activations of B sequences of S tokens)");
	if (o->dp && o->fsdp && o->dp != o->fsdp)
		return error("--dp and --fsdp are both the data-parallel degree D of the parallel and comm tables: "
			     "give one, or the same");
	if (o->ffn_matrices && o->ffn_matrices != 2 && o->ffn_matrices != 3)
		return error("--ffn-matrices is 2 (two linear layers) or 3 (SwiGLU), not %d", o->ffn_matrices);
	if (o->tp > 1 && !o->d_ff)
		return error("--tp %d needs d_ff (--d-ff), the width tensor parallelism splits", o->tp);
	if (o->tp > o->d_ff && o->d_ff)
		return error("--tp %d is more tensor-parallel devices than the %d columns of d_ff it splits", o->tp, o->d_ff);
	if (o->pp > 1 && !o->blocks)
		return error("--pp %d needs the blocks (--blocks) the stages split", o->pp);
	if (o->pp > o->blocks && o->blocks)
		return error("--pp %d is more pipeline stages than the %d blocks", o->pp, o->blocks);
	if (o->microbatches && o->pp == 1)
		return error("--microbatches counts a pipeline's micro-batches: give --pp too");
	if (o->microbatches && o->batch && (o->microbatches > o->batch || o->batch % o->microbatches))
		return error("--batch %d sequences do not split into --microbatches %d equal micro-batches", o->batch,
			     o->microbatches);
	/* rates no device or link has: 0 is the chip's */
	if (o->flops && (o->flops < 1e9 || o->flops > 1e18))
		return error("--flops %g: outside 1e9 to 1e18 FLOP/s, no device", o->flops);
	if ((o->link && (o->link < 1e6 || o->link > 1e15)) || (o->inter && (o->inter < 1e6 || o->inter > 1e15)))
		return error("--%s %g: outside 1e6 to 1e15 bytes/s, no link", o->link && (o->link < 1e6 || o->link > 1e15) ?
			     "link-bw" : "inter-bw", o->link && (o->link < 1e6 || o->link > 1e15) ? o->link : o->inter);
	if (devices > PLAN_DEVICES_MAX)
		return error("--tp %d × --pp %d × D %d = %.0f devices: more than 2^20 (1,048,576), past any machine",
			     o->tp, o->pp, d, devices);
	if (o->devices > PLAN_DEVICES_MAX || o->per_node > PLAN_DEVICES_MAX)
		return error("--%s %d: more than 2^20 (1,048,576) devices, past any machine",
			     o->devices > PLAN_DEVICES_MAX ? "devices" : "gpus-per-node",
			     o->devices > PLAN_DEVICES_MAX ? o->devices : o->per_node);
	if (o->devices && devices > o->devices)
		return error("--tp %d × --pp %d × D %d = %.0f devices is more than --devices %d", o->tp, o->pp, d, devices,
			     o->devices);
	if (o->devices && !o->d_ff)
		return error("--devices searches the FSDP × TP split of an FFN: it needs d_ff (--d-ff)");
	return 0;
}

/* With a bundle: no --model, --vocab, --ffn-only or --params (it gives the parameters). -1 after an error line. */
static int bundle_options(const char *model, const struct model_dims *dims, bool params, int batch, int seq,
			  bool ffn_only)
{
	if (model || dims->vocab || ffn_only || params)
		return error("a bundle gives the parameters: no --model, --vocab, --ffn-only or --params with it "
			     "(--d-model, --d-ff, --blocks, --batch and --seq replace its sizes)");
	if (!batch != !seq)
		return error("--batch and --seq go together (the activations of B sequences of S tokens)");
	return 0;
}

/*
 * The sizes, batch and sequence given on the command line in place of the
 * bundle's (a foreign program's records none). -1 after an error line:
 * what the bundle lacks, the same refusal, and the same exit status, for
 * every bundle that lacks it.
 */
static int bundle_sizes(const char *path, const struct model_dims *dims, int batch, int seq, struct plan_opts *o)
{
	if (dims->d_model)
		o->d_model = dims->d_model;
	if (dims->d_ff)
		o->d_ff = dims->d_ff;
	if (dims->layers)
		o->blocks = dims->layers;
	if (batch && seq) {
		o->batch = batch;
		o->seq = seq;
	}
	if (!o->d_model || !o->d_ff || !o->blocks)
		return error("'%s' records no model sizes: give --d-model, --d-ff and --blocks", path);
	return 0;
}

/* Not analysis_main: at most one bundle, and none needed. Parse, read the bundle if any, check, report. */
int cmd_plan(int argc, const char **argv)
{
	struct plan_opts o = { .chip = PLAN_CHIP_H100, .tp = 1, .pp = 1, .mesh_x = 1, .mesh_y = 1 };
	int format = OUT_TABLE, rc = 0, intra = -1, inter = -1;
	uint64_t params = UINT64_MAX;
	const char *model = NULL;
	struct model_dims dims = { 0 };
	struct plan_measured measured;
	struct replay rp;
	bool loaded = false;
	struct report *r;
	const struct option opts[] = {
		OPT_GROUP("The model (or a bundle's)"),
		OPT_STRING(0, "model", &model, "NAME", "small, medium, large, xl or 2.7B (the sizes override it)"),
		OPT_POSITIVE(0, "d-model", &dims.d_model, "model width d_model"),
		OPT_POSITIVE(0, "d-ff", &dims.d_ff, "feed-forward width d_ff"),
		OPT_POSITIVE(0, "blocks", &dims.layers, "transformer blocks (layers)"),
		OPT_BOOLEAN(0, "ffn-only", &o.ffn_only,
			    "blocks of linear layers alone, no attention or embeddings (the seeds' XXL)"),
		OPT_POSITIVE(0, "ffn-matrices", &o.ffn_matrices,
			     "k, matrices of an FFN: 2, or 3 for SwiGLU (default: 2 with --ffn-only, else 3, the built-in's)"),
		OPT_U64(0, "params", &params, "P itself, in place of the count from the sizes (which become optional)"),
		OPT_POSITIVE(0, "vocab", &dims.vocab, "vocabulary of the full model (default 10000)"),
		OPT_POSITIVE(0, "batch", &o.batch, "sequences per data-parallel replica, for activations and TP/PP bytes (with --seq)"),
		OPT_POSITIVE(0, "seq", &o.seq, "tokens per sequence"),
		OPT_GROUP("The devices"),
		OPT_CHOICE(0, "chip", &o.chip, plan_chip_names, "C, links, devices per node and memory of a device"),
		OPT_NONNEGATIVE(0, "flops", &o.flops, "X", "C, FLOP/s of a device (default: the chip's)"),
		OPT_SIZE(0, "memory", &o.memory, "memory of a device (default: the chip's)"),
		OPT_CHOICE(0, "intra", &intra, plan_intra_names, "the link inside a node (default: the chip's)"),
		OPT_NONNEGATIVE(0, "link-bw", &o.link, "X", "bytes/s a device sends inside a node, W_ici (default: --intra's)"),
		OPT_CHOICE(0, "inter", &inter, plan_inter_names, "the link across nodes (default: the chip's)"),
		OPT_NONNEGATIVE(0, "inter-bw", &o.inter, "X", "bytes/s a device sends across nodes (default: --inter's)"),
		OPT_POSITIVE(0, "gpus-per-node", &o.per_node,
			     "devices of a node; an axis past it crosses nodes (default: the chip's, 8 GPUs or a v5p pod)"),
		OPT_GROUP("The parallelism"),
		OPT_POSITIVE(0, "fsdp", &o.fsdp, "FSDP degree N, X (default: the smallest that fits)"),
		OPT_POSITIVE(0, "tp", &o.tp, "tensor-parallel degree T, Y (default 1)"),
		OPT_POSITIVE(0, "dp", &o.dp, "data-parallel degree D of the parallel and comm tables "
			     "(default: --fsdp's, else the bundle's world size, else 1)"),
		OPT_POSITIVE(0, "pp", &o.pp, "pipeline-parallel degree PP (default 1)"),
		OPT_POSITIVE(0, "microbatches", &o.microbatches,
			     "M, micro-batches of a pipeline step, for the bubble (PP−1)/(M+PP−1) and 1F1B (default 1)"),
		OPT_CHOICE(0, "schedule", &o.schedule, plan_schedule_names,
			   "the pipeline schedule of the memory totals (both printed)"),
		OPT_POSITIVE(0, "mesh-x", &o.mesh_x, "M_X, mesh axes the FSDP dimension spans (default 1)"),
		OPT_POSITIVE(0, "mesh-y", &o.mesh_y, "M_Y, mesh axes the TP dimension spans (default 1)"),
		OPT_POSITIVE(0, "devices", &o.devices,
			     "N: search every FSDP × TP split of N devices for the smallest compute-bound batch (d)"),
		OPT_POSITIVE(0, "mesh-axes", &o.mesh_axes, "axes of the torus --devices splits (default: the chip's, v5p 3)"),
		OPT_GROUP("The report"),
		OPT_STRING(0, "section", &o.section, "NAME",
			   "print one table: bundle, state, fsdp, compute, parallel, comm or devices"),
		OPT_FORMAT(&format),
		OPT_END(),
	};

	argc = parse_options(argc, argv, opts, usage);
	if (argc < 0)
		return argc == PARSE_OPT_HELP ? 0 : EXIT_USAGE;
	if (argc > 1) {
		error("plan reads one bundle (one rank's, of a run of several): unexpected '%s'", argv[1]);
		usage_hint(usage);
		return EXIT_USAGE;
	}
	if (params == 0) {
		error("--params 0: a model of no parameters");
		usage_hint(usage);
		return EXIT_USAGE;
	}
	if (params == UINT64_MAX)
		params = 0;
	/* a preset gives the bandwidth and its name; a number given replaces both */
	if (intra >= 0 && !o.link) {
		o.link = plan_intra_link(intra)->bw;
		o.link_label = plan_intra_link(intra)->label;
	}
	if (inter >= 0 && !o.inter) {
		o.inter = plan_inter_link(inter)->bw;
		o.inter_label = plan_inter_link(inter)->label;
	}
	if (argc == 1) {
		int batch = o.batch, seq = o.seq;

		/* usage first: a bad option costs no reading */
		if (bundle_options(model, &dims, params != 0, batch, seq, o.ffn_only) < 0) {
			usage_hint(usage);
			return EXIT_USAGE;
		}
		if (replay_load(&rp, argv[0], NULL) < 0)
			return 1;
		loaded = true;
		if (plan_measure(&rp, &measured) < 0 || plan_opts_from_bundle(&rp, &measured, &o) < 0 ||
		    bundle_sizes(argv[0], &dims, batch, seq, &o) < 0) {
			replay_release(&rp);
			return 1;
		}
	} else if (resolve_model(model, &dims, params, &o) < 0) {
		usage_hint(usage);
		return EXIT_USAGE;
	}
	if (check(&o) < 0) {
		if (loaded)
			replay_release(&rp);
		usage_hint(usage);
		return EXIT_USAGE;
	}
	r = report_new();
	if (plan_run(&o, r) < 0) {
		rc = 1;
	} else if (analysis_select_section(r, o.section, (enum out_format)format) < 0) {
		usage_hint(usage);   /* --section named no table of the report: a usage error, as --format's */
		rc = EXIT_USAGE;
	} else if (report_print(r, (enum out_format)format, stdout) < 0) {
		rc = 1;
	}
	report_free(r);
	if (loaded)
		replay_release(&rp);
	return rc;
}
