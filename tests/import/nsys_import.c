/*
 * nsys_import.c: `st-import-nsys EXPORT.sqlite OUT.stb`, import_nsys()
 * alone, for the tests of this folder (the command is `steptrace import`).
 * Exit 0, or 1 after the one error line.
 */
#include <stdio.h>

#include "import/nsys.h"
#include "lib/error.h"

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: st-import-nsys EXPORT.sqlite OUT.stb\n");
		return EXIT_USAGE;
	}
	return import_nsys(argv[1], argv[2]) ? 1 : 0;
}
