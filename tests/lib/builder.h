/*
 * builder.h: the one way tests make synthetic bundles and replays, written
 * as the recorder writes them: strings interned on first use, an NVTX range
 * written when it closes, a launch as its API call then its kernel carrying
 * the call's correlation id, allocator events with their category and op.
 *
 *   struct builder b;
 *   builder_init(&b);                    // header: config, device, clock "synthetic"
 *   builder_small_model(&b, "bf16");
 *   if (builder_open(&b, "x.stb") < 0)   // or builder_open_replay(&b, &rp)
 *           return 1;
 *   builder_op(&b, &(struct builder_op){ .id = 1, .path = "step/forward/w1",
 *              .kind = "w1", .phase = "forward", .inputs = { ST_DT_BF16 } });
 *   builder_push(&b, "step", 0);
 *   // stream 7, op 1, the call over [10, 15], the kernel over [100, 180]
 *   builder_launch(&b, "gemm_kernel", 7, 1, 10, 15, 100, 180);
 *   builder_pop(&b, 1000);
 *   builder_step(&b, 0, true, 0, 1000);
 *   return builder_close(&b, "ok") < 0;  // builder_abort(&b): no footer
 *
 * Events carry the builder's current host thread (b.thread), launch
 * geometry (b.geometry), API callback id (b.cbid) and status (b.status), and allocation source
 * (b.source): set them between calls where a test needs other values;
 * b.steps_from (the footer's: how the recorder found the steps) any time
 * before builder_close.
 * Failures to add are remembered and reported by builder_close. The header
 * points into the struct: a builder is not copied.
 */
#ifndef STEPTRACE_TESTS_LIB_BUILDER_H
#define STEPTRACE_TESTS_LIB_BUILDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay/replay.h"
#include "trace/bundle.h"

/* How a kernel was launched; zero unless a test sets it. */
struct builder_geometry {
	uint32_t grid[3], block[3];
	uint32_t registers, static_smem, dynamic_smem;
};

/* An op the model registers (ST_OP). */
struct builder_op {
	uint32_t id;                        /* 0: one more than the last op's */
	const char *name;                   /* NULL: the path's last component */
	const char *path, *kind, *phase;
	uint64_t flops, bytes;
	uint8_t inputs[ST_OP_MAX_INPUTS];   /* enum st_dtype, up to the first ST_DT_UNKNOWN */
	uint8_t outputs[ST_OP_MAX_OUTPUTS];
};

#define BUILDER_MAX_DEPTH 16

struct builder {
	/* Written by builder_open; header.config and header.device point below. */
	Steptrace__Header header;
	Steptrace__RunConfig config;
	Steptrace__DeviceInfo device;

	uint64_t thread;                    /* of ranges, calls and steps (1) */
	uint32_t cbid;                      /* CUPTI callback id written on calls (0) */
	int32_t status;                     /* the calls' return status (0; 600: not ready, a query's) */
	uint32_t source;                    /* enum st_mem_source of allocations (model) */
	uint32_t gpu;                       /* CUDA device of kernels, copies and memsets (0) */
	struct builder_geometry geometry;   /* of the kernels written next */
	const char *steps_from;             /* the footer's (builder_close); NULL: not said */
	struct st_launch_cost launch_cost;  /* the footer's (1.10, builder_close); launches 0: none */

	uint64_t correlation;               /* the last call's */
	uint32_t last_op;

	/* Where events go: a bundle, or a replay in memory. */
	struct bundle_writer *writer;
	struct replay *replay;

	/* private */
	char **strings;                     /* the replay's table, id = index */
	size_t n_strings, alloc_strings;
	struct { char *name; uint64_t start, thread; } open[BUILDER_MAX_DEPTH];
	int depth;
	bool failed;
};

/* Defaults: thread 1, no geometry, a header with empty config and device. */
void builder_init(struct builder *b);

/*
 * What most synthetic runs pretend to be, for the header; set fields after
 * these to differ. The SPEC's "small" model (d_model 768, d_ff 3072, 12
 * layers, 12 heads, vocab 10000) training at batch 4, ctx 128 with naive
 * attention in `precision`; datasheet peaks (bf16 and fp16 alike); an H100
 * SXM: 132 SMs, compute capability 9.0, 80 GiB, 1.98 GHz, its datasheet
 * peaks, CUDA runtime 13.0.
 */
void builder_small_model(struct builder *b, const char *precision);
void builder_peaks(struct builder *b, double fp32, double tf32, double bf16, double bytes_per_second);
void builder_h100(struct builder *b, const char *name);

/*
 * One rank of a run of several (format 1.3): rank `rank` of `world` in run
 * `run_id`, data parallelism `ddp` ("bucket", ...; NULL for none), NCCL
 * 2.28.9, on device `rank` (b->gpu and the header's). b->header.time_base_ns
 * and hostname are the test's to set.
 */
void builder_rank(struct builder *b, uint32_t rank, uint32_t world, uint64_t run_id, const char *ddp);

/* How CUPTI names NCCL's ring all-reduce kernel of FP32 sums. */
#define BUILDER_NCCL_ALLREDUCE "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"

