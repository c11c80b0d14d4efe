/* svg.c: the SVG writer behind every chart (see svg.h). */
#include "render/svg.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>

#include "render/html.h"
#include "trace/types.h"

/* Shortest round-trip-ish coordinate: two decimals, trailing zeros dropped. */
static void put_num(FILE *out, double v)
{
	char buf[32];
	int n;

	if (!isfinite(v))
		v = 0;
	n = snprintf(buf, sizeof(buf), "%.2f", v);
	while (n > 1 && buf[n - 1] == '0')
		buf[--n] = 0;
	if (n > 1 && buf[n - 1] == '.')
		buf[--n] = 0;
	if (!strcmp(buf, "-0"))
		strcpy(buf, "0");
	fputs(buf, out);
}

void svg_escape(FILE *out, const char *s)
{
	markup_escape(out, s, false);
}

void svg_begin(FILE *out, int width, int height, const char *title)
{
	fprintf(out, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
		"viewBox=\"0 0 %d %d\" font-family=\"Helvetica, Arial, 'DejaVu Sans', sans-serif\">\n",
		width, height, width, height);
	if (title) {
		fputs("<title>", out);
		svg_escape(out, title);
		fputs("</title>\n", out);
	}
}

void svg_end(FILE *out)
{
	fputs("</svg>\n", out);
}

void svg_group_begin(FILE *out, const char *attrs)
{
	fprintf(out, "<g%s%s>\n", attrs ? " " : "", attrs ? attrs : "");
}

void svg_group_end(FILE *out)
{
	fputs("</g>\n", out);
}

static void put_attrs(FILE *out, const char *attrs)
{
	if (attrs && *attrs) {
		fputc(' ', out);
		fputs(attrs, out);
	}
}

void svg_rect(FILE *out, double x, double y, double w, double h, const char *fill, const char *attrs)
{
	fputs("<rect x=\"", out);
	put_num(out, x);
	fputs("\" y=\"", out);
	put_num(out, y);
	fputs("\" width=\"", out);
	put_num(out, w > 0 ? w : 0);
	fputs("\" height=\"", out);
	put_num(out, h > 0 ? h : 0);
	fprintf(out, "\" fill=\"%s\"", fill ? fill : "none");
	put_attrs(out, attrs);
	fputs("/>\n", out);
}

void svg_line(FILE *out, double x1, double y1, double x2, double y2, const char *stroke,
	      double stroke_width, const char *attrs)
{
	fputs("<line x1=\"", out);
	put_num(out, x1);
	fputs("\" y1=\"", out);
	put_num(out, y1);
	fputs("\" x2=\"", out);
	put_num(out, x2);
	fputs("\" y2=\"", out);
	put_num(out, y2);
	fprintf(out, "\" stroke=\"%s\" stroke-width=\"", stroke ? stroke : "#000");
	put_num(out, stroke_width);
	fputc('"', out);
	put_attrs(out, attrs);
	fputs("/>\n", out);
}

void svg_path_begin(FILE *out, const char *fill, const char *stroke, double stroke_width,
		    const char *attrs)
{
	fprintf(out, "<path fill=\"%s\"", fill ? fill : "none");
	if (stroke) {
		fprintf(out, " stroke=\"%s\" stroke-width=\"", stroke);
		put_num(out, stroke_width);
		fputc('"', out);
	}
	put_attrs(out, attrs);
	fputs(" d=\"", out);
}

void svg_path_move(FILE *out, double x, double y)
{
	fputc('M', out);
	put_num(out, x);
	fputc(' ', out);
	put_num(out, y);
}

void svg_path_line(FILE *out, double x, double y)
{
	fputc('L', out);
	put_num(out, x);
	fputc(' ', out);
	put_num(out, y);
}

void svg_path_close(FILE *out)
{
	fputc('Z', out);
}

void svg_path_end(FILE *out)
{
	fputs("\"/>\n", out);
}

void svg_text(FILE *out, double x, double y, enum svg_anchor anchor, double size, const char *fill,
	      const char *attrs, const char *fmt, ...)
{
	static const char *const anchors[] = { "start", "middle", "end" };
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fputs("<text x=\"", out);
	put_num(out, x);
	fputs("\" y=\"", out);
	put_num(out, y);
	fprintf(out, "\" text-anchor=\"%s\" font-size=\"", anchors[anchor <= SVG_END ? anchor : 0]);
	put_num(out, size);
	fprintf(out, "\" fill=\"%s\"", fill ? fill : "#222");
	put_attrs(out, attrs);
	fputc('>', out);
	svg_escape(out, buf);
	fputs("</text>\n", out);
}

double svg_text_width(const char *s, double size)
{
	double w = 0;

	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		if ((c & 0xc0) == 0x80)
			continue;               /* UTF-8 continuation */
		if (strchr("il.,:;'|!", c))
			w += 0.28;
		else if (strchr("MW@%m", c))
			w += 0.85;
		else if (c >= 'A' && c <= 'Z')
			w += 0.67;
		else if (c == ' ')
			w += 0.28;
		else
			w += 0.55;
	}
	return w * size;
}

/* ---- colours ---------------------------------------------------------- */

