/*
 * test_compiled.c: record/compiled.c, torch.compile's kernels under their
 * modules, without a GPU or PyTorch. The calls steptrace_torch.py makes are
 * made as a compiled GPT-like model's training loop makes them: the module
 * call of the model ("GPT"), in it a compiled graph's region "compiled_0"
 * with its table of kernel calls, and on a helper thread (autograd's) the
 * backward graph's region "compiled_1" under the chain the profiler's
 * CompiledFunctionBackward range gives it. The launches CUPTI would report
 * are put to the kernel hook capture.c calls (compiled_kernel_op): Triton
 * kernels by name (one used by two layers, one launched again at once as
 * autotuning does, one at two sites in a row), cuBLAS's and cuDNN's kernels
 * and a memset by the extern calls that follow (a GEMM by the one matrix
 * product among them), a site without a module, a range of the program's
 * inside the region, a graph launch, launches after the region and in a
 * region without a table. The bundle is read back: each launch's op has
 * the module path, kind and phase wanted, one op per module path per call.
 *
 *   test_compiled BUNDLE
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "record/compiled.h"
#include "record/nvtx.h"
#include "record/session.h"
#include "record/torch.h"
#include "replay/replay.h"
#include "tests/lib/check.h"
#include "trace/bundle.h"

#define BASE 1000000ull
#define STEPS 3
#define SAME 777777u    /* the op a launch comes with: "=" wants it back */

static uint64_t clock_ns = BASE + 500;
static _Atomic uint64_t seq = 100;

static uint64_t tick(void)
{
	return clock_ns += 1000;
}

static uint64_t fake_peek(void)
{
	return atomic_load(&seq);
}

static const char fwd_table[] =
	"triton_emb\t.\n"                                  /* 0: the embeddings' add, in GPT.forward */
	"triton_ln\ttransformer.h.0/ln_1\n"                /* 1 */
	"\ttransformer.h.0/attn/c_attn\n"                  /* 2: extern addmm, not marked */
	"\ttransformer.h.0/attn\n"                         /* 3: extern sdpa */
	"\ttransformer.h.0/attn/c_proj\n"                  /* 4: extern addmm, not marked */
	"triton_add_ln\ttransformer.h.0\n"                 /* 5: residual + ln_2 */
	"\ttransformer.h.0/mlp/c_fc\n"                     /* 6 */
	"triton_gelu\ttransformer.h.0/mlp/gelu\n"          /* 7 */
	"\ttransformer.h.0/mlp/c_proj\n"                   /* 8 */
	"triton_add_ln2\t\n"                               /* 9: no module known */
	"@mm\ttransformer.h.1/attn/c_attn\n"               /* 10: a matrix product ... */
	"\ttransformer.h.1/attn\n"                         /* 11: ... then the attention */
	"triton_cast\ttransformer.h.1/attn/c_proj\n"       /* 12 */
	"triton_cast\ttransformer.h.1/mlp/c_fc\n"          /* 13: the same kernel at the next site */
	"@mm\ttransformer.h.1/attn/c_proj\n"               /* 14 */
	"triton_add_ln\ttransformer.h.1\n"                 /* 15: the kernel of site 5 again */
	"@mm\ttransformer.h.1/mlp/c_fc\n"                  /* 16 */
	"triton_gelu\ttransformer.h.1/mlp/gelu\n"          /* 17 */
	"@mm\ttransformer.h.1/mlp/c_proj\n"                /* 18 */
	"triton_lnf\ttransformer.ln_f\n"                   /* 19 */
	"\tlm_head\n"                                      /* 20 */
	"triton_loss\t.";                                  /* 21: no newline at the end */

static const char bwd_table[] =
	"triton_loss_bwd\t.\n"
	"\tlm_head\n"
	"\tlm_head\n"
	"triton_lnf_bwd\ttransformer.ln_f\n"
	"\ttransformer.h.1/mlp/c_proj\n"
	"\ttransformer.h.1/mlp/c_proj\n"
	"triton_gelu_bwd\ttransformer.h.1/mlp/gelu\n"
	"\ttransformer.h.1/mlp/c_fc\n"
	"triton_gelu_bwd\ttransformer.h.0/mlp/gelu\n"
	"\ttransformer.h.0/mlp/c_fc\n";

/* A launch put to the hook and the path its op must have ("=": the op it came with). */
struct launch {
	const char *symbol;   /* NULL: a copy, unless graph */
	bool launch;
	const char *want;
};

