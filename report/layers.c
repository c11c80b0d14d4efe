/*
 * layers.c: the report's per-layer card. Kernel and copy time per
 * measured step in each layer.N of the ops' NVTX paths ("step/forward/
 * layer.3/attn/softmax"; an activity without an op goes by its range's
 * path), split by the part under the layer (attn, ffn, the norms as one),
 * as stacked columns and a sortable table.
 */
#include "report/layers.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/grow.h"
#include "lib/human.h"
#include "lib/table.h"
#include "render/html.h"
#include "render/svg.h"
#include "report/page.h"

#define LAYER_PARTS 6        /* columns: the first five parts met, then "other" */
#define LAYER_MAX 4096       /* a larger layer index counts as outside the layers */

struct layer_split {
	size_t n_layers;
	char part[LAYER_PARTS][32];
	int n_parts;
	double *ns;              /* [layer][part][phase: forward, backward, other], per step */
	double outside;          /* per step: work in no layer */
	double total;
};

#define LAYER_NS(ls, l, p, ph) ((ls)->ns[((size_t)(l) * LAYER_PARTS + (size_t)(p)) * 3 + (size_t)(ph)])

/*
 * The layer number of a path component: "layer.3" and "layer_3" (the
 * built-in step's), and, for a PyTorch model recorded with --torch auto, a
 * module of a numbered container ("transformer.h.3", "layers.3",
 * "blocks.3": a name ending in "." and up to 4 digits); -1 otherwise.
 */
static long layer_number(const char *c, size_t len)
{
	size_t d = 0;

	while (d < len && d <= 4 && c[len - 1 - d] >= '0' && c[len - 1 - d] <= '9')
		d++;
	if (d == 0 || d > 4 || len < d + 2 || (c[len - 1 - d] != '.' && c[len - 1 - d] != '_'))
		return -1;
	if (c[len - 1 - d] == '_' && !(len == d + 6 && strncmp(c, "layer", 5) == 0))
		return -1;   /* "_N" only in "layer_N": "conv_1" is no layer */
	return strtol(c + len - d, NULL, 10);
}

/*
 * "step/forward/layer.3/attn/softmax" -> layer 3, part "attn";
 * "step/backward/GPT/transformer.h.3/mlp/c_fc" -> layer 3, part "mlp"; the
 * norms ("ln1", "ln_2", "rmsnorm", "norm2") are one part. -1 when no
 * component is a layer.
 */
static long layer_of(const char *path, char *part, size_t n)
{
	const char *c = path;

	while (c && *c) {
		const char *end = strchr(c, '/');
		size_t len = end ? (size_t)(end - c) : strlen(c);
		long layer = layer_number(c, len);

		if (layer >= 0) {
			const char *p = end ? end + 1 : "";
			size_t plen = strcspn(p, "/");

			snprintf(part, n, "%.*s", (int)plen, p);
			if (plen == 0)
				snprintf(part, n, "(layer)");
			else if (strncmp(part, "ln", 2) == 0 || strstr(part, "norm"))
				snprintf(part, n, "norm");
			return layer < LAYER_MAX ? layer : -1;
		}
		c = end ? end + 1 : NULL;
	}
	return -1;
}

static int layer_part_index(struct layer_split *ls, const char *name)
{
	for (int i = 0; i < ls->n_parts; i++)
		if (strcmp(ls->part[i], name) == 0)
			return i;
	if (ls->n_parts < LAYER_PARTS - 1) {
		snprintf(ls->part[ls->n_parts], sizeof(ls->part[0]), "%s", name);
		return ls->n_parts++;
	}
	if (ls->n_parts == LAYER_PARTS - 1)
		snprintf(ls->part[ls->n_parts++], sizeof(ls->part[0]), "other");
	return LAYER_PARTS - 1;
}

static double layer_part_ns(const struct layer_split *ls, size_t l, int p)
{
	return LAYER_NS(ls, l, p, 0) + LAYER_NS(ls, l, p, 1) + LAYER_NS(ls, l, p, 2);
}

/* The parts by their time over every layer, largest first ("other" stays last). */
static void layer_split_order(struct layer_split *ls)
{
	int n = ls->n_parts - (ls->n_parts == LAYER_PARTS), order[LAYER_PARTS];
	double total[LAYER_PARTS] = { 0 }, moved[LAYER_PARTS * 3];
	char names[LAYER_PARTS][32];

	for (int p = 0; p < ls->n_parts; p++) {
		order[p] = p;
		for (size_t l = 0; l < ls->n_layers; l++)
			total[p] += layer_part_ns(ls, l, p);
	}
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && total[order[j]] > total[order[j - 1]]; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	memcpy(names, ls->part, sizeof(names));
	for (int p = 0; p < ls->n_parts; p++)
		memcpy(ls->part[p], names[order[p]], sizeof(names[0]));
	for (size_t l = 0; l < ls->n_layers; l++) {
		memcpy(moved, &LAYER_NS(ls, l, 0, 0), sizeof(moved));
		for (int p = 0; p < ls->n_parts; p++)
			for (int ph = 0; ph < 3; ph++)
				LAYER_NS(ls, l, p, ph) = moved[order[p] * 3 + ph];
	}
}

