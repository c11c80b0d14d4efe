/*
 * options.c: the option-table parser behind every command (see options.h).
 *
 * A hand-written parser rather than getopt_long: it keeps no global state
 * (commands may parse twice, tests parse many times), permutes positional
 * arguments to the front the same way on every libc, and prints git-style
 * one-line errors followed by the usage generated from the table.
 */
#include "lib/options.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "lib/error.h"

/* Help text starts in this column of the usage screen. */
#define USAGE_HELP_COLUMN 30

/* ---- values ---- */

static int parse_int_value(const char *s, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (end == s || *end != '\0' || isspace((unsigned char)*s))
		return -1;
	if (errno == ERANGE || v < INT_MIN || v > INT_MAX)
		return -1;
	*out = (int)v;
	return 0;
}

static int parse_u64_value(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	/* strtoull silently negates "-5"; an unsigned value must be digits. */
	if (!isdigit((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (*end != '\0' || errno == ERANGE)
		return -1;
	*out = v;
	return 0;
}

static int parse_double_value(const char *s, double *out)
{
	char *end;
	double v;

	if (*s == '\0' || isspace((unsigned char)*s))
		return -1;
	errno = 0;
	v = strtod(s, &end);
	if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v))
		return -1;
	*out = v;
	return 0;
}

struct size_unit {
	const char *suffix;
	uint64_t factor;
};

static const struct size_unit size_units[] = {
	{ "", 1 },
	{ "B", 1 },
	{ "KiB", 1ULL << 10 }, { "MiB", 1ULL << 20 },
	{ "GiB", 1ULL << 30 }, { "TiB", 1ULL << 40 },
	{ "KB", 1000ULL }, { "MB", 1000000ULL },
	{ "GB", 1000000000ULL }, { "TB", 1000000000000ULL },
};

/* Returns 0 and *bytes, or -1 without printing anything. */
static int parse_size_quiet(const char *s, uint64_t *bytes)
{
	const char *p = s, *suffix;
	uint64_t whole = 0, factor = 0;
	long double frac = 0.0L, scale = 0.1L;
	int digits = 0;
	size_t i;

	while (isdigit((unsigned char)*p)) {
		unsigned d = (unsigned)(*p++ - '0');
		if (whole > (UINT64_MAX - d) / 10)
			return -1;
		whole = whole * 10 + d;
		digits++;
	}
	if (*p == '.') {
		p++;
		while (isdigit((unsigned char)*p)) {
			frac += scale * (*p++ - '0');
			scale /= 10;
			digits++;
		}
	}
	if (digits == 0)
		return -1;
	suffix = p;
	for (i = 0; i < sizeof(size_units) / sizeof(size_units[0]); i++) {
		if (strcasecmp(suffix, size_units[i].suffix) == 0) {
			factor = size_units[i].factor;
			break;
		}
	}
	if (factor == 0)
		return -1;
	if (whole > UINT64_MAX / factor)
		return -1;
	if (frac != 0.0L) {
		long double extra = frac * factor;
		/* A fraction of a byte is a typo, not a size. */
		if (factor == 1)
			return -1;
		extra = roundl(extra);
		if ((long double)(UINT64_MAX - whole * factor) < extra)
			return -1;
		*bytes = whole * factor + (uint64_t)extra;
		return 0;
	}
	*bytes = whole * factor;
	return 0;
}

const char *choice_list(const char *const *names, char *buf, size_t len)
{
	size_t used = 0;
	int i, n = 0;

	while (names[n])
		n++;
	buf[0] = '\0';
	for (i = 0; i < n && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ",
				 names[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

static int choice_index(const char *s, const char *const *names)
{
	for (int i = 0; names[i]; i++)
		if (strcmp(s, names[i]) == 0)
			return i;
	return -1;
}

size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), w = lb + 1, d;
	/* the table's rows i-2, i-1 and i, in turn (the one two back is for swaps) */
	size_t *buf = malloc(3 * w * sizeof(*buf));

	if (!buf)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		buf[w + j] = j;   /* row 0 sits where row i-1 is read first */
	for (size_t i = 1; i <= la; i++) {
		size_t *row = buf + (i + 1) % 3 * w, *prev = buf + i % 3 * w, *prev2 = buf + (i + 2) % 3 * w;

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t sub = prev[j - 1] + (a[i - 1] != b[j - 1]);

			d = prev[j] + 1 < row[j - 1] + 1 ? prev[j] + 1 : row[j - 1] + 1;
			d = sub < d ? sub : d;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
			    prev2[j - 2] + 1 < d)
				d = prev2[j - 2] + 1;
			row[j] = d;
		}
	}
	d = buf[(la + 1) % 3 * w + lb];
	free(buf);
	return d;
}

