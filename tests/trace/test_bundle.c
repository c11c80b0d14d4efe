/*
 * test_bundle.c: the bundle format end to end. A round trip of every event
 * kind with random fields across many small chunks; truncation at many cut
 * points (a prefix of the events, a warning, never a crash); flipped bytes;
 * files that are not bundles; a newer major version; an oversized member.
 * The reader decodes on worker threads: readers stopped after any number of
 * events and freed, and string lookups while the workers read ahead.
 */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "lib/error.h"
#include "tests/lib/check.h"
#include "trace/bundle.h"

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static char tmpdir[] = "/tmp/st-trace-XXXXXX";

static void path_in_tmp(char *buf, size_t n, const char *name)
{
	snprintf(buf, n, "%s/%s", tmpdir, name);
}

#define N_EVENTS 20000
static struct st_event events[N_EVENTS];
static uint32_t n_strings;

static void random_event(struct st_event *ev, uint64_t *t, uint64_t *corr)
{
	memset(ev, 0, sizeof(*ev));
	ev->kind = ST_KIND_FIRST + (int)(rnd() % (ST_KIND_LAST - ST_KIND_FIRST + 1));
	/* Mostly increasing, sometimes earlier than the previous event (deltas are signed). */
	*t += rnd() % 5000;
	ev->start = *t > 3000 && rnd() % 7 == 0 ? *t - rnd() % 3000 : *t;
	ev->end = ev->start + (rnd() % 3 ? rnd() % 100000 : 0);
	*corr += 1 + rnd() % 3;
	uint32_t s = 1 + (uint32_t)(rnd() % n_strings);
	switch (ev->kind) {
	case ST_KERNEL:
		ev->kernel.name = s;
		for (int i = 0; i < 3; i++) {
			ev->kernel.grid[i] = (uint32_t)(1 + rnd() % 65535);
			ev->kernel.block[i] = (uint32_t)(1 + rnd() % 1024);
		}
		ev->kernel.registers = (uint32_t)(rnd() % 256);
		ev->kernel.static_smem = (uint32_t)(rnd() % 49152);
		ev->kernel.dynamic_smem = (uint32_t)(rnd() % 200000);
		ev->kernel.stream = (uint32_t)(rnd() % 40);
		ev->kernel.device = (uint32_t)(rnd() % 2);
		ev->kernel.op = (uint32_t)(rnd() % 500);
		ev->kernel.correlation = rnd() % 11 ? *corr : *corr - 1 - rnd() % 50;
		break;
	case ST_MEMCPY:
		ev->memcpy.copy_kind = (uint32_t)(rnd() % 12);
		ev->memcpy.src_kind = (uint32_t)(rnd() % 6);
		ev->memcpy.dst_kind = (uint32_t)(rnd() % 6);
		ev->memcpy.bytes = rnd() % (1ull << 40);
		ev->memcpy.stream = (uint32_t)(rnd() % 40);
		ev->memcpy.device = 1;
		ev->memcpy.op = (uint32_t)(rnd() % 500);
		ev->memcpy.correlation = *corr;
		break;
	case ST_MEMSET:
		ev->memset.bytes = rnd() % (1ull << 36);
		ev->memset.value = (uint32_t)(rnd() % 256);
		ev->memset.stream = 7;
		ev->memset.op = (uint32_t)(rnd() % 500);
		ev->memset.correlation = *corr;
		break;
	case ST_API:
		ev->api.name = s;
		ev->api.domain = (uint32_t)(rnd() % 2);
		ev->api.cbid = (uint32_t)(rnd() % 900);
		ev->api.status = (int32_t)(rnd() % 3) - 1;
		ev->api.thread = rnd();
		ev->api.correlation = *corr;
		break;
	case ST_RANGE:
		ev->range.name = s;
		ev->range.depth = (uint32_t)(rnd() % 12);
		ev->range.domain = rnd() % 2 ? s : 0;
		ev->range.thread = rnd() % 100000;
		break;
	case ST_ALLOC:
	case ST_FREE:
		ev->mem.address = rnd();
		ev->mem.size = rnd() % (1ull << 38);
		ev->mem.category = (uint32_t)(rnd() % ST_MEM_CATEGORY_COUNT);
		ev->mem.op = (uint32_t)(rnd() % 500);
		ev->mem.source = (uint32_t)(rnd() % 2);
		ev->mem.device = (uint32_t)(rnd() % 4);
		break;
	case ST_OP:
		ev->op.id = 1 + (uint32_t)(rnd() % 5000);
		ev->op.name = s;
		ev->op.path = 1 + (uint32_t)(rnd() % n_strings);
		ev->op.kind = 1 + (uint32_t)(rnd() % n_strings);
		ev->op.phase = rnd() % 3 ? 1 + (uint32_t)(rnd() % n_strings) : 0;
		ev->op.flops = rnd();
		ev->op.bytes = rnd() >> 8;
		ev->op.n_inputs = (uint8_t)(rnd() % (ST_OP_MAX_INPUTS + 1));
		ev->op.n_outputs = (uint8_t)(rnd() % (ST_OP_MAX_OUTPUTS + 1));
		for (int i = 0; i < ev->op.n_inputs; i++)
			ev->op.inputs[i] = (uint8_t)(rnd() % 8);
		for (int i = 0; i < ev->op.n_outputs; i++)
			ev->op.outputs[i] = (uint8_t)(rnd() % 8);
		break;
	case ST_STEP:
		ev->step.index = (uint32_t)(rnd() % 100);
		ev->step.warmup = rnd() % 2;
		ev->step.thread = rnd() % 100000;
		break;
	case ST_OOM:
		ev->oom.requested = rnd() % (1ull << 40);
		ev->oom.category = (uint32_t)(rnd() % ST_MEM_CATEGORY_COUNT);
		ev->oom.op = (uint32_t)(rnd() % 500);
		ev->oom.live_bytes = rnd() % (1ull << 40);
		ev->oom.capacity = rnd() % (1ull << 40);
		ev->oom.step = (uint32_t)(rnd() % 10);
		break;
	case ST_OVERHEAD:
		ev->overhead.kind = (uint32_t)(rnd() % 8);
		ev->overhead.thread = rnd() % 100000;
		break;
	case ST_MEMTAG:   /* decoded with source driver and no op */
		ev->mem.address = rnd();
		ev->mem.size = rnd() % (1ull << 38);
		ev->mem.category = (uint32_t)(rnd() % ST_MEM_CATEGORY_COUNT);
		ev->mem.source = ST_SRC_DRIVER;
		ev->mem.device = (uint32_t)(rnd() % 4);
		break;
	case ST_SYNC:
		ev->sync.type = (uint32_t)(rnd() % 5);
		ev->sync.stream = (uint32_t)(rnd() % 40);
		ev->sync.thread = rnd() % 100000;
		ev->sync.correlation = *corr;
		break;
	case ST_COST:   /* (1.8) */
		ev->cost.thread = rnd() % 100000;
		ev->cost.callback_ns = rnd() % 100000;
		ev->cost.nvtx_ns = rnd() % 100000;
		ev->cost.hook_ns = rnd() % 1000;
		ev->cost.python_ns = rnd() % (1ull << 30);
		ev->cost.launches = rnd() % 5000;
		ev->cost.ranges = rnd() % 5000;
		ev->cost.modules = rnd() % 500;
		break;
	}
}

