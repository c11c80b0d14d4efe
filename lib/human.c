/* human.c: see human.h. */
#include "lib/human.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

/* 3 significant digits, at most 2 decimals: 1.50, 12.0, 512 */
static char *fmt3(char *buf, size_t n, double v, const char *unit)
{
	int dec = v < 10 ? 2 : v < 100 ? 1 : 0;

	if (v == floor(v) && v < 1000)
		dec = 0;
	snprintf(buf, n, "%.*f %s", dec, v, unit);
	return buf;
}

char *human_bytes(char *buf, size_t n, double bytes)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;

	if (!(bytes >= 0) || !isfinite(bytes))
		bytes = 0;
	while (bytes >= 1024 && u < 5) {
		bytes /= 1024;
		u++;
	}
	/* 1023.9 KiB would print as "1024 KiB": move up */
	if (u < 5 && bytes >= 999.5 && u > 0) {
		bytes /= 1024;
		u++;
	}
	if (u == 0) {
		snprintf(buf, n, "%.0f B", bytes);
		return buf;
	}
	return fmt3(buf, n, bytes, units[u]);
}

char *human_time(char *buf, size_t n, double ns)
{
	if (!(ns >= 0) || !isfinite(ns))
		ns = 0;
	if (ns < 1e3)
		return fmt3(buf, n, ns, "ns");
	if (ns < 999.5e3)
		return fmt3(buf, n, ns / 1e3, "us");
	if (ns < 999.5e6)
		return fmt3(buf, n, ns / 1e6, "ms");
	return fmt3(buf, n, ns / 1e9, "s");
}

double human_byte_unit(double max_bytes, const char **name)
{
	static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double u = 1;
	int i = 0;

	while (i < 4 && max_bytes >= u * 1024) {
		u *= 1024;
		i++;
	}
	if (name)
		*name = units[i];
	return u;
}

double human_time_unit(double max_ns, const char **name)
{
	static const char *const units[] = { "ns", "us", "ms", "s" };
	double u = 1;
	int i = 0;

	while (i < 3 && max_ns >= u * 1000) {
		u *= 1000;
		i++;
	}
	if (name)
		*name = units[i];
	return u;
}

void human_group_digits(const char *in, char *out, size_t len)
{
	const char *p = in, *int_end;
	size_t o = 0, ndig;

	if (*p == '-' || *p == '+')
		out[o++] = *p++;
	int_end = p;
	while (*int_end >= '0' && *int_end <= '9')
		int_end++;
	ndig = (size_t)(int_end - p);
	while (p < int_end && o + 2 < len) {
		out[o++] = *p++;
		ndig--;
		if (ndig && ndig % 3 == 0)
			out[o++] = ',';
	}
	while (*p && o + 1 < len)
		out[o++] = *p++;
	out[o] = '\0';
}

char *human_count(char *buf, size_t n, uint64_t count)
{
	char raw[32];

	snprintf(raw, sizeof(raw), "%" PRIu64, count);
	human_group_digits(raw, buf, n);
	return buf;
}
