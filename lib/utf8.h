/*
 * utf8.h: text as valid UTF-8. Names come from programs (kernel signatures,
 * NVTX ranges, command lines, file names) and may hold any bytes, while
 * every output wants UTF-8: JSON (jansson refuses anything else), protobuf
 * strings, SQLite TEXT, HTML and SVG. One rule everywhere: each maximal
 * invalid subpart (Unicode's "substitution of maximal subparts", as
 * browsers and Python's errors="replace" do) becomes U+FFFD. replay repairs
 * a bundle's strings once, as it loads them; the writers repair what does
 * not come from a bundle (a path given on the command line) and what a
 * fixed buffer cut short.
 */
#ifndef STEPTRACE_LIB_UTF8_H
#define STEPTRACE_LIB_UTF8_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#define UTF8_REPLACEMENT "\xef\xbf\xbd"   /* U+FFFD */

/*
 * The character at s (s[0] != '\0'): its length in bytes (1 to 4) when it
 * is valid UTF-8, else minus the length of the invalid subpart one U+FFFD
 * replaces.
 */
int utf8_next(const char *s);

bool utf8_valid(const char *s);

/* s with each invalid subpart replaced by U+FFFD; malloc'd, NULL when out of memory. */
char *utf8_repair(const char *s);
/* The bytes utf8_repair(s) holds, its NUL not counted. */
size_t utf8_repaired_len(const char *s);
/* utf8_repair into dst, which has utf8_repaired_len(s) + 1 bytes. Returns dst. */
char *utf8_repair_into(char *dst, const char *s);

/* Ends buf before a character a fixed-size buffer cut short (snprintf's truncation). */
void utf8_cut_tail(char *buf);

/* json_string() of s repaired: NULL only when out of memory. */
json_t *json_string_utf8(const char *s);

#endif
