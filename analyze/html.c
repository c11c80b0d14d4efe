/*
 * html.c: see html.h. Report tables go through their JSON form (the one
 * typed view lib/table.h offers outside table.c): columns in order, numbers
 * as numbers, empty cells as null.
 */
#include "analyze/html.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"

void markup_escape(FILE *out, const char *s, bool keep_breaks)
{
	for (; s && *s; s++) {
		unsigned char c = (unsigned char)*s;

		switch (c) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default:
			if ((c >= 0x20 && c != 0x7f) || (keep_breaks && (c == '\n' || c == '\t')))
				fputc(c, out);
		}
	}
}

void html_escape(FILE *out, const char *s)
{
	markup_escape(out, s, true);
}

void html_printf(FILE *out, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	html_escape(out, buf);
}

/* 1234567 -> "1,234,567" */
static void grouped(FILE *out, const char *digits)
{
	const char *p = digits;
	size_t n;

	if (*p == '-')
		fputc(*p++, out);
	n = strspn(p, "0123456789");
	for (size_t i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			fputc(',', out);
		fputc(p[i], out);
	}
	fputs(p + n, out);
}

static void number_cell(FILE *out, const json_t *v, const char *column)
{
	char buf[64];

	if (json_is_integer(v)) {
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else {
		double d = json_real_value(v);
		int decimals = strchr(column, '%') || fabs(d) >= 100 ? 1 : fabs(d) >= 1 ? 2 : 3;
		if (!isfinite(d)) {
			fputs("&ndash;", out);
			return;
		}
		snprintf(buf, sizeof(buf), "%.*f", decimals, d);
	}
	grouped(out, buf);
}

static void write_table(FILE *out, const json_t *rows, int max_rows)
{
	const json_t *first = json_array_get(rows, 0), *row;
	const char *key;
	json_t *v;
	size_t i;

	if (!first) {
		fputs("<p class=\"muted\">No rows.</p>\n", out);
		return;
	}
	/* a column is numeric when every non-empty cell is a number */
	fputs("<div class=\"scroll\"><table class=\"data\">\n<thead><tr>", out);
	json_object_foreach((json_t *)first, key, v) {
		bool numeric = true;
		json_array_foreach(rows, i, row) {
			const json_t *c = json_object_get(row, key);
			if (c && !json_is_null(c) && !json_is_number(c))
				numeric = false;
		}
		fprintf(out, "<th%s>", numeric ? " class=\"num\"" : "");
		html_escape(out, key);
		fputs("</th>", out);
	}
	fputs("</tr></thead>\n<tbody>\n", out);
	json_array_foreach(rows, i, row) {
		if (max_rows > 0 && i >= (size_t)max_rows)
			break;
		fputs("<tr>", out);
		json_object_foreach((json_t *)first, key, v) {
			const json_t *c = json_object_get(row, key);
			if (json_is_number(c)) {
				fputs("<td class=\"num\">", out);
				number_cell(out, c, key);
			} else if (json_is_string(c)) {
				const char *s = json_string_value(c);
				fprintf(out, "<td%s title=\"", strlen(s) > 60 ? " class=\"long\"" : "");
				html_escape(out, s);
				fputs("\">", out);
				html_escape(out, s);
			} else {
				fputs("<td>", out);
			}
			fputs("</td>", out);
		}
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></div>\n", out);
	if (max_rows > 0 && json_array_size(rows) > (size_t)max_rows)
		fprintf(out, "<p class=\"muted\">%d of %zu rows shown.</p>\n", max_rows, json_array_size(rows));
}

int html_report_tables(FILE *out, const struct report *r, const char *name, int max_rows, int notes)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	json_t *doc, *v;
	json_error_t err;
	const char *key;
	int n = 0;

	if (!mem)
		return error("out of memory");
	if (report_print(r, OUT_JSON, mem) < 0 || fclose(mem) != 0) {
		free(text);
		return error("cannot render a report table");
	}
	doc = json_loadb(text, len, 0, &err);
	free(text);
	if (!doc)
		return error("cannot render a report table: %s", err.text);
	json_object_foreach(doc, key, v) {
		if (strcmp(key, "notes") == 0 || !json_is_array(v) || (name && strcmp(key, name) != 0))
			continue;
		write_table(out, v, max_rows);
		n++;
	}
	v = json_object_get(doc, "notes");
	if (notes && json_array_size(v)) {
		size_t i;
		json_t *note;
		fputs("<ul class=\"notes\">\n", out);
		json_array_foreach(v, i, note) {
			fputs("<li>", out);
			html_escape(out, json_string_value(note));
			fputs("</li>\n", out);
		}
		fputs("</ul>\n", out);
	}
	json_decref(doc);
	return n;
}