static int write_sample_chunked(const char *path, size_t n, int finish, size_t chunk_bytes)
{
	Steptrace__Header h = STEPTRACE__HEADER__INIT;
	Steptrace__RunConfig cfg = STEPTRACE__RUN_CONFIG__INIT;
	Steptrace__DeviceInfo dev = STEPTRACE__DEVICE_INFO__INIT;
	struct bundle_writer_options opt = { .chunk_bytes = chunk_bytes };
	char name[128];

	cfg.model = "small";
	cfg.d_model = 768;
	cfg.ctx = 128;
	dev.name = "Synthetic GPU";
	dev.peak_bf16_flops = 989.4e12;
	h.config = &cfg;
	h.device = &dev;
	h.command_line = "test_bundle";
	h.clock = "synthetic";
	struct bundle_writer *w = bundle_writer_open(path, &h, &opt);
	if (!w)
		return -1;
	/* Strings are interned as events need them, so later chunks define more. */
	uint64_t t = 1000, corr = 0;
	n_strings = 0;
	for (size_t i = 0; i < n; i++) {
		if (i % 100 == 0) {
			snprintf(name, sizeof(name), "string-%zu \xe2\x9c\x93 void kernel<%zu>(float*)", i, i);
			uint32_t id = bundle_writer_intern(w, name);
			CHECK(id == n_strings + 1, "intern returned %u, expected %u", id, n_strings + 1);
			n_strings = id;
			CHECK(bundle_writer_intern(w, name) == id, "re-interning changed the id");
		}
		random_event(&events[i], &t, &corr);
		if (bundle_writer_add(w, &events[i]))
			return -1;
	}
	if (n && events[0].kind == ST_KERNEL)
		bundle_writer_count_dropped(w, ST_KERNEL, 3);
	if (!finish) {
		bundle_writer_abort(w);
		return 0;
	}
	bundle_writer_count_dropped(w, ST_RANGE, 5);
	bundle_writer_set_steps_from(w, "NVTX range 'step'");
	return bundle_writer_close(w, "ok");
}

