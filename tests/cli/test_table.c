/* test_table.c: each output format's exact text for a small known report. */
#include "tests/lib/check.h"

#include <jansson.h>

#include "lib/error.h"
#include "lib/table.h"

/* A kernel-summary-like table: a float, an int and a string column, one empty cell. */
static struct report *sample(bool second_table, bool note)
{
	struct report *r = report_new();
	struct table *t = report_add_table(r, "kernels", "Kernel summary");

	table_add_column(t, "Time (%)", COL_FLOAT, 1);
	table_add_column(t, "Total Time (ns)", COL_INT, 0);
	table_add_column(t, "Name", COL_STR, 0);
	table_row(t);
	table_float(t, 62.54);
	table_int(t, 1234567);
	table_str(t, "gemm, \"big\"");
	table_row(t);
	table_float(t, 37.46);
	table_int(t, 12);
	table_str(t, "softmax|x");
	table_row(t);
	table_empty(t);
	table_int(t, -5000);
	table_empty(t);
	CHECK(table_rows(t) == 3);
	if (second_table) {
		t = report_add_table(r, "steps", "Steps");
		table_add_column(t, "Step", COL_INT, 0);
		table_add_column(t, "Wall (ms)", COL_FLOAT, 3);
		table_row(t);
		table_int(t, 0);
		table_float(t, 1.5);
	}
	if (note)
		report_note(r, "%d warm-up steps left out", 2);
	return r;
}

static char *render(const struct report *r, enum out_format f)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	CHECK(report_print(r, f, out) == 0);
	fclose(out);
	return buf;
}

static void test_text(void)
{
	struct report *r = sample(true, true);
	char *s = render(r, OUT_TABLE);

	CHECK_STR(s,
		"Kernel summary\n"
		"\n"
		"Time (%)  Total Time (ns)  Name\n"
		"--------  ---------------  -----------\n"
		"    62.5        1,234,567  gemm, \"big\"\n"
		"    37.5               12  softmax|x\n"
		"                   -5,000\n"
		"\n"
		"Steps\n"
		"\n"
		"Step  Wall (ms)\n"
		"----  ---------\n"
		"   0      1.500\n"
		"\n"
		"2 warm-up steps left out\n");
	free(s);
	report_free(r);
}

static void test_csv(void)
{
	struct report *r = sample(false, false);
	char *s = render(r, OUT_CSV), *err;
	struct capture c;

	CHECK_STR(s,
		"Time (%),Total Time (ns),Name\n"
		"62.5,1234567,\"gemm, \"\"big\"\"\"\n"
		"37.5,12,softmax|x\n"
		",-5000,\n");
	free(s);
	report_free(r);

	/* several tables (bench's sweeps): each under its title; the notes go to stderr, not into the CSV */
	r = sample(true, true);
	capture_begin(&c, stderr);
	s = render(r, OUT_CSV);
	err = capture_end(&c);
	CHECK(strncmp(s, "# Kernel summary\nTime (%),", 26) == 0);
	CHECK_STR(strstr(s, ",-5000,\n"), ",-5000,\n\n# Steps\nStep,Wall (ms)\n0,1.500\n");
	CHECK_STR(err, "2 warm-up steps left out\n");
	free(err);
	free(s);

	/* one table kept (--section): a plain CSV file, nothing but the header and the rows */
	CHECK_STR(report_table_name(r, 0), "kernels");
	CHECK_STR(report_table_name(r, 1), "steps");
	CHECK(report_table_name(r, 2) == NULL);
	CHECK(report_keep_table(r, "steps") == 0);
	CHECK(report_table_name(r, 1) == NULL);
	capture_begin(&c, stderr);
	s = render(r, OUT_CSV);
	err = capture_end(&c);
	CHECK_STR(s, "Step,Wall (ms)\n0,1.500\n");
	CHECK_STR(err, "2 warm-up steps left out\n");
	free(err);
	free(s);
	capture_begin(&c, stderr);
	CHECK(report_keep_table(r, "kernels") == -1);
	err = capture_end(&c);
	CHECK_STR(err, "error: option '--section' expects one of this report's tables (steps), not 'kernels'\n");
	free(err);
	report_free(r);
}

