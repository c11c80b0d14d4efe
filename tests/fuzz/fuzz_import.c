/*
 * fuzz_import.c: a torch.profiler trace for `steptrace import` (issue 40):
 * the input is the trace's bytes (JSON, or gzip'd JSON), written to a
 * scratch file, read by the importer's two passes (import/kineto.h) into a
 * bundle, which is then analysed (fuzz_analyse) as the commands would.
 * Seeds: the traces of tests/import/ (seeds.sh).
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "import/kineto.h"
#include "tests/fuzz/fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *bundle = fuzz_setup();
	char trace[96];
	struct kineto_trace *t;
	FILE *f;

	snprintf(trace, sizeof(trace), "%s.json", bundle);
	f = fopen(trace, "wb");
	if (!f)
		return 0;
	if (size)
		fwrite(data, 1, size, f);
	fclose(f);
	t = kineto_scan(trace);
	if (t) {
		if (kineto_write(t, bundle, 1, "fuzz") == 0)
			fuzz_analyse(bundle);
		kineto_free(t);
	}
	unlink(trace);
	unlink(bundle);
	return 0;
}
