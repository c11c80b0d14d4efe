/*
 * hostile.c: st-hostile, the hostile bundles of issue 12 and a runner that
 * measures what a command costs. A test helper, not a user command.
 *
 *   st-hostile empty-events OUT [N [CHUNKS]]   chunks of N events with no content (2 bytes each)
 *   st-hostile kindless OUT [N]                N events with a time and no kind
 *   st-hostile empty-strings OUT [N]           a string table of N empty strings
 *   st-hostile kernels OUT CHUNKS              valid, identical kernels: 4 MiB chunks of 209,715
 *   st-hostile flood OUT CHUNKS                the same without the noise: 750 bytes a chunk
 *   st-hostile nested OUT NAME_BYTES [LAUNCHES [DEPTH]]
 *                                              DEPTH (4096) nested ranges, names of NAME_BYTES,
 *                                              LAUNCHES launches in the innermost
 *   st-hostile world OUT [WORLD [RANK]]       rank RANK (0) of a run of WORLD (2^32-1) ranks, one kernel
 *   st-hostile long-names OUT NAMES BYTES LAUNCHES
 *                                              NAMES kernel names of BYTES each, LAUNCHES launches
 *                                              cycling through them
 *   st-hostile overlap OUT steps|ranges|kernels N
 *                                              N steps, ranges on one thread or kernels on one
 *                                              stream, each overlapping the next without nesting
 *   st-hostile graph OUT N                     a CUDA graph's launch of N kernels of N ops of
 *                                              distinct paths, after N stream captures
 *   st-hostile spread OUT N                    N launches, each from a thread of its own onto a
 *                                              stream of its own
 *   st-hostile steps OUT N [labelled]          N steps of 1 ms in a row, an allocation and a free in
 *                                              each; labelled: each in a range of its own name
 *   st-hostile mixed OUT N                     N times a launch, an allocation and its free, a range
 *                                              and every 1000th a step: every kind a report keeps
 *   st-hostile utf8 OUT                        names, paths, a command line and a device that are
 *                                              not valid UTF-8 (see bad_utf8[]), and valid ones
 *   st-hostile ddp OUT PARAMS BUCKET_MB       a data-parallel step whose header claims PARAMS
 *                                              parameters in buckets of BUCKET_MB
 *   st-hostile deep OUT DEPTH LAUNCHES KERNEL [spread]
 *                                              DEPTH nested ranges of one-letter names, LAUNCHES
 *                                              launches of KERNEL in the innermost (spread: in
 *                                              each range in turn)
 *   st-hostile ranks DIR N KERNELS COLLECTIVES [MODE]
 *                                              N ranks of one run, DIR/r.rank<k>.stb, each with
 *                                              KERNELS kernels and COLLECTIVES all-reduces in 10
 *                                              steps (MODE: same, comms, uneven, apart, day,
 *                                              bytes, world; see ranks())
 *   st-hostile alloc-overlap OUT N             N allocations overlapping live ones at other
 *                                              addresses
 *   st-hostile run MAX_KIB MAX_CPU_SECONDS CMD ARGS...
 *                                              runs CMD; its exit status, or 125 after a line
 *                                              when its peak RSS or its CPU time went over
 *
 * `run` bounds work, not the clock: CPU time (user + system, every thread of
 * CMD) is what a slow or busy machine does not inflate much. Hard stops: an
 * RLIMIT_CPU a second past the bound, and for a CMD that hangs without
 * using the CPU, a wall-clock backstop of 10 times the bound plus 60 s.
 * ST_HOSTILE_VERBOSE=1: each run's wall time, peak RSS and CPU time on
 * stderr; ST_HOSTILE_LOG=FILE: appended to FILE, "CPU_S WALL_S KIB NAME".
 *
 * The damaged ones are written member by member (builder_write_members),
 * the valid ones through the bundle writer or as the writer would.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/lib/builder.h"
#include "trace/codec.h"

#define CHUNK_BYTES (4u << 20)

/* The header every hostile bundle has: the small model on an H100. */
static void usual_header(struct builder *b)
{
	builder_init(b);
	builder_small_model(b, "bf16");
	builder_h100(b, "NVIDIA H100 80GB HBM3");
}

static uint8_t *header(size_t *len)
{
	struct builder b;

	usual_header(&b);
	return builder_header_bytes(&b, len);
}

