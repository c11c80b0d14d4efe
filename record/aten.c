/* aten.c: see aten.h. */
#include "record/aten.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"

/* ---- names ------------------------------------------------------------- */

/* Length of ", KEY = <digits>" at p, 0 when p does not start with it. */
static size_t number_field(const char *p, const char *key)
{
	size_t k = strlen(key), i;

	if (strncmp(p, ", ", 2) || strncmp(p + 2, key, k) || strncmp(p + 2 + k, " = ", 3))
		return 0;
	i = 2 + k + 3;
	if (p[i] == '-')
		i++;
	if (!isdigit((unsigned char)p[i]))
		return 0;
	while (isdigit((unsigned char)p[i]))
		i++;
	return p[i] == ',' || p[i] == '\0' ? i : 0;
}

/* Length of ", KEY = [...]" at p (brackets balanced), 0 when it is not there. */
static size_t list_field(const char *p, const char *key)
{
	size_t k = strlen(key), i;
	int depth = 0;

	if (strncmp(p, ", ", 2) || strncmp(p + 2, key, k) || strncmp(p + 2 + k, " = [", 4))
		return 0;
	for (i = 2 + k + 3; p[i]; i++) {
		if (p[i] == '[')
			depth++;
		else if (p[i] == ']' && --depth == 0)
			return p[i + 1] == ',' || p[i + 1] == '\0' ? i + 1 : 0;
	}
	return 0;
}

size_t aten_normalize(const char *name, char *buf, size_t len)
{
	size_t n = 0;

	if (!len)
		return 0;
	while (*name) {
		size_t skip = 0;

		if (name[0] == ',')
			skip = number_field(name, "seq");
		if (!skip && name[0] == ',')
			skip = number_field(name, "op_id");
		if (!skip && name[0] == ',')
			skip = list_field(name, "input_op_ids");
		if (skip) {
			name += skip;
			continue;
		}
		if (n + 1 < len)
			buf[n++] = *name;
		name++;
	}
	buf[n] = '\0';
	return n;
}

void aten_tags(const char *name, struct aten_tags *out)
{
	const char *p;

	out->seq = -1;
	out->profiled = false;
	for (p = strchr(name, ','); p; p = strchr(p + 1, ',')) {
		if (number_field(p, "op_id"))
			out->profiled = true;
		else if (out->seq < 0 && number_field(p, "seq"))
			out->seq = strtoll(p + 8, NULL, 10);
	}
}

/* ---- shapes ------------------------------------------------------------ */

void aten_call_release(struct aten_call *c)
{
	free(c->shapes);
	c->shapes = NULL;
	c->n = 0;
}

static const char *skip_spaces(const char *p)
{
	while (*p == ' ')
		p++;
	return p;
}

/* One "[d, d, ...]" at p into s; returns the end, NULL when malformed. */
static const char *parse_shape(const char *p, struct aten_shape *s)
{
	memset(s, 0, sizeof(*s));
	if (*p != '[')
		return NULL;
	p = skip_spaces(p + 1);
	s->numel = 1;
	while (*p != ']') {
		char *end;
		long long v = strtoll(p, &end, 10);

		if (end == p || v < 0)
			return NULL;
		if (s->rank < ATEN_MAX_RANK)
			s->dim[s->rank] = v;
		s->rank++;
		s->numel = v && s->numel > UINT64_MAX / (uint64_t)v ? UINT64_MAX : s->numel * (uint64_t)v;
		p = skip_spaces(end);
		if (*p == ',')
			p = skip_spaces(p + 1);
		else if (*p != ']')
			return NULL;
	}
	if (s->rank > ATEN_MAX_RANK)
		return NULL;
	if (s->rank == 0)
		s->numel = 0;
	return p + 1;
}

/* "[[...], [...]]" at p into c->shapes; -1 malformed, -2 out of memory. */
static int parse_sizes(const char *p, struct aten_call *c)
{
	size_t cap = 0;

	if (*p != '[')
		return -1;
	p = skip_spaces(p + 1);
	while (*p != ']') {
		if (ALLOC_GROW(c->shapes, c->n + 1, cap))
			return -2;
		p = parse_shape(p, &c->shapes[c->n]);
		if (!p)
			return -1;
		c->n++;
		p = skip_spaces(p);
		if (*p == ',')
			p = skip_spaces(p + 1);
		else if (*p != ']')
			return -1;
	}
	p++;
	return *p == ',' || *p == '\0' ? 0 : -1;
}

