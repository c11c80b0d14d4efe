/*
 * nsys.h: an Nsight Systems SQLite export (`nsys export --type sqlite`)
 * made into a bundle (`steptrace import`, import/import.h).
 */
#ifndef STEPTRACE_IMPORT_NSYS_H
#define STEPTRACE_IMPORT_NSYS_H

/* Writes the bundle out_path from sqlite_path. 0, or -1 after one line (lib/error.h). */
int import_nsys(const char *sqlite_path, const char *out_path);

#endif
