/*
 * test_aten.c: record/aten.c, the names emit_nvtx(record_shapes=True) gives
 * its ranges (torch/csrc/profiler/util.cpp, getNvtxStr) and the FLOP and
 * byte rules, on names written exactly as PyTorch writes them.
 */
#include "record/aten.h"
#include "tests/lib/check.h"

static void check_normalize(const char *name, const char *want)
{
	char buf[512];

	aten_normalize(name, buf, sizeof(buf));
	CHECK_STR(buf, want);
}

static void test_normalize(void)
{
	check_normalize("aten::mm, seq = 123, op_id = 45, sizes = [[4096, 768], [768, 3072]], "
			"input_op_ids = [(44,0), (12,0)]",
			"aten::mm, sizes = [[4096, 768], [768, 3072]]");
	check_normalize("aten::empty, op_id = 7", "aten::empty");
	check_normalize("MmBackward0, seq = 9", "MmBackward0");
	check_normalize("aten::add_, seq = -1, op_id = 3, sizes = [[2, 3], [], []]",
			"aten::add_, sizes = [[2, 3], [], []]");
	/* not emit_nvtx's: left alone */
	check_normalize("forward", "forward");
	check_normalize("layer 3, seq = x", "layer 3, seq = x");
	check_normalize("a, op_id = 12b", "a, op_id = 12b");
	check_normalize("attn, input_op_ids = [(1,0)", "attn, input_op_ids = [(1,0)");
	/* a short buffer is cut, and terminated */
	{
		char buf[8];

		CHECK_U64(aten_normalize("aten::linear, op_id = 3", buf, sizeof(buf)), 7);
		CHECK_STR(buf, "aten::l");
	}
}

static void test_parse(void)
{
	struct aten_call c;

	CHECK(aten_parse("aten::baddbmm, seq = 2, op_id = 5, sizes = [[48, 512, 512], [48, 512, 64], "
			 "[48, 64, 512], [], []], input_op_ids = [(1,0), (2,0), (3,0), (0,-1), (0,-1)]",
			 &c) == 0);
	CHECK_STR(c.op, "aten::baddbmm");
	CHECK(c.has_sizes);
	CHECK_U64(c.n, 5);
	if (c.n == 5) {
		CHECK_U64(c.shapes[0].rank, 3);
		CHECK_U64(c.shapes[0].numel, 48ull * 512 * 512);
		CHECK_U64(c.shapes[2].dim[1], 64);
		CHECK_U64(c.shapes[3].rank, 0);
		CHECK_U64(c.shapes[3].numel, 0);
	}
	aten_call_release(&c);

	CHECK(aten_parse("aten::zeros, op_id = 1, sizes = []", &c) == 0);
	CHECK(c.has_sizes);
	CHECK_U64(c.n, 0);
	aten_call_release(&c);

	CHECK(aten_parse("Optimizer.step#AdamW.step", &c) == 0);
	CHECK_STR(c.op, "Optimizer.step#AdamW.step");
	CHECK(!c.has_sizes);
	aten_call_release(&c);

	/* malformed shapes are refused, not guessed */
	CHECK(aten_parse("aten::mm, sizes = [[4, x], [4, 4]]", &c) == -1);
	CHECK(aten_parse("aten::mm, sizes = [[4, 4], [4, 4]", &c) == -1);
	CHECK(aten_parse("aten::mm, sizes = [[-4, 4]]", &c) == -1);
	CHECK(aten_parse("aten::mm, sizes = [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17]]",
			 &c) == -1);
}

/* FLOPs and bytes of one name, with `eb` bytes per element. */
static struct aten_cost cost(const char *name, unsigned eb, bool *ok)
{
	struct aten_call c;
	struct aten_cost k = { 0 };

	*ok = false;
	if (aten_parse(name, &c) == 0) {
		*ok = aten_cost(&c, eb, &k);
		aten_call_release(&c);
	}
	return k;
}

static void check_cost(const char *name, unsigned eb, enum aten_family fam, uint64_t flops,
		       uint64_t bytes)
{
	bool ok;
	struct aten_cost k = cost(name, eb, &ok);

	CHECK(ok, "%s", name);
	CHECK(k.family == fam, "%s: family %s, want %s", name, aten_family_name(k.family),
	      aten_family_name(fam));
	CHECK(k.flops == flops, "%s: %llu FLOPs, want %llu", name, (unsigned long long)k.flops,
	      (unsigned long long)flops);
	CHECK(k.bytes == bytes, "%s: %llu bytes, want %llu", name, (unsigned long long)k.bytes,
	      (unsigned long long)bytes);
}

