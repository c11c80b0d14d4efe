/*
 * test_report.c: the pieces of the HTML report that are not the page's
 * look. The timeline's JSON (report/timeline.c) on a replay built by hand:
 * which steps it keeps under a budget, times from the first step kept, op
 * paths, the memory counter's value before the window, strings that cannot
 * end the <script> element, a lane group per rank of a run. And render/html.c: JSON strings, sortable tables with
 * exact sort values, one decimal in every row of an ns column, long names
 * ellipsized with a title, hidden columns and folded rows, a command line's
 * words.
 */
#include <jansson.h>

#include "render/html.h"
#include "report/timeline.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

#define STREAM 7
#define EVIL "op</" "script><b>\"x\"\\"   /* a kernel name that would end the element */

/*
 * Three steps of 1000 ns from t = 1000 (0 is a warm-up), each: a "step"
 * range with "forward" inside, and two kernels, one named EVIL; 100 bytes
 * allocated before the steps, 50 inside step 1 and freed in it.
 */
static int build(struct replay *rp)
{
	struct builder b;
	uint32_t op;

	builder_init(&b);
	builder_open_replay(&b, rp);
	b.thread = 11;
	op = builder_op(&b, &(struct builder_op){ .path = "step/forward/layer.0/ffn/w1", .kind = "ffn/w1",
			.phase = "forward" });
	builder_alloc(&b, 500, 0x1000, 100, ST_MEM_PARAMETER, 0);
	for (uint32_t s = 0; s < 3; s++) {
		uint64_t t = 1000 + 1000 * s;

		builder_push(&b, "step", t);
		builder_push(&b, "forward", t + 10);
		builder_launch(&b, "gemm_kernel", STREAM, op, t + 20, t + 25, t + 100, t + 300);
		builder_launch(&b, EVIL, STREAM, op, t + 30, t + 35, t + 300, t + 400);
		if (s == 1) {
			builder_alloc(&b, t + 40, 0x2000, 50, ST_MEM_ACTIVATION, op);
			builder_free(&b, t + 600, 0x2000, 0, 0, 0);
		}
		builder_pop(&b, t + 500);
		builder_pop(&b, t + 900);
		builder_step(&b, s, s == 0, t, t + 900);
	}
	return builder_close(&b, "ok");
}

/*
 * The timeline's document for ranks[0..n) (n 0: rp alone, through
 * report_timeline_write) under `budget`, parsed; NULL on failure.
 */
static json_t *timeline_of(const struct replay *rp, const struct mem_timeline *tl,
			   const struct report_timeline_rank *ranks, size_t n, size_t budget)
{
	char *text = NULL, *body, *end;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	json_error_t err;
	json_t *doc = NULL;

	if (!out || (n ? report_timeline_write_ranks(out, ranks, n, "tl", budget)
		       : report_timeline_write(out, rp, tl, "tl", budget)) < 0 || fclose(out) != 0) {
		CHECK(0, "report_timeline_write failed");
		free(text);
		return NULL;
	}
	body = strchr(text, '>');
	end = strstr(text, "</script>");
	CHECK(body && end && strstr(end + 1, "</script") == NULL, "one </script>, at the end: %s", text);
	CHECK(strstr(text, "<b>") == NULL && strstr(text, "<\\/") == NULL, "'<' is written as \\u003c");
	if (body && end)
		doc = json_loadb(body + 1, (size_t)(end - body - 1), 0, &err);
	CHECK(doc != NULL, "not JSON: %s", doc ? "" : err.text);
	free(text);
	return doc;
}

static json_t *timeline(const struct replay *rp, const struct mem_timeline *tl, size_t budget)
{
	return timeline_of(rp, tl, NULL, 0, budget);
}

static const char *string_at(const json_t *doc, const json_t *index)
{
	return json_string_value(json_array_get(json_object_get(doc, "strings"), (size_t)json_integer_value(index)));
}