static int write_sample(const char *path, size_t n, int finish)
{
	return write_sample_chunked(path, n, finish, 16 << 10);
}

static int same_event(const struct st_event *a, const struct st_event *b)
{
	struct st_event x = *a, y = *b;
	/* The union's unused bytes are not part of the value: compare through a copy
	 * re-encoded field by field would be long; compare kind, times and the
	 * union bytes, which the test zeroes before filling. */
	return x.kind == y.kind && x.start == y.start && x.end == y.end &&
	       !memcmp(&x.kernel, &y.kernel, sizeof(x) - offsetof(struct st_event, kernel));
}

/*
 * Reads `path` (under budget[0] bytes with budget[1] per event, when budget
 * is not NULL; *need: what the budget counted), checks events are a prefix
 * of events[] unless quiet; returns the count read, or -1 if reading failed
 * with an error.
 */
static long read_budget(const char *path, const uint64_t *budget, int *truncated, int quiet, uint64_t *need)
{
	struct bundle_reader *r = bundle_reader_open(path);
	struct st_event ev;
	long n = 0;
	int ret;

	*truncated = 0;
	if (!r)
		return -1;
	if (budget)
		bundle_reader_set_budget(r, budget[0], budget[1], NULL);
	while ((ret = bundle_reader_next(r, &ev)) == 1) {
		if (n < N_EVENTS && !quiet)
			CHECK(same_event(&ev, &events[n]), "event %ld differs (kind %d vs %d, start %llu vs %llu)",
			      n, ev.kind, events[n].kind, (unsigned long long)ev.start,
			      (unsigned long long)events[n].start);
		n++;
	}
	*truncated = bundle_reader_truncated(r);
	if (need)
		*need = bundle_reader_memory(r);
	bundle_reader_free(r);
	return ret < 0 ? -1 : n;
}

static long read_back(const char *path, int *truncated, int quiet)
{
	return read_budget(path, NULL, truncated, quiet, NULL);
}

static long file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) ? -1 : (long)st.st_size;
}

static int copy_prefix(const char *from, const char *to, long n, long flip_at, uint8_t flip)
{
	FILE *in = fopen(from, "rb"), *out = fopen(to, "wb");
	int c;
	long i = 0;

	if (!in || !out) {
		if (in)
			fclose(in);
		if (out)
			fclose(out);
		return -1;
	}
	while (i < n && (c = fgetc(in)) != EOF) {
		if (i == flip_at)
			c ^= flip;
		fputc(c, out);
		i++;
	}
	fclose(in);
	fclose(out);
	return 0;
}

