/*
 * table.c: reports as lists of typed tables, printed as aligned text, CSV,
 * JSON or Markdown (see table.h). Cells keep their type so each format can
 * render numbers its own way: grouped digits in text, raw in CSV/Markdown,
 * JSON numbers in JSON. One file of over 1,000 lines: the tables' layout is
 * private to it (table.h declares them opaque), and building, stacking,
 * streaming and the four formats all work on its cells directly.
 */
#include "lib/table.h"

#include <inttypes.h>
#include <math.h>
#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "lib/error.h"
#include "lib/human.h"
#include "lib/utf8.h"

enum cell_kind { CELL_EMPTY, CELL_STR, CELL_INT, CELL_FLOAT };

struct cell {
	enum cell_kind kind;
	union {
		char *s;
		int64_t i;
		double f;
	} v;
};

struct column {
	char *name;
	enum column_type type;
	int precision;
	size_t max_width;       /* text format: longer cells are cut to this; 0: none */
	bool elastic;           /* text format: cut in the middle so the table fits TABLE_TEXT_WIDTH */
	bool hide_empty;        /* text format: left out when no row has a value in it */
	int drop_rank;          /* text format: left out, lowest rank first, when the table is too wide; 0: never */
	bool wrap;              /* text format: cells broken onto more lines so the table fits TABLE_TEXT_WIDTH */
};

struct table {
	char *name, *title;
	struct column *cols;
	size_t ncols;
	struct cell *cells;     /* row-major, nrows * ncols */
	size_t nrows, cap_rows;
	size_t next_col;        /* column the next cell call fills in the last row */
	bool streamed;          /* table_stream_row has begun printing it */
	bool optional;          /* left out of the text formats when it has no rows */
	size_t rows_streamed;
	struct table *next;
};

struct report {
	struct table *first, *last;
	char **notes;
	size_t nnotes;
};

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q) {
		fputs("fatal: out of memory\n", stderr);
		abort();
	}
	return q;
}

static char *xstrdup(const char *s)
{
	size_t n = strlen(s ? s : "") + 1;

	return memcpy(xrealloc(NULL, n), s ? s : "", n);
}

const char *const out_format_names[] = { "table", "csv", "json", "md", NULL };

/* The widest a column may be cut to (table_column_max_width). */
#define CLIP_MAX 256

/* ---- building ---- */

struct report *report_new(void)
{
	struct report *r = xrealloc(NULL, sizeof(*r));

	memset(r, 0, sizeof(*r));
	return r;
}

struct table *report_add_table(struct report *r, const char *name, const char *title)
{
	struct table *t = xrealloc(NULL, sizeof(*t));

	memset(t, 0, sizeof(*t));
	t->name = xstrdup(name ? name : "table");
	t->title = title ? xstrdup(title) : NULL;
	if (r->last)
		r->last->next = t;
	else
		r->first = t;
	r->last = t;
	return t;
}

void report_note(struct report *r, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	s = xrealloc(NULL, (size_t)n + 1);
	va_start(ap, fmt);
	vsnprintf(s, (size_t)n + 1, fmt, ap);
	va_end(ap);
	r->notes = xrealloc(r->notes, (r->nnotes + 1) * sizeof(*r->notes));
	r->notes[r->nnotes++] = s;
}

static void table_free(struct table *t)
{
	size_t i;

	for (i = 0; i < t->nrows * t->ncols; i++)
		if (t->cells[i].kind == CELL_STR)
			free(t->cells[i].v.s);
	for (i = 0; i < t->ncols; i++)
		free(t->cols[i].name);
	free(t->cells);
	free(t->cols);
	free(t->name);
	free(t->title);
	free(t);
}

void report_free(struct report *r)
{
	struct table *t, *next;
	size_t i;

	if (!r)
		return;
	for (t = r->first; t; t = next) {
		next = t->next;
		table_free(t);
	}
	for (i = 0; i < r->nnotes; i++)
		free(r->notes[i]);
	free(r->notes);
	free(r);
}

