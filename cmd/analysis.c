/* analysis.c: see analysis.h. */
#include "cmd/analysis.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/error.h"
#include "lib/human.h"
#include "lib/memlimit.h"

#define MAX_RUNS 2

/*
 * The command's options, then those every analysis command takes (--section
 * those that print a report). NULL when out of memory.
 */
static struct option *common_options(const struct analysis_cmd *c, uint64_t *memory_limit,
				     const char **section)
{
	size_t n = 0;
	struct option *all;

	while (c->options[n].type != OPTION_END)
		n++;
	all = malloc((n + 3) * sizeof(*all));
	if (!all)
		return NULL;
	memcpy(all, c->options, n * sizeof(*all));
	all[n++] = (struct option)OPT_SIZE(0, "memory-limit", memory_limit,
					   "refuse bundles that need more memory than SIZE "
					   "(default: " MEMORY_LIMIT_DEFAULT_TEXT ")");
	if (c->format)
		all[n++] = (struct option)OPT_STRING(0, "section", section, "NAME",
						     "print this table of the report alone (its JSON key); "
						     "csv prints one table, the first by default");
	all[n] = (struct option)OPT_END();
	return all;
}

/* See analysis.h: one CSV file on stdout. */
int analysis_select_section(struct report *r, const char *section, enum out_format f)
{
	char others[512];
	size_t len = 0;

	if (section)
		return report_keep_table(r, section);
	if (f != OUT_CSV || !report_table_name(r, 1))
		return 0;
	others[0] = '\0';
	for (size_t i = 1; report_table_name(r, i) && len < sizeof(others); i++)
		len += (size_t)snprintf(others + len, sizeof(others) - len, "%s%s", i > 1 ? ", " : "",
					report_table_name(r, i));
	fprintf(stderr, "csv: one table, '%s'; the report's others: %s (--section NAME prints one, "
		"--format json all)\n", report_table_name(r, 0), others);
	return report_keep_table(r, report_table_name(r, 0));
}

/* The command's value rules and its --range pattern's syntax: -1 after an error line. */
static int check_values(const struct analysis_cmd *c)
{
	struct range_pattern p;

	if (c->check && c->check(c->ctx) < 0)
		return -1;
	if (!c->range || !*c->range)
		return 0;
	if (range_pattern_compile(&p, *c->range) < 0)
		return -1;
	range_pattern_release(&p);
	return 0;
}

/* Usage errors: one line, and one pointing to --help. */
static int parse(const struct analysis_cmd *c, const struct option *opts, int argc, const char **argv)
{
	const char *name = argv[0];
	int n = parse_options(argc, argv, opts, c->usage);

	if (n < 0)
		return n;
	if (n < c->bundles && c->bundles == 2)
		error("'%s' compares two bundles, A (the baseline) and B: %s", name,
		      n ? "give the second" : "give both");
	else if (n < c->bundles)
		error("'%s' needs a bundle (FILE.stb, or the bundles of one run's ranks)", name);
	else if (n > ANALYSIS_MAX_BUNDLES)
		error("too many bundles: at most %d", ANALYSIS_MAX_BUNDLES);
	else if (check_values(c) == 0)
		return n;
	usage_hint(c->usage);
	return PARSE_OPT_ERROR;
}

/* Each rank of the runs on its own, the tables stacked under a "Rank" column. */
static int run_split(const struct analysis_cmd *c, const struct replay_ranks *runs, int nruns,
		     struct report *r)
{
	size_t nr = runs[0].n;
	struct report **sub = calloc(nr, sizeof(*sub));
	char (*label)[16] = calloc(nr, sizeof(*label));
	const char **labels = calloc(nr, sizeof(*labels));
	int rc = -1;

	if (!sub || !label || !labels) {
		error("out of memory");
		goto out;
	}
	for (int k = 1; k < nruns; k++)
		if (runs[k].n != nr) {
			error("'%s' is one of %zu ranks and '%s' one of %zu: each rank's report needs "
			      "as many ranks on both sides", runs[0].rank[0]->path, nr, runs[k].rank[0]->path,
			      runs[k].n);
			goto out;
		}
	if (c->output && *c->output) {
		error("%s writes one file: give the bundle of one rank", c->output_option);
		goto out;
	}
	for (size_t i = 0; i < nr; i++) {
		const struct replay *view[MAX_RUNS];

		for (int k = 0; k < nruns; k++)
			view[k] = runs[k].rank[i];
		snprintf(label[i], sizeof(label[i]), "%u", (unsigned)replay_ranks_rank(&runs[0], i));
		labels[i] = label[i];
		sub[i] = report_new();
		rc = c->run(view, nruns, c->ctx, sub[i]);
		if (rc < 0)
			goto out;
	}
	report_stack(r, sub, labels, nr, "Rank");
out:
	for (size_t i = 0; sub && i < nr; i++)
		report_free(sub[i]);
	free(sub);
	free(label);
	free(labels);
	return rc;
}

