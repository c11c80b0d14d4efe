"""test_compiled.py BUILD_PYTHON_DIR: steptrace_torch's torch.compile section without PyTorch.

Fakes of what Inductor 2.11 holds while it writes a graph's wrapper (FX nodes
with nn_module_stack / fwd_nn_module_stack as Dynamo and AOTAutograd leave
them, scheduler nodes, an extern kernel, V.graph, the provenance call that
codegen/triton.py imports by name and ir.py reaches through
torch._inductor.debug, CompiledFxGraph) check:
- module names: Dynamo's qualified names as the module hooks name the calls
  (relative to the enclosing call, the compiled frame's module left out, a
  module of another variable by its class);
- a node's module calls: forward, backward (its forward's), the frame's own
  code (root), a node that says nothing;
- a kernel call's path: the common ancestor of its nodes';
- the table a compiled graph keeps (in call order, Triton names and extern
  calls), kept through pickling (Inductor's cache), handed to the recorder
  once at the graph's first call;
- any failure: the kernels stay under compiled_N, one line on stderr, and
  Inductor's own call still runs.
"""
import io
import os
import pickle
import sys
import types

pydir = os.path.abspath(sys.argv[1])
sys.path.insert(0, pydir)
import steptrace_torch as st  # noqa: E402

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def eq(got, want, what):
    check(got == want, "%s: got %r, want %r" % (what, got, want))


class GPT:
    pass


class Block:
    pass


class Linear:
    pass


# ---- names -------------------------------------------------------------------------------

eq(st.fqn_split("L['self'].transformer.h.3.attn"), ("self", "transformer.h.3.attn"), "fqn, 2.11's form")
eq(st.fqn_split("L['self'].transformer.h[3]"), ("self", "transformer.h.3"), "fqn, indexed")
eq(st.fqn_split("L['model']._modules['h']['0']"), ("model", "h.0"), "fqn, _modules")
eq(st.fqn_split("L['self']"), ("self", ""), "fqn, the frame's module")


def stack(*entries):
    return {str(i): (q, c) for i, (q, c) in enumerate(entries)}


h1 = ("L['self'].transformer.h.1", Block)
mlp1 = ("L['self'].transformer.h.1.mlp", object)
cfc1 = ("L['self'].transformer.h.1.mlp.c_fc", Linear)
eq([n for _, n in st.module_chain(stack(h1, mlp1, cfc1))], ["transformer.h.1", "mlp", "c_fc"], "chain")
eq([n for _, n in st.module_chain(stack(("L['self']", GPT), h1))], ["transformer.h.1"],
   "chain: the frame's own module left out")
eq([n for _, n in st.module_chain(stack(("L['model']", GPT), ("L['model'].transformer.h.0", Block)))],
   ["GPT", "transformer.h.0"], "chain: a compiled function's model, by its class")
eq([n for _, n in st.module_chain(stack(h1, ("L['self'].shared", Linear)))], ["transformer.h.1", "Linear"],
   "chain: a module called from outside its parent, by its class")


class Node:
    def __init__(self, op="call_function", users=(), **meta):
        self.op = op
        self.meta = meta
        self.users = dict.fromkeys(users)


fwd = Node(nn_module_stack=stack(h1, mlp1, cfc1), from_node=["linear_4"], seq_nr=40)
bwd = Node(fwd_nn_module_stack=stack(h1, mlp1, cfc1), seq_nr=40, partitioner_tag="is_backward")
ln2 = Node(nn_module_stack=stack(h1, ("L['self'].transformer.h.1.ln_2", object)), from_node=["layer_norm_3"])
resid = Node(nn_module_stack=stack(h1), from_node=["add_3"])
loss = Node(from_node=["loss"], seq_nr=90)
loss_bwd = Node(fwd_nn_module_stack=None, seq_nr=90, partitioner_tag="is_backward")
grad_sum = Node(is_gradient_acc=True, seq_nr=99, partitioner_tag="is_backward")
bare = Node()
h0 = Node(nn_module_stack=stack(("L['self'].transformer.h.0", Block), ("L['self'].transformer.h.0.ln_1", object)))

