/*
 * codec.h: private to trace/. Conversion between struct st_event and the
 * schema's Event message, with the chunk-level delta state both sides share.
 */
#ifndef STEPTRACE_TRACE_CODEC_H
#define STEPTRACE_TRACE_CODEC_H

#include "trace/bundle.h"

/* Running state of one chunk: the previous start and correlation id. */
struct chunk_state {
	uint64_t prev_start;
	uint64_t prev_correlation;
};

/* A growing byte buffer; reserving room for `extra` more bytes: 0, or -1 after an error line. */
struct byte_buf {
	uint8_t *data;
	size_t len, cap;
};
int byte_buf_reserve(struct byte_buf *b, size_t extra);

/*
 * Encodes `ev` as one Event message appended to `buf` as field 3 of
 * EventChunk (tag, length, bytes). Returns bytes appended, 0 on out of
 * memory (the error line printed).
 */
size_t event_encode(struct byte_buf *buf, struct chunk_state *st, const struct st_event *ev);

/*
 * Decodes one Event into *ev. `strings` is the number of string ids defined so
 * far; ids at or above it are corruption. Returns 0, 1 for an event of a kind
 * this reader does not know (a newer minor version: skip it), or -1 with a
 * static reason in *why.
 */
int event_decode(const Steptrace__Event *m, struct chunk_state *st, uint32_t strings,
		 struct st_event *ev, const char **why);

#endif
