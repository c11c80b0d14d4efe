/*
 * jstream.c: a JSON document one value at a time (jstream.h).
 *
 * jansson decodes each value from a callback that hands it this window's
 * bytes; with JSON_DISABLE_EOF_CHECK it stops at the value's end and says in
 * error.position how many of the bytes it was handed the value took. It
 * reads ahead (a buffer of its own, 1 KiB), so the window keeps JSTREAM_KEEP
 * bytes behind its position whenever it slides, and the position is moved
 * back by what jansson read past the value.
 */
#include "import/jstream.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "lib/error.h"

#define JSTREAM_WINDOW (1u << 20)
#define JSTREAM_KEEP 8192    /* more than jansson reads ahead (1 KiB) */

uint64_t jstream_offset(const struct jstream *s)
{
	return s->offset + s->pos;
}

int jstream_open(struct jstream *s, const char *path)
{
	memset(s, 0, sizeof(*s));
	s->path = path;
	s->cap = JSTREAM_WINDOW + JSTREAM_KEEP;
	s->buf = malloc(s->cap);
	if (!s->buf)
		return error("cannot read '%s': out of memory", path);
	errno = 0;
	s->gz = gzopen(path, "rb");
	if (!s->gz) {
		free(s->buf);
		s->buf = NULL;
		return error("cannot open '%s': %s", path, errno ? strerror(errno) : "out of memory");
	}
	gzbuffer(s->gz, 256u << 10);
	return 0;
}

void jstream_close(struct jstream *s)
{
	if (s->gz)
		gzclose(s->gz);
	free(s->buf);
	memset(s, 0, sizeof(*s));
}

/* Slides the window on and reads more: bytes read, 0 at the end, -1 after one line. */
static int fill(struct jstream *s)
{
	size_t keep = s->len < JSTREAM_KEEP ? s->len : JSTREAM_KEEP;
	int n, errnum;
	const char *msg;

	if (s->failed)
		return -1;
	if (s->eof)
		return 0;
	memmove(s->buf, s->buf + s->len - keep, keep);
	s->offset += s->len - keep;
	s->pos -= s->len - keep;
	s->len = keep;
	n = gzread(s->gz, s->buf + s->len, (unsigned)(s->cap - s->len));
	if (n > 0) {
		s->len += (size_t)n;
		return n;
	}
	msg = gzerror(s->gz, &errnum);
	if (n < 0 || (errnum != Z_OK && errnum != Z_STREAM_END)) {
		s->failed = 1;
		error("cannot read '%s' at byte %" PRIu64 ": %s", s->path, jstream_offset(s),
		      errnum == Z_ERRNO ? strerror(errno) : errnum == Z_BUF_ERROR ?
		      "the compressed file ends early (cut short)" : msg);
		return -1;
	}
	s->eof = 1;
	return 0;
}

int jstream_peek(struct jstream *s)
{
	for (;;) {
		while (s->pos < s->len) {
			unsigned char c = (unsigned char)s->buf[s->pos];

			if (c != ' ' && c != '\t' && c != '\n' && c != '\r')
				return c;
			s->pos++;
		}
		if (fill(s) <= 0)
			return -1;
	}
}

static int unexpected(struct jstream *s, int c, const char *want, const char *where)
{
	if (s->failed)
		return -1;
	s->failed = 1;
	if (c < 0)
		return error("'%s' ends early at byte %" PRIu64 " (cut short?): expected %s in %s", s->path,
			     jstream_offset(s), want, where);
	if (c >= 0x20 && c < 0x7f)
		return error("'%s' is not a trace this reads: '%c' at byte %" PRIu64 " where %s was expected in %s",
			     s->path, c, jstream_offset(s), want, where);
	return error("'%s' is not a trace this reads: byte 0x%02x at %" PRIu64 " where %s was expected in %s",
		     s->path, (unsigned)c, jstream_offset(s), want, where);
}

int jstream_expect(struct jstream *s, char c, const char *where)
{
	int got = jstream_peek(s);
	char want[8];

	if (got != (unsigned char)c) {
		snprintf(want, sizeof(want), "'%c'", c);
		return unexpected(s, got, want, where);
	}
	s->pos++;
	return 0;
}

int jstream_more(struct jstream *s, char close, const char *where)
{
	int got = jstream_peek(s);
	char want[16];

	if (got == ',') {
		s->pos++;
		return 1;
	}
	if (got == (unsigned char)close) {
		s->pos++;
		return 0;
	}
	snprintf(want, sizeof(want), "',' or '%c'", close);
	return unexpected(s, got, want, where);
}

static size_t feed(void *out, size_t size, void *data)
{
	struct jstream *s = data;
	size_t n;

	if (s->pos == s->len && fill(s) <= 0)
		return s->failed ? (size_t)-1 : 0;
	n = s->len - s->pos < size ? s->len - s->pos : size;
	if (s->fed + n > JSTREAM_VALUE_MAX) {
		s->failed = 1;
		error("'%s': a value of more than %u MiB at byte %" PRIu64 ": no trace holds one", s->path,
		      JSTREAM_VALUE_MAX >> 20, jstream_offset(s) - s->fed);
		return (size_t)-1;
	}
	memcpy(out, s->buf + s->pos, n);
	s->pos += n;
	s->fed += n;
	return n;
}

json_t *jstream_value(struct jstream *s, const char *where)
{
	json_error_t err;
	json_t *v;
	uint64_t start;
	size_t back;

	if (jstream_peek(s) < 0) {
		unexpected(s, -1, "a value", where);
		return NULL;
	}
	start = jstream_offset(s);
	s->fed = 0;
	v = json_load_callback(feed, s, JSON_DECODE_ANY | JSON_DISABLE_EOF_CHECK | JSON_REJECT_DUPLICATES, &err);
	if (!v) {
		if (!s->failed) {
			s->failed = 1;
			error("'%s' is not a trace this reads: %s at byte %" PRIu64 " (in %s)", s->path, err.text,
			      start + (uint64_t)(err.position > 0 ? err.position : 0), where);
		}
		return NULL;
	}
	back = err.position >= 0 && (size_t)err.position <= s->fed ? s->fed - (size_t)err.position : SIZE_MAX;
	if (back > s->pos) {
		json_decref(v);
		s->failed = 1;
		error("'%s': lost its place at byte %" PRIu64 " (in %s)", s->path, start, where);
		return NULL;
	}
	s->pos -= back;
	return v;
}

int jstream_key(struct jstream *s, char *key, size_t len)
{
	json_t *v;

	if (jstream_peek(s) != '"')
		return unexpected(s, jstream_peek(s), "a key", "the top-level object");
	v = jstream_value(s, "the top-level object");
	if (!v)
		return -1;
	snprintf(key, len, "%s", json_string_value(v));
	json_decref(v);
	return jstream_expect(s, ':', "the top-level object");
}
