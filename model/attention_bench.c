/* attention_bench.c: see attention_bench.h. */
#include "model/attention_bench.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels/cast.h"
#include "kernels/flash_attention.h"
#include "kernels/init.h"
#include "kernels/softmax.h"
#include "lib/error.h"
#include "lib/gpu_check.h"
#include "lib/stats.h"
#include "model/alloc.h"
#include "model/gemm.h"
#include "model/ops.h"

#define CUBLAS_WORKSPACE_BYTES (32u << 20)   /* as the model's */
#define MIB (1024.0 * 1024.0)

/* Returns what failed: MODEL_OOM, or MODEL_ERROR after its error line. */
#define TRY(x)                          \
	do {                            \
		int rc_ = (x);          \
		if (rc_)                \
			return rc_;     \
	} while (0)

/* What lives through the sweep. */
struct sweep {
	const struct attn_bench_opts *o;
	cudaStream_t stream;
	cudaEvent_t ev[3];            /* iteration start, after the forward, after the backward */
	struct op_registry ops;       /* every configuration's ops, ids dense over the sweep */
	uint32_t step;                /* the next step's index */
};

/* Blocks of one configuration. */
enum blk {
	B_CUBLAS, B_Q, B_K, B_V, B_DOUT, B_INIT,   /* setup: workspace, inputs, their F32 draft */
	B_S, B_P, B_O, B_LSE, B_DP, B_FWS,         /* forward and backward */
	B_DQ, B_DK, B_DV, B_COUNT
};

/* One configuration. */
struct run {
	const struct attn_config *c;
	char name[96];
	struct attn_shape s;
	enum st_dtype dt;
	int bh, t, d;
	float scale;
	uint32_t op_setup, fwd[ATTN_PARTS], bwd[ATTN_PARTS];
	struct model_alloc alloc;
	bool alloc_ready;
	struct gemm gemm;
	bool gemm_ready;
	struct mem_block b[B_COUNT];
	uint32_t first_step, n_steps;
};

int attn_bench_check(const struct attn_config *c, size_t n)
{
	char why[96], name[96];

	for (size_t i = 0; i < n; i++)
		if (c[i].impl == ST_ATTN_FLASH &&
		    !flash_attention_supported(c[i].d_head, attn_config_dtype(&c[i]), why, sizeof(why)))
			return error("flash cannot run '%s': %s", attn_config_name(&c[i], name, sizeof(name)),
				     why);
	return 0;
}

/* ---- ops -------------------------------------------------------------- */

static uint32_t reg_part(struct sweep *sw, struct run *r, enum attn_part part, bool bwd)
{
	const char *phase = bwd ? "backward" : "forward";
	struct attn_cost k = attn_part_cost(&r->s, part, bwd);
	uint8_t A = (uint8_t)r->dt, F = ST_DT_F32;
	uint8_t in[6], out[3];
	int n_in = 0, n_out = 0;
	char path[192];

	switch (part) {
	case ATTN_SCORES:
	case ATTN_AV:
		n_in = bwd ? 3 : 2, n_out = bwd ? 2 : 1;
		break;
	case ATTN_SOFTMAX:
		n_in = bwd ? 2 : 1, n_out = 1;
		break;
	case ATTN_FLASH:
		n_in = bwd ? 6 : 3, n_out = bwd ? 3 : 2;
		break;
	case ATTN_PARTS:
		break;
	}
	for (int i = 0; i < n_in; i++)
		in[i] = A;
	for (int i = 0; i < n_out; i++)
		out[i] = A;
	if (part == ATTN_FLASH && bwd)
		in[5] = F;            /* lse */
	else if (part == ATTN_FLASH)
		out[1] = F;
	snprintf(path, sizeof(path), "%s/%s/attn/%s", r->name, phase, attn_part_names[part]);
	return op_registry_add(&sw->ops, path, phase, k.flops, k.bytes, n_in, in, n_out, out);
}