void table_add_column(struct table *t, const char *name, enum column_type type, int precision)
{
	if (t->nrows) {
		/* Columns come first; a late column would misalign every row. */
		warning("table '%s': column '%s' added after rows, ignored", t->name, name);
		return;
	}
	t->cols = xrealloc(t->cols, (t->ncols + 1) * sizeof(*t->cols));
	t->cols[t->ncols].name = xstrdup(name);
	t->cols[t->ncols].type = type;
	t->cols[t->ncols].precision = precision < 0 ? 0 : precision > 17 ? 17 : precision;
	t->cols[t->ncols].max_width = 0;
	t->cols[t->ncols].elastic = false;
	t->cols[t->ncols].hide_empty = false;
	t->cols[t->ncols].drop_rank = 0;
	t->cols[t->ncols].wrap = false;
	t->ncols++;
}

void table_column_max_width(struct table *t, size_t width)
{
	if (t->ncols)
		t->cols[t->ncols - 1].max_width = width < 4 ? 4 : width > CLIP_MAX ? CLIP_MAX : width;
}

void table_column_elastic(struct table *t)
{
	if (t->ncols)
		t->cols[t->ncols - 1].elastic = true;
}

void table_column_wrap(struct table *t)
{
	if (t->ncols)
		t->cols[t->ncols - 1].wrap = true;
}

void table_column_hide_empty(struct table *t)
{
	if (t->ncols)
		t->cols[t->ncols - 1].hide_empty = true;
}

void table_column_droppable(struct table *t, int rank)
{
	if (t->ncols)
		t->cols[t->ncols - 1].drop_rank = rank < 1 ? 1 : rank;
}

void table_optional(struct table *t)
{
	t->optional = true;
}

void table_row(struct table *t)
{
	size_t i;

	if (t->nrows == t->cap_rows) {
		t->cap_rows = t->cap_rows ? 2 * t->cap_rows : 16;
		t->cells = xrealloc(t->cells, t->cap_rows * t->ncols * sizeof(*t->cells));
	}
	for (i = 0; i < t->ncols; i++)
		t->cells[t->nrows * t->ncols + i].kind = CELL_EMPTY;
	t->nrows++;
	t->next_col = 0;
}

/* The next cell of the current row, or NULL when the row is full (or absent). */
static struct cell *next_cell(struct table *t)
{
	if (t->nrows == 0 || t->next_col >= t->ncols)
		return NULL;
	return &t->cells[(t->nrows - 1) * t->ncols + t->next_col++];
}

void table_str(struct table *t, const char *s)
{
	struct cell *c = next_cell(t);

	if (!c)
		return;
	c->kind = s ? CELL_STR : CELL_EMPTY;
	if (s)
		c->v.s = xstrdup(s);
}

void table_int(struct table *t, int64_t v)
{
	struct cell *c = next_cell(t);

	if (!c)
		return;
	c->kind = CELL_INT;
	c->v.i = v;
}

void table_float(struct table *t, double v)
{
	struct cell *c = next_cell(t);

	if (!c)
		return;
	c->kind = CELL_FLOAT;
	c->v.f = v;
}

void table_count(struct table *t, double v)
{
	if (v == floor(v) && fabs(v) < 9.2e18)
		table_int(t, (int64_t)v);
	else
		table_float(t, v);
}

void table_empty(struct table *t)
{
	next_cell(t);
}

size_t table_rows(const struct table *t)
{
	return t->nrows;
}

/* Forgets the rows, keeping the columns (and the memory for the next rows). */
static void table_clear_rows(struct table *t)
{
	for (size_t i = 0; i < t->nrows * t->ncols; i++)
		if (t->cells[i].kind == CELL_STR)
			free(t->cells[i].v.s);
	t->nrows = 0;
	t->next_col = 0;
}

/* ---- rendering cells ---- */

static const struct cell *cell_at(const struct table *t, size_t row, size_t col)
{
	return &t->cells[row * t->ncols + col];
}

/* ---- stacking ---- */

static bool same_columns(const struct table *a, const struct table *b, size_t skip)
{
	if (a->ncols != b->ncols + skip)
		return false;
	for (size_t i = 0; i < b->ncols; i++)
		if (a->cols[i + skip].type != b->cols[i].type || strcmp(a->cols[i + skip].name, b->cols[i].name))
			return false;
	return true;
}