/* An optional table without rows: out of table, csv and md, [] in JSON; with rows, everywhere. */
static void test_optional(void)
{
	struct report *r = report_new();
	struct table *t = report_add_table(r, "main", "Main"), *o = report_add_table(r, "extra", "Extra");
	char *s;

	table_add_column(t, "A", COL_INT, 0);
	table_row(t);
	table_int(t, 1);
	table_optional(o);
	table_add_column(o, "B", COL_INT, 0);
	s = render(r, OUT_TABLE);
	CHECK_STR(s, "Main\n\nA\n-\n1\n");
	free(s);
	s = render(r, OUT_CSV);
	CHECK_STR(s, "A\n1\n");
	free(s);
	s = render(r, OUT_MD);
	CHECK(strstr(s, "Extra") == NULL, "%s", s);
	free(s);
	s = render(r, OUT_JSON);
	CHECK_STR(s, "{\n  \"main\": [\n    {\n      \"A\": 1\n    }\n  ],\n  \"extra\": [],\n  \"notes\": []\n}\n");
	free(s);
	table_row(o);
	table_int(o, 2);
	s = render(r, OUT_TABLE);
	CHECK_STR(s, "Main\n\nA\n-\n1\n\nExtra\n\nB\n-\n2\n");
	free(s);
	report_free(r);

	/* alone (--section extra), an optional table prints even without rows: an empty CSV table */
	r = report_new();
	report_add_table(r, "main", "Main");
	o = report_add_table(r, "extra", "Extra");
	table_optional(o);
	table_add_column(o, "B", COL_INT, 0);
	CHECK(report_keep_table(r, "extra") == 0);
	s = render(r, OUT_CSV);
	CHECK_STR(s, "B\n");
	free(s);
	report_free(r);
}

static void test_md(void)
{
	struct report *r = sample(false, true);
	char *s = render(r, OUT_MD);

	CHECK_STR(s,
		"### Kernel summary\n"
		"\n"
		"| Time (%) | Total Time (ns) | Name |\n"
		"| ---: | ---: | --- |\n"
		"| 62.5 | 1234567 | gemm, \"big\" |\n"
		"| 37.5 | 12 | softmax\\|x |\n"
		"|  | -5000 |  |\n"
		"\n"
		"- 2 warm-up steps left out\n");
	free(s);
	report_free(r);
}

static void test_json(void)
{
	struct report *r = sample(true, true);
	char *s = render(r, OUT_JSON);
	json_error_t e;
	json_t *doc = json_loads(s, 0, &e), *rows, *row;

	CHECK(doc && json_is_object(doc));
	CHECK(json_object_size(doc) == 3);
	rows = json_object_get(doc, "kernels");
	CHECK(json_is_array(rows) && json_array_size(rows) == 3);
	row = json_array_get(rows, 0);
	CHECK(json_is_real(json_object_get(row, "Time (%)")));
	CHECK(json_real_value(json_object_get(row, "Time (%)")) == 62.54);
	CHECK(json_is_integer(json_object_get(row, "Total Time (ns)")));
	CHECK(json_integer_value(json_object_get(row, "Total Time (ns)")) == 1234567);
	CHECK_STR(json_string_value(json_object_get(row, "Name")), "gemm, \"big\"");
	row = json_array_get(rows, 2);
	CHECK(json_is_null(json_object_get(row, "Time (%)")));
	CHECK(json_is_null(json_object_get(row, "Name")));
	CHECK(json_integer_value(json_object_get(row, "Total Time (ns)")) == -5000);
	rows = json_object_get(doc, "steps");
	CHECK(json_array_size(rows) == 1);
	CHECK(json_real_value(json_object_get(json_array_get(rows, 0), "Wall (ms)")) == 1.5);
	rows = json_object_get(doc, "notes");
	CHECK(json_is_array(rows) && json_array_size(rows) == 1);
	CHECK_STR(json_string_value(json_array_get(rows, 0)), "2 warm-up steps left out");
	/* Tables in the order they were added. */
	CHECK(strstr(s, "\"kernels\"") < strstr(s, "\"steps\""));
	json_decref(doc);
	free(s);
	report_free(r);

	/* No notes: "notes" is [] all the same; NaN is null; an empty table is []. */
	r = report_new();
	{
		struct table *t = report_add_table(r, "x", NULL);

		table_add_column(t, "v", COL_FLOAT, 2);
		table_row(t);
		table_float(t, 0.0 / 0.0);
		report_add_table(r, "empty", NULL);
	}
	s = render(r, OUT_JSON);
	doc = json_loads(s, 0, &e);
	CHECK(doc && json_is_array(json_object_get(doc, "notes")) && json_array_size(json_object_get(doc, "notes")) == 0);
	CHECK(json_is_null(json_object_get(json_array_get(json_object_get(doc, "x"), 0), "v")));
	CHECK(json_is_array(json_object_get(doc, "empty")) &&
	      json_array_size(json_object_get(doc, "empty")) == 0);
	json_decref(doc);
	free(s);
	report_free(r);
}

