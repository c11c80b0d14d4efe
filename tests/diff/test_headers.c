/*
 * test_headers.c: diff_headers names what differs between two runs'
 * configurations, and which of it is structure: the data-parallel
 * settings (--bucket-mb, --sm-carveout, --nccl-ctas, format 1.7) are
 * named, between runs that both have them, but are not structure; the
 * context length is.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/diff.h"
#include "tests/lib/builder.h"
#include "tests/lib/check.h"

static char dir[] = "/tmp/st-diff-headers-XXXXXX";

/* A bundle of rank 0 of a data-parallel run with these settings, written and read back. */
static void build(struct replay *rp, const char *ddp, uint32_t ctx, double bucket_mb, uint32_t carveout,
		  uint32_t ctas)
{
	struct builder b;
	char path[96];

	builder_init(&b);
	builder_small_model(&b, "bf16");
	b.config.ctx = ctx;
	b.config.bucket_mb = bucket_mb;
	b.config.sm_carveout = carveout;
	b.config.nccl_ctas = ctas;
	builder_rank(&b, 0, 2, 7, ddp);
	snprintf(path, sizeof(path), "%s/%s-%u-%g-%u-%u.stb", dir, ddp, ctx, bucket_mb, carveout, ctas);
	CHECK(builder_open(&b, path) == 0);
	builder_launch(&b, "k", 7, 0, 0, 1000, 2000, 3000);
	CHECK(builder_close(&b, "ok") == 0);
	CHECK(replay_load(rp, path, NULL) == 0);
	unlink(path);
}

int main(void)
{
	struct replay a, b, c, d, e;
	char what[512];

	if (!mkdtemp(dir))
		return 1;
	build(&a, "bucket", 512, 25, 28, 12);
	build(&b, "bucket", 512, 25, 28, 12);
	build(&c, "bucket", 512, 100, 0, 0);
	build(&d, "bucket", 1024, 25, 28, 12);
	build(&e, "naive", 512, 0, 0, 0);   /* as record writes naive: none of the three */
	CHECK(!diff_headers(&a, &b, what, sizeof(what)));
	CHECK(!strcmp(what, ""), "%s", what);
	CHECK(!diff_headers(&a, &c, what, sizeof(what)), "not structure: %s", what);
	CHECK(!strcmp(what, "bucket_mb (25 -> 100), sm_carveout (28 -> 0), nccl_ctas (12 -> 0)"), "%s", what);
	CHECK(diff_headers(&a, &d, what, sizeof(what)));
	CHECK(!strcmp(what, "ctx (512 -> 1024)"), "%s", what);
	/* the bucket size and the carve-out are named between runs that have them only */
	CHECK(!diff_headers(&a, &e, what, sizeof(what)));
	CHECK(!strcmp(what, "ddp (bucket -> naive)"), "%s", what);
	replay_release(&a);
	replay_release(&b);
	replay_release(&c);
	replay_release(&d);
	replay_release(&e);
	rmdir(dir);
	return check_done("diff.headers");
}
