/* gemm.c: see gemm.h. */
#include "model/gemm.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/error.h"
#include "lib/gpu_check.h"
#include "trace/types.h"

/*
 * What defines a plan: everything its descriptors and the heuristic see.
 * A single product has batch 1 and strides 0. align[] is each operand's
 * alignment in bytes, every batch's pointer included, at most 256: the
 * heuristic assumes 256 unless told, so a product with less gets a plan of
 * its own. beta_zero is there because a heuristic may depend on it. Built
 * over a zeroed struct and free of padding, so the hash and memcmp read
 * only fields.
 */
struct gemm_key {
	long long stride[3];          /* A, B, C, in elements */
	int M, N, K, ld[3], batch;
	int trans_a, trans_b, ab_dtype, c_dtype, beta_zero;
	int align[3];                 /* A, B, C */
	int sms;                      /* the gemm's sm_target then */
};

_Static_assert(sizeof(struct gemm_key) == 3 * sizeof(long long) + 16 * sizeof(int),
	       "struct gemm_key must have no padding");

/* The most algorithms STEPTRACE_GEMM_TUNE times for one plan. */
#define GEMM_TUNE_MAX 16

/* cuBLASLt's operands a, b, c are row-major B, A, C (see gemm_rm). */
struct gemm_plan {
	struct gemm_key key;
	bool used;
	bool legacy;                  /* no cuBLASLt algorithm: cublasGemmEx as before */
	cublasLtMatmulDesc_t op;
	cublasLtMatrixLayout_t a, b, c;
	cublasLtMatmulAlgo_t algo;
	int ncand;                    /* > 1: cand[] to time on the first product (gemm.tune) */
	cublasLtMatmulAlgo_t cand[GEMM_TUNE_MAX];
};

/* Open addressing with linear probing, at most half full. */
struct gemm_plans {
	struct gemm_plan *slot;       /* cap of them, cap a power of two (or 0) */
	size_t cap, n;
	int tuned;                    /* plans whose candidates were timed */
};

int gemm_init(struct gemm *g, cudaStream_t s, enum st_precision p, void *workspace,
	      size_t workspace_bytes)
{
	memset(g, 0, sizeof(*g));
	g->compute = p == ST_TF32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
	g->stream = s;
	g->workspace = workspace;
	g->workspace_bytes = workspace ? workspace_bytes : 0;
	g->plans = calloc(1, sizeof(*g->plans));
	if (!g->plans)
		return error("out of host memory for the GEMM plans");
	if (CUBLAS_CHECK(cublasLtCreate(&g->lt)) || CUBLAS_CHECK(cublasCreate(&g->handle)) ||
	    CUBLAS_CHECK(cublasSetStream(g->handle, s)) ||
	    CUBLAS_CHECK(cublasSetMathMode(g->handle, CUBLAS_DEFAULT_MATH)))
		return -1;
	if (workspace && CUBLAS_CHECK(cublasSetWorkspace(g->handle, workspace, workspace_bytes)))
		return -1;
	const char *tune = getenv("STEPTRACE_GEMM_TUNE");
	if (tune && atoi(tune) > 1)
		g->tune = atoi(tune) < GEMM_TUNE_MAX ? atoi(tune) : GEMM_TUNE_MAX;
	return 0;
}

static void plan_destroy(struct gemm_plan *p)
{
	if (p->op)
		cublasLtMatmulDescDestroy(p->op);
	if (p->a)
		cublasLtMatrixLayoutDestroy(p->a);
	if (p->b)
		cublasLtMatrixLayoutDestroy(p->b);
	if (p->c)
		cublasLtMatrixLayoutDestroy(p->c);
}

void gemm_release(struct gemm *g)
{
	struct gemm_plans *t = g->plans;

	if (t) {
		for (size_t i = 0; i < t->cap; i++)
			if (t->slot[i].used)
				plan_destroy(&t->slot[i]);
		free(t->slot);
		free(t);
	}
	g->plans = NULL;
	if (g->lt)
		cublasLtDestroy(g->lt);
	g->lt = NULL;
	if (g->handle)
		cublasDestroy(g->handle);
	g->handle = NULL;
}