static const struct launch fwd_launches[] = {
	{ "triton_emb", true, "step/forward/GPT" },
	{ NULL, false, "=" },                                  /* autotuning: copies between ... */
	{ "triton_emb", true, "step/forward/GPT" },             /* ... the same kernel: its site */
	{ NULL, false, "=" },
	{ "triton_emb", true, "step/forward/GPT" },
	{ "triton_ln", true, "step/forward/GPT/transformer.h.0/ln_1" },
	{ "nvjet_gemm_tn", true, "step/forward/GPT/transformer.h.0/attn" },   /* sites 2-4 */
	{ NULL, false, "step/forward/GPT/transformer.h.0/attn" },             /* cuDNN's memset */
	{ "cudnn_sdpa_fprop", true, "step/forward/GPT/transformer.h.0/attn" },
	{ "nvjet_gemm_tn", true, "step/forward/GPT/transformer.h.0/attn" },
	{ "triton_add_ln", true, "step/forward/GPT/transformer.h.0" },
	{ "nvjet_gemm_nn", true, "step/forward/GPT/transformer.h.0/mlp/c_fc" },
	{ "triton_gelu", true, "step/forward/GPT/transformer.h.0/mlp/gelu" },
	{ "nvjet_gemm_tn", true, "step/forward/GPT/transformer.h.0/mlp/c_proj" },
	{ "triton_add_ln2", true, "=" },                                      /* no module */
	{ "nvjet_gemm_tn", true, "step/forward/GPT/transformer.h.1/attn/c_attn" },   /* the GEMM */
	{ NULL, false, "step/forward/GPT/transformer.h.1/attn" },             /* the others */
	{ "cudnn_sdpa_fprop", true, "step/forward/GPT/transformer.h.1/attn" },
	{ "triton_cast", true, "step/forward/GPT/transformer.h.1/attn/c_proj" },
	{ "triton_cast", true, "step/forward/GPT/transformer.h.1/mlp/c_fc" },   /* its next site */
	{ "nvjet_gemm_tn", true, "step/forward/GPT/transformer.h.1/attn/c_proj" },
	{ "triton_add_ln", true, "step/forward/GPT/transformer.h.1" },        /* site 15, not 5 */
	{ "nvjet_gemm_nn", true, "step/forward/GPT/transformer.h.1/mlp/c_fc" },
	{ "triton_gelu", true, "step/forward/GPT/transformer.h.1/mlp/gelu" },
	{ "nvjet_gemm_tn", true, "step/forward/GPT/transformer.h.1/mlp/c_proj" },
	{ "triton_lnf", true, "step/forward/GPT/transformer.ln_f" },
	{ NULL, true, "=" },                                                   /* a graph launch */
	{ "nvjet_gemm_tn", true, "step/forward/GPT/lm_head" },
	{ "triton_loss", true, "step/forward/GPT" },
};

static const struct launch bwd_launches[] = {
	{ "triton_loss_bwd", true, "step/backward/GPT" },
	{ "nvjet_gemm_nt", true, "step/backward/GPT/lm_head" },
	{ "nvjet_gemm_tn", true, "step/backward/GPT/lm_head" },
	{ "triton_lnf_bwd", true, "step/backward/GPT/transformer.ln_f" },
	{ "nvjet_gemm_nt", true, "step/backward/GPT/transformer.h.1/mlp/c_proj" },
	{ "nvjet_gemm_tn", true, "step/backward/GPT/transformer.h.1/mlp/c_proj" },
	{ "triton_gelu_bwd", true, "step/backward/GPT/transformer.h.1/mlp/gelu" },
	{ "nvjet_gemm_nt", true, "step/backward/GPT/transformer.h.1/mlp/c_fc" },
	{ "triton_gelu_bwd", true, "step/backward/GPT/transformer.h.0/mlp/gelu" },   /* its next site */
	{ "nvjet_gemm_nt", true, "step/backward/GPT/transformer.h.0/mlp/c_fc" },
};

#define N_FWD (sizeof(fwd_launches) / sizeof(fwd_launches[0]))
#define N_BWD (sizeof(bwd_launches) / sizeof(bwd_launches[0]))
#define N_SEEN (STEPS * (N_FWD + N_BWD) + 16)

/* What each launch got, checked against the bundle's ops at the end. */
static struct { uint32_t op; const char *want; int step; } seen[N_SEEN];
static int n_seen, step_now;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;
static uint32_t fwd_id, bwd_id, plain_id;
static uint64_t gpt_seq;