/* A footer for a bundle of `chunks` chunks, `strings` strings and `events` events of `kind`. */
static uint8_t *footer(uint32_t chunks, uint32_t strings, uint64_t events, const char *kind, size_t *len)
{
	Steptrace__Footer f = STEPTRACE__FOOTER__INIT;
	Steptrace__KindCount c = STEPTRACE__KIND_COUNT__INIT, *cp = &c;
	uint8_t *p;

	f.complete = true;
	f.events = events;
	f.chunks = chunks;
	f.strings = strings;
	f.end_reason = "ok";
	if (kind) {
		c.kind = (char *)kind;
		c.events = events;
		f.n_counts = 1;
		f.counts = &cp;
	}
	*len = steptrace__footer__get_packed_size(&f);
	p = malloc(*len + 1);
	if (p)
		steptrace__footer__pack(&f, p);
	return p;
}

/*
 * A bundle of a header, one string table (when `strings` is not NULL),
 * `chunks` event chunks each made of `n` copies of the encoded event `ev`
 * (field 3 of EventChunk, tag and length included) and a footer that agrees.
 * With `noise` and more than one chunk, a member of 320 KiB of noise (a
 * name readers skip) comes after the header, so that the file is large
 * enough for the reader's worker threads.
 */
static int repeated_events(const char *out, const uint8_t *ev, size_t ev_len, uint64_t n, uint32_t chunks,
			   const uint8_t *strings, size_t strings_len, uint32_t n_strings, const char *kind,
			   bool noise)
{
	size_t hlen, flen, body = (size_t)n * ev_len;
	uint8_t *h = header(&hlen), *f = footer(chunks, n_strings, n * chunks, kind, &flen);
	uint8_t *chunk = malloc(16 + body);
	struct builder_raw *raw = NULL;
	int ret = -1;

	if (!h || !f || !chunk) {
		fprintf(stderr, "st-hostile: out of memory\n");
		goto out;
	}
	for (size_t i = 0; i < body; i += ev_len)
		memcpy(chunk + 16 + i, ev, ev_len);
	raw = builder_raw_open(out, 19);
	if (!raw || builder_raw_member(raw, "header.pb", h, hlen) < 0)
		goto out;
	if (noise && chunks > 1) {
		static uint8_t bytes[320 << 10];
		uint64_t x = 88172645463325252ull;
		for (size_t i = 0; i < sizeof(bytes); i++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			bytes[i] = (uint8_t)x;
		}
		if (builder_raw_member(raw, "noise.bin", bytes, sizeof(bytes)) < 0)
			goto out;
	}
	if (strings && builder_raw_member(raw, "strings-000000.pb", strings, strings_len) < 0)
		goto out;
	for (uint32_t c = 0; c < chunks; c++) {
		uint8_t idx[16];
		size_t k = 0;
		char name[32];

		if (c) { /* index (field 1), before the events; 0 is not written */
			idx[k++] = 0x08;
			k += pb_put_varint(idx + k, c);
		}
		memcpy(chunk + 16 - k, idx, k);
		snprintf(name, sizeof(name), "events-%06u.pb", c);
		if (builder_raw_member(raw, name, chunk + 16 - k, k + body) < 0)
			goto out;
	}
	if (builder_raw_member(raw, "footer.pb", f, flen) < 0)
		goto out;
	ret = 0;
out:
	if (builder_raw_close(raw) < 0)
		ret = -1;
	free(h);
	free(f);
	free(chunk);
	return ret;
}

static int empty_strings(const char *out, uint64_t n)
{
	size_t hlen, len = 2 + 2 * (size_t)n;
	uint8_t *h = header(&hlen), *t = malloc(len);
	struct builder_raw *raw = NULL;
	int ret = -1;

	if (h && t) {
		t[0] = 0x08; /* first_id 1 */
		t[1] = 0x01;
		for (size_t i = 2; i < len; i += 2)
			t[i] = 0x12, t[i + 1] = 0x00; /* strings: "" */
		raw = builder_raw_open(out, 19);
		ret = raw && builder_raw_member(raw, "header.pb", h, hlen) == 0 &&
		      builder_raw_member(raw, "strings-000000.pb", t, len) == 0 ? 0 : -1;
		if (builder_raw_close(raw) < 0)
			ret = -1;
	}
	free(h);
	free(t);
	return ret;
}