const char *did_you_mean(const char *s, const char *const *names)
{
	size_t len = strlen(s), best = SIZE_MAX, max = len < 6 ? 1 : len < 12 ? 2 : 3;
	const char *found = NULL;
	int prefixed = 0, ties = 0;

	if (len == 0)
		return NULL;
	for (int i = 0; names[i]; i++) {
		size_t d = edit_distance(s, names[i]);

		/* of two as near, the one as long ("modle": model, not mode) */
		if (d < best || (d == best && found && strlen(found) != len && strlen(names[i]) == len)) {
			best = d;
			found = names[i];
			ties = 0;
		} else if (d == best && (!found || strlen(names[i]) == len || strlen(found) != len)) {
			ties++;
		}
	}
	if (ties)
		found = NULL;   /* no one guess */
	if (best <= max && found)
		return found;
	/* the start of exactly one name: "--include" for "--include-warmup" */
	found = NULL;
	for (int i = 0; names[i]; i++)
		if (len >= 3 && strncmp(names[i], s, len) == 0) {
			found = names[i];
			prefixed++;
		}
	return prefixed == 1 ? found : NULL;
}

static int bad_value(const char *name, const char *what, const char *arg)
{
	return error("option '%s' expects %s, not '%s'", name, what, arg);
}

/* Whether s is written as a whole number: an optional sign, then digits only. */
static bool whole_number(const char *s)
{
	if (*s == '-' || *s == '+')
		s++;
	return isdigit((unsigned char)*s) && strspn(s, "0123456789") == strlen(s);
}

/* A whole number past what the option takes: said so, with the range. */
static int out_of_range(const char *name, const char *arg, const char *min, const char *max)
{
	return error("option '%s' takes %s to %s: '%s' is too %s", name, min, max, arg,
		     arg[0] == '-' ? "small" : "large");
}

int parse_choice(const char *s, const char *const *names, const char *what, int *out)
{
	char list[512];
	int i = choice_index(s, names);

	if (i < 0)
		return bad_value(what, choice_list(names, list, sizeof(list)), s);
	*out = i;
	return 0;
}

int parse_size(const char *s, uint64_t *bytes)
{
	if (parse_size_quiet(s, bytes) < 0)
		return error("invalid size '%s' (expected e.g. 4096, 512MiB, 1.5GiB, 80GB)", s);
	return 0;
}

int split_list(const char *s, const char **items, int max, char **storage)
{
	char *copy, *p;
	int n = 0;

	*storage = NULL;
	copy = strdup(s);
	if (!copy)
		return error("out of memory");
	p = copy;
	for (;;) {
		char *comma = strchr(p, ',');
		char *end;

		if (comma)
			*comma = '\0';
		while (isspace((unsigned char)*p))
			p++;
		end = p + strlen(p);
		while (end > p && isspace((unsigned char)end[-1]))
			*--end = '\0';
		if (*p == '\0') {
			free(copy);
			return error("empty item in list '%s'", s);
		}
		if (n >= max) {
			free(copy);
			return error("too many items in list '%s' (at most %d)", s, max);
		}
		items[n++] = p;
		if (!comma)
			break;
		p = comma + 1;
	}
	*storage = copy;
	return n;
}

/* ---- usage ---- */

static bool takes_value(const struct option *o)
{
	return o->type != OPTION_BOOLEAN && o->type != OPTION_GROUP && o->type != OPTION_END;
}

static void print_option_line(FILE *f, int short_name, const char *long_name, bool negatable,
			      const char *argh, const char *help, const char *dflt)
{
	int col = fprintf(f, "    ");

	if (short_name)
		col += fprintf(f, "-%c%s", short_name, long_name ? ", " : "");
	else
		col += fprintf(f, "    ");
	if (long_name)
		col += fprintf(f, "--%s%s", negatable ? "[no-]" : "", long_name);
	if (argh)
		col += fprintf(f, " <%s>", argh);
	if (!help || !*help) {
		fputc('\n', f);
		return;
	}
	if (col >= USAGE_HELP_COLUMN - 1) {
		fputc('\n', f);
		col = 0;
	}
	fprintf(f, "%*s%s", USAGE_HELP_COLUMN - col, "", help);
	if (dflt)
		fprintf(f, " (default: %s)", dflt);
	fputc('\n', f);
}

