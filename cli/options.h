/*
 * options.h: declarative option tables, in the manner of perf's
 * parse-options: each option sits next to its help text, and the usage
 * screen is generated from the table.
 *
 *   static const char *const usage[] = { "steptrace summary [<options>] FILE", NULL };
 *   const struct option opts[] = {
 *           OPT_STRING(0, "range", &range, "PATH", "keep kernels under this NVTX path (* wildcards)"),
 *           OPT_INTEGER('n', "top", &top, "show the N largest rows"),
 *           OPT_END(),
 *   };
 *   argc = parse_options(argc, argv, opts, usage);   // argv[0] is the command name
 *   if (argc < 0) return argc == PARSE_OPT_HELP ? 0 : 129;
 *
 * On return argv[0..argc-1] are the positional arguments (command name
 * dropped). Unknown options, missing or malformed values print one error
 * line plus the usage and return PARSE_OPT_ERROR; --help / -h prints the
 * usage to stdout and returns PARSE_OPT_HELP.
 */
#ifndef STEPTRACE_CLI_OPTIONS_H
#define STEPTRACE_CLI_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

enum option_type {
	OPTION_END,
	OPTION_BOOLEAN,   /* bool *; --no-NAME clears it */
	OPTION_INTEGER,   /* int * */
	OPTION_U64,       /* uint64_t * */
	OPTION_DOUBLE,    /* double * */
	OPTION_STRING,    /* const char ** (points into argv) */
	OPTION_SIZE,      /* uint64_t * bytes: 1024, 24GiB, 80GB, 512MiB, 1.5GiB */
	OPTION_GROUP,     /* a heading in the usage screen */
};

struct option {
	enum option_type type;
	int short_name;       /* 0 for none */
	const char *long_name;
	void *value;
	const char *argh;     /* placeholder in the usage screen, e.g. "FILE" */
	const char *help;
};

#define OPT_END()                         { OPTION_END, 0, NULL, NULL, NULL, NULL }
#define OPT_GROUP(h)                      { OPTION_GROUP, 0, NULL, NULL, NULL, (h) }
#define OPT_BOOLEAN(s, l, v, h)           { OPTION_BOOLEAN, (s), (l), (v), NULL, (h) }
#define OPT_INTEGER(s, l, v, h)           { OPTION_INTEGER, (s), (l), (v), "N", (h) }
#define OPT_U64(s, l, v, h)               { OPTION_U64, (s), (l), (v), "N", (h) }
#define OPT_DOUBLE(s, l, v, h)            { OPTION_DOUBLE, (s), (l), (v), "X", (h) }
#define OPT_STRING(s, l, v, a, h)         { OPTION_STRING, (s), (l), (v), (a), (h) }
#define OPT_SIZE(s, l, v, h)              { OPTION_SIZE, (s), (l), (v), "SIZE", (h) }

#define PARSE_OPT_HELP (-2)
#define PARSE_OPT_ERROR (-1)

int parse_options(int argc, const char **argv, const struct option *opts,
		  const char *const usage[]);
void usage_with_options(const char *const usage[], const struct option *opts, bool to_stdout);

/* "24GiB", "80GB", "512MiB", "1.5GiB", "4096" -> bytes. -1 (with an error line) if malformed. */
int parse_size(const char *s, uint64_t *bytes);

/*
 * Splits a comma-separated list ("small,medium") into at most `max` items
 * that point into a copy owned by *storage (free it with free()). Returns the
 * count, or -1 (with an error line) when there are more than max or an empty item.
 */
int split_list(const char *s, const char **items, int max, char **storage);

#endif