/* The configuration's ops, in the order they run. 0, or -1 after an error line. */
static int reg_ops(struct sweep *sw, struct run *r)
{
	char path[128];

	snprintf(path, sizeof(path), "%s/inputs", r->name);
	if (!(r->op_setup = op_registry_add(&sw->ops, path, "setup", 0, 0, 0, NULL, 0, NULL)))
		return -1;
	if (r->c->impl == ST_ATTN_FLASH) {
		if (!(r->fwd[ATTN_FLASH] = reg_part(sw, r, ATTN_FLASH, false)) ||
		    !(r->bwd[ATTN_FLASH] = reg_part(sw, r, ATTN_FLASH, true)))
			return -1;
		return 0;
	}
	for (int p = ATTN_SCORES; p <= ATTN_AV; p++)
		if (!(r->fwd[p] = reg_part(sw, r, p, false)))
			return -1;
	for (int p = ATTN_AV; p >= ATTN_SCORES; p--)
		if (!(r->bwd[p] = reg_part(sw, r, p, true)))
			return -1;
	return 0;
}

/* ---- setup and teardown ----------------------------------------------- */

static int get(struct run *r, enum blk k, uint64_t bytes, int category)
{
	return mem_get(&r->alloc, &r->b[k], bytes, category);
}

static void put(struct run *r, enum blk k)
{
	mem_put(&r->alloc, &r->b[k]);
}

/* Random N(0, 1) values (cut at 3 sigma) into an input block, through an F32 draft under BF16. */
static int fill_input(struct sweep *sw, struct run *r, enum blk k, uint64_t seed)
{
	long long n = (long long)r->bh * r->t * r->d;
	float *dst = r->dt == ST_DT_F32 ? r->b[k].ptr : r->b[B_INIT].ptr;

	TRY(CUDA_CHECK(init_trunc_normal(dst, n, 1.0f, 3.0f, seed, sw->stream)));
	if (r->dt == ST_DT_BF16)
		TRY(CUDA_CHECK(cast_f32_to_bf16(r->b[k].ptr, dst, n, sw->stream)));
	return MODEL_OK;
}

static int setup(struct sweep *sw, struct run *r, uint64_t seed)
{
	uint64_t td = (uint64_t)r->bh * r->t * r->d, a = r->s.a;
	static const enum blk inputs[] = { B_Q, B_K, B_V, B_DOUT };

	if (r->c->impl == ST_ATTN_NAIVE) {
		TRY(get(r, B_CUBLAS, CUBLAS_WORKSPACE_BYTES, ST_MEM_WORKSPACE));
		if (gemm_init(&r->gemm, sw->stream, r->c->precision, r->b[B_CUBLAS].ptr,
			      r->b[B_CUBLAS].size)) {
			gemm_release(&r->gemm);
			return MODEL_ERROR;
		}
		r->gemm_ready = true;
	}
	for (int i = 0; i < 4; i++)
		TRY(get(r, inputs[i], td * a, ST_MEM_INPUT));
	if (r->dt == ST_DT_BF16)
		TRY(get(r, B_INIT, td * sizeof(float), ST_MEM_TEMPORARY));
	for (int i = 0; i < 4; i++)
		TRY(fill_input(sw, r, inputs[i], seed * 4 + (uint64_t)i));
	put(r, B_INIT);
	return MODEL_OK;
}

/* Gives every block back and the pool to the device; the allocator's observer sees each free. */
static void teardown(struct sweep *sw, struct run *r)
{
	if (!r->alloc_ready)
		return;
	op_range_push(&sw->ops, r->name);
	op_begin(&sw->ops, r->op_setup);
	cudaStreamSynchronize(sw->stream);
	for (int k = 0; k < B_COUNT; k++)
		if (k != B_CUBLAS)
			put(r, k);
	if (r->gemm_ready)
		gemm_release(&r->gemm);     /* before its workspace goes */
	r->gemm_ready = false;
	put(r, B_CUBLAS);
	op_ranges_unwind(&sw->ops, 0);
	model_alloc_release(&r->alloc);
	r->alloc_ready = false;
	cudaGetLastError();
}