/* What the usage screen shows for an option's value: its placeholder, or the choices. */
static const char *value_name(const struct option *o, char *buf, size_t len)
{
	size_t used = 0;

	if (!takes_value(o))
		return NULL;
	if (o->type != OPTION_CHOICE || !o->choices)
		return o->argh ? o->argh : "VALUE";
	buf[0] = '\0';
	for (int i = 0; o->choices[i] && used < len; i++) {
		int w = snprintf(buf + used, len - used, "%s%s", i ? "|" : "", o->choices[i]);
		if (w < 0)
			break;
		used += (size_t)w;
	}
	return buf;
}

/*
 * A choice's default, the name its variable held before parsing (`initial`,
 * or the variable itself), unless the help text speaks of it already.
 */
static const char *choice_default(const struct option *o, const int *initial)
{
	int v = initial ? *initial : *(const int *)o->value, n = 0;

	if (o->type != OPTION_CHOICE || !o->choices || (o->help && strstr(o->help, "default")))
		return NULL;
	while (o->choices[n])
		n++;
	return v >= 0 && v < n ? o->choices[v] : NULL;
}

/* The first usage line's command ("steptrace summary" of "steptrace summary [<options>] FILE"). */
static int command_length(const char *line)
{
	const char *p = line, *end = line;

	while (*p) {
		const char *w = p;

		while (*p && strchr("abcdefghijklmnopqrstuvwxyz0123456789-", *p))
			p++;
		if (p == w || (*p && *p != ' '))
			break;
		end = p;
		while (*p == ' ')
			p++;
	}
	return (int)(end - line);
}

void usage_hint(const char *const usage[])
{
	if (usage && usage[0])
		fprintf(stderr, "See '%.*s --help'.\n", command_length(usage[0]), usage[0]);
}

static void print_usage(const char *const usage[], const struct option *opts, FILE *f,
			const int *initial)
{
	char argh[256];
	const struct option *o;
	int i, k = 0;

	/* the description, after an empty line of the usage, comes first */
	for (i = 0; usage && usage[i] && *usage[i]; i++)
		;
	if (usage && usage[i]) {
		for (i++; usage[i]; i++)
			fprintf(f, "%s\n", usage[i]);
		fputc('\n', f);
	}
	for (i = 0; usage && usage[i] && *usage[i]; i++)
		fprintf(f, "%s%s\n", i == 0 ? "usage: " : "   or: ", usage[i]);
	fputc('\n', f);
	for (o = opts; o && o->type != OPTION_END; o++, k++) {
		if (o->type == OPTION_GROUP) {
			fprintf(f, "\n%s\n", o->help ? o->help : "");
			continue;
		}
		print_option_line(f, o->short_name, o->long_name,
				  o->type == OPTION_BOOLEAN && o->long_name, value_name(o, argh, sizeof(argh)),
				  o->help, choice_default(o, initial ? &initial[k] : NULL));
	}
	print_option_line(f, 'h', "help", false, NULL, "show this help", NULL);
}

void usage_with_options(const char *const usage[], const struct option *opts, bool to_stdout)
{
	print_usage(usage, opts, to_stdout ? stdout : stderr, NULL);
}

/* ---- parsing ---- */

struct parse_state {
	const struct option *opts;
	const char *const *usage;
	bool *given;          /* per option: a value was given (a string takes one) */
	int *initial;         /* per option: a choice's value before parsing, for the help's defaults */
};

/* Formats how the user spelled an option, for messages. */
static const char *option_spelling(const struct option *o, bool used_short, char *buf, size_t len)
{
	if (used_short || !o->long_name)
		snprintf(buf, len, "-%c", o->short_name);
	else
		snprintf(buf, len, "--%s", o->long_name);
	return buf;
}

