/*
 * html.c: see html.h. Report tables go through their JSON form (the one
 * typed view lib/table.h offers outside table.c): columns in order, numbers
 * as numbers, empty cells as null.
 */
#include "render/html.h"

#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/utf8.h"

/* markup_escape of the first n bytes of s; invalid UTF-8 as U+FFFD. */
static void escape_span(FILE *out, const char *s, size_t n, bool keep_breaks)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		int len;

		switch (c) {
		case '&': fputs("&amp;", out); break;
		case '<': fputs("&lt;", out); break;
		case '>': fputs("&gt;", out); break;
		case '"': fputs("&quot;", out); break;
		case '\'': fputs("&#39;", out); break;
		default:
			if (c >= 0x80) {
				len = utf8_next(s + i);
				if (len < 0 || (size_t)len > n - i)
					fputs(UTF8_REPLACEMENT, out);
				else
					fwrite(s + i, 1, (size_t)len, out);
				i += (size_t)(len < 0 ? -len : len) - 1;
			} else if ((c >= 0x20 && c != 0x7f) || (keep_breaks && (c == '\n' || c == '\t'))) {
				fputc(c, out);
			}
		}
	}
}

void markup_escape(FILE *out, const char *s, bool keep_breaks)
{
	if (s)
		escape_span(out, s, strlen(s), keep_breaks);
}

