/*
 * html.h: the few HTML pieces `steptrace report` writes: escaped text and
 * the tables of a struct report (lib/table.h) rendered as HTML tables, so a
 * report built for the terminal (kernel summary, flops, diff) shows on the
 * page with the same columns. Numbers are right-aligned with grouped digits.
 */
#ifndef STEPTRACE_ANALYZE_HTML_H
#define STEPTRACE_ANALYZE_HTML_H

#include <stdbool.h>
#include <stdio.h>

#include "lib/table.h"

/*
 * Writes s with &, <, >, " and ' escaped and control characters dropped,
 * newlines and tabs too unless keep_breaks (NULL writes nothing). The
 * entities are XML's as well: SVG text comes through here (svg_escape).
 */
void markup_escape(FILE *out, const char *s, bool keep_breaks);
/* markup_escape keeping newlines and tabs: the page's text. */
void html_escape(FILE *out, const char *s);

/* printf-style, the result escaped. */
void html_printf(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/*
 * Writes table `name` of r (every table when name is NULL) as
 * <table class="data">, and with notes true the report's notes as a list
 * below. max_rows > 0 keeps the first rows. Returns the number of tables
 * written, -1 with one error line.
 */
int html_report_tables(FILE *out, const struct report *r, const char *name, int max_rows, int notes);

#endif
