/*
 * record.h: `steptrace record`'s run (SPEC.md, "Recording"): warm-up and
 * measured steps of the training step under CUPTI, written to one bundle.
 *
 * Order matters: NVTX injection before anything can call NVTX; device facts
 * and the calibration before CUPTI is enabled (its GEMMs stay out of the
 * trace, its memory is freed before the model exists); the time base right
 * before the activity kinds are enabled; the model freed while the recorder
 * still listens, so every allocation in the bundle has its free.
 *
 * STEPTRACE_RECORD_STATS=FILE writes the launch counts the CUPTI callbacks
 * saw per step, for tests/record to check the bundle against.
 */
#ifndef STEPTRACE_RECORD_RECORD_H
#define STEPTRACE_RECORD_RECORD_H

#include <stdbool.h>

#include "model/attention_bench.h"
#include "model/config.h"
#include "record/capture.h"

struct comm;
struct rank_info;

struct record_opts {
	const char *output;          /* the bundle to write */
	struct comm *comm;           /* data parallelism: this rank's communicator; NULL alone */
	const struct rank_info *rank;   /* with comm: who this rank is, for the header */
	int warmup, steps;           /* warm-up steps (recorded and flagged), measured steps >= 1 */
	bool calibrate;              /* measure the peaks; else the datasheet's */
	enum capture_api api;        /* which runtime and driver calls get a record */
	const char *command_line;    /* for the header */
};

/*
 * How a recording ended, numbered as the command's exit statuses: the
 * bundle is complete up to the end in every case but an early error, and
 * its footer's end_reason says which ("ok", "error", "oom", "interrupted").
 * An OOM leaves an Oom event for the failed request; SIGINT or SIGTERM ends
 * the run after the current step (a second one kills at once, leaving the
 * bundle readable up to its last whole chunk).
 */
enum record_outcome {
	RECORD_OK = 0,
	RECORD_ERROR = 1,
	RECORD_OOM = 2,
	RECORD_INTERRUPTED = 130,
};

/*
 * Records configuration c into o->output, with progress and a summary on
 * stderr. With o->comm (c->ddp set), as one rank of a data-parallel run:
 * its device, its batch (the seed plus the rank), the header naming rank,
 * world size, run and NCCL; the ranks agree before each step whether to go
 * on, so that an interrupted run stops every rank after the same step.
 * Progress is rank 0's only.
 */
enum record_outcome record_run(const struct record_opts *o, const struct model_config *c);

/*
 * The attention sweep a (model/attention_bench.h; its observer and stop
 * flag are the recorder's) into o->output, its table on stdout: each
 * iteration of each configuration a step (o->warmup and o->steps are
 * unused). An OOM is a row of the sweep: the run goes on and ends "ok".
 */
enum record_outcome record_attention_run(const struct record_opts *o,
					 const struct attn_bench_opts *a);

/*
 * "steptrace record --model 'a b' ..." from the command's argv, before
 * parsing permutes it; malloc'd, NULL when out of memory.
 */
char *record_command_line(int argc, const char **argv);

#endif