/* CHUNKS chunks of 4 MiB of identical kernels: { dur 1000, kernel { name 1, grid 1x1x1, block 128, stream 7 } }. */
static int kernels(const char *out, uint32_t chunks, bool noise)
{
	static const uint8_t ev[] = { 0x1a, 0x12, 0x10, 0xe8, 0x07, 0x1a, 0x0d, 0x08, 0x01, 0x10, 0x01,
				      0x18, 0x01, 0x20, 0x01, 0x28, 0x80, 0x01, 0x58, 0x07 };
	static const uint8_t strings[] = { 0x08, 0x01, 0x12, 0x10, 'i', 'd', 'e', 'n', 't', 'i', 'c', 'a',
					   'l', '_', 'k', 'e', 'r', 'n', 'e', 'l' };

	return repeated_events(out, ev, sizeof(ev), CHUNK_BYTES / sizeof(ev), chunks, strings, sizeof(strings),
			       1, "kernel", noise);
}

/* A bundle of the small model on an H100 (`device` its name, NULL the usual) opened at out. */
static int small_h100(struct builder *b, const char *out, const char *device, const char *command_line,
		      const char *hostname)
{
	builder_init(b);
	builder_small_model(b, "bf16");
	builder_h100(b, device ? device : "NVIDIA H100 80GB HBM3");
	if (command_line)
		b->header.command_line = (char *)command_line;
	if (hostname)
		b->header.hostname = (char *)hostname;
	return builder_open(b, out);
}

/* `depth` nested ranges named "r0001xxx..." (name_bytes each), `launches` launches in the innermost. */
static int nested(const char *out, size_t name_bytes, uint64_t launches, uint32_t depth)
{
	struct builder b;
	char *name = malloc(name_bytes + 1);
	uint64_t end = 1000000 + 10 * launches + 2 * depth;

	if (!name || name_bytes < 6)
		return -1;
	if (small_h100(&b, out, NULL, NULL, NULL) < 0)
		return -1;
	for (uint64_t i = 0; i < launches; i++) {
		uint64_t t = 100000 + 10 * i;
		builder_launch(&b, "nested_kernel", 7, 0, t, t + 2, t + 4, t + 9);
	}
	/* written when they close: innermost first */
	for (uint32_t d = depth; d-- > 0;) {
		memset(name, 'x', name_bytes);
		name[snprintf(name, name_bytes + 1, "r%04u", d)] = 'x';
		name[name_bytes] = '\0';
		builder_range(&b, name, d, d, end - d);
	}
	builder_step(&b, 0, false, 0, end);
	free(name);
	return builder_close(&b, "ok");
}

/* A bundle of the usual header at `out`; -1 after a line. */
static int open_bundle(struct builder *b, const char *out)
{
	return small_h100(b, out, NULL, NULL, NULL);
}

/* Rank `rank` of a run of `world` ranks: one launch in one step. */
static int world(const char *out, uint32_t world, uint32_t rank)
{
	struct builder b;

	usual_header(&b);
	builder_rank(&b, rank, world, 42, "bucket");
	if (builder_open(&b, out) < 0)
		return -1;
	builder_launch(&b, "one_kernel", 7, 0, 100, 110, 200, 300);
	builder_step(&b, 0, false, 0, 1000);
	return builder_close(&b, "ok");
}

/*
 * `names` kernel names of `bytes` each ("k01xxx..."), then `launches`
 * launches cycling through them: the names interned once, the events
 * written with their ids (interning a long name per event would make
 * this generator as slow as what it tests).
 */
static int long_names(const char *out, uint32_t names, size_t bytes, uint64_t launches)
{
	struct builder b;
	uint32_t *id = calloc(names + 1, sizeof(*id));
	char *name = malloc(bytes + 1);
	int ret = -1;

	if (!id || !name || bytes < 4 || !names || open_bundle(&b, out) < 0)
		goto out;
	for (uint32_t i = 0; i < names; i++) {
		memset(name, 'x', bytes);
		name[snprintf(name, bytes + 1, "k%02u", i % 100)] = 'x';
		name[bytes] = '\0';
		name[bytes - 1] = (char)('a' + i % 26);   /* distinct beyond 100 names */
		id[i] = builder_string(&b, name);
	}
	for (uint64_t i = 0; i < launches; i++) {
		uint64_t t = 1000 + 100 * i;
		struct st_event ev = { .kind = ST_KERNEL, .start = t + 20, .end = t + 80 };

		ev.kernel.name = id[i % names];
		ev.kernel.correlation = builder_call(&b, "cudaLaunchKernel", t, t + 10);
		ev.kernel.stream = 7;
		builder_add(&b, &ev);
	}
	builder_step(&b, 0, false, 0, 1000 + 100 * launches);
	ret = builder_close(&b, "ok");
out:
	free(id);
	free(name);
	return ret;
}

