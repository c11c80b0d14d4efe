/* analysis.c: see analysis.h. */
#include "cmd/analysis.h"

#include "lib/error.h"

static int parse(const struct analysis_cmd *c, int argc, const char **argv)
{
	int max = c->bundles_max > c->bundles ? c->bundles_max : c->bundles;
	int n = parse_options(argc, argv, c->options, c->usage);

	if (n < 0)
		return n;
	if (n < c->bundles || n > max) {
		error(n < c->bundles ? "missing bundle argument" : "too many arguments");
		usage_with_options(c->usage, c->options, false);
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
	struct report *r = NULL;
	int n, loaded = 0, rc = 1;

	n = parse(c, argc, argv);
	if (n < 0)
		return n == PARSE_OPT_HELP ? 0 : EXIT_USAGE;
	if (n > ANALYSIS_MAX_BUNDLES)
		return error("at most %d bundles", ANALYSIS_MAX_BUNDLES), EXIT_USAGE;
	for (; loaded < n; loaded++)
		if (replay_load(&rps[loaded], argv[loaded], NULL) < 0)
			goto out;
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
