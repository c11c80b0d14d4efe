/*
 * types.h: the vocabulary every part of steptrace shares, with no protobuf
 * in it: event kinds, dtypes, memory categories, phases of a step,
 * precisions, modes and attention implementations, kernel sets, each one
 * enum with one name table, and the decoded event. The numbers of kinds, dtypes and categories are the
 * schema's (proto/steptrace.proto); trace/ converts, nothing else needs to.
 *
 * Name tables are NULL-terminated and indexed by the enum, so they serve as
 * option choices (OPT_CHOICE) as they are.
 */
#ifndef STEPTRACE_TRACE_TYPES_H
#define STEPTRACE_TRACE_TYPES_H

#include <stdbool.h>
#include <stdint.h>

/* Precisions, with PyTorch's semantics (SPEC.md, "The workload"). */
enum st_precision { ST_FP32, ST_TF32, ST_BF16 };
extern const char *const st_precision_names[];   /* "fp32", "tf32", "bf16" */

/* What a step runs. */
enum st_mode { ST_MODE_FORWARD, ST_MODE_FWDBWD, ST_MODE_TRAIN };
extern const char *const st_mode_names[];        /* "forward", "fwdbwd", "train" */

/* How attention is computed. */
enum st_attention { ST_ATTN_NAIVE, ST_ATTN_FLASH };
extern const char *const st_attention_names[];   /* "naive", "flash" */

/*
 * Which kernels a step runs: plain (one kernel per op) or fused (fused
 * kernels, FlashAttention by default under BF16, and the step replayed as
 * a CUDA graph where it is not recorded).
 */
enum st_kernels { ST_KERNELS_PLAIN, ST_KERNELS_FUSED };
extern const char *const st_kernels_names[];     /* "plain", "fused" */

/*
 * Data parallelism over several GPUs (--ddp): how each rank's gradients are
 * averaged over the ranks. naive: one all-reduce per parameter after the
 * backward; flat: one all-reduce of every gradient after the backward;
 * overlap: one per parameter, started in the backward as soon as that
 * gradient is final; bucket: gradients grouped in reverse order into
 * buckets of about --bucket-mb, each started as soon as it is complete.
 */
enum st_ddp { ST_DDP_NONE, ST_DDP_NAIVE, ST_DDP_FLAT, ST_DDP_OVERLAP, ST_DDP_BUCKET };
extern const char *const st_ddp_names[];         /* "none", "naive", "flat", "overlap", "bucket" */
/* Whether its collectives run beside the backward (overlap, bucket): where --sm-carveout applies. */
bool st_ddp_overlaps(int ddp);

/* Collective operations, as NCCL names them (lower case, no underscores). */
enum st_collective {
	ST_COLL_ALLREDUCE, ST_COLL_ALLGATHER, ST_COLL_REDUCESCATTER, ST_COLL_BROADCAST, ST_COLL_REDUCE,
	ST_COLL_SENDRECV, ST_COLL_COUNT
};
extern const char *const st_collective_names[];  /* "allreduce", "allgather", "reducescatter", ... */

/*
 * nccl-tests' bus bandwidth factor (doc/PERFORMANCE.md there): bus
 * bandwidth = algorithm bandwidth (bytes / time) * factor, which makes the
 * number comparable with the hardware's link speed whatever the rank
 * count: all-reduce 2(n - 1)/n, all-gather and reduce-scatter (n - 1)/n,
 * broadcast, reduce and send/receive 1. 0 for n < 1 or an unknown collective.
 */
double st_bus_factor(int collective, int ranks);

/* The name of value v in a NULL-terminated name table, "?" when out of range. */
const char *st_name(const char *const *names, int v);
/* The index of s in a NULL-terminated name table, -1 if absent. */
int st_lookup(const char *const *names, const char *s);