static int assign_value(const struct option *o, const char *arg, const char *name)
{
	const char *what = NULL;

	switch (o->type) {
	case OPTION_INTEGER:
		if (parse_int_value(arg, o->value) < 0) {
			if (whole_number(arg))
				return out_of_range(name, arg, "-2147483648", "2147483647");
			what = "an integer";
		}
		break;
	case OPTION_COUNT:
	case OPTION_POSITIVE: {
		int min = o->type == OPTION_COUNT ? 0 : 1, v;

		if (parse_int_value(arg, &v) < 0 && whole_number(arg) && arg[0] != '-')
			return out_of_range(name, arg, min ? "1" : "0", "2147483647");
		if (parse_int_value(arg, &v) < 0 || v < min)
			what = min ? "a positive integer" : "a non-negative integer";
		else
			*(int *)o->value = v;
		break;
	}
	case OPTION_U64:
		if (parse_u64_value(arg, o->value) < 0) {
			if (isdigit((unsigned char)arg[0]) && whole_number(arg))
				return out_of_range(name, arg, "0", "18446744073709551615");
			what = "a non-negative integer";
		}
		break;
	case OPTION_DOUBLE:
		if (parse_double_value(arg, o->value) < 0)
			what = "a number";
		break;
	case OPTION_NONNEGATIVE: {
		double v;

		if (parse_double_value(arg, &v) < 0 || v < 0)
			what = "a non-negative number";
		else
			*(double *)o->value = v;
		break;
	}
	case OPTION_STRING:
		*(const char **)o->value = arg;
		break;
	case OPTION_STRING_LIST: {
		struct opt_list *l = o->value;

		if (l->n >= l->max)
			return error("option '%s' given more than %zu times", name, l->max);
		l->v[l->n++] = arg;
		break;
	}
	case OPTION_SIZE:
	case OPTION_SIZE_LIMIT: {
		uint64_t v;

		if (parse_size_quiet(arg, &v) < 0 || (v == 0 && o->type == OPTION_SIZE))
			what = o->type == OPTION_SIZE ? "a positive size such as 4096, 512MiB, 1.5GiB or 80GB"
						      : "a size such as 4096, 512MiB or 1.5GiB, or 0 for no limit";
		else
			*(uint64_t *)o->value = v;
		break;
	}
	case OPTION_CHOICE:
		return parse_choice(arg, o->choices, name, o->value);
	default:
		break;
	}
	if (what)
		return bad_value(name, what, arg);
	return 0;
}

/*
 * A string (a pattern, a path, a list) is given once: a second would drop
 * the first unseen, so it is refused. A number or a choice given again
 * counts as the last one said (a wrapper's default, overridden).
 */
static int take_value(const struct parse_state *ps, const struct option *o, const char *arg,
		      const char *name)
{
	bool *given = &ps->given[o - ps->opts];
	char buf[128];

	if (*given && o->type == OPTION_STRING)
		return error("option '%s' given twice", option_spelling(o, false, buf, sizeof(buf)));
	*given = true;
	return assign_value(o, arg, name);
}

/* The long names of the table, "help" included, NULL-terminated; NULL when out of memory. */
static const char **long_names(const struct option *opts)
{
	size_t n = 0, k = 0;
	const char **v;

	while (opts[n].type != OPTION_END)
		n++;
	v = calloc(n + 2, sizeof(*v));
	if (!v)
		return NULL;
	for (size_t i = 0; i < n; i++)
		if (opts[i].long_name)
			v[k++] = opts[i].long_name;
	v[k] = "help";
	return v;
}

static int unknown_long(const struct option *opts, const char *arg, size_t len)
{
	const char **names = long_names(opts);
	char *typed = strndup(arg, len);
	const char *near = names && typed ? did_you_mean(typed, names) : NULL;

	if (near)
		error("unknown option '--%.*s'. Did you mean '--%s'?", (int)len, arg, near);
	else
		error("unknown option '--%.*s'", (int)len, arg);
	free(names);
	free(typed);
	return PARSE_OPT_ERROR;
}

static const struct option *find_long(const struct option *opts, const char *name, size_t len,
				      bool *negated)
{
	const struct option *o;

	*negated = false;
	for (o = opts; o->type != OPTION_END; o++) {
		if (o->long_name && strlen(o->long_name) == len && strncmp(o->long_name, name, len) == 0)
			return o;
	}
	if (len > 3 && strncmp(name, "no-", 3) == 0) {
		for (o = opts; o->type != OPTION_END; o++) {
			if (o->type == OPTION_BOOLEAN && o->long_name &&
			    strlen(o->long_name) == len - 3 &&
			    strncmp(o->long_name, name + 3, len - 3) == 0) {
				*negated = true;
				return o;
			}
		}
	}
	return NULL;
}

