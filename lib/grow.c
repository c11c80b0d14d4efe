/* grow.c: see grow.h. */
#include "lib/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"

int grow_array(void *pp, size_t *alloc, size_t elem, size_t need)
{
	size_t nc = *alloc ? *alloc : 16;
	void *p, *q;

	if (need <= *alloc)
		return 0;
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return error("out of memory: an array of %zu elements", need);
		nc *= 2;
	}
	if (elem && nc > SIZE_MAX / elem)
		return error("out of memory: an array of %zu elements", need);
	memcpy(&p, pp, sizeof(p));
	q = realloc(p, nc * elem);
	if (!q)
		return error("out of memory (%zu bytes for an array)", nc * elem);
	memcpy(pp, &q, sizeof(q));
	*alloc = nc;
	return 0;
}