static void test_round_trip(const char *path)
{
	int truncated;

	CHECK(write_sample(path, N_EVENTS, 1) == 0, "writing failed");
	long n = read_back(path, &truncated, 0);
	CHECK(n == N_EVENTS, "read %ld events of %d", n, N_EVENTS);
	CHECK(!truncated, "a complete bundle reads as truncated");

	struct bundle_reader *r = bundle_reader_open(path);
	CHECK(r != NULL, "reopen failed");
	if (!r)
		return;
	const Steptrace__Header *h = bundle_reader_header(r);
	CHECK(h->format_major == BUNDLE_FORMAT_MAJOR, "format %u", h->format_major);
	CHECK(h->config && h->config->d_model == 768 && !strcmp(h->config->model, "small"), "config lost");
	CHECK(h->device && !strcmp(h->device->name, "Synthetic GPU") &&
	      h->device->peak_bf16_flops == 989.4e12, "device lost");
	struct st_event ev;
	uint64_t per_kind[ST_KIND_COUNT] = { 0 };
	while (bundle_reader_next(r, &ev) == 1)
		per_kind[ev.kind]++;
	const Steptrace__Footer *f = bundle_reader_footer(r);
	CHECK(f && f->complete && f->events == N_EVENTS, "footer wrong");
	CHECK(f && !strcmp(f->end_reason, "ok"), "end reason");
	CHECK(f && !strcmp(f->steps_from, "NVTX range 'step'"), "steps_from '%s'", f ? f->steps_from : "");
	CHECK(bundle_reader_chunks(r) > 10, "only %u chunks: chunking not exercised", bundle_reader_chunks(r));
	CHECK(f && f->chunks == bundle_reader_chunks(r), "footer chunks %u vs %u", f ? f->chunks : 0,
	      bundle_reader_chunks(r));
	uint64_t dropped = 0;
	for (size_t i = 0; f && i < f->n_counts; i++) {
		int k = st_kind_from_name(f->counts[i]->kind);
		CHECK(k > 0 && f->counts[i]->events == per_kind[k], "footer count of %s", f->counts[i]->kind);
		dropped += f->counts[i]->dropped;
	}
	CHECK(f && f->dropped == dropped && (dropped == 5 || dropped == 8), "dropped %llu",
	      (unsigned long long)dropped);
	const char *s = bundle_reader_string(r, 1);
	CHECK(s && !strcmp(s, "string-0 \xe2\x9c\x93 void kernel<0>(float*)"), "string 1 is '%s'", s ? s : "(null)");
	CHECK(bundle_reader_string(r, 0) && !*bundle_reader_string(r, 0), "string 0 must be empty");
	CHECK(bundle_reader_string(r, n_strings + 1) == NULL, "undefined id must be NULL");
	bundle_reader_free(r);
}

static void test_truncation(const char *full)
{
	char cut[256];
	long size = file_size(full);
	int truncated, ok = 0, cut_points = 0;
	long last = -1;

	path_in_tmp(cut, sizeof(cut), "cut.stb");
	for (long at = 1; at < size; at += size / 97 + 1) {
		copy_prefix(full, cut, at, -1, 0);
		long n = read_back(cut, &truncated, 0);
		cut_points++;
		if (n < 0)
			continue; /* cut inside the header: refused with an error line */
		ok++;
		CHECK(truncated, "a bundle cut at %ld of %ld bytes reads as complete", at, size);
		CHECK(n >= last, "a longer prefix gave fewer events (%ld < %ld)", n, last);
		last = n;
	}
	printf("truncation: %d of %d cut points readable, longest prefix %ld events\n", ok, cut_points, last);
	CHECK(ok > cut_points / 2, "only %d of %d cut points were readable", ok, cut_points);
	CHECK(last > N_EVENTS / 2, "the longest prefix gave only %ld events", last);

	/* A writer that stopped without a footer. */
	CHECK(write_sample(cut, 5000, 0) == 0, "abort write failed");
	long n = read_back(cut, &truncated, 0);
	CHECK(n == 5000 && truncated, "aborted bundle: %ld events, truncated %d", n, truncated);
}

static void test_flipped_bytes(const char *full)
{
	char bad[256];
	long size = file_size(full);
	int truncated, errors = 0;

	path_in_tmp(bad, sizeof(bad), "flip.stb");
	for (int i = 0; i < 150; i++) {
		long at = (long)(rnd() % (uint64_t)size);
		copy_prefix(full, bad, size, at, (uint8_t)(1 + rnd() % 255));
		long n = read_back(bad, &truncated, 1);
		if (n < 0)
			errors++;
	}
	printf("damage: %d of 150 bundles with one flipped byte refused\n", errors);
	CHECK(errors > 100, "only %d of 150 damaged bundles were refused", errors);
}

static int write_raw_tar(const char *path, int zstd, const char *first_name, const void *data,
			 size_t len, long long claimed)
{
	struct archive *a = archive_write_new();
	struct archive_entry *e = archive_entry_new();
	int ret = -1;

	if (zstd)
		archive_write_add_filter_zstd(a);
	archive_write_set_format_pax_restricted(a);
	if (archive_write_open_filename(a, path) != ARCHIVE_OK)
		goto out;
	archive_entry_set_pathname(e, first_name);
	archive_entry_set_size(e, claimed >= 0 ? claimed : (long long)len);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	if (archive_write_header(a, e) != ARCHIVE_OK)
		goto out;
	archive_write_data(a, data, len);
	archive_write_finish_entry(a);
	ret = 0;
out:
	archive_write_close(a);
	archive_write_free(a);
	archive_entry_free(e);
	return ret;
}