static size_t slices(const json_t *doc)
{
	const json_t *s = json_object_get(doc, "streams"), *t = json_object_get(doc, "threads"), *v;
	size_t n = 0, i;

	json_array_foreach(s, i, v)
		n += json_array_size(json_object_get(v, "s")) / 5;
	json_array_foreach(t, i, v)
		n += json_array_size(json_object_get(v, "r")) / 6;
	return n;
}

static void test_whole(const struct replay *rp, const struct mem_timeline *tl)
{
	json_t *doc = timeline(rp, tl, 1000), *steps, *s, *r, *mem;

	if (!doc)
		return;
	steps = json_object_get(doc, "steps");
	CHECK_U64(json_array_size(steps), 3);
	CHECK_U64(json_integer_value(json_object_get(doc, "first")), 1);          /* the first measured step */
	CHECK_U64(json_integer_value(json_array_get(json_array_get(steps, 0), 2)), 0);   /* times from step 0 */
	CHECK_U64(json_integer_value(json_array_get(json_array_get(steps, 1), 2)), 1000);
	CHECK_U64(json_integer_value(json_object_get(doc, "t0")), 500);          /* after the first event */
	CHECK_U64(slices(doc), 12);                                              /* 6 kernels, 6 ranges */
	s = json_object_get(json_array_get(json_object_get(doc, "streams"), 0), "s");
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(doc, "streams"), 0), "name")),
		  "stream 7");
	CHECK_U64(json_integer_value(json_array_get(s, 0)), 100);                 /* start */
	CHECK_U64(json_integer_value(json_array_get(s, 1)), 200);                 /* duration */
	CHECK_STR(string_at(doc, json_array_get(s, 2)), "gemm_kernel");
	CHECK_STR(string_at(doc, json_array_get(s, 7)), EVIL);                    /* the name survives */
	CHECK_STR(string_at(doc, json_array_get(s, 4)), "step/forward/layer.0/ffn/w1");   /* op path */
	CHECK_U64(json_integer_value(json_array_get(s, 3)), 0);                   /* its category: GEMM, by its op */
	r = json_object_get(json_array_get(json_object_get(doc, "threads"), 0), "r");
	CHECK_U64(json_integer_value(json_array_get(r, 1)), 900);                 /* step 0's "step" range */
	CHECK_U64(json_integer_value(json_array_get(r, 2)), 0);                   /* depth */
	CHECK_STR(string_at(doc, json_array_get(r, 3)), "step");
	CHECK_STR(string_at(doc, json_array_get(r, 9)), "forward");
	CHECK_STR(string_at(doc, json_array_get(r, 10)), "step/forward");
	CHECK_U64(json_integer_value(json_array_get(r, 8)), 1);                   /* forward's depth */
	CHECK_U64(json_integer_value(json_array_get(r, 11)), 300);                /* forward's GPU busy */
	mem = json_object_get(json_array_get(json_object_get(doc, "mem"), 0), "p");
	CHECK_U64(json_integer_value(json_array_get(mem, 1)), 100);               /* live before step 0 */
	CHECK_U64(json_integer_value(json_array_get(mem, 2)), 1040);              /* the allocation in step 1 */
	CHECK_U64(json_integer_value(json_array_get(mem, 3)), 150);
	CHECK_STR(json_string_value(json_object_get(doc, "omitted")), "");
	json_decref(doc);
}