/* What a path says for the breakdown, worked out once per path (a path of 4,095 ranges is 8 KiB). */
struct layer_of_path {
	long layer;                    /* -1: no layer */
	int phase;                     /* st_phase_of_path */
	char part[32];
};

/*
 * The layer, part and phase of an activity's path: its op's path (a string
 * id) or its range's (a path index), each looked up once in `slot` (per
 * string id, then per path index: 0 not yet, else 1 + index into `seen`).
 */
struct layer_cache {
	uint32_t *slot;
	struct layer_of_path *seen;
	size_t n, cap;
};

static const struct layer_of_path *layer_cached(struct layer_cache *lc, const struct replay *rp,
						 const struct replay_activity *a, const struct replay_op *op)
{
	bool by_op = op && op->path;
	size_t key = by_op ? op->path : rp->n_strings + (a->range >= 0 && (size_t)a->range < rp->n_ranges
							    ? rp->ranges[a->range].path : rp->n_paths);
	struct layer_of_path *l;
	const char *path;

	if (key <= rp->n_strings + rp->n_paths && lc->slot[key])
		return &lc->seen[lc->slot[key] - 1];
	if (ALLOC_GROW(lc->seen, lc->n + 1, lc->cap) < 0)
		return NULL;
	path = by_op ? replay_str(rp, op->path) : replay_activity_path(rp, a);
	l = &lc->seen[lc->n++];
	l->layer = layer_of(path, l->part, sizeof(l->part));
	l->phase = st_phase_of_path(path);
	if (key <= rp->n_strings + rp->n_paths)
		lc->slot[key] = (uint32_t)lc->n;
	return l;
}

/* Kernel and copy time per measured step by layer and part, from each activity's op path (else its range's). */
static int layer_split_compute(struct layer_split *ls, const struct page_data *d)
{
	const struct replay *rp = d->rp;
	size_t module_div = replay_module_step_divisor(rp, false);   /* layers are modules: their steps */
	struct layer_cache lc = { .slot = calloc(rp->n_strings + rp->n_paths + 2, sizeof(uint32_t)) };
	int ret = -1;

	memset(ls, 0, sizeof(*ls));
	if (!lc.slot)
		return error("out of memory for the layer breakdown");
	for (int pass = 0; pass < 2; pass++) {   /* the first pass counts the layers */
		for (size_t i = 0; i < rp->n_activities; i++) {
			const struct replay_activity *a = &rp->activities[i];
			const struct replay_op *op = replay_op(rp, a->op);
			const struct layer_of_path *l;
			double ns = (double)(a->end - a->start) / (double)module_div;

			if (!replay_counts_modules(rp, a->step, false))   /* layers are modules: their steps */
				continue;
			l = layer_cached(&lc, rp, a, op);
			if (!l) {
				error("out of memory for the layer breakdown");
				goto out;
			}
			if (pass == 0) {
				if (l->layer >= 0 && (size_t)l->layer >= ls->n_layers)
					ls->n_layers = (size_t)l->layer + 1;
				continue;
			}
			ls->total += ns;
			if (l->layer < 0) {
				ls->outside += ns;
				continue;
			}
			/* the op's phase when it has one, else its path's: forward, backward, or other */
			int p = op && *replay_str(rp, op->phase) ? st_phase_from_name(replay_str(rp, op->phase)) : l->phase;
			int ph = p == ST_PHASE_FORWARD ? 0 : p == ST_PHASE_BACKWARD ? 1 : 2;
			LAYER_NS(ls, l->layer, layer_part_index(ls, l->part), ph) += ns;
		}
		if (pass == 0) {
			if (ls->n_layers == 0) {
				ret = 0;
				goto out;
			}
			ls->ns = calloc(ls->n_layers * LAYER_PARTS * 3, sizeof(*ls->ns));
			if (!ls->ns) {
				error("out of memory for the layer breakdown");
				goto out;
			}
		}
	}
	layer_split_order(ls);
	ret = 0;
out:
	free(lc.slot);
	free(lc.seen);
	return ret;
}

