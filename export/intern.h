/*
 * intern.h: private to export/. Strings to ids 1, 2, 3... in first-seen
 * order (Perfetto's interned names, SQLite's StringIds): lib/strpool.h,
 * keys owned; and the id already given to each replay string or path seen
 * (EXPORT_ID_*), so that one repeated on a million events is hashed once,
 * not per event (a name or path of kilobytes).
 */
#ifndef STEPTRACE_EXPORT_INTERN_H
#define STEPTRACE_EXPORT_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/strpool.h"

/* Where a string of the replay comes from, to intern it by that (export_intern). */
#define EXPORT_ID_STRING(id) ((1ull << 32) | (uint32_t)(id))   /* replay_str(rp, id) */
#define EXPORT_ID_PATH(i) ((2ull << 32) | (uint32_t)(i))       /* replay_path_str(rp, i) */

struct export_interner {
	struct strpool text;
	uint64_t *from, *from_iids;   /* EXPORT_ID_* -> its string's id; 0 empty */
	size_t from_cap, from_n;
};

/*
 * The id of s; *fresh when it is new. `from` says where s comes from
 * (EXPORT_ID_*; 0 for a formatted string): s is read only the first time.
 * 0 on allocation failure (no line printed).
 */
uint64_t export_intern(struct export_interner *in, uint64_t from, const char *s, bool *fresh);
void export_interner_release(struct export_interner *in);

#endif