static cudaDataType_t cuda_type(enum st_dtype dtype)
{
	return dtype == ST_DT_BF16 ? CUDA_R_16BF : CUDA_R_32F;
}

static long long dtype_bytes(enum st_dtype dtype)
{
	return dtype == ST_DT_BF16 ? 2 : 4;
}

/* The alignment every batch's pointer p + i stride keeps: their lowest set bit, at most 256. */
static int alignment(const void *p, long long stride_bytes)
{
	uintptr_t a = (uintptr_t)p | (uintptr_t)stride_bytes | 256;

	return (int)(a & -a);
}

/* FNV-1a over the key's bytes. */
static size_t key_hash(const struct gemm_key *k)
{
	const unsigned char *b = (const unsigned char *)k;
	uint64_t h = 14695981039346656037ull;

	for (size_t i = 0; i < sizeof(*k); i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return (size_t)h;
}

/* The slot holding k, or the empty one where it belongs. t->cap > 0. */
static struct gemm_plan *plans_find(const struct gemm_plans *t, const struct gemm_key *k)
{
	size_t i = key_hash(k) & (t->cap - 1);

	while (t->slot[i].used && memcmp(&t->slot[i].key, k, sizeof(*k)))
		i = (i + 1) & (t->cap - 1);
	return &t->slot[i];
}

static int plans_grow(struct gemm_plans *t)
{
	size_t cap = t->cap ? 2 * t->cap : 64;
	struct gemm_plans bigger = { calloc(cap, sizeof(struct gemm_plan)), cap, t->n, t->tuned };

	if (!bigger.slot)
		return error("out of host memory for the GEMM plans");
	for (size_t i = 0; i < t->cap; i++)
		if (t->slot[i].used)
			*plans_find(&bigger, &t->slot[i].key) = t->slot[i];
	free(t->slot);
	*t = bigger;
	return 0;
}

/* A column-major layout, strided-batched if batch > 1. */
static int layout_create(cublasLtMatrixLayout_t *l, enum st_dtype dtype, int rows, int cols,
			 int ld, int batch, long long stride)
{
	int32_t count = batch;
	int64_t offset = stride;

	if (CUBLAS_CHECK(cublasLtMatrixLayoutCreate(l, cuda_type(dtype), (uint64_t)rows,
						    (uint64_t)cols, ld)))
		return -1;
	if (batch > 1 &&
	    (CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
							   &count, sizeof(count))) ||
	     CUBLAS_CHECK(cublasLtMatrixLayoutSetAttribute(
		     *l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &offset, sizeof(offset)))))
		return -1;
	return 0;
}

/*
 * The heuristic's first algorithm for p under pref, and with gemm.tune its
 * next ones as candidates; none found marks p legacy.
 */
static int plan_pick(const struct gemm *g, struct gemm_plan *p, cublasLtMatmulPreference_t pref)
{
	const struct gemm_key *k = &p->key;
	uint64_t ws = g->workspace_bytes;
	uint32_t align_a = k->align[1], align_b = k->align[0], align_c = k->align[2];
	cublasLtMatmulHeuristicResult_t res[GEMM_TUNE_MAX];
	int found = 0, want = g->tune > 1 ? g->tune : 1;
	cublasStatus_t s;

	if (CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
		    pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws, sizeof(ws))) ||
	    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
		    pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &align_a, sizeof(align_a))) ||
	    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
		    pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &align_b, sizeof(align_b))) ||
	    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
		    pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &align_c, sizeof(align_c))) ||
	    CUBLAS_CHECK(cublasLtMatmulPreferenceSetAttribute(
		    pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &align_c, sizeof(align_c))))
		return -1;
	s = cublasLtMatmulAlgoGetHeuristic(g->lt, p->op, p->a, p->b, p->c, p->c, pref, want, res,
					   &found);
	if (s == CUBLAS_STATUS_NOT_SUPPORTED || (s == CUBLAS_STATUS_SUCCESS && found == 0)) {
		p->legacy = true;
		return 0;
	}
	if (cublas_check_at(s, "cublasLtMatmulAlgoGetHeuristic", __FILE__, __LINE__))
		return -1;
	p->algo = res[0].algo;
	for (int i = 0; found > 1 && i < found; i++)
		if (res[i].state == CUBLAS_STATUS_SUCCESS)
			p->cand[p->ncand++] = res[i].algo;
	return 0;
}

