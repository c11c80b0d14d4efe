/* plan.c: `steptrace plan`, the seeds' parallelism accounting from a model's sizes (analyze/plan.c). */
#include "analyze/plan.h"
#include "cmd/analysis.h"
#include "cmd/commands.h"
#include "lib/error.h"
#include "model/config.h"

static const char *const usage[] = {
	"steptrace plan [<options>] --d-model N --d-ff N --blocks N",
	"steptrace plan [<options>] --model NAME",
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
	if (o->batch && !o->ffn_only)
		return error("activations are counted for --ffn-only models only (the seeds' XXL)");
	return 0;
}

/* No bundle to read, so not analysis_main: parse, check, report. */
int cmd_plan(int argc, const char **argv)
{
	struct plan_opts o = { .chip = PLAN_CHIP_H100, .tp = 1, .pp = 1, .mesh_x = 1, .mesh_y = 1 };
	int format = OUT_TABLE, rc = 0;
	const char *model = NULL;
	struct model_dims dims = { 0 };
	struct report *r;
	const struct option opts[] = {
		OPT_GROUP("The model"),
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
		OPT_POSITIVE(0, "dp", &o.dp, "data-parallel degree D of the parallel and comm tables (default: --fsdp's, else 1)"),
		OPT_POSITIVE(0, "pp", &o.pp, "pipeline-parallel degree of the parallel and comm tables (default 1)"),
		OPT_POSITIVE(0, "mesh-x", &o.mesh_x, "M_X, mesh axes the FSDP dimension spans (default 1)"),
		OPT_POSITIVE(0, "mesh-y", &o.mesh_y, "M_Y, mesh axes the TP dimension spans (default 1)"),
		OPT_GROUP("The report"),
		OPT_STRING(0, "section", &o.section, "NAME", "print one table: state, fsdp, compute, parallel or comm"),
		OPT_FORMAT(&format),
		OPT_END(),
	};

	argc = parse_options(argc, argv, opts, usage);
	if (argc < 0)
		return argc == PARSE_OPT_HELP ? 0 : EXIT_USAGE;
	if (argc > 0) {
		error("plan reads no bundle: unexpected '%s'", argv[0]);
		usage_hint(usage);
		return EXIT_USAGE;
	}
	if (resolve_model(model, &dims, &o) < 0 || check(&o) < 0) {
		usage_hint(usage);
		return EXIT_USAGE;
	}
	r = report_new();
	if (plan_run(&o, r) < 0 || analysis_select_section(r, o.section, (enum out_format)format) < 0 ||
	    report_print(r, (enum out_format)format, stdout) < 0)
		rc = 1;
	report_free(r);
	return rc;
}
