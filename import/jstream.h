/*
 * jstream.h: a JSON document read one value at a time, so that a trace of
 * gigabytes is never in memory whole. The structure around the values (the
 * top-level object's braces, its keys and colons, an array's brackets and
 * commas) is stepped over here; each value (a whole event, a whole
 * metadata object) is decoded by jansson, from a window over the file, and
 * handed back. A gzip file is read through zlib as it is decompressed; a
 * plain one as it is (zlib reads both).
 *
 *   struct jstream s;
 *   if (jstream_open(&s, path) < 0) return -1;
 *   jstream_expect(&s, '{');  ... jstream_key(&s, key, sizeof key) ... jstream_value(&s)
 *
 * Errors: -1 (or NULL) after one error line naming the file and the byte
 * offset, in the decompressed text, where reading stopped.
 */
#ifndef STEPTRACE_IMPORT_JSTREAM_H
#define STEPTRACE_IMPORT_JSTREAM_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* One value (an event, a metadata object) larger than this is refused: no trace writes one. */
#define JSTREAM_VALUE_MAX (64u << 20)

struct jstream {
	void *gz;             /* gzFile */
	const char *path;
	char *buf;
	size_t len, pos, cap;
	uint64_t offset;      /* bytes of the text before buf[0] */
	size_t fed;           /* bytes handed to jansson for the value being decoded */
	int eof, failed;
};

/* 0, or -1 after one line. */
int jstream_open(struct jstream *s, const char *path);
void jstream_close(struct jstream *s);

/* The next character that is not white space, without taking it; -1 at the end (or after an error). */
int jstream_peek(struct jstream *s);
/* Takes the next non-blank character, which must be c. 0, or -1 after one line. */
int jstream_expect(struct jstream *s, char c, const char *where);
/*
 * After an element of an array or object: 1 when a ',' followed (another
 * comes), 0 when `close` did (taken), -1 after one line otherwise.
 */
int jstream_more(struct jstream *s, char close, const char *where);
/* An object's key and its ':' into key (cut to len - 1 bytes). 0, or -1 after one line. */
int jstream_key(struct jstream *s, char *key, size_t len);
/* The next value, decoded (duplicate keys refused); NULL after one line. The caller json_decref()s it. */
json_t *jstream_value(struct jstream *s, const char *where);
/* Where reading is, in bytes of the (decompressed) text. */
uint64_t jstream_offset(const struct jstream *s);

#endif
