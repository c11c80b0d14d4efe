/* explain.h: the HTML report's Explain card (explain.c). */
#ifndef STEPTRACE_REPORT_EXPLAIN_H
#define STEPTRACE_REPORT_EXPLAIN_H

#include <stdio.h>

#include "report/page.h"

/* The Explain card (analyze/explain.h) of d's run. 0 or -1 with an error line. */
int page_explain(FILE *out, const struct page_data *d);

#endif