/* n spans [10 i, 10 (i + n)]: each overlaps the next without nesting in it. */
static int overlap(const char *out, const char *what, uint64_t n)
{
	struct builder b;

	if (open_bundle(&b, out) < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t start = 10 * i, end = 10 * (i + n);

		if (!strcmp(what, "steps"))
			builder_step(&b, (uint32_t)i, false, start, end);
		else if (!strcmp(what, "ranges"))
			builder_range(&b, "overlapping", 0, start, end);
		else
			builder_kernel(&b, "overlapping_kernel", 0, 7, 0, start, end);
	}
	return builder_close(&b, "ok");
}

/* n rounds of launch, alloc, free and range, a step every 1000: each kind replay and the reports keep. */
static int mixed(const char *out, uint64_t n)
{
	struct builder b;

	if (small_h100(&b, out, NULL, NULL, NULL) < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t = 1000 + 100 * i;

		builder_launch(&b, "mixed_kernel", 7, 0, t, t + 5, t + 10, t + 60);
		builder_alloc(&b, t + 1, 0x10000, 4096, ST_MEM_ACTIVATION, 0);
		builder_free(&b, t + 70, 0x10000, 4096, ST_MEM_ACTIVATION, 0);
		builder_range(&b, "mixed", 0, t, t + 80);
		if (i % 1000 == 999)
			builder_step(&b, (uint32_t)(i / 1000), false, t - 99900, t + 90);
	}
	return builder_close(&b, "ok");
}

/*
 * n stream captures (cudaStreamBeginCapture, cudaStreamEndCapture) under a
 * range, then one cudaGraphLaunch of n kernels, kernel i of op i, whose path
 * "graph/op.i" replay turns into ranges: n components of their own.
 */
static int graph(const char *out, uint64_t n)
{
	struct builder b;
	uint64_t corr, t = 10 * n;
	char path[48];

	if (open_bundle(&b, out) < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		builder_call(&b, "cudaStreamBeginCapture", 10 * i, 10 * i + 1);
		builder_call(&b, "cudaStreamEndCapture", 10 * i + 5, 10 * i + 6);
	}
	builder_range(&b, "capture", 0, 0, t);
	for (uint64_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "graph/op.%" PRIu64, i);
		builder_op(&b, &(struct builder_op){ .id = (uint32_t)i + 1, .path = path, .kind = "op" });
	}
	corr = builder_call(&b, "cudaGraphLaunch", t + 10, t + 20);
	for (uint64_t i = 0; i < n; i++)
		builder_kernel(&b, "graph_kernel", corr, 7, (uint32_t)i + 1, t + 100 + 10 * i, t + 105 + 10 * i);
	builder_step(&b, 0, false, t, t + 100 + 10 * n);
	return builder_close(&b, "ok");
}

/* n launches, each from a thread of its own onto a stream of its own, in one step */
static int spread(const char *out, uint64_t n)
{
	struct builder b;

	if (open_bundle(&b, out) < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		b.thread = 1000 + i;
		builder_launch(&b, "spread_kernel", (uint32_t)(100 + i), 0, 10 * i, 10 * i + 5, 10 * i + 6,
			       10 * i + 9);
	}
	b.thread = 1;
	builder_step(&b, 0, false, 0, 10 * n + 10);
	return builder_close(&b, "ok");
}

/*
 * n steps of 1 ms in a row, each allocating 4 KiB + 512 (i % 7) at 0.25 ms
 * and freeing it; `labelled`: each in a range "config i" of its own, as an
 * attention sweep's steps are.
 */