static uint32_t put(const struct launch *l)
{
	uint32_t op = compiled_kernel_op(l->symbol, l->launch, SAME);

	pthread_mutex_lock(&seen_lock);
	if (n_seen < (int)N_SEEN) {
		seen[n_seen].op = op;
		seen[n_seen].want = l->want;
		seen[n_seen].step = step_now;
		n_seen++;
	}
	pthread_mutex_unlock(&seen_lock);
	return op;
}

static void forward(void)
{
	ranges_torch_phase(RANGES_PHASE_FORWARD, true, tick());
	ranges_torch_module(ranges_register("GPT"), tick());
	gpt_seq = atomic_fetch_add(&seq, 1);   /* CompiledFunction's autograd node, made in GPT's call */
	ranges_torch_module(fwd_id, tick());
	for (size_t i = 0; i < N_FWD; i++) {
		if (!strcmp(fwd_launches[i].want, "step/forward/GPT/transformer.ln_f")) {
			/* a range of the program's inside the region: its own op */
			ranges_push(NULL, "my_range", 0, tick());
			put(&(struct launch){ "triton_lnf", true, "=" });
			ranges_pop(NULL, tick());
		}
		put(&fwd_launches[i]);
		tick();
	}
	ranges_torch_module_end(tick());
	put(&(struct launch){ "triton_emb", true, "=" });   /* after the region */
	ranges_torch_module(plain_id, tick());              /* a region without a table */
	put(&(struct launch){ "triton_emb", true, "=" });
	ranges_torch_module_end(tick());
	ranges_torch_module_end(tick());
	ranges_torch_phase(RANGES_PHASE_FORWARD, false, tick());
}

/* autograd's thread, which lives on between backward calls as PyTorch's does: jobs come through these. */
static pthread_mutex_t job_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t job_cond = PTHREAD_COND_INITIALIZER;
static int jobs_posted, jobs_done;
static bool quit;

/* CompiledFunctionBackward's profiler range, and the backward graph's region in it. */
static void run_backward(void)
{
	char name[128];

	snprintf(name, sizeof(name), "CompiledFunctionBackward, seq = %llu, op_id = 9",
		 (unsigned long long)gpt_seq);
	ranges_push(NULL, name, 0, tick());
	ranges_torch_module(bwd_id, tick());
	for (size_t i = 0; i < N_BWD; i++) {
		put(&bwd_launches[i]);
		tick();
	}
	ranges_torch_module_end(tick());
	ranges_pop(NULL, tick());
}

static void *autograd_thread(void *arg)
{
	pthread_mutex_lock(&job_lock);
	for (;;) {
		while (!quit && jobs_done == jobs_posted)
			pthread_cond_wait(&job_cond, &job_lock);
		if (jobs_done == jobs_posted)
			break;
		pthread_mutex_unlock(&job_lock);
		run_backward();
		pthread_mutex_lock(&job_lock);
		jobs_done++;
		pthread_cond_broadcast(&job_cond);
	}
	pthread_mutex_unlock(&job_lock);
	return arg;
}

static void backward(void)
{
	ranges_torch_phase(RANGES_PHASE_BACKWARD, true, tick());
	ranges_torch_profiler(true);
	pthread_mutex_lock(&job_lock);
	jobs_posted++;
	pthread_cond_broadcast(&job_cond);
	while (jobs_done < jobs_posted)
		pthread_cond_wait(&job_cond, &job_lock);
	pthread_mutex_unlock(&job_lock);
	ranges_torch_profiler(false);
	ranges_torch_phase(RANGES_PHASE_BACKWARD, false, tick());
}

/* Tables the recorder must refuse or take once. */
static void check_register(void)
{
	uint32_t other = ranges_register("compiled_9");

	CHECK(compiled_register(other, "no tab on this line\n") < 0);
	CHECK(compiled_register(0, "triton_x\t.\n") < 0);
	CHECK(compiled_register(1u << 30, "triton_x\t.\n") < 0);   /* not a string id */
	CHECK(compiled_register(other, NULL) < 0);
	CHECK(compiled_register(fwd_id, fwd_table) == 0);
	CHECK(compiled_register(fwd_id, "triton_x\tsomething/else\n") == 0);   /* the first stands */
	CHECK(compiled_register(bwd_id, bwd_table) == 0);
}

