/*
 * analysis.h: the one runner behind every analysis command. A command in
 * cmd/ declares its option table and what it needs, and hands over:
 *
 *   int cmd_summary(int argc, const char **argv)
 *   {
 *           struct summary_opts o = { .by = BY_KERNEL };
 *           int format = OUT_TABLE;
 *           const struct option opts[] = { ..., OPT_PER_RANK(&o.per_rank), OPT_FORMAT(&format), OPT_END() };
 *           const struct analysis_cmd c = {
 *                   .usage = usage, .options = opts, .bundles = 1,
 *                   .range = &o.range, .format = &format, .per_rank = &o.per_rank,
 *                   .check = check, .run = run, .ctx = &o,
 *           };
 *           return analysis_main(&c, argc, argv);
 *   }
 *
 * analysis_main parses, checks the values (a bad one is a usage error),
 * loads the bundles into replays (replay_load: a bundle that lost records,
 * truncated or dropped while recording, warns in one line, once), sorts
 * them into runs, runs, prints the report in --format and releases
 * everything. Its return value is the exit status. A command with a report
 * also takes --section NAME, which prints that table alone; CSV prints one
 * table (the first unless --section says), and the report's notes go to
 * stderr there: one CSV file on stdout.
 *
 * A run is one bundle, or the bundles of the ranks of one run on several
 * GPUs (replay/ranks.h: one run id), given in any order: `steptrace summary
 * run.rank*.stb`. Bundles of different runs where a command reads one are
 * refused in one line. What a command makes of a run of several ranks is
 * its `ranks`:
 *   RANKS_POOL   totals across the ranks: run gets the pooled replay of the
 *                run (replay_ranks_pool), and --per-rank makes it RANKS_SPLIT;
 *   RANKS_SPLIT  run once per rank (with rank r of each run), the tables
 *                stacked with a first column "Rank" (report_stack);
 *   RANKS_OWN    run_ranks gets the runs, ranks and time line (export,
 *                report, comm).
 *
 * A command that writes files (export, report, the charts of memory and
 * flops) writes them from run; one whose output is not a report (replay's
 * event listing) writes it there too and returns ANALYSIS_NO_REPORT.
 */
#ifndef STEPTRACE_CMD_ANALYSIS_H
#define STEPTRACE_CMD_ANALYSIS_H

#include <stdbool.h>

#include "lib/options.h"
#include "lib/output.h"
#include "lib/table.h"
#include "replay/ranks.h"
#include "replay/replay.h"

/* Bundles on one command line: the ranks of the runs it reads. */
#define ANALYSIS_MAX_BUNDLES 1024

/* run's return value when it wrote the command's output itself: exit 0, nothing to print. */
#define ANALYSIS_NO_REPORT 256

enum analysis_ranks { RANKS_POOL, RANKS_SPLIT, RANKS_OWN };

/* --per-rank of the commands that total across ranks. */
#define OPT_PER_RANK(v)                                                                       \
	OPT_BOOLEAN(0, "per-rank", (v),                                                       \
		    "with the bundles of several ranks: each rank's report, not their totals")

/*
 * --full-names of the reports that print kernel names: whole signatures, not
 * the base names a table prints by default (analyze/common.h, kernel_names).
 */
#define OPT_FULL_NAMES(v)                                                                     \
	OPT_BOOLEAN(0, "full-names", (v),                                                     \
		    "print kernel names whole, not their base names (csv and json always do)")

/*
 * --max-size of the commands that write a file (lib/output.h): one
 * estimated larger is refused in one line before it is written. `what`:
 * "the page", "the chart". The variable starts at OUTPUT_MAX_SIZE.
 */
#define OPT_MAX_SIZE(v, what)                                                                 \
	OPT_SIZE_LIMIT(0, "max-size", (v),                                                    \
		       "refuse " what " when larger than SIZE (default " OUTPUT_MAX_SIZE_TEXT "; 0: no limit)")

struct analysis_cmd {
	const char *const *usage;
	const struct option *options;
	int bundles;                  /* runs required (a bundle, or the rank bundles of a run) */
	int bundles_max;              /* more allowed up to this (0: exactly `bundles`) */
	const char *const *range;     /* a --range pattern to check before reading, or NULL */
	const int *format;            /* the OPT_FORMAT value; NULL when the command prints no report */
	enum analysis_ranks ranks;    /* what a run of several ranks becomes (see above) */
	const bool *per_rank;         /* --per-rank, for RANKS_POOL; or NULL */
	/* --full-names, or NULL: set for csv and json as well, which programs read */
	bool *full_names;
	/* An output file option the command was given (memory's --svg): RANKS_SPLIT refuses it. */
	const char *const *output;
	const char *output_option;    /* its name, "--svg" */
	/* Where dispatch writes how many ranks the (first) run given has, 1 for a bundle alone; or NULL. */
	size_t *ranks_given;
	/*
	 * Where --section's value goes before run, for a command with a table
	 * that only --section prints (comm's instances); NULL when not needed.
	 */
	const char **section;
	/*
	 * Refuses a --section that names no table the command prints, before
	 * a bundle is read; -1 after one line. May be NULL.
	 */
	int (*check_section)(void *ctx, const char *section);
	/* Checks option values once parsed; -1 (one line printed) is a usage error. May be NULL. */
	int (*check)(void *ctx);
	/*
	 * Builds the report from n runs, each one replay (a bundle, a pooled
	 * run, or one rank of it), and writes the command's files. Returns the
	 * exit status: 0; a status of the command's own, the report printed all
	 * the same (flops when its chart could not be written);
	 * ANALYSIS_NO_REPORT; or -1 after an error line, when nothing is
	 * printed and the status is 1.
	 */
	int (*run)(const struct replay *const *rps, int n, void *ctx, struct report *r);
	/* RANKS_OWN: the same from the runs themselves. */
	int (*run_ranks)(const struct replay_ranks *runs, int n, void *ctx, struct report *r);
	void *ctx;
};

int analysis_main(const struct analysis_cmd *c, int argc, const char **argv);

/*
 * The tables a report prints: --section's alone (`section` NULL: all); in
 * CSV one table, the first, naming the others on stderr. For commands that
 * print a report without reading a bundle (plan). 0, or -1 after one line.
 */
int analysis_select_section(struct report *r, const char *section, enum out_format f);

#endif