int aten_parse(const char *name, struct aten_call *out)
{
	const char *comma = strstr(name, ", "), *sizes;
	size_t n;
	int rc;

	memset(out, 0, sizeof(*out));
	n = comma ? (size_t)(comma - name) : strlen(name);
	if (n >= sizeof(out->op))
		n = sizeof(out->op) - 1;
	memcpy(out->op, name, n);
	out->op[n] = '\0';
	sizes = comma ? strstr(comma, ", sizes = ") : NULL;
	if (!sizes)
		return 0;
	out->has_sizes = true;
	rc = parse_sizes(sizes + strlen(", sizes = "), out);
	if (rc < 0)
		aten_call_release(out);
	return rc;
}

/* ---- costs ------------------------------------------------------------- */

const char *aten_family_name(enum aten_family f)
{
	static const char *const names[] = {
		"other", "matmul", "attention", "softmax", "norm", "elementwise", "reduction",
	};

	return (unsigned)f < sizeof(names) / sizeof(names[0]) ? names[f] : "other";
}

static bool name_in(const char *op, const char *const *names)
{
	for (; *names; names++)
		if (!strcmp(op, *names))
			return true;
	return false;
}

/* "aten::add_" -> "add" (the namespace and an in-place underscore dropped) into buf. */
static const char *base_name(const char *op, char *buf, size_t len)
{
	const char *p = strncmp(op, "aten::", 6) ? op : op + 6;
	size_t n = strlen(p);

	if (n >= len)
		n = len - 1;
	memcpy(buf, p, n);
	buf[n] = '\0';
	if (n > 1 && buf[n - 1] == '_' && buf[n - 2] != '_')
		buf[n - 1] = '\0';
	return buf;
}

static uint64_t sat_mul(uint64_t a, uint64_t b)
{
	return a && b > UINT64_MAX / a ? UINT64_MAX : a * b;
}

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

static const struct aten_shape *arg(const struct aten_call *c, size_t i)
{
	return i < c->n ? &c->shapes[i] : NULL;
}

/* The product of dims [from, to) of s. */
static uint64_t dims_product(const struct aten_shape *s, int from, int to)
{
	uint64_t p = 1;

	for (int i = from; i < to; i++)
		p = sat_mul(p, (uint64_t)s->dim[i]);
	return p;
}

/* 2 M K N FLOPs and (a + b + c + M N) elements for a [M, K] x [K, N] product, times `batch`. */
static bool gemm(struct aten_cost *o, unsigned eb, uint64_t batch, uint64_t m, uint64_t k,
		 uint64_t n, uint64_t a_elems, uint64_t b_elems, uint64_t extra_elems)
{
	o->flops = sat_mul(sat_mul(sat_mul(2 * batch, m), k), n);
	o->bytes = sat_mul(eb, sat_add(sat_add(sat_add(a_elems, b_elems), extra_elems),
				       sat_mul(sat_mul(batch, m), n)));
	return true;
}

/* aten::matmul's broadcasting rules over a (…, M, K) and b (…, K, N); 1-d operands are vectors. */
static bool matmul(const struct aten_shape *a, const struct aten_shape *b, unsigned eb,
		   struct aten_cost *o)
{
	uint64_t m, k, n, batch = 1;
	int ba, bb, i;

	if (a->rank < 1 || b->rank < 1)
		return false;
	k = (uint64_t)a->dim[a->rank - 1];
	m = a->rank >= 2 ? (uint64_t)a->dim[a->rank - 2] : 1;
	n = b->rank >= 2 ? (uint64_t)b->dim[b->rank - 1] : 1;
	if ((uint64_t)b->dim[b->rank >= 2 ? b->rank - 2 : 0] != k)
		return false;
	ba = a->rank > 2 ? a->rank - 2 : 0;
	bb = b->rank > 2 ? b->rank - 2 : 0;
	for (i = 0; i < (ba > bb ? ba : bb); i++) {
		/* batch dims aligned from the right, broadcast where one is 1 or absent */
		int ia = ba - 1 - i, ib = bb - 1 - i;
		uint64_t da = ia >= 0 ? (uint64_t)a->dim[ia] : 1, db = ib >= 0 ? (uint64_t)b->dim[ib] : 1;

		if (da != db && da != 1 && db != 1)
			return false;
		batch = sat_mul(batch, da > db ? da : db);
	}
	return gemm(o, eb, batch, m, k, n, a->numel ? a->numel : 1, b->numel ? b->numel : 1, 0);
}

