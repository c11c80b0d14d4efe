/*
 * safetensors I/O: a round trip over every dtype, then hostile files, each
 * of which must be rejected with one error line and no crash (ASan/UBSan in
 * CI), then every truncation and random byte flips of a valid file.
 */
#include <stdlib.h>
#include <string.h>

#include "tests/lib/check.h"
#include "lib/error.h"
#include "tests/lib/reference.h"
#include "model/tensors.h"
#include "trace/types.h"

static char dir[512];

static const char *tmp_path(const char *name)
{
	static char path[640];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return path;
}

/* Writes the 8-byte length (header_len, or strlen(json) if 0), json, then data. */
static void write_raw(const char *path, unsigned long long header_len, const char *json,
		      const void *data, size_t data_len)
{
	FILE *f = fopen(path, "wb");
	unsigned char len[8];
	int i;

	if (!header_len)
		header_len = strlen(json);
	for (i = 0; i < 8; i++)
		len[i] = (unsigned char)(header_len >> (8 * i));
	fwrite(len, 1, 8, f);
	fwrite(json, 1, strlen(json), f);
	if (data_len)
		fwrite(data, 1, data_len, f);
	fclose(f);
}

static void spill(const char *path, const char *buf, size_t len)
{
	FILE *f = fopen(path, "wb");

	fwrite(buf, 1, len, f);
	fclose(f);
}

/* Reading must fail, leave the set empty, and print exactly one error line. */
static void expect_reject(const char *label, const char *path)
{
	struct tensor_set s;
	char msg[2048] = "";
	FILE *cap = tmpfile();
	int lines = 0;
	size_t i, n;

	error_set_stream(cap);
	CHECK(safetensors_read(path, &s) == -1, "%s accepted", label);
	error_set_stream(NULL);
	CHECK(s.n == 0 && s.t == NULL, "%s left tensors behind", label);
	rewind(cap);
	n = fread(msg, 1, sizeof(msg) - 1, cap);
	msg[n] = 0;
	fclose(cap);
	for (i = 0; i < n; i++)
		lines += msg[i] == '\n';
	CHECK(lines == 1 && !strncmp(msg, "error: ", 7), "%s: message '%s'", label, msg);
	CHECK(strstr(msg, path) != NULL, "%s: message does not name the file: '%s'", label, msg);
	tensor_set_release(&s);
}

static void round_trip(void)
{
	static const int dtypes[] = { ST_DT_F32, ST_DT_F64, ST_DT_BF16, ST_DT_F16,
				      ST_DT_I32, ST_DT_I64, ST_DT_U8 };
	const char *meta[] = { "format", "pt", "source", "steptrace", NULL };
	struct tensor_set a, b;
	unsigned char bytes[512];
	size_t i;

	for (i = 0; i < sizeof(bytes); i++)
		bytes[i] = (unsigned char)(i * 37 + 11);
	tensor_set_init(&a);
	for (i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++) {
		int64_t shape[3] = { 2, 3, (int64_t)i + 1 };
		char name[64];

		snprintf(name, sizeof(name), "layers.%zu.weight", i);
		CHECK(tensor_set_add(&a, name, dtypes[i], 3, shape, bytes) != NULL, "add %s", name);
	}
	{
		float one = 1.5f;
		int64_t zero[1] = { 0 };

		CHECK(tensor_set_add(&a, "loss", ST_DT_F32, 0, NULL, &one) != NULL, "0-d");
		CHECK(tensor_set_add(&a, "empty", ST_DT_F32, 1, zero, NULL) != NULL, "empty");
		CHECK(tensor_set_add(&a, "loss", ST_DT_F32, 0, NULL, &one) == NULL, "duplicate");
	}
	CHECK(safetensors_write(tmp_path("rt.safetensors"), &a, meta) == 0, "write");
	CHECK(safetensors_read(tmp_path("rt.safetensors"), &b) == 0, "read");
	CHECK(a.n == b.n, "%zu tensors, read %zu", a.n, b.n);
	for (i = 0; i < a.n && i < b.n; i++) {
		const struct named_tensor *x = &a.t[i], *y = tensor_set_find(&b, x->name);

		CHECK(y != NULL, "%s missing", x->name);
		if (!y)
			continue;
		CHECK(!strcmp(b.t[i].name, x->name), "order: %s at %zu", b.t[i].name, i);
		CHECK(y->dtype == x->dtype && y->ndim == x->ndim && y->bytes == x->bytes &&
		      !memcmp(y->shape, x->shape, sizeof(x->shape[0]) * (size_t)x->ndim),
		      "%s header", x->name);
		CHECK(!memcmp(y->data, x->data, x->bytes), "%s data", x->name);
	}
	CHECK(named_tensor_numel(tensor_set_find(&b, "loss")) == 1, "0-d numel");
	tensor_set_release(&a);
	tensor_set_release(&b);
	CHECK(b.n == 0 && b.t == NULL, "release empties");
}

