/*
 * report.c: the HTML report (see report.h), the top of report/: a
 * bundle's page (its cards are sections.c's) or a pair's (diff.c's),
 * computed once, measured and written. What the files share is page.c's;
 * the page's style and scripts are report.css, guard.js and report.js
 * (assets.h); the timeline's data is timeline.c's.
 */
#include "report/report.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "analyze/common.h"
#include "lib/error.h"
#include "lib/human.h"
#include "lib/output.h"
#include "report/diff.h"
#include "report/page.h"
#include "report/sections.h"

/* One bundle's page from its data (ctx), computed once and written as often as asked. */
static int write_single(void *ctx, FILE *out)
{
	const struct page_data *d = ctx;

	page_begin(out, page_base_name(d->rp->path));
	page_top(out, d->rp, NULL);
	page_banner(out, d->rp, NULL);
	page_nav(out, d);
	page_kpis(out, d);
	if (page_bundle_sections(out, d) < 0)
		return -1;
	page_end(out);
	return 0;
}

/* What page_begin writes near the top of every page: how a report steptrace wrote is told from other files. */
#define PAGE_GENERATOR "<meta name=\"generator\" content=\"steptrace report\">"

/* The default output (no -o) replaces only a page steptrace wrote: PAGE_GENERATOR in its first 4 KiB. */
static bool page_is_ours(const char *path, const char *head, void *ctx)
{
	(void)path;
	(void)ctx;
	return strstr(head, PAGE_GENERATOR) != NULL;
}

/*
 * The one place the page reaches the disk: computed once, measured, then
 * written; an error or a page over max_size leaves no page behind.
 */
int report_html_write(const struct replay_ranks *a, const struct replay_ranks *b, const char *output,
		      uint64_t max_size)
{
	size_t n = a->n + (b ? b->n : 0), k = 0;
	const char **inputs = calloc(n + 1, sizeof(*inputs));
	struct page_data single;
	struct page_pair pair;
	struct output out;
	bool replaced = false;
	char *owned = NULL, size[32];
	uint64_t bytes = 0;
	int rc = -1;

	memset(&single, 0, sizeof(single));
	memset(&pair, 0, sizeof(pair));
	if (!inputs)
		return error("out of memory");
	for (size_t r = 0; r < a->n; r++)
		inputs[k++] = a->rank[r]->path;
	for (size_t r = 0; b && r < b->n; r++)
		inputs[k++] = b->rank[r]->path;
	if (!output)
		output = owned = bundle_output_name(a->rank[0]->path, b ? b->rank[0]->path : NULL, ".html");
	if (!output) {
		free(inputs);
		return error("out of memory");
	}
	if ((owned && output_check_default(output, "a report", page_is_ours, NULL, &replaced) < 0) || output_open(&out, output, inputs) < 0)
		goto out;
	if ((b ? page_pair_init(&pair, a, b) : page_data_init(&single, a->rank[0], a, NULL, "")) < 0) {
		output_discard(&out);
		goto out;
	}
	if (output_write_sized(&out, max_size, "HTML", NULL, b ? page_pair_write : write_single,
			       b ? (void *)&pair : (void *)&single, &bytes) < 0)
		goto out;
	rc = 0;
	fprintf(stderr, "wrote '%s' (%s%s): open it in any browser (self-contained, no network)\n", output,
		human_bytes(size, sizeof(size), (double)bytes),
		replaced ? ", replacing the report steptrace wrote there before" : "");
out:
	if (b)
		page_pair_release(&pair);
	else
		page_data_release(&single);
	free(inputs);
	free(owned);
	return rc;
}