/*
 * STEPTRACE_GEMM_TUNE: the plan's candidates timed on this product's own
 * operands (a warm-up and three runs each, CUDA events on the gemm's
 * stream), the fastest kept for every later product of the plan. Only where
 * running it again changes nothing (D = alpha A B + beta C with C not D, or
 * beta 0) and the stream is not being captured into a graph; otherwise the
 * plan keeps the heuristic's first until such a product comes. A candidate
 * that fails to launch is passed over.
 */
static void plan_tune(const struct gemm *g, struct gemm_plan *p, const float *alpha,
		      const void *A, const void *B, const float *beta, const void *C, void *D)
{
	enum cudaStreamCaptureStatus cs;
	cudaEvent_t e0 = NULL, e1 = NULL;
	float best = INFINITY;

	if (cudaStreamIsCapturing(g->stream, &cs) != cudaSuccess ||
	    cs != cudaStreamCaptureStatusNone || cudaEventCreate(&e0) != cudaSuccess ||
	    cudaEventCreate(&e1) != cudaSuccess)
		goto out;
	for (int i = 0; i < p->ncand; i++) {
		float ms = 0.0f;
		int ok = cublasLtMatmul(g->lt, p->op, alpha, B, p->a, A, p->b, beta, C, p->c, D,
					p->c, &p->cand[i], g->workspace, g->workspace_bytes,
					g->stream) == CUBLAS_STATUS_SUCCESS &&
			 cudaEventRecord(e0, g->stream) == cudaSuccess;
		for (int r = 0; ok && r < 3; r++)
			ok = cublasLtMatmul(g->lt, p->op, alpha, B, p->a, A, p->b, beta, C, p->c, D,
					    p->c, &p->cand[i], g->workspace, g->workspace_bytes,
					    g->stream) == CUBLAS_STATUS_SUCCESS;
		if (ok && cudaEventRecord(e1, g->stream) == cudaSuccess &&
		    cudaEventSynchronize(e1) == cudaSuccess &&
		    cudaEventElapsedTime(&ms, e0, e1) == cudaSuccess && ms < best) {
			best = ms;
			p->algo = p->cand[i];
		}
	}
	p->ncand = 0;
	g->plans->tuned++;
out:
	if (e0)
		cudaEventDestroy(e0);
	if (e1)
		cudaEventDestroy(e1);
}

/*
 * p's descriptors and algorithm from its key, in the column-major terms of
 * gemm_rm. On failure the caller still plan_destroy()s p.
 */
static int plan_build(const struct gemm *g, struct gemm_plan *p)
{
	const struct gemm_key *k = &p->key;
	cublasOperation_t ob = k->trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t oa = k->trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasLtMatmulPreference_t pref;
	int rc;

	if (CUBLAS_CHECK(cublasLtMatmulDescCreate(&p->op, g->compute, CUDA_R_32F)) ||
	    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSA, &ob,
							sizeof(ob))) ||
	    CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(p->op, CUBLASLT_MATMUL_DESC_TRANSB, &oa,
							sizeof(oa))) ||
	    (k->sms > 0 && CUBLAS_CHECK(cublasLtMatmulDescSetAttribute(
				   p->op, CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, &k->sms, sizeof(k->sms)))))
		return -1;
	if (layout_create(&p->a, k->ab_dtype, k->trans_b ? k->K : k->N, k->trans_b ? k->N : k->K,
			  k->ld[1], k->batch, k->stride[1]) ||
	    layout_create(&p->b, k->ab_dtype, k->trans_a ? k->M : k->K, k->trans_a ? k->K : k->M,
			  k->ld[0], k->batch, k->stride[0]) ||
	    layout_create(&p->c, k->c_dtype, k->N, k->M, k->ld[2], k->batch, k->stride[2]))
		return -1;
	if (CUBLAS_CHECK(cublasLtMatmulPreferenceCreate(&pref)))
		return -1;
	rc = plan_pick(g, p, pref);
	cublasLtMatmulPreferenceDestroy(pref);
	return rc;
}

