/*
 * The attention sweep's CPU side (model/attention_sweep.c): the grid from
 * its lists (the seeds' grid by default, the sweep order, every refusal),
 * the configuration names a recording carries, and the FLOP and byte
 * formulas of attention's parts, against counts worked out by hand.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "model/attention_sweep.h"
#include "tests/lib/check.h"

static int grid(struct attn_grid g, struct attn_config **c)
{
	FILE *err = fopen("/dev/null", "w");
	int n;

	error_set_stream(err);
	n = attn_grid_configs(&g, c);
	error_set_stream(NULL);
	fclose(err);
	return n;
}

static void test_default_grid(void)
{
	struct attn_grid g = ATTN_GRID_INIT;
	struct attn_config *c;
	static const int d[] = { 16, 32, 64, 128 }, s[] = { 256, 1024, 4096, 8192, 16384 };
	int n = grid(g, &c);

	CHECK(n == 20, "the seeds' grid has 20 configurations, not %d", n);
	for (int i = 0; i < n && n == 20; i++) {
		CHECK(c[i].batch == 8 && c[i].heads == 1 && c[i].causal, "config %d: batch %d heads %d",
		      i, c[i].batch, c[i].heads);
		CHECK(c[i].d_head == d[i / 5] && c[i].seq == s[i % 5],
		      "config %d is d %d seq %d: d_head outer, seq inner", i, c[i].d_head, c[i].seq);
		CHECK(c[i].precision == ST_FP32 && c[i].impl == ST_ATTN_NAIVE,
		      "config %d: fp32 naive by default", i);
	}
	free(c);
}

static void test_lists(void)
{
	struct attn_grid g = ATTN_GRID_INIT;
	struct attn_config *c;
	char name[96];
	int n;

	g.precision = "bf16,fp32";
	g.impl = "naive,flash";
	g.batch = "2,4";
	g.heads = "3";
	g.d_head = "40";
	g.seq = "77,1000";
	g.causal = false;
	n = grid(g, &c);
	CHECK(n == 16, "2 precisions x 2 impls x 2 batches x 2 seqs = 16, not %d", n);
	if (n == 16) {
		/* precision outermost, then impl, batch, heads, d_head, seq */
		CHECK(c[0].precision == ST_BF16 && c[0].impl == ST_ATTN_NAIVE && c[0].batch == 2 &&
		      c[0].seq == 77, "first configuration");
		CHECK(c[1].seq == 1000 && c[1].batch == 2, "seq is the innermost axis");
		CHECK(c[2].batch == 4 && c[2].seq == 77, "then batch");
		CHECK(c[4].impl == ST_ATTN_FLASH && c[4].precision == ST_BF16, "then impl");
		CHECK(c[8].precision == ST_FP32 && c[8].impl == ST_ATTN_NAIVE, "precision outermost");
		CHECK(!c[15].causal && c[15].heads == 3 && c[15].d_head == 40, "last configuration");
		CHECK_STR(attn_config_name(&c[15], name, sizeof(name)),
			  "attn d40 seq1000 b4 h3 fp32 flash noncausal");
		CHECK_STR(attn_config_name(&c[0], name, sizeof(name)),
			  "attn d40 seq77 b2 h3 bf16 naive noncausal");
		CHECK(attn_config_dtype(&c[0]) == ST_DT_BF16 && attn_config_dtype(&c[8]) == ST_DT_F32,
		      "dtypes");
	}
	free(c);
	g = (struct attn_grid)ATTN_GRID_INIT;
	g.seq = " 4096 , 65536";
	g.precision = "tf32";
	n = grid(g, &c);
	CHECK(n == 8 && c[1].seq == 65536 && c[0].precision == ST_TF32,
	      "spaces around items, tf32 (%d)", n);
	if (n == 8) {
		CHECK_STR(attn_config_name(&c[0], name, sizeof(name)), "attn d16 seq4096 b8 h1 tf32 naive");
		CHECK(attn_config_dtype(&c[0]) == ST_DT_F32, "tf32 computes on f32 operands");
	}
	free(c);
}

static void test_refusals(void)
{
	static const struct {
		const char *what, *batch, *heads, *d_head, *seq, *precision, *impl;
	} bad[] = {
		{ "zero seq", NULL, NULL, NULL, "0", NULL, NULL },
		{ "negative d_head", NULL, NULL, "-64", NULL, NULL, NULL },
		{ "not a number", "eight", NULL, NULL, NULL, NULL, NULL },
		{ "trailing junk", NULL, NULL, NULL, "256k", NULL, NULL },
		{ "empty item", NULL, NULL, "16,,32", NULL, NULL, NULL },
		{ "empty list", NULL, "", NULL, NULL, NULL, NULL },
		{ "seq past 2^20", NULL, NULL, NULL, "1048577", NULL, NULL },
		{ "d_head past 1024", NULL, NULL, "2048", NULL, NULL, NULL },
		{ "batch x heads past 65535", "256", "256", NULL, NULL, NULL, NULL },
		{ "FLOPs past 2^60", "4096", NULL, "1024", "1048576", NULL, NULL },
		{ "unknown precision", NULL, NULL, NULL, NULL, "fp16", NULL },
		{ "unknown impl", NULL, NULL, NULL, NULL, NULL, "sdpa" },
		{ "too many items", NULL, NULL, "8,16,24,32,40,48,56,64,72,80,88,96,104,112,120,128,136",
		  NULL, NULL, NULL },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct attn_grid g = ATTN_GRID_INIT;
		struct attn_config *c = (struct attn_config *)&g;   /* must be cleared */

		g.batch = bad[i].batch, g.heads = bad[i].heads, g.d_head = bad[i].d_head;
		g.seq = bad[i].seq, g.precision = bad[i].precision, g.impl = bad[i].impl;
		CHECK(grid(g, &c) == -1 && c == NULL, "refused: %s", bad[i].what);
	}
}