static int steps(const char *out, uint64_t n, bool labelled)
{
	struct builder b;
	char name[32];

	if (open_bundle(&b, out) < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t t = 1000000 * i;

		builder_alloc(&b, t + 250000, 0x10000, 4096 + 512 * (i % 7), ST_MEM_ACTIVATION, 0);
		builder_free(&b, t + 750000, 0x10000, 0, 0, 0);
		if (labelled) {
			snprintf(name, sizeof(name), "config %" PRIu64, i);
			builder_range(&b, name, 0, t, t + 999999);
		}
		builder_step(&b, (uint32_t)i, false, t, t + 999999);
	}
	return builder_close(&b, "ok");
}

/*
 * Names each output must show with U+FFFD where they are not UTF-8 (as
 * Python's decode(errors="replace") does), the valid ones as they are.
 */
static const char *const bad_utf8[] = {
	"latin1_caf\xe9",           /* a Latin-1 byte */
	"bytes_\xff\xfe_end",        /* never in UTF-8 */
	"cut_\xe2\x80",              /* a sequence cut short */
	"overlong_\xc0\xaf",         /* an overlong "/" */
	"surrogate_\xed\xa0\x80",     /* a UTF-16 surrogate */
	"valid_\xc3\xa9t\xc3\xa9_\xe2\x9c\x93", /* "valid_été_✓" */
};
#define N_BAD_UTF8 (sizeof(bad_utf8) / sizeof(bad_utf8[0]))

/* A kernel, a range (nested under "forward") and an op of each name; the header's strings too. */
static int utf8(const char *out)
{
	struct builder b;
	char device[1200] = "NVIDIA ";

	/* a name longer than the writers' 512-byte buffers, cut by them between characters */
	for (size_t i = strlen(device); i + 3 < sizeof(device); i += 2)
		memcpy(device + i, "\xc3\xa9", 3);
	if (small_h100(&b, out, device, "python3 caf\xe9.py --tag \xff", "host\xc3") < 0)
		return -1;
	builder_step(&b, 0, false, 100, 100000);
	builder_push(&b, "forward", 200);
	for (size_t i = 0; i < N_BAD_UTF8; i++) {
		uint64_t t = 1000 + 10000 * i;
		char path[128];
		uint32_t op;

		snprintf(path, sizeof(path), "step/forward/%s", bad_utf8[i]);
		op = builder_op(&b, &(struct builder_op){ .path = path, .kind = "matmul", .phase = "forward",
							   .flops = 1000000, .bytes = 1000 });
		builder_push(&b, bad_utf8[i], t);
		builder_launch(&b, bad_utf8[i], 7, op, t + 10, t + 20, t + 100, t + 900);
		builder_alloc(&b, t + 30, 0x1000 * (i + 1), 4096, ST_MEM_ACTIVATION, op);
		builder_free(&b, t + 950, 0x1000 * (i + 1), 4096, ST_MEM_ACTIVATION, op);
		builder_pop(&b, t + 1000);
	}
	builder_pop(&b, 90000);
	return builder_close(&b, "ok");
}

/*
 * A data-parallel step's bundle whose header claims `params` parameters in
 * buckets of `bucket_mb` MB (issue 39's N1 and N7): 3 steps of forward,
 * backward and optimizer ranges with a kernel each, so that --what-if
 * ranks=N has a backward to bucket.
 */
static int ddp(const char *out, uint64_t params, double bucket_mb)
{
	static const char *const phase[] = { "forward", "backward", "optimizer" };
	struct builder b;

	usual_header(&b);
	b.config.parameters = params;
	b.config.bucket_mb = bucket_mb;
	b.config.ddp = "bucket";
	if (builder_open(&b, out) < 0)
		return -1;
	for (uint32_t s = 0; s < 3; s++) {
		uint64_t t0 = 1000000 * (uint64_t)s;

		builder_push(&b, "step", t0);
		for (int p = 0; p < 3; p++) {
			uint64_t t = t0 + 1000 + 300000 * (uint64_t)p;

			builder_push(&b, phase[p], t);
			builder_launch(&b, p == 2 ? "adam_kernel" : "gemm_kernel", 7, 0, t + 10, t + 20, t + 100, t + 250000);
			builder_pop(&b, t + 250000);
		}
		builder_pop(&b, t0 + 999000);
		builder_step(&b, s, s == 0, t0, t0 + 999000);
	}
	return builder_close(&b, "ok");
}

/*
 * `depth` nested ranges of one-letter names ("a", "b", ...: 4,095 of them
 * make a path of 8,189 bytes, not cut at REPLAY_PATH_MAX), `launches` launches
 * of `kernel` (N2, N3, N8): in the innermost range, or with `spread` one
 * in each range in turn (a path of its own for each: a cache per path does
 * not help). Range d spans [10 d, end - 10 d].
 */
