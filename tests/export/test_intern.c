/*
 * test_intern.c: export's interner. A string of the replay (EXPORT_ID_*)
 * is read the first time only: a kernel name or a range path repeated on
 * every event must not be hashed and compared per event. Ids still follow
 * the text: the same text from anywhere keeps one id, in first-seen order.
 */
#include <stdio.h>

#include "export/intern.h"
#include "tests/lib/check.h"

int main(void)
{
	struct export_interner in = { 0 };
	char name[] = "gemm_kernel";
	bool fresh = false;

	CHECK_U64(export_intern(&in, EXPORT_ID_STRING(7), name, &fresh), 1);
	CHECK(fresh, "the first one is new");
	/* the id answers: the text (changed here behind its back) is not read again */
	name[0] = 'X';
	CHECK_U64(export_intern(&in, EXPORT_ID_STRING(7), name, &fresh), 1);
	CHECK(!fresh, "seen by its string id");
	/* the same text from elsewhere: a path, a formatted string */
	CHECK_U64(export_intern(&in, EXPORT_ID_PATH(7), "gemm_kernel", &fresh), 1);
	CHECK(!fresh, "a path of the same text");
	CHECK_U64(export_intern(&in, 0, "gemm_kernel", &fresh), 1);
	CHECK(!fresh, "a formatted string of the same text");
	CHECK_U64(export_intern(&in, 0, "step 0", &fresh), 2);
	CHECK(fresh, "a new text");
	CHECK_U64(export_intern(&in, EXPORT_ID_PATH(7), "not read", &fresh), 1);
	CHECK(!fresh, "path 7 again");
	/* many ids over few texts, through the tables' growth */
	for (uint32_t i = 0; i < 100000; i++) {
		char text[16];
		uint64_t want = 3 + i % 10, got;

		snprintf(text, sizeof(text), "text %u", i % 10);
		got = export_intern(&in, i % 2 ? EXPORT_ID_STRING(1000 + i) : EXPORT_ID_PATH(1000 + i), text, &fresh);
		if (got != want) {
			CHECK(got == want, "id %u: %llu, want %llu", i, (unsigned long long)got,
			      (unsigned long long)want);
			break;
		}
	}
	CHECK_U64(in.text.n, 12);
	CHECK_U64(export_intern(&in, EXPORT_ID_STRING(1001), "changed", &fresh), 4);
	export_interner_release(&in);
	return check_done("test_intern");
}