/*
 * A communication op as the data-parallel step registers one: phase
 * "comm", `path` such as "step/backward/comm/allreduce/bucket.3" (kind: what
 * follows "comm/", "allreduce/bucket.3"), `bytes` its message size, F32.
 * Returns its id.
 */
uint32_t builder_comm_op(struct builder *b, const char *path, uint64_t bytes);

/* Creates the bundle `path` with b->header. -1 after an error line. */
int builder_open(struct builder *b, const char *path);
/* Events go into `rp` (replay_init is done here); builder_close builds it. */
void builder_open_replay(struct builder *b, struct replay *rp);

/* A string's id (0 for NULL or ""); the same string always gets the same id. */
uint32_t builder_string(struct builder *b, const char *s);

/* Any event, as it is. */
void builder_add(struct builder *b, const struct st_event *ev);

/* Registers an op; returns its id. */
uint32_t builder_op(struct builder *b, const struct builder_op *op);

/* An NVTX range on b->thread at `depth` (0 outermost). */
void builder_range(struct builder *b, const char *name, uint32_t depth, uint64_t start, uint64_t end);
/* A range of NCCL's own (domain "NCCL", e.g. "ncclAllReduce") with its payload's communicator and size. */
void builder_nccl_range(struct builder *b, const char *name, uint32_t depth, uint64_t start, uint64_t end,
			uint64_t comm, uint64_t bytes);
/* Ranges from a table, each [t0 + start, t0 + end] and written in table order. */
struct builder_span {
	const char *name;
	uint32_t depth;
	uint64_t start, end;
};
void builder_ranges(struct builder *b, uint64_t t0, const struct builder_span *spans, size_t n);
/* The same, nested by the builder: push opens a range, pop writes the innermost. */
void builder_push(struct builder *b, const char *name, uint64_t start);
void builder_pop(struct builder *b, uint64_t end);

/* A host API call on b->thread; returns its correlation id (one more than the last). */
uint64_t builder_call(struct builder *b, const char *name, uint64_t start, uint64_t end);

/*
 * Device work on `stream` attributed to `op` (0: none), launched by the call
 * with `correlation` (one no call has: an orphan, as NCCL's kernels are).
 */
void builder_kernel(struct builder *b, const char *name, uint64_t correlation, uint32_t stream,
		    uint32_t op, uint64_t start, uint64_t end);
void builder_memcpy(struct builder *b, uint32_t copy_kind, uint64_t bytes, uint64_t correlation,
		    uint32_t stream, uint32_t op, uint64_t start, uint64_t end);
void builder_memset(struct builder *b, uint64_t bytes, uint64_t correlation, uint32_t stream,
		    uint32_t op, uint64_t start, uint64_t end);

/* cudaLaunchKernel over [call_start, call_end], then its kernel; returns the correlation id. */
uint64_t builder_launch(struct builder *b, const char *kernel, uint32_t stream, uint32_t op,
			uint64_t call_start, uint64_t call_end, uint64_t start, uint64_t end);

/* Allocator events from b->source; a free may leave size and category 0, as the model's do. */
void builder_alloc(struct builder *b, uint64_t t, uint64_t address, uint64_t size, int category,
		   uint32_t op);
void builder_free(struct builder *b, uint64_t t, uint64_t address, uint64_t size, int category,
		  uint32_t op);
/* The program says the driver-level block at address (size bytes) holds `category` (ST_MEMTAG). */
void builder_tag(struct builder *b, uint64_t t, uint64_t address, uint64_t size, int category);
/* A request the allocator refused, with what was live then. */
void builder_oom(struct builder *b, uint64_t t, uint64_t requested, int category, uint32_t op,
		 uint64_t live_bytes, uint64_t capacity, uint32_t step);

/* A training step on b->thread. */
void builder_step(struct builder *b, uint32_t index, bool warmup, uint64_t start, uint64_t end);

/* (1.8) The recorder's own host time on b->thread in the stretch [start, end] (a cost event). */
struct builder_cost {
	uint64_t callback_ns, nvtx_ns, hook_ns, python_ns;
	uint64_t launches, ranges, modules;
};
void builder_cost(struct builder *b, uint64_t start, uint64_t end, const struct builder_cost *c);

/*
 * Finishes: a bundle gets its footer (complete, `end_reason`, b->steps_from);
 * a replay gets its strings and is built, with b->steps_from as its footer's
 * steps_from (the string must outlive the replay). -1 when this or any
 * earlier event failed.
 */
int builder_close(struct builder *b, const char *end_reason);
/* Closes a bundle without a footer, as a crashed recording leaves it. */
void builder_abort(struct builder *b);

/*
 * A bundle written member by member, each member's bytes as given, for
 * damaged and hostile bundles the writer would never make: a zstd-compressed
 * tar as the writer's (one frame, members in order, no padding after the
 * end blocks). `level` 0 is zstd's default. Each returns -1 after an error
 * line; close frees `raw` whatever happens.
 */
struct builder_raw;
struct builder_raw *builder_raw_open(const char *path, int level);
int builder_raw_member(struct builder_raw *raw, const char *name, const void *data, size_t len);
int builder_raw_close(struct builder_raw *raw);
/* b->header packed as header.pb (format version filled in); free() it. NULL on out of memory. */
uint8_t *builder_header_bytes(struct builder *b, size_t *len);

#endif
