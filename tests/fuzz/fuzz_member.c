/*
 * fuzz_member.c: one member of a bundle. The first byte picks which: 0 the
 * header, 1 a string table, 2 an event chunk, 3 the footer (modulo 4); the
 * rest is that member's bytes, set among valid others (a header, a table of
 * three strings, a chunk of a range and three launch calls with their
 * kernels, and a footer that agrees and says the recorder found no steps,
 * "whole run", so that replay looks for the launch period), written as a bundle to a scratch file and analysed
 * (fuzz_analyse). Seeds: the members of the bundles of samples/ (seeds.sh).
 */
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/fuzz.h"
#include "tests/lib/builder.h"
#include "trace/codec.h"

static const char *const member_names[] = { "header.pb", "strings-000000.pb", "events-000000.pb", "footer.pb" };

static struct {
	uint8_t *data;
	size_t len;
} valid[4];

static uint8_t *packed(const ProtobufCMessage *m, size_t *len)
{
	uint8_t *p;

	*len = protobuf_c_message_get_packed_size(m);
	p = malloc(*len + 1);
	if (p)
		protobuf_c_message_pack(m, p);
	return p;
}

static void make_valid(void)
{
	static char *strings[] = { "k", "cudaLaunchKernel", "forward" };
	Steptrace__StringTable t = STEPTRACE__STRING_TABLE__INIT;
	Steptrace__Footer f = STEPTRACE__FOOTER__INIT;
	struct st_event ev[7] = {
		{ .kind = ST_RANGE, .start = 0, .end = 100, .range = { .name = 3, .thread = 1 } },
		{ .kind = ST_API, .start = 10, .end = 20, .api = { .name = 2, .thread = 1, .correlation = 1 } },
		{ .kind = ST_KERNEL, .start = 30, .end = 40, .kernel = { .name = 1, .stream = 7, .correlation = 1 } },
		{ .kind = ST_API, .start = 40, .end = 50, .api = { .name = 2, .thread = 1, .correlation = 2 } },
		{ .kind = ST_KERNEL, .start = 60, .end = 70, .kernel = { .name = 1, .stream = 7, .correlation = 2 } },
		{ .kind = ST_API, .start = 70, .end = 80, .api = { .name = 2, .thread = 1, .correlation = 3 } },
		{ .kind = ST_KERNEL, .start = 90, .end = 100, .kernel = { .name = 1, .stream = 7, .correlation = 3 } },
	};
	struct byte_buf chunk = { 0 };
	struct chunk_state st = { 0 };
	struct builder b;

	builder_init(&b);
	builder_small_model(&b, "bf16");
	builder_h100(&b, "H100");
	valid[0].data = builder_header_bytes(&b, &valid[0].len);
	t.first_id = 1;
	t.n_strings = 3;
	t.strings = strings;
	valid[1].data = packed(&t.base, &valid[1].len);
	for (int i = 0; i < 7; i++)
		event_encode(&chunk, &st, &ev[i]);
	valid[2].data = chunk.data;
	valid[2].len = chunk.len;
	f.complete = true;
	f.events = 7;
	f.chunks = 1;
	f.strings = 3;
	f.end_reason = "ok";
	f.steps_from = "whole run";   /* so replay looks for the launch period (replay/period.h) */
	valid[3].data = packed(&f.base, &valid[3].len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_setup();
	struct builder_raw *raw;
	int which, ok = 1;

	if (size < 1)
		return 0;
	if (!valid[0].data)
		make_valid();
	which = data[0] % 4;
	raw = builder_raw_open(path, 1);
	for (int i = 0; raw && ok && i < 4; i++)
		ok = (i == which ? builder_raw_member(raw, member_names[i], data + 1, size - 1)
				 : builder_raw_member(raw, member_names[i], valid[i].data, valid[i].len)) == 0;
	if (builder_raw_close(raw) == 0)
		fuzz_analyse(path);
	return 0;
}
