/*
 * writer.c: the streaming bundle writer.
 *
 * Events are encoded straight into the current chunk's buffer; when it
 * reaches chunk_bytes the strings interned since the last member are written
 * as a strings-N.pb member, then the chunk as events-N.pb. So every member on
 * disk only uses strings defined before it, and a bundle cut anywhere reads
 * up to its last whole chunk.
 *
 * libarchive writes the tar stream; zstd compression is done here with
 * libzstd rather than libarchive's filter so that the stream can be flushed
 * after every member: once a member is written, all of it is decodable from
 * the file even if the process dies the next instant.
 */
#include "trace/bundle.h"

#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zstd.h>

#include "lib/error.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/output.h"
#include "trace/codec.h"

#define DEFAULT_CHUNK_BYTES (4u << 20)

struct intern_slot {
	char *s;
	uint32_t id;
	uint64_t hash;
};

struct bundle_writer {
	struct archive *ar;
	struct output out;   /* the bundle's file, under a temporary name until closed */
	FILE *file;          /* out.f */
	ZSTD_CCtx *zc;
	uint8_t *zbuf;
	size_t zbuf_size;
	int io_error;   /* errno of a failed write, 0 if none */
	char *path;
	size_t chunk_bytes;
	int failed;

	/* interned strings: ids 1..n_strings; [first_pending, n_strings] not yet written */
	struct intern_slot *slots;
	size_t n_slots; /* power of two */
	char **by_id;   /* by_id[id] */
	size_t alloc_by_id;
	uint32_t n_strings, strings_written;
	uint32_t string_members;

	/* the open chunk */
	struct byte_buf chunk;
	struct chunk_state state;
	uint64_t chunk_base;
	uint32_t chunk_events;
	uint32_t chunks;

	uint64_t counts[ST_KIND_COUNT];
	uint64_t dropped[ST_KIND_COUNT];
	uint64_t events;
	char *steps_from;    /* the footer's, NULL when not said */
	struct st_param_group *groups;   /* the footer's param_groups */
	struct st_launch_cost launch_cost;   /* the footer's launch_cost; launches 0: none */
	uint64_t unrecorded[ST_UNRECORDED_STEPS_MAX];   /* the footer's unrecorded_step_ns */
	size_t n_unrecorded;
	uint64_t armed_ns, armed_span_ns;   /* the footer's unrecorded_recorder_ns and unrecorded_span_ns */
	size_t n_groups;
};

/* Compresses `len` bytes (mode ZSTD_e_continue, _flush or _end) into the file. */
static int zstd_push(struct bundle_writer *w, const void *data, size_t len, ZSTD_EndDirective mode)
{
	ZSTD_inBuffer in = { data, len, 0 };

	for (;;) {
		ZSTD_outBuffer out = { w->zbuf, w->zbuf_size, 0 };
		size_t left = ZSTD_compressStream2(w->zc, &out, &in, mode);
		if (ZSTD_isError(left)) {
			w->io_error = EIO;
			return -1;
		}
		if (out.pos && fwrite(w->zbuf, 1, out.pos, w->file) != out.pos) {
			w->io_error = errno ? errno : EIO;
			return -1;
		}
		if (mode == ZSTD_e_continue ? in.pos == in.size : left == 0)
			return 0;
	}
}

static la_ssize_t tar_write_cb(struct archive *a, void *client, const void *buf, size_t len)
{
	struct bundle_writer *w = client;

	if (zstd_push(w, buf, len, ZSTD_e_continue)) {
		archive_set_error(a, w->io_error, "%s", strerror(w->io_error));
		return -1;
	}
	return (la_ssize_t)len;
}

/* Makes everything written so far decodable from the file. */
static int zstd_flush(struct bundle_writer *w)
{
	if (zstd_push(w, NULL, 0, ZSTD_e_flush) || fflush(w->file)) {
		if (!w->io_error)
			w->io_error = errno ? errno : EIO;
		return error("cannot write bundle '%s': %s", w->path, strerror(w->io_error));
	}
	return 0;
}

