/* layers.h: the HTML report's per-layer card (layers.c). */
#ifndef STEPTRACE_REPORT_LAYERS_H
#define STEPTRACE_REPORT_LAYERS_H

#include <stdio.h>

#include "report/page.h"

/* Time per layer.N by part (attn, ffn, norm, ...). 0, or -1 with an error line. */
int page_layers(FILE *out, const struct page_data *d);

#endif
