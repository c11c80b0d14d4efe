/*
 * model.h: the training step on the GPU (SPEC.md, "The workload").
 *
 * Lifetime: model_create (parameters, gradients, optimizer state and
 * workspaces through the model allocator) -> model_init_random or
 * model_load_weights -> model_set_batch / model_random_batch -> model_step
 * (repeatedly) -> model_free. The step launches everything on one stream and
 * synchronises the host only at its end.
 *
 * Out of memory is an outcome, not an error: functions that allocate return
 * MODEL_OOM and fill the model's struct model_oom; model_free (or the
 * function itself, for model_create) releases everything so a sweep goes on.
 */
#ifndef STEPTRACE_MODEL_MODEL_H
#define STEPTRACE_MODEL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "model/config.h"
#include "model/observer.h"
#include "model/tensors.h"

#define MODEL_OK 0
#define MODEL_OOM 1
#define MODEL_ERROR (-1)

struct model;

struct model_oom {
	uint64_t requested;     /* bytes of the request that failed */
	int category;           /* enum st_mem_category */
	char op[160];           /* the op path that asked */
	uint64_t live;          /* bytes the allocator held then */
	uint64_t capacity;      /* device memory size */
};

struct model_step_times {
	double forward_ms, backward_ms, optimizer_ms;   /* device events */
	double wall_ms;                                 /* host, synchronised */
	double launch_ms;                               /* host, until every launch was made */
	double loss;                                    /* NaN in forward mode without targets */
	/* data parallelism: the all-reduces' time on the communication stream, and
	 * the part of it the step waited for after the backward; 0 without */
	double comm_ms, exposed_ms;
};

struct comm;

/* obs may be NULL. On MODEL_OOM *oom is filled and *out is NULL. */
int model_create(struct model **out, const struct model_config *c,
		 const struct model_observer *obs, struct model_oom *oom);
int model_init_random(struct model *m, uint64_t seed);
/* Every parameter must be present with its PyTorch name and shape (F32). */
int model_load_weights(struct model *m, const struct tensor_set *w);
/* inputs/targets: batch*ctx token ids each, host memory. */
int model_set_batch(struct model *m, const int32_t *inputs, const int32_t *targets);
int model_random_batch(struct model *m, uint64_t seed);
/*
 * Data parallelism (c->ddp set): the rank's communicator (model/comm.h),
 * before the first step; m does not own it. Each step then averages the
 * gradients over the ranks as c->ddp says, on a communication stream, and
 * every wait of the step is bounded by the communicator's timeout.
 */
int model_set_comm(struct model *m, struct comm *comm);
/*
 * --kernels fused: whether steps after the first replay the step as a CUDA
 * graph (the default, observer or not) or all run eagerly (false: each
 * kernel launched by its op's code, as `record` did before graphs were
 * recorded). No effect on plain kernels or under --ddp.
 */
void model_set_graphs(struct model *m, bool on);
/*
 * Every rank's *flag, the largest into *flag (an all-reduce outside any
 * step: ranks agree to stop after the same step). MODEL_OK at once without
 * a communicator.
 */
int model_agree(struct model *m, int *flag);
/* One step of the configured mode. `index`/`warmup` go to the observer. */
int model_step(struct model *m, uint32_t index, bool warmup, struct model_step_times *t);
/* The OOM of the last MODEL_OOM return. */
const struct model_oom *model_last_oom(const struct model *m);
/* Copies parameters (and gradients, if grads != NULL and the mode has them)
 * to host tensors under PyTorch's names, F32. */
int model_export(struct model *m, struct tensor_set *weights, struct tensor_set *grads);
/* Peak bytes the allocator held since create. */
uint64_t model_peak_bytes(const struct model *m);
void model_free(struct model *m);

/* 1 if a CUDA device is usable, else 0 after one error line that says so plainly. */
int model_gpu_available(void);

#endif
