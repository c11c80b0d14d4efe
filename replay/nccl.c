/* nccl.c: see nccl.h. */
#include "replay/nccl.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "replay/replay.h"
#include "trace/types.h"

/* NCCL's names of its collectives, in kernels and ranges, and ours. */
static const struct {
	const char *nccl;
	int type;
} collectives[] = {
	{ "AllReduce", ST_COLL_ALLREDUCE }, { "AllGather", ST_COLL_ALLGATHER },
	{ "ReduceScatter", ST_COLL_REDUCESCATTER }, { "Broadcast", ST_COLL_BROADCAST },
	{ "Bcast", ST_COLL_BROADCAST }, { "Reduce", ST_COLL_REDUCE }, { "SendRecv", ST_COLL_SENDRECV },
	{ "Send", ST_COLL_SENDRECV }, { "Recv", ST_COLL_SENDRECV },
};

static const char *const algos[] = {
	"RING", "TREE", "COLLNET", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT", NULL,
};
static const char *const protos[] = { "LL", "LL128", "SIMPLE", NULL };
static const char *const redops[] = { "Sum", "Prod", "Min", "Max", "PreMulSum", "SumPostDiv", "Avg", NULL };
/* 2.19's type names, and the C names of earlier versions in the same order */
static const char *const dtypes[] = {
	"i8", "u8", "i32", "u32", "i64", "u64", "f16", "f32", "f64", "bf16", "f8e4m3", "f8e5m2", NULL,
};
static const char *const dtypes_c[] = {
	"int8_t", "uint8_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "half", "float", "double",
	"__nv_bfloat16", "__nv_fp8_e4m3", "__nv_fp8_e5m2", NULL,
};

/* The entry of table equal to s[0..n), or NULL. */
static const char *in(const char *const *table, const char *s, size_t n)
{
	for (; *table; table++)
		if (strlen(*table) == n && !strncmp(*table, s, n))
			return *table;
	return NULL;
}

/* The collective named by s[0..n), -1 none. */
static int collective(const char *s, size_t n)
{
	for (size_t i = 0; i < sizeof(collectives) / sizeof(collectives[0]); i++)
		if (strlen(collectives[i].nccl) == n && !strncmp(collectives[i].nccl, s, n))
			return collectives[i].type;
	return -1;
}

/*
 * Where the kernel's identifier that starts at `word` ("ncclDevKernel_...")
 * ends: at the end of the identifier, or, in a mangled name
 * (_Z<length>ncclDev...), at the end of the length it states (what
 * follows is the encoding of its arguments).
 */
static const char *ident_end(const char *name, const char *word)
{
	const char *end = word + strspn(word, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_");
	const char *d = word;

	while (d > name && isdigit((unsigned char)d[-1]))
		d--;
	if (d < word && d - name >= 2 && d[-2] == '_' && d[-1] == 'Z') {
		size_t stated = (size_t)strtoul(d, NULL, 10);
		if (stated && word + stated < end)
			end = word + stated;
	}
	return end;
}

bool nccl_kernel(const char *name, struct nccl_kernel *k)
{
	const char *p = NULL, *word, *end;
	struct nccl_kernel dummy;

	if (!k)
		k = &dummy;
	*k = (struct nccl_kernel){ -1, "", "", "", "" };
	if (!name)
		return false;
	if ((word = strstr(name, "ncclDevKernel_")))
		p = word + strlen("ncclDevKernel_");
	else if ((word = strstr(name, "ncclKernel_")))
		p = word + strlen("ncclKernel_");
	else
		return strstr(name, "nccl") != NULL;
	end = ident_end(name, word);
	/* tokens between '_': a collective first, then algorithms (two-word ones too), protocols, ... */
	while (p < end) {
		size_t n = strcspn(p, "_");
		const char *hit;
		int type;

		if (p + n > end)
			n = (size_t)(end - p);
		/* COLLNET_DIRECT, NVLS_TREE, __nv_bfloat16: two words, or a leading '_' */
		if (p + n < end) {
			size_t m = n + 1 + strcspn(p + n + 1, "_");
			if (p + m <= end && (hit = in(algos, p, m))) {
				k->algo = hit;
				p += m + (p + m < end);
				continue;
			}
		}
		if (n == 0) {   /* "__nv_bfloat16", "__nv_fp8_e4m3": the type's C name */
			for (int i = 0; dtypes_c[i]; i++)
				if (!strncmp(p, dtypes_c[i], strlen(dtypes_c[i])) && p + strlen(dtypes_c[i]) <= end) {
					k->dtype = dtypes[i];
					n = strlen(dtypes_c[i]);
					break;
				}
		} else if (k->type < 0 && (type = collective(p, n)) >= 0) {
			k->type = type;
		} else if ((hit = in(algos, p, n))) {
			k->algo = hit;
		} else if ((hit = in(protos, p, n))) {
			k->proto = hit;
		} else if ((hit = in(redops, p, n))) {
			k->redop = hit;
		} else if ((hit = in(dtypes, p, n))) {
			k->dtype = hit;
		} else {
			for (int i = 0; dtypes_c[i]; i++)
				if (strlen(dtypes_c[i]) >= n && !strncmp(p, dtypes_c[i], strlen(dtypes_c[i])) &&
				    p + strlen(dtypes_c[i]) <= end) {
					k->dtype = dtypes[i];
					n = strlen(dtypes_c[i]);
					break;
				}
		}
		p += n + (p + n < end);
	}
	return true;
}

int nccl_range(const char *name)
{
	if (!name || strncmp(name, "nccl", 4))
		return -1;
	return collective(name + 4, strlen(name + 4));
}

bool nccl_collective(const struct replay *rp, const struct replay_activity *a)
{
	const struct replay_op *op;

	if (a->kind != ST_KERNEL)
		return false;
	op = replay_op(rp, a->op);
	return (op && !strcmp(replay_str(rp, op->phase), ST_OP_PHASE_COMM)) || nccl_kernel(replay_str(rp, a->name), NULL);
}