static bool matmul_family(const struct aten_call *c, const char *base, unsigned eb,
			  struct aten_cost *o)
{
	const struct aten_shape *a, *b, *x;

	if (!strcmp(base, "mm") || !strcmp(base, "addmm")) {
		size_t off = base[0] == 'a' ? 1 : 0;

		a = arg(c, off);
		b = arg(c, off + 1);
		x = off ? arg(c, 0) : NULL;
		if (!a || !b || a->rank != 2 || b->rank != 2 || a->dim[1] != b->dim[0])
			return false;
		return gemm(o, eb, 1, (uint64_t)a->dim[0], (uint64_t)a->dim[1], (uint64_t)b->dim[1],
			    a->numel, b->numel, x ? x->numel : 0);
	}
	if (!strcmp(base, "bmm") || !strcmp(base, "baddbmm")) {
		size_t off = base[0] == 'b' && base[1] == 'a' ? 1 : 0;

		a = arg(c, off);
		b = arg(c, off + 1);
		x = off ? arg(c, 0) : NULL;
		if (!a || !b || a->rank != 3 || b->rank != 3 || a->dim[0] != b->dim[0] ||
		    a->dim[2] != b->dim[1])
			return false;
		return gemm(o, eb, (uint64_t)a->dim[0], (uint64_t)a->dim[1], (uint64_t)a->dim[2],
			    (uint64_t)b->dim[2], a->numel, b->numel, x ? x->numel : 0);
	}
	if (!strcmp(base, "matmul")) {
		a = arg(c, 0);
		b = arg(c, 1);
		return a && b && matmul(a, b, eb, o);
	}
	if (!strcmp(base, "linear")) {
		uint64_t k, n;

		a = arg(c, 0);
		b = arg(c, 1);
		x = arg(c, 2);
		if (!a || !b || a->rank < 1 || b->rank != 2 || a->dim[a->rank - 1] != b->dim[1])
			return false;
		k = (uint64_t)b->dim[1];
		n = (uint64_t)b->dim[0];
		return gemm(o, eb, 1, k ? a->numel / k : 0, k, n, a->numel, b->numel, x ? x->numel : 0);
	}
	return false;
}

/* The attention ops and their layouts: true for (batch, seq, heads, dim), else (batch, heads, seq, dim). */
static const char *const attention_bhsd[] = {
	"scaled_dot_product_attention", "_scaled_dot_product_flash_attention",
	"_scaled_dot_product_efficient_attention", "_scaled_dot_product_cudnn_attention",
	"_scaled_dot_product_flash_attention_for_cpu", "_scaled_dot_product_attention_math", NULL,
};
static const char *const attention_bshd[] = {
	"_flash_attention_forward", "_efficient_attention_forward", NULL,
};
static const char *const attention_bwd_bhsd[] = {
	"_scaled_dot_product_flash_attention_backward", "_scaled_dot_product_efficient_attention_backward",
	"_scaled_dot_product_cudnn_attention_backward", NULL,
};
static const char *const attention_bwd_bshd[] = {
	"_flash_attention_backward", "_efficient_attention_backward", NULL,
};

/* batch (b * h), L, S, E and Ev from q, k, v of rank 4 (or 3: no heads), in either layout. */
static bool attention_dims(const struct aten_shape *q, const struct aten_shape *k,
			   const struct aten_shape *v, bool bshd, uint64_t d[5])
{
	int r = q->rank;

	if (r < 3 || k->rank != r || v->rank != r)
		return false;
	if (bshd && r == 4) {
		d[0] = (uint64_t)q->dim[0] * (uint64_t)q->dim[2];
		d[1] = (uint64_t)q->dim[1];
		d[2] = (uint64_t)k->dim[1];
	} else {
		d[0] = dims_product(q, 0, r - 2);
		d[1] = (uint64_t)q->dim[r - 2];
		d[2] = (uint64_t)k->dim[r - 2];
	}
	d[3] = (uint64_t)q->dim[r - 1];
	d[4] = (uint64_t)v->dim[r - 1];
	return d[3] == (uint64_t)k->dim[r - 1];
}

