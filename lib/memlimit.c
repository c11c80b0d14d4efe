/* memlimit.c: see memlimit.h. */
#include "lib/memlimit.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/error.h"
#include "lib/human.h"

static void lower(uint64_t *min, uint64_t v)
{
	if (v && (!*min || v < *min))
		*min = v;
}

/* The first number in `path`; 0 when unreadable or "max". */
static uint64_t read_number(const char *path)
{
	unsigned long long v = 0;
	FILE *f = fopen(path, "r");

	if (f) {
		if (fscanf(f, "%llu", &v) != 1)
			v = 0;
		fclose(f);
	}
	return v;
}

static uint64_t physical_memory(void)
{
	long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);

	return pages > 0 && page > 0 ? (uint64_t)pages * (uint64_t)page : 0;
}

/* Room under the limit in `dir`/`max_file` less `dir`/`cur_file`, 0 for none. */
static uint64_t room_in(const char *dir, const char *max_file, const char *cur_file)
{
	char path[4400];
	uint64_t max, cur;

	snprintf(path, sizeof(path), "%s/%s", dir, max_file);
	max = read_number(path);
	if (!max || max >= (UINT64_C(1) << 62)) /* "max", or v1's "no limit" */
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, cur_file);
	cur = read_number(path);
	return max > cur ? max - cur : 1;
}

/*
 * The least room left under the memory limits of this process's cgroup and
 * its parents: memory.max (v2) or memory.limit_in_bytes (v1).
 */
static uint64_t cgroup_room(void)
{
	char line[4096], dir[4200];
	uint64_t room = 0;
	FILE *f = fopen("/proc/self/cgroup", "r");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		char *path = strstr(line, "::");
		int v2 = path == line + 1 && line[0] == '0';

		if (!v2) {
			path = strstr(line, ":memory:");
			if (!path)
				continue;
			path += 8;
		} else {
			path += 2;
		}
		path[strcspn(path, "\n")] = '\0';
		for (;;) {
			snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s%s", v2 ? "" : "/memory",
				 strcmp(path, "/") ? path : "");
			lower(&room, v2 ? room_in(dir, "memory.max", "memory.current")
					: room_in(dir, "memory.limit_in_bytes", "memory.usage_in_bytes"));
			char *slash = strrchr(path, '/');
			if (!slash || slash == path)
				break;
			*slash = '\0';
		}
		/* the root of the mount: a container's own cgroup */
		snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", v2 ? "" : "/memory");
		lower(&room, v2 ? room_in(dir, "memory.max", "memory.current")
				: room_in(dir, "memory.limit_in_bytes", "memory.usage_in_bytes"));
	}
	fclose(f);
	return room;
}

static uint64_t rlimit(int resource)
{
	struct rlimit rl;

	if (getrlimit(resource, &rl) || rl.rlim_cur == RLIM_INFINITY)
		return 0;
	return (uint64_t)rl.rlim_cur;
}

uint64_t memory_limit_default(void)
{
	uint64_t min = 0;

	lower(&min, physical_memory());
	lower(&min, cgroup_room());
	lower(&min, rlimit(RLIMIT_AS));
	lower(&min, rlimit(RLIMIT_DATA));
	min /= 2;
	return min && min < MEMORY_LIMIT_MAX ? min : MEMORY_LIMIT_MAX;
}

uint64_t memory_limit_for_bundle(uint64_t limit, uint64_t bytes)
{
	uint64_t scaled = bytes < UINT64_MAX / MEMORY_PER_BUNDLE_BYTE ? bytes * MEMORY_PER_BUNDLE_BYTE : UINT64_MAX;

	if (scaled < MEMORY_LIMIT_SMALL)
		scaled = MEMORY_LIMIT_SMALL;
	return limit && limit < scaled ? limit : scaled;
}

/* The analysis budget (memory_budget_set); limit 0: unset, anything fits. */
static uint64_t budget_limit, budget_left;
static char budget_why[160];

void memory_budget_set(uint64_t limit, uint64_t left, const char *why)
{
	budget_limit = limit;
	budget_left = left < limit ? left : limit;
	snprintf(budget_why, sizeof(budget_why), "%s", why ? why : "");
}

int memory_budget_claim(uint64_t bytes, const char *what)
{
	char need[32], lim[32], left[32];

	if (!budget_limit)
		return 0;
	if (bytes > budget_left)
		return error("%s needs at least %s of memory, over the %s the limit of %s%s%s%s leaves once the "
			     "bundles are read: raise it with --memory-limit", what,
			     human_bytes(need, sizeof(need), (double)bytes),
			     human_bytes(left, sizeof(left), (double)budget_left),
			     human_bytes(lim, sizeof(lim), (double)budget_limit), *budget_why ? " (" : "", budget_why,
			     *budget_why ? ")" : "");
	budget_left -= bytes;
	return 0;
}

int memory_budget_fits(uint64_t bytes)
{
	return !budget_limit || bytes <= budget_left;
}

void memory_budget_release(uint64_t bytes)
{
	if (!budget_limit)
		return;
	budget_left = budget_left + bytes < budget_limit ? budget_left + bytes : budget_limit;
}
