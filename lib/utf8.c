/* utf8.c: see utf8.h. */
#include "lib/utf8.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int utf8_next(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	unsigned char lo = 0x80, hi = 0xBF;
	int n;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xC2 && p[0] <= 0xDF)
		n = 2;
	else if (p[0] >= 0xE0 && p[0] <= 0xEF)
		n = 3;
	else if (p[0] >= 0xF0 && p[0] <= 0xF4)
		n = 4;
	else
		return -1;   /* a continuation byte, an overlong lead (C0, C1) or F5..FF */
	/* the second byte's range excludes overlongs, surrogates and code points past U+10FFFF */
	if (p[0] == 0xE0)
		lo = 0xA0;
	else if (p[0] == 0xED)
		hi = 0x9F;
	else if (p[0] == 0xF0)
		lo = 0x90;
	else if (p[0] == 0xF4)
		hi = 0x8F;
	for (int i = 1; i < n; i++) {
		if (p[i] < lo || p[i] > hi)
			return -i;   /* the lead and the continuation bytes before p[i] */
		lo = 0x80;
		hi = 0xBF;
	}
	return n;
}

bool utf8_valid(const char *s)
{
	for (int n; *s; s += n)
		if ((n = utf8_next(s)) < 0)
			return false;
	return true;
}

size_t utf8_repaired_len(const char *s)
{
	size_t len = 0;

	for (int n; *s; s += n < 0 ? -n : n) {
		n = utf8_next(s);
		len += n < 0 ? sizeof(UTF8_REPLACEMENT) - 1 : (size_t)n;
	}
	return len;
}

char *utf8_repair_into(char *dst, const char *s)
{
	char *d = dst;

	for (int n; *s; s += n < 0 ? -n : n) {
		n = utf8_next(s);
		if (n < 0) {
			memcpy(d, UTF8_REPLACEMENT, sizeof(UTF8_REPLACEMENT) - 1);
			d += sizeof(UTF8_REPLACEMENT) - 1;
		} else {
			memcpy(d, s, (size_t)n);
			d += n;
		}
	}
	*d = '\0';
	return dst;
}

char *utf8_repair(const char *s)
{
	char *d = malloc(utf8_repaired_len(s) + 1);

	return d ? utf8_repair_into(d, s) : NULL;
}

void utf8_cut_tail(char *buf)
{
	size_t len = strlen(buf), start = len;

	/* the last character's lead: at most 3 continuation bytes back */
	while (start > 0 && len - start < 4 && ((unsigned char)buf[start - 1] & 0xC0) == 0x80)
		start--;
	if (start > 0 && (unsigned char)buf[start - 1] >= 0xC0 && utf8_next(buf + start - 1) < 0)
		buf[start - 1] = '\0';
}

json_t *json_string_utf8(const char *s)
{
	char *fixed;
	json_t *j;

	if (utf8_valid(s))
		return json_string(s);
	fixed = utf8_repair(s);
	j = fixed ? json_string(fixed) : NULL;
	free(fixed);
	return j;
}