/* dst's table that takes t's rows: a namesake with t's columns, or a new one. */
static struct table *stack_target(struct report *dst, const struct table *t, const char *label,
				  const char *column, bool numeric)
{
	struct table *d, *namesake = NULL;
	char name[256];

	for (d = dst->first; d; d = d->next)
		if (!strcmp(d->name, t->name)) {
			namesake = d;
			if (same_columns(d, t, 1))
				return d;
		}
	if (namesake)
		snprintf(name, sizeof(name), "%s.%s", t->name, label);
	d = report_add_table(dst, namesake ? name : t->name, t->title);
	d->optional = t->optional;
	table_add_column(d, column, numeric ? COL_INT : COL_STR, 0);
	for (size_t i = 0; i < t->ncols; i++) {
		char *name;

		table_add_column(d, t->cols[i].name, t->cols[i].type, t->cols[i].precision);
		name = d->cols[d->ncols - 1].name;   /* the text format's ways to fit stay with the column */
		d->cols[d->ncols - 1] = t->cols[i];
		d->cols[d->ncols - 1].name = name;
	}
	return d;
}

static bool has_note(const struct report *r, const char *note)
{
	for (size_t i = 0; i < r->nnotes; i++)
		if (!strcmp(r->notes[i], note))
			return true;
	return false;
}

/* Whether s is a decimal integer ("0", "12"): the labels of ranks, which JSON then gets as numbers. */
static bool is_integer(const char *s)
{
	return *s && strspn(s, "0123456789") == strlen(s) && strlen(s) < 19;
}

void report_stack(struct report *dst, struct report *const *src, const char *const *labels, size_t n,
		  const char *column)
{
	bool numeric = true;

	for (size_t k = 0; k < n; k++)
		numeric &= is_integer(labels[k]);
	for (size_t k = 0; k < n; k++)
		for (const struct table *t = src[k]->first; t; t = t->next) {
			struct table *d = stack_target(dst, t, labels[k], column, numeric);

			for (size_t row = 0; row < t->nrows; row++) {
				table_row(d);
				if (numeric)
					table_int(d, strtoll(labels[k], NULL, 10));
				else
					table_str(d, labels[k]);
				for (size_t col = 0; col < t->ncols; col++) {
					const struct cell *c = cell_at(t, row, col);

					if (c->kind == CELL_STR)
						table_str(d, c->v.s);
					else if (c->kind == CELL_INT)
						table_int(d, c->v.i);
					else if (c->kind == CELL_FLOAT)
						table_float(d, c->v.f);
					else
						table_empty(d);
				}
			}
		}
	for (size_t k = 0; k < n; k++)
		for (size_t i = 0; i < src[k]->nnotes; i++) {
			const char *note = src[k]->notes[i];
			bool everywhere = true, seen = false;

			for (size_t j = 0; j < n; j++)
				everywhere &= has_note(src[j], note);
			for (size_t j = 0; j < k && everywhere; j++)
				seen |= has_note(src[j], note);
			if (!everywhere)
				report_note(dst, "%s: %s", labels[k], note);
			else if (!seen)
				report_note(dst, "%s", note);
		}
}

/*
 * Formats a cell for the text formats into buf. `grouped` adds thousands
 * separators. Returns buf, or the string itself for string cells.
 */
static const char *format_cell(const struct table *t, size_t col, const struct cell *c,
			       bool grouped, char *buf, size_t len)
{
	char raw[64];
	int prec = t->cols[col].precision;

	switch (c->kind) {
	case CELL_EMPTY:
		return "";
	case CELL_STR:
		return c->v.s;
	case CELL_INT:
		/* a whole number stays whole, even in a column of fractions */
		snprintf(raw, sizeof(raw), "%" PRId64, c->v.i);
		break;
	case CELL_FLOAT:
		if (isnan(c->v.f))
			return "nan";
		if (isinf(c->v.f))
			return c->v.f < 0 ? "-inf" : "inf";
		if (t->cols[col].type == COL_INT)
			prec = 0;
		snprintf(raw, sizeof(raw), "%.*f", prec, c->v.f);
		/* Rounded negatives ("-0.0") read as a sign error. */
		if (raw[0] == '-' && strspn(raw + 1, "0.") == strlen(raw + 1))
			memmove(raw, raw + 1, strlen(raw));
		break;
	}
	if (grouped)
		human_group_digits(raw, buf, len);
	else
		snprintf(buf, len, "%s", raw);
	return buf;
}

/* Display width: UTF-8 code points, so "±" counts once. */
static size_t text_width(const char *s)
{
	size_t w = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			w++;
	return w;
}

