/*
 * fuzz_bundle.c: a whole bundle. The input is the file, written to a
 * scratch file and analysed (fuzz_analyse); an input that does not start
 * as a zstd frame is taken as the archive inside one and compressed first,
 * so that mutations reach the tar and the members as well as zstd. Seeds:
 * the bundles of samples/, compressed and not (seeds.sh).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_setup();
	void *packed = NULL;
	FILE *f;

	if (size < 4 || memcmp(data, "\x28\xb5\x2f\xfd", 4)) {
		size_t cap = ZSTD_compressBound(size), n;
		if (!(packed = malloc(cap)))
			return 0;
		n = ZSTD_compress(packed, cap, data, size, 1);
		if (ZSTD_isError(n)) {
			free(packed);
			return 0;
		}
		data = packed;
		size = n;
	}
	f = fopen(path, "wb");
	if (f && fwrite(data, 1, size, f) == size && fclose(f) == 0)
		fuzz_analyse(path);
	else if (f)
		fclose(f);
	free(packed);
	return 0;
}
