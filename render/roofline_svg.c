/*
 * roofline_svg.c: the roofline chart (see roofline_svg.h): log-log FLOP/byte
 * against achieved TFLOP/s, the bandwidth slope and one roof per distinct
 * peak, a point per row sized by its share of GPU time, labels placed where
 * they collide with nothing, and a legend by phase.
 */
#include "render/roofline_svg.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "render/svg.h"

struct roof_label {
	double x0, y0, x1, y1;        /* a box already taken on the chart */
};

static bool box_free(const struct roof_label *taken, size_t n, const struct roof_label *b,
		     double left, double top, double right, double bottom)
{
	if (b->x0 < left || b->x1 > right || b->y0 < top || b->y1 > bottom)
		return false;
	for (size_t i = 0; i < n; i++)
		if (b->x0 < taken[i].x1 && taken[i].x0 < b->x1 && b->y0 < taken[i].y1 && taken[i].y0 < b->y1)
			return false;
	return true;
}

/* A row's label on the chart: a kind without its phase (the colour says it), an op without "step/". */
static const char *short_label(const struct flops_row *row)
{
	const char *s = row->name;

	if (!strncmp(s, "step/", 5))
		return s + 5;
	if (row->phase >= 0 && strchr(s, '/') && row->phase != ST_PHASE_OPTIMIZER)
		return strchr(s, '/') + 1;
	return s;
}

