/*
 * output.h: the one way steptrace writes a file, so that no command ever
 * destroys one it did not create.
 *
 *   struct output out;
 *   if (output_open(&out, path, (const char *[]){ rp->path, NULL }) < 0)
 *           return -1;                          // one line printed, nothing written
 *   ... fprintf(out.f, ...) ...
 *   if (failed) {
 *           output_discard(&out);               // the target is untouched
 *           return -1;
 *   }
 *   return output_close(&out);                  // -1 after one line, target untouched
 *
 * What is written where:
 * - "-" is standard output (written through a duplicate of it).
 * - A regular file, or a path that does not exist yet, is written to a
 *   temporary file beside it ("NAME.tmp-XXXXXX", same directory, so the
 *   rename is atomic); output_close flushes, fsyncs and renames it over the
 *   target. A failed write, or output_discard, removes the temporary file
 *   and leaves the target as it was. SIGINT, SIGTERM or SIGHUP in between
 *   (unless the program took them over, as record does) removes the
 *   temporary file, then ends the process as the signal would; a process
 *   killed outright leaves it, never a half-written target. A target with
 *   other hard links is not renamed over (its other names would keep the
 *   old content, as `>` never does): once the temporary file is whole, it is
 *   copied into the target in place, signals held, then removed.
 * - An existing file the user could not write with `>` is refused with one
 *   line before anything is written: one whose mode has no write bit for
 *   the user's class (owner, group or others; root too, whom `>` would let
 *   through), or that access(2) refuses. A 0444 file, another user's 0600.
 * - A symbolic link is followed: the file it points to is replaced (or
 *   created), the link itself stays as it is.
 * - Anything else (a pipe, /dev/stdout, /dev/null, a device) is written in
 *   place and never removed or replaced.
 * - An output that is the same file as one of `inputs` (same device and
 *   inode, symbolic links followed; regular files) is refused with one line
 *   before anything is written.
 *
 * Nothing here removes or renames a path the user gave: only the temporary
 * file this module created is ever unlinked.
 */
#ifndef STEPTRACE_LIB_OUTPUT_H
#define STEPTRACE_LIB_OUTPUT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Stays where it is while open: f writes through it. */
struct output {
	FILE *f;              /* write here */
	const char *path;     /* as the user gave it, for messages */
	char *target;         /* the file the rename replaces (links followed); NULL in place */
	char *tmp;            /* the temporary file being written; NULL in place */
	int fd;               /* what f writes to */
	int err;              /* errno of the first failed write, 0 if none */
	int slot;             /* where a signal's handler finds tmp; -1 none */
	int linked;           /* the target has other hard links: copied into at close, not renamed over */
};

/*
 * Opens `path` for writing as above. `inputs`: the files the command read,
 * NULL-terminated (NULL for none). -1 after one error line, nothing created.
 */
int output_open(struct output *o, const char *path, const char *const *inputs);

/*
 * Finishes the output: flush, fsync and rename into place (or flush and
 * close in place). 0, or -1 after one error line ("cannot write 'x.svg': No
 * space left on device") with the temporary file removed.
 */
int output_close(struct output *o);

/* Gives up after an error of the caller's: the temporary file is removed, nothing else. */
void output_discard(struct output *o);

/*
 * The refusal alone, for commands that want it before doing their work:
 * -1 after one line when `path` is the same file as one of `inputs`.
 */
int output_check_inputs(const char *path, const char *const *inputs);

/*
 * A command's default output (no -o) replaces only a file that command
 * wrote: when a regular file exists at path, ours(path, head, ctx) is
 * asked with its first 4 KiB (NUL bytes read as spaces, so a binary
 * file's strings are searched as text). 0 (*replaced: one was there; may
 * be NULL), or -1 after one line naming `what` ("a report", "an export").
 */
int output_check_default(const char *path, const char *what,
			 bool (*ours)(const char *path, const char *head, void *ctx), void *ctx, bool *replaced);

/*
 * Bytes in the file being written (flushed first), for "wrote 'x' (2.1 MiB)";
 * 0 when writing in place (a pipe or a device) or when it cannot be told.
 */
unsigned long long output_bytes(struct output *o);

/* What is being written: the temporary file's name, else the path given. */
const char *output_writing(const struct output *o);

/*
 * Sizes before writing (--max-size). A file is measured before it is
 * written: written whole into a stream that only counts bytes (the HTML
 * report, the SVG charts), or, when that would cost too much, estimated
 * from a sample written so (the traces of export/layout.c) or from its
 * rows (SQLite). One over the limit is refused with one line, and nothing
 * is left behind.
 */
#define OUTPUT_MAX_SIZE (UINT64_C(512) << 20)   /* the default: past V8's longest string, no browser opens it */
#define OUTPUT_MAX_SIZE_TEXT "512MiB"

struct output_counter {
	FILE *f;              /* write here: only counted */
	uint64_t n;
};
/* 0, or -1 after one line (out of memory). */
int output_counter_open(struct output_counter *c);
uint64_t output_counter_bytes(struct output_counter *c);   /* written so far (flushed first) */
void output_counter_close(struct output_counter *c);

/*
 * -1 after one line when `estimate` bytes are over `max` (0: no limit):
 * "'x.html' would be about 612 MiB of HTML, more than --max-size 512 MiB:
 * HINT, or raise --max-size (0: no limit)"; `hint` (what writes less) may
 * be NULL.
 */
int output_check_size(const char *path, uint64_t estimate, uint64_t max, const char *what, const char *hint);

/*
 * The whole of an opened output `o` from `write` (0, or -1 after an error
 * line): written once into a counter, refused above `max` as above, then
 * written into o and closed. 0; or -1 after one line, o discarded (its
 * target untouched, no temporary left). *bytes (may be NULL): the size.
 */
int output_write_sized(struct output *o, uint64_t max, const char *what, const char *hint,
		       int (*write)(void *ctx, FILE *f), void *ctx, uint64_t *bytes);

#endif
