/*
 * session.h: the bundle being recorded. Two threads write to it: CUPTI's
 * buffer-completion thread (activity records) and the thread that drives the
 * step (observer events, drained from its own queue at step boundaries).
 * One mutex serialises the writer; everything named *_locked expects it held.
 * Times convert to the bundle's clock (ns since Header.time_base_ns) here.
 */
#ifndef STEPTRACE_RECORD_SESSION_H
#define STEPTRACE_RECORD_SESSION_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "trace/bundle.h"

struct rec_session {
	pthread_mutex_t lock;
	struct bundle_writer *w;   /* NULL once closed or aborted */
	const char *path;
	uint64_t time_base;        /* CUPTI ns of Header.time_base_ns */
	uint64_t events;           /* events handed to the writer */
	uint64_t lost;             /* events not written because a write failed */
	bool failed;               /* a write failed; the run ends with "error" */
	uint64_t serial;           /* 1, 2, ... per rec_session_open in the process: caches of
				    * string ids say which bundle they are for (each has its own table) */
};

/*
 * Creates `path` and writes the header; hdr->time_base_ns must be set.
 * STEPTRACE_HOSTNAME, when set, replaces hdr->hostname. -1 on error.
 */
int rec_session_open(struct rec_session *s, const char *path, const Steptrace__Header *hdr);

void rec_session_lock(struct rec_session *s);
bool rec_session_trylock(struct rec_session *s);
void rec_session_unlock(struct rec_session *s);

/* A string id (0 for NULL or ""); 0 too when the session is closed. */
uint32_t rec_session_intern_locked(struct rec_session *s, const char *str);
/* Appends one event; a write error is remembered, reported once, and ends the run with "error". */
void rec_session_add_locked(struct rec_session *s, const struct st_event *ev);
/* Records lost by a source (CUPTI), for the footer. */
void rec_session_count_dropped_locked(struct rec_session *s, int kind, uint64_t n);

/* CUPTI ns -> bundle ns; anything before the time base is clamped to 0. */
static inline uint64_t rec_session_time(const struct rec_session *s, uint64_t cupti_ns)
{
	return cupti_ns > s->time_base ? cupti_ns - s->time_base : 0;
}

/* How the steps were found, for the footer (record/nvtx.h; "built-in step" for the model's). */
void rec_session_set_steps_from(struct rec_session *s, const char *steps_from);
/* The optimizer's parameter groups, for the footer (format 1.8; copied; n 0: none). */
void rec_session_set_param_groups(struct rec_session *s, const struct st_param_group *g, size_t n);
/* CUPTI's cost per launch measured in this process, for the footer (1.10); launches 0: none. */
void rec_session_set_launch_cost(struct rec_session *s, const struct st_launch_cost *c);
/* An armed window's unrecorded steps before it, for the footer (1.11); n 0 sets none. */
void rec_session_set_unrecorded_steps(struct rec_session *s, const uint64_t *ns, size_t n);
/* The recorder's own time while armed over span_ns before the window (1.11). */
void rec_session_set_armed_cost(struct rec_session *s, uint64_t recorder_ns, uint64_t span_ns);

/*
 * Writes the footer with `end_reason` ("ok", "oom", "interrupted"; "error"
 * replaces it when a write failed) and closes. -1 when the bundle could not
 * be completed. The session cannot be used afterwards except for
 * rec_session_release.
 */
int rec_session_close(struct rec_session *s, const char *end_reason);
/* Closes without a footer (readable up to its last whole chunk). */
void rec_session_abort(struct rec_session *s);
/* Removes the bundle being written instead (nothing of it stays). */
void rec_session_discard(struct rec_session *s);
void rec_session_release(struct rec_session *s);

#endif