/* A budget of one step's slices keeps the first measured step alone. */
static void test_budget(const struct replay *rp, const struct mem_timeline *tl)
{
	json_t *doc = timeline(rp, tl, 5), *steps, *mem;
	const char *omitted;

	if (!doc)
		return;
	steps = json_object_get(doc, "steps");
	CHECK_U64(json_array_size(steps), 1);
	CHECK_U64(json_integer_value(json_array_get(json_array_get(steps, 0), 0)), 1);   /* step index 1 */
	CHECK_U64(json_integer_value(json_object_get(doc, "first")), 0);
	CHECK_U64(json_integer_value(json_array_get(json_array_get(steps, 0), 2)), 0);
	CHECK_U64(slices(doc), 4);
	mem = json_object_get(json_array_get(json_object_get(doc, "mem"), 0), "p");
	CHECK_U64(json_integer_value(json_array_get(mem, 1)), 100);               /* the setup's block */
	CHECK_U64(json_integer_value(json_array_get(mem, 2)), 40);
	omitted = json_string_value(json_object_get(doc, "omitted"));
	CHECK(omitted && strstr(omitted, "2 of 3 steps are left out"), "omitted: %s", omitted);
	json_decref(doc);

	/* less than the step: cut at the budget-th slice */
	doc = timeline(rp, tl, 3);
	if (!doc)
		return;
	CHECK_U64(slices(doc), 3);
	omitted = json_string_value(json_object_get(doc, "omitted"));
	CHECK(omitted && strstr(omitted, "Only the first 3 slices of the step"), "omitted: %s", omitted);
	json_decref(doc);
}

/*
 * Two ranks of one run (the same steps, rank 1 placed 250 ns later on the
 * run's time line): one lane group each, labelled by rank, on the run's
 * time line; a step spans both ranks'; the budget counts both.
 */
static void test_ranks(const struct replay *rp, const struct mem_timeline *tl)
{
	const struct report_timeline_rank ranks[2] = { { rp, tl, 0, 3 }, { rp, tl, 250, 5 } };
	json_t *doc = timeline_of(NULL, NULL, ranks, 2, 1000), *v, *s0, *s1;
	size_t i, streams[2] = { 0 }, threads[2] = { 0 };

	if (!doc)
		return;
	CHECK_U64(json_array_size(json_object_get(doc, "ranks")), 2);
	CHECK_U64(json_integer_value(json_array_get(json_object_get(doc, "ranks"), 0)), 3);
	CHECK_U64(json_integer_value(json_array_get(json_object_get(doc, "ranks"), 1)), 5);
	json_array_foreach(json_object_get(doc, "streams"), i, v)
		if (json_integer_value(json_object_get(v, "rank")) < 2)
			streams[json_integer_value(json_object_get(v, "rank"))]++;
	json_array_foreach(json_object_get(doc, "threads"), i, v)
		if (json_integer_value(json_object_get(v, "rank")) < 2)
			threads[json_integer_value(json_object_get(v, "rank"))]++;
	CHECK(streams[0] == 1 && streams[1] == 1, "streams of each rank: %zu, %zu", streams[0], streams[1]);
	CHECK(threads[0] == 1 && threads[1] == 1, "threads of each rank: %zu, %zu", threads[0], threads[1]);
	CHECK_U64(slices(doc), 24);
	s0 = json_object_get(json_array_get(json_object_get(doc, "streams"), 0), "s");
	s1 = json_object_get(json_array_get(json_object_get(doc, "streams"), 1), "s");
	CHECK_U64(json_integer_value(json_array_get(s0, 0)), 100);   /* from step 0's start, rank 0's */
	CHECK_U64(json_integer_value(json_array_get(s1, 0)), 350);   /* the same kernel, 250 ns later */
	v = json_array_get(json_object_get(doc, "steps"), 1);
	CHECK_U64(json_integer_value(json_array_get(v, 2)), 1000);   /* step 1: rank 0's start */
	CHECK_U64(json_integer_value(json_array_get(v, 3)), 2150);   /* to rank 1's end */
	CHECK_U64(json_array_size(json_object_get(doc, "mem")), 2);
	v = json_object_get(json_array_get(json_object_get(doc, "mem"), 1), "p");
	CHECK_U64(json_integer_value(json_array_get(v, 2)), 1290);   /* rank 1's allocation in step 1 */
	json_decref(doc);

	/* a budget of one step of one rank: the first measured step of both, cut */
	doc = timeline_of(NULL, NULL, ranks, 2, 5);
	if (!doc)
		return;
	CHECK_U64(json_array_size(json_object_get(doc, "steps")), 1);
	CHECK_U64(slices(doc), 5);
	json_decref(doc);
}