/* ---- one iteration ------------------------------------------------------ */

static int naive_forward(struct sweep *sw, struct run *r)
{
	uint64_t tt = (uint64_t)r->bh * r->t * r->t, td = (uint64_t)r->bh * r->t * r->d, a = r->s.a;
	struct mem_block *b = r->b;

	op_begin(&sw->ops, r->fwd[ATTN_SCORES]);
	TRY(get(r, B_S, tt * a, ST_MEM_TEMPORARY));
	TRY(gemm_attention(&r->gemm, S_QK, r->bh, r->t, r->d, r->dt, b[B_S].ptr, b[B_Q].ptr,
			   b[B_K].ptr) ? MODEL_ERROR : MODEL_OK);
	op_end(&sw->ops);

	op_begin(&sw->ops, r->fwd[ATTN_SOFTMAX]);
	TRY(get(r, B_P, tt * a, ST_MEM_ACTIVATION));
	TRY(CUDA_CHECK(attn_softmax_forward(b[B_P].ptr, b[B_S].ptr, r->bh, r->t, r->scale,
					    r->c->causal, r->dt, sw->stream)));
	put(r, B_S);
	op_end(&sw->ops);

	op_begin(&sw->ops, r->fwd[ATTN_AV]);
	TRY(get(r, B_O, td * a, ST_MEM_ACTIVATION));
	TRY(gemm_attention(&r->gemm, O_PV, r->bh, r->t, r->d, r->dt, b[B_O].ptr, b[B_P].ptr,
			   b[B_V].ptr) ? MODEL_ERROR : MODEL_OK);
	op_end(&sw->ops);
	return MODEL_OK;
}

static int naive_backward(struct sweep *sw, struct run *r)
{
	uint64_t tt = (uint64_t)r->bh * r->t * r->t, td = (uint64_t)r->bh * r->t * r->d, a = r->s.a;
	struct mem_block *b = r->b;

	op_begin(&sw->ops, r->bwd[ATTN_AV]);
	TRY(get(r, B_DP, tt * a, ST_MEM_TEMPORARY));
	TRY(gemm_attention(&r->gemm, DP_DOV, r->bh, r->t, r->d, r->dt, b[B_DP].ptr, b[B_DOUT].ptr,
			   b[B_V].ptr) ? MODEL_ERROR : MODEL_OK);
	TRY(get(r, B_DV, td * a, ST_MEM_GRADIENT));
	TRY(gemm_attention(&r->gemm, DV_PDO, r->bh, r->t, r->d, r->dt, b[B_DV].ptr, b[B_P].ptr,
			   b[B_DOUT].ptr) ? MODEL_ERROR : MODEL_OK);
	op_end(&sw->ops);

	op_begin(&sw->ops, r->bwd[ATTN_SOFTMAX]);
	TRY(CUDA_CHECK(attn_softmax_backward(b[B_DP].ptr, b[B_DP].ptr, b[B_P].ptr, r->bh, r->t,
					     r->scale, r->c->causal, r->dt, sw->stream)));
	put(r, B_P);
	op_end(&sw->ops);

	op_begin(&sw->ops, r->bwd[ATTN_SCORES]);
	TRY(get(r, B_DQ, td * a, ST_MEM_GRADIENT));
	TRY(gemm_attention(&r->gemm, DQ_DSK, r->bh, r->t, r->d, r->dt, b[B_DQ].ptr, b[B_DP].ptr,
			   b[B_K].ptr) ? MODEL_ERROR : MODEL_OK);
	TRY(get(r, B_DK, td * a, ST_MEM_GRADIENT));
	TRY(gemm_attention(&r->gemm, DK_DSQ, r->bh, r->t, r->d, r->dt, b[B_DK].ptr, b[B_DP].ptr,
			   b[B_Q].ptr) ? MODEL_ERROR : MODEL_OK);
	put(r, B_DP);
	put(r, B_O);
	op_end(&sw->ops);
	return MODEL_OK;
}

