/*
 * memory_svg.c: the active-memory timeline chart (see memory_svg.h): live bytes
 * stacked by category per pixel column, phase bands, step boundaries, OOMs,
 * the driver's total as a dashed line and the peak annotated.
 */
#include "render/memory_svg.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/table.h"
#include "render/svg.h"

/* Bottom-to-top stacking: what lives longest first, as memory_viz tends to show. */
static const int stack_order[ST_MEM_CATEGORY_COUNT] = {
	ST_MEM_PARAMETER, ST_MEM_OPTIMIZER, ST_MEM_GRADIENT, ST_MEM_INPUT,
	ST_MEM_WORKSPACE, ST_MEM_ACTIVATION, ST_MEM_TEMPORARY, ST_MEM_UNKNOWN,
};

/* A phase band's fill, by enum st_phase; other's is never drawn. */
static const char *phase_fill(int p)
{
	static const char *const fills[ST_PHASE_COUNT] = {
		[ST_PHASE_FORWARD] = "#e8f0fa", [ST_PHASE_BACKWARD] = "#fcefe3",
		[ST_PHASE_OPTIMIZER] = "#f3ecf6", [ST_PHASE_ZERO_GRAD] = "#eaf5e8",
		[ST_PHASE_DATA] = "#fbf5df", [ST_PHASE_OTHER] = "#f4f4f4",
	};

	return p >= 0 && p < ST_PHASE_COUNT ? fills[p] : fills[ST_PHASE_OTHER];
}

struct chart {
	FILE *out;
	const struct replay *rp;
	const struct mem_timeline *tl;
	uint64_t t0, t1;                /* window, bundle ns */
	uint64_t origin;                /* the bundle's first event: every time printed counts from it */
	double x0, x1, y0, y1;          /* plot area: x0 left, y0 bottom */
	struct svg_scale xs, ys;
	double ymax;
	bool phase_drawn[ST_PHASE_COUNT];   /* a band of that phase is on the chart */
};

/*
 * Per-pixel-column samples of the per-category live bytes: in each column,
 * the state at its highest total (so no peak is lost), else the state carried
 * from before. cols * ST_MEM_CATEGORY_COUNT values.
 */
static int sample_columns(const struct mem_timeline *tl, uint64_t t0, uint64_t t1, size_t cols,
			  uint64_t *out)
{
	uint64_t cat[ST_MEM_CATEGORY_COUNT] = { 0 };
	double span = (double)(t1 - t0);
	size_t i = 0;

	/* the state at t0 */
	for (; i < tl->n_points && tl->points[i].t < t0; i++)
		if (tl->points[i].block >= 0)
			cat[tl->points[i].category] += (uint64_t)tl->points[i].delta;
	for (size_t c = 0; c < cols; c++) {
		uint64_t *dst = &out[c * ST_MEM_CATEGORY_COUNT], best = 0;
		bool any = false;

		for (; i < tl->n_points && tl->points[i].t <= t1; i++) {
			const struct mem_point *pt = &tl->points[i];
			size_t pc = span > 0 ? (size_t)((double)(pt->t - t0) / span * (double)cols) : 0;

			if (pc > c && pc < cols)
				break;
			if (pt->block >= 0)
				cat[pt->category] += (uint64_t)pt->delta;
			/* equal totals: the later state */
			if (!any || pt->live >= best) {
				best = pt->live;
				any = true;
				memcpy(dst, cat, sizeof(cat));
			}
		}
		if (!any)
			memcpy(dst, cat, sizeof(cat));
	}
	return 0;
}

/* The x of bundle time t (clamped to the plot). */
static double xpos(const struct chart *ch, uint64_t t)
{
	return svg_scale_map(&ch->xs, t >= ch->origin ? (double)(t - ch->origin) : 0);
}

/*
 * Phase bands: from the phase ranges (forward, backward, ... not inside
 * another phase's; replay_range_phase) when there are any, else from runs
 * of the points' phases.
 */
