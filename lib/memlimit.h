/*
 * memlimit.h: how much memory an analysis may take. Reading a bundle checks
 * what it will need against a limit before it allocates (trace/bundle.h),
 * so that a bundle too large for the machine ends with one line rather than
 * with the kernel's OOM killer. Every analysis command takes
 * --memory-limit SIZE; without it the limit is memory_limit_default().
 */
#ifndef STEPTRACE_LIB_MEMLIMIT_H
#define STEPTRACE_LIB_MEMLIMIT_H

#include <stdint.h>

/*
 * Half of what this process can get now: the smallest of MemAvailable
 * (/proc/meminfo; the physical memory from sysconf where that is missing),
 * the room left under the memory limit of its cgroup and of the cgroup's
 * parents (memory.max of cgroup v2, memory.limit_in_bytes of v1),
 * RLIMIT_AS and RLIMIT_DATA. 0 when none of them can be read (no limit).
 */
uint64_t memory_limit_default(void);

#endif