static int flash_forward(struct sweep *sw, struct run *r)
{
	uint64_t td = (uint64_t)r->bh * r->t * r->d;
	struct mem_block *b = r->b;

	op_begin(&sw->ops, r->fwd[ATTN_FLASH]);
	TRY(get(r, B_O, td * r->s.a, ST_MEM_ACTIVATION));
	TRY(get(r, B_LSE, (uint64_t)r->bh * r->t * sizeof(float), ST_MEM_ACTIVATION));
	TRY(CUDA_CHECK(flash_attention_forward(b[B_O].ptr, b[B_LSE].ptr, b[B_Q].ptr, b[B_K].ptr,
					       b[B_V].ptr, r->bh, r->t, r->d, r->scale,
					       r->c->causal, r->dt, sw->stream)));
	op_end(&sw->ops);
	return MODEL_OK;
}

static int flash_backward(struct sweep *sw, struct run *r)
{
	uint64_t td = (uint64_t)r->bh * r->t * r->d;
	struct mem_block *b = r->b;

	op_begin(&sw->ops, r->bwd[ATTN_FLASH]);
	TRY(get(r, B_FWS, flash_attention_backward_workspace(r->bh, r->t, r->d), ST_MEM_WORKSPACE));
	TRY(get(r, B_DQ, td * r->s.a, ST_MEM_GRADIENT));
	TRY(get(r, B_DK, td * r->s.a, ST_MEM_GRADIENT));
	TRY(get(r, B_DV, td * r->s.a, ST_MEM_GRADIENT));
	TRY(CUDA_CHECK(flash_attention_backward(b[B_DQ].ptr, b[B_DK].ptr, b[B_DV].ptr,
						b[B_DOUT].ptr, b[B_Q].ptr, b[B_K].ptr, b[B_V].ptr,
						b[B_O].ptr, b[B_LSE].ptr, b[B_FWS].ptr, r->bh, r->t,
						r->d, r->scale, r->c->causal, r->dt, sw->stream)));
	put(r, B_FWS);
	put(r, B_LSE);
	put(r, B_O);
	op_end(&sw->ops);
	return MODEL_OK;
}

/* The forward, then the backward, each in its NVTX range; *before: live bytes between them. */
static int iteration(struct sweep *sw, struct run *r, uint64_t *before)
{
	bool flash = r->c->impl == ST_ATTN_FLASH;

	TRY(CUDA_CHECK(cudaEventRecord(sw->ev[0], sw->stream)));
	op_range_push(&sw->ops, "forward");
	op_range_push(&sw->ops, "attn");
	TRY(flash ? flash_forward(sw, r) : naive_forward(sw, r));
	op_range_pop(&sw->ops);
	op_range_pop(&sw->ops);
	TRY(CUDA_CHECK(cudaEventRecord(sw->ev[1], sw->stream)));
	*before = r->alloc.live;
	op_range_push(&sw->ops, "backward");
	op_range_push(&sw->ops, "attn");
	TRY(flash ? flash_backward(sw, r) : naive_backward(sw, r));
	op_range_pop(&sw->ops);
	op_range_pop(&sw->ops);
	/* the gradients, as PyTorch's .grad = None before the next iteration */
	put(r, B_DQ);
	put(r, B_DK);
	put(r, B_DV);
	TRY(CUDA_CHECK(cudaEventRecord(sw->ev[2], sw->stream)));
	return MODEL_OK;
}

/* A configuration stopped by o->stop before its last iteration. */
#define RUN_STOPPED 2

