/*
 * test_strpool.c: lib/strpool.h: ids 1, 2, 3... in first-seen order, the
 * same id for the same text however it was made, "" an ordinary string
 * (and NULL the same as ""), owned copies independent of the caller's
 * buffer, kept pointers the caller's own, and 100,000 distinct strings
 * through several growths, each found again.
 */
#include <stdio.h>
#include <string.h>

#include "lib/strpool.h"
#include "tests/lib/check.h"

int main(void)
{
	struct strpool own = { .own = true }, kept = { 0 };
	uint32_t a = 0, b = 0, c = 0, e = 0, z = 0;
	bool fresh = false;
	char buf[32];

	CHECK(!strcmp(strpool_str(&own, 0), "") && !strcmp(strpool_str(&own, 7), ""));
	snprintf(buf, sizeof(buf), "alpha");
	CHECK(strpool_intern(&own, buf, &a, &fresh) == 0 && a == 1 && fresh);
	snprintf(buf, sizeof(buf), "beta");
	CHECK(strpool_intern(&own, buf, &b, &fresh) == 0 && b == 2 && fresh);
	snprintf(buf, sizeof(buf), "alpha");   /* the same text from another buffer */
	CHECK(strpool_intern(&own, buf, &c, &fresh) == 0 && c == 1 && !fresh);
	buf[0] = 'X';                          /* owned: the copy stays as it was */
	CHECK(!strcmp(strpool_str(&own, 1), "alpha") && !strcmp(strpool_str(&own, 2), "beta"));
	CHECK(strpool_intern(&own, "", &e, &fresh) == 0 && e == 3 && fresh);
	CHECK(strpool_intern(&own, NULL, &z, &fresh) == 0 && z == 3 && !fresh);
	CHECK(!strcmp(own.str[0], "") && own.n == 3);
	strpool_release(&own);
	CHECK(own.n == 0 && own.own && !strcmp(strpool_str(&own, 1), ""));

	{
		static char names[100000][8];

		for (uint32_t i = 0; i < 100000; i++) {
			uint32_t id = 0;

			snprintf(names[i], sizeof(names[i]), "s%u", i);
			CHECK(strpool_intern(&kept, names[i], &id, NULL) == 0 && id == i + 1, "s%u: id %u", i, id);
		}
		for (uint32_t i = 0; i < 100000; i += 997) {
			uint32_t id = 0;

			CHECK(strpool_intern(&kept, names[i], &id, &fresh) == 0 && id == i + 1 && !fresh);
			CHECK(strpool_str(&kept, id) == names[i], "kept: not the caller's pointer");
		}
		CHECK(kept.n == 100000 && kept.n_slots >= 2 * kept.n);
		strpool_release(&kept);
	}
	return check_done("test_strpool");
}
