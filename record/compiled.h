/*
 * compiled.h: torch.compile's kernels under the modules that own them
 * (issue 36), for the PyTorch mode (record/torch.h).
 *
 * Each call of a compiled graph (Inductor's CompiledFxGraph) is a range
 * "compiled_N" pushed as a module call. The Python side hands the recorder,
 * once per graph, a table of the kernel calls the graph's wrapper makes,
 * in order, each with the module path of the FX nodes it was made from
 * (their nn_module_stack, a backward node its forward's: the common
 * ancestor), relative to the module call that encloses the region. While
 * that region is the innermost range of a thread, each kernel the thread
 * launches takes the op of its call site's module path, a child of the
 * region's enclosing module ("step/forward/GPT/transformer.h.3/attn/c_attn",
 * beside "step/forward/GPT/compiled_0"), so `summary --by op` reads as for
 * the eager model:
 *
 * - a Triton kernel by its name: the next Triton kernel's call site when it
 *   names that kernel; else, when it is the kernel matched last, that site
 *   again (a first call's autotuning launches it once per configuration,
 *   with copies between); else the first site of that name after the last
 *   one matched (none left: its first);
 * - any other launch or copy (cuBLAS, cuDNN, a fallback op's kernels: names
 *   no table holds) goes to the extern kernels' calls that follow the last
 *   Triton kernel matched: the common ancestor of their paths when several
 *   calls come one after the other, except that when exactly one of them
 *   is a matrix product a kernel named like one (gemm, nvjet, xmma,
 *   cutlass, splitK) goes to it and the rest to the others;
 * - a site whose nodes carry no module stack, and a launch the table cannot
 *   place, keep the region's op ("compiled_N").
 *
 * Every launch still has one op, so every kernel's time counts once. Each
 * module path a region's call touches is one execution of its op, as an
 * eager module call is. Ranges do not change: the region's range spans the
 * graph's call, so `summary --range` and `ranges` see "compiled_N" there.
 *
 * The table, as text: a line per call site, "NAME\tPATH\n". NAME: the
 * Triton kernel's name as the GPU reports it; for an extern kernel's call
 * "@mm" when it is a matrix product, else empty (any NAME starting with '@'
 * is an extern call). PATH: module names separated by '/'
 * ("transformer.h.3/attn/c_attn"), "." for the enclosing module itself,
 * empty when not known.
 */
#ifndef STEPTRACE_RECORD_COMPILED_H
#define STEPTRACE_RECORD_COMPILED_H

#include <stdbool.h>
#include <stdint.h>

struct tstate;

/*
 * Registers the table of the graph whose region is named `graph` (a
 * registered string id), the first time only. 0, or -1 when the table is
 * malformed, the name is not known or memory ran out: the graph's kernels
 * stay in its region.
 */
int compiled_register(uint32_t graph, const char *table);

/*
 * record/torch.c, the mutex held: frame i of s, the calling thread's, was
 * pushed; when it is the region of a registered graph, the thread's
 * launches are placed by its table until the region ends.
 */
void compiled_push_locked(struct tstate *s, int i);

/*
 * capture's kernel hook (capture_set_kernel_hook): the op of a kernel
 * launch (`launch`, symbol: its name) or a copy or memset (symbol NULL) on
 * the calling thread, which would otherwise take `op`.
 */
uint32_t compiled_kernel_op(const char *symbol, bool launch, uint32_t op);

#endif