const char *svg_mem_color(int category)
{
	static const char *const colors[ST_MEM_CATEGORY_COUNT] = {
		[ST_MEM_UNKNOWN] = "#9e9e9e",
		[ST_MEM_PARAMETER] = "#4e79a7",
		[ST_MEM_GRADIENT] = "#f28e2b",
		[ST_MEM_OPTIMIZER] = "#b07aa1",
		[ST_MEM_ACTIVATION] = "#59a14f",
		[ST_MEM_TEMPORARY] = "#e15759",
		[ST_MEM_WORKSPACE] = "#edc948",
		[ST_MEM_INPUT] = "#76b7b2",
	};

	if (category < 0 || category >= ST_MEM_CATEGORY_COUNT)
		return colors[ST_MEM_UNKNOWN];
	return colors[category];
}

const char *svg_series_color(int i)
{
	static const char *const colors[] = {
		"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
		"#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac",
	};
	int n = (int)(sizeof(colors) / sizeof(colors[0]));

	return colors[((i % n) + n) % n];
}

const char *svg_phase_color(int phase)
{
	static const char *const colors[ST_PHASE_COUNT] = {
		[ST_PHASE_FORWARD] = "#4e79a7",
		[ST_PHASE_BACKWARD] = "#f28e2b",
		[ST_PHASE_OPTIMIZER] = "#e15759",
		[ST_PHASE_ZERO_GRAD] = "#59a14f",
		[ST_PHASE_DATA] = "#edc948",
		[ST_PHASE_OTHER] = "#76b7b2",
	};

	if (phase < 0 || phase >= ST_PHASE_COUNT)
		return colors[ST_PHASE_OTHER];
	return colors[phase];
}

/* ---- scales and ticks ------------------------------------------------- */

void svg_scale_linear(struct svg_scale *s, double d0, double d1, double r0, double r1)
{
	s->d0 = d0;
	s->d1 = d1;
	s->r0 = r0;
	s->r1 = r1;
	s->log10 = false;
}

void svg_scale_log10(struct svg_scale *s, double d0, double d1, double r0, double r1)
{
	svg_scale_linear(s, d0 > 0 ? d0 : 1e-300, d1 > 0 ? d1 : 1e-300, r0, r1);
	s->log10 = true;
}

double svg_scale_map(const struct svg_scale *s, double v)
{
	double a = s->d0, b = s->d1, f;

	if (s->log10) {
		v = log10(v > 0 ? v : 1e-300);
		a = log10(a);
		b = log10(b);
	}
	f = b != a ? (v - a) / (b - a) : 0;
	if (!isfinite(f))
		f = 0;
	if (f < 0)
		f = 0;
	if (f > 1)
		f = 1;
	return s->r0 + f * (s->r1 - s->r0);
}

static double tick_count(double lo, double hi, double st)
{
	return floor(hi / st + 1e-9) - ceil(lo / st - 1e-9) + 1;
}

int svg_ticks_linear(double lo, double hi, int max_ticks, double *out, int max_out, double *step)
{
	double st, first;
	int n = 0;

	if (hi < lo) {
		double t = lo;
		lo = hi;
		hi = t;
	}
	if (hi == lo)
		hi = lo + 1;
	if (max_ticks < 2)
		max_ticks = 2;
	/* the smallest nice step that puts at most max_ticks inside */
	st = svg_nice_ceil((hi - lo) / max_ticks);
	while (tick_count(lo, hi, st) > max_ticks)
		st = svg_nice_ceil(st * 1.01);
	if (step)
		*step = st;
	first = ceil(lo / st - 1e-9);
	for (double k = first; n < max_out; k += 1) {
		double v = k * st;

		if (v > hi + st * 1e-9)
			break;
		out[n++] = fabs(v) < st * 1e-9 ? 0 : v;
	}
	return n;
}

double svg_nice_ceil(double v)
{
	double p;

	if (!(v > 0) || !isfinite(v))
		return 1;
	p = pow(10, floor(log10(v)));
	if (p >= v * (1 - 1e-12))
		return p;
	if (2 * p >= v * (1 - 1e-12))
		return 2 * p;
	if (5 * p >= v * (1 - 1e-12))
		return 5 * p;
	return 10 * p;
}

int svg_ticks_log10(double lo, double hi, double *out, int max_out)
{
	int n = 0, e0, e1;
	bool fine;

	if (!(lo > 0) || !(hi > 0))
		return 0;
	if (hi < lo) {
		double t = lo;
		lo = hi;
		hi = t;
	}
	e0 = (int)floor(log10(lo) + 1e-9);
	e1 = (int)floor(log10(hi) + 1e-9);
	fine = e1 - e0 < 3;
	for (int e = e0; e <= e1 && n < max_out; e++) {
		double p = pow(10, e);
		static const double m[] = { 1, 2, 5 };

		for (int i = 0; i < (fine ? 3 : 1) && n < max_out; i++) {
			double v = m[i] * p;

			if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9))
				out[n++] = v;
		}
	}
	return n;
}

char *svg_fmt_tick(char *buf, size_t n, double v, double step)
{
	int dec = 0;

	if (step > 0 && step < 1)
		dec = (int)ceil(-log10(step) - 1e-9);
	if (dec > 6)
		dec = 6;
	/* a step like 0.25 needs one more digit than its magnitude says */
	if (step > 0 && fabs(step * pow(10, dec) - round(step * pow(10, dec))) > 1e-6 && dec < 6)
		dec++;
	snprintf(buf, n, "%.*f", dec, fabs(v) < 1e-12 ? 0.0 : v);
	return buf;
}
