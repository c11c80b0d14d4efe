/*
 * standalone.c: runs a harness once on each file given, or each file of a
 * directory given, as libFuzzer would, without libFuzzer: the regression
 * test of every build (tests/fuzz/CMakeLists.txt). With -mutate=N first,
 * a harness that has its own mutator (LLVMFuzzerCustomMutator) also runs N
 * of its mutations of each input (each from the input, as libFuzzer
 * mutates its corpus): the mutator's test where libFuzzer is not at hand.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max, unsigned int seed)
	__attribute__((weak));
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max);

static long mutations;

/* libFuzzer's own mutation, which a custom mutator calls, stood in for: a byte changed. */
size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max)
{
	static uint32_t x = 1;

	x = x * 1103515245u + 12345u;
	if (size)
		data[(x >> 8) % size] ^= (uint8_t)(1 + (x >> 16) % 255);
	return size;
}

/* The input, then its mutations (-mutate=N). */
static void run_input(const uint8_t *data, size_t size)
{
	size_t max = size * 2 + (1 << 20);
	uint8_t *buf;

	LLVMFuzzerTestOneInput(data, size);
	if (!mutations || !LLVMFuzzerCustomMutator || !(buf = malloc(max)))
		return;
	for (long i = 0; i < mutations; i++) {
		memcpy(buf, data, size);
		LLVMFuzzerTestOneInput(buf, LLVMFuzzerCustomMutator(buf, size, max, (unsigned)i + 1));
	}
	free(buf);
}

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *data = NULL;
	long size;

	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) ||
	    !(data = malloc((size_t)size + 1)) || fread(data, 1, (size_t)size, f) != (size_t)size) {
		fprintf(stderr, "standalone: cannot read '%s'\n", path);
		if (f)
			fclose(f);
		free(data);
		return -1;
	}
	fclose(f);
	run_input(data, (size_t)size);
	free(data);
	return 0;
}

int main(int argc, char **argv)
{
	int ran = 0, failed = 0;

	if (argc > 1 && !strncmp(argv[1], "-mutate=", 8)) {
		mutations = atol(argv[1] + 8);
		argv++;
		argc--;
	}
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(argv[i]);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				char path[4096];
				if (e->d_name[0] == '.')
					continue;
				snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
				failed |= run_file(path) < 0;
				ran++;
			}
			if (d)
				closedir(d);
		} else {
			failed |= run_file(argv[i]) < 0;
			ran++;
		}
	}
	fprintf(stderr, "%s: ran %d inputs\n", argv[0], ran);
	return failed;
}