static char *render(const struct report *r, const struct html_tables *o)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	CHECK(out && html_report_tables(out, r, o) == 1);
	if (out)
		fclose(out);
	return text;
}

static void test_tables(void)
{
	static const char *const hide[] = { "Style", NULL };
	struct report *r = report_new();
	struct table *t = report_add_table(r, "kernels", NULL);
	char *html;

	table_add_column(t, "Total Time (ns)", COL_INT, 0);
	table_add_column(t, "Avg (ns)", COL_FLOAT, 1);
	table_add_column(t, "StdDev (ns)", COL_FLOAT, 1);
	table_add_column(t, "Share", COL_FLOAT, 3);
	table_add_column(t, "Style", COL_STR, 0);
	table_add_column(t, "Name", COL_STR, 0);
	for (int i = 0; i < 3; i++) {
		table_row(t);
		table_int(t, 1234567 - i);
		table_float(t, 0.125 + i);
		table_float(t, i ? 1761.5 : 38.5);
		table_float(t, 0.125 + i);
		table_str(t, "PushPop");
		table_str(t, i ? "short" : "a_kernel_name_longer_than_twenty_four<float>");
	}
	html = render(r, &(struct html_tables){ .name = "kernels", .id = "k", .hide = hide, .visible = 2 });
	CHECK(strstr(html, "<table class=\"data sortable\" id=\"k\" data-visible=\"2\">"), "%s", html);
	CHECK(strstr(html, "<th class=\"num\">Total Time (ns)</th>"), "%s", html);
	CHECK(strstr(html, "<td class=\"num\" data-v=\"1234567\">1,234,567</td>"), "%s", html);
	/* ns columns keep one decimal whatever the value (38.5, not 38.50); others about 3 digits */
	CHECK(strstr(html, "data-v=\"0.125\">0.1</td><td class=\"num\" data-v=\"38.5\">38.5</td>"), "%s", html);
	CHECK(strstr(html, "data-v=\"1761.5\">1,761.5</td><td class=\"num\" data-v=\"1.125\">1.12</td>"), "%s", html);
	CHECK(strstr(html, "data-v=\"0.125\">0.125</td><td class=\"name\""), "%s", html);
	CHECK(!strstr(html, "Style") && !strstr(html, "PushPop"), "a hidden column is written: %s", html);
	CHECK(strstr(html, "<td class=\"name\" title=\"a_kernel_name_longer_than_twenty_four&lt;float&gt;\">"),
	      "%s", html);
	CHECK(strstr(html, "<tr class=\"more\">"), "the third row is not folded: %s", html);
	CHECK(strstr(html, "Show all 3"), "%s", html);
	free(html);
	report_free(r);
}

static void test_json_string(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	html_json_string(out, "a\"b\\c\n</script>&\x01");
	fclose(out);
	CHECK_STR(text, "\"a\\\"b\\\\c\\u000a\\u003c/script\\u003e\\u0026\\u0001\"");
	free(text);
}

/* A command line: each word a span the page wraps between, blanks kept, markup escaped. */
static void test_words(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);

	html_words(out, " run  --warmup 1 -o <a&b>.stb\n");
	fclose(out);
	CHECK_STR(text, " <span>run</span>  <span>--warmup</span> <span>1</span> <span>-o</span> "
		  "<span>&lt;a&amp;b&gt;.stb</span>\n");
	free(text);
}

int main(void)
{
	struct replay rp;
	struct mem_timeline tl;

	if (build(&rp) < 0 || mem_timeline_build(&tl, &rp, MEM_VIEW_MODEL) < 0)
		return 1;
	test_whole(&rp, &tl);
	test_budget(&rp, &tl);
	test_ranks(&rp, &tl);
	test_tables();
	test_json_string();
	test_words();
	mem_timeline_release(&tl);
	replay_release(&rp);
	return check_done("test_report");
}