static void draw_phases(struct chart *ch)
{
	const struct replay *rp = ch->rp;
	const struct mem_timeline *tl = ch->tl;
	bool from_ranges = false;

	for (size_t i = 0; i < rp->n_ranges; i++) {
		const char *name = replay_str(rp, rp->ranges[i].name);
		int p = replay_range_phase(rp, i);

		if (p < 0 || rp->ranges[i].end < ch->t0 || rp->ranges[i].start > ch->t1)
			continue;
		from_ranges = true;
		ch->phase_drawn[p] = true;
		double xa = xpos(ch, rp->ranges[i].start > ch->t0 ? rp->ranges[i].start : ch->t0);
		double xb = xpos(ch, rp->ranges[i].end < ch->t1 ? rp->ranges[i].end : ch->t1);
		svg_rect(ch->out, xa, ch->y1, xb - xa, ch->y0 - ch->y1, phase_fill(p), NULL);
		if (xb - xa > svg_text_width(name, 11) + 6)
			svg_text(ch->out, (xa + xb) / 2, ch->y1 + 14, SVG_MIDDLE, 11, "#667", NULL, "%s", name);
	}
	if (from_ranges)
		return;
	/* runs of equal phase among the points inside the window */
	size_t i = 0;
	while (i < tl->n_points && tl->points[i].t < ch->t0)
		i++;
	while (i < tl->n_points && tl->points[i].t <= ch->t1) {
		size_t j = i;
		int p = tl->points[i].phase;
		uint64_t end;

		while (j < tl->n_points && tl->points[j].t <= ch->t1 && tl->points[j].phase == p)
			j++;
		end = j < tl->n_points && tl->points[j].t <= ch->t1 ? tl->points[j].t : tl->points[j - 1].t;
		if (p != ST_PHASE_OTHER) {
			const char *name = st_phase_name(p);

			ch->phase_drawn[p] = true;
			double xa = xpos(ch, tl->points[i].t);
			double xb = xpos(ch, end);

			svg_rect(ch->out, xa, ch->y1, xb - xa, ch->y0 - ch->y1, phase_fill(p), NULL);
			if (xb - xa > svg_text_width(name, 11) + 6)
				svg_text(ch->out, (xa + xb) / 2, ch->y1 + 14, SVG_MIDDLE, 11, "#667", NULL, "%s", name);
		}
		i = j;
	}
}

static void draw_axes(struct chart *ch, double unit, const char *uname, double tunit, const char *tname)
{
	double ticks[32], step;
	char buf[32];
	int n;

	n = svg_ticks_linear(0, ch->ymax / unit, 7, ticks, 32, &step);
	for (int i = 0; i < n; i++) {
		double y = svg_scale_map(&ch->ys, ticks[i] * unit);

		svg_line(ch->out, ch->x0, y, ch->x1, y, ticks[i] == 0 ? "#888" : "#e2e2e2", 1, NULL);
		svg_text(ch->out, ch->x0 - 8, y + 4, SVG_END, 12, "#444", NULL, "%s",
			 svg_fmt_tick(buf, sizeof(buf), ticks[i], step));
	}
	{
		char rot[80];

		/* the y label, rotated about its own anchor */
		snprintf(rot, sizeof(rot), "transform=\"rotate(-90 20 %.1f)\"", (ch->y0 + ch->y1) / 2);
		svg_text(ch->out, 20, (ch->y0 + ch->y1) / 2, SVG_MIDDLE, 13, "#333", rot, "live memory (%s)", uname);
	}
	n = svg_ticks_linear((double)(ch->t0 - ch->origin) / tunit, (double)(ch->t1 - ch->origin) / tunit, 10,
			     ticks, 32, &step);
	for (int i = 0; i < n; i++) {
		double x = svg_scale_map(&ch->xs, ticks[i] * tunit);

		svg_line(ch->out, x, ch->y0, x, ch->y0 + 5, "#888", 1, NULL);
		svg_text(ch->out, x, ch->y0 + 19, SVG_MIDDLE, 12, "#444", NULL, "%s",
			 svg_fmt_tick(buf, sizeof(buf), ticks[i], step));
	}
	svg_line(ch->out, ch->x0, ch->y0, ch->x1, ch->y0, "#888", 1, NULL);
	svg_text(ch->out, (ch->x0 + ch->x1) / 2, ch->y0 + 40, SVG_MIDDLE, 13, "#333", NULL,
		 "time (%s since the bundle's first event)", tname);
}