/* s cut to the column's width in the text format, "..." marking the cut (whole code points). */
static const char *clip(const struct column *c, const char *s, char *buf)
{
	size_t w = 0, i = 0;

	if (!c->max_width || text_width(s) <= c->max_width)
		return s;
	for (; s[i]; i++) {
		if (((unsigned char)s[i] & 0xC0) != 0x80 && ++w > c->max_width - 3)
			break;
	}
	memcpy(buf, s, i);
	memcpy(buf + i, "...", 4);
	return buf;
}

/* See table.h. */
const char *table_clip_middle(const char *s, size_t width, char *buf, size_t len)
{
	size_t w = text_width(s), head, tail, i = 0, j, k = 0;

	if (w <= width || width < 8)
		return s;
	head = (width - 3) / 3;   /* the leaf names the row: it keeps two thirds */
	tail = width - 3 - head;
	for (; s[i] && k < head; k++)   /* i: the byte after `head` code points */
		for (i++; ((unsigned char)s[i] & 0xC0) == 0x80; i++)
			;
	j = strlen(s);
	for (k = 0; j > i && k < tail; k++)   /* j: the byte `tail` code points from the end */
		while (j > i && ((unsigned char)s[--j] & 0xC0) == 0x80)
			;
	if (i + 3 + strlen(s + j) + 1 > len)
		return s;
	memcpy(buf, s, i);
	memcpy(buf + i, "...", 3);
	memcpy(buf + i + 3, s + j, strlen(s + j) + 1);
	return buf;
}

static bool column_is_numeric(const struct column *c)
{
	return c->type != COL_STR;
}

/*
 * A note for people: lines of at most `width` characters, broken between
 * words, continued indented by two spaces; a word wider than a line stays
 * whole. Characters are counted as bytes, except UTF-8 continuation bytes.
 * A note that fits, has lines of its own or starts indented is printed as
 * it is.
 */
static void print_wrapped(FILE *out, const char *s, size_t width)
{
	size_t col = 0, indent = 0;

	if (strlen(s) <= width || strchr(s, '\n') || s[0] == ' ') {   /* short, or laid out already */
		fprintf(out, "%s\n", s);
		return;
	}
	while (*s) {
		size_t wlen = strcspn(s, " "), cols = 0;

		for (size_t k = 0; k < wlen; k++)
			cols += ((unsigned char)s[k] & 0xC0) != 0x80;
		if (col > indent && col + 1 + cols > width) {
			fputs("\n  ", out);
			col = indent = 2;
		} else if (col > indent) {
			fputc(' ', out);
			col++;
		}
		fwrite(s, 1, wlen, out);
		col += cols;
		s += wlen;
		while (*s == ' ')
			s++;
	}
	fputc('\n', out);
}

/* ---- text ---- */

/* One line of the text table, built whole so trailing blanks can be cut. */
struct line {
	char *buf;
	size_t len, cap;
};

