/*
 * svg.h: the tiny SVG writer every chart of steptrace uses (memory
 * timeline, roofline, the HTML report): a document with a viewBox, shapes,
 * escaped text, one colour palette (per memory category and a categorical
 * one), scales with "nice" 1-2-5 ticks (linear and log10) and byte/time
 * unit formatting.
 *
 * Everything writes straight to a FILE *, so a chart streams into a file or
 * into the middle of an HTML page. Coordinates are user units of the
 * viewBox (one unit = one CSS pixel at the natural size). Write errors are
 * the caller's to check with ferror() once at the end.
 *
 *   svg_begin(out, 1200, 600, "Active memory");   // <svg ...><title>
 *   svg_rect(out, 0, 0, 1200, 600, "#fff", NULL);
 *   svg_text(out, 600, 20, SVG_MIDDLE, 14, "#222", "font-weight=\"bold\"", "peak %s", buf);
 *   svg_end(out);
 *
 * `attrs` arguments are extra raw attributes written as given (may be NULL):
 * the caller is responsible for quoting them; never put file data there, use
 * svg_text/svg_escape for anything that came from a bundle.
 */
#ifndef STEPTRACE_RENDER_SVG_H
#define STEPTRACE_RENDER_SVG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "lib/human.h"

/* ---- document --------------------------------------------------------- */

/*
 * Opens <svg> with xmlns, width/height and viewBox "0 0 width height", a
 * sans-serif font and, when title is not NULL, a <title> (escaped). No XML
 * declaration, so the same output embeds in HTML as inline SVG.
 */
void svg_begin(FILE *out, int width, int height, const char *title);
void svg_end(FILE *out);

/* Writes s with &, <, >, ", ' escaped and control characters dropped. */
void svg_escape(FILE *out, const char *s);

/* <g attrs> ... </g> (attrs may be NULL). */
void svg_group_begin(FILE *out, const char *attrs);
void svg_group_end(FILE *out);

/* ---- shapes ----------------------------------------------------------- */

/* fill may be NULL ("none"). */
void svg_rect(FILE *out, double x, double y, double w, double h, const char *fill, const char *attrs);
void svg_line(FILE *out, double x1, double y1, double x2, double y2, const char *stroke,
	      double stroke_width, const char *attrs);
/*
 * A path built point by point, for shapes too long to hold (streaming):
 * svg_path_begin writes `<path fill stroke attrs d="`, then M/L/Z commands,
 * svg_path_end closes the element.
 */
void svg_path_begin(FILE *out, const char *fill, const char *stroke, double stroke_width,
		    const char *attrs);
void svg_path_move(FILE *out, double x, double y);
void svg_path_line(FILE *out, double x, double y);
void svg_path_close(FILE *out);
void svg_path_end(FILE *out);

/* ---- text ------------------------------------------------------------- */

enum svg_anchor { SVG_START, SVG_MIDDLE, SVG_END };

/* printf-style text, escaped; size in user units; fill NULL = "#222". */
void svg_text(FILE *out, double x, double y, enum svg_anchor anchor, double size, const char *fill,
	      const char *attrs, const char *fmt, ...) __attribute__((format(printf, 8, 9)));

/* Rough width of text at `size` (sans-serif average glyph), for layout. */
double svg_text_width(const char *s, double size);

/* ---- colours ---------------------------------------------------------- */

/* One fill per enum st_mem_category (unknown and out-of-range get grey). */
const char *svg_mem_color(int category);
/* A categorical palette (10 colours, cycling) for series that are not memory categories. */
const char *svg_series_color(int i);
/* One colour per enum st_phase, the same in every chart (out-of-range gets other's). */
const char *svg_phase_color(int phase);

/* ---- scales and ticks ------------------------------------------------- */

/* Maps a domain [d0, d1] onto a range [r0, r1] (r1 < r0 for a y axis). */
struct svg_scale {
	double d0, d1, r0, r1;
	bool log10;           /* domain values must be > 0 */
};
void svg_scale_linear(struct svg_scale *s, double d0, double d1, double r0, double r1);
void svg_scale_log10(struct svg_scale *s, double d0, double d1, double r0, double r1);
double svg_scale_map(const struct svg_scale *s, double v);   /* clamped to the range */

/*
 * "Nice" ticks for [lo, hi]: multiples of a step 1, 2 or 5 times a power of
 * ten, chosen so at most max_ticks fall inside; writes them (ascending, within
 * [lo, hi]) to out and returns how many (at most max_out). *step gets the step
 * (may be NULL).
 */
int svg_ticks_linear(double lo, double hi, int max_ticks, double *out, int max_out, double *step);
/* The smallest nice value (1, 2, 5 x 10^k) >= v; for rounding an axis top up. */
double svg_nice_ceil(double v);
/* Powers of ten within [lo, hi] (lo > 0), plus 2 and 5 multiples when there are fewer than 3 decades. */
int svg_ticks_log10(double lo, double hi, double *out, int max_out);

/* A tick label with as many decimals as `step` needs: "0.5", "10", "2.25". */
char *svg_fmt_tick(char *buf, size_t n, double v, double step);

#endif
