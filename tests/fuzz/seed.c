/*
 * seed.c: fuzz_seed OUT FILE...: seeds of fuzz_commands that run fast, from
 * large ones. Each input (a bundle, or a set of them: edit.h) of more than
 * SEED_EVENTS events in a bundle is written to OUT as windows of that many
 * events, from its start, a third and two thirds of the way in (the ops
 * before each kept: edit_window); a smaller one as it is. seeds.sh runs it.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/fuzz/edit.h"

#define SEED_EVENTS 2048

static uint8_t *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	long n;

	if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (data = malloc((size_t)n + 1)) && fread(data, 1, (size_t)n, f) == (size_t)n) {
		*size = (size_t)n;
	} else {
		free(data);
		data = NULL;
	}
	if (f)
		fclose(f);
	return data;
}

static int write_file(const char *path, const uint8_t *data, size_t size)
{
	FILE *f = fopen(path, "wb");

	if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0) {
		fprintf(stderr, "fuzz_seed: cannot write '%s'\n", path);
		return -1;
	}
	return 0;
}

/* The windows of one input into out; 0, or -1 after a line on stderr. */
static int windows(const char *out, const char *path)
{
	size_t size, max, n = 0;
	uint8_t *data = read_file(path, &size), *packed = NULL;
	char name[4096], *copy = strdup(path);
	struct edit_set s;
	int rc = -1;

	if (!data || !copy || edit_parse(&s, data, size) < 0) {
		fprintf(stderr, "fuzz_seed: '%s' is not a bundle or a set of them\n", path);
		goto out;
	}
	for (size_t i = 0; i < s.n; i++)
		if (edit_event_count(&s.b[i]) > n)
			n = edit_event_count(&s.b[i]);
	edit_free(&s);
	max = size + (1 << 20);
	if (!(packed = malloc(max)))
		goto out;
	rc = 0;
	for (int w = 0; w < (n > SEED_EVENTS ? 3 : 1) && rc == 0; w++) {
		size_t len = size;
		snprintf(name, sizeof(name), "%s/%s.%d", out, basename(copy), w);
		if (n > SEED_EVENTS) {
			if (edit_parse(&s, data, size) < 0)
				break;
			for (size_t i = 0; i < s.n; i++)
				edit_window(&s.b[i], edit_event_count(&s.b[i]) * (size_t)w / 3, SEED_EVENTS);
			len = edit_pack(&s, packed, max);
			edit_free(&s);
		} else {
			memcpy(packed, data, size);
		}
		rc = len ? write_file(name, packed, len) : -1;
	}
out:
	free(data);
	free(copy);
	free(packed);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: fuzz_seed OUT FILE...\n");
		return 129;
	}
	for (int i = 2; i < argc; i++)
		rc |= windows(argv[1], argv[i]) < 0;
	return rc;
}
