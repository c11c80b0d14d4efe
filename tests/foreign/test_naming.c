/*
 * test_naming.c: record/naming.c, which bundle each process of `steptrace
 * record -o run.stb -- COMMAND` writes: rank variables in their order,
 * values that are not ranks ignored, and the names built from -o.
 */
#include "record/naming.h"
#include "tests/lib/check.h"

/* The environment of one case: NULL-terminated name, value pairs. */
static const char *const *vars;

static const char *lookup(const char *name)
{
	for (const char *const *v = vars; v && v[0]; v += 2)
		if (!strcmp(v[0], name))
			return v[1];
	return NULL;
}

static const char *rank_of(const char *const *env)
{
	vars = env;
	return naming_rank(lookup);
}

static void test_rank(void)
{
	CHECK(rank_of((const char *const[]){ NULL }) == NULL);
	CHECK_STR(rank_of((const char *const[]){ "LOCAL_RANK", "1", NULL }), "1");
	/* torchrun sets both: the global rank wins */
	CHECK_STR(rank_of((const char *const[]){ "LOCAL_RANK", "1", "RANK", "9", NULL }), "9");
	CHECK_STR(rank_of((const char *const[]){ "OMPI_COMM_WORLD_RANK", "3", "SLURM_PROCID", "4", NULL }), "3");
	CHECK_STR(rank_of((const char *const[]){ "SLURM_PROCID", "12", "LOCAL_RANK", "0", NULL }), "12");
	/* not numbers: skipped, the next variable counts */
	CHECK_STR(rank_of((const char *const[]){ "RANK", "", "LOCAL_RANK", "2", NULL }), "2");
	CHECK_STR(rank_of((const char *const[]){ "RANK", "-1", "LOCAL_RANK", "0", NULL }), "0");
	CHECK(rank_of((const char *const[]){ "RANK", "1/2", NULL }) == NULL);
	CHECK(rank_of((const char *const[]){ "RANK", "../x", NULL }) == NULL);
	CHECK(rank_of((const char *const[]){ "RANK", "1234567890", NULL }) == NULL);
	CHECK_STR(rank_of((const char *const[]){ "RANK", "123456789", NULL }), "123456789");
}

static void test_bundle(void)
{
	char buf[64];

	CHECK(naming_bundle(buf, sizeof(buf), "run.stb", "3") == 0);
	CHECK_STR(buf, "run.3.stb");
	CHECK(naming_bundle(buf, sizeof(buf), "/tmp/out/pytorch-small.stb", "4242") == 0);
	CHECK_STR(buf, "/tmp/out/pytorch-small.4242.stb");
	CHECK(naming_bundle(buf, sizeof(buf), "trace", "0.77") == 0);
	CHECK_STR(buf, "trace.0.77.stb");
	CHECK(naming_bundle(buf, sizeof(buf), ".stb", "1") == 0);
	CHECK_STR(buf, ".stb.1.stb");
	CHECK(naming_bundle(buf, 10, "run.stb", "12345") == -1);
	CHECK(naming_bundle(buf, 13, "run.stb", "1234") == 0);
}

int main(void)
{
	test_rank();
	test_bundle();
	return check_done("test_naming");
}
