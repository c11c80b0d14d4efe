/* analysis.c: see analysis.h. */
#include "cmd/analysis.h"

#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/memlimit.h"

/* The command's options, then those every analysis command takes. NULL when out of memory. */
static struct option *common_options(const struct option *own, uint64_t *memory_limit)
{
	size_t n = 0;
	struct option *all;

	while (own[n].type != OPTION_END)
		n++;
	all = malloc((n + 2) * sizeof(*all));
	if (!all)
		return NULL;
	memcpy(all, own, n * sizeof(*all));
	all[n] = (struct option)OPT_SIZE(0, "memory-limit", memory_limit,
					 "refuse bundles that need more memory than SIZE "
					 "(default: half of what is available)");
	all[n + 1] = (struct option)OPT_END();
	return all;
}

static int parse(const struct analysis_cmd *c, const struct option *opts, int argc, const char **argv)
{
	int max = c->bundles_max > c->bundles ? c->bundles_max : c->bundles;
	int n = parse_options(argc, argv, opts, c->usage);

	if (n < 0)
		return n;
	if (n < c->bundles || n > max) {
		error(n < c->bundles ? "missing bundle argument" : "too many arguments");
		usage_with_options(c->usage, opts, false);
		return PARSE_OPT_ERROR;
	}
	if (c->check && c->check(c->ctx) < 0)
		return PARSE_OPT_ERROR;
	if (c->range && *c->range) {
		struct range_pattern p;

		if (range_pattern_compile(&p, *c->range) < 0)
			return PARSE_OPT_ERROR;
		range_pattern_release(&p);
	}
	return n;
}

int analysis_main(const struct analysis_cmd *c, int argc, const char **argv)
{
	struct replay rps[ANALYSIS_MAX_BUNDLES];
	struct replay_options ro = { 0 };
	uint64_t memory_limit = UINT64_MAX;
	struct option *opts = common_options(c->options, &memory_limit);
	struct report *r = NULL;
	int n, loaded = 0, rc = 1;

	if (!opts)
		return error("out of memory"), 1;
	n = parse(c, opts, argc, argv);
	free(opts);
	if (n < 0)
		return n == PARSE_OPT_HELP ? 0 : EXIT_USAGE;
	if (n > ANALYSIS_MAX_BUNDLES)
		return error("at most %d bundles", ANALYSIS_MAX_BUNDLES), EXIT_USAGE;
	if (memory_limit == 0)
		return error("option '--memory-limit' expects a size above 0"), EXIT_USAGE;
	ro.memory_limit = memory_limit != UINT64_MAX ? memory_limit : memory_limit_default();
	for (; loaded < n; loaded++) {
		if (replay_load(&rps[loaded], argv[loaded], &ro) < 0)
			goto out;
		/* the next bundle gets what this one left */
		if (ro.memory_limit)
			ro.memory_limit -= rps[loaded].memory < ro.memory_limit ? rps[loaded].memory
										: ro.memory_limit - 1;
	}
	r = report_new();
	rc = c->run(rps, n, c->ctx, r);
	if (rc < 0)
		rc = 1;
	else if (rc == ANALYSIS_NO_REPORT)
		rc = 0;
	else if (c->format && report_print(r, (enum out_format)*c->format, stdout) < 0)
		rc = 1;
out:
	report_free(r);
	while (loaded > 0)
		replay_release(&rps[--loaded]);
	return rc;
}