eq([n for _, n in st.node_chain(bwd)], ["transformer.h.1", "mlp", "c_fc"], "backward node: its forward's modules")
eq(st.node_chain(loss), [], "the frame's own code")
eq(st.node_chain(loss_bwd), [], "its backward")
eq(st.node_chain(grad_sum), None, "a gradient sum says nothing")
eq(st.node_chain(bare), None, "a pass's node says nothing")
eq(st.common_path([st.node_chain(n) for n in (fwd, bwd)]), "transformer.h.1/mlp/c_fc", "path")
eq(st.common_path([st.node_chain(n) for n in (ln2, resid, grad_sum)]), "transformer.h.1", "path: ancestor")
eq(st.common_path([st.node_chain(n) for n in (ln2, h0)]), ".", "path: two layers")
eq(st.common_path([st.node_chain(n) for n in (loss, fwd)]), ".", "path: with the frame's own code")
eq(st.common_path([None, None]), "", "path: nothing known")

# ---- code generation, faked -----------------------------------------------------------------

calls = []


def provenance(node_schedule, kernel_name, is_extern=False):
    calls.append(kernel_name)
    return len(calls)


debug = types.ModuleType("torch._inductor.debug")
debug.set_kernel_post_grad_provenance_tracing = provenance
triton = types.ModuleType("torch._inductor.codegen.triton")
triton.set_kernel_post_grad_provenance_tracing = provenance   # `from ..debug import ...`
st._on_inductor_provenance(debug)
st._on_inductor_provenance(triton)
st._on_inductor_provenance(debug)   # once only
check(triton.set_kernel_post_grad_provenance_tracing is debug.set_kernel_post_grad_provenance_tracing
      and debug.set_kernel_post_grad_provenance_tracing is not provenance, "one wrapper in both modules")


class IRNode:
    def __init__(self, *origins, origin_node=None):
        self.origins = set(origins)
        self.origin_node = origin_node


class SchedulerNode:
    def __init__(self, *origins, origin_node=None):
        self.node = IRNode(*origins, origin_node=origin_node)

    def get_nodes(self):
        return [self]


class FusedSchedulerNode:
    def __init__(self, *snodes):
        self.snodes = snodes
        self.node = None

    def get_nodes(self):
        return list(self.snodes)


class EnableReduction:
    @staticmethod
    def get_nodes():   # a marker class in a node schedule, never an instance
        raise AssertionError("markers have no nodes")


class ExternKernel:
    def __init__(self, origin, *origins):
        self.origin_node = origin
        self.origins = set(origins)


class GraphLowering:
    pass


class CompiledFxGraph:
    def __init__(self, current_callable, graph, gm, source_code=""):
        self.current_callable = current_callable
        self.source_code = source_code

    def __call__(self, *args):
        return "ran"


out_code = types.ModuleType("torch._inductor.output_code")
out_code.CompiledFxGraph = CompiledFxGraph
st._on_inductor(out_code)
st._on_inductor(out_code)   # once only
cfc_mm = Node(nn_module_stack=stack(h1, mlp1, cfc1))
gelu = Node(nn_module_stack=stack(h1, mlp1, ("L['self'].transformer.h.1.mlp.gelu", object)))
graph = GraphLowering()
st._V = types.SimpleNamespace(graph=graph)
tracing = debug.set_kernel_post_grad_provenance_tracing
r = tracing([SchedulerNode(ln2), EnableReduction, SchedulerNode(resid, grad_sum)], "triton_per_fused_add_ln_0")
eq(r, 1, "Inductor's own call runs and returns")
tracing(ExternKernel(cfc_mm, cfc_mm, bare), "extern_kernels.addmm", is_extern=True)
tracing([FusedSchedulerNode(SchedulerNode(gelu))], "triton_poi_fused_gelu_1")
tracing(ExternKernel(None, fwd), "torch.ops.aten.mm.default", True)
tracing(ExternKernel(None, h0), "torch.ops.aten._scaled_dot_product_cudnn_attention.default", is_extern=True)
tracing([SchedulerNode(loss)], "triton_red_fused_loss_2")
tracing([SchedulerNode(loss, ln2, origin_node=ln2)], "triton_per_fused_stream_ln_4")   # recomputes the loss
ln1_var = Node(nn_module_stack=stack(("L['self'].transformer.h.0", Block), ("L['self'].transformer.h.0.ln_1", object)))
x0 = Node(from_node=["add"], users=[ln1_var])   # the embeddings' sum, recomputed in h.0's layer norm
tracing([SchedulerNode(x0, ln1_var)], "triton_red_fused_var_mean_5")
tracing([SchedulerNode(bare, Node(op="placeholder", nn_module_stack=stack(h1)))], "triton_poi_fused_3")
eq(calls, ["triton_per_fused_add_ln_0", "extern_kernels.addmm", "triton_poi_fused_gelu_1",
           "torch.ops.aten.mm.default", "torch.ops.aten._scaled_dot_product_cudnn_attention.default",
           "triton_red_fused_loss_2", "triton_per_fused_stream_ln_4", "triton_red_fused_var_mean_5",
           "triton_poi_fused_3"],
   "every call reached Inductor's function")
