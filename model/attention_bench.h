/*
 * attention_bench.h: the seeds' attention benchmark on the GPU (`steptrace
 * bench attention`, and `steptrace record attention` with the recorder's
 * observer): for each configuration of a sweep (attention_sweep.h), random
 * q, k, v and dout, then warm-up and measured iterations of the forward and
 * the backward, each timed with device events; memory in use before the
 * backward and the peak, from the model's allocator; OOM as a row.
 *
 * Each configuration gets its own allocator (a fresh memory pool, destroyed
 * after it, so the device has every byte back before the next one) and its
 * ops, registered in one registry for the whole sweep under the
 * configuration's name ("attn d64 seq4096 b8 h1 bf16 naive/forward/attn/
 * scores"). Each iteration is a step for the observer, inside an NVTX range
 * of that name with "forward" and "backward" under it. The naive path is the
 * model's: cuBLAS strided-batched GEMMs and the softmax kernels over
 * materialised (T, T) scores; flash is kernels/flash_attention.h.
 */
#ifndef STEPTRACE_MODEL_ATTENTION_BENCH_H
#define STEPTRACE_MODEL_ATTENTION_BENCH_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/table.h"
#include "model/attention_sweep.h"
#include "model/observer.h"

struct attn_bench_opts {
	const struct attn_config *configs;
	size_t n_configs;
	int warmup, steps;                   /* per configuration; steps >= 1 */
	uint64_t seed;                       /* of the random inputs */
	const struct model_observer *obs;    /* NULL, or the recorder's hooks */
	volatile sig_atomic_t *stop;         /* NULL, or non-zero: stop after the current step */
};

struct attn_bench_totals {
	uint32_t steps;        /* steps begun (each ended too), warm-up included */
	uint32_t ooms, errors; /* configurations */
	uint32_t done;         /* configurations run to their end (an OOM ends one) */
};

/*
 * -1 with an error line if a configuration cannot run at all (flash with a
 * head size or dtype its kernels refuse).
 */
int attn_bench_check(const struct attn_config *c, size_t n);

/*
 * Runs the sweep (a line of progress per configuration on stderr) and adds
 * the table "attention" and its notes to rep. With an observer, the table
 * names each configuration's steps. 0, or -1 when the GPU could not be set
 * up (stream, events); configurations that fail are rows, counted in *t.
 */
int attn_bench_run(const struct attn_bench_opts *o, struct report *rep,
		   struct attn_bench_totals *t);

#endif