/* One configuration's outcome. */
struct result {
	int status;                 /* MODEL_OK, MODEL_OOM, MODEL_ERROR, RUN_STOPPED */
	struct model_oom oom;
	struct real_stats fwd, bwd;
	uint64_t before, peak;
};

static double event_ms(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0.0f;

	return cudaEventElapsedTime(&ms, a, b) == cudaSuccess ? ms : NAN;
}

/* Warm-up and measured iterations, each a step for the observer. */
static int iterate(struct sweep *sw, struct run *r, double *fwd, double *bwd, uint64_t *before)
{
	const struct attn_bench_opts *o = sw->o;
	const struct model_observer *obs = sw->ops.obs;
	int rc = MODEL_OK;

	for (int i = 0; i < o->warmup + o->steps && rc == MODEL_OK; i++) {
		int k = i - o->warmup;
		uint32_t index = sw->step++;

		if (o->stop && *o->stop)
			break;
		if (obs)
			obs->step_begin(obs->ctx, index, k < 0);
		r->n_steps++;
		op_range_push(&sw->ops, r->name);
		rc = iteration(sw, r, before);
		op_ranges_unwind(&sw->ops, 0);
		if (rc != MODEL_OK)      /* what the failed iteration held goes back inside its step */
			for (int b = B_S; b < B_COUNT; b++)
				put(r, b);
		if (CUDA_CHECK(cudaStreamSynchronize(sw->stream)))
			rc = MODEL_ERROR;
		if (obs)
			obs->step_end(obs->ctx, index, k < 0);
		if (rc == MODEL_OK && k >= 0) {
			fwd[k] = event_ms(sw->ev[0], sw->ev[1]);
			bwd[k] = event_ms(sw->ev[1], sw->ev[2]);
		}
	}
	return rc;
}

static void run_config(struct sweep *sw, struct run *r, uint64_t seed, struct result *res)
{
	const struct attn_bench_opts *o = sw->o;
	double *v = calloc(2 * (size_t)o->steps, sizeof(double));
	int rc;

	memset(res, 0, sizeof(*res));
	if (!v) {
		res->status = error("out of memory");
		return;
	}
	r->first_step = sw->step;
	if (model_alloc_init(&r->alloc, sw->stream, &sw->ops)) {
		res->status = MODEL_ERROR;
		free(v);
		return;
	}
	r->alloc_ready = true;
	op_range_push(&sw->ops, r->name);
	op_begin(&sw->ops, r->op_setup);
	rc = setup(sw, r, seed);
	op_ranges_unwind(&sw->ops, 0);
	if (rc == MODEL_OK && CUDA_CHECK(cudaStreamSynchronize(sw->stream)))
		rc = MODEL_ERROR;
	if (rc == MODEL_OK)
		rc = iterate(sw, r, v, v + o->steps, &res->before);
	if (rc == MODEL_OK && r->n_steps < (uint32_t)(o->warmup + o->steps))
		rc = RUN_STOPPED;        /* interrupted: no row of numbers */
	res->status = rc;
	if (rc == MODEL_OOM)
		res->oom = r->alloc.oom;
	res->peak = r->alloc.peak;
	if (rc == MODEL_OK) {
		real_stats_compute(v, (size_t)o->steps, &res->fwd);
		real_stats_compute(v + o->steps, (size_t)o->steps, &res->bwd);
	}
	teardown(sw, r);
	free(v);
}

/* ---- the table --------------------------------------------------------- */

static void columns(struct table *t, bool steps)
{
	static const char *const ints[] = { "batch", "heads", "d_head", "seq" };
	static const char *const floats[] = {
		"forward_ms", "forward_std", "backward_ms", "backward_std", "forward_median_ms",
		"backward_median_ms", "forward_tflops", "backward_tflops", "before_backward_mib",
		"peak_mib",
	};

	table_add_column(t, "impl", COL_STR, 0);
	table_add_column(t, "precision", COL_STR, 0);
	for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++)
		table_add_column(t, ints[i], COL_INT, 0);
	table_add_column(t, "causal", COL_STR, 0);
	for (size_t i = 0; i < sizeof(floats) / sizeof(floats[0]); i++)
		table_add_column(t, floats[i], COL_FLOAT, strstr(floats[i], "tflops") ? 1 :
				 strstr(floats[i], "mib") ? 1 : 3);
	table_add_column(t, "status", COL_STR, 0);
	if (steps)
		table_add_column(t, "steps", COL_STR, 0);
}

