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
static void build_with(struct replay *rp, const char *ddp, uint32_t ctx, double bucket_mb, uint32_t carveout,
		       uint32_t ctas, const char *allreduce)
{
	struct builder b;
	char path[96];

	builder_init(&b);
	builder_small_model(&b, "bf16");
	b.config.ctx = ctx;
	b.config.bucket_mb = bucket_mb;
	b.config.sm_carveout = carveout;
	b.config.nccl_ctas = ctas;
	b.config.allreduce = (char *)allreduce;
	builder_rank(&b, 0, 2, 7, ddp);
	snprintf(path, sizeof(path), "%s/%s-%u-%g-%u-%u-%s.stb", dir, ddp, ctx, bucket_mb, carveout, ctas,
		 *allreduce ? allreduce : "unset");
	CHECK(builder_open(&b, path) == 0);
	builder_launch(&b, "k", 7, 0, 0, 1000, 2000, 3000);
	CHECK(builder_close(&b, "ok") == 0);
	CHECK(replay_load(rp, path, NULL) == 0);
	unlink(path);
}

static void build(struct replay *rp, const char *ddp, uint32_t ctx, double bucket_mb, uint32_t carveout,
		  uint32_t ctas)
{
	build_with(rp, ddp, ctx, bucket_mb, carveout, ctas, "");   /* as before 1.12 */
}

int main(void)
{
	struct replay a, b, c, d, e, f, g;
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
	/* (1.12) the all-reduce's engine: named, not structure; an older bundle's is NCCL's */
	build_with(&f, "bucket", 512, 25, 0, 0, "exchange");
	build_with(&g, "bucket", 512, 25, 28, 12, "nccl");
	CHECK(!diff_headers(&a, &f, what, sizeof(what)));
	CHECK(!strcmp(what, "sm_carveout (28 -> 0), nccl_ctas (12 -> 0), allreduce (nccl -> exchange)"), "%s", what);
	CHECK(!diff_headers(&a, &g, what, sizeof(what)));
	CHECK(!strcmp(what, ""), "%s", what);
	CHECK(!strcmp(f.run.config.allreduce, "exchange") && !strcmp(a.run.config.allreduce, ""), "read back: '%s' '%s'",
	      f.run.config.allreduce, a.run.config.allreduce);
	replay_release(&a);
	replay_release(&b);
	replay_release(&c);
	replay_release(&d);
	replay_release(&e);
	replay_release(&f);
	replay_release(&g);
	rmdir(dir);
	return check_done("diff.headers");
}
