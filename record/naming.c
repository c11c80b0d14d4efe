/* naming.c: see naming.h. */
#include "record/naming.h"

#include <stdio.h>
#include <string.h>

const char *const naming_rank_vars[] = {
	"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "LOCAL_RANK", NULL,
};

static int is_number(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 9)
		return 0;
	return strspn(s, "0123456789") == n;
}

const char *naming_rank(const char *(*get)(const char *name))
{
	for (const char *const *v = naming_rank_vars; *v; v++) {
		const char *s = get(*v);

		if (is_number(s))
			return s;
	}
	return NULL;
}

int naming_bundle(char *out, size_t len, const char *output, const char *id)
{
	size_t n = strlen(output);
	int w;

	if (n > 4 && !strcmp(output + n - 4, ".stb"))
		w = snprintf(out, len, "%.*s.%s.stb", (int)(n - 4), output, id);
	else
		w = snprintf(out, len, "%s.%s.stb", output, id);
	return w < 0 || (size_t)w >= len ? -1 : 0;
}