static void line_put(struct line *l, const char *s, size_t n)
{
	if (l->len + n + 1 > l->cap) {
		l->cap = 2 * (l->len + n + 1);
		l->buf = xrealloc(l->buf, l->cap);
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
	l->buf[l->len] = '\0';
}

static void line_repeat(struct line *l, char c, size_t n)
{
	while (n--)
		line_put(l, &c, 1);
}

static void line_cell(struct line *l, size_t col, const char *s, size_t width, bool right)
{
	size_t w = text_width(s), pad = width > w ? width - w : 0;

	if (col)
		line_repeat(l, ' ', 2);
	if (right)
		line_repeat(l, ' ', pad);
	line_put(l, s, strlen(s));
	if (!right)
		line_repeat(l, ' ', pad);
}

static void line_flush(struct line *l, FILE *out)
{
	while (l->len && l->buf[l->len - 1] == ' ')
		l->len--;
	fwrite(l->buf ? l->buf : "", 1, l->len, out);
	fputc('\n', out);
	l->len = 0;
}

/* The text of cell (r, c) as the text format prints it, before an elastic column's cut. */
static const char *text_cell(const struct table *t, size_t r, size_t c, char *buf, size_t len, char *cut)
{
	return clip(&t->cols[c], format_cell(t, c, cell_at(t, r, c), true, buf, len), cut);
}

/* What the text format gave up to fit TABLE_TEXT_WIDTH, for its closing note. */
struct text_fit {
	bool cut;               /* an elastic column's cell was cut */
	char dropped[256];      /* the columns left out, ", "-separated */
};

/* The narrowest an elastic column is cut to, and a wrapped one wrapped to (or its heading's width). */
#define ELASTIC_MIN 24
#define WRAP_MIN 12

static size_t wrap_min(const struct column *c)
{
	size_t w = text_width(c->name);

	return w > WRAP_MIN ? w : WRAP_MIN;
}

/* How much a column may give up to fit: an elastic one down to ELASTIC_MIN, a wrapped one to wrap_min. */
static size_t slack_of(const struct column *c, size_t width)
{
	size_t min = c->wrap ? wrap_min(c) : ELASTIC_MIN;

	return (c->elastic || c->wrap) && width > min ? width - min : 0;
}

/*
 * The next line of s wrapped to `width` characters: its length in bytes,
 * and in *next where the line after it starts. Lines break after a space
 * (left out) or a comma; a word wider than the line is cut.
 */
static size_t wrap_line(const char *s, size_t width, size_t *next)
{
	size_t i = 0, w = 0, end = 0, after = 0;

	while (s[i] && w < width) {
		size_t j = i + 1;

		while (s[j] && ((unsigned char)s[j] & 0xC0) == 0x80)
			j++;
		if (s[i] == ' ' && i)
			end = i, after = j;
		else if (s[i] == ',' && (s[j] < '0' || s[j] > '9'))   /* not inside 1,048 */
			end = after = j;
		w++;
		i = j;
	}
	if (!s[i] || s[i] == ' ')   /* the rest fits, or a space follows the line */
		end = after = i;
	else if (!end)              /* one word wider than the line */
		end = after = i;
	while (s[after] == ' ')
		after++;
	*next = after;
	return end;
}

/* Prints t aligned, noting in fit (may be NULL) what it gave up to fit. */
static void print_text(const struct table *t, FILE *out, struct text_fit *fit)
{
	size_t *width = xrealloc(NULL, (t->ncols ? t->ncols : 1) * sizeof(*width));
	struct line l = { NULL, 0, 0 };
	char buf[96], cut[4 * CLIP_MAX + 4], *mid = NULL, *piece = NULL;
	size_t r, c, total = 0, elastic_slack = 0, droppable = 0;
	size_t *rest = xrealloc(NULL, (t->ncols ? t->ncols : 1) * sizeof(*rest));   /* a wrapped cell's next line */
	bool cut_any = false, started = false, *hidden = xrealloc(NULL, (t->ncols ? t->ncols : 1) * sizeof(*hidden));

	for (c = 0; c < t->ncols; c++) {
		hidden[c] = t->cols[c].hide_empty;
		for (r = 0; r < t->nrows && hidden[c]; r++)
			hidden[c] = cell_at(t, r, c)->kind == CELL_EMPTY;
	}
	for (c = 0; c < t->ncols; c++) {
		width[c] = text_width(t->cols[c].name);
		for (r = 0; r < t->nrows; r++) {
			size_t w = text_width(text_cell(t, r, c, buf, sizeof(buf), cut));
			if (w > width[c])
				width[c] = w;
		}
		if (!hidden[c])
			total += width[c] + (total ? 2 : 0);
	}
	/* Droppable columns go, lowest rank first, while the table cannot fit with its elastic columns cut. */
	for (c = 0; c < t->ncols; c++)
		if (!hidden[c])
			elastic_slack += slack_of(&t->cols[c], width[c]);
	for (c = 0; c < t->ncols; c++)   /* dropping columns is for a table it makes fit */
		if (t->cols[c].drop_rank && !hidden[c])
			droppable += width[c] + 2;
	while (total - elastic_slack > TABLE_TEXT_WIDTH && total - elastic_slack - droppable <= TABLE_TEXT_WIDTH) {
		size_t drop = t->ncols;

		for (c = 0; c < t->ncols; c++)
			if (t->cols[c].drop_rank && !hidden[c] &&
			    (drop == t->ncols || t->cols[c].drop_rank < t->cols[drop].drop_rank))
				drop = c;
		if (drop == t->ncols)
			break;
		hidden[drop] = true;
		total -= width[drop] + 2;
		if (fit) {
			size_t n = strlen(fit->dropped);

			snprintf(fit->dropped + n, sizeof(fit->dropped) - n, "%s%s", n ? ", " : "", t->cols[drop].name);
		}
	}
	/* Elastic and wrapped columns give up width, the widest first, down to their least, until the table fits. */
	while (total > TABLE_TEXT_WIDTH && elastic_slack) {
		size_t widest = t->ncols;

		for (c = 0; c < t->ncols; c++)
			if (!hidden[c] && slack_of(&t->cols[c], width[c]) && width[c] > text_width(t->cols[c].name) &&
			    (widest == t->ncols || width[c] > width[widest]))
				widest = c;
		if (widest == t->ncols)
			break;
		width[widest]--;
		total--;
	}
	if (t->title) {
		print_wrapped(out, t->title, TABLE_TEXT_WIDTH);
		fputc('\n', out);
	}
	for (c = 0; c < t->ncols; c++)
		if (!hidden[c])
			line_cell(&l, l.len, t->cols[c].name, width[c], column_is_numeric(&t->cols[c]));
	line_flush(&l, out);
	for (c = 0; c < t->ncols; c++) {
		if (hidden[c])
			continue;
		if (l.len)
			line_repeat(&l, ' ', 2);
		line_repeat(&l, '-', width[c]);
	}
	line_flush(&l, out);
	for (r = 0; r < t->nrows; r++) {
		bool more = false;

		for (c = 0; c < t->ncols; c++) {
			const char *s = text_cell(t, r, c, buf, sizeof(buf), cut);
			bool first = !started;

			if (hidden[c])
				continue;
			started = true;

			if (t->cols[c].elastic && text_width(s) > width[c]) {
				size_t need = strlen(s) + 4;

				mid = xrealloc(mid, need);
				s = table_clip_middle(s, width[c], mid, need);
				cut_any = true;
			}
			if (t->cols[c].wrap && text_width(s) > width[c]) {
				size_t next, n = wrap_line(s, width[c], &next);

				piece = xrealloc(piece, n + 1);
				memcpy(piece, s, n);
				piece[n] = '\0';
				rest[c] = s[next] ? next : SIZE_MAX;
				more |= rest[c] != SIZE_MAX;
				s = piece;
			} else {
				rest[c] = SIZE_MAX;
			}
			line_cell(&l, !first, s, width[c], column_is_numeric(&t->cols[c]));
		}
		started = false;
		line_flush(&l, out);
		/* the wrapped cells' further lines, the other columns blank */
		while (more) {
			more = false;
			for (c = 0; c < t->ncols; c++) {
				const char *s = "";

				if (hidden[c])
					continue;
				if (rest[c] != SIZE_MAX) {
					const char *whole = text_cell(t, r, c, buf, sizeof(buf), cut) + rest[c];
					size_t next, n = wrap_line(whole, width[c], &next);

					piece = xrealloc(piece, n + 1);
					memcpy(piece, whole, n);
					piece[n] = '\0';
					s = piece;
					rest[c] = whole[next] ? rest[c] + next : SIZE_MAX;
					more |= rest[c] != SIZE_MAX;
				}
				line_cell(&l, started, s, width[c], column_is_numeric(&t->cols[c]));
				started = true;
			}
			started = false;
			line_flush(&l, out);
		}
	}
	free(mid);
	free(piece);
	free(rest);
	free(l.buf);
	free(width);
	free(hidden);
	if (fit)
		fit->cut |= cut_any;
}

/* ---- csv ---- */

static void put_csv_field(FILE *out, const char *s)
{
	if (strpbrk(s, ",\"\r\n") == NULL) {
		fputs(s, out);
		return;
	}
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', out);
		fputc(*s, out);
	}
	fputc('"', out);
}