/* Every run as one replay: a bundle, or the pooled ranks of a run. */
static int run_pooled(const struct analysis_cmd *c, const struct replay_ranks *runs, int nruns,
		      struct report *r)
{
	struct replay pooled[MAX_RUNS];
	const struct replay *view[MAX_RUNS];
	bool made[MAX_RUNS] = { false };
	uint64_t pool_bytes[MAX_RUNS] = { 0 };
	int rc = -1;

	for (int k = 0; k < nruns; k++) {
		char what[96];

		view[k] = runs[k].rank[0];
		if (runs[k].n < 2)
			continue;
		/* the totals hold every rank's events once more: counted as the ranks were */
		for (size_t i = 0; i < runs[k].n; i++)
			pool_bytes[k] += runs[k].rank[i]->memory;
		snprintf(what, sizeof(what), "pooling %zu ranks into their totals", runs[k].n);
		if (memory_budget_claim(pool_bytes[k], what) < 0) {
			pool_bytes[k] = 0;
			goto out;
		}
		if (replay_ranks_pool(&pooled[k], &runs[k]) < 0)
			goto out;
		made[k] = true;
		view[k] = &pooled[k];
	}
	rc = c->run(view, nruns, c->ctx, r);
	for (int k = 0; k < nruns && rc >= 0 && rc != ANALYSIS_NO_REPORT; k++)
		if (made[k])
			report_note(r, "%stotals across the %zu ranks given (--per-rank: each rank's)",
				    nruns == 1 ? "" : k ? "B: " : "A: ", runs[k].n);
out:
	for (int k = 0; k < nruns; k++) {
		if (made[k])
			replay_release(&pooled[k]);
		memory_budget_release(pool_bytes[k]);
	}
	return rc;
}

static int dispatch(const struct analysis_cmd *c, const struct replay_ranks *runs, int nruns,
		    struct report *r)
{
	bool several = false;

	for (int k = 0; k < nruns; k++)
		several |= runs[k].n > 1;
	if (c->ranks_given)
		*c->ranks_given = nruns ? runs[0].n : 0;
	if (c->ranks == RANKS_OWN)
		return c->run_ranks(runs, nruns, c->ctx, r);
	if (several && (c->ranks == RANKS_SPLIT || (c->per_rank && *c->per_rank)))
		return run_split(c, runs, nruns, r);
	return run_pooled(c, runs, nruns, r);
}

/*
 * Without --memory-limit, the bundles of a command may take 1000 times
 * their size on disk in all, at least 128 MiB a run (as one bundle alone
 * may: memory_limit_for_bundle; diff reads two runs), and never more than
 * the machine's default: a run of many small bundles gets no 128 MiB each
 * (32 ranks of 823 B held 4 GiB). Its text goes into `why` when it is
 * lower than the default.
 */
static uint64_t default_limit(char **paths, int n, int runs, char *why, size_t len)
{
	uint64_t limit = memory_limit_default(), bytes = 0, cap;
	char size[32], small[32];

	*why = '\0';
	for (int i = 0; i < n; i++) {
		struct stat st;

		if (stat(paths[i], &st) != 0 || !S_ISREG(st.st_mode))
			return limit;   /* a pipe or a device: its size says nothing */
		bytes += (uint64_t)st.st_size;
	}
	cap = memory_limit_for_bundle(limit, bytes);
	if (runs > 1 && n > 1 && cap < 2 * MEMORY_LIMIT_SMALL)   /* diff: at least 128 MiB for each run */
		cap = 2 * MEMORY_LIMIT_SMALL < limit ? 2 * MEMORY_LIMIT_SMALL : limit;
	if (n > 1 && cap < limit)
		snprintf(why, len, "the default for %d bundles of %s in all: %d times their size, at least %s%s", n,
			 human_bytes(size, sizeof(size), (double)bytes), MEMORY_PER_BUNDLE_BYTE,
			 human_bytes(small, sizeof(small), (double)MEMORY_LIMIT_SMALL), runs > 1 ? " a run" : "");
	else if (cap < limit)
		snprintf(why, len, "the default for a bundle of %s: %d times its size, at least %s",
			 human_bytes(size, sizeof(size), (double)bytes), MEMORY_PER_BUNDLE_BYTE,
			 human_bytes(small, sizeof(small), (double)MEMORY_LIMIT_SMALL));
	return cap;
}

