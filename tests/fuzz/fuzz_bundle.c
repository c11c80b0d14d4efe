/*
 * fuzz_bundle.c: a whole bundle. The input is the file: it is written to a
 * scratch file and analysed (fuzz_analyse). Seeds: the bundles of samples/.
 */
#include <stdio.h>

#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *path = fuzz_setup();
	FILE *f = fopen(path, "wb");

	if (!f)
		return 0;
	if (fwrite(data, 1, size, f) != size) {
		fclose(f);
		return 0;
	}
	fclose(f);
	fuzz_analyse(path);
	return 0;
}