static void test_details(void)
{
	struct report *r = report_new();
	struct table *t = report_add_table(r, "t", NULL);
	int f;
	char *s;
	FILE *devnull = fopen("/dev/null", "w");

	/* Rounding to -0.0 prints 0.0; UTF-8 counts as one column; short rows are padded. */
	table_add_column(t, "d", COL_FLOAT, 1);
	table_add_column(t, "s", COL_STR, 0);
	table_add_column(t, "n", COL_INT, 0);
	table_row(t);
	table_float(t, -0.01);
	table_str(t, "±");
	table_int(t, 1000);
	table_row(t);
	table_float(t, -1234.56);
	s = render(r, OUT_TABLE);
	CHECK_STR(s,
		"       d  s      n\n"
		"--------  -  -----\n"
		"     0.0  ±  1,000\n"
		"-1,234.6\n");
	free(s);
	report_free(r);

	CHECK(parse_choice("csv", out_format_names, "--format", &f) == 0 && f == OUT_CSV);
	CHECK(parse_choice("json", out_format_names, "--format", &f) == 0 && f == OUT_JSON);
	CHECK(parse_choice("md", out_format_names, "--format", &f) == 0 && f == OUT_MD);
	CHECK(parse_choice("table", out_format_names, "--format", &f) == 0 && f == OUT_TABLE);
	error_set_stream(devnull);
	CHECK(parse_choice("xml", out_format_names, "--format", &f) == -1);
	error_set_stream(NULL);
	fclose(devnull);
}

/* Counts print whole where they are whole; a cut column stays whole outside the text format. */
static void test_counts_and_widths(void)
{
	struct report *r = report_new();
	struct table *t = report_add_table(r, "t", NULL);
	char *s;

	table_add_column(t, "Count", COL_FLOAT, 2);
	table_add_column(t, "Name", COL_STR, 0);
	table_column_max_width(t, 10);
	table_row(t);
	table_count(t, 12);
	table_str(t, "short");
	table_row(t);
	table_count(t, 1.5);
	table_str(t, "a_very_long_kernel_name<float>(float*)");
	s = render(r, OUT_TABLE);
	CHECK_STR(s,
		"Count  Name\n"
		"-----  ----------\n"
		"   12  short\n"
		" 1.50  a_very_...\n");
	free(s);
	s = render(r, OUT_CSV);
	CHECK_STR(s, "Count,Name\n12,short\n1.50,a_very_long_kernel_name<float>(float*)\n");
	free(s);
	s = render(r, OUT_JSON);
	CHECK(strstr(s, "\"Count\": 12,") && strstr(s, "\"Count\": 1.5,"), "%s", s);
	CHECK(strstr(s, "a_very_long_kernel_name<float>(float*)") != NULL);
	free(s);
	report_free(r);
}

/*
 * An elastic column is cut in the middle, keeping both ends, so the text
 * table fits TABLE_TEXT_WIDTH; one that fits stays whole; csv keeps it whole.
 */
