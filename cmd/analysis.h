/*
 * analysis.h: the one runner behind every analysis command. A command in
 * cmd/ declares its option table and what it needs, and hands over:
 *
 *   int cmd_summary(int argc, const char **argv)
 *   {
 *           struct summary_opts o = SUMMARY_OPTS_INIT;
 *           const struct option opts[] = { ..., OPT_FORMAT(&o.format), OPT_END() };
 *           const struct analysis_cmd c = {
 *                   .usage = usage, .options = opts, .bundles = 1,
 *                   .range = &o.range, .format = &o.format,
 *                   .check = check, .run = run, .ctx = &o,
 *           };
 *           return analysis_main(&c, argc, argv);
 *   }
 *
 * analysis_main parses, checks the values (a bad one is a usage error),
 * loads the bundles into replays, runs, prints the report in --format and
 * releases everything. Its return value is the exit status.
 */
#ifndef STEPTRACE_CMD_ANALYSIS_H
#define STEPTRACE_CMD_ANALYSIS_H

#include "lib/options.h"
#include "lib/table.h"
#include "replay/replay.h"

#define ANALYSIS_MAX_BUNDLES 2

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
	 * Builds the report from n loaded bundles (or writes the command's
	 * files). Returns the exit status: 0, another status of the command's
	 * own, or -1 after an error line.
	 */
	int (*run)(const struct replay *rps, int n, void *ctx, struct report *r);
	void *ctx;
};

int analysis_main(const struct analysis_cmd *c, int argc, const char **argv);

#endif
