/*
 * test_bundle_file.c: the bundle writer through lib/output.h, as the
 * recorder uses it: while recording, the bundle is a temporary file beside
 * its path and the path keeps what it held; closing (footer) or aborting
 * (no footer, as when the recorder's exit path saves what it has) renames
 * it onto the path; a recording whose writes fail (/dev/full) leaves no
 * file and the device in place.
 *
 * usage: test_bundle_file DIR (an empty scratch folder)
 */
#include <sys/stat.h>

#include "../lib/check.h"
#include "lib/error.h"
#include "tests/lib/builder.h"

static char path[1024];

static void some_events(struct builder *b)
{
	builder_op(b, &(struct builder_op){ .id = 1, .path = "step/forward/w1", .kind = "w1",
		   .phase = "forward" });
	builder_launch(b, "gemm_kernel", 7, 1, 10, 15, 100, 180);
	builder_step(b, 0, false, 0, 1000);
}

/* Events in the bundle at `p`, -1 when it does not open; *complete gets its footer's word. */
static long read_back(const char *p, bool *complete)
{
	FILE *quiet = fopen("/dev/null", "w");
	struct bundle_reader *r;
	struct st_event ev;
	long n = 0;
	int rc = -1;

	error_set_stream(quiet);   /* an aborted bundle is reported as truncated */
	r = bundle_reader_open(p);
	if (r) {
		while ((rc = bundle_reader_next(r, &ev)) == 1)
			n++;
		*complete = bundle_reader_footer(r) && bundle_reader_footer(r)->complete;
		bundle_reader_free(r);
	}
	error_set_stream(NULL);
	fclose(quiet);
	return rc < 0 ? -1 : n;
}

static bool file_holds(const char *p, const char *text)
{
	char buf[64] = "";
	FILE *f = fopen(p, "r");
	size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;

	if (f)
		fclose(f);
	buf[n] = '\0';
	return !strcmp(buf, text);
}

static void test_close_and_abort(const char *dir)
{
	struct builder b;
	const char *tmp;
	struct stat st;
	bool complete = false;

	for (int abort = 0; abort < 2; abort++) {
		FILE *f;

		snprintf(path, sizeof(path), "%s/run%d.stb", dir, abort);
		f = fopen(path, "w");
		fputs("an older recording\n", f);
		fclose(f);
		builder_init(&b);
		CHECK(builder_open(&b, path) == 0);
		some_events(&b);
		tmp = bundle_writer_file(b.writer);
		CHECK(strncmp(tmp, path, strlen(path)) == 0 && strstr(tmp, ".stb.tmp-"), "%s", tmp);
		CHECK(stat(tmp, &st) == 0 && S_ISREG(st.st_mode), "the temporary file exists while recording");
		CHECK(file_holds(path, "an older recording\n"), "the path is untouched while recording");
		if (abort)
			builder_abort(&b);
		else
			CHECK(builder_close(&b, "ok") == 0);
		CHECK(stat(tmp, &st) != 0, "the temporary file is gone once closed");
		CHECK(read_back(path, &complete) == 4, "%s reads back its op, call, kernel and step", path);
		CHECK(complete == !abort, "closed: a footer; aborted: none");
	}
}

static void test_failed_write(void)
{
	struct builder b;
	struct stat st;
	FILE *msgs;
	int rc;

	if (stat("/dev/full", &st) != 0)
		return;
	builder_init(&b);
	msgs = tmpfile();
	error_set_stream(msgs);
	rc = builder_open(&b, "/dev/full");
	if (rc == 0) {
		some_events(&b);
		rc = builder_close(&b, "ok");
	}
	error_set_stream(NULL);
	fclose(msgs);
	CHECK(rc < 0, "a bundle written to /dev/full fails");
	CHECK(stat("/dev/full", &st) == 0 && S_ISCHR(st.st_mode), "/dev/full is still a device");
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: test_bundle_file DIR\n");
		return 2;
	}
	test_close_and_abort(argv[1]);
	test_failed_write();
	return check_done("test_bundle_file");
}
