/*
 * `bench contention`'s host side (model/contention_stats.c): the table from
 * every rank's samples (a row per computation, its slowest rank's), the
 * calibration from them (the products' time-weighted ratio, at least 1;
 * the slowest host's time per call), and its CSV read back by explain's
 * --contention reader (analyze/whatif.c) with the values it wrote.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check.h"
#include "analyze/whatif.h"
#include "lib/error.h"
#include "model/contention_stats.h"

/* Two ranks at 25 MiB of f32: rank 1 slower beside the all-reduces than rank 0. */
static void samples(struct contention_sample *s)
{
	memset(s, 0, 2 * sizeof(*s));
	for (int r = 0; r < 2; r++) {
		s[r].alone_us[0] = 120;
		s[r].alone_us[1] = 110;
		s[r].alone_us[2] = 1500;
		s[r].alone_us[3] = 200;
		s[r].ar_alone_us = 75;
		s[r].calls = 1234;
		for (int w = 0; w < CONTENTION_WORKS; w++) {
			s[r].ar_beside_us[w] = 90;
			s[r].covered[w] = 1;
		}
	}
	/* rank 0: 1.1x; rank 1: 1.5x, the slowest of every computation */
	for (int w = 0; w < CONTENTION_WORKS; w++) {
		s[0].beside_us[w] = s[0].alone_us[w] * 1.1;
		s[1].beside_us[w] = s[1].alone_us[w] * 1.5;
	}
	s[1].alone_us[2] = 1600;            /* rank 1's own time alone goes with its row */
	s[1].ar_beside_us[3] = 0;           /* no all-reduce during the residual add: an empty cell */
	s[1].covered[3] = 0.5;
	s[0].call_us = 14.0;
	s[1].call_us = 11.0;                /* the slowest host is rank 0's */
}

static char *print(struct report *r, enum out_format f)
{
	static char buf[16384];
	FILE *tmp = tmpfile();
	size_t n;

	CHECK(tmp && report_print(r, f, tmp) == 0);
	rewind(tmp);
	n = fread(buf, 1, sizeof(buf) - 1, tmp);
	buf[n] = 0;
	fclose(tmp);
	return buf;
}

static void test_table(void)
{
	struct contention_sample s[2];
	struct contention_result res = { 25ull << 20, ST_DT_F32, 2, 20, s };
	struct report *r = report_new();
	const char *csv;

	samples(s);
	contention_rows(contention_table(r), &res);
	csv = print(r, OUT_CSV);
	CHECK(strstr(csv, "size,bytes,dtype,ranks,computation,kind,rank,alone_us,beside_us,ratio,allreduce_us,"
			  "allreduce_beside_us,call_us,covered_pct\n") == csv, "header:\n%s", csv);
	/* rank 1's own alone (1600) beside its beside (1.5 x 1500): ratio 1.406 */
	CHECK(strstr(csv, "25 MiB,26214400,f32,2,product 8192x8192x8192,product,1,1600.0,2250.0,1.406,75.0,"
			  "90.0,14.0,100.0\n") != NULL, "the square product's row:\n%s", csv);
	CHECK(strstr(csv, ",product 16384x3072x768,product,1,120.0,180.0,1.500,75.0,90.0,14.0,100.0\n") != NULL,
	      "the first product's row:\n%s", csv);
	CHECK(strstr(csv, ",residual add 256 MiB,memory,1,200.0,300.0,1.500,75.0,,14.0,50.0\n") != NULL,
	      "the memory-bound row, no all-reduce inside it:\n%s", csv);
	report_free(r);
}

static void test_calibrate(void)
{
	struct contention_sample s[2];
	struct contention_result res = { 100ull << 20, ST_DT_F32, 2, 20, s };
	struct contention_calibration cal;

	samples(s);
	CHECK(contention_calibrate(&res, &cal) == 0);
	/* the products alone (120 + 110 + 1600) and beside (180 + 165 + 2250), rank 1's: the residual add left out */
	CHECK_NEAR(cal.measured, (180.0 + 165.0 + 2250.0) / (120.0 + 110.0 + 1600.0), 1e-12);
	CHECK_NEAR(cal.contention, cal.measured, 1e-12);
	CHECK_NEAR(cal.call_us, 14.0, 1e-12);
	CHECK(cal.kernels_beside == 3 * 20, "kernels_beside %lld", (long long)cal.kernels_beside);
	CHECK(cal.calls == 1234, "calls %lld", (long long)cal.calls);
	CHECK(cal.bytes == 100ull << 20 && cal.dtype == ST_DT_F32);

	/* faster beside than alone is noise: written as 1, the least explain takes */
	for (int r = 0; r < 2; r++)
		for (int w = 0; w < CONTENTION_WORKS; w++)
			s[r].beside_us[w] = s[r].alone_us[w] * 0.98;
	CHECK(contention_calibrate(&res, &cal) == 0);
	CHECK(cal.contention == 1.0 && cal.measured < 1, "contention %g measured %g", cal.contention, cal.measured);

	/* nothing measured: no calibration, one line */
	memset(s, 0, sizeof(s));
	error_set_stream(fopen("/dev/null", "w"));
	CHECK(contention_calibrate(&res, &cal) == -1);
	error_set_stream(NULL);
}

/* The calibration's CSV, written as --calibration writes it, read by explain's --contention reader. */
static void test_round_trip(void)
{
	const char *dir = getenv("ST_TEST_TMPDIR");
	struct contention_calibration cal = { .contention = 1.2384, .measured = 1.2384, .call_us = 14.26,
					      .kernels_beside = 60, .calls = 1234 };
	struct graph_ranks_model rm = { 0 };
	char path[4096], line[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/contention-calibration.csv", dir ? dir : "/tmp");
	f = fopen(path, "w");
	CHECK(f != NULL, "cannot write '%s'", path);
	if (!f)
		return;
	CHECK(contention_calibration_write(&cal, f) == 0);
	fclose(f);
	f = fopen(path, "r");
	CHECK(f && fgets(line, sizeof(line), f) && !strcmp(line, "contention,call_us,kernels_beside,calls\n"),
	      "explain's columns: %s", line);
	CHECK(f && fgets(line, sizeof(line), f) && !strcmp(line, "1.238,14.3,60,1234\n"), "the row: %s", line);
	if (f)
		fclose(f);
	CHECK(whatif_calibration_load(path, &rm) == 0);
	CHECK_NEAR(rm.contention, 1.238, 1e-12);
	CHECK(rm.call_ns == 14300, "call_ns %llu", (unsigned long long)rm.call_ns);

	/* the least contention, 1, is one explain accepts */
	cal.contention = 1.0;
	cal.call_us = 0;
	f = fopen(path, "w");
	CHECK(f && contention_calibration_write(&cal, f) == 0);
	if (f)
		fclose(f);
	CHECK(whatif_calibration_load(path, &rm) == 0 && rm.contention == 1.0 && rm.call_ns == 0);
	remove(path);
}

int main(void)
{
	test_table();
	test_calibrate();
	test_round_trip();
	return check_done("model_contention");
}