static void draw_peak(struct chart *ch)
{
	const struct mem_timeline *tl = ch->tl;
	const struct mem_peak *pk = &tl->peak;
	uint64_t t = pk->t, live = pk->bytes;
	const char *op = "";
	double x, y, w;
	char b1[32], label[400];

	if (pk->point >= 0 && pk->block >= 0)
		op = memory_point_op(ch->rp, tl, pk->point);
	/* the highest allocation inside the window, when the peak is outside it */
	if (pk->point < 0 || pk->t < ch->t0 || pk->t > ch->t1) {
		int32_t p = -1;

		for (size_t i = 0; i < tl->n_points; i++)
			if (tl->points[i].t >= ch->t0 && tl->points[i].t <= ch->t1 &&
			    tl->points[i].kind == ST_ALLOC && (p < 0 || tl->points[i].live > tl->points[p].live))
				p = (int32_t)i;
		if (p < 0)
			return;
		t = tl->points[p].t;
		live = tl->points[p].live;
		op = memory_point_op(ch->rp, tl, p);
	}
	x = xpos(ch, t);
	y = svg_scale_map(&ch->ys, (double)live);
	svg_line(ch->out, x, y, x, ch->y0, "#c0392b", 1.2, "stroke-dasharray=\"4 3\"");
	svg_line(ch->out, ch->x0, y, ch->x1, y, "#c0392b", 0.8, "stroke-dasharray=\"2 4\" opacity=\"0.6\"");
	fprintf(ch->out, "<circle cx=\"%.2f\" cy=\"%.2f\" r=\"4.5\" fill=\"#c0392b\" stroke=\"#fff\" stroke-width=\"1.5\"/>\n", x, y);
	/* the time as the text reports print it: ms since the bundle's first event */
	snprintf(label, sizeof(label), "peak %s at %.3f ms%s%s", human_bytes(b1, sizeof(b1), (double)live),
		 (double)(t - ch->origin) / 1e6, *op ? " \xe2\x80\x94 " : "", op);
	w = svg_text_width(label, 12.5) + 12;
	{
		/* the label box above the point, kept inside the plot */
		double bx = x - w / 2, by = y - 30;

		if (bx < ch->x0 + 2)
			bx = ch->x0 + 2;
		if (bx + w > ch->x1 - 2)
			bx = ch->x1 - 2 - w;
		if (by < ch->y1 + 18)
			by = y + 10;
		svg_rect(ch->out, bx, by, w, 20, "#ffffff", "stroke=\"#c0392b\" stroke-width=\"1\" rx=\"3\" opacity=\"0.95\"");
		svg_text(ch->out, bx + w / 2, by + 14.5, SVG_MIDDLE, 12.5, "#c0392b", "font-weight=\"bold\" class=\"peak-label\"",
			 "%s", label);
	}
}

static void draw_legend(struct chart *ch, const uint64_t *at_peak, const bool *present, bool driver_line)
{
	double lx = ch->x1 + 24, ly = ch->y1 + 4;
	char buf[32];

	svg_group_begin(ch->out, "class=\"legend\"");
	svg_text(ch->out, lx, ly + 8, SVG_START, 13, "#222", "font-weight=\"bold\"", "Category");
	svg_text(ch->out, lx + 170, ly + 8, SVG_END, 11, "#666", NULL, "at peak");
	ly += 26;
	for (int k = ST_MEM_CATEGORY_COUNT - 1; k >= 0; k--) {
		int c = stack_order[k];

		if (!present[c])
			continue;
		svg_rect(ch->out, lx, ly - 10, 13, 13, svg_mem_color(c), "rx=\"2\"");
		svg_text(ch->out, lx + 20, ly + 1, SVG_START, 12.5, "#222", NULL, "%s", st_mem_category_name(c));
		svg_text(ch->out, lx + 170, ly + 1, SVG_END, 11.5, "#555", NULL, "%s",
			 human_bytes(buf, sizeof(buf), (double)at_peak[c]));
		ly += 22;
	}
	if (driver_line) {
		ly += 6;
		svg_line(ch->out, lx, ly - 4, lx + 13, ly - 4, "#333", 1.5, "stroke-dasharray=\"5 3\"");
		svg_text(ch->out, lx + 20, ly, SVG_START, 12, "#222", NULL, "cudaMalloc total");
		ly += 22;
	}
	ly += 8;
	/* a training step's three phases always, the others when the chart has them */
	for (int p = 0; p < ST_PHASE_OTHER; p++) {
		if (p > ST_PHASE_OPTIMIZER && !ch->phase_drawn[p])
			continue;
		svg_rect(ch->out, lx, ly - 10, 13, 13, phase_fill(p), "stroke=\"#ccd\" stroke-width=\"0.8\"");
		svg_text(ch->out, lx + 20, ly + 1, SVG_START, 12, "#444", NULL, "%s phase", st_phase_name(p));
		ly += 20;
	}
	svg_group_end(ch->out);
}