static void print_csv_header(const struct table *t, FILE *out)
{
	for (size_t c = 0; c < t->ncols; c++) {
		if (c)
			fputc(',', out);
		put_csv_field(out, t->cols[c].name);
	}
	fputc('\n', out);
}

static void print_csv_row(const struct table *t, size_t r, FILE *out)
{
	char buf[96];

	for (size_t c = 0; c < t->ncols; c++) {
		if (c)
			fputc(',', out);
		put_csv_field(out, format_cell(t, c, cell_at(t, r, c), false, buf, sizeof(buf)));
	}
	fputc('\n', out);
}

static void print_csv(const struct table *t, FILE *out)
{
	print_csv_header(t, out);
	for (size_t r = 0; r < t->nrows; r++)
		print_csv_row(t, r, out);
}

/* ---- markdown ---- */

static void put_md_field(FILE *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			fputs("\\|", out);
		else if (*s == '\n' || *s == '\r')
			fputc(' ', out);
		else
			fputc(*s, out);
	}
}

static void print_md_header(const struct table *t, FILE *out)
{
	size_t c;

	if (t->title)
		fprintf(out, "### %s\n\n", t->title);
	fputc('|', out);
	for (c = 0; c < t->ncols; c++) {
		fputc(' ', out);
		put_md_field(out, t->cols[c].name);
		fputs(" |", out);
	}
	fputs("\n|", out);
	for (c = 0; c < t->ncols; c++)
		fputs(column_is_numeric(&t->cols[c]) ? " ---: |" : " --- |", out);
	fputc('\n', out);
}

