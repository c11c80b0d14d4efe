/*
 * test_naming.c: record/naming.c, which bundle each process of `steptrace
 * record -o run.stb -- COMMAND` writes: rank variables in their order,
 * values that are not ranks ignored, and the names built from -o (and,
 * for `record --armed`, from each trigger's number).
 */
#include "lib/armed.h"
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
	/* an armed recording's triggers (record --armed): run.T.rankR.stb, run.T.stb alone */
	CHECK(naming_trigger_bundle(buf, sizeof(buf), "run.stb", 1, "rank0") == 0);
	CHECK_STR(buf, "run.1.rank0.stb");
	CHECK(naming_trigger_bundle(buf, sizeof(buf), "/out/run.stb", 12, NULL) == 0);
	CHECK_STR(buf, "/out/run.12.stb");
	CHECK(naming_trigger_bundle(buf, sizeof(buf), "trace", 2, "rank1.4242") == 0);
	CHECK_STR(buf, "trace.2.rank1.4242.stb");
	CHECK(naming_trigger_bundle(buf, 12, "run.stb", 3, "rank10") == -1);
	/* record --every's window from step 200: run.s200.rankR.stb */
	CHECK(naming_trigger_bundle(buf, sizeof(buf), "run.stb", ARMED_PERIODIC | 200, "rank1") == 0);
	CHECK_STR(buf, "run.s200.rank1.stb");
	CHECK(naming_trigger_bundle(buf, sizeof(buf), "run.stb", ARMED_PERIODIC | 7, NULL) == 0);
	CHECK_STR(buf, "run.s7.stb");
}

static bool identity_of(const char *const *env, struct naming_identity *id)
{
	vars = env;
	memset(id, 0, sizeof(*id));
	return naming_identity(lookup, id);
}

/* torchrun, Open MPI and Slurm: rank, size, local rank; one run id for the ranks of one job */
static void test_identity(void)
{
	struct naming_identity a, b, c;

	CHECK(!identity_of((const char *const[]){ NULL }, &a));
	CHECK(!identity_of((const char *const[]){ "RANK", "0", NULL }, &a));                 /* no size */
	CHECK(!identity_of((const char *const[]){ "RANK", "0", "WORLD_SIZE", "1", NULL }, &a)); /* one process */
	CHECK(!identity_of((const char *const[]){ "RANK", "2", "WORLD_SIZE", "2", NULL }, &a)); /* past the size */
	/* two ranks of a torchrun job on two hosts: the same run; another port, another run */
	CHECK(identity_of((const char *const[]){ "RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "1",
		"TORCHELASTIC_RUN_ID", "none", "MASTER_ADDR", "node0", "MASTER_PORT", "29500", NULL }, &a));
	CHECK(a.rank == 3 && a.world_size == 4 && a.local_rank == 1 && a.run_id != 0);
	CHECK_STR(a.launcher, "torchrun");
	CHECK(identity_of((const char *const[]){ "RANK", "0", "WORLD_SIZE", "4", "LOCAL_RANK", "0",
		"TORCHELASTIC_RUN_ID", "none", "MASTER_ADDR", "node0", "MASTER_PORT", "29500", NULL }, &b));
	CHECK(b.rank == 0 && b.run_id == a.run_id);
	CHECK(identity_of((const char *const[]){ "RANK", "0", "WORLD_SIZE", "4", "LOCAL_RANK", "0",
		"TORCHELASTIC_RUN_ID", "none", "MASTER_ADDR", "node0", "MASTER_PORT", "29501", NULL }, &c));
	CHECK(c.run_id != a.run_id);
	/* srun starting torchrun: torchrun's rank is the job's */
	CHECK(identity_of((const char *const[]){ "SLURM_PROCID", "1", "SLURM_NTASKS", "2", "SLURM_JOB_ID", "77",
		"RANK", "5", "WORLD_SIZE", "8", NULL }, &a));
	CHECK(a.rank == 5 && a.world_size == 8);
	CHECK_STR(a.launcher, "torchrun");
	/* Open MPI: the namespace names the run */
	CHECK(identity_of((const char *const[]){ "OMPI_COMM_WORLD_RANK", "1", "OMPI_COMM_WORLD_SIZE", "2",
		"OMPI_COMM_WORLD_LOCAL_RANK", "1", "PMIX_NAMESPACE", "prterun-host-4242@1", NULL }, &a));
	CHECK(identity_of((const char *const[]){ "OMPI_COMM_WORLD_RANK", "0", "OMPI_COMM_WORLD_SIZE", "2",
		"OMPI_COMM_WORLD_LOCAL_RANK", "0", "PMIX_NAMESPACE", "prterun-host-4242@1", NULL }, &b));
	CHECK(a.rank == 1 && a.local_rank == 1 && b.rank == 0 && a.run_id == b.run_id);
	CHECK_STR(a.launcher, "mpi");
	/* Slurm: job and step */
	CHECK(identity_of((const char *const[]){ "SLURM_PROCID", "7", "SLURM_NTASKS", "16", "SLURM_LOCALID", "3",
		"SLURM_JOB_ID", "1234", "SLURM_STEP_ID", "0", NULL }, &a));
	CHECK(identity_of((const char *const[]){ "SLURM_PROCID", "7", "SLURM_NTASKS", "16", "SLURM_LOCALID", "3",
		"SLURM_JOB_ID", "1234", "SLURM_STEP_ID", "1", NULL }, &b));
	CHECK(a.rank == 7 && a.world_size == 16 && a.local_rank == 3 && a.run_id != b.run_id);
	CHECK_STR(a.launcher, "slurm");
	/* not numbers: not a rank */
	CHECK(!identity_of((const char *const[]){ "RANK", "x", "WORLD_SIZE", "2", NULL }, &a));
}

int main(void)
{
	test_rank();
	test_bundle();
	test_identity();
	return check_done("test_naming");
}