static void expect_refused(const char *path, const char *what, const char *needle)
{
	char *msg = NULL;
	size_t msg_len = 0;
	FILE *mem = open_memstream(&msg, &msg_len);
	int truncated;

	error_set_stream(mem);
	long n = read_back(path, &truncated, 1);
	error_set_stream(NULL);
	fclose(mem);
	CHECK(n < 0, "%s was accepted (%ld events)", what, n);
	int lines = 0;
	for (char *p = msg; p && *p; p++)
		lines += *p == '\n';
	CHECK(lines == 1, "%s: expected one error line, got %d: %s", what, lines, msg ? msg : "");
	CHECK(msg && strstr(msg, needle), "%s: message lacks '%s': %s", what, needle, msg ? msg : "");
	CHECK(msg && strstr(msg, path), "%s: message does not name the file: %s", what, msg ? msg : "");
	free(msg);
}

static void test_not_bundles(void)
{
	char p[256];

	path_in_tmp(p, sizeof(p), "empty.stb");
	fclose(fopen(p, "wb"));
	expect_refused(p, "an empty file", "empty");

	expect_refused(tmpdir, "a directory", "directory");

	path_in_tmp(p, sizeof(p), "missing.stb");
	expect_refused(p, "a missing file", "No such file");

	path_in_tmp(p, sizeof(p), "text.stb");
	FILE *f = fopen(p, "wb");
	for (int i = 0; i < 3000; i++)
		fputs("not a bundle at all ", f);
	fclose(f);
	expect_refused(p, "a text file", "not a steptrace bundle");

	/* A zstd stream that is not a tar. */
	path_in_tmp(p, sizeof(p), "notar.stb");
	{
		struct archive *a = archive_write_new();
		archive_write_add_filter_zstd(a);
		archive_write_set_format_raw(a);
		archive_write_open_filename(a, p);
		struct archive_entry *e = archive_entry_new();
		archive_entry_set_filetype(e, AE_IFREG);
		archive_write_header(a, e);
		char junk[4096];
		for (size_t i = 0; i < sizeof(junk); i++)
			junk[i] = (char)rnd();
		archive_write_data(a, junk, sizeof(junk));
		archive_write_close(a);
		archive_write_free(a);
		archive_entry_free(e);
	}
	expect_refused(p, "a zstd stream that is not a tar", "not a steptrace bundle");

	/* A tar whose first member is not the header. */
	path_in_tmp(p, sizeof(p), "nohdr.stb");
	write_raw_tar(p, 1, "events-000000.pb", "\x08\x00", 2, -1);
	expect_refused(p, "a tar without a header", "header.pb");

	/* A header that does not decode. */
	path_in_tmp(p, sizeof(p), "badhdr.stb");
	write_raw_tar(p, 1, "header.pb", "\xff\xff\xff\xff\xff", 5, -1);
	expect_refused(p, "an undecodable header", "header");

	/* A member claiming more than the limit: a tar header forged to say 3 GiB,
	 * followed by one byte, zstd-compressed. */
	{
		static uint8_t tar[1 << 16], z[1 << 16];
		size_t used = 0;
		struct archive *a = archive_write_new();
		struct archive_entry *e = archive_entry_new();
		archive_write_set_format_pax_restricted(a);
		archive_write_set_bytes_per_block(a, 0);
		archive_write_open_memory(a, tar, sizeof(tar), &used);
		archive_entry_set_pathname(e, "header.pb");
		archive_entry_set_size(e, 3LL << 30);
		archive_entry_set_filetype(e, AE_IFREG);
		archive_write_header(a, e);
		tar[used++] = 'x';
		size_t zn = ZSTD_compress(z, sizeof(z), tar, used, 3);
		archive_write_free(a); /* without close: no padding to the claimed size */
		archive_entry_free(e);
		path_in_tmp(p, sizeof(p), "huge.stb");
		FILE *hf = fopen(p, "wb");
		fwrite(z, 1, zn, hf);
		fclose(hf);
		expect_refused(p, "an oversized member", "limit");
	}

	/* A newer major version. */
	{
		Steptrace__Header h = STEPTRACE__HEADER__INIT;
		h.format_major = BUNDLE_FORMAT_MAJOR + 1;
		h.format_minor = 4;
		uint8_t buf[64];
		size_t len = steptrace__header__pack(&h, buf);
		path_in_tmp(p, sizeof(p), "newer.stb");
		write_raw_tar(p, 1, "header.pb", buf, len, -1);
		expect_refused(p, "a newer major version", "newer than this steptrace reads");
	}
}

