/*
 * cupti_check.c: cupti_check_at (gpu_check.h), apart from the CUDA runtime
 * and cuBLAS checks so that the injection library, which loads neither,
 * can have it.
 */
#include "lib/gpu_check.h"

#include <cupti.h>

#include "lib/error.h"

int cupti_check_at(CUptiResult r, const char *call, const char *file, int line)
{
	const char *msg = NULL;

	if (r == CUPTI_SUCCESS)
		return 0;
	if (cuptiGetResultString(r, &msg) != CUPTI_SUCCESS || !msg)
		msg = "unknown CUPTI error";
	return error("%s failed: %s (%s:%d)", call, msg, file, line);
}
