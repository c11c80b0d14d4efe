/*
 * standalone.c: runs a harness once on each file given, or each file of a
 * directory given, as libFuzzer would, without libFuzzer: the regression
 * test of every build (tests/fuzz/CMakeLists.txt).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "tests/fuzz/fuzz.h"

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
	LLVMFuzzerTestOneInput(data, (size_t)size);
	free(data);
	return 0;
}

int main(int argc, char **argv)
{
	int ran = 0, failed = 0;

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
	printf("%s: ran %d inputs\n", argv[0], ran);
	return failed;
}