static void malformed(void)
{
	float data[4] = { 1, 2, 3, 4 };
	const char *ok = "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
	char p[640], big[64];
	struct tensor_set s;

	snprintf(p, sizeof(p), "%s", tmp_path("bad.safetensors"));
	/* A valid file first, so the cases below differ from it in one thing. */
	write_raw(p, 0, ok, data, sizeof(data));
	CHECK(safetensors_read(p, &s) == 0 && s.n == 1, "valid file");
	tensor_set_release(&s);

	expect_reject("missing file", tmp_path("does-not-exist.safetensors"));
	spill(p, "abc", 3);
	expect_reject("shorter than 8 bytes", p);
	write_raw(p, 1ull << 40, ok, data, sizeof(data));
	expect_reject("header length beyond the file", p);
	write_raw(p, ~0ull, ok, data, sizeof(data));
	expect_reject("header length 2^64-1", p);
	write_raw(p, strlen(ok) + sizeof(data) + 1, ok, data, sizeof(data));
	expect_reject("header length one past the end", p);
	spill(p, "\0\0\0\0\0\0\0\0", 8);
	expect_reject("header length 0", p);
	write_raw(p, 0, "this is not json", data, sizeof(data));
	expect_reject("not json", p);
	write_raw(p, 0, "[1, 2, 3]", data, sizeof(data));
	expect_reject("json array", p);
	write_raw(p, 0, "{\"x\": 5}", data, sizeof(data));
	expect_reject("entry not an object", p);
	write_raw(p, 0, "{\"x\":{\"shape\":[4],\"data_offsets\":[0,16]}}", data, sizeof(data));
	expect_reject("no dtype", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"data_offsets\":[0,16]}}", data, sizeof(data));
	expect_reject("no shape", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"shape\":[4]}}", data, sizeof(data));
	expect_reject("no offsets", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"BOOL\",\"shape\":[16],\"data_offsets\":[0,16]}}",
		  data, sizeof(data));
	expect_reject("unsupported dtype", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,32]}}",
		  data, sizeof(data));
	expect_reject("offsets out of range", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[16,0]}}",
		  data, sizeof(data));
	expect_reject("offsets reversed", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[-4,12]}}",
		  data, sizeof(data));
	expect_reject("negative offset", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0]}}",
		  data, sizeof(data));
	expect_reject("one offset", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F64\",\"shape\":[4],\"data_offsets\":[0,16]}}",
		  data, sizeof(data));
	expect_reject("wrong dtype size", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,16]}}",
		  data, sizeof(data));
	expect_reject("span larger than shape", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"shape\":[-4],\"data_offsets\":[0,16]}}",
		  data, sizeof(data));
	expect_reject("negative dimension", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,4],\"data_offsets\":[0,16]}}",
		  data, sizeof(data));
	expect_reject("five dimensions", p);
	snprintf(big, sizeof(big), "[%llu,%llu]", 1ull << 62, 1ull << 62);
	{
		char json[256];

		snprintf(json, sizeof(json),
			 "{\"x\":{\"dtype\":\"F32\",\"shape\":%s,\"data_offsets\":[0,16]}}", big);
		write_raw(p, 0, json, data, sizeof(data));
		expect_reject("numel overflows", p);
	}
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"shape\":[\"4\"],\"data_offsets\":[0,16]}}",
		  data, sizeof(data));
	expect_reject("string dimension", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		  "\"y\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[4,16]}}", data, sizeof(data));
	expect_reject("overlapping tensors", p);
	write_raw(p, 0, "{\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
		  "\"x\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", data, sizeof(data));
	expect_reject("duplicate names", p);
	write_raw(p, 0, "{\"__metadata__\":{\"a\":1},"
		  "\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", data, sizeof(data));
	expect_reject("metadata value not a string", p);
	write_raw(p, 0, ok, data, 10);
	expect_reject("truncated data", p);

	/* Metadata, padding spaces and a 0-d tensor are fine. */
	write_raw(p, 0, "{\"__metadata__\":{\"format\":\"pt\"},"
		  "\"loss\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}    ", data, 4);
	CHECK(safetensors_read(p, &s) == 0 && s.n == 1 && s.t[0].ndim == 0, "metadata + 0-d");
	tensor_set_release(&s);
}

/* Every truncation of a valid file fails cleanly; random flips never crash. */
static void mutations(void)
{
	char src[640], p[640];
	struct tensor_set a, s;
	struct ref_rng rng;
	FILE *sink = fopen("/dev/null", "w");
	int64_t shape[2] = { 3, 5 };
	double vals[15];
	size_t len, cut, i;
	char *buf;
	int k;

	snprintf(src, sizeof(src), "%s", tmp_path("rt2.safetensors"));
	snprintf(p, sizeof(p), "%s", tmp_path("mut.safetensors"));
	for (i = 0; i < 15; i++)
		vals[i] = (double)i - 7.5;
	tensor_set_init(&a);
	tensor_set_add(&a, "a", ST_DT_F64, 2, shape, vals);
	tensor_set_add(&a, "b", ST_DT_F32, 1, shape, vals);
	safetensors_write(src, &a, NULL);
	tensor_set_release(&a);
	buf = check_slurp(src, &len);
	CHECK(buf && len > 8, "file written");
	if (!buf)
		return;

	error_set_stream(sink);
	for (cut = 0; cut < len; cut++) {
		spill(p, buf, cut);
		CHECK(safetensors_read(p, &s) == -1, "truncated at %zu of %zu accepted", cut, len);
		tensor_set_release(&s);
	}
	ref_rng_init(&rng, 42);
	for (k = 0; k < 3000; k++) {
		char *m = malloc(len);
		int flips = 1 + (int)(ref_rng_u64(&rng) % 4);

		memcpy(m, buf, len);
		while (flips--)
			m[ref_rng_u64(&rng) % len] = (char)ref_rng_u64(&rng);
		spill(p, m, len);
		if (safetensors_read(p, &s) == 0)
			for (i = 0; i < s.n; i++)
				CHECK(s.t[i].bytes == (size_t)named_tensor_numel(&s.t[i]) *
				      tensor_dtype_size(s.t[i].dtype), "consistent sizes");
		tensor_set_release(&s);
		free(m);
	}
	error_set_stream(NULL);
	fclose(sink);
	free(buf);
}

int main(void)
{
	const char *env = getenv("ST_TEST_TMPDIR");

	snprintf(dir, sizeof(dir), "%s", env && *env ? env : "/tmp");
	round_trip();
	malformed();
	mutations();
	return check_done("model_safetensors");
}
