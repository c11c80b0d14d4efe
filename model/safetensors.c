/*
 * safetensors.c: reading and writing safetensors files (see tensors.h).
 *
 * Layout: an 8-byte little-endian header length N, N bytes of JSON
 * ({"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
 * "__metadata__": {"key": "value"}}), then the data section, to which the
 * offsets are relative. Every length and offset read from a file is checked
 * against the file's size before it is used.
 */
#include "model/tensors.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/error.h"
#include "lib/output.h"
#include "trace/types.h"


/* The safetensors library refuses headers above 100 MB; so do we. */
#define HEADER_MAX (100u << 20)

static const enum st_dtype dtypes[] = {
	ST_DT_F64, ST_DT_F32, ST_DT_BF16, ST_DT_F16, ST_DT_I64, ST_DT_I32, ST_DT_U8,
};

static enum st_dtype dtype_from_name(const char *s)
{
	size_t i;

	for (i = 0; i < sizeof(dtypes) / sizeof(dtypes[0]); i++)
		if (!strcmp(s, tensor_dtype_name(dtypes[i])))
			return dtypes[i];
	return ST_DT_UNKNOWN;
}

/* One header entry, validated, before its data is read. */
struct entry {
	const char *name;      /* points into the JSON document */
	enum st_dtype dtype;
	int ndim;
	int64_t shape[TENSOR_MAX_DIMS];
	uint64_t begin, end;
};

static int entry_by_offset(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	return x->end < y->end ? -1 : x->end > y->end;
}

/* Validates one header entry against the data section's size. */
static int entry_parse(const char *path, const char *name, json_t *v, uint64_t data_size,
		       struct entry *e)
{
	json_t *dtype = json_object_get(v, "dtype"), *shape = json_object_get(v, "shape");
	json_t *offs = json_object_get(v, "data_offsets");
	uint64_t numel = 1, esize;
	size_t i;

	if (!json_is_object(v))
		return error("cannot read '%s': tensor '%s' is not a JSON object", path, name);
	if (!json_is_string(dtype) || !json_is_array(shape) || !json_is_array(offs))
		return error("cannot read '%s': tensor '%s' lacks dtype, shape or data_offsets",
				path, name);
	e->name = name;
	e->dtype = dtype_from_name(json_string_value(dtype));
	if (e->dtype == ST_DT_UNKNOWN)
		return error("cannot read '%s': tensor '%s' has unsupported dtype '%s'",
				path, name, json_string_value(dtype));
	esize = tensor_dtype_size(e->dtype);
	if (json_array_size(shape) > TENSOR_MAX_DIMS)
		return error("cannot read '%s': tensor '%s' has %zu dimensions (at most %d)",
				path, name, json_array_size(shape), TENSOR_MAX_DIMS);
	e->ndim = (int)json_array_size(shape);
	for (i = 0; i < json_array_size(shape); i++) {
		json_t *d = json_array_get(shape, i);
		json_int_t n = json_is_integer(d) ? json_integer_value(d) : -1;

		if (n < 0)
			return error("cannot read '%s': tensor '%s' has a bad shape", path, name);
		/* numel * esize must fit in the data section, so no overflow below. */
		if (n && numel > data_size / esize / (uint64_t)n)
			return error("cannot read '%s': tensor '%s' is larger than the file",
					path, name);
		numel *= (uint64_t)n;
		e->shape[i] = n;
	}
	if (json_array_size(offs) != 2 || !json_is_integer(json_array_get(offs, 0)) ||
	    !json_is_integer(json_array_get(offs, 1)) ||
	    json_integer_value(json_array_get(offs, 0)) < 0 ||
	    json_integer_value(json_array_get(offs, 1)) < 0)
		return error("cannot read '%s': tensor '%s' has bad data_offsets", path, name);
	e->begin = (uint64_t)json_integer_value(json_array_get(offs, 0));
	e->end = (uint64_t)json_integer_value(json_array_get(offs, 1));
	if (e->begin > e->end || e->end > data_size)
		return error("cannot read '%s': tensor '%s' data_offsets [%llu, %llu] out of range "
				"(data section is %llu bytes; file truncated?)", path, name,
				(unsigned long long)e->begin, (unsigned long long)e->end,
				(unsigned long long)data_size);
	if (e->end - e->begin != numel * esize)
		return error("cannot read '%s': tensor '%s' spans %llu bytes but %s x %llu "
				"elements need %llu", path, name,
				(unsigned long long)(e->end - e->begin), json_string_value(dtype),
				(unsigned long long)numel, (unsigned long long)(numel * esize));
	return 0;
}

