/*
 * nsys.h: an Nsight Systems SQLite export (`nsys export --type sqlite`)
 * made into a bundle, so that every analysis reads it as it reads a
 * recording (`steptrace import`, issue 40).
 *
 * What becomes what (docs/import.md, "Nsight Systems", has the table):
 * CUPTI_ACTIVITY_KIND_KERNEL, _MEMCPY and _MEMSET rows become kernels,
 * copies and memsets; _RUNTIME and _DRIVER rows API calls, with their
 * correlation ids and threads (globalTid's low 24 bits); _SYNCHRONIZATION
 * rows syncs; NVTX_EVENTS' push/pop and start/end ranges and marks become
 * ranges (depth from their nesting on their thread, domain by name,
 * NCCL's communicator and message size from a JSON payload where the
 * export has one); CUDA_GPU_MEMORY_USAGE_EVENTS' device allocations and
 * frees become the driver's memory view; TARGET_INFO_GPU gives the device.
 * The ranges of the one name that marks a step (a name such as "step",
 * "train_step" or "ProfilerStep#N", the most frequent such name, outermost
 * occurrences only) become the steps, the first of two or more flagged
 * warm-up; without one the bundle is a whole run, which replay cuts by its
 * launch period. An export of several processes gives the one that ran the
 * most kernels. What the database lacks is said in Header.import_missing.
 *
 * Columns are found by name (PRAGMA table_info), so the exports of Nsight
 * Systems 2022 to 2024 read alike; a string column may hold a StringIds id
 * or the text itself. A table that is absent is something the export
 * lacks; a row that makes no sense (a NULL or non-integer time, an end
 * before its start, a time past 2^62 ns) is skipped and counted in one
 * warning line per table. Rows are streamed (sqlite3_step), and the only
 * memory that grows with the input is the string table, the name caches
 * and the steps (at most IMPORT_NSYS_STEPS_MAX).
 */
#ifndef STEPTRACE_IMPORT_NSYS_H
#define STEPTRACE_IMPORT_NSYS_H

/* Steps kept at most; more are counted in a warning. */
#define IMPORT_NSYS_STEPS_MAX 1000000

/*
 * Writes the bundle `out_path` from the export `sqlite_path`. 0, or -1
 * after one error line (lib/error.h) naming the file: not an SQLite
 * database, not an Nsight Systems export, a damaged file, no GPU work and
 * no ranges, or a write that failed (out_path is then left as it was).
 */
int import_nsys(const char *sqlite_path, const char *out_path);

#endif
