/* edit.c: see edit.h. */
#include "tests/fuzz/edit.h"

#include <archive.h>
#include <archive_entry.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

static const uint8_t zstd_magic[4] = { 0x28, 0xb5, 0x2f, 0xfd };

static bool is_zstd(const uint8_t *data, size_t size)
{
	return size >= 4 && !memcmp(data, zstd_magic, 4);
}

static bool is_tar(const uint8_t *data, size_t size)
{
	return size >= 512 && !memcmp(data + 257, "ustar", 5);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* As much of a zstd frame as decompresses, up to EDIT_MAX_TAR bytes: malloc'd, or NULL. */
static uint8_t *decompress(const uint8_t *data, size_t size, size_t *len)
{
	ZSTD_DCtx *z = ZSTD_createDCtx();
	ZSTD_inBuffer in = { data, size, 0 };
	size_t cap = 1 << 16;
	uint8_t *out = malloc(cap);

	*len = 0;
	while (z && out && in.pos < in.size) {
		ZSTD_outBuffer o = { out + *len, cap - *len, 0 };
		size_t ret = ZSTD_decompressStream(z, &o, &in);
		*len += o.pos;
		if (ZSTD_isError(ret))
			break;
		if (*len == cap) {
			uint8_t *p = cap < EDIT_MAX_TAR ? realloc(out, cap * 2) : NULL;
			if (!p)
				break;
			out = p;
			cap *= 2;
		}
	}
	ZSTD_freeDCtx(z);
	if (out && *len == 0) {
		free(out);
		out = NULL;
	}
	return out;
}

/*
 * A tar compressed as the writer does (a checksum, a flush after each
 * member: marks[] are where members end in data), and cut after member
 * b->cut_after. malloc'd, or NULL.
 */
static uint8_t *compress_flushed(const uint8_t *data, size_t size, const size_t *marks, size_t n_marks,
				 const struct edit_bundle *b, size_t *len)
{
	ZSTD_CCtx *z = ZSTD_createCCtx();
	size_t cap = ZSTD_compressBound(size) + 64 * (n_marks + 1), from = 0, cut = 0;
	uint8_t *out = malloc(cap);
	ZSTD_outBuffer o = { out, cap, 0 };

	if (!z || !out || ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_compressionLevel, 1)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 1)))
		goto fail;
	for (size_t k = 0; k <= n_marks; k++) {
		size_t to = k < n_marks ? marks[k] : size, left;
		ZSTD_inBuffer in = { data + from, to - from, 0 };
		do {
			left = ZSTD_compressStream2(z, &o, &in, k < n_marks ? ZSTD_e_flush : ZSTD_e_end);
			if (ZSTD_isError(left))
				goto fail;
		} while (left);
		from = to;
		if (k + 1 == b->cut_after)
			cut = o.pos;
	}
	ZSTD_freeCCtx(z);
	*len = o.pos;
	if (b->cut_after) {
		long at = (long)(cut ? cut : o.pos) + b->cut_delta;
		*len = at < 1 ? 1 : (size_t)at < o.pos ? (size_t)at : o.pos;
	}
	return out;
fail:
	ZSTD_freeCCtx(z);
	free(out);
	return NULL;
}

static uint8_t *compress(const uint8_t *data, size_t size, size_t *len)
{
	size_t cap = ZSTD_compressBound(size);
	uint8_t *out = malloc(cap);

	if (out && ZSTD_isError(*len = ZSTD_compress(out, cap, data, size, 1))) {
		free(out);
		out = NULL;
	}
	return out;
}

/* ---- tar archives in memory ---------------------------------------------------------- */

/*
 * Calls fn(ctx, name, bytes, len) for each regular member of the tar in
 * data, in order, until fn returns nonzero or the archive ends (at its end
 * or at damage: what came before counts).
 */