static int metadata_check(const char *path, json_t *v)
{
	const char *k;
	json_t *x;

	if (!json_is_object(v))
		return error("cannot read '%s': __metadata__ is not a JSON object", path);
	json_object_foreach(v, k, x)
		if (!json_is_string(x))
			return error("cannot read '%s': __metadata__ value '%s' is not a string",
					path, k);
	return 0;
}

static int read_exact(FILE *f, void *buf, size_t n)
{
	return fread(buf, 1, n, f) == n ? 0 : -1;
}

int safetensors_read(const char *path, struct tensor_set *out)
{
	unsigned char lenbuf[8];
	uint64_t header_len = 0, data_size;
	struct entry *entries = NULL;
	size_t n_entries = 0, i;
	char *header = NULL;
	json_t *root = NULL;
	json_error_t jerr;
	struct stat st;
	FILE *f;
	int ret = -1;

	tensor_set_init(out);
	f = fopen(path, "rb");
	if (!f)
		return error("cannot open '%s': %s", path, strerror(errno));
	if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode)) {
		error("cannot read '%s': not a regular file", path);
		goto close_file;
	}
	if (st.st_size < 8 || read_exact(f, lenbuf, 8)) {
		error("cannot read '%s': too short for a safetensors header", path);
		goto close_file;
	}
	for (i = 0; i < 8; i++)
		header_len |= (uint64_t)lenbuf[i] << (8 * i);
	if (header_len < 2 || header_len > (uint64_t)st.st_size - 8 || header_len > HEADER_MAX) {
		error("cannot read '%s': header length %llu does not fit a file of %lld bytes",
			 path, (unsigned long long)header_len, (long long)st.st_size);
		goto close_file;
	}
	data_size = (uint64_t)st.st_size - 8 - header_len;
	header = malloc(header_len);
	if (!header) {
		error("cannot read '%s': out of memory for a %llu-byte header", path,
			 (unsigned long long)header_len);
		goto close_file;
	}
	if (read_exact(f, header, header_len)) {
		error("cannot read '%s': truncated header", path);
		goto free_header;
	}
	root = json_loadb(header, header_len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		error("cannot read '%s': header is not valid JSON (%s at byte %d)", path,
			 jerr.text, jerr.position);
		goto free_header;
	}
	if (!json_is_object(root)) {
		error("cannot read '%s': header is not a JSON object", path);
		goto free_json;
	}

	entries = calloc(json_object_size(root) + 1, sizeof(*entries));
	if (!entries) {
		error("cannot read '%s': out of memory", path);
		goto free_json;
	}
	{
		const char *k;
		json_t *v;

		json_object_foreach(root, k, v) {
			if (!strcmp(k, "__metadata__")) {
				if (metadata_check(path, v))
					goto free_entries;
				continue;
			}
			if (entry_parse(path, k, v, data_size, &entries[n_entries]))
				goto free_entries;
			n_entries++;
		}
	}
	qsort(entries, n_entries, sizeof(*entries), entry_by_offset);
	for (i = 1; i < n_entries; i++)
		if (entries[i].begin < entries[i - 1].end) {
			error("cannot read '%s': tensors '%s' and '%s' overlap", path,
				 entries[i - 1].name, entries[i].name);
			goto free_entries;
		}

	for (i = 0; i < n_entries; i++) {
		const struct entry *e = &entries[i];
		struct named_tensor *t = tensor_set_add(out, e->name, e->dtype, e->ndim, e->shape, NULL);

		if (!t) {
			error("cannot read '%s': out of memory for tensor '%s'", path, e->name);
			goto free_tensors;
		}
		if (!t->bytes)
			continue;
		if (fseeko(f, (off_t)(8 + header_len + e->begin), SEEK_SET) ||
		    read_exact(f, t->data, t->bytes)) {
			error("cannot read '%s': truncated data of tensor '%s'", path, e->name);
			goto free_tensors;
		}
	}
	ret = 0;
	goto free_entries;

