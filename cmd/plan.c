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
	"steptrace plan [<options>] RUN.stb",
	"",
	"steptrace plan: " CMD_PLAN_HELP,
	NULL,
};

/*
 * The sizes from --model (a preset of model/config.c, any size given
 * overriding it) or from the sizes alone, and the full model's parameters
 * from the count the built-in step uses (model_config_params).
 */
static int resolve_model(const char *name, const struct model_dims *dims, struct plan_opts *o)
{
	struct model_config c = { .d_model = dims->d_model, .d_ff = dims->d_ff, .layers = dims->layers,
				  .vocab = dims->vocab ? dims->vocab : 10000 };

	if (name && model_config_resolve(name, dims, &c) < 0)
		return -1;
	if (!c.d_model || !c.d_ff || !c.layers)
		return error("plan needs the model's sizes: --model, or --d-model, --d-ff and --blocks");
	/* 2^53: counts stay exact in the doubles the tables print */
	if ((double)c.layers * 2 * c.d_model * c.d_ff > 0x1p53 ||
	    (double)c.layers * 4 * c.d_model * ((double)c.d_model + c.d_ff) + 2.0 * c.vocab * c.d_model > 0x1p53)
		return error("a model of over 2^53 parameters is past what plan counts exactly");
	o->d_model = c.d_model;
	o->d_ff = c.d_ff;
	o->blocks = c.layers;
	o->params = model_config_params(&c);
	return 0;
}

/* Value rules across options: -1 after an error line. */
static int check(const struct plan_opts *o)
{
	if (!o->batch != !o->seq)
		return error("--batch and --seq go together (the activations of B sequences of S tokens)");
	if (o->dp && o->fsdp && o->dp != o->fsdp)
		return error("--dp and --fsdp are both the data-parallel degree D of the parallel and comm tables: "
			     "give one, or the same");
	if (o->pp > o->blocks)
		return error("--pp %d is more pipeline stages than the %d blocks", o->pp, o->blocks);
	if (o->microbatches && o->pp == 1)
		return error("--microbatches counts a pipeline's micro-batches: give --pp too");
	if (o->batch && !o->ffn_only && !o->measured)
		return error("activations are counted for --ffn-only models only (the seeds' XXL)");
	return 0;
}

/*
 * With a bundle: its parameters; the sizes, batch and sequence its run
 * configuration records, those given on the command line in their place
 * (a foreign program's bundle records none). -1 after an error line.
 */
static int bundle_options(const char *model, const struct model_dims *dims, int batch, int seq, bool ffn_only)
{
	if (model || dims->vocab || ffn_only)
		return error("a bundle gives the parameters: no --model, --vocab or --ffn-only with it "
			     "(--d-model, --d-ff, --blocks, --batch and --seq replace its sizes)");
	if (!batch != !seq)
		return error("--batch and --seq go together (the activations of B sequences of S tokens)");
	return 0;
}

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
	int format = OUT_TABLE, rc = 0;
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
			    "blocks of two linear layers alone, no attention or embeddings (the seeds' XXL)"),
		OPT_POSITIVE(0, "vocab", &dims.vocab, "vocabulary of the full model (default 10000)"),
		OPT_POSITIVE(0, "batch", &o.batch, "sequences per device, for the activations (with --seq)"),
		OPT_POSITIVE(0, "seq", &o.seq, "tokens per sequence"),
		OPT_GROUP("The devices"),
		OPT_CHOICE(0, "chip", &o.chip, plan_chip_names, "C, W_ici and memory of a device"),
		OPT_NONNEGATIVE(0, "flops", &o.flops, "X", "C, FLOP/s of a device (default: the chip's)"),
		OPT_NONNEGATIVE(0, "link-bw", &o.link, "X", "W_ici, bytes/s along a mesh axis (default: the chip's)"),
		OPT_SIZE(0, "memory", &o.memory, "memory of a device (default: the chip's)"),
		OPT_POSITIVE(0, "fsdp", &o.fsdp, "FSDP degree N, X (default: the smallest that fits)"),
		OPT_POSITIVE(0, "tp", &o.tp, "tensor-parallel degree Y (default 1)"),
		OPT_POSITIVE(0, "dp", &o.dp, "data-parallel degree D of the parallel and comm tables "
			     "(default: --fsdp's, else the bundle's world size, else 1)"),
		OPT_POSITIVE(0, "pp", &o.pp, "pipeline-parallel degree of the parallel and comm tables (default 1)"),
		OPT_POSITIVE(0, "microbatches", &o.microbatches,
			     "M, micro-batches of a pipeline step, for the bubble (PP−1)/(M+PP−1) (default 1)"),
		OPT_POSITIVE(0, "mesh-x", &o.mesh_x, "M_X, mesh axes the FSDP dimension spans (default 1)"),
		OPT_POSITIVE(0, "mesh-y", &o.mesh_y, "M_Y, mesh axes the TP dimension spans (default 1)"),
		OPT_GROUP("The report"),
		OPT_STRING(0, "section", &o.section, "NAME",
			   "print one table: bundle, state, fsdp, compute, parallel or comm"),
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
	if (argc == 1) {
		int batch = o.batch, seq = o.seq;

		/* usage first: a bad option costs no reading */
		if (bundle_options(model, &dims, batch, seq, o.ffn_only) < 0) {
			usage_hint(usage);
			return EXIT_USAGE;
		}
		if (replay_load(&rp, argv[0], NULL) < 0)
			return 1;
		loaded = true;
		if (plan_measure(&rp, &measured) < 0 || plan_opts_from_bundle(&rp, &measured, &o) < 0) {
			replay_release(&rp);
			return 1;
		}
		if (bundle_sizes(argv[0], &dims, batch, seq, &o) < 0) {
			replay_release(&rp);
			usage_hint(usage);
			return EXIT_USAGE;
		}
	} else if (resolve_model(model, &dims, &o) < 0) {
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
	if (plan_run(&o, r) < 0 || analysis_select_section(r, o.section, (enum out_format)format) < 0 ||
	    report_print(r, (enum out_format)format, stdout) < 0)
		rc = 1;
	report_free(r);
	if (loaded)
		replay_release(&rp);
	return rc;
}