/* The driver view's total as a dashed step line, sampled per column like the areas. */
static int draw_driver_line(struct chart *ch, const struct mem_timeline *drv, size_t cols, double colw)
{
	uint64_t *s = malloc(cols * ST_MEM_CATEGORY_COUNT * sizeof(*s));

	if (!s || sample_columns(drv, ch->t0, ch->t1, cols, s) < 0) {
		free(s);
		return -1;
	}
	svg_path_begin(ch->out, NULL, "#333", 1.5, "stroke-dasharray=\"5 3\" class=\"driver-total\"");
	for (size_t c = 0; c < cols; c++) {
		uint64_t tot = 0;

		for (int k = 0; k < ST_MEM_CATEGORY_COUNT; k++)
			tot += s[c * ST_MEM_CATEGORY_COUNT + k];
		double y = svg_scale_map(&ch->ys, (double)tot);

		if (c == 0)
			svg_path_move(ch->out, ch->x0, y);
		else
			svg_path_line(ch->out, ch->x0 + c * colw, y);
		svg_path_line(ch->out, ch->x0 + (c + 1) * colw, y);
	}
	svg_path_end(ch->out);
	free(s);
	return 0;
}

/* "step 1" when [t0, t1] is exactly a step's span, else "". */
static const char *window_name(const struct replay *rp, uint64_t t0, uint64_t t1, char *buf, size_t len)
{
	buf[0] = '\0';
	for (size_t s = 0; s < rp->n_steps; s++)
		if (rp->steps[s].start == t0 && rp->steps[s].end == t1)
			snprintf(buf, len, "step %" PRIu32 "%s", rp->steps[s].index,
				 rp->steps[s].warmup ? " (warm-up)" : "");
	return buf;
}


/*
 * What `record -- COMMAND` ran, for a title: the command after " -- " (the
 * recorder's own options left out), each word that is a path by its last
 * part (python3 gpt_train.py), without the "[pid N: ...]" that follows,
 * cut in the middle to 80 characters.
 */
static const char *program_of(const char *line, char *buf, size_t len)
{
	const char *p = strstr(line, " -- "), *end;
	char whole[380];
	size_t n = 0;

	p = p ? p + 4 : line;
	end = p + strcspn(p, "[");
	while (end > p && end[-1] == ' ')
		end--;
	while (p < end && n + 1 < sizeof(whole)) {
		const char *w = p, *we = p + strcspn(p, " "), *slash;

		if (we > end)
			we = end;
		for (slash = w; slash < we; slash++)   /* a path's last part, unless it ends with '/' */
			if (*slash == '/' && slash + 1 < we)
				w = slash + 1;
		while (w < we && n + 1 < sizeof(whole))
			whole[n++] = *w++;
		p = we;
		while (p < end && *p == ' ' && n + 1 < sizeof(whole)) {
			whole[n++] = ' ';
			p++;
		}
	}
	whole[n] = '\0';
	p = table_clip_middle(whole, 80, buf, len);
	if (p == whole)
		snprintf(buf, len, "%s", whole);
	return buf;
}

/* The highest live total in [t0, t1], what was live at t0 included. */
static uint64_t window_peak(const struct mem_timeline *tl, uint64_t t0, uint64_t t1)
{
	int32_t p = t0 ? mem_timeline_point_at(tl, t0 - 1) : -1;
	uint64_t top = p >= 0 ? tl->points[p].live : 0;

	for (size_t i = (size_t)(p + 1); i < tl->n_points && tl->points[i].t <= t1; i++)
		top = tl->points[i].live > top ? tl->points[i].live : top;
	return top;
}

static size_t window_allocs(const struct mem_timeline *tl, uint64_t t0, uint64_t t1)
{
	size_t n = 0;

	for (size_t i = 0; i < tl->n_points; i++)
		n += tl->points[i].kind == ST_ALLOC && tl->points[i].t >= t0 && tl->points[i].t <= t1;
	return n;
}

