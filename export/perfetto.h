/* perfetto.h: private to export/. The layout's marks as Perfetto's protobuf trace (perfetto.c). */
#ifndef STEPTRACE_EXPORT_PERFETTO_H
#define STEPTRACE_EXPORT_PERFETTO_H

#include <stdint.h>
#include <stdio.h>

#include "export/layout.h"

/* L's marks to out, as one packet sequence. -1 after an error line. */
int export_write_perfetto(const struct layout *L, FILE *out);
/* Its size, before writing (export_estimate). -1 after an error line. */
int export_estimate_perfetto(const struct layout *L, uint64_t *bytes);

#endif
