/*
 * memlimit.h: how much memory an analysis may take. Reading a bundle checks
 * what it will need against a limit before it allocates (trace/bundle.h),
 * so that a bundle too large for the machine ends with one line rather than
 * with the kernel's OOM killer. Every analysis command takes
 * --memory-limit SIZE; without it the limit is memory_limit_default(),
 * lowered for a small bundle by memory_limit_for_bundle().
 */
#ifndef STEPTRACE_LIB_MEMLIMIT_H
#define STEPTRACE_LIB_MEMLIMIT_H

#include <stdint.h>

/* The default's ceiling, whatever the machine: what a laptop user would give an analysis. */
#define MEMORY_LIMIT_MAX (UINT64_C(4) << 30)

/*
 * A bundle's data, as replay keeps them, need 40-80 times its size on disk
 * (the samples); a few kilobytes of zstd can claim 60,000 times theirs. By
 * default a bundle may take MEMORY_PER_BUNDLE_BYTE times its size, and
 * never less than MEMORY_LIMIT_SMALL.
 */
#define MEMORY_PER_BUNDLE_BYTE 1000
#define MEMORY_LIMIT_SMALL (UINT64_C(128) << 20)

/* The default in words, for --help: keep it beside the numbers it says. */
#define MEMORY_LIMIT_DEFAULT_TEXT \
	"4GiB or half the RAM, whichever is less; a bundle 1000 times its size on disk, at least 128MiB"

/*
 * The default limit, the same on every run of a machine: MEMORY_LIMIT_MAX
 * or half the physical memory (sysconf), whichever is less; lower where
 * the process is held to less (half the room left under the memory limit
 * of its cgroup and its parents, memory.max of cgroup v2 or
 * memory.limit_in_bytes of v1, and under RLIMIT_AS and RLIMIT_DATA).
 */
uint64_t memory_limit_default(void);

/*
 * What a bundle of `bytes` bytes on disk may take by default: `limit`, but
 * at most MEMORY_PER_BUNDLE_BYTE times `bytes`, and at least
 * MEMORY_LIMIT_SMALL (never more than `limit`).
 */
uint64_t memory_limit_for_bundle(uint64_t limit, uint64_t bytes);

/*
 * What an analysis may still take once its bundles are read: the limit
 * (--memory-limit, or the default) less what reading them counted. The
 * command runner sets it; a structure an analysis builds in proportion to
 * the ranks, the collectives or the events (explain's graph of every rank,
 * comm's instances per collective and rank, a trace's layout of every
 * rank) claims its bytes before it allocates them, and past the budget the
 * command ends with one line naming the limit to raise:
 *
 *   error: explain's dependency graph of 1024 ranks needs at least 5.1 GiB of memory, over the
 *   3.2 GiB the limit of 4 GiB leaves once the bundles are read: raise it with --memory-limit
 *
 * `why` says where the limit came from when it is a default lowered for
 * small bundles (NULL: the limit as given, or the machine's default).
 *
 * Unset (tests, a library caller), the budget holds anything.
 */
void memory_budget_set(uint64_t limit, uint64_t left, const char *why);
/* Claims `bytes` for `what` ("explain's dependency graph of 8 ranks"); 0, or -1 after one line. */
int memory_budget_claim(uint64_t bytes, const char *what);
/* Whether `bytes` more fit in the budget now: nothing claimed, nothing said (an optional structure). */
int memory_budget_fits(uint64_t bytes);
/* Gives back what a claim took, once its structure is freed. */
void memory_budget_release(uint64_t bytes);

#endif