static void test_costs(void)
{
	/* 2 heads of t = 4, d = 8, BF16, causal: 10 kept pairs a head */
	struct attn_shape s = { .bh = 2, .t = 4, .d = 8, .a = 2, .causal = true };
	struct attn_cost k;
	uint64_t tt = 2 * 16, td = 2 * 4 * 8;

	k = attn_part_cost(&s, ATTN_SCORES, false);
	CHECK_U64(k.flops, 2 * tt * 8);                 /* 512 */
	CHECK_U64(k.bytes, 2 * td * 2 + tt * 2);        /* q, k read, s written */
	k = attn_part_cost(&s, ATTN_SCORES, true);
	CHECK_U64(k.flops, 4 * tt * 8);
	CHECK_U64(k.bytes, tt * 2 + 4 * td * 2);        /* ds, q, k read, dq, dk written */
	k = attn_part_cost(&s, ATTN_SOFTMAX, false);
	CHECK_U64(k.flops, 5 * tt);
	CHECK_U64(k.bytes, 2 * tt * 2);
	k = attn_part_cost(&s, ATTN_SOFTMAX, true);
	CHECK_U64(k.flops, 4 * tt);
	CHECK_U64(k.bytes, 3 * tt * 2);
	k = attn_part_cost(&s, ATTN_AV, false);
	CHECK_U64(k.flops, 2 * tt * 8);
	CHECK_U64(k.bytes, tt * 2 + 2 * td * 2);
	k = attn_part_cost(&s, ATTN_AV, true);
	CHECK_U64(k.flops, 4 * tt * 8);
	CHECK_U64(k.bytes, 2 * tt * 2 + 3 * td * 2);

	/* flash counts the 2 x 10 kept pairs: 4 d + 5 forward, 10 d + 5 backward, + 2 d a row */
	k = attn_part_cost(&s, ATTN_FLASH, false);
	CHECK_U64(k.flops, 20 * (4 * 8 + 5));            /* 740 */
	CHECK_U64(k.bytes, 4 * td * 2 + 4 * 2 * 4);      /* q, k, v, o; lse F32 */
	k = attn_part_cost(&s, ATTN_FLASH, true);
	CHECK_U64(k.flops, 20 * (10 * 8 + 5) + 2 * td);  /* 1828 */
	CHECK_U64(k.bytes, 8 * td * 2 + 12 * 2 * 4);     /* q k v o dout dq dk dv; lse, D twice */
	s.causal = false;
	k = attn_part_cost(&s, ATTN_FLASH, false);
	CHECK_U64(k.flops, 32 * (4 * 8 + 5));
	CHECK_U64(attn_part_cost(&s, ATTN_SCORES, false).flops, 2 * tt * 8);   /* cuBLAS: all of it */

	/* the seeds' largest: 8 x 16384^2 x 64, causal half */
	struct attn_shape big = { .bh = 8, .t = 16384, .d = 64, .a = 2, .causal = true };
	CHECK_NEAR(attn_useful_flops(&big, false), 4.0 * 8 * 16384.0 * 16384.0 * 64 / 2, 1.0);
	CHECK_NEAR(attn_useful_flops(&big, true), 2.5 * 4.0 * 8 * 16384.0 * 16384.0 * 64 / 2, 1.0);
	big.causal = false;
	CHECK_NEAR(attn_useful_flops(&big, false), 4.0 * 8 * 16384.0 * 16384.0 * 64, 1.0);
	/* no overflow at the largest the grid accepts: B H T^2 d = 2^60 */
	struct attn_shape huge = { .bh = 1, .t = 1 << 20, .d = 1 << 20, .a = 4, .causal = false };
	k = attn_part_cost(&huge, ATTN_FLASH, true);
	CHECK(k.flops / 10 / (1ull << 20) / (1ull << 20) >= (1ull << 20), "backward FLOPs do not wrap");

	/* a configuration's shape */
	struct attn_config c = { .batch = 8, .heads = 2, .d_head = 64, .seq = 512,
				 .precision = ST_FP32, .impl = ST_ATTN_FLASH, .causal = true };
	struct attn_shape cs = attn_config_shape(&c);
	CHECK(cs.bh == 16 && cs.t == 512 && cs.d == 64 && cs.a == 4 && cs.causal, "shape");
	CHECK_STR(attn_part_names[ATTN_FLASH], "flash");
}

int main(void)
{
	test_default_grid();
	test_lists();
	test_refusals();
	test_costs();
	return check_done("model_attention_sweep");
}
