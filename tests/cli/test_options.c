/* test_options.c: option tables, every value type, errors, --help, sizes, lists. */
#include "tests/lib/check.h"

#include "lib/error.h"
#include "lib/options.h"

static bool warmup = true, verbose;
static int top = 10, step = -1, depth;
static uint64_t count, capacity;
static double ratio, from = -1;
static const char *output;

static const char *const usage[] = { "steptrace test [<options>] FILE...", NULL };
static const struct option opts[] = {
	OPT_GROUP("Output"),
	OPT_STRING('o', "output", &output, "FILE", "write the result to FILE"),
	OPT_BOOLEAN('v', "verbose", &verbose, "say more"),
	OPT_GROUP("Selection"),
	OPT_BOOLEAN(0, "warmup", &warmup, "include warm-up steps"),
	OPT_INTEGER('n', "top", &top, "show the N largest rows"),
	OPT_U64(0, "count", &count, "events to read"),
	OPT_DOUBLE(0, "ratio", &ratio, "a threshold"),
	OPT_SIZE(0, "capacity", &capacity, "device memory to replay against"),
	OPT_COUNT(0, "step", &step, "only step N"),
	OPT_POSITIVE(0, "depth", &depth, "paths of at most N components"),
	OPT_NONNEGATIVE(0, "from", &from, "MS", "start at this time"),
	OPT_END(),
};

static void reset(void)
{
	warmup = true;
	verbose = false;
	top = 10;
	count = capacity = 0;
	ratio = 0;
	step = -1;
	depth = 0;
	from = -1;
	output = NULL;
}

/* Parses a NULL-terminated argument list (argv[0] included); captures stdout and stderr. */
static int parse(const char **argv, char **out, char **err)
{
	struct capture co, ce;
	int argc = 0, rc;

	while (argv[argc])
		argc++;
	reset();
	capture_begin(&co, stdout);
	capture_begin(&ce, stderr);
	rc = parse_options(argc, argv, opts, usage);
	*err = capture_end(&ce);
	*out = capture_end(&co);
	return rc;
}

/*
 * Expects PARSE_OPT_ERROR with exactly `line` on stderr and one line after
 * it pointing to --help (not the usage), nothing on stdout.
 */
static void expect_error(const char **argv, const char *line)
{
	char *out, *err, want[512];
	int rc = parse(argv, &out, &err);

	CHECK(rc == PARSE_OPT_ERROR);
	snprintf(want, sizeof(want), "%s\nSee 'steptrace test --help'.\n", line);
	CHECK_STR(err, want);
	CHECK(*out == '\0');
	free(out);
	free(err);
}

static void test_values(void)
{
	const char *argv[] = { "test", "--top", "5", "--count=18446744073709551615", "--ratio", "-2.5e-3",
			       "-o", "x.csv", "-v", "--no-warmup", "--capacity", "1.5GiB", NULL };
	char *out, *err;

	CHECK(parse(argv, &out, &err) == 0);
	CHECK(top == 5);
	CHECK(count == UINT64_MAX);
	CHECK(ratio == -2.5e-3);
	CHECK_STR(output, "x.csv");
	CHECK(verbose);
	CHECK(!warmup);
	CHECK(capacity == 1610612736ULL);
	CHECK(*out == '\0' && *err == '\0');
	free(out);
	free(err);

	{
		const char *a[] = { "test", "-n7", "--output=", "--warmup", "-vn", "-3", NULL };
		CHECK(parse(a, &out, &err) == 0);
		CHECK(top == -3);           /* -vn -3: -v, then -n takes the next argument */
		CHECK(verbose && warmup);
		CHECK_STR(output, "");
		free(out);
		free(err);
	}
	{
		const char *a[] = { "test", "--top=-4", "-ofile", NULL };
		CHECK(parse(a, &out, &err) == 0);
		CHECK(top == -4);
		CHECK_STR(output, "file");
		free(out);
		free(err);
	}
}