static void test_elastic(void)
{
	struct report *r = report_new();
	struct table *t = report_add_table(r, "t", NULL);
	char path[200], *s, *line, *save;
	size_t widest = 0;

	table_add_column(t, "Path", COL_STR, 0);
	table_column_elastic(t);
	table_add_column(t, "Wide", COL_STR, 0);
	for (size_t i = 0; i < 120; i++)
		path[i] = (char)('a' + i % 26);
	memcpy(path, "root/", 5);
	memcpy(path + 114, "/leaf", 6);
	table_row(t);
	table_str(t, path);
	table_str(t, "x234567890123456789012345678901234567890123456789012345678901234567890");
	table_row(t);
	table_str(t, "short/path");
	table_str(t, "y");
	s = render(r, OUT_TABLE);
	for (line = strtok_r(s, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		if (strlen(line) > widest)
			widest = strlen(line);
	CHECK(widest == TABLE_TEXT_WIDTH, "widest line %zu", widest);
	free(s);
	s = render(r, OUT_TABLE);
	CHECK(strstr(s, "root/") && strstr(s, "...") && strstr(s, "/leaf  x2345") && strstr(s, "short/path"), "%s", s);
	free(s);
	s = render(r, OUT_CSV);
	CHECK(strstr(s, path) != NULL, "%s", s);
	free(s);
	report_free(r);
	/* A column marked hide_empty without a value is left out of the text format only. */
	r = report_new();
	t = report_add_table(r, "t", NULL);
	table_add_column(t, "Dtypes", COL_STR, 0);
	table_column_hide_empty(t);
	table_add_column(t, "Name", COL_STR, 0);
	table_row(t);
	table_empty(t);
	table_str(t, "mm");
	s = render(r, OUT_TABLE);
	CHECK_STR(s, "Name\n----\nmm\n");
	free(s);
	s = render(r, OUT_CSV);
	CHECK_STR(s, "Dtypes,Name\n,mm\n");
	free(s);
	report_free(r);
	/*
	 * A droppable column goes when that makes the table fit, and a note
	 * says so; when it cannot make it fit (a whole name wider than a
	 * line) every column stays.
	 */
	for (int wide = 0; wide < 2; wide++) {
		r = report_new();
		t = report_add_table(r, "t", NULL);
		table_add_column(t, "Spare", COL_STR, 0);
		table_column_droppable(t, 1);
		table_add_column(t, "Keep", COL_STR, 0);
		table_row(t);
		table_str(t, "s");
		path[wide ? 170 : 155] = '\0';
		memset(path, 'k', wide ? 170 : 155);
		table_str(t, path);
		s = render(r, OUT_TABLE);
		CHECK((strncmp(s, "Spare", 5) != 0) == !wide, "wide %d: %s", wide, s);
		CHECK((strstr(s, "left out Spare") != NULL) == !wide, "wide %d: %s", wide, s);
		free(s);
		s = render(r, OUT_CSV);
		CHECK(strstr(s, "Spare,Keep") != NULL, "%s", s);
		free(s);
		report_free(r);
	}
	memcpy(path, "root/", 5);
	memset(path + 5, 'm', 109);
	memcpy(path + 114, "/leaf", 6);
	/* A table that fits is left alone. */
	r = report_new();
	t = report_add_table(r, "t", NULL);
	table_add_column(t, "Path", COL_STR, 0);
	table_column_elastic(t);
	table_row(t);
	table_str(t, path);
	s = render(r, OUT_TABLE);
	CHECK(strstr(s, path) != NULL, "%s", s);
	free(s);
	report_free(r);
}

/* The widest line of a text rendering, in characters (UTF-8 code points). */
static size_t widest_line(const char *s)
{
	size_t widest = 0, w = 0;

	for (; *s; s++) {
		if (*s == '\n') {
			widest = w > widest ? w : widest;
			w = 0;
		} else if (((unsigned char)*s & 0xC0) != 0x80) {
			w++;
		}
	}
	return w > widest ? w : widest;
}

/*
 * A wrapped column breaks its cells between words (after a space or a
 * comma, never inside "1,048") onto more lines, the other columns blank,
 * so the table fits; csv keeps each cell on one line. A long title and the
 * closing note wrap too, and the ranks' stacked table keeps its columns'
 * ways to fit.
 */
static void test_wrap(void)
{
	struct report *r = report_new(), *ranks[2], *stacked = report_new();
	const char *labels[] = { "0", "1" };
	char formula[600], title[300], *s;
	struct table *t;

	formula[0] = '\0';
	for (int i = 0; i < 30; i++)
		strcat(formula, i == 15 ? "1,048.23 × " : "w1 × d_ff + ");
	strcat(formula, "f32,f32,bf16");
	memset(title, 'T', sizeof(title));
	for (size_t i = 10; i < sizeof(title); i += 11)
		title[i] = ' ';
	title[sizeof(title) - 1] = '\0';
	t = report_add_table(r, "t", title);
	table_add_column(t, "Quantity", COL_STR, 0);
	table_add_column(t, "Formula", COL_STR, 0);
	table_column_wrap(t);
	table_add_column(t, "Value", COL_INT, 0);
	table_row(t);
	table_str(t, "first");
	table_str(t, formula);
	table_int(t, 7);
	table_row(t);
	table_str(t, "second");
	table_str(t, "short");
	table_int(t, 8);
	s = render(r, OUT_TABLE);
	CHECK(widest_line(s) <= TABLE_TEXT_WIDTH, "widest line %zu:\n%s", widest_line(s), s);
	CHECK(strstr(s, "first     w1 × d_ff + ") != NULL, "%s", s);
	CHECK(strstr(s, "\n          w1 × d_ff") != NULL, "continuation lines blank the other columns: %s", s);
	CHECK(strstr(s, "1,048.23") != NULL, "a number is cut at its comma: %s", s);
	CHECK(strstr(s, "second    short") != NULL, "%s", s);
	free(s);
	s = render(r, OUT_CSV);
	CHECK(strstr(s, formula) != NULL, "%s", s);
	free(s);
	report_free(r);

	/* report_stack keeps an elastic column elastic: the ranks' table fits too */
	for (int k = 0; k < 2; k++) {
		char path[200];

		memset(path, 'p', sizeof(path) - 1);
		path[sizeof(path) - 1] = '\0';
		ranks[k] = report_new();
		t = report_add_table(ranks[k], "t", NULL);
		table_add_column(t, "Path", COL_STR, 0);
		table_column_elastic(t);
		table_row(t);
		table_str(t, path);
	}
	report_stack(stacked, ranks, labels, 2, "Rank");
	s = render(stacked, OUT_TABLE);
	CHECK(widest_line(s) <= TABLE_TEXT_WIDTH, "stacked: widest line %zu:\n%s", widest_line(s), s);
	CHECK(strstr(s, "to fit 160 columns") != NULL, "%s", s);
	free(s);
	for (int k = 0; k < 2; k++)
		report_free(ranks[k]);
	report_free(stacked);
}

/* A streamed table prints as report_print prints it alone (csv, md), valid JSON with one row a line. */
static void test_stream(void)
{
	struct report *r = report_new(), *whole = report_new();
	struct table *t = report_add_table(r, "events", "Events"), *w = report_add_table(whole, "events", "Events");
	char *buf = NULL, *s;
	size_t len = 0;

	for (int f = OUT_CSV; f <= OUT_MD; f++) {
		FILE *out = open_memstream(&buf, &len);

		for (int k = 0; k < 2; k++) {
			struct table *x = k ? w : t;

			if (f == OUT_CSV) {
				table_add_column(x, "Time (ms)", COL_FLOAT, 3);
				table_add_column(x, "Name", COL_STR, 0);
			}
		}
		for (int i = 0; i < 3; i++) {
			table_row(t);
			table_float(t, i * 0.5);
			table_str(t, i == 1 ? "a, \"quoted\" | name" : "n");
			table_stream_row(t, (enum out_format)f, out);
			if (f == OUT_CSV) {
				table_row(w);
				table_float(w, i * 0.5);
				table_str(w, i == 1 ? "a, \"quoted\" | name" : "n");
			}
		}
		table_stream_end(t, (enum out_format)f, out, NULL);
		fclose(out);
		CHECK(table_rows(t) == 0, "streamed rows are forgotten");
		if (f == OUT_JSON) {
			CHECK_STR(buf, "{\n  \"events\": [\n"
				  "    {\"Time (ms)\": 0.0, \"Name\": \"n\"},\n"
				  "    {\"Time (ms)\": 0.5, \"Name\": \"a, \\\"quoted\\\" | name\"},\n"
				  "    {\"Time (ms)\": 1.0, \"Name\": \"n\"}\n  ],\n  \"notes\": []\n}\n");
		} else {
			s = render(whole, (enum out_format)f);
			CHECK_STR(buf, s);
			free(s);
		}
		free(buf);
		buf = NULL;
		/* the next format starts a new stream */
		report_free(r);
		r = report_new();
		t = report_add_table(r, "events", "Events");
		table_add_column(t, "Time (ms)", COL_FLOAT, 3);
		table_add_column(t, "Name", COL_STR, 0);
	}
	report_free(r);
	report_free(whole);

	/* nothing streamed, one note: valid JSON with its note; csv's note on stderr */
	r = report_new();
	t = report_add_table(r, "events", "Events");
	table_add_column(t, "Time (ms)", COL_FLOAT, 3);
	buf = NULL;
	{
		FILE *out = open_memstream(&buf, &len);

		table_stream_end(t, OUT_JSON, out, "no events listed");
		fclose(out);
	}
	CHECK_STR(buf, "{\n  \"events\": [],\n  \"notes\": [\n    \"no events listed\"\n  ]\n}\n");
	free(buf);
	report_free(r);
	r = report_new();
	t = report_add_table(r, "events", "Events");
	table_add_column(t, "Time (ms)", COL_FLOAT, 3);
	buf = NULL;
	{
		FILE *out = open_memstream(&buf, &len);

		struct capture c;
		char *err;

		capture_begin(&c, stderr);
		table_stream_end(t, OUT_CSV, out, "no events listed");
		err = capture_end(&c);
		fclose(out);
		CHECK_STR(err, "no events listed\n");
		free(err);
	}
	CHECK_STR(buf, "Time (ms)\n");
	free(buf);
	report_free(r);
}

int main(void)
{
	test_counts_and_widths();
	test_elastic();
	test_wrap();
	test_stream();
	test_text();
	test_csv();
	test_md();
	test_json();
	test_optional();
	test_details();
	return check_done("test_cli_table");
}