static int deep(const char *out, uint32_t depth, uint64_t launches, const char *kernel, bool spread)
{
	struct builder b;
	char name[16];
	uint64_t end = 10 * (uint64_t)depth + 100 * launches + 1000000;

	if (open_bundle(&b, out) < 0)
		return -1;
	for (uint64_t i = 0; i < launches; i++) {
		/* spread: a call at the start of range d, before range d + 1 starts: d's own */
		uint64_t t = spread ? 10 * (i % depth) : 10 * (uint64_t)depth + 100 * i;
		uint64_t k = 10 * (uint64_t)depth + 100 * i;

		builder_launch(&b, kernel, 7, 0, t, t, k + 10, k + 60);
	}
	for (uint32_t d = depth; d-- > 0;) {
		name[0] = (char)('a' + d % 26);
		name[1] = '\0';
		builder_range(&b, name, d, 10 * (uint64_t)d, end - 10 * (uint64_t)d);
	}
	builder_step(&b, 0, false, 0, end);
	return builder_close(&b, "ok");
}

/*
 * The ranks of a data-parallel run, DIR/r.rank<k>.stb for k < n: each rank
 * `kernels` kernels and `colls` all-reduces (NCCL's ring kernel under an
 * ncclAllReduce range of 4 MiB on communicator 1), in 10 steps, rank k 1 us
 * later than rank k - 1 at each collective, which ends on every rank 15 us
 * after the last rank's kernel started. `mode`:
 *   same      as above (the benchmark's ranks, scripts/bench_ranks.sh)
 *   comms     each collective on a communicator of its own (N5)
 *   uneven    the last rank one all-reduce short
 *   apart     rank 1's time base 2^62 ns after rank 0's (146 years)
 *   day       rank 1's time base a day and a second after rank 0's
 *   bytes     the NCCL ranges claim 2^64 - 1 bytes (N6)
 *   world     the header's world size 1000 times the ranks given
 */
static int ranks(const char *dir, uint32_t n, uint64_t kernels, uint64_t colls, const char *mode)
{
	uint64_t steps = 10, kps = (kernels + steps - 1) / steps, cps = (colls + steps - 1) / steps;
	bool comms = !strcmp(mode, "comms");

	for (uint32_t r = 0; r < n; r++) {
		struct builder b;
		char path[4096];
		uint64_t k_left = kernels, c_left = colls - (!strcmp(mode, "uneven") && r == n - 1 && colls);

		snprintf(path, sizeof(path), "%s/r.rank%u.stb", dir, r);
		usual_header(&b);
		builder_rank(&b, r, !strcmp(mode, "world") ? 1000 * n : n, 42, "bucket");
		b.header.hostname = "node1";
		if (r == 1 && !strcmp(mode, "apart"))
			b.header.time_base_ns = 1ull << 62;
		if (r == 1 && !strcmp(mode, "day"))
			b.header.time_base_ns = 86401000000000ull;
		if (builder_open(&b, path) < 0)
			return -1;
		/* a collective every gap ns: rank k arrives k us after rank 0, all end 15 us after the last arrives */
		uint64_t gap = 1000 * (uint64_t)n + 20000;

		for (uint64_t s = 0; s < steps; s++) {
			uint64_t t0 = 1000000 + s * (kps * 2000 + cps * gap + 100000), t = t0 + 1000;

			for (uint64_t k = 0; k < kps && k_left; k++, k_left--, t += 2000)
				builder_launch(&b, k % 3 ? "elementwise_kernel" : "gemm_kernel", 7, 0, t, t + 500, t + 600,
					       t + 1900);
			for (uint64_t c = 0; c < cps && c_left; c++, c_left--, t += gap) {
				uint64_t late = 1000 * (uint64_t)r, id = s * cps + c;

				builder_nccl_range(&b, "ncclAllReduce", 0, t + late, t + late + 900, comms ? id + 1 : 1,
						   !strcmp(mode, "bytes") ? UINT64_MAX : 4u << 20);
				builder_kernel(&b, BUILDER_NCCL_ALLREDUCE,
					       builder_call(&b, "cudaLaunchKernel", t + late + 100, t + late + 800), 9, 0,
					       t + late + 1000, t + 1000 * (uint64_t)n + 15000);
			}
			builder_step(&b, (uint32_t)s, s == 0, t0, t + 1000);
		}
		if (builder_close(&b, "ok") < 0)
			return -1;
	}
	return 0;
}