static void test_positional(void)
{
	const char *argv[] = { "test", "a.stb", "--top", "5", "b.stb", "-", "--", "-c", "--top", NULL };
	char *out, *err;
	int n = parse(argv, &out, &err);

	CHECK(n == 5);
	if (n == 5) {
		CHECK_STR(argv[0], "a.stb");
		CHECK_STR(argv[1], "b.stb");
		CHECK_STR(argv[2], "-");
		CHECK_STR(argv[3], "-c");
		CHECK_STR(argv[4], "--top");
		CHECK(argv[5] == NULL);
	}
	CHECK(top == 5);
	free(out);
	free(err);

	{
		const char *a[] = { "test", NULL };
		CHECK(parse(a, &out, &err) == 0);
		free(out);
		free(err);
	}
}

static void test_errors(void)
{
	const char *a1[] = { "test", "x", "--foo", NULL };
	const char *a2[] = { "test", "-x", NULL };
	const char *a3[] = { "test", "--top", NULL };
	const char *a4[] = { "test", "--top", "12x", NULL };
	const char *a5[] = { "test", "--top=99999999999", NULL };
	const char *a6[] = { "test", "--count", "-1", NULL };
	const char *a7[] = { "test", "--ratio", "nan", NULL };
	const char *a8[] = { "test", "--capacity", "24XB", NULL };
	const char *a9[] = { "test", "--warmup=1", NULL };
	const char *a10[] = { "test", "-o", NULL };
	const char *a11[] = { "test", "--no-top", "3", NULL };
	const char *a12[] = { "test", "--top", "", NULL };

	expect_error(a1, "error: unknown option '--foo'");
	expect_error(a2, "error: unknown option '-x'");
	expect_error(a3, "error: option '--top' requires a value");
	expect_error(a4, "error: option '--top' expects an integer, not '12x'");
	expect_error(a5, "error: option '--top' takes -2147483648 to 2147483647: '99999999999' is too large");
	expect_error(a6, "error: option '--count' expects a non-negative integer, not '-1'");
	expect_error(a7, "error: option '--ratio' expects a number, not 'nan'");
	expect_error(a8, "error: option '--capacity' expects a positive size such as 4096, 512MiB, 1.5GiB or 80GB, not '24XB'");
	expect_error(a9, "error: option '--warmup' takes no value");
	expect_error(a10, "error: option '-o' requires a value");
	expect_error(a11, "error: unknown option '--no-top'");
	expect_error(a12, "error: option '--top' expects an integer, not ''");
}

/* git's "Did you mean": a near long name, or the one it begins; none when two are as near. */
static void test_did_you_mean(void)
{
	const char *a1[] = { "test", "--tpo", "3", NULL };
	const char *a2[] = { "test", "--outptu", "x", NULL };
	const char *a3[] = { "test", "--verbos", NULL };
	const char *a4[] = { "test", "--capa", "1", NULL };
	const char *a5[] = { "test", "--zzz", NULL };
	const char *a6[] = { "test", "--hlep", NULL };
	static const char *const modes[] = { "model", "mode", "modes", NULL };

	expect_error(a1, "error: unknown option '--tpo'. Did you mean '--top'?");
	expect_error(a2, "error: unknown option '--outptu'. Did you mean '--output'?");
	expect_error(a3, "error: unknown option '--verbos'. Did you mean '--verbose'?");
	expect_error(a4, "error: unknown option '--capa'. Did you mean '--capacity'?");
	expect_error(a5, "error: unknown option '--zzz'");
	expect_error(a6, "error: unknown option '--hlep'. Did you mean '--help'?");

	CHECK(edit_distance("", "") == 0);
	CHECK(edit_distance("top", "") == 3);
	CHECK(edit_distance("", "top") == 3);
	CHECK(edit_distance("tpo", "top") == 1);
	CHECK(edit_distance("sumary", "summary") == 1);
	CHECK(edit_distance("kitten", "sitting") == 3);
	CHECK(edit_distance("ca", "abc") == 3);   /* a swap, then no edit of the swapped pair */
	CHECK_STR(did_you_mean("sumary", (const char *const[]){ "info", "summary", "steps", NULL }), "summary");
	CHECK_STR(did_you_mean("modle", modes), "model");      /* as near as mode, and as long */
	CHECK_STR(did_you_mean("mod", modes), "mode");
	CHECK_STR(did_you_mean("include", (const char *const[]){ "include-warmup", "all", NULL }), "include-warmup");
	CHECK(did_you_mean("incl", (const char *const[]){ "include-warmup", "include-all", NULL }) == NULL);
	CHECK(did_you_mean("xyz", modes) == NULL);
	CHECK(did_you_mean("", modes) == NULL);
}