static void test_matmul(void)
{
	const uint64_t m = 2048, k = 768, n = 3072, b = 48, t = 512, d = 64;

	/* mm: 2 M K N; A, B read, C written */
	check_cost("aten::mm, seq = 1, op_id = 2, sizes = [[2048, 768], [768, 3072]]", 2, ATEN_MATMUL,
		   2 * m * k * n, 2 * (m * k + k * n + m * n));
	/* addmm(bias, mat1, mat2) */
	check_cost("aten::addmm, sizes = [[3072], [2048, 768], [768, 3072], [], []]", 4, ATEN_MATMUL,
		   2 * m * k * n, 4 * (n + m * k + k * n + m * n));
	/* bmm and baddbmm */
	check_cost("aten::bmm, sizes = [[48, 512, 64], [48, 64, 512]]", 2, ATEN_MATMUL,
		   2 * b * t * d * t, 2 * (b * t * d + b * d * t + b * t * t));
	check_cost("aten::baddbmm, sizes = [[48, 512, 512], [48, 512, 64], [48, 64, 512], [], []]", 2,
		   ATEN_MATMUL, 2 * b * t * d * t, 2 * (b * t * t + b * t * d + b * d * t + b * t * t));
	/* matmul: (4, 512, 768) x (768, 3072) folds the batch into M */
	check_cost("aten::matmul, sizes = [[4, 512, 768], [768, 3072]]", 2, ATEN_MATMUL,
		   2 * m * k * n, 2 * (m * k + k * n + m * n));
	/* matmul with broadcast batch dims: (4, 12, 512, 64) x (1, 12, 64, 512) */
	check_cost("aten::matmul, sizes = [[4, 12, 512, 64], [1, 12, 64, 512]]", 2, ATEN_MATMUL,
		   2 * b * t * d * t, 2 * (b * t * d + 12 * d * t + b * t * t));
	/* matmul of a matrix and a vector, and of two vectors */
	check_cost("aten::matmul, sizes = [[10, 20], [20]]", 4, ATEN_MATMUL, 2 * 10 * 20,
		   4 * (200 + 20 + 10));
	check_cost("aten::matmul, sizes = [[20], [20]]", 4, ATEN_MATMUL, 2 * 20, 4 * (20 + 20 + 1));
	/* linear(x (…, K), w (N, K), bias) */
	check_cost("aten::linear, sizes = [[4, 512, 768], [3072, 768], [3072]]", 2, ATEN_MATMUL,
		   2 * m * k * n, 2 * (m * k + n * k + n + m * n));
	check_cost("aten::linear, sizes = [[4, 512, 768], [3072, 768], []]", 2, ATEN_MATMUL,
		   2 * m * k * n, 2 * (m * k + n * k + m * n));
	/* shapes that do not multiply: no cost, family still known */
	{
		bool ok;
		struct aten_cost c = cost("aten::mm, sizes = [[4, 5], [6, 7]]", 4, &ok);

		CHECK(!ok && c.flops == 0 && c.bytes == 0 && c.family == ATEN_MATMUL);
		c = cost("aten::mm, op_id = 3", 4, &ok);   /* emit_nvtx without record_shapes */
		CHECK(!ok && c.family == ATEN_MATMUL);
		c = cost("aten::bmm, sizes = [[2, 4, 5], [3, 5, 6]]", 4, &ok);
		CHECK(!ok && c.flops == 0);
		c = cost("aten::matmul, sizes = [[2, 4, 5], [3, 5, 6]]", 4, &ok);   /* batch 2 vs 3 */
		CHECK(!ok && c.flops == 0);
	}
}