static void tar_each(const uint8_t *data, size_t size,
		     int (*fn)(void *ctx, const char *name, const uint8_t *p, size_t len), void *ctx)
{
	struct archive *a = archive_read_new();
	struct archive_entry *e;

	if (!a)
		return;
	archive_read_support_format_tar(a);
	if (archive_read_open_memory(a, data, size) != ARCHIVE_OK) {
		archive_read_free(a);
		return;
	}
	while (archive_read_next_header(a, &e) == ARCHIVE_OK) {
		la_int64_t n = archive_entry_size(e);
		const char *name = archive_entry_pathname(e);
		uint8_t *p;
		la_ssize_t got;

		if (n < 0 || (uint64_t)n > EDIT_MAX_TAR || !(p = malloc((size_t)n + 1)))
			break;
		got = n ? archive_read_data(a, p, (size_t)n) : 0;
		if (got != n) {
			free(p);
			break;
		}
		if (fn(ctx, name ? name : "?", p, (size_t)n)) {
			free(p);
			break;
		}
		free(p);
	}
	archive_read_free(a);
}

struct tar_out {
	struct archive *a;
	struct archive_entry *e;
	uint8_t *buf;
	size_t cap, used;
	size_t marks[EDIT_MAX_MEMBERS];   /* where each member ends */
	size_t n_marks;
	bool failed;
};

static int tar_open(struct tar_out *t, size_t cap)
{
	memset(t, 0, sizeof(*t));
	t->cap = cap;
	if (!(t->buf = malloc(cap)) || !(t->a = archive_write_new()) || !(t->e = archive_entry_new()) ||
	    archive_write_set_format_pax_restricted(t->a) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(t->a, 0) != ARCHIVE_OK ||
	    archive_write_open_memory(t->a, t->buf, cap, &t->used) != ARCHIVE_OK)
		t->failed = true;
	return t->failed ? -1 : 0;
}

static void tar_add(struct tar_out *t, const char *name, const void *data, size_t len)
{
	if (t->failed)
		return;
	archive_entry_clear(t->e);
	archive_entry_set_pathname(t->e, name);
	archive_entry_set_size(t->e, (la_int64_t)len);
	archive_entry_set_filetype(t->e, AE_IFREG);
	archive_entry_set_perm(t->e, 0644);
	if (archive_write_header(t->a, t->e) != ARCHIVE_OK ||
	    (len && archive_write_data(t->a, data, len) != (la_ssize_t)len))
		t->failed = true;
	if (t->n_marks < EDIT_MAX_MEMBERS)
		t->marks[t->n_marks++] = t->used;
}

/* The archive's bytes (malloc'd, *len), or NULL; frees the rest. */
static uint8_t *tar_close(struct tar_out *t, size_t *len)
{
	if (t->a && !t->failed && archive_write_close(t->a) != ARCHIVE_OK)
		t->failed = true;
	if (t->a)
		archive_write_free(t->a);
	if (t->e)
		archive_entry_free(t->e);
	if (t->failed) {
		free(t->buf);
		return NULL;
	}
	*len = t->used;
	return t->buf;
}

/* ---- messages ------------------------------------------------------------------------ */

ProtobufCMessage *edit_new(const ProtobufCMessageDescriptor *desc)
{
	ProtobufCMessage *m = malloc(desc->sizeof_message);

	if (m)
		protobuf_c_message_init(desc, m);
	return m;
}

ProtobufCMessage *edit_copy(const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *p = malloc(len + 1);
	ProtobufCMessage *c = NULL;

	if (p) {
		protobuf_c_message_pack(m, p);
		c = protobuf_c_message_unpack(m->descriptor, NULL, len, p);
	}
	free(p);
	return c;
}

void edit_set_string(char **p, const char *s)
{
	char *c = strdup(s);

	if (!c)
		return;
	if (*p && *p != protobuf_c_empty_string)
		free(*p);
	*p = c;
}

int64_t *edit_correlation(Steptrace__Event *e)
{
	switch (e->kind_case) {
	case STEPTRACE__EVENT__KIND_KERNEL:
		return &e->kernel->correlation;
	case STEPTRACE__EVENT__KIND_MEMCPY:
		return &e->memcpy->correlation;
	case STEPTRACE__EVENT__KIND_MEMSET:
		return &e->memset->correlation;
	case STEPTRACE__EVENT__KIND_API:
		return &e->api->correlation;
	case STEPTRACE__EVENT__KIND_SYNC:
		return &e->sync->correlation;
	default:
		return NULL;
	}
}