/* A string takes one value; a number, a choice or a boolean may repeat, the last one counting. */
static void test_given_twice(void)
{
	const char *a1[] = { "test", "-o", "a", "--output", "b", NULL };
	const char *a2[] = { "test", "-o", "a", "x", "-ob", NULL };
	const char *a3[] = { "test", "--output=a", "--output=a", NULL };
	const char *ok[] = { "test", "--top", "3", "-n", "4", "--warmup", "--no-warmup", "-v", "-v", NULL };
	char *out, *err;

	expect_error(a1, "error: option '--output' given twice");
	expect_error(a2, "error: option '--output' given twice");
	expect_error(a3, "error: option '--output' given twice");
	CHECK(parse(ok, &out, &err) == 0, "%s", err);
	CHECK(top == 4 && !warmup && verbose);
	free(out);
	free(err);
}

/* One rule per kind of value: what may be 0, what may not, what may not be negative. */
static void test_kinds(void)
{
	const char *ok[] = { "test", "--step", "0", "--depth", "1", "--from", "0", "--capacity", "1", NULL };
	const char *b1[] = { "test", "--step", "-1", NULL };
	const char *b2[] = { "test", "--depth", "0", NULL };
	const char *b3[] = { "test", "--depth", "-1", NULL };
	const char *b4[] = { "test", "--from", "-3", NULL };
	const char *b5[] = { "test", "--capacity", "0", NULL };
	const char *b6[] = { "test", "--capacity", "0GiB", NULL };
	const char *b7[] = { "test", "--step", "two", NULL };
	const char *b8[] = { "test", "--depth", "99999999999", NULL };
	const char *b9[] = { "test", "--step", "2147483648", NULL };
	char *out, *err;

	CHECK(parse(ok, &out, &err) == 0, "%s", err);
	CHECK(step == 0 && depth == 1 && from == 0 && capacity == 1);
	free(out);
	free(err);
	expect_error(b1, "error: option '--step' expects a non-negative integer, not '-1'");
	expect_error(b2, "error: option '--depth' expects a positive integer, not '0'");
	expect_error(b3, "error: option '--depth' expects a positive integer, not '-1'");
	expect_error(b4, "error: option '--from' expects a non-negative number, not '-3'");
	expect_error(b5, "error: option '--capacity' expects a positive size such as 4096, 512MiB, 1.5GiB or 80GB, not '0'");
	expect_error(b6, "error: option '--capacity' expects a positive size such as 4096, 512MiB, 1.5GiB or 80GB, not '0GiB'");
	expect_error(b7, "error: option '--step' expects a non-negative integer, not 'two'");
	/* a whole number past the range is told so, with the range */
	expect_error(b8, "error: option '--depth' takes 1 to 2147483647: '99999999999' is too large");
	expect_error(b9, "error: option '--step' takes 0 to 2147483647: '2147483648' is too large");
	/* a refused value leaves the variable as it was */
	CHECK(step == -1 && depth == 0 && from == -1);
}

static int by;
static const char *const by_names[] = { "kernel", "op", "category", NULL };
static const char *const described[] = {
	"steptrace thing [<options>] FILE", "", "steptrace thing: what it does, in one line", NULL,
};
static const struct option choice_opts[] = {
	OPT_CHOICE(0, "by", &by, by_names, "group rows"),
	OPT_CHOICE(0, "fmt", &by, by_names, "group rows (default: whatever)"),
	OPT_END(),
};

/* The description comes first; a choice shows its default, the value before parsing. */
static void test_help_described(void)
{
	const char *a1[] = { "thing", "--by", "op", "--help", NULL };
	struct capture co;
	char *out;

	by = 2;
	capture_begin(&co, stdout);
	CHECK(parse_options(4, a1, choice_opts, described) == PARSE_OPT_HELP);
	out = capture_end(&co);
	{
		const char *head = "steptrace thing: what it does, in one line\n\n"
				   "usage: steptrace thing [<options>] FILE\n\n";
		CHECK(strncmp(out, head, strlen(head)) == 0, "%s", out);
	}
	CHECK(strstr(out, "group rows (default: category)\n") != NULL, "%s", out);
	CHECK(strstr(out, "group rows (default: whatever)\n") != NULL, "%s", out);
	free(out);
}

