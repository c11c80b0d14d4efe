/* comm.h: the HTML report's Communication card (comm.c). */
#ifndef STEPTRACE_REPORT_COMM_H
#define STEPTRACE_REPORT_COMM_H

#include <stdio.h>

#include "report/page.h"

/* The Communication card (analyze/comm.h) of d's run. 0 or -1 with an error line. */
int page_comm(FILE *out, const struct page_data *d);

#endif
