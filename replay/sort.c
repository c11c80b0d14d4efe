/* sort.c: the stable LSD radix sort of (key, index) pairs behind every ordering in replay. */
#include "replay/replay.h"

#include <string.h>

void replay_sort_keys(struct replay_key *a, struct replay_key *tmp, size_t n)
{
	size_t hist[8][256];
	struct replay_key *src = a, *dst = tmp;

	size_t i = 1;

	if (n < 2)
		return;
	/* recorders write mostly in order: a sorted input costs one pass */
	while (i < n && a[i - 1].key <= a[i].key)
		i++;
	if (i == n)
		return;
	memset(hist, 0, sizeof(hist));
	for (size_t i = 0; i < n; i++) {
		uint64_t k = a[i].key;
		for (int b = 0; b < 8; b++)
			hist[b][(k >> (8 * b)) & 0xff]++;
	}
	for (int b = 0; b < 8; b++) {
		size_t *h = hist[b], sum = 0;
		int shift = 8 * b;

		/* a byte every key shares orders nothing: skip the pass */
		if (h[(a[0].key >> shift) & 0xff] == n)
			continue;
		for (int v = 0; v < 256; v++) {
			size_t c = h[v];
			h[v] = sum;
			sum += c;
		}
		for (size_t i = 0; i < n; i++)
			dst[h[(src[i].key >> shift) & 0xff]++] = src[i];
		struct replay_key *t = src;
		src = dst;
		dst = t;
	}
	if (src != a)
		memcpy(a, src, n * sizeof(*a));
}