static int write_member(struct bundle_writer *w, const char *name, const void *data, size_t len)
{
	struct archive_entry *e;
	int ret = -1;

	if (w->failed)
		return -1;
	e = archive_entry_new();
	if (!e)
		return error("cannot write bundle '%s': out of memory", w->path);
	archive_entry_set_pathname(e, name);
	archive_entry_set_size(e, (la_int64_t)len);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_mtime(e, time(NULL), 0);
	if (archive_write_header(w->ar, e) != ARCHIVE_OK) {
		error("cannot write bundle '%s': %s", w->path, archive_error_string(w->ar));
		goto out;
	}
	if (len && archive_write_data(w->ar, data, len) != (la_ssize_t)len) {
		error("cannot write bundle '%s': %s", w->path, archive_error_string(w->ar));
		goto out;
	}
	if (archive_write_finish_entry(w->ar) != ARCHIVE_OK) {
		error("cannot write bundle '%s': %s", w->path, archive_error_string(w->ar));
		goto out;
	}
	ret = zstd_flush(w);
out:
	archive_entry_free(e);
	if (ret)
		w->failed = 1;
	return ret;
}

static int write_message(struct bundle_writer *w, const char *name, const ProtobufCMessage *m)
{
	size_t len = protobuf_c_message_get_packed_size(m);
	uint8_t *buf = malloc(len ? len : 1);
	int ret;

	if (!buf)
		return error("cannot write bundle '%s': out of memory", w->path);
	protobuf_c_message_pack(m, buf);
	ret = write_member(w, name, buf, len);
	free(buf);
	return ret;
}

static int write_pending_strings(struct bundle_writer *w)
{
	Steptrace__StringTable st = STEPTRACE__STRING_TABLE__INIT;
	char name[64];

	if (w->strings_written == w->n_strings)
		return 0;
	st.first_id = w->strings_written + 1;
	st.n_strings = w->n_strings - w->strings_written;
	st.strings = &w->by_id[w->strings_written + 1];
	snprintf(name, sizeof(name), "strings-%06u.pb", w->string_members++);
	if (write_message(w, name, &st.base))
		return -1;
	w->strings_written = w->n_strings;
	return 0;
}