/*
 * The phases of a training step, as ops name them (Op.phase) and NVTX ranges
 * do ("step/forward/layer.3/attn", "step/zero_grad"). ST_PHASE_OTHER is
 * none of them: setup, the loss outside a phase, work with no op and no
 * range. The name table holds the named phases only (what --phase
 * accepts); st_phase_name() also names "other". Communication ops carry
 * phase "comm" (ST_OP_PHASE_COMM), which names no phase of the step: a
 * collective runs within one, and is placed by its range path like work
 * without an op.
 */
enum st_phase {
	ST_PHASE_FORWARD,
	ST_PHASE_BACKWARD,
	ST_PHASE_OPTIMIZER,
	ST_PHASE_ZERO_GRAD,
	ST_PHASE_DATA,
	ST_PHASE_OTHER,
};
#define ST_PHASE_COUNT (ST_PHASE_OTHER + 1)
extern const char *const st_phase_names[];   /* "forward", "backward", "optimizer", "zero_grad", "data" */
#define ST_OP_PHASE_COMM "comm"              /* Op.phase of a communication op (1.3) */

/* A phase's name; "other" for ST_PHASE_OTHER (or any value out of range). */
const char *st_phase_name(int phase);
/* The phase s names (the whole string), -1 when none ("other" and "comm" name none). */
int st_phase_from_name(const char *s);
/* The phase named by the first component of a '/'-separated path that names one, else ST_PHASE_OTHER. */
int st_phase_of_path(const char *path);

/* Event kinds; the numbers are the Event oneof field numbers of the schema. */
enum st_kind {
	ST_KERNEL = 3,
	ST_MEMCPY = 4,
	ST_MEMSET = 5,
	ST_API = 6,
	ST_RANGE = 7,
	ST_ALLOC = 8,
	ST_FREE = 9,
	ST_OP = 10,
	ST_STEP = 11,
	ST_OOM = 12,
	ST_OVERHEAD = 13,
	ST_SYNC = 14,
	ST_MEMTAG = 15,    /* (1.5) the program says what a live block holds */
	ST_COST = 16,      /* (1.8) the recorder's own host time on a thread */
};
#define ST_KIND_FIRST ST_KERNEL
#define ST_KIND_LAST ST_COST
#define ST_KIND_COUNT (ST_KIND_LAST + 1)

/* "kernel", "memcpy", ... (the schema's oneof field names); NULL if unknown. */
const char *st_kind_name(int kind);
/* Inverse of st_kind_name; -1 if unknown. */
int st_kind_from_name(const char *name);

/* Same numbering as the schema's MemCategory enum. */
enum st_mem_category {
	ST_MEM_UNKNOWN = 0,
	ST_MEM_PARAMETER = 1,
	ST_MEM_GRADIENT = 2,
	ST_MEM_OPTIMIZER = 3,
	ST_MEM_ACTIVATION = 4,
	ST_MEM_TEMPORARY = 5,
	ST_MEM_WORKSPACE = 6,
	ST_MEM_INPUT = 7,
};
#define ST_MEM_CATEGORY_COUNT 8
const char *st_mem_category_name(int category); /* "parameter", "gradient", "optimizer", ... */

/* Same numbering as the schema's DType enum; kernels take these too. */
enum st_dtype {
	ST_DT_UNKNOWN = 0, ST_DT_F32 = 1, ST_DT_BF16 = 2, ST_DT_F16 = 3,
	ST_DT_I32 = 4, ST_DT_I64 = 5, ST_DT_F64 = 6, ST_DT_U8 = 7,
};
const char *st_dtype_name(int dtype); /* "f32", "bf16", ... */

/*
 * CUPTI's numbers kept as they are in Overhead.kind and Sync.type
 * (CUpti_ActivityOverheadKind, CUpti_ActivitySynchronizationType): their
 * names ("activity buffer request", "stream synchronize"), NULL for a
 * number CUPTI has not defined.
 */
const char *st_overhead_kind_name(uint32_t kind);
const char *st_sync_type_name(uint32_t type);

