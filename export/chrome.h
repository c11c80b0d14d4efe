/* chrome.h: private to export/. The layout's marks as Chrome's JSON Trace Event Format (chrome.c). */
#ifndef STEPTRACE_EXPORT_CHROME_H
#define STEPTRACE_EXPORT_CHROME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "export/layout.h"

/* L's marks to out. -1 after an error line. */
int export_write_chrome(const struct layout *L, FILE *out);
/* Several ranks' layouts as one JSON document. -1 after an error line. */
int export_write_chrome_ranks(const struct layout *const *L, size_t n, FILE *out);
/* L's marks in Kineto's flavour (chrome.c): what torch.profiler writes, for HTA. */
int export_write_chrome_kineto(const struct layout *L, FILE *out);
/* Its size, before writing (export_estimate), in either flavour. -1 after an error line. */
int export_estimate_chrome(const struct layout *L, bool kineto, uint64_t *bytes);

#endif
