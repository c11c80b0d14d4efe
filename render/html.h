/*
 * html.h: the HTML pieces `steptrace report` writes: escaped text and
 * attributes, JSON strings safe inside a <script> element, and the tables
 * of a struct report (lib/table.h) rendered as sortable HTML tables, so a
 * report built for the terminal (kernel summary, flops, ranges, diff) shows
 * on the page with the same columns. Numbers are right-aligned with grouped
 * digits and carry their exact value for sorting.
 */
#ifndef STEPTRACE_RENDER_HTML_H
#define STEPTRACE_RENDER_HTML_H

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>

#include "lib/table.h"

/*
 * Writes s with &, <, >, " and ' escaped and control characters dropped,
 * newlines and tabs too unless keep_breaks (NULL writes nothing), and
 * invalid UTF-8 as U+FFFD (lib/utf8.h). The entities are XML's as well:
 * SVG text comes through here (svg_escape).
 */
void markup_escape(FILE *out, const char *s, bool keep_breaks);
/* markup_escape keeping newlines and tabs: the page's text. */
void html_escape(FILE *out, const char *s);

/*
 * s escaped, each word (a run of characters other than blanks) in a <span>
 * and the blanks between them kept: a command line that report.css wraps
 * between words, never at a hyphen inside one.
 */
void html_words(FILE *out, const char *s);

/* printf-style, the result escaped. */
void html_printf(FILE *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ` name="value"`, the printf-style value escaped (newlines kept: tooltips use them). */
void html_attr(FILE *out, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/*
 * s as a JSON string literal that is also safe inside <script>: quotes,
 * backslashes and control characters escaped, <, > and & as \u00XX, and
 * invalid UTF-8 as U+FFFD.
 */
void html_json_string(FILE *out, const char *s);

/* The report as its JSON document (lib/table.h's typed view); NULL with an error line. json_decref it. */
json_t *html_report_json(const struct report *r);

struct html_tables {
	const char *name;          /* the report's table to write; NULL: every table */
	const char *id;            /* id of the <table> (the first one), NULL: none */
	const char *const *hide;   /* column names left out, NULL-terminated; NULL: none */
	int visible;               /* > 0: rows past this are folded behind a "show all" button */
	bool notes;                /* the report's notes as a list below */
};

/*
 * Writes tables of r as <table class="data sortable">: a click on a header
 * sorts by that column (report.js). Returns the number of tables written,
 * -1 with one error line.
 */
int html_report_tables(FILE *out, const struct report *r, const struct html_tables *o);

#endif