static void test_attention(void)
{
	const uint64_t bh = 4 * 12, l = 512, s = 512, e = 64;
	const uint64_t q = bh * l * e, kv = bh * s * e;
	bool ok;

	/* SDPA (b, h, l, e): QK^T and PV, 2 * bh * l * s * (e + ev) */
	check_cost("aten::scaled_dot_product_attention, seq = 3, op_id = 9, sizes = [[4, 12, 512, 64], "
		   "[4, 12, 512, 64], [4, 12, 512, 64], [], [], [], [], []]",
		   2, ATEN_ATTENTION, 2 * bh * l * s * (e + e), 2 * (q + 2 * kv + q));
	check_cost("aten::_scaled_dot_product_flash_attention, sizes = [[4, 12, 512, 64], "
		   "[4, 12, 512, 64], [4, 12, 512, 64], [], [], [], []]",
		   2, ATEN_ATTENTION, 2 * bh * l * s * (e + e), 2 * (q + 2 * kv + q));
	/* _flash_attention_forward takes (b, l, h, e): the same work */
	check_cost("aten::_flash_attention_forward, sizes = [[4, 512, 12, 64], [4, 512, 12, 64], "
		   "[4, 512, 12, 64], [], [], [], [], [], [], []]",
		   2, ATEN_ATTENTION, 2 * bh * l * s * (e + e), 2 * (q + 2 * kv + q));
	/* backward: grad_out first; 4 products, q k v o dO read, dq dk dv written */
	check_cost("aten::_scaled_dot_product_flash_attention_backward, sizes = [[4, 12, 512, 64], "
		   "[4, 12, 512, 64], [4, 12, 512, 64], [4, 12, 512, 64], [4, 12, 512, 64], [4, 12, 512]]",
		   2, ATEN_ATTENTION, 4 * bh * l * s * (e + e), 2 * (2 * (q + 2 * kv) + 2 * q));
	/* cross attention: l != s, e != ev */
	check_cost("aten::scaled_dot_product_attention, sizes = [[2, 4, 128, 32], [2, 4, 256, 32], "
		   "[2, 4, 256, 16]]",
		   4, ATEN_ATTENTION, 2ull * 8 * 128 * 256 * (32 + 16),
		   4ull * (8 * 128 * 32 + 8 * 256 * 32 + 8 * 256 * 16 + 8 * 128 * 16));
	cost("aten::_scaled_dot_product_flash_attention_backward, sizes = [[1]]", 2, &ok);
	CHECK(!ok);
}

static void test_memory_ops(void)
{
	const uint64_t n = 4ull * 12 * 512 * 512;
	struct aten_cost k;
	bool ok;

	/* softmax: read x, write y; backward reads dy and y, writes dx */
	check_cost("aten::_softmax, seq = 4, sizes = [[4, 12, 512, 512], [], []]", 4, ATEN_SOFTMAX, 5 * n,
		   4 * 2 * n);
	check_cost("aten::_softmax_backward_data, sizes = [[4, 12, 512, 512], [4, 12, 512, 512], [], []]",
		   4, ATEN_SOFTMAX, 4 * n, 4 * 3 * n);
	/* layer norm: x in and out, weight and bias once */
	check_cost("aten::native_layer_norm, sizes = [[4, 512, 768], [], [768], [768], []]", 2, ATEN_NORM,
		   4ull * 4 * 512 * 768, 2ull * (2 * 4 * 512 * 768 + 2 * 768));
	/* binary elementwise with broadcast: inputs read, the output (the larger) written */
	check_cost("aten::mul, sizes = [[4, 512, 768], [768]]", 2, ATEN_ELEMENTWISE, 4ull * 512 * 768,
		   2ull * (4 * 512 * 768 + 768 + 4 * 512 * 768));
	/* in place, scalar operand */
	check_cost("aten::add_, sizes = [[1024], [], []]", 4, ATEN_ELEMENTWISE, 1024, 4 * (1024 + 1024));
	/* copies count bytes, no FLOPs */
	check_cost("aten::copy_, sizes = [[4, 512], [4, 512], []]", 2, ATEN_ELEMENTWISE, 0,
		   2 * (2 * 2048 + 2048));
	/* a reduction reads everything, writes little */
	check_cost("aten::sum, sizes = [[4, 512], [], [], []]", 4, ATEN_REDUCTION, 2048, 4 * (2048 + 1));
	/* _foreach over two lists of equal shapes: the first list is written */
	check_cost("aten::_foreach_add_, sizes = [[10, 10], [5], [10, 10], [5], []]", 4, ATEN_ELEMENTWISE,
		   105, 4 * (2 * 105 + 105));
	/* _foreach with a scalar: every listed tensor is written */
	check_cost("aten::_foreach_mul_, sizes = [[10, 10], [5], []]", 4, ATEN_ELEMENTWISE, 105,
		   4 * (105 + 105));
	/* known family, no shapes: no cost */
	k = cost("aten::_softmax, op_id = 3", 4, &ok);
	CHECK(!ok && k.family == ATEN_SOFTMAX && k.bytes == 0);
	/* unknown ops and non-aten names have no rule */
	k = cost("aten::frobnicate, sizes = [[4]]", 4, &ok);
	CHECK(!ok && k.family == ATEN_OTHER);
	k = cost("forward", 4, &ok);
	CHECK(!ok && k.family == ATEN_OTHER);
	/* huge shapes saturate instead of wrapping */
	k = cost("aten::mm, sizes = [[4294967296, 4294967296], [4294967296, 4294967296]]", 4, &ok);
	CHECK(ok && k.flops == UINT64_MAX && k.bytes == UINT64_MAX);
}

int main(void)
{
	test_normalize();
	test_parse();
	test_matmul();
	test_attention();
	test_memory_ops();
	return check_done("test_aten");
}
