/* attention_sweep.c: see attention_sweep.h. */
#include "model/attention_sweep.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/error.h"
#include "lib/options.h"

#define GRID_MAX_LIST 16

const char *const attn_part_names[] = { "scores", "softmax", "av", "flash", NULL };

/* One list item as an integer in [1, max]; what names the option. */
static int parse_size_item(const char *s, const char *what, int max, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < 1 || v > max)
		return error("option '%s' expects whole numbers from 1 to %d, not '%s'", what, max, s);
	*out = (int)v;
	return 0;
}

/* A list of sizes into v; the count, or -1 with an error line. */
static int size_list(const char *s, const char *def, const char *what, int max, int *v)
{
	const char *items[GRID_MAX_LIST];
	char *storage;
	int n = split_list(s ? s : def, items, GRID_MAX_LIST, &storage);

	for (int i = 0; i < n; i++)
		if (parse_size_item(items[i], what, max, &v[i])) {
			n = -1;
			break;
		}
	free(storage);
	return n;
}

/* A list of names of `names` into v; the count, or -1 with an error line. */
static int choice_list_parse(const char *s, const char *def, const char *const *names,
			     const char *what, int *v)
{
	const char *items[GRID_MAX_LIST];
	char *storage;
	int n = split_list(s ? s : def, items, GRID_MAX_LIST, &storage);

	for (int i = 0; i < n; i++)
		if (parse_choice(items[i], names, what, &v[i])) {
			n = -1;
			break;
		}
	free(storage);
	return n;
}

int attn_grid_configs(const struct attn_grid *g, struct attn_config **out)
{
	int batch[GRID_MAX_LIST], heads[GRID_MAX_LIST], dh[GRID_MAX_LIST], seq[GRID_MAX_LIST];
	int prec[GRID_MAX_LIST], impl[GRID_MAX_LIST];
	int nb, nh, nd, ns, np, ni, k = 0;
	struct attn_config *c;

	*out = NULL;
	if ((np = choice_list_parse(g->precision, "fp32", st_precision_names, "--precision", prec)) < 0 ||
	    (ni = choice_list_parse(g->impl, "naive", st_attention_names, "--impl", impl)) < 0 ||
	    (nb = size_list(g->batch, "8", "--batch", 65535, batch)) < 0 ||
	    (nh = size_list(g->heads, "1", "--heads", 65535, heads)) < 0 ||
	    (nd = size_list(g->d_head, "16,32,64,128", "--d-head", 1024, dh)) < 0 ||
	    (ns = size_list(g->seq, "256,1024,4096,8192,16384", "--seq", 1 << 20, seq)) < 0)
		return -1;
	for (int b = 0; b < nb; b++)
		for (int h = 0; h < nh; h++) {
			if ((long)batch[b] * heads[h] > 65535)
				return error("batch %d x heads %d is more than 65,535 heads in all",
					     batch[b], heads[h]);
			/* every FLOP count fits in 64 bits (the backward's is under 5 B H T^2 d) */
			for (int d = 0; d < nd; d++)
				for (int s = 0; s < ns; s++)
					if ((double)batch[b] * heads[h] * seq[s] * seq[s] * dh[d] >
					    0x1p60)
						return error("batch %d x heads %d x seq %d^2 x d_head %d "
							     "is too large to count its FLOPs",
							     batch[b], heads[h], seq[s], dh[d]);
		}
	c = malloc((size_t)np * ni * nb * nh * nd * ns * sizeof(*c));
	if (!c)
		return error("out of memory for the attention grid");
	for (int p = 0; p < np; p++)
		for (int i = 0; i < ni; i++)
			for (int b = 0; b < nb; b++)
				for (int h = 0; h < nh; h++)
					for (int d = 0; d < nd; d++)
						for (int s = 0; s < ns; s++)
							c[k++] = (struct attn_config){
								.batch = batch[b], .heads = heads[h],
								.d_head = dh[d], .seq = seq[s],
								.precision = prec[p], .impl = impl[i],
								.causal = g->causal,
							};
	*out = c;
	return k;
}

const char *attn_config_name(const struct attn_config *c, char *buf, size_t len)
{
	snprintf(buf, len, "attn d%d seq%d b%d h%d %s %s%s", c->d_head, c->seq, c->batch, c->heads,
		 st_name(st_precision_names, c->precision), st_name(st_attention_names, c->impl),
		 c->causal ? "" : " noncausal");
	return buf;
}

enum st_dtype attn_config_dtype(const struct attn_config *c)
{
	return c->precision == ST_BF16 ? ST_DT_BF16 : ST_DT_F32;
}

struct attn_shape attn_config_shape(const struct attn_config *c)
{
	return (struct attn_shape){
		.bh = (uint64_t)c->batch * c->heads, .t = (uint64_t)c->seq, .d = (uint64_t)c->d_head,
		.a = c->precision == ST_BF16 ? 2 : 4, .causal = c->causal,
	};
}

struct attn_cost attn_part_cost(const struct attn_shape *s, enum attn_part part, bool backward)
{
	uint64_t bh = s->bh, t = s->t, d = s->d, a = s->a;
	uint64_t tt = bh * t * t, td = bh * t * d, pairs = bh * (s->causal ? t * (t + 1) / 2 : t * t);
	struct attn_cost k = { 0, 0 };

	switch (part) {
	case ATTN_SCORES:   /* s = q k^T; backward dq = ds k, dk = ds^T q */
		k.flops = (backward ? 4 : 2) * tt * d;
		k.bytes = backward ? tt * a + 4 * td * a : 2 * td * a + tt * a;
		break;
	case ATTN_SOFTMAX:  /* p = softmax(scale s); backward ds from dp and p */
		k.flops = (backward ? 4 : 5) * tt;
		k.bytes = (backward ? 3 : 2) * tt * a;
		break;
	case ATTN_AV:       /* o = p v; backward dp = do v^T, dv = p^T do */
		k.flops = (backward ? 4 : 2) * tt * d;
		k.bytes = backward ? 2 * tt * a + 3 * td * a : tt * a + 2 * td * a;
		break;
	case ATTN_FLASH:
		if (backward) {
			k.flops = pairs * (10 * d + 5) + 2 * td;
			k.bytes = 8 * td * a + 12 * bh * t;
		} else {
			k.flops = pairs * (4 * d + 5);
			k.bytes = 4 * td * a + 4 * bh * t;
		}
		break;
	case ATTN_PARTS:
		break;
	}
	return k;
}

double attn_useful_flops(const struct attn_shape *s, bool backward)
{
	double f = 4.0 * (double)s->bh * (double)s->t * (double)s->t * (double)s->d;

	if (s->causal)
		f /= 2;
	return backward ? 2.5 * f : f;
}
