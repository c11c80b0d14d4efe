/* fuzz_common.c: see fuzz.h. */
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "analyze/memory.h"
#include "analyze/summary.h"
#include "lib/error.h"
#include "lib/table.h"
#include "replay/replay.h"

static char scratch[64];

static void remove_scratch(void)
{
	unlink(scratch);
}

const char *fuzz_setup(void)
{
	if (!scratch[0]) {
		FILE *null = fopen("/dev/null", "w");
		if (null)
			error_set_stream(null);
		snprintf(scratch, sizeof(scratch), "%s/st-fuzz-%d.stb",
			 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
		atexit(remove_scratch);
	}
	return scratch;
}

void fuzz_analyse(const char *path)
{
	struct replay_options o = { .quiet = true, .memory_limit = 128u << 20 };
	struct summary_opts so = { .by = BY_KERNEL, .range = "forward/*" };
	struct memory_opts mo = { .top = 3, .step = -1 };
	struct replay rp;
	struct report *r;

	if (replay_load(&rp, path, &o) < 0)
		return;
	for (int by = BY_KERNEL; by <= BY_CATEGORY; by++) {
		so.by = by;
		so.range = by == BY_OP ? "forward/*" : NULL;
		if ((r = report_new())) {
			summary_run(&rp, &so, r);
			report_free(r);
		}
	}
	if ((r = report_new())) {
		memory_run(&rp, &mo, r);
		report_free(r);
	}
	replay_release(&rp);
}