enum st_mem_source { ST_SRC_MODEL = 0, ST_SRC_DRIVER = 1 };

/* Where a device's peak FLOP/s and bandwidth came from; the schema's PeakSource numbering. */
enum st_peak_source { ST_PEAK_UNKNOWN = 0, ST_PEAK_MEASURED = 1, ST_PEAK_DATASHEET = 2 };
extern const char *const st_peak_source_names[];   /* "unknown", "measured", "datasheet" */

/*
 * (1.8) One parameter group of a PyTorch program's optimizer (the footer's
 * ParamGroup): its parameters that require a gradient, their elements and
 * bytes (their gradients' too: a gradient has its parameter's dtype), and
 * their dtype (ST_DT_UNKNOWN: several, or one the schema has not).
 */
struct st_param_group {
	uint64_t tensors, elements, bytes;
	uint32_t dtype;   /* enum st_dtype */
};
#define ST_PARAM_GROUPS_MAX 256

/*
 * (1.10) CUPTI's own host time per kernel launch, measured in the recorded
 * process (Footer.launch_cost): medians over `rounds` of a batch of
 * `launches` launches traced and untraced. launches 0: not measured.
 */
struct st_launch_cost {
	uint32_t launches, rounds;
	uint64_t traced_ns, untraced_ns;
};   /* groups a bundle keeps; more are summed into the last */

/* (1.11) At most this many unrecorded steps before an armed window (Footer.unrecorded_step_ns). */
#define ST_UNRECORDED_STEPS_MAX 32

#define ST_OP_MAX_INPUTS 8
#define ST_OP_MAX_OUTPUTS 4

/*
 * One event, decoded. Times are absolute ns on the bundle's clock (since
 * Header.time_base_ns); string fields are ids into the bundle's string table
 * (0 = none). Correlation ids are absolute.
 */
struct st_event {
	int kind; /* enum st_kind */
	uint64_t start, end;
	union {
		struct {
			uint32_t name, grid[3], block[3], registers;
			uint32_t static_smem, dynamic_smem, stream, device, op;
			uint64_t correlation;
		} kernel;
		struct {
			uint32_t copy_kind, src_kind, dst_kind, stream, device, op;
			uint64_t bytes, correlation;
		} memcpy;
		struct {
			uint32_t value, stream, device, op;
			uint64_t bytes, correlation;
		} memset;
		struct {
			uint32_t name, domain, cbid; /* domain: 0 runtime, 1 driver */
			int32_t status;
			uint64_t thread, correlation;
		} api;
		struct {
			uint32_t name, depth, domain;
			uint64_t thread;
			uint64_t comm, bytes;    /* (1.6) NCCL's payload: communicator id, message size; 0 none */
		} range;
		struct { /* ST_ALLOC and ST_FREE; ST_MEMTAG uses address, size, category, device */
			uint64_t address, size;
			uint32_t category, op, source, device;
		} mem;
		struct {
			uint32_t id, name, path, kind, phase;
			uint64_t flops, bytes;
			uint8_t n_inputs, n_outputs;
			uint8_t inputs[ST_OP_MAX_INPUTS], outputs[ST_OP_MAX_OUTPUTS];
		} op;
		struct {
			uint32_t index;
			bool warmup;
			bool phases_only;   /* (1.8) module ranges left out of this step */
			uint64_t thread;
		} step;
		struct {
			uint64_t requested, live_bytes, capacity;
			uint32_t category, op, step;
		} oom;
		struct {
			uint32_t kind;
			uint64_t thread;
		} overhead;
		struct {
			uint32_t type, stream;
			uint64_t thread, correlation;
		} sync;
		struct { /* (1.8) RecorderCost: ns in each part of the recorder, and what it handled */
			uint64_t thread;
			uint64_t callback_ns, nvtx_ns, hook_ns, python_ns;
			uint64_t launches, ranges, modules;
		} cost;
	};
};

#endif