/* A chunk's deltas made absolute values (absolute), or the other way. */
static void chunk_convert(Steptrace__EventChunk *c, bool absolute)
{
	uint64_t t = c->base_ns, corr = 0;

	for (size_t i = 0; i < c->n_events; i++) {
		Steptrace__Event *e = c->events[i];
		int64_t *cp = edit_correlation(e);
		if (absolute) {
			t += (uint64_t)e->t;
			e->t = (int64_t)t;
		} else {
			uint64_t abs = (uint64_t)e->t;
			e->t = (int64_t)(abs - t);
			t = abs;
		}
		if (!cp)
			continue;
		if (absolute) {
			corr += (uint64_t)*cp;
			*cp = (int64_t)corr;
		} else {
			uint64_t abs = (uint64_t)*cp;
			*cp = (int64_t)(abs - corr);
			corr = abs;
		}
	}
}

static const ProtobufCMessageDescriptor *type_descriptor(enum edit_type t)
{
	switch (t) {
	case EDIT_HEADER:
		return &steptrace__header__descriptor;
	case EDIT_STRINGS:
		return &steptrace__string_table__descriptor;
	case EDIT_EVENTS:
		return &steptrace__event_chunk__descriptor;
	case EDIT_FOOTER:
		return &steptrace__footer__descriptor;
	default:
		return NULL;
	}
}

static enum edit_type member_type(const char *name)
{
	if (!strcmp(name, "header.pb"))
		return EDIT_HEADER;
	if (!strcmp(name, "footer.pb"))
		return EDIT_FOOTER;
	if (!strncmp(name, "strings-", 8) && has_suffix(name, ".pb"))
		return EDIT_STRINGS;
	if (!strncmp(name, "events-", 7) && has_suffix(name, ".pb"))
		return EDIT_EVENTS;
	return EDIT_OTHER;
}

void edit_member_decode(struct edit_member *m)
{
	const ProtobufCMessageDescriptor *d = type_descriptor(m->type);
	ProtobufCMessage *msg;

	if (m->msg || !d || !(msg = protobuf_c_message_unpack(d, NULL, m->len, m->raw)))
		return;
	m->msg = msg;
	free(m->raw);
	m->raw = NULL;
	m->len = 0;
	if (m->type == EDIT_EVENTS)
		chunk_convert(edit_chunk(m), true);
}

uint8_t *edit_member_bytes(struct edit_member *m, size_t *len)
{
	uint8_t *p;

	if (!m->msg) {
		*len = m->len;
		p = malloc(m->len + 1);
		if (p && m->len)
			memcpy(p, m->raw, m->len);
		return p;
	}
	if (m->type == EDIT_EVENTS)
		chunk_convert(edit_chunk(m), false);
	*len = protobuf_c_message_get_packed_size(m->msg);
	p = malloc(*len + 1);
	if (p)
		protobuf_c_message_pack(m->msg, p);
	if (m->type == EDIT_EVENTS)
		chunk_convert(edit_chunk(m), true);
	return p;
}

void edit_member_rename(struct edit_member *m, const char *name)
{
	size_t len;
	uint8_t *p = edit_member_bytes(m, &len);

	if (!p)
		return;
	if (m->msg)
		protobuf_c_message_free_unpacked(m->msg, NULL);
	free(m->raw);
	m->msg = NULL;
	m->raw = p;
	m->len = len;
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->type = member_type(m->name);
	edit_member_decode(m);
}

void edit_member_clear(struct edit_member *m)
{
	if (m->msg)
		protobuf_c_message_free_unpacked(m->msg, NULL);
	free(m->raw);
	memset(m, 0, sizeof(*m));
}

/* ---- bundles and sets ------------------------------------------------------------------- */

static int add_member(void *ctx, const char *name, const uint8_t *p, size_t len)
{
	struct edit_bundle *b = ctx;
	struct edit_member *m;

	if (b->n == EDIT_MAX_MEMBERS)
		return 1;
	m = &b->m[b->n];
	memset(m, 0, sizeof(*m));
	snprintf(m->name, sizeof(m->name), "%s", name);
	m->type = member_type(m->name);
	if (!(m->raw = malloc(len + 1)))
		return 1;
	memcpy(m->raw, p, len);
	m->len = len;
	b->n++;
	edit_member_decode(m);
	return 0;
}