static size_t put_field_varint(uint8_t *p, unsigned field, uint64_t v)
{
	size_t n = 0;
	uint64_t tag = (uint64_t)field << 3;

	do {
		p[n++] = (uint8_t)(tag | (tag >= 0x80 ? 0x80 : 0));
		tag >>= 7;
	} while (tag);
	do {
		p[n++] = (uint8_t)(v | (v >= 0x80 ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

static int flush_chunk(struct bundle_writer *w)
{
	uint8_t head[32];
	size_t n = 0;
	char name[64];
	int ret;

	if (write_pending_strings(w))
		return -1;
	if (!w->chunk_events)
		return 0;
	/* EventChunk: index (1), base_ns (2), then the events (3) already framed. */
	n += put_field_varint(head + n, 1, w->chunks);
	n += put_field_varint(head + n, 2, w->chunk_base);
	if (byte_buf_reserve(&w->chunk, n))
		return -1;
	memmove(w->chunk.data + n, w->chunk.data, w->chunk.len);
	memcpy(w->chunk.data, head, n);
	w->chunk.len += n;
	snprintf(name, sizeof(name), "events-%06u.pb", w->chunks);
	ret = write_member(w, name, w->chunk.data, w->chunk.len);
	w->chunks++;
	w->chunk.len = 0;
	w->chunk_events = 0;
	return ret;
}

struct bundle_writer *bundle_writer_open(const char *path, const Steptrace__Header *hdr,
					 const struct bundle_writer_options *opt)
{
	struct bundle_writer *w = calloc(1, sizeof(*w));
	Steptrace__Header h = *hdr;

	if (!w || !(w->path = strdup(path))) {
		free(w);
		error("cannot create bundle '%s': out of memory", path);
		return NULL;
	}
	w->chunk_bytes = opt && opt->chunk_bytes ? opt->chunk_bytes : DEFAULT_CHUNK_BYTES;
	w->n_slots = 1024;
	w->slots = calloc(w->n_slots, sizeof(*w->slots));
	w->by_id = calloc(w->n_slots, sizeof(*w->by_id));
	w->alloc_by_id = w->n_slots;
	w->zbuf_size = ZSTD_CStreamOutSize();
	w->zbuf = malloc(w->zbuf_size);
	w->zc = ZSTD_createCCtx();
	w->ar = archive_write_new();
	if (!w->slots || !w->by_id || !w->zbuf || !w->zc || !w->ar) {
		error("cannot create bundle '%s': out of memory", path);
		goto fail;
	}
	ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, opt && opt->zstd_level ? opt->zstd_level : 3);
	ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1);
	if (output_open(&w->out, w->path, NULL) < 0)
		goto fail;
	w->file = w->out.f;
	/* Unblocked tar output: each write reaches zstd as it is made. */
	if (archive_write_set_format_pax_restricted(w->ar) != ARCHIVE_OK ||
	    archive_write_set_bytes_per_block(w->ar, 0) != ARCHIVE_OK ||
	    archive_write_open2(w->ar, w, NULL, tar_write_cb, NULL, NULL) != ARCHIVE_OK) {
		error("cannot create bundle '%s': %s", path, archive_error_string(w->ar));
		goto fail;
	}
	h.format_major = BUNDLE_FORMAT_MAJOR;
	h.format_minor = BUNDLE_FORMAT_MINOR;
#ifdef STEPTRACE_VERSION
	h.tool_version = "steptrace " STEPTRACE_VERSION;
#else
	if (!h.tool_version || !*h.tool_version)
		h.tool_version = "steptrace";
#endif
	if (write_message(w, "header.pb", &h.base))
		goto fail;
	return w;
fail:
	if (w->ar)
		archive_write_free(w->ar);
	if (w->file)
		output_discard(&w->out);
	ZSTD_freeCCtx(w->zc);
	free(w->zbuf);
	free(w->slots);
	free(w->by_id);
	free(w->path);
	free(w);
	return NULL;
}

const char *bundle_writer_file(const struct bundle_writer *w)
{
	return output_writing(&w->out);
}

/* Doubles the hash table of interned strings. */
static int grow_strings(struct bundle_writer *w)
{
	size_t n = w->n_slots * 2;
	struct intern_slot *slots = calloc(n, sizeof(*slots));

	if (!slots)
		return -1;
	for (size_t i = 0; i < w->n_slots; i++) {
		struct intern_slot *s = &w->slots[i];
		if (!s->s)
			continue;
		size_t j = s->hash & (n - 1);
		while (slots[j].s)
			j = (j + 1) & (n - 1);
		slots[j] = *s;
	}
	free(w->slots);
	w->slots = slots;
	w->n_slots = n;
	return 0;
}

uint32_t bundle_writer_intern(struct bundle_writer *w, const char *s)
{
	uint64_t h;
	size_t i;

	if (!s || !*s || w->failed)
		return 0;
	h = hash_str(s);
	for (i = h & (w->n_slots - 1); w->slots[i].s; i = (i + 1) & (w->n_slots - 1))
		if (w->slots[i].hash == h && !strcmp(w->slots[i].s, s))
			return w->slots[i].id;
	if ((w->n_strings + 2) * 2 > w->n_slots) {
		if (grow_strings(w)) {
			w->failed = 1;
			error("cannot write bundle '%s': out of memory", w->path);
			return 0;
		}
		for (i = h & (w->n_slots - 1); w->slots[i].s; i = (i + 1) & (w->n_slots - 1))
			;
	}
	if (ALLOC_GROW(w->by_id, w->n_strings + 2, w->alloc_by_id) < 0) {
		w->failed = 1;
		return 0;
	}
	char *copy = strdup(s);
	if (!copy) {
		w->failed = 1;
		error("cannot write bundle '%s': out of memory", w->path);
		return 0;
	}
	w->n_strings++;
	w->slots[i] = (struct intern_slot){ .s = copy, .id = w->n_strings, .hash = h };
	w->by_id[w->n_strings] = copy;
	return w->n_strings;
}

int bundle_writer_add(struct bundle_writer *w, const struct st_event *ev)
{
	if (w->failed)
		return -1;
	if (ev->kind < ST_KIND_FIRST || ev->kind > ST_KIND_LAST)
		return error("cannot write bundle '%s': event of unknown kind %d", w->path, ev->kind);
	if (!w->chunk_events) {
		w->chunk_base = ev->start;
		w->state = (struct chunk_state){ .prev_start = ev->start };
	}
	if (!event_encode(&w->chunk, &w->state, ev)) {
		w->failed = 1;
		return -1;
	}
	w->chunk_events++;
	w->counts[ev->kind]++;
	w->events++;
	if (w->chunk.len >= w->chunk_bytes)
		return flush_chunk(w);
	return 0;
}

void bundle_writer_count_dropped(struct bundle_writer *w, int kind, uint64_t n)
{
	if (kind >= ST_KIND_FIRST && kind <= ST_KIND_LAST)
		w->dropped[kind] += n;
}

/*
 * Ends the tar and the zstd frame, then puts the file in place (or, when the
 * bundle could not be written, removes the temporary file and leaves the
 * target as it was). -1 (message printed when `report`) on error.
 */
static int writer_finish(struct bundle_writer *w, int report)
{
	int ret = 0;

	if (archive_write_close(w->ar) != ARCHIVE_OK) {
		ret = -1;
		if (report)
			error("cannot finish bundle '%s': %s", w->path, archive_error_string(w->ar));
	}
	archive_write_free(w->ar);
	if (zstd_push(w, NULL, 0, ZSTD_e_end) && !ret && report)
		ret = error("cannot finish bundle '%s': %s", w->path, strerror(w->io_error));
	if (ret || w->io_error) {
		output_discard(&w->out);
		return -1;
	}
	return output_close(&w->out);
}

static void writer_free(struct bundle_writer *w)
{
	for (uint32_t id = 1; id <= w->n_strings; id++)
		free(w->by_id[id]);
	free(w->by_id);
	free(w->slots);
	free(w->chunk.data);
	ZSTD_freeCCtx(w->zc);
	free(w->zbuf);
	free(w->path);
	free(w->steps_from);
	free(w->groups);
	free(w);
}

void bundle_writer_set_steps_from(struct bundle_writer *w, const char *steps_from)
{
	free(w->steps_from);
	w->steps_from = steps_from && *steps_from ? strdup(steps_from) : NULL;
}

int bundle_writer_set_param_groups(struct bundle_writer *w, const struct st_param_group *g, size_t n)
{
	size_t keep = n < ST_PARAM_GROUPS_MAX ? n : ST_PARAM_GROUPS_MAX;
	struct st_param_group *copy = keep ? malloc(keep * sizeof(*copy)) : NULL;

	if (keep && !copy)
		return error("out of memory for the parameter groups");
	if (keep)
		memcpy(copy, g, keep * sizeof(*copy));
	for (size_t i = keep; i < n; i++) {   /* the rest, summed into the last */
		copy[keep - 1].tensors += g[i].tensors;
		copy[keep - 1].elements += g[i].elements;
		copy[keep - 1].bytes += g[i].bytes;
		if (g[i].dtype != copy[keep - 1].dtype)
			copy[keep - 1].dtype = ST_DT_UNKNOWN;
	}
	free(w->groups);
	w->groups = copy;
	w->n_groups = keep;
	return 0;
}

void bundle_writer_set_launch_cost(struct bundle_writer *w, const struct st_launch_cost *c)
{
	w->launch_cost = *c;
}

void bundle_writer_set_unrecorded_steps(struct bundle_writer *w, const uint64_t *ns, size_t n)
{
	if (n > ST_UNRECORDED_STEPS_MAX) {
		ns += n - ST_UNRECORDED_STEPS_MAX;
		n = ST_UNRECORDED_STEPS_MAX;
	}
	if (n)   /* ns may be NULL with n 0 */
		memcpy(w->unrecorded, ns, n * sizeof(*ns));
	w->n_unrecorded = n;
}

void bundle_writer_set_armed_cost(struct bundle_writer *w, uint64_t recorder_ns, uint64_t span_ns)
{
	w->armed_ns = recorder_ns;
	w->armed_span_ns = span_ns;
}

int bundle_writer_close(struct bundle_writer *w, const char *end_reason)
{
	Steptrace__LaunchCost lc = STEPTRACE__LAUNCH_COST__INIT;
	Steptrace__Footer f = STEPTRACE__FOOTER__INIT;
	Steptrace__KindCount counts[ST_KIND_COUNT], *ptrs[ST_KIND_COUNT];
	Steptrace__ParamGroup groups[ST_PARAM_GROUPS_MAX], *gptrs[ST_PARAM_GROUPS_MAX];
	struct timespec ts;
	int ret = flush_chunk(w);

	clock_gettime(CLOCK_REALTIME, &ts);
	f.complete = 1;
	f.events = w->events;
	f.chunks = w->chunks;
	f.strings = w->n_strings;
	f.end_reason = (char *)(end_reason ? end_reason : "ok");
	f.finished_unix_ns = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
	f.steps_from = w->steps_from ? w->steps_from : (char *)"";
	for (int k = ST_KIND_FIRST; k <= ST_KIND_LAST; k++) {
		if (!w->counts[k] && !w->dropped[k])
			continue;
		steptrace__kind_count__init(&counts[f.n_counts]);
		counts[f.n_counts].kind = (char *)st_kind_name(k);
		counts[f.n_counts].events = w->counts[k];
		counts[f.n_counts].dropped = w->dropped[k];
		f.dropped += w->dropped[k];
		ptrs[f.n_counts] = &counts[f.n_counts];
		f.n_counts++;
	}
	f.counts = ptrs;
	for (size_t i = 0; i < w->n_groups; i++) {
		steptrace__param_group__init(&groups[i]);
		groups[i].tensors = w->groups[i].tensors;
		groups[i].elements = w->groups[i].elements;
		groups[i].bytes = w->groups[i].bytes;
		groups[i].dtype = (Steptrace__DType)w->groups[i].dtype;
		gptrs[i] = &groups[i];
	}
	f.n_param_groups = w->n_groups;
	f.param_groups = w->n_groups ? gptrs : NULL;
	if (w->launch_cost.launches) {
		lc.launches = w->launch_cost.launches;
		lc.rounds = w->launch_cost.rounds;
		lc.traced_ns = w->launch_cost.traced_ns;
		lc.untraced_ns = w->launch_cost.untraced_ns;
		f.launch_cost = &lc;
	}
	f.n_unrecorded_step_ns = w->n_unrecorded;
	f.unrecorded_step_ns = w->n_unrecorded ? w->unrecorded : NULL;
	f.unrecorded_recorder_ns = w->armed_ns;
	f.unrecorded_span_ns = w->armed_span_ns;
	if (!ret)
		ret = write_message(w, "footer.pb", &f.base);
	if (writer_finish(w, !ret) && !ret)
		ret = -1;
	writer_free(w);
	return ret;
}

void bundle_writer_abort(struct bundle_writer *w)
{
	flush_chunk(w);
	writer_finish(w, 0);
	writer_free(w);
}

void bundle_writer_discard(struct bundle_writer *w)
{
	archive_write_free(w->ar);
	output_discard(&w->out);
	writer_free(w);
}