static bool attention_family(const struct aten_call *c, const char *base, unsigned eb,
			     struct aten_cost *o)
{
	bool bwd = name_in(base, attention_bwd_bhsd) || name_in(base, attention_bwd_bshd);
	bool bshd = name_in(base, attention_bshd) || name_in(base, attention_bwd_bshd);
	size_t off = bwd ? 1 : 0;   /* backward: grad_out first, then q, k, v */
	const struct aten_shape *q = arg(c, off), *k = arg(c, off + 1), *v = arg(c, off + 2);
	uint64_t d[5], qkv, out;

	if (!q || !k || !v || !attention_dims(q, k, v, bshd, d))
		return false;
	qkv = sat_add(sat_add(q->numel, k->numel), v->numel);
	out = sat_mul(sat_mul(d[0], d[1]), d[4]);
	/* forward: S = Q K^T and O = P V; backward: dV, dP, dQ, dK (no recomputation counted) */
	o->flops = sat_mul(sat_mul(sat_mul(sat_mul(bwd ? 4 : 2, d[0]), d[1]), d[2]), d[3] + d[4]);
	/* forward reads q, k, v and writes o; backward reads q, k, v, o, dO and writes dQ, dK, dV */
	o->bytes = sat_mul(eb, bwd ? sat_add(sat_mul(2, qkv), sat_mul(2, out)) : sat_add(qkv, out));
	o->backward = bwd;
	return true;
}

static const char *const softmax_ops[] = {
	"softmax", "_softmax", "log_softmax", "_log_softmax", "_safe_softmax", NULL,
};
static const char *const softmax_bwd_ops[] = {
	"_softmax_backward_data", "_log_softmax_backward_data", NULL,
};
static const char *const norm_ops[] = {
	"layer_norm", "native_layer_norm", "rms_norm", "_fused_rms_norm", "group_norm",
	"native_group_norm", "batch_norm", "native_batch_norm", "_batch_norm_impl_index", NULL,
};
static const char *const norm_bwd_ops[] = {
	"native_layer_norm_backward", "_fused_rms_norm_backward", "native_group_norm_backward",
	"native_batch_norm_backward", NULL,
};
static const char *const reduction_ops[] = {
	"sum", "mean", "amax", "amin", "max", "min", "norm", "linalg_vector_norm", "prod", "var",
	"std", "nll_loss", "nll_loss_forward", "nll_loss_backward", "nll_loss2d_forward",
	"cross_entropy_loss", "argmax", "argmin", "logsumexp", "cumsum", NULL,
};
/* Elementwise ops with arithmetic (1 FLOP per output element); copies and fills count none. */
static const char *const arith_ops[] = {
	"add", "sub", "rsub", "mul", "div", "neg", "exp", "log", "pow", "rsqrt", "sqrt", "tanh",
	"sigmoid", "silu", "gelu", "relu", "abs", "reciprocal", "lerp", "addcmul", "addcdiv",
	"clamp", "clamp_min", "clamp_max", "maximum", "minimum", "where", "masked_fill", "eq", "ne",
	"gt", "lt", "ge", "le", "sin", "cos", "silu_backward", "gelu_backward", "threshold_backward",
	"sigmoid_backward", "tanh_backward", "embedding_dense_backward", "square", "erf", "floor",
	"round", "sign", "logical_not", "bitwise_not", "triu", "tril", NULL,
};
static const char *const copy_ops[] = {
	"copy", "clone", "_to_copy", "contiguous", "fill", "zero", "zeros_like", "ones_like",
	"full_like", "empty_like", "index_select", "embedding", "gather", "scatter", "cat", "stack",
	"index", "index_put", "masked_scatter", "_unsafe_index", "repeat", "expand_copy", NULL,
};

/* Sum of numel over shapes [from, to). */
static uint64_t numel_sum(const struct aten_call *c, size_t from, size_t to)
{
	uint64_t s = 0;

	for (size_t i = from; i < to && i < c->n; i++)
		s = sat_add(s, c->shapes[i].numel);
	return s;
}

static uint64_t numel_max(const struct aten_call *c)
{
	uint64_t m = 0;

	for (size_t i = 0; i < c->n; i++)
		if (c->shapes[i].numel > m)
			m = c->shapes[i].numel;
	return m;
}

static bool same_shape(const struct aten_shape *a, const struct aten_shape *b)
{
	return a->rank == b->rank && !memcmp(a->dim, b->dim, sizeof(a->dim[0]) * (size_t)(a->rank < ATEN_MAX_RANK ? a->rank : ATEN_MAX_RANK));
}

