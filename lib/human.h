/*
 * human.h: sizes, durations and counts for people: "2.41 GiB", "38.6 ms",
 * "2,637". Three significant digits, at most two decimals; binary units for
 * bytes (KiB, MiB, ...), SI steps for time (ns, us, ms, s); counts whole,
 * with thousands separators. Axis helpers pick one unit for a whole range
 * of values.
 */
#ifndef STEPTRACE_LIB_HUMAN_H
#define STEPTRACE_LIB_HUMAN_H

#include <stddef.h>
#include <stdint.h>

/* "512 B", "1.50 KiB", "12.0 MiB", "2.41 GiB". Returns buf. */
char *human_bytes(char *buf, size_t n, double bytes);
/* "850 ns", "12.5 us", "38.6 ms", "1.20 s". Returns buf. */
char *human_time(char *buf, size_t n, double ns);

/* A count with thousands separators: "2,637". Returns buf. */
char *human_count(char *buf, size_t n, uint64_t count);
/* A formatted number's thousands separators, as tables print them: "-1234.5" -> "-1,234.5". */
void human_group_digits(const char *in, char *out, size_t len);

/* The largest binary unit not above max_bytes (1, 1024, ...; up to TiB) and its name. */
double human_byte_unit(double max_bytes, const char **name);
/* The largest of ns, us, ms, s not above max_ns and its name. */
double human_time_unit(double max_ns, const char **name);

#endif
