/*
 * nsys.c: a stand-in until the Nsight Systems importer is merged: it says
 * that this build does not have it.
 */
#include "import/nsys.h"

#include "lib/error.h"

int import_nsys(const char *sqlite_path, const char *out_path)
{
	(void)sqlite_path;
	(void)out_path;
	return error("steptrace import: Nsight Systems import is not built");
}