/* Reads `want` events of `path` (checking them), then frees the reader while
 * its workers may be anywhere. Returns the events read. */
static long read_some(const char *path, long want, int check)
{
	struct bundle_reader *r = bundle_reader_open(path);
	struct st_event ev;
	long n = 0;

	if (!r)
		return -1;
	while (n < want && bundle_reader_next(r, &ev) == 1) {
		if (check && n < N_EVENTS)
			CHECK(same_event(&ev, &events[n]), "stopping at %ld: event %ld differs", want, n);
		n++;
	}
	CHECK(bundle_reader_events(r) == (uint64_t)n, "events %llu, delivered %ld",
	      (unsigned long long)bundle_reader_events(r), n);
	bundle_reader_free(r);
	return n;
}

/* Stops reading after 0, 1, ... events: at chunk starts, inside chunks, one
 * before the end; on whole, cut and damaged bundles. Nothing may leak, hang
 * or crash (the sanitizer build runs this). */
static void test_stop_early(const char *path, long total)
{
	char bad[256];
	long size = file_size(path);
	long stops[] = { 0, 1, 2, 99, 100, 101, 777, 4096, total / 3, total / 2, total - 1, total, total + 1 };

	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++) {
		long n = read_some(path, stops[i], 1);
		CHECK(n == (stops[i] < total ? stops[i] : total), "stopping at %ld read %ld", stops[i], n);
	}
	for (int i = 0; i < 20; i++) {
		long want = (long)(rnd() % (uint64_t)total);
		CHECK(read_some(path, want, 1) == want, "stopping at %ld", want);
	}
	path_in_tmp(bad, sizeof(bad), "stop.stb");
	for (int i = 0; i < 20; i++) {
		long at = size / 4 + (long)(rnd() % (uint64_t)(size - size / 4));
		copy_prefix(path, bad, i % 2 ? size : at, i % 2 ? at : -1, (uint8_t)(1 + rnd() % 255));
		read_some(bad, (long)(rnd() % (uint64_t)total), 0);
	}
}

/* Every string id of an event resolves as soon as the event is delivered,
 * to the string interned for it, while the workers read ahead; the counts
 * the caller sees only grow, and ids past the string count are undefined. */
static void test_strings_while_reading(const char *path)
{
	struct bundle_reader *r = bundle_reader_open(path);
	struct st_event ev;
	uint32_t last_count = 0, last_chunks = 0;
	char want[128];
	long n = 0;

	CHECK(r != NULL, "open failed");
	if (!r)
		return;
	while (bundle_reader_next(r, &ev) == 1) {
		uint32_t ids[4] = { 0 }, count = bundle_reader_string_count(r);
		switch (ev.kind) {
		case ST_KERNEL: ids[0] = ev.kernel.name; break;
		case ST_API: ids[0] = ev.api.name; break;
		case ST_RANGE: ids[0] = ev.range.name; ids[1] = ev.range.domain; break;
		case ST_OP:
			ids[0] = ev.op.name;
			ids[1] = ev.op.path;
			ids[2] = ev.op.kind;
			ids[3] = ev.op.phase;
			break;
		}
		for (int i = 0; i < 4; i++) {
			if (!ids[i])
				continue;
			const char *s = bundle_reader_string(r, ids[i]);
			size_t at = (size_t)(ids[i] - 1) * 100;
			snprintf(want, sizeof(want), "string-%zu \xe2\x9c\x93 void kernel<%zu>(float*)", at, at);
			CHECK(ids[i] < count, "event %ld names string %u of %u", n, ids[i], count);
			CHECK(s && !strcmp(s, want), "event %ld: string %u is '%s'", n, ids[i], s ? s : "(null)");
		}
		CHECK(count >= last_count && bundle_reader_chunks(r) >= last_chunks, "counts went back at event %ld", n);
		CHECK(bundle_reader_string(r, count) == NULL, "string %u defined past the count", count);
		CHECK(!bundle_reader_footer(r) && !bundle_reader_truncated(r), "end seen at event %ld", n);
		last_count = count;
		last_chunks = bundle_reader_chunks(r);
		n++;
	}
	CHECK(n == N_EVENTS && bundle_reader_footer(r), "read %ld events", n);
	CHECK(bundle_reader_string_count(r) == n_strings + 1, "%u strings at the end, expected %u",
	      bundle_reader_string_count(r), n_strings + 1);
	bundle_reader_free(r);
}

