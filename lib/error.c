/* error.c: see error.h. */
#include "lib/error.h"

#include <stdarg.h>
#include <stdio.h>

static FILE *msg_stream;
static char msg_prefix[64];

void error_set_prefix(const char *prefix)
{
	snprintf(msg_prefix, sizeof(msg_prefix), "%s%s", prefix ? prefix : "",
		 prefix && *prefix ? ": " : "");
}

void error_set_stream(FILE *f)
{
	msg_stream = f;
}

static void vreport(const char *prefix, const char *fmt, va_list ap)
{
	FILE *out = msg_stream ? msg_stream : stderr;

	fputs(prefix, out);
	fputs(msg_prefix, out);
	vfprintf(out, fmt, ap);
	fputc('\n', out);
	fflush(out);
}

int error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}