cg = CompiledFxGraph(None, graph, None)
want = ("triton_per_fused_add_ln_0\ttransformer.h.1\n"
        "@mm\ttransformer.h.1/mlp/c_fc\n"
        "triton_poi_fused_gelu_1\ttransformer.h.1/mlp/gelu\n"
        "@mm\ttransformer.h.1/mlp/c_fc\n"
        "\ttransformer.h.0/ln_1\n"
        "triton_red_fused_loss_2\t.\n"
        "triton_per_fused_stream_ln_4\ttransformer.h.1/ln_2\n"
        "triton_red_fused_var_mean_5\ttransformer.h.0/ln_1\n"
        "triton_poi_fused_3\t\n")
eq(cg.__dict__.get(st._TABLE), want, "the table")
check(st._SITES not in graph.__dict__, "the notes leave the graph")
eq(pickle.loads(pickle.dumps(cg)).__dict__.get(st._TABLE), want, "the table through pickling (Inductor's cache)")
eq(CompiledFxGraph(None, GraphLowering(), None).__dict__.get(st._TABLE), "", "a graph without kernel calls")

# ---- the first call hands it over ---------------------------------------------------------------

got = []


def kernel_modules(nid, table):
    got.append((nid, table))
    return 1


def intern(name):
    return {b"compiled_0": 7, b"compiled_1": 8}.get(name, 9)


st._lib = types.SimpleNamespace(steptrace_py_intern=intern, steptrace_py_kernel_modules=kernel_modules)
st._module = lambda nid: got.append(("module", nid))
st._module_end = lambda: got.append(("end",))
st._state = st.ACTIVE
st._compiling = lambda: False
eq(cg(), "ran", "the call runs")
cg()
eq(got, [(7, want.encode()), ("module", 7), ("end",), ("module", 7), ("end",)],
   "the table to the recorder once, for the region's name, before its region opens")

# a graph from Inductor's cache compiled without steptrace: one line, its region stays
err = io.StringIO()
sys.stderr, saved = err, sys.stderr
try:
    plain = CompiledFxGraph.__new__(CompiledFxGraph)
    del got[:]
    plain()
    plain()
finally:
    sys.stderr = saved
eq(got, [("module", 8), ("end",), ("module", 8), ("end",)], "no table: the region alone")
check(err.getvalue().count("\n") == 1 and "compiled_1 has no kernel table" in err.getvalue(),
      "no table: one line, got %r" % err.getvalue())

# a failure while noting: Inductor goes on, the graph keeps no table, one line
err = io.StringIO()
sys.stderr, saved = err, sys.stderr
try:
    del calls[:]
    broken = GraphLowering()
    st._V = types.SimpleNamespace(graph=broken)
    tracing([types.SimpleNamespace(get_nodes=lambda: 1 / 0)], "triton_poi_fused_0")
    tracing([SchedulerNode(fwd)], "triton_poi_fused_1")
    g2 = CompiledFxGraph(None, broken, None)
finally:
    sys.stderr = saved
eq(calls, ["triton_poi_fused_0", "triton_poi_fused_1"], "after a failure Inductor's calls still run")
check(st._TABLE not in g2.__dict__, "after a failure: no table")
check(err.getvalue().count("\n") == 1 and "ZeroDivisionError" in err.getvalue(),
      "after a failure: one line, got %r" % err.getvalue())

if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
print("test_compiled.py: ok")