static void test_help(void)
{
	const char *a1[] = { "test", "file", "--help", "--foo", NULL };
	const char *a2[] = { "test", "-h", NULL };
	char *out, *err, *out2, *err2;

	CHECK(parse(a1, &out, &err) == PARSE_OPT_HELP);
	CHECK(*err == '\0');
	CHECK(strncmp(out, "usage: steptrace test [<options>] FILE...\n", 42) == 0);
	CHECK(strstr(out, "\nOutput\n") != NULL);
	CHECK(strstr(out, "    -o, --output <FILE>       write the result to FILE\n") != NULL);
	CHECK(strstr(out, "        --[no-]warmup         include warm-up steps\n") != NULL);
	CHECK(strstr(out, "    -n, --top <N>             show the N largest rows\n") != NULL);
	CHECK(strstr(out, "        --capacity <SIZE>     device memory to replay against\n") != NULL);
	CHECK(strstr(out, "    -h, --help                show this help\n") != NULL);
	CHECK(parse(a2, &out2, &err2) == PARSE_OPT_HELP);
	CHECK_STR(out2, out);
	free(out);
	free(err);
	free(out2);
	free(err2);
}

static void test_sizes(void)
{
	static const struct { const char *s; uint64_t bytes; } ok[] = {
		{ "4096", 4096 }, { "0", 0 }, { "24GiB", 24ULL << 30 }, { "80GB", 80000000000ULL },
		{ "512MiB", 512ULL << 20 }, { "1.5GiB", 3ULL << 29 }, { "2KiB", 2048 },
		{ "3KB", 3000 }, { "7MB", 7000000 }, { "1TiB", 1ULL << 40 }, { "2TB", 2000000000000ULL },
		{ "100B", 100 }, { "24gib", 24ULL << 30 }, { "0.5KiB", 512 },
		{ "18446744073709551615", UINT64_MAX },
	};
	static const char *const bad[] = {
		"", "GiB", "1.5", "-1GiB", "24 GiB", "1..5GiB", "99999999999TiB", "24XB", "0x10",
		"1e3", "18446744073709551616", ".", "12GiBs",
	};
	FILE *devnull = fopen("/dev/null", "w");
	size_t i;

	for (i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		uint64_t b = 1;
		int rc = parse_size(ok[i].s, &b);

		CHECK(rc == 0 && b == ok[i].bytes);
		if (rc != 0 || b != ok[i].bytes)
			fprintf(stderr, "  size '%s' -> %d %llu\n", ok[i].s, rc, (unsigned long long)b);
	}
	error_set_stream(devnull);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		uint64_t b;
		int rc = parse_size(bad[i], &b);

		CHECK(rc == -1);
		if (rc != -1)
			fprintf(stderr, "  size '%s' accepted as %llu\n", bad[i], (unsigned long long)b);
	}
	error_set_stream(NULL);
	fclose(devnull);
}

static void test_split_list(void)
{
	const char *items[3];
	char *storage;
	FILE *devnull = fopen("/dev/null", "w");

	CHECK(split_list("small,medium, large ", items, 3, &storage) == 3);
	CHECK_STR(items[0], "small");
	CHECK_STR(items[1], "medium");
	CHECK_STR(items[2], "large");
	free(storage);
	CHECK(split_list("fp32", items, 3, &storage) == 1);
	CHECK_STR(items[0], "fp32");
	free(storage);
	error_set_stream(devnull);
	CHECK(split_list("a,,b", items, 3, &storage) == -1 && storage == NULL);
	CHECK(split_list("", items, 3, &storage) == -1 && storage == NULL);
	CHECK(split_list("a,b,c,d", items, 3, &storage) == -1 && storage == NULL);
	CHECK(split_list("a,", items, 3, &storage) == -1 && storage == NULL);
	error_set_stream(NULL);
	fclose(devnull);
}

int main(void)
{
	test_values();
	test_positional();
	test_errors();
	test_did_you_mean();
	test_given_twice();
	test_kinds();
	test_help();
	test_help_described();
	test_sizes();
	test_split_list();
	return check_done("test_cli_options");
}
