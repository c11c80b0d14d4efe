/*
 * analysis.h: the one runner behind every analysis command. A command in
 * cmd/ declares its option table and what it needs, and hands over:
 *
 *   int cmd_summary(int argc, const char **argv)
 *   {
 *           struct summary_opts o = { .by = BY_KERNEL };
 *           int format = OUT_TABLE;
 *           const struct option opts[] = { ..., OPT_FORMAT(&format), OPT_END() };
 *           const struct analysis_cmd c = {
 *                   .usage = usage, .options = opts, .bundles = 1,
 *                   .range = &o.range, .format = &format,
 *                   .check = check, .run = run, .ctx = &o,
 *           };
 *           return analysis_main(&c, argc, argv);
 *   }
 *
 * analysis_main parses, checks the values (a bad one is a usage error),
 * loads the bundles into replays, runs, prints the report in --format and
 * releases everything. Its return value is the exit status.
 *
 * A command that writes files (export, report, the charts of memory and
 * flops) writes them from run; one whose output is not a report (replay's
 * event listing) writes it there too and returns ANALYSIS_NO_REPORT.
 */
#ifndef STEPTRACE_CMD_ANALYSIS_H
#define STEPTRACE_CMD_ANALYSIS_H

#include "lib/options.h"
#include "lib/table.h"
#include "replay/replay.h"

#define ANALYSIS_MAX_BUNDLES 2

/* run's return value when it wrote the command's output itself: exit 0, nothing to print. */
#define ANALYSIS_NO_REPORT 256

struct analysis_cmd {
	const char *const *usage;
	const struct option *options;
	int bundles;                  /* positional bundles required */
	int bundles_max;              /* more allowed up to this (0: exactly `bundles`) */
	const char *const *range;     /* a --range pattern to check before reading, or NULL */
	const int *format;            /* the OPT_FORMAT value; NULL when the command prints no report */
	/* Checks option values once parsed; -1 (one line printed) is a usage error. May be NULL. */
	int (*check)(void *ctx);
	/*
	 * Builds the report from n loaded bundles and writes the command's
	 * files. Returns the exit status: 0; a status of the command's own, the
	 * report printed all the same (flops when its chart could not be
	 * written); ANALYSIS_NO_REPORT; or -1 after an error line, when nothing
	 * is printed and the status is 1.
	 */
	int (*run)(const struct replay *rps, int n, void *ctx, struct report *r);
	void *ctx;
};

int analysis_main(const struct analysis_cmd *c, int argc, const char **argv);

#endif
