/*
 * torch.h: the PyTorch mode of `steptrace record -- COMMAND` (issue 22):
 * the steps, phases and nn.Module calls the Python side reports, pushed
 * onto the NVTX path's range stacks (record/nvtx.h), and the backward's
 * module chains.
 *
 * PyTorch (record/python, through record/inject.c's steptrace_py_*): the
 * Python side calls ranges_torch_* from the training loop's thread, which
 * then leads. Its ranges are in domain "steptrace.torch": a "step" range
 * per step (pushed at the previous step's end, so a step runs from the end
 * of the previous one); the phases "data", "zero_grad", "forward",
 * "backward", "optimizer" (at the top of a step a phase stays open until
 * the next begins, so the loss computed after the model's call is
 * forward and the host's copies after a batch arrives are data; inside a
 * module a phase is an ordinary nested range; a phase inside a range of
 * the same name is not written again); and each nn.Module call, named by
 * the Python side relative to the module call enclosing it, so the path
 * reads like the qualified name ("step/forward/GPT/transformer.h.3/attn").
 * Module calls on the lead thread record the autograd sequence numbers
 * their forward consumed ([begin, end) of at::sequence_number::peek());
 * in the backward, each profiler range with "seq = N" that autograd's
 * thread pushes (PyTorch's NVTX observer, scope BACKWARD_FUNCTION) moves
 * that thread's copy of the module chain to the innermost forward call
 * whose interval holds N: its ranges "step/backward/GPT/transformer.h.3/
 * attn" are written as the thread's own, and under the automatic mode the
 * profiler's ranges themselves are not written (the kernels land in the
 * module's op). A node without "seq" (AccumulateGrad) stays in the chain
 * it finds; a node whose N lies in no module call sits under "backward".
 */
#ifndef STEPTRACE_RECORD_TORCH_H
#define STEPTRACE_RECORD_TORCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/nvtx.h"   /* enum ranges_phase: the phase numbers ranges_torch_phase takes */

enum ranges_torch_mode { RANGES_TORCH_AUTO = 1, RANGES_TORCH_OPS = 2 };

/*
 * Turns the PyTorch mode on (the first call wins): `peek` is
 * at::sequence_number::peek of the program's libtorch (NULL: backward
 * kernels stay under "backward", without modules). The calling thread leads.
 */
void ranges_torch_attach(enum ranges_torch_mode mode, uint64_t (*peek)(void));
/* A phase begins or ends on the calling thread (see the rules above). */
void ranges_torch_phase(int phase, bool begin, uint64_t t);
/* An nn.Module call begins (name: a registered string id) or ends. */
void ranges_torch_module(uint32_t name, uint64_t t);
void ranges_torch_module_end(uint64_t t);
/*
 * The Python side turned PyTorch's NVTX profiler on (on) for a backward call
 * of its own, or off: while on, the profiler's ranges on the helpers are not
 * written under the automatic mode (a program's own emit_nvtx keeps them).
 */
void ranges_torch_profiler(bool on);
/* The primary optimizer's step ended: the step ends here and the next begins. */
void ranges_torch_step(uint64_t t);
/* Says what n live blocks hold: pairs[2i] address, pairs[2i + 1] size (ST_MEMTAG). */
void ranges_torch_tag(const uint64_t *pairs, size_t n, uint32_t category, uint32_t device, uint64_t t);

/*
 * Module ranges on a sample of the steps (issue 36): PyTorch's module hooks
 * put every Module.__call__ of the program on its slow path, so the Python
 * side installs them on some steps only. Step i of the bundle (under the
 * optimizer's rule) has them when i is a warm-up step or the first measured
 * one, or when i less the warm-up steps is a multiple of `every`; the
 * others record steps and phases only. ranges_torch_level says what the
 * step now open records (RANGES_LEVEL_MODULES before the first; OFF when
 * nothing is recorded: after the end, or between an armed process's
 * sessions); the Python side asks after each optimizer step. A step planned
 * phases only is written Step.phases_only (format 1.8) unless a module
 * range was pushed in it after all, and only once some step of the
 * recording had one (a program without modules keeps its steps whole).
 * Every step has them under --torch ops, with --step-range, and with
 * `every` <= 1.
 */
enum ranges_torch_level { RANGES_LEVEL_OFF = 0, RANGES_LEVEL_PHASES = 1, RANGES_LEVEL_MODULES = 2 };
void ranges_torch_sample(uint32_t every);
int ranges_torch_level(void);

/*
 * The backward's module chains without PyTorch's NVTX profiler (issue 36):
 * from autograd's current node, read at each launch of a helper thread.
 * ranges_torch_node_probe takes torch::autograd::get_current_node of the
 * program's libtorch (NULL: keep the one given before) and, called while
 * autograd runs a node whose sequence number is `want` on this thread (a
 * prehook of the Python side's self-test), returns where in the node that
 * number is (bytes from its start), -1 when nowhere. ranges_torch_nodes
 * turns the chains on with that offset (0: off). While a backward of a
 * step with module calls runs (--torch auto), ranges_torch_launch, called
 * by the launch callbacks before they pick a launch's op, moves a helper
 * thread onto the module chain of its node's sequence number, as a
 * profiler range "seq = N" would: the node's kernels take that module's
 * op. AccumulateGrad (no sequence number) stays in the chain it finds.
 */
int ranges_torch_node_probe(void *get_current_node, uint64_t want);
void ranges_torch_nodes(int offset);
void ranges_torch_launch(void);
void ranges_torch_launch_at(uint64_t (*now)(void));   /* the same, the time from `now` (tests) */

#endif