static void test_threads(void)
{
	char small[256], big[256];

	path_in_tmp(small, sizeof(small), "threads.stb");
	CHECK(write_sample(small, N_EVENTS, 1) == 0, "writing failed");
	/* Bundles under 256 KiB are read without threads. */
	CHECK(file_size(small) >= 256 << 10, "%ld bytes: too small to start workers", file_size(small));
	test_stop_early(small, N_EVENTS);
	test_strings_while_reading(small);
	/* Chunks of thousands of events, so stops fall deep inside one. */
	path_in_tmp(big, sizeof(big), "big-chunks.stb");
	CHECK(write_sample_chunked(big, N_EVENTS, 1, 128 << 10) == 0, "writing failed");
	CHECK(file_size(big) >= 256 << 10, "%ld bytes: too small to start workers", file_size(big));
	struct bundle_reader *r = bundle_reader_open(big);
	CHECK(r != NULL, "open failed");
	bundle_reader_free(r); /* before any event: no worker started */
	test_stop_early(big, N_EVENTS);
	test_strings_while_reading(big);
	int truncated;
	CHECK(read_back(big, &truncated, 0) == N_EVENTS && !truncated, "big chunks read back wrong");
}

/*
 * The budget counts before it allocates, so a limit of exactly what reading
 * counted reads everything, and a byte less stops with one line; with or
 * without worker threads (chunks of 16 KiB and of 128 KiB).
 */
static void test_budget(void)
{
	char path[256];

	for (int big = 0; big < 2; big++) {
		uint64_t need = 0, again = 0, budget[2] = { 0, 200 };
		char line[512] = "";
		FILE *err = tmpfile();
		int truncated;

		path_in_tmp(path, sizeof(path), big ? "budget-big.stb" : "budget.stb");
		CHECK(write_sample_chunked(path, N_EVENTS, 1, big ? 128 << 10 : 16 << 10) == 0, "writing failed");
		CHECK(read_budget(path, budget, &truncated, 0, &need) == N_EVENTS, "no limit: everything");
		CHECK(need > 200ull * N_EVENTS && need < 300ull * N_EVENTS, "counted %llu for %d events",
		      (unsigned long long)need, N_EVENTS);
		budget[0] = need;
		CHECK(read_budget(path, budget, &truncated, 0, &again) == N_EVENTS && again == need,
		      "a limit of what it needs");
		budget[0] = need - 1;
		error_set_stream(err);
		CHECK(read_budget(path, budget, &truncated, 0, &again) == -1, "a byte less");
		error_set_stream(fopen("/dev/null", "w"));
		rewind(err);
		CHECK(fgets(line, sizeof(line), err) && strstr(line, "needs at least") &&
		      strstr(line, "raise it with --memory-limit") && !fgets(line, sizeof(line), err),
		      "one line: %s", line);
		fclose(err);
	}
}

/* A missing chunk in the middle is damage, not truncation. */
static void test_missing_chunk(const char *full)
{
	char p[256];
	struct archive *in = archive_read_new(), *out = archive_write_new();
	struct archive_entry *e;
	static uint8_t buf[1 << 20];

	path_in_tmp(p, sizeof(p), "gap.stb");
	archive_read_support_filter_zstd(in);
	archive_read_support_format_tar(in);
	archive_read_open_filename(in, full, 65536);
	archive_write_add_filter_zstd(out);
	archive_write_set_format_pax_restricted(out);
	archive_write_open_filename(out, p);
	while (archive_read_next_header(in, &e) == ARCHIVE_OK) {
		la_ssize_t n = archive_read_data(in, buf, sizeof(buf));
		if (!strcmp(archive_entry_pathname(e), "events-000003.pb"))
			continue;
		archive_write_header(out, e);
		archive_write_data(out, buf, (size_t)n);
	}
	archive_read_free(in);
	archive_write_close(out);
	archive_write_free(out);
	expect_refused(p, "a bundle missing chunk 3", "chunk 3 is missing");
}

