/*
 * reader.c: the bundle reader. One file of over 1,000 lines: the zstd and
 * tar stream, the string pages, the memory budget and the worker threads
 * share struct bundle_reader and its read_lock (the events' codec is apart,
 * codec.c).
 *
 * Every byte is hostile: member sizes are bounded before anything is
 * allocated, chunks and string tables are scanned field by field before
 * they are (an event or a string without content is damage), what reading
 * will need is checked against the memory budget before each allocation
 * that grows with the bundle, every protobuf unpack is checked, every
 * string id and enum is validated, and the reader never loops on a bad
 * archive (libarchive's FATAL/WARN results end reading).
 *
 * libzstd decompresses (streaming, block by block) and libarchive reads the
 * tar from what it produced, so a cut file yields every zstd block before
 * the cut. Truncated or corrupt? When reading fails after the whole file was
 * consumed, the recording was cut short (a crash, a kill): the events before
 * the cut are delivered and the bundle is marked truncated. When zstd reports
 * damage, or libarchive fails with input still unread, bytes inside the file
 * are damaged: that is an error naming what could be read. At the archive's
 * end the zstd frame must end too, and the file with it (check_stream_end).
 *
 * Threads. bundle_reader_open() reads the header on the caller's thread;
 * the first bundle_reader_next() starts N_WORKERS workers. A worker, holding
 * read_lock, reads members up to the next chunk (string tables and the footer
 * on the way), scans that chunk and claims it by its index; then, unlocked,
 * it unpacks its events one by one into its own arena and decodes them into
 * slots[index % N_BATCHES] once the caller has given that slot back. Chunks decode independently (the
 * delta state restarts at each; the string count they may name is taken at
 * the claim), so two workers decode two chunks while the caller reads a
 * third, and at most N_BATCHES decoded chunks exist. The end of the archive,
 * or an error, takes the next index like a chunk: the caller stops there,
 * and what was decoded after it is dropped.
 *
 * The caller's view moves as when reading was sequential: each batch carries
 * the chunk and string counts of the moment its chunk was read, and the
 * footer and truncation come with the last batch. Workers never print: the
 * error line travels in the batch that ends reading, and the caller prints it
 * after every event before it (its "events before it" is the caller's count).
 * bundle_reader_free() stops the workers wherever they are and joins them.
 * Without threads (a bundle under THREADS_MIN_BYTES, or pthread_create
 * failed) the caller does a worker's job itself.
 *
 * Strings: workers append tables while the caller looks ids up, so strings
 * live in pages that never move (page p holds 256 << p ids), not in a
 * realloc'd array; the caller looks only at ids below its batch's count, all
 * written before that batch was handed over under the lock.
 */
#include "trace/bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <zstd.h>

#include "lib/error.h"
#include "lib/human.h"
#include "lib/memlimit.h"
#include "trace/codec.h"

#define MAX_MEMBER_BYTES (256u << 20)
#define MAX_HEADER_BYTES (1u << 20) /* header.pb and footer.pb: unpacked whole */
#define MAX_STRINGS (1u << 26)
#define MAX_STRING_BYTES (1u << 30)

#define STRING_PAGE0 256u /* ids in page 0; page p holds STRING_PAGE0 << p */
#define STRING_PAGES 19   /* pages enough for MAX_STRINGS ids */

#define N_WORKERS 2
#define N_BATCHES 3 /* decoded chunks at a time: one being read, two ready */
#define THREADS_MIN_BYTES (256u << 10) /* smaller bundles: about one chunk, no threads */

/*
 * Big buffers (arena blocks, decoded batches, members) are mapped directly,
 * so that they go back to the system as soon as reading ends: from malloc,
 * glibc's rising mmap threshold would keep some in the heap, adding to the
 * peak of the analysis that follows. Small ones stay with malloc. A buffer
 * that will be written whole (`fill`) is populated at once, which costs much
 * less than faulting its pages in one by one.
 */
#define BIG_BYTES (64u << 10)
#define ARENA_BLOCK (256u << 10) /* an event unpacks into much less */

