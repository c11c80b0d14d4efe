/*
 * edit.h: bundles held in memory member by member, each member decoded into
 * its protobuf-c message, for the structure-aware fuzzer (fuzz_commands.c,
 * mutate.c) to change and write back.
 *
 * An input of fuzz_commands is a *set*: one bundle (its .stb bytes, a zstd
 * frame), or the bundles of a run's ranks (and of a second run) as a plain
 * tar of .stb files, which `tar xf` turns back into bundles the commands
 * read:
 *
 *   struct edit_set s;
 *   if (edit_parse(&s, data, size) < 0)   // not a bundle or a set of them
 *           return;
 *   ... change s.b[i].m[j].msg ...
 *   n = edit_pack(&s, out, max);          // 0: does not fit in max
 *   edit_free(&s);
 *
 * A member that does not decode keeps its bytes (raw); one that does keeps
 * its message, and an event chunk's events hold absolute values while in
 * memory: Event.t is the event's start (not a delta from the previous one)
 * and every correlation id is the id itself, so that moving an event keeps
 * its time. edit_pack encodes the deltas again.
 *
 * Messages are protobuf-c's, allocated by malloc: a string or message put
 * into one must be malloc'd (edit_strdup, edit_new) and is freed with it.
 */
#ifndef STEPTRACE_TESTS_FUZZ_EDIT_H
#define STEPTRACE_TESTS_FUZZ_EDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "steptrace.pb-c.h"

/* Bundles in a set; members in a bundle; bytes a bundle may decompress to. */
#define EDIT_MAX_BUNDLES 16
#define EDIT_MAX_MEMBERS 64
#define EDIT_MAX_TAR (32u << 20)

enum edit_type { EDIT_OTHER, EDIT_HEADER, EDIT_STRINGS, EDIT_EVENTS, EDIT_FOOTER };

struct edit_member {
	char name[100];
	enum edit_type type;
	ProtobufCMessage *msg;        /* the decoded message; NULL: raw */
	uint8_t *raw;                 /* the bytes, when msg is NULL */
	size_t len;
};

struct edit_bundle {
	struct edit_member m[EDIT_MAX_MEMBERS];
	size_t n;
	/*
	 * Where the file ends early: after member cut_after (1 for the first;
	 * 0: it does not), cut_delta bytes on (the writer flushes zstd after
	 * each member, as a recording that died leaves it); and bytes appended
	 * after the frame.
	 */
	size_t cut_after;
	int cut_delta;
	uint8_t tail[16];
	size_t n_tail;
};

struct edit_set {
	struct edit_bundle b[EDIT_MAX_BUNDLES];
	size_t n;
	bool tar;                     /* packed as a tar of .stb files, even with one bundle */
};

/* The members of a bundle, by type. */
#define edit_header(m) ((Steptrace__Header *)(m)->msg)
#define edit_strings(m) ((Steptrace__StringTable *)(m)->msg)
#define edit_chunk(m) ((Steptrace__EventChunk *)(m)->msg)
#define edit_footer(m) ((Steptrace__Footer *)(m)->msg)

/* A set from an input: 0, or -1 when it holds no bundle (*s is empty then). */
int edit_parse(struct edit_set *s, const uint8_t *data, size_t size);
/* The set written into out: its size, or 0 when more than max bytes (or out of memory). */
size_t edit_pack(struct edit_set *s, uint8_t *out, size_t max);
void edit_free(struct edit_set *s);

/*
 * The input's bundles as files would hold them, without decoding: one
 * bundle (an input that is not a zstd frame is taken as the archive inside
 * one, compressed here), or each .stb of a set. Up to EDIT_MAX_BUNDLES;
 * free() each. The count, 0 when none.
 */
size_t edit_split(const uint8_t *data, size_t size, uint8_t **bundle, size_t *len);

/* The string ids a bundle defines (1 + the strings of its tables, id 0 being ""). */
uint32_t edit_string_count(const struct edit_bundle *b);
/* The string with id `id`, NULL when undefined. */
const char *edit_string(const struct edit_bundle *b, uint32_t id);

/* The events of a bundle, as one index: event i of the bundle's chunks (NULL past the last). */
Steptrace__Event *edit_event(const struct edit_bundle *b, size_t i, size_t *member, size_t *at);
size_t edit_event_count(const struct edit_bundle *b);

/*
 * Keeps events [from, from + len) of the bundle (counted over its chunks in
 * order) and, of those before, the ops, which later work names (up to len
 * of them).
 */
void edit_window(struct edit_bundle *b, size_t from, size_t len);

/* The correlation id of an event that has one, NULL for the others. */
int64_t *edit_correlation(Steptrace__Event *e);

/* A member's message written out (raw members as they are): malloc'd, *len its size. */
uint8_t *edit_member_bytes(struct edit_member *m, size_t *len);
/* Decodes m->raw by the member's type; the raw bytes stay when it does not decode. */
void edit_member_decode(struct edit_member *m);
/* The member under another name, decoded as that name says. */
void edit_member_rename(struct edit_member *m, const char *name);
/* Frees what a member holds and empties it. */
void edit_member_clear(struct edit_member *m);
/* A deep copy of a message, NULL when out of memory. */
ProtobufCMessage *edit_copy(const ProtobufCMessage *m);
/* A new message of `desc`, initialised. */
ProtobufCMessage *edit_new(const ProtobufCMessageDescriptor *desc);
/* Replaces the string *p (a field of a message) with a copy of s. */
void edit_set_string(char **p, const char *s);

#endif
