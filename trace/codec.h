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

/* ---- reading messages field by field --------------------------------- */

enum pb_wire { PB_VARINT = 0, PB_FIXED64 = 1, PB_BYTES = 2, PB_FIXED32 = 5 };

/* One field of a serialized message. */
struct pb_field {
	uint32_t number;
	enum pb_wire wire;
	uint64_t value;          /* PB_VARINT, PB_FIXED64, PB_FIXED32 */
	const uint8_t *data;     /* PB_BYTES */
	size_t len;
};

/* Writes v as a varint at p (up to 10 bytes); returns its length. */
size_t pb_put_varint(uint8_t *p, uint64_t v);

/* The field at buf[*pos], *pos moved past it: 1, 0 at the end of buf, -1 when malformed. */
int pb_field_next(const uint8_t *buf, size_t len, size_t *pos, struct pb_field *f);

/* An Event is refused above this size: no writer makes one near it. */
#define MAX_EVENT_BYTES (64u << 10)

/*
 * An EventChunk read without unpacking it: its index, base time and the
 * number of its events, each checked to have content (an empty one is
 * damage, not data) and to stay under MAX_EVENT_BYTES. Then
 * chunk_next_event() hands the events' bytes over one by one.
 */
struct chunk_view {
	const uint8_t *data;
	size_t len;
	uint32_t index;
	uint64_t base_ns;
	size_t n_events;
};

/* 0, or -1 with a static reason in *why and the event's place in *at (SIZE_MAX: the chunk's own fields). */
int chunk_scan(struct chunk_view *c, const uint8_t *data, size_t len, const char **why, size_t *at);
/* The next event's bytes from *pos (0 at first): 1, or 0 at the end. Only after chunk_scan() succeeded. */
int chunk_next_event(const struct chunk_view *c, size_t *pos, const uint8_t **ev, size_t *ev_len);

/*
 * Decodes one Event into *ev. `strings` is the number of string ids defined so
 * far; ids at or above it are corruption. Returns 0, 1 for an event of a kind
 * this reader does not know (a newer minor version: skip it), or -1 with a
 * static reason in *why. An event with no kind and no field this schema
 * lacks has no content: damage.
 */
int event_decode(const Steptrace__Event *m, struct chunk_state *st, uint32_t strings,
		 struct st_event *ev, const char **why);

#endif
