/* strpool.c: see strpool.h. */
#include "lib/strpool.h"

#include <stdlib.h>
#include <string.h>

#include "lib/grow.h"
#include "lib/hash.h"

/* The slots at twice the strings at least: every id placed again. */
static int grow_slots(struct strpool *p)
{
	size_t n = p->n_slots ? p->n_slots * 2 : 1024;
	uint32_t *s = calloc(n, sizeof(*s));

	if (!s)
		return -1;
	for (size_t i = 1; i <= p->n; i++) {
		size_t j = hash_str(p->str[i]) & (n - 1);

		while (s[j])
			j = (j + 1) & (n - 1);
		s[j] = (uint32_t)i;
	}
	free(p->slots);
	p->slots = s;
	p->n_slots = n;
	return 0;
}

int strpool_intern(struct strpool *p, const char *s, uint32_t *id, bool *fresh)
{
	const char *keep;
	size_t j;

	if (!s)
		s = "";
	if ((p->n + 1) * 2 > p->n_slots && grow_slots(p))
		return -1;
	for (j = hash_str(s) & (p->n_slots - 1); p->slots[j]; j = (j + 1) & (p->n_slots - 1))
		if (!strcmp(p->str[p->slots[j]], s)) {
			*id = p->slots[j];
			if (fresh)
				*fresh = false;
			return 0;
		}
	if (p->n + 1 >= UINT32_MAX || ALLOC_GROW(p->str, p->n + 2, p->alloc))
		return -1;
	keep = p->own ? strdup(s) : s;
	if (!keep)
		return -1;
	p->str[0] = "";
	p->str[++p->n] = keep;
	p->slots[j] = (uint32_t)p->n;
	*id = (uint32_t)p->n;
	if (fresh)
		*fresh = true;
	return 0;
}

const char *strpool_str(const struct strpool *p, uint32_t id)
{
	return id && id <= p->n ? p->str[id] : "";
}

void strpool_release(struct strpool *p)
{
	if (p->own)
		for (size_t i = 1; i <= p->n; i++)
			free((char *)p->str[i]);
	free(p->str);
	free(p->slots);
	*p = (struct strpool){ .own = p->own };
}