static void print_md_row(const struct table *t, size_t r, FILE *out)
{
	char buf[96];

	fputc('|', out);
	for (size_t c = 0; c < t->ncols; c++) {
		fputc(' ', out);
		put_md_field(out, format_cell(t, c, cell_at(t, r, c), false, buf, sizeof(buf)));
		fputs(" |", out);
	}
	fputc('\n', out);
}

static void print_md(const struct table *t, FILE *out)
{
	print_md_header(t, out);
	for (size_t r = 0; r < t->nrows; r++)
		print_md_row(t, r, out);
}

/* ---- json ---- */

static json_t *json_cell(const struct table *t, size_t col, const struct cell *c)
{
	switch (c->kind) {
	case CELL_STR:
		return json_string_utf8(c->v.s);
	case CELL_INT:
		return json_integer((json_int_t)c->v.i);
	case CELL_FLOAT:
		if (!isfinite(c->v.f))
			return json_null();
		if (t->cols[col].type == COL_INT && fabs(c->v.f) < 9.2e18)
			return json_integer((json_int_t)llround(c->v.f));
		return json_real(c->v.f);
	case CELL_EMPTY:
		break;
	}
	return json_null();
}

static json_t *json_row(const struct table *t, size_t row)
{
	json_t *obj = json_object();

	for (size_t c = 0; c < t->ncols; c++)
		json_object_set_new(obj, t->cols[c].name, json_cell(t, c, cell_at(t, row, c)));
	return obj;
}

static json_t *report_json(const struct report *r)
{
	json_t *doc = json_object();
	const struct table *t;
	size_t i, row;

	for (t = r->first; t; t = t->next) {
		json_t *rows = json_array();

		for (row = 0; row < t->nrows; row++)
			json_array_append_new(rows, json_row(t, row));
		json_object_set_new(doc, t->name, rows);
	}
	{
		json_t *notes = json_array();

		for (i = 0; i < r->nnotes; i++)
			json_array_append_new(notes, json_string_utf8(r->notes[i]));
		json_object_set_new(doc, "notes", notes);
	}
	return doc;
}

/* ---- streaming ---- */

#define JSON_FLAGS (JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15))

/* The document's opening: the header row, or JSON's key; once, before the first row. */
static void stream_begin(struct table *t, enum out_format f, FILE *out)
{
	json_t *key;

	t->streamed = true;
	switch (f) {
	case OUT_CSV:
		print_csv_header(t, out);
		break;
	case OUT_MD:
		print_md_header(t, out);
		break;
	case OUT_JSON:
		key = json_string_utf8(t->name);
		fputs("{\n  ", out);
		json_dumpf(key, out, JSON_ENCODE_ANY);
		fputs(": [", out);
		json_decref(key);
		break;
	default:
		break;
	}
}

void table_stream_row(struct table *t, enum out_format f, FILE *out)
{
	if (!t->streamed)
		stream_begin(t, f, out);
	for (size_t r = 0; r < t->nrows; r++) {
		json_t *obj;

		switch (f) {
		case OUT_CSV:
			print_csv_row(t, r, out);
			break;
		case OUT_MD:
			print_md_row(t, r, out);
			break;
		case OUT_JSON:
			obj = json_row(t, r);
			fputs(t->rows_streamed ? ",\n    " : "\n    ", out);
			json_dumpf(obj, out, JSON_FLAGS);
			json_decref(obj);
			break;
		default:
			print_text(t, out, NULL);
			r = t->nrows;
			break;
		}
		t->rows_streamed++;
	}
	table_clear_rows(t);
}