static const struct option *find_short(const struct option *opts, int c)
{
	const struct option *o;

	for (o = opts; o->type != OPTION_END; o++)
		if (o->short_name == c && o->type != OPTION_GROUP)
			return o;
	return NULL;
}

/*
 * Handles argv[*i], a long option without its "--". Consumes the next
 * argument as the value when needed. 0, PARSE_OPT_HELP or PARSE_OPT_ERROR.
 */
static int parse_long(const struct parse_state *ps, int argc, const char **argv, int *i)
{
	const char *arg = argv[*i] + 2;
	const char *eq = strchr(arg, '=');
	size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
	const struct option *o;
	bool negated;
	char name[128];

	o = find_long(ps->opts, arg, len, &negated);
	if (!o) {
		if (len == 4 && strncmp(arg, "help", 4) == 0 && !eq)
			return PARSE_OPT_HELP;
		return unknown_long(ps->opts, arg, len);
	}
	snprintf(name, sizeof(name), "--%.*s", (int)len, arg);
	if (o->type == OPTION_BOOLEAN) {
		if (eq) {
			error("option '%s' takes no value", name);
			return PARSE_OPT_ERROR;
		}
		*(bool *)o->value = !negated;
		return 0;
	}
	if (eq)
		return take_value(ps, o, eq + 1, name) < 0 ? PARSE_OPT_ERROR : 0;
	if (*i + 1 >= argc) {
		error("option '%s' requires a value", name);
		return PARSE_OPT_ERROR;
	}
	*i += 1;
	return take_value(ps, o, argv[*i], name) < 0 ? PARSE_OPT_ERROR : 0;
}

/* Handles argv[*i], one or more short options after "-" ("-v", "-vq", "-oFILE", "-o FILE"). */
static int parse_short(const struct parse_state *ps, int argc, const char **argv, int *i)
{
	const char *p = argv[*i] + 1;
	char name[8];

	for (; *p; p++) {
		const struct option *o = find_short(ps->opts, (unsigned char)*p);

		if (!o) {
			if (*p == 'h')
				return PARSE_OPT_HELP;
			error("unknown option '-%c'", *p);
			return PARSE_OPT_ERROR;
		}
		option_spelling(o, true, name, sizeof(name));
		if (o->type == OPTION_BOOLEAN) {
			*(bool *)o->value = true;
			continue;
		}
		if (p[1])
			return take_value(ps, o, p + 1, name) < 0 ? PARSE_OPT_ERROR : 0;
		if (*i + 1 >= argc) {
			error("option '%s' requires a value", name);
			return PARSE_OPT_ERROR;
		}
		*i += 1;
		return take_value(ps, o, argv[*i], name) < 0 ? PARSE_OPT_ERROR : 0;
	}
	return 0;
}

int parse_options(int argc, const char **argv, const struct option *opts,
		  const char *const usage[])
{
	struct parse_state ps = { opts, usage, NULL, NULL };
	int i, npos = 0, rc = 0;
	size_t n = 0;

	while (opts[n].type != OPTION_END)
		n++;
	ps.given = calloc(n + 1, sizeof(*ps.given));
	ps.initial = calloc(n + 1, sizeof(*ps.initial));
	if (!ps.given || !ps.initial) {
		free(ps.given);
		free(ps.initial);
		error("out of memory");
		return PARSE_OPT_ERROR;
	}
	for (size_t k = 0; k < n; k++)
		if (opts[k].type == OPTION_CHOICE)
			ps.initial[k] = *(const int *)opts[k].value;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (strcmp(a, "--") == 0) {
			for (i++; i < argc; i++)
				argv[npos++] = argv[i];
			break;
		}
		if (a[0] == '-' && a[1] == '-')
			rc = parse_long(&ps, argc, argv, &i);
		else if (a[0] == '-' && a[1] != '\0')
			rc = parse_short(&ps, argc, argv, &i);
		else
			argv[npos++] = a;   /* npos < i: never overwrites what is still to read */
		if (rc == PARSE_OPT_HELP) {
			print_usage(usage, opts, stdout, ps.initial);
			break;
		}
		if (rc < 0) {
			usage_hint(usage);
			rc = PARSE_OPT_ERROR;
			break;
		}
	}
	free(ps.given);
	free(ps.initial);
	if (rc < 0)
		return rc;
	if (npos < argc)
		argv[npos] = NULL;
	return npos;
}