/*
 * _foreach_ ops take tensor lists, flattened into one shape list: the
 * written list is the first of k lists of equal shapes (k = 4, 3 or 2:
 * self, other, ...), or all of them (a list with scalars).
 */
static size_t foreach_written(const struct aten_call *c)
{
	size_t tensors = 0;

	for (size_t i = 0; i < c->n; i++)
		tensors += c->shapes[i].rank > 0;
	for (size_t k = 4; k >= 2; k--) {
		size_t len = tensors / k, j;

		if (!len || tensors % k)
			continue;
		for (j = 0; j < len * (k - 1); j++)
			if (!same_shape(&c->shapes[j], &c->shapes[j + len]))
				break;
		if (j == len * (k - 1))
			return len;
	}
	return c->n;
}

static bool memory_family(const struct aten_call *c, const char *base, unsigned eb,
			  struct aten_cost *o)
{
	uint64_t in = numel_sum(c, 0, c->n), out;

	if (!c->n || !in)
		return false;
	switch (o->family) {
	case ATEN_SOFTMAX:
		/* forward: read x, write y (5 FLOPs each: max, sub, exp, sum, div); backward: read dy and y, write dx */
		out = o->backward ? arg(c, 0)->numel : numel_max(c);
		o->flops = sat_mul(o->backward ? 4 : 5, out);
		o->bytes = sat_mul(eb, o->backward ? sat_mul(3, out) : sat_add(arg(c, 0)->numel, out));
		return true;
	case ATEN_NORM:
		/* the normalised input in and out, parameters and statistics once */
		out = o->backward ? arg(c, 0)->numel : arg(c, 0)->numel;
		o->flops = sat_mul(o->backward ? 8 : 4, out);
		o->bytes = sat_mul(eb, sat_add(in, out));
		return true;
	case ATEN_REDUCTION:
		o->flops = in;
		o->bytes = sat_mul(eb, sat_add(in, 1));
		return true;
	default:
		break;
	}
	if (!strncmp(base, "_foreach_", 9)) {
		out = numel_sum(c, 0, foreach_written(c));
		o->flops = strstr(base, "copy") || strstr(base, "zero") ? 0 : out;
	} else {
		out = numel_max(c);
		o->flops = name_in(base, copy_ops) ? 0 : out;
	}
	o->bytes = sat_mul(eb, sat_add(in, out));
	return true;
}

static enum aten_family family_of(const char *base, bool *backward)
{
	*backward = false;
	if (name_in(base, (const char *const[]){ "mm", "addmm", "bmm", "baddbmm", "matmul", "linear", NULL }))
		return ATEN_MATMUL;
	if (name_in(base, attention_bhsd) || name_in(base, attention_bshd))
		return ATEN_ATTENTION;
	if (name_in(base, attention_bwd_bhsd) || name_in(base, attention_bwd_bshd)) {
		*backward = true;
		return ATEN_ATTENTION;
	}
	if (name_in(base, softmax_ops))
		return ATEN_SOFTMAX;
	if (name_in(base, softmax_bwd_ops)) {
		*backward = true;
		return ATEN_SOFTMAX;
	}
	if (name_in(base, norm_ops))
		return ATEN_NORM;
	if (name_in(base, norm_bwd_ops)) {
		*backward = true;
		return ATEN_NORM;
	}
	if (name_in(base, reduction_ops))
		return ATEN_REDUCTION;
	if (!strncmp(base, "_foreach_", 9) || name_in(base, arith_ops) || name_in(base, copy_ops))
		return ATEN_ELEMENTWISE;
	return ATEN_OTHER;
}

bool aten_cost(const struct aten_call *c, unsigned elem_bytes, struct aten_cost *out)
{
	char base[128];

	memset(out, 0, sizeof(*out));
	if (strncmp(c->op, "aten::", 6))
		return false;
	base_name(c->op, base, sizeof(base));
	out->family = family_of(base, &out->backward);
	if (!c->has_sizes || out->family == ATEN_OTHER)
		return false;
	switch (out->family) {
	case ATEN_MATMUL:
		if (matmul_family(c, base, elem_bytes, out))
			return true;
		break;
	case ATEN_ATTENTION:
		if (attention_family(c, base, elem_bytes, out))
			return true;
		break;
	default:
		if (memory_family(c, base, elem_bytes, out))
			return true;
		break;
	}
	out->flops = out->bytes = 0;
	return false;
}
