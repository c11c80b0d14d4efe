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
 *   if (argc < 0) return argc == PARSE_OPT_HELP ? 0 : EXIT_USAGE;
 *
 * On return argv[0..argc-1] are the positional arguments (command name
 * dropped). Unknown options (with git's "Did you mean '--top'?" when one is
 * near), missing, malformed or repeated values print one error line and one
 * line pointing to --help ("See 'steptrace summary --help'.") and return
 * PARSE_OPT_ERROR; --help / -h prints the usage to stdout and returns
 * PARSE_OPT_HELP.
 *
 * A string option (a pattern, a path, a list: OPT_STRING) takes one value:
 * given twice ("--range a --range b", "-o a -o b") it is an error ("option
 * '--range' given twice"), never a silent choice of one. Numbers, sizes,
 * choices and booleans may repeat, the last one counting (a wrapper's
 * --top 20 overridden by --top 5; --x --no-x).
 *
 * The usage array: its usage lines, then optionally an empty string and
 * description lines, which the help prints first:
 *   { "steptrace summary [<options>] FILE", "", "steptrace summary: the kernel summary ...", NULL }
 * The help shows each choice's default (the name its variable holds before
 * parsing) unless the option's help text speaks of its default itself.
 *
 * Every malformed value gets the same line: "option '--by' expects kernel,
 * op or category, not 'x'". One rule per kind of value, in the type: a
 * count (0 or more) is OPT_COUNT, a number of things that cannot be none
 * (--top, --depth, --steps) OPT_POSITIVE, a size is positive (a limit,
 * OPT_SIZE_LIMIT, may be 0: none), a time or other measure that cannot be
 * negative OPT_NONNEGATIVE. A variable's initial value (say -1 for "not
 * given") is never checked: only what the user typed is.
 */
#ifndef STEPTRACE_LIB_OPTIONS_H
#define STEPTRACE_LIB_OPTIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum option_type {
	OPTION_END,
	OPTION_BOOLEAN,   /* bool *; --no-NAME clears it */
	OPTION_INTEGER,   /* int * */
	OPTION_COUNT,     /* int *, 0 or more */
	OPTION_POSITIVE,  /* int *, 1 or more */
	OPTION_U64,       /* uint64_t * */
	OPTION_DOUBLE,    /* double * */
	OPTION_NONNEGATIVE, /* double *, 0 or more */
	OPTION_STRING,    /* const char ** (points into argv) */
	OPTION_STRING_LIST, /* struct opt_list *: each time given, one more (points into argv) */
	OPTION_SIZE,      /* uint64_t * bytes, more than 0: 1024, 24GiB, 80GB, 512MiB, 1.5GiB */
	OPTION_SIZE_LIMIT, /* uint64_t * bytes, a size or 0 for no limit (--max-size) */
	OPTION_CHOICE,    /* int *: the index of the value in a NULL-terminated name list */
	OPTION_GROUP,     /* a heading in the usage screen */
};

struct option {
	enum option_type type;
	int short_name;       /* 0 for none */
	const char *long_name;
	void *value;
	const char *argh;     /* placeholder in the usage screen, e.g. "FILE" */
	const char *help;
	const char *const *choices;   /* OPTION_CHOICE: the names, NULL-terminated */
};

#define OPT_END()                         { OPTION_END, 0, NULL, NULL, NULL, NULL, NULL }
#define OPT_GROUP(h)                      { OPTION_GROUP, 0, NULL, NULL, NULL, (h), NULL }
#define OPT_BOOLEAN(s, l, v, h)           { OPTION_BOOLEAN, (s), (l), (v), NULL, (h), NULL }
#define OPT_INTEGER(s, l, v, h)           { OPTION_INTEGER, (s), (l), (v), "N", (h), NULL }
#define OPT_COUNT(s, l, v, h)             { OPTION_COUNT, (s), (l), (v), "N", (h), NULL }
#define OPT_POSITIVE(s, l, v, h)          { OPTION_POSITIVE, (s), (l), (v), "N", (h), NULL }
#define OPT_U64(s, l, v, h)               { OPTION_U64, (s), (l), (v), "N", (h), NULL }
#define OPT_DOUBLE(s, l, v, h)            { OPTION_DOUBLE, (s), (l), (v), "X", (h), NULL }
#define OPT_NONNEGATIVE(s, l, v, a, h)    { OPTION_NONNEGATIVE, (s), (l), (v), (a), (h), NULL }
#define OPT_STRING(s, l, v, a, h)         { OPTION_STRING, (s), (l), (v), (a), (h), NULL }
/*
 * A string that may be given several times, each adding one (explain's
 * --what-if): into a struct opt_list, at most its `max`; one more is an
 * error ("option '--what-if' given more than 16 times").
 */
struct opt_list {
	const char **v;
	size_t n, max;
};
#define OPT_STRING_LIST(s, l, v, a, h)    { OPTION_STRING_LIST, (s), (l), (v), (a), (h), NULL }
#define OPT_SIZE(s, l, v, h)              { OPTION_SIZE, (s), (l), (v), "SIZE", (h), NULL }
#define OPT_SIZE_LIMIT(s, l, v, h)        { OPTION_SIZE_LIMIT, (s), (l), (v), "SIZE", (h), NULL }
/*
 * One of several names: *v (an int) becomes the index of the name given in
 * `names` (NULL-terminated; the name tables of lib/ and trace/types.h fit).
 * The usage screen shows the names: --by <kernel|op|category>.
 */
#define OPT_CHOICE(s, l, v, names, h)     { OPTION_CHOICE, (s), (l), (v), NULL, (h), (names) }

#define PARSE_OPT_HELP (-2)
#define PARSE_OPT_ERROR (-1)

int parse_options(int argc, const char **argv, const struct option *opts,
		  const char *const usage[]);
void usage_with_options(const char *const usage[], const struct option *opts, bool to_stdout);
/* The line after a usage error's: "See 'steptrace summary --help'." on stderr. */
void usage_hint(const char *const usage[]);

/* Edit distance, an adjacent swap counting one ("tpo" is 1 from "top"). SIZE_MAX when out of memory. */
size_t edit_distance(const char *a, const char *b);
/*
 * For "Did you mean": the one name of `names` (NULL-terminated) near enough
 * to `s` to be a typo of it (1 edit in a short word, 2 or 3 in longer
 * ones), or the one name `s` begins (3 characters at least); NULL when none
 * or several are.
 */
const char *did_you_mean(const char *s, const char *const *names);

/*
 * `s` as an index into `names` (NULL-terminated), for list items and other
 * values parsed outside a table; `what` names the option in the message
 * ("--precision"). -1 with the option-table message when it is none of them.
 */
int parse_choice(const char *s, const char *const *names, const char *what, int *out);

/* "kernel, op or category" into buf. */
const char *choice_list(const char *const *names, char *buf, size_t len);

/* "24GiB", "80GB", "512MiB", "1.5GiB", "4096" -> bytes. -1 (with an error line) if malformed. */
int parse_size(const char *s, uint64_t *bytes);

/*
 * Splits a comma-separated list ("small,medium") into at most `max` items
 * that point into a copy owned by *storage (free it with free()). Returns the
 * count, or -1 (with an error line) when there are more than max or an empty item.
 */
int split_list(const char *s, const char **items, int max, char **storage);

#endif
