/*
 * aten.h: what `steptrace record -- COMMAND` reads from the NVTX ranges
 * that PyTorch's emit_nvtx(record_shapes=True) opens around every op, and
 * what each op costs.
 *
 * PyTorch names such a range (torch/csrc/profiler/util.cpp, getNvtxStr):
 *
 *   aten::mm, seq = 123, op_id = 45, sizes = [[4096, 768], [768, 3072]], input_op_ids = [(44,0), (12,0)]
 *
 * "seq" (autograd sequence number) only for ops autograd records, "op_id"
 * always under emit_nvtx, "sizes" with record_shapes=True (one list per
 * input: [] for a non-tensor argument, tensor lists flattened), and
 * "input_op_ids" with record_shapes=True. seq, op_id and input_op_ids
 * change with every call, so the recorder drops them (aten_normalize): the
 * same op on the same shapes gets the same range name in every step.
 *
 * Costs: FLOPs and minimum bytes (every input read once, every output
 * written once) of the matrix-product family (mm, addmm, bmm, baddbmm,
 * matmul, linear, scaled_dot_product_attention and its flash, efficient
 * and cuDNN kernels, forward and backward), and bytes (with a nominal FLOP
 * count) of elementwise, _foreach_, softmax and normalisation ops. The
 * names carry no dtypes: the caller says how many bytes an element has.
 */
#ifndef STEPTRACE_RECORD_ATEN_H
#define STEPTRACE_RECORD_ATEN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ATEN_MAX_RANK 16

struct aten_shape {
	int rank;                       /* 0: a non-tensor argument or a 0-d tensor ("[]") */
	int64_t dim[ATEN_MAX_RANK];
	uint64_t numel;                 /* product of dims, 0 for rank 0 */
};

struct aten_call {
	char op[128];                   /* "aten::mm"; the whole name when it has no ", " */
	bool has_sizes;                 /* the name had "sizes = [...]" */
	size_t n;                       /* shapes, in argument order */
	struct aten_shape *shapes;      /* malloc'd; aten_call_release frees */
};

/*
 * Splits an emit_nvtx range name into op and input shapes. A name without
 * ", " is an op with no shapes (has_sizes false). -1 when "sizes = " is
 * there but malformed (out is released), -2 when out of memory.
 */
int aten_parse(const char *name, struct aten_call *out);
void aten_call_release(struct aten_call *c);

/*
 * `name` without its per-call parts (", seq = N", ", op_id = N",
 * ", input_op_ids = [...]") into buf (truncated to len - 1 bytes, always
 * terminated); returns the length written. Other names are copied as they are.
 */
size_t aten_normalize(const char *name, char *buf, size_t len);

/*
 * What the per-call parts of a profiler range name say, before
 * aten_normalize drops them: `seq` (the autograd sequence number of the
 * forward op: in the backward, that of the op whose gradient this node
 * computes), -1 when absent; `profiled` true when the name has ", op_id = N"
 * (PyTorch's profiler made the range, not the program).
 */
struct aten_tags {
	int64_t seq;
	bool profiled;
};
void aten_tags(const char *name, struct aten_tags *out);

/* What kind of work an op is; the family names the op's kind ("matmul/aten::mm"). */
enum aten_family {
	ATEN_OTHER,          /* no cost rule */
	ATEN_MATMUL,
	ATEN_ATTENTION,
	ATEN_SOFTMAX,
	ATEN_NORM,
	ATEN_ELEMENTWISE,
	ATEN_REDUCTION,
};
/* "other", "matmul", "attention", "softmax", "norm", "elementwise", "reduction" */
const char *aten_family_name(enum aten_family f);

struct aten_cost {
	enum aten_family family;
	uint64_t flops;
	uint64_t bytes;
	bool backward;       /* a backward kernel (…_backward, …_backward_data) */
};

/*
 * The op's family and, when its shapes fit the rule, FLOPs and minimum
 * bytes with `elem_bytes` per element. Returns true when FLOPs or bytes
 * were computed; false leaves them 0 (an op without shapes, an unknown op,
 * or shapes that do not fit: the family is still set when the op is known).
 */
bool aten_cost(const struct aten_call *c, unsigned elem_bytes, struct aten_cost *out);

#endif