/* The plan for k, built and cached on first use; NULL on failure. */
static struct gemm_plan *plan_get(const struct gemm *g, const struct gemm_key *k)
{
	struct gemm_plans *t = g->plans;
	struct gemm_plan *p, fresh;

	if (t->cap) {
		p = plans_find(t, k);
		if (p->used)
			return p;
	}
	if (2 * (t->n + 1) > t->cap && plans_grow(t))
		return NULL;
	memset(&fresh, 0, sizeof(fresh));
	fresh.key = *k;
	if (plan_build(g, &fresh)) {
		plan_destroy(&fresh);
		return NULL;
	}
	fresh.used = true;
	p = plans_find(t, k);
	*p = fresh;
	t->n++;
	return p;
}

/* gemm_rm through cuBLAS's own heuristic at every call: the products cuBLASLt has no plan for. */
static int gemm_legacy(const struct gemm *g, bool trans_a, bool trans_b, int M, int N, int K,
		       float alpha, const void *A, int lda, long long sA, const void *B, int ldb,
		       long long sB, enum st_dtype ab_dtype, float beta, void *C, int ldc,
		       long long sC, enum st_dtype c_dtype, int batch)
{
	cublasOperation_t ob = trans_b ? CUBLAS_OP_T : CUBLAS_OP_N;
	cublasOperation_t oa = trans_a ? CUBLAS_OP_T : CUBLAS_OP_N;
	cudaDataType_t tab = cuda_type(ab_dtype), tc = cuda_type(c_dtype);

	if (batch <= 1)
		return CUBLAS_CHECK(cublasGemmEx(g->handle, ob, oa, N, M, K, &alpha, B, tab, ldb, A,
						 tab, lda, &beta, C, tc, ldc, g->compute,
						 CUBLAS_GEMM_DEFAULT));
	return CUBLAS_CHECK(cublasGemmStridedBatchedEx(g->handle, ob, oa, N, M, K, &alpha, B, tab,
						       ldb, sB, A, tab, lda, sA, &beta, C, tc, ldc,
						       sC, batch, g->compute, CUBLAS_GEMM_DEFAULT));
}

/*
 * Row-major C = op(A) op(B) is column-major C^T = op(B)^T op(A)^T, and a
 * row-major matrix read column-major is its own transpose: so B goes first,
 * A second, with their transposition flags unchanged and M, N swapped.
 * The output D is C (in place) or, for gemm_rm_add, another matrix of C's
 * layout. Empty products take the legacy path, which defines what they do
 * (nothing, or C = beta C when K is 0).
 */
