/*
 * reader.c: the bundle reader. Every byte is hostile: member sizes are
 * bounded before anything is allocated, every protobuf unpack is checked,
 * every string id and enum is validated, and the reader never loops on a bad
 * archive (libarchive's FATAL/WARN results end reading).
 *
 * libzstd decompresses (streaming, block by block) and libarchive reads the
 * tar from what it produced, so a cut file yields every zstd block before
 * the cut. Truncated or corrupt? When reading fails after the whole file was
 * consumed, the recording was cut short (a crash, a kill): the events before
 * the cut are delivered and the bundle is marked truncated. When zstd reports
 * damage, or libarchive fails with input still unread, bytes inside the file
 * are damaged: that is an error naming what could be read.
 */
#include "trace/bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zstd.h>

#include "cli/error.h"
#include "trace/codec.h"

#define MAX_MEMBER_BYTES (256u << 20)
#define MAX_STRINGS (1u << 26)
#define MAX_STRING_BYTES (1u << 30)

/*
 * Event chunks are unpacked into an arena reset per chunk: protobuf-c then
 * makes no malloc/free per event, which was most of the reading time.
 */
struct arena_block {
	struct arena_block *next;
	size_t size, used;
	max_align_t data[];
};

struct arena {
	struct arena_block *head; /* the block being filled; older ones follow */
	ProtobufCAllocator allocator;
};

