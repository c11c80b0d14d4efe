/* naming.c: see naming.h. */
#include "record/naming.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/armed.h"
#include "lib/hash.h"

const char *const naming_rank_vars[] = {
	"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "LOCAL_RANK", NULL,
};

static int is_number(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 9)
		return 0;
	return strspn(s, "0123456789") == n;
}

const char *naming_rank(const char *(*get)(const char *name))
{
	for (const char *const *v = naming_rank_vars; *v; v++) {
		const char *s = get(*v);

		if (is_number(s))
			return s;
	}
	return NULL;
}

int naming_bundle(char *out, size_t len, const char *output, const char *id)
{
	size_t n = strlen(output);
	int w;

	if (n > 4 && !strcmp(output + n - 4, ".stb"))
		w = snprintf(out, len, "%.*s.%s.stb", (int)(n - 4), output, id);
	else
		w = snprintf(out, len, "%s.%s.stb", output, id);
	return w < 0 || (size_t)w >= len ? -1 : 0;
}

void naming_trigger_number(char *out, size_t len, uint64_t trigger)
{
	if (trigger & ARMED_PERIODIC)
		snprintf(out, len, "s%llu", (unsigned long long)(trigger & ~ARMED_PERIODIC));
	else
		snprintf(out, len, "%llu", (unsigned long long)trigger);
}

int naming_trigger_bundle(char *out, size_t len, const char *output, uint64_t trigger, const char *id)
{
	char both[128], num[24];
	int w;

	naming_trigger_number(num, sizeof(num), trigger);
	w = snprintf(both, sizeof(both), "%s%s%s", num, id ? "." : "", id ? id : "");

	if (w < 0 || (size_t)w >= sizeof(both))
		return -1;
	return naming_bundle(out, len, output, both);
}

/* A variable's value as a number of at most 9 digits; false when it is not one. */
static bool number(const char *(*get)(const char *name), const char *var, uint32_t *v)
{
	const char *s = var ? get(var) : NULL;

	if (!is_number(s))
		return false;
	*v = (uint32_t)strtoul(s, NULL, 10);
	return true;
}

/* FNV-1a over the launcher and the variables that name the run, each "NAME=value;". */
static uint64_t run_hash(const char *(*get)(const char *name), const char *launcher, const char *const *vars)
{
	uint64_t h = hash_fnv1a(HASH_FNV1A_INIT, launcher, strlen(launcher));

	for (const char *const *v = vars; *v; v++) {
		const char *val = get(*v);

		if (!val)
			val = "";

		h = hash_fnv1a(h, *v, strlen(*v));
		h = hash_fnv1a(h, "=", 1);
		h = hash_fnv1a(h, val, strlen(val));
		h = hash_fnv1a(h, ";", 1);
	}
	return h ? h : 1;
}

bool naming_identity(const char *(*get)(const char *name), struct naming_identity *id)
{
	static const struct {
		const char *launcher, *rank, *size, *local;
		const char *const run[5];     /* what names the run, NULL-terminated */
	} kinds[] = {
		{ "torchrun", "RANK", "WORLD_SIZE", "LOCAL_RANK",
		  { "TORCHELASTIC_RUN_ID", "MASTER_ADDR", "MASTER_PORT", "TORCHELASTIC_RESTART_COUNT", NULL } },
		{ "mpi", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
		  { "PMIX_NAMESPACE", "OMPI_MCA_orte_ess_jobid", NULL } },
		{ "slurm", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", { "SLURM_JOB_ID", "SLURM_STEP_ID", NULL } },
	};

	for (size_t k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		uint32_t rank, size, local = 0;

		if (!number(get, kinds[k].rank, &rank) || !number(get, kinds[k].size, &size) || size < 2 ||
		    rank >= size)
			continue;
		if (!number(get, kinds[k].local, &local))
			local = 0;
		id->rank = rank;
		id->world_size = size;
		id->local_rank = local;
		id->launcher = kinds[k].launcher;
		id->run_id = run_hash(get, kinds[k].launcher, kinds[k].run);
		return true;
	}
	return false;
}