static void row(struct table *t, struct report *rep, const struct run *r, const struct result *res,
		bool steps)
{
	const struct attn_config *c = r->c;
	char buf[64];

	table_row(t);
	table_str(t, st_name(st_attention_names, c->impl));
	table_str(t, st_name(st_precision_names, c->precision));
	table_int(t, c->batch);
	table_int(t, c->heads);
	table_int(t, c->d_head);
	table_int(t, c->seq);
	table_str(t, c->causal ? "yes" : "no");
	if (res->status == MODEL_OK) {
		table_float(t, res->fwd.mean);
		table_float(t, res->fwd.stddev);
		table_float(t, res->bwd.mean);
		table_float(t, res->bwd.stddev);
		table_float(t, res->fwd.median);
		table_float(t, res->bwd.median);
		table_float(t, attn_useful_flops(&r->s, false) / (res->fwd.mean * 1e9));
		table_float(t, attn_useful_flops(&r->s, true) / (res->bwd.mean * 1e9));
		table_float(t, res->before / MIB);
	} else {
		for (int i = 0; i < 9; i++)
			table_empty(t);
	}
	if (res->status == MODEL_ERROR)
		table_empty(t);
	else
		table_float(t, res->peak / MIB);
	table_str(t, res->status == MODEL_OK ? "ok" : res->status == MODEL_OOM ? "OOM" :
		     res->status == RUN_STOPPED ? "interrupted" : "error");
	if (steps) {
		if (r->n_steps)
			snprintf(buf, sizeof(buf), "%u-%u", r->first_step, r->first_step + r->n_steps - 1);
		else
			buf[0] = '\0';
		table_str(t, buf);
	}
	if (res->status == MODEL_OOM)
		report_note(rep, "%s: OOM: %.1f MiB (%s) requested by '%s' with %.1f MiB live of %.2f GiB",
			    r->name, res->oom.requested / MIB, st_mem_category_name(res->oom.category),
			    res->oom.op, res->oom.live / MIB, res->oom.capacity / (1024.0 * MIB));
}

/*
 * Which kernels flash ran on this device, per kernel family: "flash: sm90
 * (Hopper: ...) at bf16 d_head 64, 128; simt (...) at fp32 d_head 64".
 */
static void flash_note(struct report *rep, const struct attn_bench_opts *o)
{
	static const struct { const char *name, *what; } fam[] = {
		{ "sm90", "Hopper kernels: wgmma, TMA, warp specialisation" },
		{ "fa2", "FlashAttention-2: mma.sync" },
		{ "simt", "FP32 on CUDA cores" },
	};
	char buf[512];

	for (size_t f = 0; f < sizeof(fam) / sizeof(fam[0]); f++) {
		size_t len = 0;
		for (size_t i = 0; i < o->n_configs; i++) {
			const struct attn_config *c = &o->configs[i];
			enum st_dtype dt = attn_config_dtype(c);
			bool seen = false;
			if (c->impl != ST_ATTN_FLASH ||
			    strcmp(flash_attention_kernels(c->d_head, dt), fam[f].name))
				continue;
			for (size_t j = 0; j < i && !seen; j++)
				seen = o->configs[j].impl == ST_ATTN_FLASH &&
				       o->configs[j].d_head == c->d_head &&
				       attn_config_dtype(&o->configs[j]) == dt;
			if (!seen && len < sizeof(buf) - 64)
				len += (size_t)snprintf(buf + len, sizeof(buf) - len, "%s%s d_head %d",
							len ? ", " : "", st_dtype_name(dt),
							c->d_head);
		}
		if (len)
			report_note(rep, "flash ran %s (%s) at %s", fam[f].name, fam[f].what, buf);
	}
}