static void *arena_alloc(void *data, size_t size)
{
	struct arena *a = data;
	struct arena_block *b = a->head;

	size = (size + 15) & ~(size_t)15;
	if (!b || b->size - b->used < size) {
		size_t want = size > (16u << 20) ? size : (16u << 20);
		b = malloc(sizeof(*b) + want);
		if (!b)
			return NULL;
		b->size = want;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	void *p = (char *)b->data + b->used;
	b->used += size;
	return p;
}

static void arena_free_noop(void *data, void *p)
{
}

/* Empties the arena, keeping one block as large as everything it held, so a
 * steady stream of similar chunks allocates nothing. */
static void arena_reset(struct arena *a)
{
	size_t total = 0;
	struct arena_block *b;

	if (!a->head)
		return;
	if (!a->head->next) {
		a->head->used = 0;
		return;
	}
	for (b = a->head; b; b = b->next)
		total += b->size;
	while ((b = a->head)) {
		a->head = b->next;
		free(b);
	}
	b = malloc(sizeof(*b) + total);
	if (b) {
		b->size = total;
		b->used = 0;
		b->next = NULL;
		a->head = b;
	}
}

static void arena_release(struct arena *a)
{
	struct arena_block *b;

	while ((b = a->head)) {
		a->head = b->next;
		free(b);
	}
}

struct bundle_reader {
	struct archive *ar;
	struct arena arena;
	char *path;
	uint64_t file_size;

	FILE *file;
	ZSTD_DCtx *dz;
	uint8_t *ibuf, *obuf;
	size_t ibuf_size, obuf_size;
	ZSTD_inBuffer in;
	int in_eof, frame_open;

	Steptrace__Header *header;
	Steptrace__Footer *footer;

	char **strings; /* strings[0] = "" */
	uint32_t n_strings, cap_strings;
	uint64_t string_bytes;
	Steptrace__StringTable **tables; /* owners of the strings */
	size_t n_tables;

	Steptrace__EventChunk *chunk;
	size_t next_event;
	struct chunk_state state;

	uint32_t chunks;
	uint64_t events;
	int done;
	int opening;      /* reading the first member: failures mean "not a bundle" */
	char *truncation; /* why the bundle ended early */
	uint8_t *buf;
	size_t buf_cap;
};

static int set_truncated(struct bundle_reader *r, const char *why)
{
	if (!r->truncation)
		r->truncation = strdup(why);
	r->done = 1;
	return 0;
}

/* Was the whole file consumed? Then a failure is a cut, not damage. */
static int input_exhausted(struct bundle_reader *r)
{
	return r->in_eof && r->in.pos == r->in.size;
}

/* libarchive's read callback: the next decompressed bytes; 0 at the end of
 * the input (whole or cut), -1 when zstd finds damage. */
static la_ssize_t tar_read_cb(struct archive *a, void *client, const void **buf)
{
	struct bundle_reader *r = client;
	ZSTD_outBuffer out = { r->obuf, r->obuf_size, 0 };

	while (out.pos == 0) {
		if (r->in.pos == r->in.size) {
			if (r->in_eof)
				return 0;
			size_t n = fread(r->ibuf, 1, r->ibuf_size, r->file);
			if (n == 0) {
				if (ferror(r->file)) {
					archive_set_error(a, errno, "read error: %s", strerror(errno));
					return -1;
				}
				r->in_eof = 1;
				continue;
			}
			r->in = (ZSTD_inBuffer){ r->ibuf, n, 0 };
		}
		size_t ret = ZSTD_decompressStream(r->dz, &out, &r->in);
		if (ZSTD_isError(ret)) {
			archive_set_error(a, EINVAL, "zstd: %s", ZSTD_getErrorName(ret));
			r->in_eof = 0; /* damage, not a cut */
			r->in.pos = 0;
			r->in.size = 1;
			return -1;
		}
		r->frame_open = ret != 0;
	}
	*buf = r->obuf;
	return (la_ssize_t)out.pos;
}

static int fail_or_truncate(struct bundle_reader *r, const char *what)
{
	char why[512];

	if (r->opening) {
		r->done = 1;
		return st_error("'%s' is not a steptrace bundle: %s", r->path, what);
	}
	if (input_exhausted(r)) {
		snprintf(why, sizeof(why), "%s", what);
		return set_truncated(r, why);
	}
	r->done = 1;
	return st_error("bundle '%s' is damaged: %s (read %u chunks, %llu events before it)",
			r->path, what, r->chunks, (unsigned long long)r->events);
}

/*
 * Reads the next member's data into r->buf. Returns 1 with *name and *len set,
 * 0 at the end of the archive, -1 on error (message printed), or 2 when the
 * bundle turned out truncated (r->done set).
 */
static int next_member(struct bundle_reader *r, const char **name, size_t *len)
{
	struct archive_entry *e;
	char what[512];
	int ret = archive_read_next_header(r->ar, &e);

	if (ret == ARCHIVE_EOF)
		return 0;
	if (ret != ARCHIVE_OK) {
		/* ARCHIVE_WARN included: a tar header that needed fixing is damage. */
		snprintf(what, sizeof(what), "%s", archive_error_string(r->ar) ?
			 archive_error_string(r->ar) : "unreadable archive header");
		return fail_or_truncate(r, what) ? -1 : 2;
	}
	if (archive_entry_filetype(e) != AE_IFREG || !archive_entry_size_is_set(e)) {
		snprintf(what, sizeof(what), "member '%s' is not a regular file of known size",
			 archive_entry_pathname(e) ? archive_entry_pathname(e) : "?");
		return fail_or_truncate(r, what) ? -1 : 2;
	}
	la_int64_t size = archive_entry_size(e);
	*name = archive_entry_pathname(e);
	if (!*name)
		*name = "?";
	if (size < 0 || (uint64_t)size > MAX_MEMBER_BYTES) {
		r->done = 1;
		return st_error("bundle '%s' is damaged: member '%s' claims %lld bytes, over the %u MiB limit",
				r->path, *name, (long long)size, MAX_MEMBER_BYTES >> 20);
	}
	if ((size_t)size > r->buf_cap) {
		uint8_t *p = realloc(r->buf, (size_t)size);
		if (!p) {
			r->done = 1;
			return st_error("cannot read bundle '%s': out of memory", r->path);
		}
		r->buf = p;
		r->buf_cap = (size_t)size;
	}
	size_t got = 0;
	while (got < (size_t)size) {
		la_ssize_t n = archive_read_data(r->ar, r->buf + got, (size_t)size - got);
		if (n < 0 || (n == 0 && got < (size_t)size)) {
			snprintf(what, sizeof(what), "member '%s' is cut short (%zu of %lld bytes): %s",
				 *name, got, (long long)size,
				 n < 0 && archive_error_string(r->ar) ? archive_error_string(r->ar) : "end of data");
			return fail_or_truncate(r, what) ? -1 : 2;
		}
		got += (size_t)n;
	}
	*len = got;
	return 1;
}

static int add_strings(struct bundle_reader *r, Steptrace__StringTable *t, const char *member)
{
	if (t->first_id != r->n_strings) {
		r->done = 1;
		return st_error("bundle '%s' is damaged: %s starts at string %u, expected %u",
				r->path, member, t->first_id, r->n_strings);
	}
	if (t->n_strings > MAX_STRINGS - r->n_strings) {
		r->done = 1;
		return st_error("bundle '%s' is damaged: more than %u strings", r->path, MAX_STRINGS);
	}
	if (r->n_strings + t->n_strings > r->cap_strings) {
		uint32_t cap = r->cap_strings ? r->cap_strings : 256;
		while (cap < r->n_strings + t->n_strings)
			cap *= 2;
		char **p = realloc(r->strings, cap * sizeof(*p));
		if (!p) {
			r->done = 1;
			return st_error("cannot read bundle '%s': out of memory", r->path);
		}
		r->strings = p;
		r->cap_strings = cap;
	}
	Steptrace__StringTable **tables = realloc(r->tables, (r->n_tables + 1) * sizeof(*tables));
	if (!tables) {
		r->done = 1;
		return st_error("cannot read bundle '%s': out of memory", r->path);
	}
	r->tables = tables;
	r->tables[r->n_tables++] = t;
	for (size_t i = 0; i < t->n_strings; i++) {
		r->string_bytes += strlen(t->strings[i]);
		r->strings[r->n_strings++] = t->strings[i];
	}
	if (r->string_bytes > MAX_STRING_BYTES) {
		r->done = 1;
		return st_error("bundle '%s' is damaged: string table over 1 GiB", r->path);
	}
	return 0;
}

static int has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

struct bundle_reader *bundle_reader_open(const char *path)
{
	struct bundle_reader *r = calloc(1, sizeof(*r));
	struct stat stt;
	const char *name;
	size_t len;
	int ret;

	if (!r || !(r->path = strdup(path))) {
		free(r);
		st_error("cannot read bundle '%s': out of memory", path);
		return NULL;
	}
	r->arena.allocator = (ProtobufCAllocator){ arena_alloc, arena_free_noop, &r->arena };
	if (stat(path, &stt)) {
		st_error("cannot open bundle '%s': %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(stt.st_mode)) {
		st_error("cannot open bundle '%s': is a directory", path);
		goto fail;
	}
	if (stt.st_size == 0) {
		st_error("'%s' is not a steptrace bundle: the file is empty", path);
		goto fail;
	}
	r->file_size = (uint64_t)stt.st_size;
	r->strings = calloc(256, sizeof(*r->strings));
	r->ar = archive_read_new();
	r->dz = ZSTD_createDCtx();
	r->ibuf_size = ZSTD_DStreamInSize();
	r->obuf_size = ZSTD_DStreamOutSize();
	r->ibuf = malloc(r->ibuf_size);
	r->obuf = malloc(r->obuf_size);
	if (!r->strings || !r->ar || !r->dz || !r->ibuf || !r->obuf) {
		st_error("cannot read bundle '%s': out of memory", path);
		goto fail;
	}
	r->cap_strings = 256;
	r->strings[0] = "";
	r->n_strings = 1;
	r->file = fopen(path, "rb");
	if (!r->file) {
		st_error("cannot open bundle '%s': %s", path, strerror(errno));
		goto fail;
	}
	archive_read_support_format_tar(r->ar);
	if (archive_read_open(r->ar, r, NULL, tar_read_cb, NULL) != ARCHIVE_OK) {
		st_error("'%s' is not a steptrace bundle: %s", path, archive_error_string(r->ar));
		goto fail;
	}
	r->opening = 1;
	ret = next_member(r, &name, &len);
	r->opening = 0;
	if (ret != 1) {
		if (ret >= 0)
			st_error("'%s' is not a steptrace bundle: %s", path,
				 r->truncation ? r->truncation : "an empty archive");
		goto fail;
	}
	if (strcmp(name, "header.pb")) {
		st_error("'%s' is not a steptrace bundle: its first member is '%s', not 'header.pb'", path, name);
		goto fail;
	}
	r->header = steptrace__header__unpack(NULL, len, r->buf);
	if (!r->header) {
		st_error("bundle '%s' is damaged: its header does not decode", path);
		goto fail;
	}
	if (r->header->format_major > BUNDLE_FORMAT_MAJOR) {
		st_error("bundle '%s' has format %u.%u, newer than this steptrace reads (%d.x): upgrade steptrace",
			 path, r->header->format_major, r->header->format_minor, BUNDLE_FORMAT_MAJOR);
		goto fail;
	}
	if (r->header->format_major == 0) {
		st_error("'%s' is not a steptrace bundle: its header has no format version", path);
		goto fail;
	}
	return r;
fail:
	bundle_reader_free(r);
	return NULL;
}

/* Loads the next chunk (reading string tables and the footer on the way).
 * 1 = a chunk is ready, 0 = end, -1 = error. */
static int load_chunk(struct bundle_reader *r)
{
	const char *name;
	size_t len;

	while (!r->done) {
		int ret = next_member(r, &name, &len);
		if (ret == 0) {
			r->done = 1;
			if (!r->footer) {
				set_truncated(r, "it has no footer: the recording did not finish");
				return 0;
			}
			if (r->footer->chunks != r->chunks || r->footer->strings + 1 != r->n_strings)
				return st_error("bundle '%s' is damaged: its footer lists %u chunks and %u strings, "
						"the archive holds %u and %u", r->path, r->footer->chunks,
						r->footer->strings, r->chunks, r->n_strings - 1);
			return 0;
		}
		if (ret < 0)
			return -1;
		if (ret == 2)
			return 0;
		if (r->footer) {
			r->done = 1;
			return st_error("bundle '%s' is damaged: member '%s' after the footer", r->path, name);
		}
		if (has_prefix(name, "strings-")) {
			Steptrace__StringTable *t = steptrace__string_table__unpack(NULL, len, r->buf);
			if (!t) {
				r->done = 1;
				return st_error("bundle '%s' is damaged: string table '%s' does not decode "
						"(read %u chunks, %llu events before it)",
						r->path, name, r->chunks, (unsigned long long)r->events);
			}
			if (add_strings(r, t, name)) {
				steptrace__string_table__free_unpacked(t, NULL);
				r->tables[--r->n_tables] = NULL;
				return -1;
			}
		} else if (has_prefix(name, "events-")) {
			arena_reset(&r->arena);
			Steptrace__EventChunk *c = steptrace__event_chunk__unpack(&r->arena.allocator, len, r->buf);
			if (!c) {
				r->done = 1;
				return st_error("bundle '%s' is damaged: chunk '%s' does not decode "
						"(read %u chunks, %llu events before it)",
						r->path, name, r->chunks, (unsigned long long)r->events);
			}
			if (c->base_ns > (UINT64_C(1) << 62)) {
				r->done = 1;
				return st_error("bundle '%s' is damaged: chunk '%s' has a base time out of range",
						r->path, name);
			}
			if (c->index != r->chunks) {
				r->done = 1;
				return st_error("bundle '%s' is damaged: chunk %u is missing (found '%s' next)",
						r->path, r->chunks, name);
			}
			r->chunk = c;
			r->next_event = 0;
			r->state = (struct chunk_state){ .prev_start = c->base_ns };
			r->chunks++;
			return 1;
		} else if (!strcmp(name, "footer.pb")) {
			r->footer = steptrace__footer__unpack(NULL, len, r->buf);
			if (!r->footer) {
				r->done = 1;
				return st_error("bundle '%s' is damaged: its footer does not decode", r->path);
			}
		} else if (!strcmp(name, "header.pb")) {
			r->done = 1;
			return st_error("bundle '%s' is damaged: a second header", r->path);
		}
		/* Other members: from a newer minor version; skip them. */
	}
	return 0;
}

int bundle_reader_next(struct bundle_reader *r, struct st_event *ev)
{
	for (;;) {
		if (r->chunk && r->next_event < r->chunk->n_events) {
			const char *why = NULL;
			int ret = event_decode(r->chunk->events[r->next_event++], &r->state,
					       r->n_strings, ev, &why);
			if (ret < 0) {
				r->done = 1;
				return st_error("bundle '%s' is damaged: %s (chunk %u, event %zu)",
						r->path, why, r->chunks - 1, r->next_event - 1);
			}
			if (ret > 0)
				continue;
			r->events++;
			return 1;
		}
		r->chunk = NULL; /* its memory is the arena's */
		if (r->done)
			return 0;
		int ret = load_chunk(r);
		if (ret <= 0)
			return ret;
	}
}

const Steptrace__Header *bundle_reader_header(const struct bundle_reader *r)
{
	return r->header;
}

const char *bundle_reader_string(const struct bundle_reader *r, uint32_t id)
{
	return id < r->n_strings ? r->strings[id] : NULL;
}

uint32_t bundle_reader_string_count(const struct bundle_reader *r)
{
	return r->n_strings;
}

const Steptrace__Footer *bundle_reader_footer(const struct bundle_reader *r)
{
	return r->footer;
}

bool bundle_reader_truncated(const struct bundle_reader *r)
{
	return r->truncation != NULL;
}

const char *bundle_reader_truncation(const struct bundle_reader *r)
{
	return r->truncation;
}

uint32_t bundle_reader_chunks(const struct bundle_reader *r)
{
	return r->chunks;
}

uint64_t bundle_reader_events(const struct bundle_reader *r)
{
	return r->events;
}

const char *bundle_reader_path(const struct bundle_reader *r)
{
	return r->path;
}

void bundle_reader_free(struct bundle_reader *r)
{
	if (!r)
		return;
	if (r->ar)
		archive_read_free(r->ar);
	if (r->file)
		fclose(r->file);
	ZSTD_freeDCtx(r->dz);
	free(r->ibuf);
	free(r->obuf);
	if (r->header)
		steptrace__header__free_unpacked(r->header, NULL);
	if (r->footer)
		steptrace__footer__free_unpacked(r->footer, NULL);
	arena_release(&r->arena);
	for (size_t i = 0; i < r->n_tables; i++)
		steptrace__string_table__free_unpacked(r->tables[i], NULL);
	free(r->tables);
	free(r->strings);
	free(r->truncation);
	free(r->buf);
	free(r->path);
	free(r);
}
