/*
 * category.h: what kind of work a GPU activity is (GEMM, softmax, ...),
 * from the op that launched it when the op's kind says, else from the
 * kernel's name (cuBLAS/CUTLASS naming), memcpy/memset by activity kind. A
 * matrix-product op's helper kernels (a layout permute) count as what their
 * names say, so "GEMM" holds GEMM kernels only.
 */
#ifndef STEPTRACE_ANALYZE_CATEGORY_H
#define STEPTRACE_ANALYZE_CATEGORY_H

#include "replay/replay.h"

enum kernel_category {
	CAT_GEMM,
	CAT_ELEMENTWISE,
	CAT_REDUCTION,        /* reductions and norms, the loss */
	CAT_SOFTMAX,
	CAT_ATTENTION,        /* fused attention (flash) */
	CAT_OPTIMIZER,
	CAT_MEMCPY,           /* memcpy and memset */
	CAT_OTHER,
	CAT_COMM,             /* collectives: communication ops' kernels, NCCL's (last: colours stay) */
	CAT_COUNT
};

const char *category_name(enum kernel_category c);   /* "GEMM", "elementwise", ... */
/* CAT_OTHER when the words say nothing. */
enum kernel_category category_from_op(const char *kind, const char *phase);
enum kernel_category category_from_kernel_name(const char *name);
/*
 * The op's category (by_op), or the kernel name's (by_name) when the op's
 * kind says nothing; a matrix-product op's helper kernels (the layout permute
 * inside attention's av) count as what their own names say, unless the name
 * says nothing either.
 */
enum kernel_category category_pick(enum kernel_category by_op, enum kernel_category by_name);

/*
 * An activity's category: copies and memsets are CAT_MEMCPY; a kernel's is
 * category_pick of its op's and its name's, each op's and each name's worked
 * out once (reports classify every activity of a large bundle).
 */
struct category_cache {
	const struct replay *rp;
	int8_t *by_op, *by_name;   /* -1: not classified yet */
};
int category_cache_init(struct category_cache *cc, const struct replay *rp); /* -1 with an error line */
enum kernel_category category_cached(struct category_cache *cc, const struct replay_activity *a);
void category_cache_release(struct category_cache *cc);

#endif
