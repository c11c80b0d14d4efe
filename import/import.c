/*
 * import.c: `steptrace import`'s work (import.h): the files to read (a
 * folder stands for its *.pt.trace.json[.gz]), what each one is (its first
 * bytes), the bundles' names (one per rank, RUN.rankN.stb, sharing a run id)
 * and the refusal to replace a file steptrace did not write.
 */
#include "import/import.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "import/kineto.h"
#include "import/nsys.h"
#include "lib/error.h"
#include "lib/grow.h"
#include "lib/hash.h"
#include "lib/output.h"

enum source { SRC_KINETO, SRC_NSYS };

struct files {
	char **v;
	size_t n, alloc;
};

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n >= m && !strcmp(s + n - m, suffix);
}

static int add_file(struct files *f, const char *dir, const char *name)
{
	size_t len = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 1;
	char *p = malloc(len);

	if (!p || ALLOC_GROW(f->v, f->n + 1, f->alloc)) {
		free(p);
		return error("out of memory");
	}
	snprintf(p, len, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
	f->v[f->n++] = p;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A folder's traces, as tensorboard_trace_handler names them, in name order. */
static int add_folder(struct files *f, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t first = f->n;

	if (!d)
		return error("cannot read folder '%s': %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		if ((ends_with(e->d_name, ".pt.trace.json") || ends_with(e->d_name, ".pt.trace.json.gz")) &&
		    add_file(f, dir, e->d_name)) {
			closedir(d);
			return -1;
		}
	}
	closedir(d);
	if (f->n == first)
		return error("folder '%s' holds no torch.profiler trace (*.pt.trace.json or *.pt.trace.json.gz)", dir);
	qsort(f->v + first, f->n - first, sizeof(*f->v), cmp_str);
	return 0;
}

/* What the file is, from its first bytes. -1 after one line. */
static int detect(const char *path)
{
	unsigned char b[16] = { 0 };
	size_t n, i;
	FILE *fp = fopen(path, "rb");

	if (!fp)
		return error("cannot open '%s': %s", path, strerror(errno));
	n = fread(b, 1, sizeof(b), fp);
	fclose(fp);
	if (n == 16 && !memcmp(b, "SQLite format 3", 16))
		return SRC_NSYS;
	if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
		return SRC_KINETO;
	for (i = 0; i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'); i++)
		;
	if (i < n && b[i] == '{')
		return SRC_KINETO;
	return error("'%s' is neither a torch.profiler trace (JSON, or gzip'd JSON) nor an Nsight Systems SQLite "
		     "export", path);
}

/* path without its trace suffixes: "d/host_1.2.pt.trace.json.gz" -> "d/host_1.2"; malloc'd. */
static char *stem(const char *path)
{
	static const char *const suffixes[] = { ".gz", ".json", ".pt.trace", ".sqlite", ".stb", NULL };
	char *s = strdup(path);
	size_t n;

	if (!s)
		return NULL;
	for (n = strlen(s); n > 1 && s[n - 1] == '/'; n--)
		s[n - 1] = '\0';
	for (const char *const *x = suffixes; *x; x++)
		if (ends_with(s, *x) && strlen(s) > strlen(*x))
			s[strlen(s) - strlen(*x)] = '\0';
	return s;
}

static char *join(const char *a, const char *b)
{
	size_t len = strlen(a) + strlen(b) + 1;
	char *p = malloc(len);

	if (p)
		snprintf(p, len, "%s%s", a, b);
	return p;
}

/*
 * Whether `out` may be written: not one of the inputs, and, unless
 * --force, either absent or a bundle (a file steptrace wrote: zstd's magic
 * number first). 0, or -1 after one line.
 */
static int check_output(const char *out, const char *input, bool force)
{
	const char *inputs[] = { input, NULL };
	unsigned char magic[4] = { 0 };
	struct stat st;
	FILE *fp;

	if (output_check_inputs(out, inputs))
		return -1;
	if (stat(out, &st) || !S_ISREG(st.st_mode) || force)
		return 0;
	fp = fopen(out, "rb");
	if (fp) {
		size_t n = fread(magic, 1, 4, fp);

		fclose(fp);
		if (n == 4 && magic[0] == 0x28 && magic[1] == 0xb5 && magic[2] == 0x2f && magic[3] == 0xfd)
			return 0;
	}
	return error("'%s' exists and is not a steptrace bundle: give --force to replace it, or -o another name", out);
}

/* A run id the ranks imported together share: a hash of their files' names, never 0. */
static uint64_t run_id_of(const struct files *f)
{
	uint64_t h = HASH_FNV1A_INIT;

	for (size_t i = 0; i < f->n; i++) {
		const char *b = strrchr(f->v[i], '/') ? strrchr(f->v[i], '/') + 1 : f->v[i];

		h = hash_fnv1a(h, b, strlen(b) + 1);
	}
	return hash_mix64(h) | 1;
}

static int import_one(const char *path, int src, const char *out, const struct import_options *o)
{
	if (check_output(out, path, o->force))
		return -1;
	if (src == SRC_NSYS) {
		if (import_nsys(path, out))
			return -1;
	}
	if (!o->quiet)
		fprintf(stderr, "wrote '%s' from '%s'\n", out, path);
	return 0;
}

static int import_kineto(const struct files *f, const char *base, const struct import_options *o)
{
	uint64_t run_id = run_id_of(f);
	uint32_t *seen = calloc(f->n, sizeof(*seen));
	int rc = -1;

	if (!seen)
		return error("out of memory");
	for (size_t i = 0; i < f->n; i++) {
		struct kineto_trace *t = kineto_scan(f->v[i]);
		uint32_t rank, world;
		char *out = NULL, suffix[48];

		if (!t)
			goto out;
		kineto_rank(t, &rank, &world);
		if (f->n > 1 || world > 1) {
			/* a rank of a run, alone or with others: named as the recorder names ranks */
			if (world < 2) {
				error("'%s' has no distributedInfo of a run of several ranks: import several traces only as "
				      "the ranks of one run (one file per rank), others one at a time", f->v[i]);
				kineto_free(t);
				goto out;
			}
			for (size_t j = 0; j < i; j++)
				if (seen[j] == rank + 1) {
					error("'%s' and '%s' are both rank %" PRIu32, f->v[j], f->v[i], rank);
					kineto_free(t);
					goto out;
				}
			seen[i] = rank + 1;
			snprintf(suffix, sizeof(suffix), ".rank%" PRIu32 ".stb", rank);
			out = join(base, suffix);
		} else {
			out = o->output ? strdup(o->output) : join(base, ".stb");
		}
		if (!out) {
			error("out of memory");
			kineto_free(t);
			goto out;
		}
		if (check_output(out, f->v[i], o->force) || kineto_write(t, out, run_id, o->command_line)) {
			free(out);
			kineto_free(t);
			goto out;
		}
		if (!o->quiet) {
			if (world > 1)
				fprintf(stderr, "wrote '%s' from '%s' (rank %" PRIu32 " of %" PRIu32 ")\n", out, f->v[i],
					rank, world);
			else
				fprintf(stderr, "wrote '%s' from '%s'\n", out, f->v[i]);
		}
		free(out);
		kineto_free(t);
	}
	rc = 0;
out:
	free(seen);
	return rc;
}

int import_traces(const char *const *paths, int n, const struct import_options *o)
{
	struct files f = { 0 }, kineto = { 0 };
	char *base = NULL;
	int rc = -1;

	for (int i = 0; i < n; i++) {
		struct stat st;

		if (stat(paths[i], &st)) {
			error("cannot open '%s': %s", paths[i], strerror(errno));
			goto out;
		}
		if (S_ISDIR(st.st_mode) ? add_folder(&f, paths[i]) : add_file(&f, NULL, paths[i]))
			goto out;
	}
	for (size_t i = 0; i < f.n; i++) {
		int src = detect(f.v[i]);

		if (src < 0)
			goto out;
		if (src == SRC_NSYS) {
			char *s = NULL, *out = NULL;

			if (f.n > 1 && o->output) {
				error("-o names one bundle: import an Nsight Systems export alone to name its bundle");
				goto out;
			}
			s = stem(f.v[i]);
			out = o->output ? strdup(o->output) : s ? join(s, ".stb") : NULL;
			free(s);
			if (!out) {
				error("out of memory");
				goto out;
			}
			rc = import_one(f.v[i], src, out, o);
			free(out);
			if (rc)
				goto out;
			rc = -1;
		} else if (add_file(&kineto, NULL, f.v[i])) {
			goto out;
		}
	}
	if (kineto.n) {
		/* the bundles' name: -o's, else the folder's or the trace's */
		base = stem(o->output ? o->output : n == 1 ? paths[0] : kineto.v[0]);
		if (!base) {
			error("out of memory");
			goto out;
		}
		if (import_kineto(&kineto, base, o))
			goto out;
	}
	rc = 0;
out:
	for (size_t i = 0; i < f.n; i++)
		free(f.v[i]);
	for (size_t i = 0; i < kineto.n; i++)
		free(kineto.v[i]);
	free(f.v);
	free(kineto.v);
	free(base);
	return rc;
}