free_tensors:
	tensor_set_release(out);
free_entries:
	free(entries);
free_json:
	json_decref(root);
free_header:
	free(header);
close_file:
	fclose(f);
	return ret;
}

/* The JSON header, padded with spaces to a multiple of 8 bytes. */
static char *header_build(const struct tensor_set *s, const char *const *metadata_kv,
			  const char *path, size_t *len)
{
	json_t *root = json_object(), *meta = NULL;
	uint64_t offset = 0;
	char *text = NULL, *padded = NULL;
	size_t i, n;

	if (!root)
		goto fail;
	if (metadata_kv && metadata_kv[0]) {
		meta = json_object();
		if (!meta || json_object_set_new(root, "__metadata__", meta))
			goto fail;
		for (i = 0; metadata_kv[i] && metadata_kv[i + 1]; i += 2)
			if (json_object_set_new(meta, metadata_kv[i], json_string(metadata_kv[i + 1])))
				goto fail;
	}
	for (i = 0; i < s->n; i++) {
		const struct named_tensor *t = &s->t[i];
		const char *dt = tensor_dtype_size(t->dtype) ? tensor_dtype_name(t->dtype) : NULL;
		json_t *e, *shape;
		int d;

		if (!dt || !strcmp(t->name, "__metadata__")) {
			error("cannot write '%s': tensor '%s' has an unsupported dtype or name",
				 path, t->name);
			json_decref(root);
			return NULL;
		}
		shape = json_array();
		for (d = 0; shape && d < t->ndim; d++)
			if (json_array_append_new(shape, json_integer(t->shape[d])))
				goto fail;
		e = json_pack("{s:s, s:o, s:[I, I]}", "dtype", dt, "shape", shape, "data_offsets",
			      (json_int_t)offset, (json_int_t)(offset + t->bytes));
		if (!e || json_object_set_new(root, t->name, e))
			goto fail;
		offset += t->bytes;
	}
	text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
	if (!text)
		goto fail;
	n = strlen(text);
	*len = (n + 7) & ~(size_t)7;
	padded = malloc(*len);
	if (!padded)
		goto fail;
	memcpy(padded, text, n);
	memset(padded + n, ' ', *len - n);
	free(text);
	json_decref(root);
	return padded;
fail:
	free(text);
	json_decref(root);
	error("cannot write '%s': out of memory building the header", path);
	return NULL;
}

int safetensors_write(const char *path, const struct tensor_set *s,
		      const char *const *metadata_kv)
{
	unsigned char lenbuf[8];
	size_t len = 0, i;
	struct output out;
	char *header;
	int ok;

	header = header_build(s, metadata_kv, path, &len);
	if (!header)
		return -1;
	if (output_open(&out, path, NULL) < 0) {
		free(header);
		return -1;
	}
	for (i = 0; i < 8; i++)
		lenbuf[i] = (unsigned char)((uint64_t)len >> (8 * i));
	ok = fwrite(lenbuf, 1, 8, out.f) == 8 && fwrite(header, 1, len, out.f) == len;
	for (i = 0; ok && i < s->n; i++)
		ok = fwrite(s->t[i].data, 1, s->t[i].bytes, out.f) == s->t[i].bytes;
	free(header);
	/* a short write leaves the stream's error flag set: output_close names it */
	return output_close(&out);
}