/* A bundle from its bytes (a zstd frame, or the tar inside one): 0, or -1 when it holds no member. */
static int parse_bundle(struct edit_bundle *b, const uint8_t *data, size_t size)
{
	uint8_t *tar = NULL;
	size_t len = size;

	memset(b, 0, sizeof(*b));
	if (is_zstd(data, size)) {
		if (!(tar = decompress(data, size, &len)))
			return -1;
		data = tar;
	}
	tar_each(data, len, add_member, b);
	free(tar);
	return b->n ? 0 : -1;
}

static void free_bundle(struct edit_bundle *b)
{
	for (size_t i = 0; i < b->n; i++)
		edit_member_clear(&b->m[i]);
	b->n = 0;
}

static int add_bundle(void *ctx, const char *name, const uint8_t *p, size_t len)
{
	struct edit_set *s = ctx;

	if (s->n == EDIT_MAX_BUNDLES)
		return 1;
	if (has_suffix(name, ".stb") && parse_bundle(&s->b[s->n], p, len) == 0)
		s->n++;
	return 0;
}

static int first_name(void *ctx, const char *name, const uint8_t *p, size_t len)
{
	snprintf(ctx, 100, "%s", name);
	return 1;
}

/* True when the tar in data is a set: its first member is a .stb file. */
static bool is_set(const uint8_t *data, size_t size)
{
	char name[100] = "";

	if (!is_tar(data, size))
		return false;
	tar_each(data, size, first_name, name);
	return has_suffix(name, ".stb");
}

int edit_parse(struct edit_set *s, const uint8_t *data, size_t size)
{
	memset(s, 0, sizeof(*s));
	if (is_set(data, size)) {
		s->tar = true;
		tar_each(data, size, add_bundle, s);
	} else if ((is_zstd(data, size) || is_tar(data, size)) && parse_bundle(&s->b[0], data, size) == 0) {
		s->n = 1;
	}
	return s->n ? 0 : -1;
}

void edit_free(struct edit_set *s)
{
	for (size_t i = 0; i < s->n; i++)
		free_bundle(&s->b[i]);
	s->n = 0;
}

/* A bundle's .stb bytes (malloc'd), or NULL. */
static uint8_t *pack_bundle(struct edit_bundle *b, size_t *len)
{
	struct tar_out t;
	size_t cap = 4096, n, tar_len;
	uint8_t *tar, *out;

	for (size_t i = 0; i < b->n; i++) {
		n = b->m[i].msg ? protobuf_c_message_get_packed_size(b->m[i].msg) : b->m[i].len;
		cap += n + 1024;
	}
	if (tar_open(&t, cap) < 0) {
		tar_close(&t, &tar_len);
		return NULL;
	}
	for (size_t i = 0; i < b->n; i++) {
		uint8_t *p = edit_member_bytes(&b->m[i], &n);
		if (!p) {
			t.failed = true;
			break;
		}
		tar_add(&t, b->m[i].name, p, n);
		free(p);
	}
	n = t.n_marks;
	if (!(tar = tar_close(&t, &tar_len)))
		return NULL;
	out = compress_flushed(tar, tar_len, t.marks, n, b, len);
	free(tar);
	if (out && b->n_tail) {
		uint8_t *p = realloc(out, *len + b->n_tail);
		if (p) {
			memcpy(p + *len, b->tail, b->n_tail);
			*len += b->n_tail;
			out = p;
		}
	}
	return out;
}

size_t edit_pack(struct edit_set *s, uint8_t *out, size_t max)
{
	uint8_t *p[EDIT_MAX_BUNDLES] = { NULL }, *whole = NULL;
	size_t len[EDIT_MAX_BUNDLES], n = 0, total = 4096;
	struct tar_out t;

	for (size_t i = 0; i < s->n; i++) {
		if (!(p[i] = pack_bundle(&s->b[i], &len[i])))
			goto out;
		total += len[i] + 1024;
	}
	if (s->n == 1 && !s->tar) {
		whole = p[0];
		n = len[0];
		p[0] = NULL;
	} else if (tar_open(&t, total) == 0) {
		for (size_t i = 0; i < s->n; i++) {
			char name[32];
			snprintf(name, sizeof(name), "%zu.stb", i);
			tar_add(&t, name, p[i], len[i]);
		}
		whole = tar_close(&t, &n);
	} else {
		tar_close(&t, &n);
	}
	if (whole && n <= max)
		memcpy(out, whole, n);
	else
		n = 0;
out:
	free(whole);
	for (size_t i = 0; i < s->n; i++)
		free(p[i]);
	return n;
}