void table_stream_end(struct table *t, enum out_format f, FILE *out, const char *note)
{
	json_t *s;

	if (!t->streamed)
		stream_begin(t, f, out);
	switch (f) {
	case OUT_JSON:
		fputs(t->rows_streamed ? "\n  ],\n  \"notes\": [" : "],\n  \"notes\": [", out);
		if (note) {
			s = json_string_utf8(note);
			fputs("\n    ", out);
			json_dumpf(s, out, JSON_ENCODE_ANY);
			fputs("\n  ", out);
			json_decref(s);
		}
		fputs("]\n}\n", out);
		break;
	case OUT_CSV:
		if (note)
			fprintf(stderr, "%s\n", note);
		break;
	case OUT_MD:
		if (note)
			fprintf(out, "\n- %s\n", note);
		break;
	default:
		break;
	}
}

/* ---- reports ---- */

/* Whether the table, csv and md formats print t: an optional table without rows only when alone (--section). */
static bool table_shown(const struct report *r, const struct table *t)
{
	return !t->optional || t->nrows || r->first == r->last;
}

static size_t report_table_count(const struct report *r)
{
	const struct table *t;
	size_t n = 0;

	for (t = r->first; t; t = t->next)
		n += table_shown(r, t);
	return n;
}

const char *report_table_name(const struct report *r, size_t i)
{
	const struct table *t = r->first;

	while (t && i--)
		t = t->next;
	return t ? t->name : NULL;
}

int report_keep_table(struct report *r, const char *name)
{
	struct table *t, *next, *keep = NULL;
	char list[512];
	size_t len = 0;

	for (t = r->first; t; t = t->next)
		if (!keep && !strcmp(t->name, name))
			keep = t;
	if (!keep) {
		list[0] = '\0';
		for (t = r->first; t && len < sizeof(list); t = t->next)
			len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", t == r->first ? "" : ", ",
						t->name);
		return error("option '--section' expects one of this report's tables (%s), not '%s'",
			     r->first ? list : "none", name);
	}
	for (t = r->first; t; t = next) {
		next = t->next;
		if (t != keep)
			table_free(t);
	}
	keep->next = NULL;
	r->first = r->last = keep;
	return 0;
}

/* One line for a failed write of `out`, with the reason. */
static int write_failed(FILE *out)
{
	int e = errno ? errno : EIO;

	if (out == stdout)
		return error("cannot write to standard output: %s", strerror(e));
	return error("cannot write the report: %s", strerror(e));
}

int report_print(const struct report *r, enum out_format f, FILE *out)
{
	const struct table *t;
	size_t i, ntables = report_table_count(r);
	struct text_fit fit = { false, "" };

	errno = 0;
	if (f == OUT_JSON) {
		json_t *doc = report_json(r);
		int rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_FLAGS);

		json_decref(doc);
		if (rc < 0)
			return write_failed(out);
		fputc('\n', out);
	} else {
		bool first = true;

		for (t = r->first; t; t = t->next) {
			if (!table_shown(r, t))
				continue;
			if (!first)
				fputc('\n', out);
			first = false;
			switch (f) {
			case OUT_CSV:
				/* A lone table stays plain CSV for spreadsheets and pandas. */
				if (ntables > 1)
					fprintf(out, "# %s\n", t->title ? t->title : t->name);
				print_csv(t, out);
				break;
			case OUT_MD:
				print_md(t, out);
				break;
			default:
				print_text(t, out, &fit);
				break;
			}
		}
		/* CSV is the table alone: what the table format says after it goes to stderr */
		if ((r->nnotes || fit.cut || fit.dropped[0]) && ntables && f != OUT_CSV)
			fputc('\n', out);
		for (i = 0; i < r->nnotes; i++) {
			if (f == OUT_CSV)
				fprintf(stderr, "%s\n", r->notes[i]);
			else if (f == OUT_MD)
				fprintf(out, "- %s\n", r->notes[i]);
			else
				print_wrapped(out, r->notes[i], TABLE_TEXT_WIDTH);
		}
		if (fit.cut || fit.dropped[0]) {
			char what[320];

			if (fit.dropped[0])
				snprintf(what, sizeof(what), "left out %s%s", fit.dropped,
					 fit.cut ? " and cut names in the middle (...)" : "");
			else
				snprintf(what, sizeof(what), "cut names in the middle (...)");
			char note[512];

			snprintf(note, sizeof(note), "to fit %d columns this table %s; --format md, csv or json prints %s",
				 TABLE_TEXT_WIDTH, what, fit.dropped[0] ? "every column, names whole" : "names whole");
			print_wrapped(out, note, TABLE_TEXT_WIDTH);
		}
	}
	if (fflush(out) != 0 || ferror(out))
		return write_failed(out);
	return 0;
}
