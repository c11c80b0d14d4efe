/*
 * table.h: every report's output. A report is a list of tables (and
 * free-text notes) printed in one of four formats:
 *
 *   table  aligned text, numbers right-aligned, a title line above each table,
 *          the notes after the tables
 *   csv    RFC 4180: a header row, then rows of as many fields, nothing else.
 *          A report of one table is a file any CSV reader takes with its
 *          defaults (the analysis commands keep one: report_keep_table); a
 *          report of several (bench's sweeps) prints each after a blank line
 *          and a "# title" line. The notes go to standard error.
 *   json   one document: { "<table name>": [ {column: value, ...}, ... ], ...,
 *          "notes": [ ... ] }, numbers as JSON numbers, empty cells as null;
 *          every table is there, empty ones as [], and "notes" always
 *   md     GitHub-flavoured Markdown tables with a "### title" line, the
 *          notes as a list after them
 *
 * Build with table_new / table_add_column, then per row table_row followed by
 * one table_* cell call per column, in column order. A cell keeps its own
 * type: an integer cell prints as an integer in any column.
 */
#ifndef STEPTRACE_LIB_TABLE_H
#define STEPTRACE_LIB_TABLE_H

#include <stdint.h>
#include <stdio.h>

#include "lib/options.h"

/* The numbering of out_format_names ("table", "csv", "json", "md"). */
enum out_format { OUT_TABLE, OUT_CSV, OUT_JSON, OUT_MD };
extern const char *const out_format_names[];

/* The --format option of every command that prints a report; v is an int *. */
#define OPT_FORMAT(v) OPT_CHOICE(0, "format", (v), out_format_names, "output format")

enum column_type { COL_STR, COL_INT, COL_FLOAT };

struct report;
struct table;

struct report *report_new(void);
/* `name` is the JSON key (snake_case); `title` the heading in text formats (may be NULL). */
struct table *report_add_table(struct report *r, const char *name, const char *title);
/* A free-text line printed after the tables (printf-style). */
void report_note(struct report *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The table format's notes are wrapped between words to this many columns. */
#define TABLE_TEXT_WIDTH 160
/* 0, or -1 after one line naming the write error ("cannot write to standard output: ..."). */
int report_print(const struct report *r, enum out_format f, FILE *out);
void report_free(struct report *r);

/* The name of the report's i-th table (in the order added), NULL past the last. */
const char *report_table_name(const struct report *r, size_t i);
/*
 * Keeps table `name` alone (its notes stay): what `--section NAME` prints.
 * 0, or -1 after one line naming the report's tables.
 */
int report_keep_table(struct report *r, const char *name);

/* `precision`: digits after the point for COL_FLOAT (ignored otherwise). */
void table_add_column(struct table *t, const char *name, enum column_type type, int precision);
/*
 * The last column added is cut to `width` characters in the text format
 * ("..." at the end); csv, json and md keep every cell whole. For long
 * kernel names beside other columns.
 */
void table_column_max_width(struct table *t, size_t width);
/*
 * The last column added (a path, a name) gives up width in the text format
 * when the table is wider than TABLE_TEXT_WIDTH: its cells are cut in the
 * middle ("..."), keeping both ends, down to 24 characters. csv, json and md
 * keep every cell whole.
 */
void table_column_elastic(struct table *t);
/*
 * The last column added (a formula, a sentence, a list) gives up width in
 * the text format when the table is wider than TABLE_TEXT_WIDTH: its cells
 * are broken onto more lines, between words (after a space or a comma),
 * down to 12 characters or its heading's width; the other columns of those
 * lines stay blank. csv, json and md keep every cell on one line.
 */
void table_column_wrap(struct table *t);
/*
 * The last column added is left out of the text format when no row has a
 * value in it (flops' dtypes on a bundle without them); csv, json and md
 * keep it, so their columns do not depend on the bundle.
 */
void table_column_hide_empty(struct table *t);
/*
 * The last column added may be left out of the text format when the table
 * would not fit TABLE_TEXT_WIDTH even with its elastic columns cut: the
 * droppable columns go lowest `rank` first, and a closing note names them.
 * For columns a reader can do without at a glance (flops' Min MB, ranges'
 * Style); csv, json and md keep every column.
 */
void table_column_droppable(struct table *t, int rank);
/*
 * s cut in the middle to `width` characters (UTF-8 code points), "..."
 * where the cut is: a range path keeps its root and, longer, its leaf. s
 * itself when it fits, when width < 8 or when buf (len bytes) is too small.
 */
const char *table_clip_middle(const char *s, size_t width, char *buf, size_t len);
/*
 * A table a report makes for every bundle but that often has no rows
 * (memory's never-freed blocks): without rows it is left out of the table,
 * csv and md formats unless it is the report's only table (--section), and
 * stays in JSON as [], so the keys a JSON reader finds do not depend on the
 * bundle.
 */
void table_optional(struct table *t);
void table_row(struct table *t);
void table_str(struct table *t, const char *s);     /* copied */
void table_int(struct table *t, int64_t v);
void table_float(struct table *t, double v);
/* A count, or a count per step: whole numbers print as integers, others with the column's precision. */
void table_count(struct table *t, double v);
void table_empty(struct table *t);                  /* an empty cell (null in JSON) */
size_t table_rows(const struct table *t);

/*
 * Several reports of one kind stacked into dst, one source per label
 * ("0", "1": the ranks of a run): each table becomes one table of dst whose
 * first column, `column`, names the source of each row (an integer column
 * when every label is one), the sources' rows one after the other. Tables match by name and columns; a table whose
 * columns differ from its namesake's keeps its own ("name.label"). A note
 * every source has is kept once; the others get "label: " in front.
 */
void report_stack(struct report *dst, struct report *const *src, const char *const *labels, size_t n,
		  const char *column);

/*
 * A table too long to keep (replay's event listing), printed as it is
 * built: after each row (or a few), table_stream_row prints the rows added
 * since its last call and forgets them, the header first; table_stream_end
 * closes the document with `note` (NULL: none). csv, json and md come out
 * as report_print prints a report of this one table and that note (JSON
 * with one row per line); OUT_TABLE prints each batch as its own aligned
 * block, so callers that stream text print their own fixed-width lines
 * instead.
 */
void table_stream_row(struct table *t, enum out_format f, FILE *out);
void table_stream_end(struct table *t, enum out_format f, FILE *out, const char *note);

#endif