/*
 * n allocations of 4 KiB, each at 1 KiB past the last and freed 1 ms later:
 * two to five blocks live at once, overlapping at different addresses
 * (which no allocator hands out): the live total counts their shared bytes
 * more than once.
 */
static int alloc_overlap(const char *out, uint64_t n)
{
	struct builder b;

	if (open_bundle(&b, out) < 0)
		return -1;
	for (uint64_t i = 0; i < n; i++) {
		builder_alloc(&b, 1000 + 250000 * i, 0x100000 + 1024 * i, 4096, ST_MEM_ACTIVATION, 0);
		builder_free(&b, 1000 + 250000 * i + 1000000, 0x100000 + 1024 * i, 4096, ST_MEM_ACTIVATION, 0);
	}
	builder_step(&b, 0, false, 0, 250000 * n + 2000000);
	return builder_close(&b, "ok");
}

static volatile sig_atomic_t child_pid, backstop_hit;

static void on_alarm(int sig)
{
	if (child_pid > 0) {
		backstop_hit = 1;
		kill(child_pid, SIGKILL);
	}
}

static double tv_s(struct timeval tv)
{
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* Runs argv; 125 after one line when it used more than max_kib or max_cpu_s of CPU. */
static int run(long max_kib, double max_cpu_s, char **argv)
{
	struct timespec t0, t1;
	struct rusage ru;
	int status;
	pid_t pid;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	pid = fork();
	if (pid < 0) {
		perror("st-hostile: fork");
		return 125;
	}
	if (pid == 0) {
		/* the hard stop: SIGXCPU within a second past the bound, SIGKILL a second later */
		rlim_t soft = (rlim_t)max_cpu_s + 1;
		struct rlimit rl = { soft, soft + 1 };

		if (setrlimit(RLIMIT_CPU, &rl) != 0)
			perror("st-hostile: setrlimit(RLIMIT_CPU)");
		execvp(argv[0], argv);
		fprintf(stderr, "st-hostile: cannot run '%s': %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	child_pid = pid;
	signal(SIGALRM, on_alarm);
	alarm((unsigned)(max_cpu_s * 10) + 60); /* a hang uses no CPU: never hang a test */
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR) {
			perror("st-hostile: wait4");
			return 125;
		}
	alarm(0);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	double cpu = tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
	const char *name = argv[1] ? argv[1] : argv[0];
	if (getenv("ST_HOSTILE_VERBOSE")) {
		fprintf(stderr, "st-hostile: %s: %.2f s, %ld KiB\n", name, s, ru.ru_maxrss);
		fprintf(stderr, "st-hostile: %s: %.2f s of CPU\n", name, cpu);
	}
	const char *log = getenv("ST_HOSTILE_LOG"); /* one line a run: CPU s, wall s, KiB, command */
	FILE *lf = log && *log ? fopen(log, "a") : NULL;
	if (lf) {
		fprintf(lf, "%.2f %.2f %ld %s\n", cpu, s, ru.ru_maxrss, name);
		fclose(lf);
	}
	if (backstop_hit) {
		fprintf(stderr, "st-hostile: '%s %s' stopped after %.0f s of wall time, %.2f s of CPU: hung?\n",
			argv[0], argv[1] ? argv[1] : "", s, cpu);
		return 125;
	}
	if (ru.ru_maxrss > max_kib || cpu > max_cpu_s) {
		fprintf(stderr, "st-hostile: '%s %s' took %.2f s of CPU (%.2f s of wall time) and %ld KiB "
			"(limits %.2f s of CPU, %ld KiB)\n",
			argv[0], argv[1] ? argv[1] : "", cpu, s, ru.ru_maxrss, max_cpu_s, max_kib);
		return 125;
	}
	if (WIFSIGNALED(status)) {
		fprintf(stderr, "st-hostile: '%s' killed by signal %d\n", argv[0], WTERMSIG(status));
		return 125;
	}
	return WEXITSTATUS(status);
}

static uint64_t arg_u64(int argc, char **argv, int i, uint64_t def)
{
	return i < argc ? strtoull(argv[i], NULL, 0) : def;
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "";

	if (!strcmp(what, "run") && argc > 4)
		return run(atol(argv[2]), atof(argv[3]), argv + 4);
	if (argc < 3)
		goto usage;
	if (!strcmp(what, "empty-events")) {
		static const uint8_t ev[] = { 0x1a, 0x00 };
		return repeated_events(argv[2], ev, 2, arg_u64(argc, argv, 3, (1u << 24) - 1),
				       (uint32_t)arg_u64(argc, argv, 4, 1), NULL, 0, 0, NULL, true) < 0;
	}
	if (!strcmp(what, "kindless")) {
		static const uint8_t ev[] = { 0x1a, 0x02, 0x08, 0x02 }; /* t: 1 */
		return repeated_events(argv[2], ev, 4, arg_u64(argc, argv, 3, 1000), 1, NULL, 0, 0, NULL, true) < 0;
	}
	if (!strcmp(what, "empty-strings"))
		return empty_strings(argv[2], arg_u64(argc, argv, 3, (1u << 26) - 1)) < 0;
	if ((!strcmp(what, "kernels") || !strcmp(what, "flood")) && argc > 3)
		return kernels(argv[2], (uint32_t)arg_u64(argc, argv, 3, 1), !strcmp(what, "kernels")) < 0;
	if (!strcmp(what, "utf8"))
		return utf8(argv[2]) < 0;
	if (!strcmp(what, "mixed"))
		return mixed(argv[2], arg_u64(argc, argv, 3, 100000)) < 0;
	if (!strcmp(what, "nested") && argc > 3)
		return nested(argv[2], arg_u64(argc, argv, 3, 64), arg_u64(argc, argv, 4, 1),
			      (uint32_t)arg_u64(argc, argv, 5, 4096)) < 0;
	if (!strcmp(what, "world"))
		return world(argv[2], (uint32_t)arg_u64(argc, argv, 3, UINT32_MAX),
			     (uint32_t)arg_u64(argc, argv, 4, 0)) < 0;
	if (!strcmp(what, "long-names") && argc > 5)
		return long_names(argv[2], (uint32_t)arg_u64(argc, argv, 3, 12), arg_u64(argc, argv, 4, 20 << 20),
				  arg_u64(argc, argv, 5, 1000)) < 0;
	if (!strcmp(what, "overlap") && argc > 4)
		return overlap(argv[2], argv[3], arg_u64(argc, argv, 4, 250000)) < 0;
	if (!strcmp(what, "graph") && argc > 3)
		return graph(argv[2], arg_u64(argc, argv, 3, 100000)) < 0;
	if (!strcmp(what, "spread") && argc > 3)
		return spread(argv[2], arg_u64(argc, argv, 3, 100000)) < 0;
	if (!strcmp(what, "steps") && argc > 3)
		return steps(argv[2], arg_u64(argc, argv, 3, 150000), argc > 4 && !strcmp(argv[4], "labelled")) < 0;
	if (!strcmp(what, "ddp") && argc > 4)
		return ddp(argv[2], arg_u64(argc, argv, 3, 0), strtod(argv[4], NULL)) < 0;
	if (!strcmp(what, "deep") && argc > 5)
		return deep(argv[2], (uint32_t)arg_u64(argc, argv, 3, 4095), arg_u64(argc, argv, 4, 1000), argv[5],
			    argc > 6 && !strcmp(argv[6], "spread")) < 0;
	if (!strcmp(what, "ranks") && argc > 5)
		return ranks(argv[2], (uint32_t)arg_u64(argc, argv, 3, 8), arg_u64(argc, argv, 4, 3000),
			     arg_u64(argc, argv, 5, 1000), argc > 6 ? argv[6] : "same") < 0;
	if (!strcmp(what, "alloc-overlap"))
		return alloc_overlap(argv[2], arg_u64(argc, argv, 3, 1000)) < 0;
usage:
	fprintf(stderr, "usage: st-hostile empty-events|kindless|empty-strings|kernels|flood|mixed|nested|utf8|world|\n"
			"                  long-names|overlap|graph|spread|steps|ddp|deep|alloc-overlap OUT [ARGS]\n"
			"       st-hostile ranks DIR N KERNELS COLLECTIVES [MODE]\n"
			"       st-hostile run MAX_KIB MAX_CPU_SECONDS CMD [ARGS]\n");
	return 2;
}