void html_words(FILE *out, const char *s)
{
	while (s && *s) {
		size_t blank = strspn(s, " \t\n"), word;

		fwrite(s, 1, blank, out);
		s += blank;
		word = strcspn(s, " \t\n");
		if (!word)
			break;
		fputs("<span>", out);
		escape_span(out, s, word, false);
		fputs("</span>", out);
		s += word;
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

void html_attr(FILE *out, const char *name, const char *fmt, ...)
{
	char buf[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	fprintf(out, " %s=\"", name);
	html_escape(out, buf);
	fputc('"', out);
}

void html_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (int n = 1; s && *s; s += n < 0 ? -n : n) {
		unsigned char c = (unsigned char)*s;

		n = c < 0x80 ? 1 : utf8_next(s);
		if (n < 0)
			fputs(UTF8_REPLACEMENT, out);
		else if (n > 1)
			fwrite(s, 1, (size_t)n, out);
		else if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20 || c == 0x7f || c == '<' || c == '>' || c == '&')
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
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

/* The exact value, for sorting: integers as they are, reals to 17 digits. */
static void sort_value(FILE *out, const json_t *v)
{
	if (json_is_integer(v))
		fprintf(out, " data-v=\"%" JSON_INTEGER_FORMAT "\"", json_integer_value(v));
	else if (isfinite(json_real_value(v)))
		fprintf(out, " data-v=\"%.17g\"", json_real_value(v));
}

static void number_cell(FILE *out, const json_t *v, const char *column)
{
	char buf[64];

	if (json_is_integer(v)) {
		snprintf(buf, sizeof(buf), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
	} else {
		double d = json_real_value(v);
		/* a column of ns or % has one decimal in every row (as the text report prints it); others about 3 digits */
		bool one = strchr(column, '%') || strstr(column, "(ns)");
		int decimals = one || fabs(d) >= 100 ? 1 : fabs(d) >= 1 ? 2 : 3;
		if (!isfinite(d)) {
			fputs("&ndash;", out);
			return;
		}
		snprintf(buf, sizeof(buf), "%.*f", decimals, d);
	}
	grouped(out, buf);
}

static bool hidden(const struct html_tables *o, const char *column)
{
	for (const char *const *h = o->hide; h && *h; h++)
		if (strcmp(*h, column) == 0)
			return true;
	return false;
}

/* Per column: numeric when every non-empty cell is a number; a name when a cell is long. */
enum col_kind { COL_TEXT, COL_NUMBER, COL_NAME };

static enum col_kind column_kind(const json_t *rows, const char *key)
{
	const json_t *row;
	size_t i, longest = 0;
	bool numeric = true;

	json_array_foreach(rows, i, row) {
		const json_t *c = json_object_get(row, key);
		if (json_is_string(c) && strlen(json_string_value(c)) > longest)
			longest = strlen(json_string_value(c));
		if (c && !json_is_null(c) && !json_is_number(c))
			numeric = false;
	}
	return numeric ? COL_NUMBER : longest > 40 ? COL_NAME : COL_TEXT;
}

/*
 * A row that sums up the others (explain's "mean" and "share (%)", comm's
 * "allreduce (total per step)", a "total"): by its first cell. It stays
 * below the rows it sums up, out of their sorting.
 */
static bool summary_row(const json_t *head, const json_t *row)
{
	static const char *const labels[] = { "mean", "share (%)", "total", "totals", NULL };
	const char *key, *s, *suffix = "(total per step)";
	json_t *v;

	json_object_foreach((json_t *)head, key, v) {
		const json_t *c = json_object_get(row, key);

		if (!json_is_string(c))
			return false;
		s = json_string_value(c);
		for (size_t i = 0; labels[i]; i++)
			if (!strcmp(s, labels[i]))
				return true;
		return strlen(s) >= strlen(suffix) && !strcmp(s + strlen(s) - strlen(suffix), suffix);
	}
	return false;
}

static void write_row(FILE *out, const json_t *head, const json_t *row, const struct html_tables *o,
		      const enum col_kind *kinds, size_t nkinds, const char *tr)
{
	const char *key;
	json_t *v;
	size_t k = 0;

	fputs(tr, out);
	json_object_foreach((json_t *)head, key, v) {
		const json_t *c = json_object_get(row, key);
		if (k >= nkinds)
			break;
		if (hidden(o, key)) {
			k++;
			continue;
		}
		if (json_is_number(c)) {
			fputs("<td class=\"num\"", out);
			sort_value(out, c);
			fputc('>', out);
			number_cell(out, c, key);
		} else if (json_is_string(c) && kinds[k] == COL_NAME) {
			const char *s = json_string_value(c);
			fputs("<td class=\"name\"", out);
			html_attr(out, "title", "%s", s);
			fputc('>', out);
			html_escape(out, s);
		} else if (json_is_string(c)) {
			fputs("<td>", out);
			html_escape(out, json_string_value(c));
		} else {
			fputs(kinds[k] == COL_NUMBER ? "<td class=\"num\">" : "<td>", out);
		}
		fputs("</td>", out);
		k++;
	}
	fputs("</tr>\n", out);
}

static void write_table(FILE *out, const json_t *rows, const struct html_tables *o, bool first)
{
	const json_t *head = json_array_get(rows, 0), *row;
	enum col_kind kinds[64];
	const char *key;
	json_t *v;
	size_t i, k, body = 0, foot = 0;

	if (!head) {
		fputs("<p class=\"muted\">No rows.</p>\n", out);
		return;
	}
	fputs("<div class=\"tbl\"><div class=\"scroll\"><table class=\"data sortable\"", out);
	if (first && o->id)
		html_attr(out, "id", "%s", o->id);
	if (o->visible > 0)
		fprintf(out, " data-visible=\"%d\"", o->visible);
	fputs(">\n<thead><tr>", out);
	k = 0;
	json_object_foreach((json_t *)head, key, v) {
		if (k >= sizeof(kinds) / sizeof(kinds[0]))
			break;
		kinds[k] = column_kind(rows, key);
		if (!hidden(o, key)) {
			fprintf(out, "<th%s>", kinds[k] == COL_NUMBER ? " class=\"num\"" : "");
			html_escape(out, key);
			fputs("</th>", out);
		}
		k++;
	}
	fputs("</tr></thead>\n<tbody>\n", out);
	/* the rows a click sorts; then, in the footer, those that sum them up */
	json_array_foreach(rows, i, row) {
		if (summary_row(head, row)) {
			foot++;
			continue;
		}
		write_row(out, head, row, o, kinds, k,
			  o->visible > 0 && body >= (size_t)o->visible ? "<tr class=\"more\">" : "<tr>");
		body++;
	}
	fputs("</tbody>\n", out);
	if (foot) {
		fputs("<tfoot>\n", out);
		json_array_foreach(rows, i, row)
			if (summary_row(head, row))
				write_row(out, head, row, o, kinds, k, "<tr class=\"summary\">");
		fputs("</tfoot>\n", out);
	}
	fputs("</table></div>\n", out);
	if (o->visible > 0 && body > (size_t)o->visible)
		fprintf(out, "<p class=\"muted rows\">%d of %zu rows shown; a click on a header sorts all of them. "
			"<button class=\"more\" type=\"button\">Show all %zu</button></p>\n", o->visible,
			body, body);
	fputs("</div>\n", out);
}

json_t *html_report_json(const struct report *r)
{
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	json_error_t err;
	json_t *doc;

	if (!mem) {
		error("out of memory");
		return NULL;
	}
	if (report_print(r, OUT_JSON, mem) < 0 || fclose(mem) != 0) {
		free(text);
		error("cannot render a report table");
		return NULL;
	}
	doc = json_loadb(text, len, 0, &err);
	free(text);
	if (!doc)
		error("cannot render a report table: %s", err.text);
	return doc;
}

int html_report_tables(FILE *out, const struct report *r, const struct html_tables *o)
{
	json_t *doc = html_report_json(r), *v;
	const char *key;
	int n = 0;

	if (!doc)
		return -1;
	json_object_foreach(doc, key, v) {
		if (strcmp(key, "notes") == 0 || !json_is_array(v) || (o->name && strcmp(key, o->name) != 0))
			continue;
		write_table(out, v, o, n == 0);
		n++;
	}
	v = json_object_get(doc, "notes");
	if (o->notes && json_array_size(v)) {
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