static void check_bundle(const char *path)
{
	struct replay rp;
	size_t kinds = 0;

	CHECK(replay_load(&rp, path, NULL) == 0);
	for (int i = 0; i < n_seen; i++) {
		const struct replay_op *op;

		if (!strcmp(seen[i].want, "=")) {
			CHECK(seen[i].op == SAME, "launch %d: op %u, want the one it came with", i, seen[i].op);
			continue;
		}
		op = seen[i].op != SAME ? replay_op(&rp, seen[i].op) : NULL;
		CHECK(op != NULL, "launch %d: no op of its own, want %s", i, seen[i].want);
		if (op)
			CHECK_STR(replay_str(&rp, op->path), seen[i].want);
	}
	/* one execution per module path per call: launches with one path in one call share the op */
	for (int i = 0; i < n_seen; i++)
		for (int j = i + 1; j < n_seen && seen[j].step == seen[i].step; j++)
			if (strcmp(seen[i].want, "=") && !strcmp(seen[i].want, seen[j].want) &&
			    strstr(seen[i].want, "transformer"))
				CHECK(seen[i].op == seen[j].op, "launches %d and %d (%s): ops %u and %u", i, j,
				      seen[i].want, seen[i].op, seen[j].op);
	for (size_t i = 0; i < rp.n_ops; i++) {
		const struct replay_op *o = &rp.ops[i];
		const char *p = replay_str(&rp, o->path);

		if (!strcmp(p, "step/forward/GPT/transformer.h.1/mlp/c_fc")) {
			CHECK_STR(replay_str(&rp, o->kind), "transformer.h.*/mlp/c_fc");
			CHECK_STR(replay_str(&rp, o->phase), "forward");
			kinds++;
		}
		if (!strcmp(p, "step/backward/GPT/transformer.h.0/mlp/gelu")) {
			CHECK_STR(replay_str(&rp, o->kind), "transformer.h.*/mlp/gelu");
			CHECK_STR(replay_str(&rp, o->phase), "backward");
			kinds++;
		}
		if (!strcmp(p, "step/forward/GPT/transformer.ln_f"))
			CHECK_STR(replay_str(&rp, o->kind), "transformer.ln_f");
	}
	CHECK(kinds >= 2, "the ops of the modules' paths: %zu", kinds);
	/* the regions' ranges stay: one per call */
	{
		size_t fwd = 0, bwd = 0;

		for (size_t i = 0; i < rp.n_ranges; i++) {
			const char *p = replay_range_path(&rp, &rp.ranges[i]);

			fwd += !strcmp(p, "step/forward/GPT/compiled_0");
			bwd += !strcmp(p, "step/backward/GPT/compiled_1");
		}
		CHECK_U64(fwd, STEPS);
		CHECK_U64(bwd, STEPS);
	}
	replay_release(&rp);
}

int main(int argc, char **argv)
{
	struct ranges_config cfg = { .warmup = -1, .elem_bytes = 2 };
	Steptrace__Header hdr = STEPTRACE__HEADER__INIT;
	struct ranges_totals t;
	struct rec_session s;
	pthread_t autograd;
	const char *path;

	if (argc < 2) {
		fprintf(stderr, "usage: test_compiled BUNDLE\n");
		return 2;
	}
	path = argv[1];
	CHECK(ranges_init(&cfg) == 0);
	hdr.clock = "cupti";
	hdr.time_base_ns = BASE;
	CHECK(rec_session_open(&s, path, &hdr) == 0);
	ranges_torch_attach(RANGES_TORCH_AUTO, fake_peek);
	fwd_id = ranges_register("compiled_0");
	bwd_id = ranges_register("compiled_1");
	plain_id = ranges_register("compiled_2");
	CHECK(compiled_kernel_op("triton_emb", true, SAME) == SAME);   /* nothing registered yet */
	check_register();
	CHECK(pthread_create(&autograd, NULL, autograd_thread, NULL) == 0);
	for (step_now = 0; step_now < STEPS; step_now++) {
		ranges_torch_phase(RANGES_PHASE_DATA, true, tick());
		ranges_torch_phase(RANGES_PHASE_DATA, false, tick());
		forward();
		backward();
		ranges_torch_phase(RANGES_PHASE_OPTIMIZER, true, tick());
		ranges_torch_phase(RANGES_PHASE_OPTIMIZER, false, tick());
		ranges_torch_step(tick());
	}
	ranges_finish(BASE, tick());
	pthread_mutex_lock(&job_lock);
	quit = true;
	pthread_cond_broadcast(&job_cond);
	pthread_mutex_unlock(&job_lock);
	pthread_join(autograd, NULL);
	rec_session_lock(&s);
	ranges_drain_locked(&s);
	rec_session_unlock(&s);
	ranges_totals(&t);
	rec_session_set_steps_from(&s, t.steps_from);
	CHECK(rec_session_close(&s, "ok") == 0);
	rec_session_release(&s);
	CHECK_U64(t.open, 0);
	CHECK_U64(t.lost, 0);
	check_bundle(path);
	return check_done("test_compiled");
}