/* Adds name to a ", "-separated label unless it is there already. */
static void label_append(char *label, size_t len, const char *name)
{
	size_t n = strlen(name), used = strlen(label);

	for (const char *p = label; (p = strstr(p, name)) != NULL; p += n)
		if ((p == label || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
			return;
	if (used + n + 3 >= len)
		return;
	snprintf(label + used, len - used, "%s%s", used ? ", " : "", name);
}

static bool order_ok(const unsigned char *done, size_t i)
{
	return !done[i];
}

static bool plottable(const struct flops_row *r)
{
	return !r->no_op && isfinite(flops_row_intensity(r)) && isfinite(flops_row_tflops(r));
}

int flops_svg(FILE *out, const struct flops_result *res, int width, int height)
{
	const struct flops_peaks *pk = &res->peaks;
	const double ml = 70, mr = 28, mt = 52, mb = 58;
	double left = ml, right = width - mr, top = mt, bottom = height - mb;
	double xlo = INFINITY, xhi = 0, ylo = INFINITY, yhi = 0, max_ridge = 0;
	struct svg_scale sx, sy;
	struct roof_label *taken = NULL;
	size_t n_taken = 0, *order = NULL;
	unsigned char *done = NULL;
	bool phase_seen[ST_PHASE_COUNT] = { false };
	double ticks[64];
	char buf[64];
	int nt;

	for (size_t i = 0; i < res->n_rows; i++) {
		const struct flops_row *r = &res->rows[i];
		if (!plottable(r))
			continue;
		double x = flops_row_intensity(r), y = flops_row_tflops(r);
		xlo = fmin(xlo, x), xhi = fmax(xhi, x), ylo = fmin(ylo, y), yhi = fmax(yhi, y);
	}
	if (pk->bandwidth > 0)
		for (int p = 0; p < FP_COUNT; p++)
			if (pk->flops[p] > 0) {
				max_ridge = fmax(max_ridge, pk->flops[p] / pk->bandwidth);
				yhi = fmax(yhi, pk->flops[p] / 1e12);
				xhi = fmax(xhi, pk->flops[p] / pk->bandwidth);
			}
	if (!isfinite(xlo))
		xlo = fmin(1, xhi > 0 ? xhi : 1);
	if (!isfinite(ylo))
		ylo = fmin(1, yhi > 0 ? yhi / 1000 : 1);
	if (xhi <= 0)
		xhi = 1000;
	if (yhi <= 0)
		yhi = 1000;
	xlo = pow(10, floor(log10(xlo / 1.5)));
	xhi = svg_nice_ceil(xhi * 2.5);
	ylo = pow(10, floor(log10(ylo / 1.5)));
	yhi = svg_nice_ceil(yhi * 1.4);
	svg_scale_log10(&sx, xlo, xhi, left, right);
	svg_scale_log10(&sy, ylo, yhi, bottom, top);

	order = calloc(res->n_rows + 1, sizeof(*order));
	taken = calloc(2 * res->n_rows + FP_COUNT + 8, sizeof(*taken));
	done = calloc(res->n_rows + 1, 1);
	if (!order || !taken || !done) {
		free(order);
		free(taken);
		free(done);
		return error("out of memory");
	}
	svg_begin(out, width, height, "Roofline: achieved TFLOP/s against arithmetic intensity");
	svg_rect(out, 0, 0, width, height, "#fff", NULL);
	svg_text(out, left, 22, SVG_START, 16, "#222", "font-weight=\"bold\"",
		 "Roofline: achieved TFLOP/s against FLOP/byte, per step");
	if (res->peaks_missing)
		svg_text(out, left, 40, SVG_START, 12, "#b00", NULL,
			 "no device peaks in the header: ceilings not drawn");
	else
		svg_text(out, left, 40, SVG_START, 12, "#555", NULL,
			 "ceilings: %s peaks; matrix products against their dtype's peak, other ops against fp32",
			 pk->source);

	/* grid and axes */
	nt = svg_ticks_log10(xlo, xhi, ticks, 64);
	for (int i = 0; i < nt; i++) {
		double x = svg_scale_map(&sx, ticks[i]);
		svg_line(out, x, top, x, bottom, "#e6e6e6", 1, NULL);
		svg_text(out, x, bottom + 16, SVG_MIDDLE, 11, "#444", NULL, "%s",
			 svg_fmt_tick(buf, sizeof(buf), ticks[i], ticks[i]));
	}
	nt = svg_ticks_log10(ylo, yhi, ticks, 64);
	for (int i = 0; i < nt; i++) {
		double y = svg_scale_map(&sy, ticks[i]);
		svg_line(out, left, y, right, y, "#e6e6e6", 1, NULL);
		svg_text(out, left - 6, y + 4, SVG_END, 11, "#444", NULL, "%s",
			 svg_fmt_tick(buf, sizeof(buf), ticks[i], ticks[i]));
	}
	svg_rect(out, left, top, right - left, bottom - top, NULL, "stroke=\"#888\"");
	svg_text(out, (left + right) / 2, height - 16, SVG_MIDDLE, 13, "#222", NULL,
		 "arithmetic intensity (FLOP/byte, minimum bytes)");
	snprintf(buf, sizeof(buf), "transform=\"rotate(-90 %.1f %.1f)\"", 18.0, (top + bottom) / 2);
	svg_text(out, 18, (top + bottom) / 2, SVG_MIDDLE, 13, "#222", buf, "achieved TFLOP/s");

	/* ceilings: the bandwidth slope up to the highest ridge, then one roof per distinct peak */
	if (pk->bandwidth > 0 && max_ridge > 0) {
		double x0 = fmax(xlo, ylo * 1e12 / pk->bandwidth), x1 = fmin(max_ridge, xhi);
		double X0 = svg_scale_map(&sx, x0), Y0 = svg_scale_map(&sy, x0 * pk->bandwidth / 1e12);
		double X1 = svg_scale_map(&sx, x1), Y1 = svg_scale_map(&sy, x1 * pk->bandwidth / 1e12);
		double angle = atan2(Y1 - Y0, X1 - X0) * 180 / M_PI;
		double lx = X0 + 0.5 * (X1 - X0), ly = Y0 + 0.5 * (Y1 - Y0) - 7;

		svg_line(out, X0, Y0, X1, Y1, "#333", 2, NULL);
		snprintf(buf, sizeof(buf), "transform=\"rotate(%.2f %.1f %.1f)\"", angle, lx, ly);
		svg_text(out, lx, ly, SVG_START, 12, "#333", buf, "memory %.2f TB/s", pk->bandwidth / 1e12);
		{
			double tw = 110, ex = lx + tw * cos(angle * M_PI / 180), ey = ly + tw * sin(angle * M_PI / 180);
			taken[n_taken++] = (struct roof_label){ fmin(lx, ex), fmin(ly, ey) - 12, fmax(lx, ex), fmax(ly, ey) + 2 };
		}
	}
	for (int p = FP_COUNT - 1; p >= 0; p--) {
		char names[32] = "";
		bool first = true;

		if (pk->flops[p] <= 0 || pk->bandwidth <= 0)
			continue;
		for (int q = FP_COUNT - 1; q >= 0; q--)
			if (pk->flops[q] == pk->flops[p]) {
				if (q > p)
					break;              /* drawn with q */
				strncat(names, first ? "" : "/", sizeof(names) - strlen(names) - 1);
				strncat(names, flops_precision_name(q), sizeof(names) - strlen(names) - 1);
				first = false;
			}
		if (first)
			continue;
		double ridge = pk->flops[p] / pk->bandwidth, y = svg_scale_map(&sy, pk->flops[p] / 1e12);
		double x0 = svg_scale_map(&sx, fmax(ridge, xlo));
		svg_line(out, x0, y, right, y, "#333", 2, NULL);
		svg_text(out, right - 6, y - 6, SVG_END, 12, "#333", NULL, "%s peak %.1f TFLOP/s", names,
			 pk->flops[p] / 1e12);
		taken[n_taken++] = (struct roof_label){ right - 180, y - 18, right, y - 2 };
		svg_line(out, x0, y, x0, bottom, "#bbb", 1, "stroke-dasharray=\"3 3\"");
	}

	/* points, largest first so small ones stay visible on top */
	for (size_t i = 0; i < res->n_rows; i++)
		order[i] = i;                     /* rows are sorted by time already */
	for (size_t k = 0; k < res->n_rows; k++) {
		const struct flops_row *r = &res->rows[order[k]];
		if (!plottable(r))
			continue;
		double share = res->kernel_ns > 0 ? r->time_ns / res->kernel_ns : 0;
		double x = svg_scale_map(&sx, flops_row_intensity(r)), y = svg_scale_map(&sy, flops_row_tflops(r));
		double rad = 3.5 + 22 * sqrt(share);
		int ph = r->phase >= 0 && r->phase < ST_PHASE_COUNT ? r->phase : ST_PHASE_OTHER;
		char attrs[160];

		phase_seen[ph] = true;
		snprintf(attrs, sizeof(attrs), "fill=\"%s\" fill-opacity=\"0.7\" stroke=\"#fff\" stroke-width=\"1\"",
			 svg_phase_color(ph));
		fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" %s><title>", x, y, rad, attrs);
		svg_escape(out, r->name);
		fprintf(out, ": %.3f TFLOP/s at %.2f FLOP/B, %.1f%% of GPU time</title></circle>\n",
			flops_row_tflops(r), flops_row_intensity(r), 100 * share);
		taken[n_taken++] = (struct roof_label){ x - rad, y - rad, x + rad, y + rad };
	}
	{
		/* the legend: a line per phase seen and one for the area */
		double lh = 16;
		for (int ph = 0; ph < ST_PHASE_COUNT; ph++)
			lh += phase_seen[ph] ? 16 : 0;
		taken[n_taken++] = (struct roof_label){ left, top, left + 160, top + (lh > 80 ? lh : 80) };
	}
	/* labels: the first free spot around each point, biggest points first; points that
	 * sit on top of each other (within 4 units) share one label listing their names */
	for (size_t k = 0; k < res->n_rows; k++) {
		const struct flops_row *r = &res->rows[order[k]];
		if (!plottable(r) || !order_ok(done, order[k]))
			continue;
		double share = res->kernel_ns > 0 ? r->time_ns / res->kernel_ns : 0;
		double x = svg_scale_map(&sx, flops_row_intensity(r)), y = svg_scale_map(&sy, flops_row_tflops(r));
		double rad = 3.5 + 22 * sqrt(share), fs = 11;
		char label[160] = "";
		for (size_t m = k; m < res->n_rows; m++) {
			const struct flops_row *o = &res->rows[order[m]];
			if (!plottable(o) || !order_ok(done, order[m]))
				continue;
			double ox = svg_scale_map(&sx, flops_row_intensity(o)), oy = svg_scale_map(&sy, flops_row_tflops(o));
			if (fabs(ox - x) > 4 || fabs(oy - y) > 4)
				continue;
			done[order[m]] = 1;
			label_append(label, sizeof(label), short_label(o));
		}
		double w = svg_text_width(label, fs), h = fs + 2;
		const double dys[] = { 0, -h, h, -2 * h, 2 * h, -3 * h, 3 * h, -4 * h, 4 * h };
		struct roof_label b;
		bool placed = false;

		for (size_t d = 0; d < sizeof(dys) / sizeof(dys[0]) && !placed; d++)
			for (int side = 0; side < 2 && !placed; side++) {
				double lx = side == 0 ? x + rad + 4 : x - rad - 4 - w;
				double cy = y + dys[d];
				b = (struct roof_label){ lx, cy - h / 2, lx + w, cy + h / 2 };
				if (box_free(taken, n_taken, &b, left + 2, top + 2, right - 2, bottom - 2))
					placed = true;
			}
		if (!placed)
			continue;                     /* the tooltip still names it */
		taken[n_taken++] = b;
		if (fabs((b.y0 + b.y1) / 2 - y) > 1)
			svg_line(out, b.x0 < x ? b.x1 : b.x0, (b.y0 + b.y1) / 2, x, y, "#aaa", 0.7, NULL);
		svg_text(out, b.x0, b.y1 - 3, SVG_START, fs, "#222", NULL, "%s", label);
	}

	/* legend, top left inside the plot */
	{
		double lx = left + 12, ly = top + 16;
		for (int ph = 0; ph < ST_PHASE_COUNT; ph++) {
			if (!phase_seen[ph])
				continue;
			fprintf(out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"%s\" fill-opacity=\"0.7\"/>\n",
				lx, ly - 4, svg_phase_color(ph));
			svg_text(out, lx + 10, ly, SVG_START, 12, "#222", NULL, "%s", st_phase_name(ph));
			ly += 16;
		}
		svg_text(out, lx - 5, ly, SVG_START, 11, "#555", NULL, "area: share of GPU time");
	}
	svg_end(out);
	free(order);
	free(taken);
	free(done);
	return 0;
}

int flops_roofline_svg(FILE *out, const struct replay *rp, int width, int height)
{
	struct flops_options opt = { .by = FLOPS_BY_KIND };
	struct flops_result res;
	int rc;

	if (flops_compute(rp, &opt, &res) < 0)
		return -1;
	rc = flops_svg(out, &res, width, height);
	flops_result_release(&res);
	return rc;
}
