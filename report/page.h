/*
 * page.h: what the files of the HTML report share (page.c): a bundle's
 * numbers computed once, the page's parts and the pieces of HTML every
 * card writes. report.c writes the page, sections.c a bundle's cards,
 * comm.c, explain.c and layers.c a card each, diff.c a pair's page; they
 * all include this, and this includes none of them. Not a public
 * interface: report.h is.
 */
#ifndef STEPTRACE_REPORT_PAGE_H
#define STEPTRACE_REPORT_PAGE_H

#include <stdbool.h>
#include <stdio.h>

#include "analyze/category.h"
#include "analyze/flops.h"
#include "lib/stats.h"
#include "lib/table.h"
#include "replay/memory.h"
#include "replay/ranks.h"
#include "replay/replay.h"

#define CHART_W 1140         /* natural width of the charts, CSS pixels: a card's at 1280 px */
#define VISIBLE_ROWS 15      /* rows of a long table shown before "Show all" */

/* What the page shows of one bundle, computed once. */
struct page_data {
	const struct replay *rp;
	const char *label;                 /* "A", "B" or NULL */
	const char *prefix;                /* of the element ids: "", "a-", "b-" */
	size_t divisor;                    /* measured steps (>= 1) */
	struct real_stats wall, busy;      /* ms over measured steps */
	bool have_steps;
	double phase_gpu[ST_PHASE_COUNT];  /* by enum st_phase, ns per step: GPU busy under each phase range */
	double phase_cpu[ST_PHASE_COUNT];  /* ns per step: host time of the phase ranges */
	uint32_t phase_kernels[ST_PHASE_COUNT];
	bool phase_from_ranges;            /* else from the ops' phases */
	double category_ns[CAT_COUNT];     /* per step */
	double kernel_ns;                  /* per step, kernels + copies */
	uint64_t kernels;                  /* counted kernel launches */
	struct mem_timeline tl;
	bool have_mem;
	struct flops_result fl;
	bool have_flops;
	const struct replay_ranks *ranks;  /* the run rp is rank 0 of, NULL for a bundle of its own */
	bool have_comm;                    /* a Communication card: collectives, or several ranks */
};

/*
 * 0, or -1 with an error line; release it either way. ranks: the run rp is
 * the first rank of (its cards are rp's, the Communication card every
 * rank's); NULL for a bundle of its own.
 */
int page_data_init(struct page_data *d, const struct replay *rp, const struct replay_ranks *ranks,
		   const char *label, const char *prefix);
void page_data_release(struct page_data *d);

/* ---- pieces of HTML ---------------------------------------------------- */

const char *page_base_name(const char *path);   /* "runs/a.stb" -> "a.stb" */
/* A <dt>key</dt><dd>value</dd> pair, the printf-style value escaped. */
void page_kv(FILE *out, const char *key, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* A card; its id carries d's prefix (d NULL: the diff's own cards). lead may be NULL. */
void page_section_begin(FILE *out, const struct page_data *d, const char *id, const char *title, const char *lead);
void page_section_end(FILE *out);
/* An SVG rect whose value shows on hover (report.js's tooltip); the tip is printf-style. */
void page_tip_rect(FILE *out, double x, double y, double w, double h, const char *fill, const char *fmt, ...)
	__attribute__((format(printf, 7, 8)));

/* The key numbers of a bundle: the text of each and its raw value (the diff compares them). */
enum page_kpi { KPI_STEP, KPI_BUSY, KPI_GEMM, KPI_PEAK, KPI_KERNELS, KPI_COUNT };
extern const char *const page_kpi_labels[KPI_COUNT];
struct page_kpi_text {
	char value[128], note[256];
	double raw;
	bool neutral;        /* a share: neither lower nor higher is better */
};
void page_kpi_texts(const struct page_data *d, struct page_kpi_text k[KPI_COUNT]);
/* One key number; delta (may be NULL) is raw HTML: the diff's coloured change. */
void page_kpi(FILE *out, const char *label, const char *value, const char *note, const char *delta);

/* ---- the page's parts ---------------------------------------------------- */

void page_begin(FILE *out, const char *title);   /* up to <main> */
void page_end(FILE *out);                         /* the footer, the script, </html> */
/* The title: a bundle's name, or "A vs B" with other. */
void page_top(FILE *out, const struct replay *rp, const struct replay *other);
/* A truncated, incomplete or lossy bundle's banner (label: "A", "B" or NULL); nothing for a sound one. */
void page_banner(FILE *out, const struct replay *rp, const char *label);
void page_chips(FILE *out, const struct replay *rp);
void page_run(FILE *out, const struct replay *rp);
void page_kpis(FILE *out, const struct page_data *d);

/* The run a card of d reads: d's ranks, or d's bundle as a run of one rank, held in *alone. */
struct page_alone {
	const struct replay *one[1];
	int64_t zero;
	struct replay_ranks rs;
};
const struct replay_ranks *page_ranks(const struct page_data *d, struct page_alone *alone);

/* A table of a card's report and the heading it prints under. */
struct page_part {
	const char *name, *title;
};
/*
 * r's tables named in parts[0..n), each under its <h3> title, with ids
 * "<prefix><card>-<name>", the notes after the last. 0, or -1 with an error line.
 */
int page_titled_tables(FILE *out, const struct page_data *d, const struct report *r, const char *card,
		       const struct page_part *parts, size_t n);

#endif
