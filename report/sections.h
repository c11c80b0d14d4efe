/*
 * sections.h: a bundle's cards, as its page and each half of a pair's page
 * show them (sections.c).
 */
#ifndef STEPTRACE_REPORT_SECTIONS_H
#define STEPTRACE_REPORT_SECTIONS_H

#include <stdio.h>

#include "report/page.h"

/* The table of contents: a link to each card of d. */
void page_nav(FILE *out, const struct page_data *d);
/* Every card of one bundle, run included. 0, or -1 with an error line. */
int page_bundle_sections(FILE *out, const struct page_data *d);

#endif