/* Stacked columns, one per layer, a colour per part. */
static void layer_chart(FILE *out, const struct layer_split *ls)
{
	const double w = CHART_W, h = 200, left = 64, bottom = 26, top = 10;
	double max = 0, ticks[8], step, unit, cw = (w - left) / (double)ls->n_layers;
	const char *uname;
	char b[32], b1[32], b2[32];
	int nt;

	for (size_t l = 0; l < ls->n_layers; l++) {
		double sum = 0;
		for (int p = 0; p < ls->n_parts; p++)
			sum += layer_part_ns(ls, l, p);
		max = fmax(max, sum);
	}
	if (max <= 0)
		return;
	unit = human_time_unit(max, &uname);
	nt = svg_ticks_linear(0, max / unit, 4, ticks, 8, &step);
	if (nt > 0 && nt < 8 && ticks[nt - 1] * unit < max) {   /* end on the tick above the tallest column */
		ticks[nt] = ticks[nt - 1] + step;
		nt++;
	}
	max = nt > 0 ? ticks[nt - 1] * unit : max;
	svg_begin(out, (int)w, (int)h, "Kernel time per layer, by part");
	for (int i = 0; i < nt; i++) {
		double y = h - bottom - (h - bottom - top) * ticks[i] * unit / max;
		svg_line(out, left, y, w, y, "#eaecf0", 1, NULL);
		svg_text(out, left - 6, y + 4, SVG_END, 11, "#667085", NULL, "%s %s",
			 svg_fmt_tick(b, sizeof(b), ticks[i], step), uname);
	}
	for (size_t l = 0; l < ls->n_layers; l++) {
		double y = h - bottom, x = left + cw * (double)l + cw * 0.14;

		for (int p = 0; p < ls->n_parts; p++) {
			double ns = layer_part_ns(ls, l, p), bh = (h - bottom - top) * ns / max;
			if (ns <= 0)
				continue;
			y -= bh;
			page_tip_rect(out, x, y, cw * 0.72, bh, svg_series_color(p), "layer.%zu %s: %s per step\n"
				 "forward %s, backward %s", l, ls->part[p], human_time(b, sizeof(b), ns),
				 human_time(b1, sizeof(b1), LAYER_NS(ls, l, p, 0)),
				 human_time(b2, sizeof(b2), LAYER_NS(ls, l, p, 1)));
		}
		if (cw >= 18 || l % (size_t)ceil(18 / cw) == 0)
			svg_text(out, left + cw * ((double)l + 0.5), h - 8, SVG_MIDDLE, 11, "#667085", NULL, "%zu", l);
	}
	svg_end(out);
	fputs("<div class=\"legend\">", out);
	for (int p = 0; p < ls->n_parts; p++)
		fprintf(out, "<span><i style=\"background:%s\"></i>%s</span>", svg_series_color(p), ls->part[p]);
	fputs("</div>\n", out);
}

int page_layers(FILE *out, const struct page_data *d)
{
	struct layer_split ls;
	struct report *r = NULL;
	struct table *t;
	char col[64], lead[512], b1[32], b2[32];
	int rc = -1;

	if (layer_split_compute(&ls, d) < 0)
		goto out;
	snprintf(lead, sizeof(lead), "Kernel and copy time per measured step in each layer.N of the ops' NVTX paths, "
		 "split by the part under the layer (norms together); %s per step is outside every layer "
		 "(embedding, head, loss, optimizer). Reproduce: steptrace summary %s --range 'layer.*/attn'",
		 human_time(b1, sizeof(b1), ls.outside), page_base_name(d->rp->path));
	page_section_begin(out, d, "layers", "Per layer", lead);
	if (ls.n_layers == 0) {
		fputs("<p class=\"muted\">No op or range path names a layer (layer.N).</p>\n", out);
		page_section_end(out);
		rc = 0;
		goto out;
	}
	layer_chart(out, &ls);
	r = report_new();
	t = report_add_table(r, "layers", NULL);
	table_add_column(t, "Layer", COL_STR, 0);
	for (int p = 0; p < ls.n_parts; p++) {
		snprintf(col, sizeof(col), "%s (us)", ls.part[p]);
		table_add_column(t, col, COL_FLOAT, 3);
	}
	table_add_column(t, "Forward (us)", COL_FLOAT, 3);
	table_add_column(t, "Backward (us)", COL_FLOAT, 3);
	table_add_column(t, "Total (us)", COL_FLOAT, 3);
	table_add_column(t, "Share (%)", COL_FLOAT, 1);
	for (size_t l = 0; l < ls.n_layers; l++) {
		double fwd = 0, bwd = 0, sum = 0;
		table_row(t);
		snprintf(col, sizeof(col), "layer.%zu", l);
		table_str(t, col);
		for (int p = 0; p < ls.n_parts; p++) {
			table_float(t, layer_part_ns(&ls, l, p) / 1e3);
			fwd += LAYER_NS(&ls, l, p, 0);
			bwd += LAYER_NS(&ls, l, p, 1);
			sum += layer_part_ns(&ls, l, p);
		}
		table_float(t, fwd / 1e3);
		table_float(t, bwd / 1e3);
		table_float(t, sum / 1e3);
		table_float(t, ls.total > 0 ? 100.0 * sum / ls.total : 0.0);
	}
	snprintf(col, sizeof(col), "%slayers-table", d->prefix);
	if (html_report_tables(out, r, &(struct html_tables){ .name = "layers", .id = col, .visible = 48 }) < 0)
		goto out;
	fputs("<p class=\"footnote\">", out);
	html_printf(out, "All layers: %s of %s per step.", human_time(b1, sizeof(b1), ls.total - ls.outside),
		    human_time(b2, sizeof(b2), ls.total));
	fputs("</p>\n", out);
	page_section_end(out);
	rc = 0;
out:
	report_free(r);
	free(ls.ns);
	return rc;
}
