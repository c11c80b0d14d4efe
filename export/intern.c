/* intern.c: strings to small ids, for the Perfetto and SQLite writers (see intern.h). */
#include "export/intern.h"

#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"

/* The text's id: s hashed and compared, interned when new. */
static uint64_t intern_text(struct export_interner *in, const char *s, bool *fresh)
{
	size_t i;

	if (in->n * 2 >= in->cap) {
		size_t nc = in->cap ? in->cap * 2 : 1024;
		char **k = calloc(nc, sizeof(*k));
		uint64_t *v = calloc(nc, sizeof(*v));
		if (!k || !v) {
			free(k);
			free(v);
			return 0;
		}
		for (size_t j = 0; j < in->cap; j++) {
			if (!in->keys[j])
				continue;
			for (i = hash_str(in->keys[j]) & (nc - 1); k[i]; i = (i + 1) & (nc - 1))
				;
			k[i] = in->keys[j];
			v[i] = in->iids[j];
		}
		free(in->keys);
		free(in->iids);
		in->keys = k;
		in->iids = v;
		in->cap = nc;
	}
	for (i = hash_str(s) & (in->cap - 1); in->keys[i]; i = (i + 1) & (in->cap - 1))
		if (strcmp(in->keys[i], s) == 0) {
			*fresh = false;
			return in->iids[i];
		}
	in->keys[i] = strdup(s);
	if (!in->keys[i])
		return 0;
	in->iids[i] = ++in->n;
	*fresh = true;
	return in->iids[i];
}

/* The slot of `from` in in->from: where it is, or the empty slot it would take. */
static size_t from_slot(const uint64_t *from, size_t cap, uint64_t id)
{
	size_t i = hash_mix64(id) & (cap - 1);

	while (from[i] && from[i] != id)
		i = (i + 1) & (cap - 1);
	return i;
}

uint64_t export_intern(struct export_interner *in, uint64_t from, const char *s, bool *fresh)
{
	uint64_t iid;
	size_t i;

	if (!from)
		return intern_text(in, s, fresh);
	if (in->from_n * 2 >= in->from_cap) {
		size_t nc = in->from_cap ? in->from_cap * 2 : 1024;
		uint64_t *k = calloc(nc, sizeof(*k)), *v = calloc(nc, sizeof(*v));
		if (!k || !v) {
			free(k);
			free(v);
			return 0;
		}
		for (size_t j = 0; j < in->from_cap; j++)
			if (in->from[j]) {
				i = from_slot(k, nc, in->from[j]);
				k[i] = in->from[j];
				v[i] = in->from_iids[j];
			}
		free(in->from);
		free(in->from_iids);
		in->from = k;
		in->from_iids = v;
		in->from_cap = nc;
	}
	i = from_slot(in->from, in->from_cap, from);
	if (in->from[i]) {
		*fresh = false;
		return in->from_iids[i];
	}
	iid = intern_text(in, s, fresh);   /* the same text from elsewhere keeps its id */
	if (iid) {
		in->from[i] = from;
		in->from_iids[i] = iid;
		in->from_n++;
	}
	return iid;
}

void export_interner_release(struct export_interner *in)
{
	for (size_t i = 0; i < in->cap; i++)
		free(in->keys[i]);
	free(in->keys);
	free(in->iids);
	free(in->from);
	free(in->from_iids);
	memset(in, 0, sizeof(*in));
}