struct split {
	uint8_t **bundle;
	size_t *len, n;
};

static int add_split(void *ctx, const char *name, const uint8_t *p, size_t len)
{
	struct split *sp = ctx;

	if (sp->n == EDIT_MAX_BUNDLES)
		return 1;
	if (!has_suffix(name, ".stb") || !(sp->bundle[sp->n] = malloc(len + 1)))
		return 0;
	memcpy(sp->bundle[sp->n], p, len);
	sp->len[sp->n++] = len;
	return 0;
}

size_t edit_split(const uint8_t *data, size_t size, uint8_t **bundle, size_t *len)
{
	struct split sp = { bundle, len, 0 };

	if (is_set(data, size)) {
		tar_each(data, size, add_split, &sp);
		return sp.n;
	}
	if (is_zstd(data, size)) {
		if (!(bundle[0] = malloc(size + 1)))
			return 0;
		memcpy(bundle[0], data, size);
		len[0] = size;
		return 1;
	}
	return (bundle[0] = compress(data, size, &len[0])) ? 1 : 0;
}

/* ---- looking things up ------------------------------------------------------------------- */

uint32_t edit_string_count(const struct edit_bundle *b)
{
	uint64_t n = 1;

	for (size_t i = 0; i < b->n; i++)
		if (b->m[i].type == EDIT_STRINGS && b->m[i].msg)
			n += edit_strings(&b->m[i])->n_strings;
	return n > UINT32_MAX ? UINT32_MAX : (uint32_t)n;
}

const char *edit_string(const struct edit_bundle *b, uint32_t id)
{
	uint32_t first = 1;

	if (id == 0)
		return "";
	for (size_t i = 0; i < b->n; i++) {
		const Steptrace__StringTable *t;
		if (b->m[i].type != EDIT_STRINGS || !b->m[i].msg)
			continue;
		t = edit_strings(&b->m[i]);
		if (id - first < t->n_strings)
			return t->strings[id - first];
		first += (uint32_t)t->n_strings;
	}
	return NULL;
}

size_t edit_event_count(const struct edit_bundle *b)
{
	size_t n = 0;

	for (size_t i = 0; i < b->n; i++)
		if (b->m[i].type == EDIT_EVENTS && b->m[i].msg)
			n += edit_chunk(&b->m[i])->n_events;
	return n;
}

Steptrace__Event *edit_event(const struct edit_bundle *b, size_t i, size_t *member, size_t *at)
{
	for (size_t k = 0; k < b->n; k++) {
		const Steptrace__EventChunk *c;
		if (b->m[k].type != EDIT_EVENTS || !b->m[k].msg)
			continue;
		c = edit_chunk(&b->m[k]);
		if (i < c->n_events) {
			if (member)
				*member = k;
			if (at)
				*at = i;
			return c->events[i];
		}
		i -= c->n_events;
	}
	return NULL;
}

void edit_window(struct edit_bundle *b, size_t from, size_t len)
{
	size_t k = 0, ops = 0;

	for (size_t i = 0; i < b->n; i++) {
		Steptrace__EventChunk *c;
		size_t kept = 0;
		if (b->m[i].type != EDIT_EVENTS || !b->m[i].msg)
			continue;
		c = edit_chunk(&b->m[i]);
		for (size_t j = 0; j < c->n_events; j++, k++) {
			bool op = k < from && c->events[j]->kind_case == STEPTRACE__EVENT__KIND_OP && ops < len;
			if ((k >= from && k - from < len) || op) {
				c->events[kept++] = c->events[j];
				ops += op;
			} else {
				protobuf_c_message_free_unpacked(&c->events[j]->base, NULL);
			}
		}
		c->n_events = kept;
	}
}
