/* session.c: see session.h. */
#include "record/session.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"

int rec_session_open(struct rec_session *s, const char *path, const Steptrace__Header *hdr)
{
	struct bundle_writer_options opt = { 0 };
	Steptrace__Header h = *hdr;
	const char *host = getenv("STEPTRACE_HOSTNAME");

	/* a testing aid: ranks on one machine recorded as if on several hosts */
	if (host && *host)
		h.hostname = (char *)host;
	static _Atomic uint64_t serials;

	memset(s, 0, sizeof(*s));
	s->serial = atomic_fetch_add(&serials, 1) + 1;
	pthread_mutex_init(&s->lock, NULL);
	s->path = path;
	s->time_base = hdr->time_base_ns;
	s->w = bundle_writer_open(path, &h, &opt);
	return s->w ? 0 : -1;
}

void rec_session_lock(struct rec_session *s)
{
	pthread_mutex_lock(&s->lock);
}

bool rec_session_trylock(struct rec_session *s)
{
	return pthread_mutex_trylock(&s->lock) == 0;
}

void rec_session_unlock(struct rec_session *s)
{
	pthread_mutex_unlock(&s->lock);
}

uint32_t rec_session_intern_locked(struct rec_session *s, const char *str)
{
	if (!s->w || !str || !*str)
		return 0;
	return bundle_writer_intern(s->w, str);
}

void rec_session_add_locked(struct rec_session *s, const struct st_event *ev)
{
	if (!s->w || s->failed) {
		s->lost++;
		return;
	}
	if (bundle_writer_add(s->w, ev) < 0) {
		/* The writer printed why; keep recording nothing more, end with "error". */
		s->failed = true;
		s->lost++;
		return;
	}
	s->events++;
}

void rec_session_count_dropped_locked(struct rec_session *s, int kind, uint64_t n)
{
	if (s->w && n)
		bundle_writer_count_dropped(s->w, kind, n);
}

void rec_session_set_steps_from(struct rec_session *s, const char *steps_from)
{
	rec_session_lock(s);
	if (s->w)
		bundle_writer_set_steps_from(s->w, steps_from);
	rec_session_unlock(s);
}

void rec_session_set_param_groups(struct rec_session *s, const struct st_param_group *g, size_t n)
{
	if (!n)
		return;
	rec_session_lock(s);
	if (s->w)
		bundle_writer_set_param_groups(s->w, g, n);
	rec_session_unlock(s);
}

void rec_session_set_launch_cost(struct rec_session *s, const struct st_launch_cost *c)
{
	if (!c->launches)
		return;
	rec_session_lock(s);
	if (s->w)
		bundle_writer_set_launch_cost(s->w, c);
	rec_session_unlock(s);
}

void rec_session_set_unrecorded_steps(struct rec_session *s, const uint64_t *ns, size_t n)
{
	if (!n)
		return;
	rec_session_lock(s);
	if (s->w)
		bundle_writer_set_unrecorded_steps(s->w, ns, n);
	rec_session_unlock(s);
}

void rec_session_set_armed_cost(struct rec_session *s, uint64_t recorder_ns, uint64_t span_ns)
{
	rec_session_lock(s);
	if (s->w)
		bundle_writer_set_armed_cost(s->w, recorder_ns, span_ns);
	rec_session_unlock(s);
}

/* The session's writer, taken from it (no event reaches it after): NULL when none is open. */
static struct bundle_writer *take_writer(struct rec_session *s)
{
	struct bundle_writer *w;

	rec_session_lock(s);
	w = s->w;
	s->w = NULL;
	rec_session_unlock(s);
	return w;
}

int rec_session_close(struct rec_session *s, const char *end_reason)
{
	struct bundle_writer *w = take_writer(s);
	int rc;

	if (!w)
		return -1;
	rc = bundle_writer_close(w, s->failed ? "error" : end_reason);
	if (s->failed && rc == 0)
		rc = error("bundle '%s' is incomplete: %llu events could not be written",
			      s->path, (unsigned long long)s->lost);
	return rc;
}

void rec_session_abort(struct rec_session *s)
{
	struct bundle_writer *w = take_writer(s);

	if (w)
		bundle_writer_abort(w);
}

void rec_session_discard(struct rec_session *s)
{
	struct bundle_writer *w = take_writer(s);

	if (w)
		bundle_writer_discard(w);
}

void rec_session_release(struct rec_session *s)
{
	pthread_mutex_destroy(&s->lock);
}