/*
 * Strings longer than BUNDLE_NAME_MAX come back cut: their first bytes,
 * ending before a UTF-8 character, and "...", BUNDLE_NAME_MAX at most; one
 * of exactly BUNDLE_NAME_MAX stays whole.
 */
static void test_long_names(void)
{
	static const struct { size_t bytes; const char *unit; size_t kept; } cases[] = {
		{ BUNDLE_NAME_MAX, "a", BUNDLE_NAME_MAX },            /* whole */
		{ BUNDLE_NAME_MAX + 1, "a", BUNDLE_NAME_MAX - 3 },
		{ 20 << 20, "b", BUNDLE_NAME_MAX - 3 },
		{ 6000, "\xe2\x82\xac", 1364 * 3 },                /* 4,093 bytes would split a euro sign */
		{ 6000, "\xf0\x9d\x84\x9e", 1023 * 4 },           /* and a 4-byte character */
	};
	enum { N = sizeof(cases) / sizeof(cases[0]) };
	Steptrace__Header h = STEPTRACE__HEADER__INIT;
	struct bundle_writer *w;
	struct bundle_reader *r;
	struct st_event ev;
	uint32_t id[N];
	char path[256];

	path_in_tmp(path, sizeof(path), "long-names.stb");
	h.clock = "synthetic";
	w = bundle_writer_open(path, &h, NULL);
	CHECK(w != NULL, "open for writing");
	if (!w)
		return;
	for (size_t i = 0; i < N; i++) {
		size_t u = strlen(cases[i].unit);
		char *name = malloc(cases[i].bytes + 1);

		for (size_t k = 0; k + u <= cases[i].bytes; k += u)
			memcpy(name + k, cases[i].unit, u);
		name[cases[i].bytes / u * u] = '\0';
		id[i] = bundle_writer_intern(w, name);
		free(name);
		memset(&ev, 0, sizeof(ev));
		ev.kind = ST_KERNEL;
		ev.kernel.name = id[i];
		CHECK(bundle_writer_add(w, &ev) == 0, "an event naming string %zu", i);
	}
	CHECK(bundle_writer_close(w, "ok") == 0, "closing");
	r = bundle_reader_open(path);
	CHECK(r != NULL, "open for reading");
	if (!r)
		return;
	while (bundle_reader_next(r, &ev) > 0)
		;
	for (size_t i = 0; i < N; i++) {
		const char *got = bundle_reader_string(r, id[i]);
		size_t n = got ? strlen(got) : 0, u = strlen(cases[i].unit);
		bool whole = cases[i].kept == cases[i].bytes;

		CHECK(got && n == cases[i].kept + (whole ? 0 : 3), "string %zu: %zu bytes, want %zu", i, n,
		      cases[i].kept + (whole ? 0 : 3));
		CHECK(n <= BUNDLE_NAME_MAX, "string %zu: %zu bytes", i, n);
		for (size_t k = 0; got && k + u <= cases[i].kept && k + u <= n; k += u)
			if (memcmp(got + k, cases[i].unit, u)) {
				CHECK(0, "string %zu: byte %zu is not the string's", i, k);
				break;
			}
		CHECK(whole || (got && n >= 3 && !strcmp(got + n - 3, "...")), "string %zu ends in '...'", i);
	}
	bundle_reader_free(r);
}

int main(int argc, char **argv)
{
	char full[256];

	/* --write PATH: just write a sample bundle (for the interop script). */
	if (argc == 3 && !strcmp(argv[1], "--write"))
		return write_sample(argv[2], 3000, 1) ? 1 : 0;
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	path_in_tmp(full, sizeof(full), "full.stb");
	error_set_stream(fopen("/dev/null", "w"));
	test_round_trip(full);
	test_truncation(full);
	test_flipped_bytes(full);
	test_threads();
	test_budget();
	test_missing_chunk(full);
	test_long_names();
	error_set_stream(NULL);
	test_not_bundles();
	printf("test_bundle: bundles left in %s\n", tmpdir);
	return check_done("test_bundle");
}
