/* intern.c: strings to small ids, for the Perfetto and SQLite writers (see intern.h). */
#include "export/intern.h"

#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"

/* The text's id, interned when new; 0 when out of memory. */
static uint64_t intern_text(struct export_interner *in, const char *s, bool *fresh)
{
	uint32_t id;

	in->text.own = true;
	return strpool_intern(&in->text, s, &id, fresh) ? 0 : id;
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
	strpool_release(&in->text);
	free(in->from);
	free(in->from_iids);
	memset(in, 0, sizeof(*in));
}