int memory_svg_write(FILE *out, const struct replay *rp, const struct mem_timeline *tl_in,
		     uint64_t t0, uint64_t t1, int width, int height)
{
	struct mem_timeline own, drv;
	const struct mem_timeline *tl = tl_in;
	struct chart ch = { .out = out, .rp = rp };
	uint64_t *samples = NULL, at_peak[ST_MEM_CATEGORY_COUNT] = { 0 }, top = 0;
	bool present[ST_MEM_CATEGORY_COUNT] = { false };
	double unit, tunit, colw;
	const char *uname, *tname;
	size_t cols;
	char b1[32], b2[32], b3[48], cmd[400];
	int rc = -1;

	if (width < 400)
		width = 400;
	if (height < 250)
		height = 250;
	if (!tl) {
		if (mem_timeline_build(&own, rp, MEM_VIEW_MODEL) < 0)
			return -1;
		tl = &own;
	}
	if (mem_timeline_build(&drv, rp, MEM_VIEW_DRIVER) < 0)
		goto out_own;
	if (t0 == 0 && t1 == 0) {
		t0 = tl->n_points ? tl->points[0].t : rp->t_min;
		t1 = tl->n_points ? tl->points[tl->n_points - 1].t : rp->t_max;
		if (rp->n_steps) {
			t0 = t0 < rp->steps[0].start ? t0 : rp->steps[0].start;
			t1 = t1 > rp->steps[rp->n_steps - 1].end ? t1 : rp->steps[rp->n_steps - 1].end;
		}
	}
	if (t1 <= t0)
		t1 = t0 + 1;
	ch.t0 = t0;
	ch.t1 = t1;
	ch.tl = tl;
	ch.x0 = 78;
	ch.x1 = width - 220;
	ch.y1 = 62;
	ch.y0 = height - 58;
	cols = (size_t)(ch.x1 - ch.x0);
	colw = (ch.x1 - ch.x0) / (double)cols;
	samples = malloc(cols * ST_MEM_CATEGORY_COUNT * sizeof(*samples));
	if (!samples || sample_columns(tl, t0, t1, cols, samples) < 0) {
		error("out of memory for the memory chart");
		goto out;
	}
	for (size_t c = 0; c < cols; c++) {
		uint64_t tot = 0;

		for (int k = 0; k < ST_MEM_CATEGORY_COUNT; k++) {
			tot += samples[c * ST_MEM_CATEGORY_COUNT + k];
			present[k] |= samples[c * ST_MEM_CATEGORY_COUNT + k] != 0;
		}
		top = tot > top ? tot : top;
	}
	for (size_t i = 0; i < drv.n_points; i++)
		if (drv.points[i].t >= t0 && drv.points[i].t <= t1 && drv.points[i].live > top)
			top = drv.points[i].live;
	ch.ymax = top ? (double)top * 1.12 : 1024.0 * 1024;
	unit = human_byte_unit(ch.ymax, &uname);
	{
		double step, ticks[32];
		int n = svg_ticks_linear(0, ch.ymax / unit, 7, ticks, 32, &step);
		/* round the axis up to the next tick so the top gridline closes the plot */
		if (n > 0 && ticks[n - 1] * unit < ch.ymax)
			ch.ymax = (ticks[n - 1] + step) * unit;
	}
	/* the axis counts from the bundle's first event, as every report does */
	ch.origin = rp->t_min < t0 ? rp->t_min : t0;
	tunit = human_time_unit((double)(t1 - ch.origin), &tname);
	svg_scale_linear(&ch.xs, (double)(t0 - ch.origin), (double)(t1 - ch.origin), ch.x0, ch.x1);
	svg_scale_linear(&ch.ys, 0, ch.ymax, ch.y0, ch.y1);
	if (tl->peak.point >= 0)
		memcpy(at_peak, tl->peak.by_category, sizeof(at_peak));

	svg_begin(out, width, height, "Active memory timeline");
	svg_rect(out, 0, 0, width, height, "#ffffff", NULL);
	{
		const struct replay_config *c = &rp->run.config;

		if (rp->run.has_config && *c->model && c->d_model)   /* the built-in model (a program's has none) */
			svg_text(out, ch.x0, 26, SVG_START, 17, "#111", "font-weight=\"bold\"",
				 "Active memory \xe2\x80\x94 %s, ctx %u, batch %u, %s, %s", c->model, c->ctx,
				 c->batch, c->precision_name, c->mode_name);
		else if (*rp->run.command_line)   /* a program of the user's: its command, cut to fit */
			svg_text(out, ch.x0, 26, SVG_START, 17, "#111", "font-weight=\"bold\"", "Active memory \xe2\x80\x94 %s",
				 program_of(rp->run.command_line, cmd, sizeof(cmd)));
		else
			svg_text(out, ch.x0, 26, SVG_START, 17, "#111", "font-weight=\"bold\"", "Active memory timeline");
		window_name(rp, t0, t1, b3, sizeof(b3));
		svg_text(out, ch.x0, 46, SVG_START, 12.5, "#555", NULL,
			 "%s, live bytes stacked by category; %s%speak %s; %zu allocations over %s",
			 mem_view_name(tl->view), b3, *b3 ? ": " : "",
			 human_bytes(b1, sizeof(b1), (double)window_peak(tl, t0, t1)), window_allocs(tl, t0, t1),
			 human_time(b2, sizeof(b2), (double)(t1 - t0)));
	}
	draw_phases(&ch);
	draw_axes(&ch, unit, uname, tunit, tname);

	/* the stacked areas, bottom category first */
	{
		uint64_t *base = calloc(cols, sizeof(*base));

		if (!base) {
			error("out of memory for the memory chart");
			goto out;
		}
		for (int k = 0; k < ST_MEM_CATEGORY_COUNT; k++) {
			int c = stack_order[k];
			char attrs[64];

			if (!present[c])
				continue;
			snprintf(attrs, sizeof(attrs), "class=\"area-%s\" fill-opacity=\"0.9\"", st_mem_category_name(c));
			svg_path_begin(out, svg_mem_color(c), NULL, 0, attrs);
			for (size_t i = 0; i < cols; i++) {
				double y = svg_scale_map(&ch.ys, (double)(base[i] + samples[i * ST_MEM_CATEGORY_COUNT + c]));
				if (i == 0)
					svg_path_move(out, ch.x0, y);
				else
					svg_path_line(out, ch.x0 + i * colw, y);
				svg_path_line(out, ch.x0 + (i + 1) * colw, y);
			}
			for (size_t i = cols; i-- > 0;) {
				double y = svg_scale_map(&ch.ys, (double)base[i]);
				svg_path_line(out, ch.x0 + (i + 1) * colw, y);
				svg_path_line(out, ch.x0 + i * colw, y);
			}
			svg_path_close(out);
			svg_path_end(out);
			for (size_t i = 0; i < cols; i++)
				base[i] += samples[i * ST_MEM_CATEGORY_COUNT + c];
		}
		free(base);
	}
	if (drv.n_points && draw_driver_line(&ch, &drv, cols, colw) < 0) {
		error("out of memory for the memory chart");
		goto out;
	}
	/* recorded OOMs */
	for (size_t i = 0; i < tl->n_points; i++) {
		const struct mem_point *pt = &tl->points[i];

		if (pt->kind != ST_OOM || pt->t < t0 || pt->t > t1)
			continue;
		double x = xpos(&ch, pt->t);
		svg_line(out, x, ch.y1, x, ch.y0, "#b00020", 2, NULL);
		svg_text(out, x - 4, ch.y1 + 30, SVG_END, 12, "#b00020", "font-weight=\"bold\"", "OOM");
	}
	/* step boundaries along the bottom of the plot */
	for (size_t i = 0; i < rp->n_steps; i++) {
		const struct replay_step *st = &rp->steps[i];

		if (st->start < t0 || st->start > t1)
			continue;
		double x = xpos(&ch, st->start);
		svg_line(out, x, ch.y1, x, ch.y0, "#777", 1, "stroke-dasharray=\"1 3\"");
		svg_text(out, x + 4, ch.y1 + 30, SVG_START, 11, "#555", NULL, "step %" PRIu32 "%s", st->index,
			 st->warmup ? " (warm-up)" : "");
	}
	draw_peak(&ch);
	svg_rect(out, ch.x0, ch.y1, ch.x1 - ch.x0, ch.y0 - ch.y1, NULL, "stroke=\"#bbb\" stroke-width=\"1\"");
	draw_legend(&ch, at_peak, present, drv.n_points > 0);
	svg_end(out);
	rc = 0;
out:
	free(samples);
	mem_timeline_release(&drv);
out_own:
	if (tl == &own)
		mem_timeline_release(&own);
	return rc;
}

int memory_svg_result(FILE *out, const struct replay *rp, const struct memory_result *res, int width,
		      int height)
{
	const struct mem_timeline *model = &res->views[MEM_VIEW_MODEL];

	return memory_svg_write(out, rp, model->n_blocks ? model : &res->views[res->view], res->t0,
				res->step >= 0 ? rp->steps[res->step].end : 0, width, height);
}