int analysis_main(const struct analysis_cmd *c, int argc, const char **argv)
{
	int max = c->bundles_max > c->bundles ? c->bundles_max : c->bundles;
	const char *name = argv[0];
	struct replay_ranks runs[MAX_RUNS];
	struct replay *rps = NULL;
	struct replay_options ro = { 0 };
	uint64_t memory_limit = UINT64_MAX, used = 0, limit;
	const char *section = NULL;
	char why[160] = "";
	struct option *opts = common_options(c, &memory_limit, &section);
	struct report *r = NULL;
	int n, loaded = 0, nruns = 0, rc = 1;
	char what[128];

	if (!opts)
		return error("out of memory"), 1;
	n = parse(c, opts, argc, argv);
	free(opts);
	if (n < 0)
		return n == PARSE_OPT_HELP ? 0 : EXIT_USAGE;
	if (memory_limit == 0)
		return error("option '--memory-limit' expects a size above 0"), EXIT_USAGE;
	if (c->section)
		*c->section = section;
	if (c->check_section && section && c->check_section(c->ctx, section) < 0) {
		usage_hint(c->usage);
		return EXIT_USAGE;
	}
	ro.memory_limit_given = memory_limit != UINT64_MAX;
	ro.memory_limit = ro.memory_limit_given ? memory_limit
					       : default_limit((char **)argv, n, max > MAX_RUNS ? MAX_RUNS : max, why,
							       sizeof(why));
	ro.limit_why = *why ? why : NULL;
	limit = ro.memory_limit;
	if (c->full_names && c->format && (*c->format == OUT_CSV || *c->format == OUT_JSON))
		*c->full_names = true;
	if (max > MAX_RUNS)
		max = MAX_RUNS;
	rps = calloc((size_t)n, sizeof(*rps));
	if (!rps)
		return error("out of memory"), 1;
	for (; loaded < n; loaded++) {
		char left[320], total[32];

		if (loaded) {   /* what the bundles before it left */
			snprintf(left, sizeof(left), "left of %s after the %d bundle%s before it%s%s",
				 human_bytes(total, sizeof(total), (double)limit), loaded, loaded == 1 ? "" : "s",
				 *why ? "; " : "", why);
			ro.limit_why = left;
		}
		if (replay_load(&rps[loaded], argv[loaded], &ro) < 0)
			goto out;
		used += rps[loaded].memory;
		/* the next bundle gets what this one left */
		if (ro.memory_limit)
			ro.memory_limit -= rps[loaded].memory < ro.memory_limit ? rps[loaded].memory
										: ro.memory_limit - 1;
	}
	/* what the analyses build claims what reading left (lib/memlimit.h) */
	memory_budget_set(limit, used < limit ? limit - used : 0, *why ? why : NULL);
	if (c->range && replay_range_check(rps, (size_t)n, *c->range) < 0)
		goto out;
	snprintf(what, sizeof(what), "'%s' reads %s", name,
		 max == 1 ? "one run (a bundle, or the bundles of one run's ranks)" : "at most two runs");
	nruns = replay_runs_group(rps, (size_t)n, runs, (size_t)max, what);
	if (nruns < 0)
		goto out;
	if (nruns < c->bundles) {
		error("'%s' compares two runs: the bundles given are ranks of one run", name);
		rc = EXIT_USAGE;
		goto out;
	}
	r = report_new();
	rc = dispatch(c, runs, nruns, r);
	if (rc < 0)
		rc = 1;
	else if (rc == ANALYSIS_NO_REPORT)
		rc = 0;
	else if (c->format && analysis_select_section(r, section, (enum out_format)*c->format) < 0) {
		usage_hint(c->usage);   /* --section named no table of the report: a usage error, as --format's */
		rc = EXIT_USAGE;
	} else if (c->format && report_print(r, (enum out_format)*c->format, stdout) < 0) {
		rc = 1;
	}
out:
	report_free(r);
	if (nruns > 0)
		replay_runs_release(runs, (size_t)nruns);
	while (loaded > 0)
		replay_release(&rps[--loaded]);
	free(rps);
	return rc;
}