static void notes(struct report *rep, const struct attn_bench_opts *o)
{
	report_note(rep, "%d warm-up and %d measured iterations per configuration; forward and "
		    "backward timed with device events (mean and std over the measured ones)",
		    o->warmup, o->steps);
	report_note(rep, "TFLOP/s count attention's useful FLOPs, the same for both implementations "
		    "and scripts/torch_attention.py: forward 4 B H T^2 d (halved when causal), "
		    "backward 2.5x that");
	report_note(rep, "memory: the allocator's live bytes when the backward starts (inputs q, k, "
		    "v, dout, what the forward saved, cuBLAS's 32 MiB workspace for naive) and "
		    "their peak; each configuration starts from an empty device pool");
	flash_note(rep, o);
}

static int sweep_init(struct sweep *sw, const struct attn_bench_opts *o)
{
	memset(sw, 0, sizeof(*sw));
	sw->o = o;
	op_registry_init(&sw->ops, o->obs);
	if (CUDA_CHECK(cudaStreamCreateWithFlags(&sw->stream, cudaStreamNonBlocking)))
		return -1;
	for (int i = 0; i < 3; i++)
		if (CUDA_CHECK(cudaEventCreate(&sw->ev[i])))
			return -1;
	return 0;
}

static void sweep_release(struct sweep *sw)
{
	for (int i = 0; i < 3; i++)
		if (sw->ev[i])
			cudaEventDestroy(sw->ev[i]);
	if (sw->stream)
		cudaStreamDestroy(sw->stream);
	op_registry_release(&sw->ops);
}

int attn_bench_run(const struct attn_bench_opts *o, struct report *rep,
		   struct attn_bench_totals *t)
{
	struct table *tab = report_add_table(rep, "attention",
					     "Attention benchmark (ms: mean and std over measured iterations)");
	bool steps = o->obs != NULL;
	struct sweep sw;
	int rc = 0;

	memset(t, 0, sizeof(*t));
	columns(tab, steps);
	if (sweep_init(&sw, o)) {
		sweep_release(&sw);
		return -1;
	}
	for (size_t i = 0; i < o->n_configs && !(o->stop && *o->stop); i++) {
		struct run r;
		struct result res;

		memset(&r, 0, sizeof(r));
		r.c = &o->configs[i];
		attn_config_name(r.c, r.name, sizeof(r.name));
		r.s = attn_config_shape(r.c);
		r.dt = attn_config_dtype(r.c);
		r.bh = r.c->batch * r.c->heads, r.t = r.c->seq, r.d = r.c->d_head;
		r.scale = (float)(1.0 / sqrt((double)r.d));
		fprintf(stderr, "bench attention: %s ...", r.name);
		fflush(stderr);
		if (reg_ops(&sw, &r)) {
			fprintf(stderr, "\n");
			rc = -1;
			break;
		}
		run_config(&sw, &r, o->seed + i, &res);
		if (res.status == MODEL_OK)
			fprintf(stderr, " forward %.3f ms, backward %.3f ms\n", res.fwd.mean,
				res.bwd.mean);
		else
			fprintf(stderr, " %s\n", res.status == MODEL_OOM ? "OOM" :
				res.status == RUN_STOPPED ? "interrupted" : "error");
		t->ooms += res.status == MODEL_OOM;
		t->errors += res.status == MODEL_ERROR;
		t->done += res.status == MODEL_OK || res.status == MODEL_OOM;
		row(tab, rep, &r, &res, steps);
	}
	t->steps = sw.step;
	notes(rep, o);
	sweep_release(&sw);
	return rc;
}