static int gemm_rm_to(const struct gemm *g, bool trans_a, bool trans_b, int M, int N, int K,
		      float alpha, const void *A, int lda, long long sA, const void *B, int ldb,
		      long long sB, enum st_dtype ab_dtype, float beta, const void *C, void *D,
		      int ldc, long long sC, enum st_dtype c_dtype, int batch)
{
	bool batched = batch > 1;
	struct gemm_key k;
	struct gemm_plan *p;

	if (C != D && (M <= 0 || N <= 0 || K <= 0)) {
		/* the legacy path works in place: D = C first, then D += A B */
		if (CUDA_CHECK(cudaMemcpy2DAsync(D, (size_t)ldc * dtype_bytes(c_dtype), C,
						 (size_t)ldc * dtype_bytes(c_dtype),
						 (size_t)N * dtype_bytes(c_dtype), (size_t)M,
						 cudaMemcpyDeviceToDevice, g->stream)))
			return -1;
		C = D;
	}
	if (M <= 0 || N <= 0 || K <= 0)
		return gemm_legacy(g, trans_a, trans_b, M, N, K, alpha, A, lda, sA, B, ldb, sB,
				   ab_dtype, beta, D, ldc, sC, c_dtype, batch);
	memset(&k, 0, sizeof(k));
	k.M = M, k.N = N, k.K = K;
	k.ld[0] = lda, k.ld[1] = ldb, k.ld[2] = ldc;
	k.batch = batched ? batch : 1;
	if (batched)
		k.stride[0] = sA, k.stride[1] = sB, k.stride[2] = sC;
	k.trans_a = trans_a, k.trans_b = trans_b;
	k.ab_dtype = ab_dtype, k.c_dtype = c_dtype;
	k.beta_zero = beta == 0.0f;
	k.sms = g->sm_target;
	k.align[0] = alignment(A, k.stride[0] * dtype_bytes(ab_dtype));
	k.align[1] = alignment(B, k.stride[1] * dtype_bytes(ab_dtype));
	k.align[2] = alignment((const void *)((uintptr_t)C | (uintptr_t)D),
			       k.stride[2] * dtype_bytes(c_dtype));

	p = plan_get(g, &k);
	if (!p)
		return -1;
	if (p->legacy) {
		if (C != D && CUDA_CHECK(cudaMemcpy2DAsync(D, (size_t)ldc * dtype_bytes(c_dtype), C,
							   (size_t)ldc * dtype_bytes(c_dtype),
							   (size_t)N * dtype_bytes(c_dtype),
							   (size_t)M, cudaMemcpyDeviceToDevice,
							   g->stream)))
			return -1;
		return gemm_legacy(g, trans_a, trans_b, M, N, K, alpha, A, lda, sA, B, ldb, sB,
				   ab_dtype, beta, D, ldc, sC, c_dtype, batch);
	}
	if (p->ncand > 1 && (beta == 0.0f || C != D))
		plan_tune(g, p, &alpha, A, B, &beta, C, D);
	return CUBLAS_CHECK(cublasLtMatmul(g->lt, p->op, &alpha, B, p->a, A, p->b, &beta, C, p->c,
					   D, p->c, &p->algo, g->workspace, g->workspace_bytes,
					   g->stream));
}

int gemm_rm(const struct gemm *g, bool trans_a, bool trans_b, int M, int N, int K, float alpha,
	    const void *A, int lda, long long sA, const void *B, int ldb, long long sB,
	    enum st_dtype ab_dtype, float beta, void *C, int ldc, long long sC,
	    enum st_dtype c_dtype, int batch)
{
	return gemm_rm_to(g, trans_a, trans_b, M, N, K, alpha, A, lda, sA, B, ldb, sB, ab_dtype,
			  beta, C, C, ldc, sC, c_dtype, batch);
}

int gemm_rm_add(const struct gemm *g, bool trans_a, bool trans_b, int M, int N, int K,
		const void *A, int lda, const void *B, int ldb, enum st_dtype ab_dtype,
		const void *C, void *D, int ldc, enum st_dtype c_dtype)
{
	return gemm_rm_to(g, trans_a, trans_b, M, N, K, 1.0f, A, lda, 0, B, ldb, 0, ab_dtype, 1.0f,
			  C, D, ldc, 0, c_dtype, 1);
}

int gemm_tuned(const struct gemm *g)
{
	return g->plans ? g->plans->tuned : 0;
}

int gemm_attention(const struct gemm *g, enum attn_gemm kind, int bh, int T, int dh,
		   enum st_dtype dtype, void *out, const void *x, const void *y)
{
	long long td = (long long)T * dh, tt = (long long)T * T;

	switch (kind) {
	case S_QK:
	case DP_DOV:
		return gemm_rm(g, false, true, T, T, dh, 1.0f, x, dh, td, y, dh, td, dtype, 0.0f, out,
			       T, tt, dtype, bh);
	case O_PV:
	case DQ_DSK:
		return gemm_rm(g, false, false, T, dh, T, 1.0f, x, T, tt, y, dh, td, dtype, 0.0f, out,
			       dh, td, dtype, bh);
	case DV_PDO:
	case DK_DSQ:
		return gemm_rm(g, true, false, T, dh, T, 1.0f, x, T, tt, y, dh, td, dtype, 0.0f, out,
			       dh, td, dtype, bh);
	}
	return -1;
}