static void *big_alloc(size_t size, bool fill)
{
	if (size < BIG_BYTES)
		return malloc(size);
	void *p = mmap(NULL, size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | (fill ? MAP_POPULATE : 0), -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

static void big_free(void *p, size_t size)
{
	if (size < BIG_BYTES)
		free(p);
	else if (p)
		munmap(p, size);
}

/*
 * Events are unpacked one at a time into an arena reset per event: protobuf-c
 * then makes no malloc/free per event, which was most of the reading time,
 * and unpacking holds one event, never a whole chunk of them.
 */
struct arena_block {
	struct arena_block *next;
	size_t size, used;
	max_align_t data[];
};

struct arena {
	struct arena_block *head; /* the block being filled; older ones follow */
	size_t failed;            /* an allocation of this size failed since the reset */
	ProtobufCAllocator allocator;
};

static void *arena_alloc(void *data, size_t size)
{
	struct arena *a = data;
	struct arena_block *b = a->head;

	size = (size + 15) & ~(size_t)15;
	if (!b || b->size - b->used < size) {
		size_t want = size > ARENA_BLOCK ? size : ARENA_BLOCK;
		b = big_alloc(sizeof(*b) + want, false);
		if (!b) {
			a->failed = size;
			return NULL;
		}
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

	a->failed = 0;
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
		big_free(b, sizeof(*b) + b->size);
	}
	b = big_alloc(sizeof(*b) + total, false);
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
		big_free(b, sizeof(*b) + b->size);
	}
}

/* The line that ends reading, kept until the caller prints it. */
struct read_error {
	char *text;      /* NULL: out of memory for it */
	int counted;     /* append "(read <chunks> chunks, <events> events before it)" */
	uint32_t chunks;
};

/* A member's bytes. */
struct member_buf {
	uint8_t *data;
	size_t cap;
};

/* A worker: its thread, and the chunk it claimed. */
struct worker {
	struct bundle_reader *r;
	pthread_t thread;
	int running;
	struct arena arena;
	struct member_buf mem;
	size_t len;         /* of the chunk member in mem */
	struct chunk_view chunk; /* its fields, scanned when claimed */
	char *name;         /* its name, for messages */
	uint32_t index;     /* the chunk index claimed: the batch's place */
	uint32_t n_strings; /* strings defined before it */
	int claimed;        /* 1 a chunk, 0 the end, -1 an error */
	struct read_error err;
	const Steptrace__Footer *footer; /* at the end: what the archive held */
	const char *truncation;
};

/* Decoded events of one chunk, or the end of reading. */
struct batch {
	struct st_event *ev;
	size_t n, cap;
	uint32_t chunks;    /* chunks loaded and strings defined when its chunk */
	uint32_t n_strings; /* was read: what the caller sees while reading it */
	int ready;          /* filled, not yet given back by the caller */
	int end;            /* 0: more follow; 1: the last; -1: the last, then err */
	struct read_error err;
	const Steptrace__Footer *footer;
	const char *truncation;
};

struct bundle_reader {
	char *path;
	Steptrace__Header *header; /* read by open, constant after */

	/* The archive: a worker's, under read_lock, once workers run. */
	pthread_mutex_t read_lock;
	struct archive *ar;
	uint64_t file_size;
	FILE *file;
	ZSTD_DCtx *dz;
	uint8_t *ibuf, *obuf;
	size_t ibuf_size, obuf_size;
	ZSTD_inBuffer in;
	uint64_t file_pos;  /* bytes read from the file */
	int in_eof;
	int frame_ended;    /* the zstd frame ended: what follows is trailing data */
	Steptrace__Footer *footer;
	char **string_pages[STRING_PAGES]; /* string id 0 = "" */
	uint32_t n_strings;
	uint64_t string_bytes;
	char **string_blocks; /* one per table: its strings, each NUL-terminated */
	size_t n_string_blocks;
	uint32_t chunks;  /* claimed */
	int done;         /* the archive ended or failed */
	int opening;      /* reading the first member: failures mean "not a bundle" */

	/* The memory budget (bundle_reader_set_budget), under read_lock. */
	uint64_t limit, per_event;
	char limit_why[384];      /* said after the limit, "" for nothing */
	uint64_t events_claimed;  /* in the chunks claimed */
	uint64_t string_memory;   /* the tables' blocks and the pages */
	size_t largest_member, largest_chunk; /* events; what the buffers hold */
	char *truncation; /* why the bundle ended early */
	struct read_error err;

	/* The hand-off, under lock: slots[i % N_BATCHES] holds chunk i. */
	pthread_mutex_t lock;
	pthread_cond_t cond;     /* a batch is ready or a slot came free */
	struct batch *slots[N_BATCHES];
	uint32_t released;       /* chunks the caller gave back */
	atomic_int stop;
	enum { WORKERS_NONE, WORKERS_THREADS, WORKERS_INLINE, WORKERS_JOINED } workers_state;
	struct worker workers[N_WORKERS]; /* workers[0] also reads the header */

	/* The caller's view. */
	struct {
		struct batch *batch; /* being read */
		size_t pos;
		uint32_t chunks, n_strings;
		uint64_t events;     /* delivered */
		const Steptrace__Footer *footer;
		const char *truncation;
		int done;
	} out;
};

/* The page of a string id (< MAX_STRINGS), and its slot there. */
static unsigned string_page(uint32_t id)
{
	return 31 - (unsigned)__builtin_clz(id / STRING_PAGE0 + 1);
}

static char **string_slot(char **const *pages, uint32_t id)
{
	unsigned p = string_page(id);

	return &pages[p][id - STRING_PAGE0 * ((1u << p) - 1)];
}

static int vfail(struct read_error *e, int counted, uint32_t chunks, const char *fmt, va_list ap)
{
	va_list ap2;
	int n;

	if (e->text)
		return -1;
	e->counted = counted;
	e->chunks = chunks;
	va_copy(ap2, ap);
	n = vsnprintf(NULL, 0, fmt, ap2);
	va_end(ap2);
	if (n >= 0 && (e->text = malloc((size_t)n + 1)))
		vsnprintf(e->text, (size_t)n + 1, fmt, ap);
	return -1;
}

/* Keeps the line that ends reading in *e. Returns -1. */
static int __attribute__((format(printf, 2, 3))) fail(struct read_error *e, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(e, 0, 0, fmt, ap);
	va_end(ap);
	return -1;
}

/* The same, for a line that ends "(read <chunks> chunks, <events> events
 * before it)"; the events are the caller's count when it prints the line. */
static int __attribute__((format(printf, 3, 4)))
fail_counted(struct read_error *e, uint32_t chunks, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail(e, 1, chunks, fmt, ap);
	va_end(ap);
	return -1;
}

/* Prints a kept line; returns -1. */
static int print_error(const struct bundle_reader *r, const struct read_error *e)
{
	if (!e->text)
		return error("cannot read bundle '%s': out of memory", r->path);
	if (e->counted)
		return error("%s (read %u chunks, %llu events before it)", e->text, e->chunks,
				(unsigned long long)r->out.events);
	return error("%s", e->text);
}

/* The archive ends with an error; -1. */
static int __attribute__((format(printf, 2, 3))) read_error(struct bundle_reader *r, const char *fmt, ...)
{
	va_list ap;

	r->done = 1;
	va_start(ap, fmt);
	vfail(&r->err, 0, 0, fmt, ap);
	va_end(ap);
	return -1;
}

/* "out of memory while decoding chunk 3 of 'x.stb' (needs 15.0 MiB)" into *e; -1. */
static int oom(struct read_error *e, const char *path, uint64_t need, const char *doing)
{
	char h[32];

	return fail(e, "out of memory while %s of '%s' (needs %s)", doing, path,
		    human_bytes(h, sizeof(h), (double)need));
}

/* The same for reading a member, ending reading; -1. */
static int out_of_memory(struct bundle_reader *r, const char *doing, const char *member, uint64_t need)
{
	char what[300];

	snprintf(what, sizeof(what), "%s '%s'", doing, member);
	r->done = 1;
	return oom(&r->err, r->path, need, what);
}

/*
 * The memory budget. Reading needs the strings (their blocks and the page
 * slots), a member buffer per worker as large as the largest member, a
 * batch per slot as large as the largest chunk, and the caller's per_event
 * bytes for every event claimed. Before each of these grows, the reader
 * checks that the total stays within the limit, and commits the growth:
 * `member` bytes of member buffer, a chunk of `events`, `strings` bytes of
 * strings, for the member `name`. 0, or -1 with the line in r->err.
 */
static int memory_check(struct bundle_reader *r, const char *name, size_t member, size_t events,
			uint64_t strings)
{
	size_t m = member > r->largest_member ? member : r->largest_member;
	size_t c = events > r->largest_chunk ? events : r->largest_chunk;
	uint64_t batches = r->chunks < N_BATCHES ? r->chunks + 1 : N_BATCHES;
	uint64_t need = r->string_memory + strings + (uint64_t)N_WORKERS * m +
			batches * c * sizeof(struct st_event) + (r->events_claimed + events) * r->per_event;
	char h[32], l[32];

	if (r->limit && need > r->limit)
		return read_error(r, "bundle '%s' needs at least %s of memory by '%s' (%llu events), "
				  "over the limit of %s%s%s%s: raise it with --memory-limit", r->path,
				  human_bytes(h, sizeof(h), (double)need), name,
				  (unsigned long long)(r->events_claimed + events),
				  human_bytes(l, sizeof(l), (double)r->limit), *r->limit_why ? " (" : "",
				  r->limit_why, *r->limit_why ? ")" : "");
	r->largest_member = m;
	r->largest_chunk = c;
	r->events_claimed += events;
	r->string_memory += strings;
	return 0;
}

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
/* More input when the buffer is used up: 1, 0 at the end of the file, -1 on a read error (errno). */
static int fill_input(struct bundle_reader *r)
{
	if (r->in.pos < r->in.size)
		return 1;
	if (r->in_eof)
		return 0;
	size_t n = fread(r->ibuf, 1, r->ibuf_size, r->file);
	if (n == 0) {
		if (ferror(r->file))
			return -1;
		r->in_eof = 1;
		return 0;
	}
	r->file_pos += n;
	r->in = (ZSTD_inBuffer){ r->ibuf, n, 0 };
	return 1;
}

/* Decompresses into `out`; 0, or -1 with zstd's reason. The frame's end is noted. */
static int decompress(struct bundle_reader *r, ZSTD_outBuffer *out, const char **why)
{
	size_t ret = ZSTD_decompressStream(r->dz, out, &r->in);

	if (ZSTD_isError(ret)) {
		*why = ZSTD_getErrorName(ret);
		return -1;
	}
	r->frame_ended = ret == 0;
	return 0;
}

/*
 * libarchive's read callback: the next decompressed bytes; 0 at the end of
 * the input (whole or cut) or of the zstd frame (what follows it is
 * trailing data: check_stream_end() says so), -1 when zstd finds damage.
 */
static la_ssize_t tar_read_cb(struct archive *a, void *client, const void **buf)
{
	struct bundle_reader *r = client;
	ZSTD_outBuffer out = { r->obuf, r->obuf_size, 0 };
	const char *why;

	while (out.pos == 0 && !r->frame_ended) {
		int more = fill_input(r);
		if (more < 0) {
			archive_set_error(a, errno, "read error: %s", strerror(errno));
			return -1;
		}
		if (!more)
			return 0;
		if (decompress(r, &out, &why) < 0) {
			archive_set_error(a, EINVAL, "zstd: %s", why);
			r->in_eof = 0; /* damage, not a cut */
			r->in.pos = 0;
			r->in.size = 1;
			return -1;
		}
	}
	*buf = r->obuf;
	return (la_ssize_t)out.pos;
}

/*
 * At the archive's end: the zstd frame must end too (its last block and
 * checksum present, nothing but the tar's zero padding decoded after the
 * archive's end blocks), and the file with the frame. A frame without its
 * end is a cut; bytes after it (garbage, a second bundle) are trailing
 * data; both mark the bundle truncated. A checksum that does not match is
 * damage. 0, or -1 (in r->err).
 */
static int check_stream_end(struct bundle_reader *r)
{
	const char *why;
	char text[160];

	while (!r->frame_ended) {
		ZSTD_outBuffer out = { r->obuf, r->obuf_size, 0 };
		int more = fill_input(r);

		if (more < 0)
			return read_error(r, "cannot read bundle '%s': %s", r->path, strerror(errno));
		if (!more)
			return set_truncated(r, "its zstd frame has no end: the file is cut short");
		if (decompress(r, &out, &why) < 0)
			return read_error(r, "bundle '%s' is damaged: zstd: %s", r->path, why);
		for (size_t i = 0; i < out.pos; i++)
			if (r->obuf[i])
				return set_truncated(r, "it has data after the end of its archive");
	}
	uint64_t end = r->file_pos - (r->in.size - r->in.pos);
	if (end < r->file_size) {
		uint8_t magic[4] = { 0 };
		size_t have = r->in.size - r->in.pos;
		if (have >= 4)
			memcpy(magic, (const uint8_t *)r->in.src + r->in.pos, 4);
		snprintf(text, sizeof(text), "%llu bytes of trailing data follow its end%s",
			 (unsigned long long)(r->file_size - end),
			 have >= 4 && !memcmp(magic, "\x28\xb5\x2f\xfd", 4) ? ": another zstd frame, two bundles concatenated?"
										: "");
		return set_truncated(r, text);
	}
	return 0;
}

static int fail_or_truncate(struct bundle_reader *r, const char *what)
{
	char why[512];

	if (r->opening)
		return read_error(r, "'%s' is not a steptrace bundle: %s", r->path, what);
	if (input_exhausted(r)) {
		snprintf(why, sizeof(why), "%s", what);
		return set_truncated(r, why);
	}
	r->done = 1;
	return fail_counted(&r->err, r->chunks, "bundle '%s' is damaged: %s", r->path, what);
}

/*
 * Reads the next member's data into *mb. Returns 1 with *name and *len set,
 * 0 at the end of the archive, -1 on error (kept in r->err), or 2 when the
 * bundle turned out truncated (r->done set).
 */
static int next_member(struct bundle_reader *r, struct member_buf *mb, const char **name, size_t *len)
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
	uint64_t max = !strcmp(*name, "header.pb") || !strcmp(*name, "footer.pb") ? MAX_HEADER_BYTES
										   : MAX_MEMBER_BYTES;
	if (size < 0 || (uint64_t)size > max) {
		char h[32];
		return read_error(r, "bundle '%s' is damaged: member '%s' claims %lld bytes, over the %s limit",
				  r->path, *name, (long long)size, human_bytes(h, sizeof(h), (double)max));
	}
	if ((size_t)size > mb->cap) {
		if (memory_check(r, *name, (size_t)size, 0, 0) < 0)
			return -1;
		big_free(mb->data, mb->cap);
		mb->cap = 0;
		/* not populated: pages are touched only as far as the data goes */
		if (!(mb->data = big_alloc((size_t)size, false)))
			return out_of_memory(r, "reading", *name, (uint64_t)size);
		mb->cap = (size_t)size;
	}
	size_t got = 0;
	while (got < (size_t)size) {
		la_ssize_t n = archive_read_data(r->ar, mb->data + got, (size_t)size - got);
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

/*
 * How much of a string of `len` bytes is kept: all of it, or at most
 * BUNDLE_NAME_MAX - 3 bytes ending before a UTF-8 character, which "..."
 * follows (bundle.h).
 */
static size_t name_kept(const uint8_t *s, size_t len)
{
	size_t n = BUNDLE_NAME_MAX - 3;

	if (len <= BUNDLE_NAME_MAX)
		return len;
	while (n > 0 && (s[n] & 0xC0) == 0x80)   /* s[n], the first byte left out, continues a character */
		n--;
	return n;
}

/*
 * Adds the string table in `data` (a StringTable message) to the ids,
 * copying its strings, each cut to BUNDLE_NAME_MAX, into one block. An
 * empty string is damage: the writer never writes one (id 0 is the empty
 * string). 0, or -1 (in r->err).
 */
static int add_strings(struct bundle_reader *r, const uint8_t *data, size_t len, const char *member)
{
	uint64_t n = 0, bytes = 0, kept = 0, first_id = 0;
	struct pb_field f;
	size_t pos = 0;
	char *block, *p;
	int ret;

	while ((ret = pb_field_next(data, len, &pos, &f)) > 0) {
		if (f.number == 1 && f.wire == PB_VARINT) {
			first_id = (uint32_t)f.value;
		} else if (f.number == 2 && f.wire == PB_BYTES) {
			if (f.len == 0)
				return fail_counted(&r->err, r->chunks, "bundle '%s' is damaged: string table '%s' "
						    "holds an empty string (id %llu)", r->path, member,
						    (unsigned long long)(r->n_strings + n));
			n++;
			bytes += f.len;
			kept += f.len < BUNDLE_NAME_MAX ? f.len : BUNDLE_NAME_MAX;
		} else if (f.number == 1 || f.number == 2) {
			ret = -1;
			break;
		}
	}
	if (ret < 0)
		return fail_counted(&r->err, r->chunks, "bundle '%s' is damaged: string table '%s' does not decode",
				    r->path, member);
	if (first_id != r->n_strings)
		return read_error(r, "bundle '%s' is damaged: %s starts at string %llu, expected %u",
				  r->path, member, (unsigned long long)first_id, r->n_strings);
	if (n > MAX_STRINGS - r->n_strings)
		return read_error(r, "bundle '%s' is damaged: more than %u strings", r->path, MAX_STRINGS);
	if (r->string_bytes + bytes > MAX_STRING_BYTES)
		return read_error(r, "bundle '%s' is damaged: string table over 1 GiB", r->path);
	/* the block, and a page slot per id */
	if (memory_check(r, member, 0, 0, kept + n + n * sizeof(char *)) < 0)
		return -1;
	char **blocks = realloc(r->string_blocks, (r->n_string_blocks + 1) * sizeof(*blocks));
	if (!blocks)
		return out_of_memory(r, "reading", member, sizeof(*blocks));
	r->string_blocks = blocks;
	block = malloc(kept + n + 1);
	if (!block)
		return out_of_memory(r, "reading", member, kept + n + 1);
	r->string_blocks[r->n_string_blocks++] = block;
	p = block;
	pos = 0;
	for (uint32_t id = r->n_strings; pb_field_next(data, len, &pos, &f) > 0;) {
		if (f.number != 2)
			continue;
		unsigned pg = string_page(id);
		if (!r->string_pages[pg] &&
		    !(r->string_pages[pg] = malloc(((size_t)STRING_PAGE0 << pg) * sizeof(char *))))
			return out_of_memory(r, "reading", member, ((size_t)STRING_PAGE0 << pg) * sizeof(char *));
		size_t k = name_kept(f.data, f.len);
		*string_slot(r->string_pages, id++) = p;
		memcpy(p, f.data, k);
		if (k < f.len) {
			memcpy(p + k, "...", 3);
			k += 3;
		}
		p[k] = '\0';
		p += k + 1;
	}
	r->n_strings += (uint32_t)n;
	r->string_bytes += bytes;
	return 0;
}

static int has_prefix(const char *s, const char *prefix)
{
	return !strncmp(s, prefix, strlen(prefix));
}

struct bundle_reader *bundle_reader_open(const char *path)
{
	struct bundle_reader *r = calloc(1, sizeof(*r));
	struct member_buf *mb;
	struct stat stt;
	const char *name;
	size_t len;
	int ret;

	if (!r || !(r->path = strdup(path))) {
		free(r);
		error("cannot read bundle '%s': out of memory", path);
		return NULL;
	}
	for (int i = 0; i < N_WORKERS; i++) {
		struct worker *w = &r->workers[i];
		w->r = r;
		w->arena.allocator = (ProtobufCAllocator){ arena_alloc, arena_free_noop, &w->arena };
	}
	mb = &r->workers[0].mem;
	if (stat(path, &stt)) {
		error("cannot open bundle '%s': %s", path, strerror(errno));
		goto fail;
	}
	if (S_ISDIR(stt.st_mode)) {
		error("cannot open bundle '%s': is a directory", path);
		goto fail;
	}
	if (stt.st_size == 0) {
		error("'%s' is not a steptrace bundle: the file is empty", path);
		goto fail;
	}
	r->file_size = (uint64_t)stt.st_size;
	r->string_pages[0] = malloc(STRING_PAGE0 * sizeof(char *));
	r->ar = archive_read_new();
	r->dz = ZSTD_createDCtx();
	r->ibuf_size = ZSTD_DStreamInSize();
	r->obuf_size = ZSTD_DStreamOutSize();
	r->ibuf = malloc(r->ibuf_size);
	r->obuf = malloc(r->obuf_size);
	if (!r->string_pages[0] || !r->ar || !r->dz || !r->ibuf || !r->obuf) {
		error("cannot read bundle '%s': out of memory", path);
		goto fail;
	}
	r->string_pages[0][0] = "";
	r->n_strings = 1;
	r->limit = memory_limit_default();
	r->out.n_strings = 1;
	r->file = fopen(path, "rb");
	if (!r->file) {
		error("cannot open bundle '%s': %s", path, strerror(errno));
		goto fail;
	}
	archive_read_support_format_tar(r->ar);
	if (archive_read_open(r->ar, r, NULL, tar_read_cb, NULL) != ARCHIVE_OK) {
		error("'%s' is not a steptrace bundle: %s", path, archive_error_string(r->ar));
		goto fail;
	}
	r->opening = 1;
	ret = next_member(r, mb, &name, &len);
	r->opening = 0;
	if (ret != 1) {
		if (ret < 0)
			print_error(r, &r->err);
		else
			error("'%s' is not a steptrace bundle: %s", path,
				 r->truncation ? r->truncation : "an empty archive");
		goto fail;
	}
	if (strcmp(name, "header.pb")) {
		error("'%s' is not a steptrace bundle: its first member is '%s', not 'header.pb'", path, name);
		goto fail;
	}
	r->header = steptrace__header__unpack(NULL, len, mb->data);
	if (!r->header) {
		error("bundle '%s' is damaged: its header does not decode", path);
		goto fail;
	}
	if (r->header->format_major > BUNDLE_FORMAT_MAJOR) {
		error("bundle '%s' has format %u.%u, newer than this steptrace reads (%d.x): upgrade steptrace",
			 path, r->header->format_major, r->header->format_minor, BUNDLE_FORMAT_MAJOR);
		goto fail;
	}
	if (r->header->format_major == 0) {
		error("'%s' is not a steptrace bundle: its header has no format version", path);
		goto fail;
	}
	return r;
fail:
	bundle_reader_free(r);
	return NULL;
}

/*
 * Reads members up to the next chunk (string tables and the footer on the
 * way), leaving its bytes in w->mem. 1 = a chunk, 0 = end, -1 = error (in
 * r->err). Under read_lock.
 */
static int read_chunk_member(struct bundle_reader *r, struct worker *w)
{
	const char *name;
	size_t len;

	for (;;) {
		int ret = next_member(r, &w->mem, &name, &len);
		if (ret == 0) {
			r->done = 1;
			if (r->footer && (r->footer->chunks != r->chunks || r->footer->strings + 1 != r->n_strings))
				return read_error(r, "bundle '%s' is damaged: its footer lists %u chunks and %u strings, "
						  "the archive holds %u and %u", r->path, r->footer->chunks,
						  r->footer->strings, r->chunks, r->n_strings - 1);
			if (check_stream_end(r) < 0)
				return -1;
			if (!r->footer)
				set_truncated(r, "it has no footer: the recording did not finish");
			return 0;
		}
		if (ret < 0)
			return -1;
		if (ret == 2)
			return 0;
		if (r->footer)
			return read_error(r, "bundle '%s' is damaged: member '%s' after the footer", r->path, name);
		if (has_prefix(name, "strings-")) {
			if (add_strings(r, w->mem.data, len, name) < 0) {
				r->done = 1;
				return -1;
			}
		} else if (has_prefix(name, "events-")) {
			const char *why;
			size_t at;
			char *copy = realloc(w->name, strlen(name) + 1);
			if (!copy)
				return out_of_memory(r, "reading", name, strlen(name) + 1);
			w->name = strcpy(copy, name);
			w->len = len;
			if (chunk_scan(&w->chunk, w->mem.data, len, &why, &at) < 0) {
				r->done = 1;
				if (at == SIZE_MAX)
					return fail_counted(&r->err, r->chunks, "bundle '%s' is damaged: chunk '%s' %s",
							    r->path, name, why);
				return fail_counted(&r->err, r->chunks, "bundle '%s' is damaged: chunk '%s' %s "
						    "(event %zu)", r->path, name, why, at);
			}
			if (memory_check(r, name, 0, w->chunk.n_events, 0) < 0)
				return -1;
			return 1;
		} else if (!strcmp(name, "footer.pb")) {
			r->footer = steptrace__footer__unpack(NULL, len, w->mem.data);
			if (!r->footer)
				return read_error(r, "bundle '%s' is damaged: its footer does not decode", r->path);
			/* what follows it must be the archive's end */
		} else if (!strcmp(name, "header.pb")) {
			return read_error(r, "bundle '%s' is damaged: a second header", r->path);
		}
		/* Other members: from a newer minor version; skip them. */
	}
}

/* A worker claims the next chunk, or the end of reading. 0 when there is
 * nothing left to claim (the end was claimed already). */
static int worker_claim(struct worker *w)
{
	struct bundle_reader *r = w->r;
	int ret;

	pthread_mutex_lock(&r->read_lock);
	if (r->done) {
		pthread_mutex_unlock(&r->read_lock);
		return 0;
	}
	ret = read_chunk_member(r, w);
	w->claimed = ret;
	w->index = r->chunks;
	w->n_strings = r->n_strings;
	if (ret == 1) {
		r->chunks++;
	} else {
		w->err = r->err; /* the archive is done: nobody writes these again */
		r->err.text = NULL;
		w->footer = r->footer;
		w->truncation = r->truncation;
	}
	pthread_mutex_unlock(&r->read_lock);
	return 1;
}

/* Checks the claimed chunk's own fields. 0, or -1 (in w->err). */
static int worker_check(struct worker *w)
{
	struct bundle_reader *r = w->r;

	if (w->chunk.base_ns > (UINT64_C(1) << 62))
		return fail(&w->err, "bundle '%s' is damaged: chunk '%s' has a base time out of range",
			    r->path, w->name);
	if (w->chunk.index != w->index)
		return fail(&w->err, "bundle '%s' is damaged: chunk %u is missing (found '%s' next)",
			    r->path, w->index, w->name);
	return 0;
}

/* Unpacks and decodes the chunk's events into `b`, one at a time. 0, or -1 (in w->err). */
static int decode_chunk(struct worker *w, struct batch *b)
{
	const struct chunk_view *c = &w->chunk;
	struct chunk_state state = { .prev_start = c->base_ns };
	const char *path = w->r->path;
	char doing[64];
	const uint8_t *data;
	size_t pos = 0, len;

	snprintf(doing, sizeof(doing), "decoding chunk %u", w->index);
	if (b->cap < c->n_events) {
		/* n_events was checked against the budget when the chunk was claimed */
		big_free(b->ev, b->cap * sizeof(*b->ev));
		b->cap = 0;
		if (!(b->ev = big_alloc(c->n_events * sizeof(*b->ev), true)))
			return oom(&w->err, path, c->n_events * sizeof(*b->ev), doing);
		b->cap = c->n_events;
	}
	for (size_t i = 0; chunk_next_event(c, &pos, &data, &len); i++) {
		const char *why = NULL;
		Steptrace__Event *m;
		int ret;

		arena_reset(&w->arena);
		m = steptrace__event__unpack(&w->arena.allocator, len, data);
		if (!m && w->arena.failed)
			return oom(&w->err, path, w->arena.failed, doing);
		if (!m)
			return fail_counted(&w->err, w->index, "bundle '%s' is damaged: chunk '%s' does not decode "
					    "(event %zu)", path, w->name, i);
		ret = event_decode(m, &state, w->n_strings, &b->ev[b->n], &why);
		if (ret < 0)
			return fail_counted(&w->err, w->index, "bundle '%s' is damaged: %s (chunk %u, event %zu)",
					    path, why, w->index, i);
		b->n += ret == 0;
	}
	return 0;
}

/* Moves the error line from the worker to the batch that ends reading. */
static void batch_end(struct batch *b, struct worker *w, int end)
{
	b->end = end;
	b->err = w->err;
	w->err.text = NULL;
}

/*
 * One worker's job: claims the next chunk, unpacks it, waits for its slot
 * and fills it. 1 = the batch ended reading (or there was nothing left to
 * claim, or stop): the worker is done; 0 = go on.
 */
static int worker_step(struct worker *w)
{
	struct bundle_reader *r = w->r;
	struct batch *b;
	int ok;

	if (atomic_load_explicit(&r->stop, memory_order_relaxed) || !worker_claim(w))
		return 1;
	ok = w->claimed == 1 && worker_check(w) == 0;

	pthread_mutex_lock(&r->lock);
	while (w->index - r->released >= N_BATCHES && !atomic_load_explicit(&r->stop, memory_order_relaxed))
		pthread_cond_wait(&r->cond, &r->lock);
	pthread_mutex_unlock(&r->lock);
	if (atomic_load_explicit(&r->stop, memory_order_relaxed))
		return 1;

	b = r->slots[w->index % N_BATCHES];
	b->n = 0;
	b->end = 0;
	free(b->err.text);
	b->err = (struct read_error){ 0 };
	b->footer = NULL;
	b->truncation = NULL;
	b->chunks = w->index;
	b->n_strings = w->n_strings;
	if (w->claimed != 1) {
		batch_end(b, w, w->claimed < 0 ? -1 : 1);
		b->footer = w->footer;
		b->truncation = w->truncation;
	} else if (!ok) {
		batch_end(b, w, -1);
	} else {
		b->chunks = w->index + 1;
		if (decode_chunk(w, b))
			batch_end(b, w, -1);
	}

	int end = b->end; /* once ready, the batch is the caller's */
	pthread_mutex_lock(&r->lock);
	b->ready = 1;
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	return end != 0;
}

/* Gives the worker's memory back; it reads nothing more. */
static void worker_release(struct worker *w)
{
	arena_release(&w->arena);
	big_free(w->mem.data, w->mem.cap);
	w->mem = (struct member_buf){ 0 };
	free(w->name);
	w->name = NULL;
	free(w->err.text);
	w->err.text = NULL;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;

	while (!worker_step(w))
		;
	worker_release(w);
	return NULL;
}

/* Allocates the batches and starts the workers; without threads, the
 * caller will do a worker's job itself. */
static int workers_start(struct bundle_reader *r)
{
	sigset_t all, old;
	int started = 0;

	for (int i = 0; i < N_BATCHES; i++)
		if (!(r->slots[i] = calloc(1, sizeof(struct batch))))
			return error("cannot read bundle '%s': out of memory", r->path);
	if (pthread_mutex_init(&r->read_lock, NULL))
		return error("cannot read bundle '%s': out of memory", r->path);
	if (pthread_mutex_init(&r->lock, NULL)) {
		pthread_mutex_destroy(&r->read_lock);
		return error("cannot read bundle '%s': out of memory", r->path);
	}
	if (pthread_cond_init(&r->cond, NULL)) {
		pthread_mutex_destroy(&r->lock);
		pthread_mutex_destroy(&r->read_lock);
		return error("cannot read bundle '%s': out of memory", r->path);
	}
	if (r->file_size < THREADS_MIN_BYTES) {
		/* Nothing to overlap: threads would only add their start. */
		r->workers_state = WORKERS_INLINE;
		return 0;
	}
	/* Signals are for the caller's thread. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	for (int i = 0; i < N_WORKERS; i++) {
		struct worker *w = &r->workers[i];
		w->running = !pthread_create(&w->thread, NULL, worker_main, w);
		started += w->running;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	r->workers_state = started ? WORKERS_THREADS : WORKERS_INLINE;
	return 0;
}

/* Stops the workers wherever they are and waits for them. */
static void workers_join(struct bundle_reader *r)
{
	if (r->workers_state == WORKERS_NONE || r->workers_state == WORKERS_JOINED)
		return;
	pthread_mutex_lock(&r->lock);
	atomic_store_explicit(&r->stop, 1, memory_order_relaxed);
	pthread_cond_broadcast(&r->cond);
	pthread_mutex_unlock(&r->lock);
	for (int i = 0; i < N_WORKERS; i++) {
		if (r->workers[i].running)
			pthread_join(r->workers[i].thread, NULL);
		r->workers[i].running = 0;
		worker_release(&r->workers[i]);
	}
	r->workers_state = WORKERS_JOINED;
}

/* Gives the caller's batch back and waits for the next chunk's. NULL if
 * nothing can come (without threads, when there was nothing to claim). */
static struct batch *next_batch(struct bundle_reader *r)
{
	struct batch *b;

	pthread_mutex_lock(&r->lock);
	if (r->out.batch) {
		r->out.batch->ready = 0;
		r->released++;
		pthread_cond_broadcast(&r->cond);
	}
	b = r->slots[r->released % N_BATCHES];
	while (!b->ready) {
		if (r->workers_state == WORKERS_INLINE) {
			pthread_mutex_unlock(&r->lock);
			worker_step(&r->workers[0]);
			pthread_mutex_lock(&r->lock);
			if (!b->ready)
				b = NULL;
			break;
		}
		pthread_cond_wait(&r->cond, &r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return b;
}

static void batches_free(struct bundle_reader *r)
{
	for (int i = 0; i < N_BATCHES; i++) {
		if (r->slots[i]) {
			big_free(r->slots[i]->ev, r->slots[i]->cap * sizeof(struct st_event));
			free(r->slots[i]->err.text);
		}
		free(r->slots[i]);
		r->slots[i] = NULL;
	}
	r->out.batch = NULL;
}

/*
 * Once read, what reading alone needed goes: the file, libarchive's and
 * zstd's state (a window of up to 8 MiB) and the buffers. A run of 1,024
 * ranks keeps 1,024 readers for their strings, not 1,024 open files.
 */
static void release_input(struct bundle_reader *r)
{
	for (int i = 0; i < N_WORKERS; i++)
		worker_release(&r->workers[i]);
	if (r->ar)
		archive_read_free(r->ar);
	r->ar = NULL;
	if (r->file)
		fclose(r->file);
	r->file = NULL;
	ZSTD_freeDCtx(r->dz);
	r->dz = NULL;
	free(r->ibuf);
	free(r->obuf);
	r->ibuf = r->obuf = NULL;
}

/* After the batch that ends reading: publish what it says, free the rest. */
static int finish_reading(struct bundle_reader *r)
{
	struct batch *last = r->out.batch;
	int ret = 0;

	workers_join(r);
	release_input(r);
	r->out.done = 1;
	r->out.footer = last->footer;
	r->out.truncation = last->truncation;
	if (last->end < 0)
		ret = print_error(r, &last->err);
	batches_free(r);
	return ret;
}

int bundle_reader_next(struct bundle_reader *r, struct st_event *ev)
{
	for (;;) {
		struct batch *b = r->out.batch;
		if (b && r->out.pos < b->n) {
			*ev = b->ev[r->out.pos++];
			r->out.events++;
			return 1;
		}
		if (r->out.done)
			return 0;
		if (b && b->end)
			return finish_reading(r);
		if (r->workers_state == WORKERS_NONE && workers_start(r)) {
			r->out.done = 1;
			return -1;
		}
		b = r->out.batch = next_batch(r);
		if (!b) {
			r->out.done = 1;
			return error("cannot read bundle '%s': reading stopped early", r->path);
		}
		r->out.pos = 0;
		r->out.chunks = b->chunks;
		r->out.n_strings = b->n_strings;
	}
}

void bundle_reader_set_budget(struct bundle_reader *r, uint64_t limit, uint64_t per_event, const char *why)
{
	r->limit = limit;
	r->per_event = per_event;
	snprintf(r->limit_why, sizeof(r->limit_why), "%s", why ? why : "");
}

uint64_t bundle_reader_memory(const struct bundle_reader *r)
{
	uint64_t batches = r->chunks < N_BATCHES ? r->chunks : N_BATCHES;

	return r->string_memory + (uint64_t)N_WORKERS * r->largest_member +
	       batches * r->largest_chunk * sizeof(struct st_event) + r->events_claimed * r->per_event;
}

uint64_t bundle_reader_memory_kept(const struct bundle_reader *r)
{
	return r->string_memory + r->events_claimed * r->per_event;
}

const Steptrace__Header *bundle_reader_header(const struct bundle_reader *r)
{
	return r->header;
}

const char *bundle_reader_string(const struct bundle_reader *r, uint32_t id)
{
	return id < r->out.n_strings ? *string_slot(r->string_pages, id) : NULL;
}

uint32_t bundle_reader_string_count(const struct bundle_reader *r)
{
	return r->out.n_strings;
}

const Steptrace__Footer *bundle_reader_footer(const struct bundle_reader *r)
{
	return r->out.footer;
}

bool bundle_reader_truncated(const struct bundle_reader *r)
{
	return r->out.truncation != NULL;
}

const char *bundle_reader_truncation(const struct bundle_reader *r)
{
	return r->out.truncation;
}

uint32_t bundle_reader_chunks(const struct bundle_reader *r)
{
	return r->out.chunks;
}

uint64_t bundle_reader_events(const struct bundle_reader *r)
{
	return r->out.events;
}

const char *bundle_reader_path(const struct bundle_reader *r)
{
	return r->path;
}

void bundle_reader_free(struct bundle_reader *r)
{
	if (!r)
		return;
	workers_join(r);
	if (r->workers_state != WORKERS_NONE) {
		pthread_cond_destroy(&r->cond);
		pthread_mutex_destroy(&r->lock);
		pthread_mutex_destroy(&r->read_lock);
	}
	batches_free(r);
	for (int i = 0; i < N_WORKERS; i++)
		worker_release(&r->workers[i]);
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
	for (size_t i = 0; i < r->n_string_blocks; i++)
		free(r->string_blocks[i]);
	free(r->string_blocks);
	for (int i = 0; i < STRING_PAGES; i++)
		free(r->string_pages[i]);
	free(r->truncation);
	free(r->err.text);
	free(r->path);
	free(r);
}
