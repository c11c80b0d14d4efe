"""steptrace's Python side for PyTorch: an unmodified training script, annotated.

Armed by steptrace's sitecustomize under `steptrace record -- COMMAND`
(--torch auto or ops). Once the program imports torch it installs PyTorch's
own global hooks and tells the recorder (libsteptrace_inject.so, already in
the process, through ctypes) what the training loop is doing:

- steps: the end of each step of the primary optimizer (the first whose
  step completes) ends a training step; the next begins there, so data
  loading and zero_grad belong to it (record/nvtx.h and record/torch.h
  have the rules, inference loops without an optimizer included);
- phases: data (the loop waiting on a DataLoader iterator), zero_grad
  (Optimizer.zero_grad, Module.zero_grad), forward (the outermost module
  call), backward (torch.autograd.backward, so Tensor.backward, and
  torch.autograd.grad), optimizer (Optimizer.step);
- modules: each nn.Module call, named relative to the module call that
  encloses it (its attribute path there: "transformer.h.3", then "attn");
  the outermost by its class. The backward's kernels are put under the
  module whose forward made them by the recorder, from the autograd
  sequence numbers: the forward's are read at each module call through
  at::sequence_number::peek, the backward's from the ranges PyTorch's NVTX
  profiler opens around each autograd node (scope BACKWARD_FUNCTION only,
  turned on for the length of each backward call);
- memory: with PyTorch's cudaMallocAsync backend (--torch-alloc async),
  the blocks of the parameters (at the first call of each outermost
  module), of their gradients (after each backward), of the optimizer's
  state (after each step, when it changed) and of the outermost module's
  tensor arguments (input) are tagged with their category (the caching
  allocator's segments hold many tensors: a tag would say nothing);
- parameters: at the first optimizer step, the sizes of its parameter
  groups (what requires a gradient), which size the gradients for
  `explain --what-if ranks=N`;
- --torch ops: every aten op with its input shapes, through
  emit_nvtx(record_shapes=True), kept on from the first module call;
- torch.compile: each compiled graph's call (Inductor's CompiledFxGraph) is
  a range "compiled_N" under the module that calls it; the hooks do nothing
  while Dynamo traces. Its kernels go under the modules that own them: at
  code generation the shim notes each kernel call of the graph's wrapper
  with the module path of its FX nodes (their nn_module_stack), and the
  graph's first call hands that table to the recorder (record/compiled.h).

What it costs (issue 36). PyTorch's global module hooks send every
Module.__call__ of the process down its slow path, so module ranges are
recorded on a sample of the steps: the recorder says after each optimizer
step what the next one records (steptrace_py_step: modules, phases only,
or nothing), and the global hooks are installed for the steps with
modules only; on the others a pre- and post-hook on each outermost module
alone keep the forward phase and the inputs' tags, and every other
Module.__call__ takes its fast path (record/torch.h; `record
--modules-every N`). The backward's modules come from autograd's current
node, read by the recorder at each launch of autograd's thread
(torch::autograd::get_current_node, checked once here on a tiny CPU
graph), not from PyTorch's NVTX profiler, which opens a range per node
(the fallback when the check fails). Armed (`record --armed`), only the
optimizer hooks run between triggers: they count the steps. The host time
the hooks spend is given to the recorder once per step
(steptrace_py_cost, where the library has it).

Switches for measuring (A/B): STEPTRACE_MODULES_EVERY=N (set by
--modules-every), STEPTRACE_TORCH_BACKWARD=node|profiler|off (how the
backward's modules are found), STEPTRACE_TORCH_SKIP (below).

Nothing happens until CUDA is initialised in a process that steptrace
records; in any other process (torchrun's launcher, a DataLoader worker)
the hooks stay idle, and where the recorder says the process does not
record they are removed. Any failure here turns the annotation off with one
line on stderr; the program itself runs on.
"""
import ctypes
import functools
import itertools
import os
import re
import sys
import threading
import weakref

PHASE_DATA, PHASE_ZERO_GRAD, PHASE_FORWARD, PHASE_BACKWARD, PHASE_OPTIMIZER = 1, 2, 3, 4, 5
# trace/types.h enum st_mem_category
CAT_PARAMETER, CAT_GRADIENT, CAT_OPTIMIZER, CAT_INPUT = 1, 2, 3, 7

PENDING, ACTIVE, OFF = 0, 1, -1
# what a step records (record/torch.h enum ranges_torch_level)
LEVEL_OFF, LEVEL_PHASES, LEVEL_MODULES = 0, 1, 2

_mode = "auto"
# STEPTRACE_TORCH_SKIP=backward,modules,hooks,tags: a diagnostic that leaves pieces out, to
# find what recording costs (the bundle then lacks them): the backward's profiler (no
# modules in the backward), the module calls' ranges (hooks still run), the module hooks
# altogether (no forward phase either), the memory tags
_skip = set(filter(None, os.environ.get("STEPTRACE_TORCH_SKIP", "").split(",")))
_state = PENDING
_torch = None
_lib = None
_tls = threading.local()
_handles = []
_names = {}                 # (id(parent) or 0, id(module)) -> (weakref to module, name id)
_quals = {}                 # id(parent) -> (weakref to parent, {id(child): qualified name})
_roots = {}                 # id(root) -> (weakref, [parameters])
_primary = None             # weakref to the primary optimizer
_opt_state_sizes = {}       # id(optimizer) -> len(state) when last tagged
_tagged = set()             # id(root) whose parameters this recording has tagged
# Tags say something only of blocks a tensor owns whole: with PyTorch's cudaMallocAsync backend
# (--torch-alloc async); the caching allocator's segments hold many tensors, so none is tagged
_tags_on = "cudaMallocAsync" in os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")
_compiling = None
_prof_on = None
_prof_off = None
_compiled_ids = [0]
_armed = bool(os.environ.get("STEPTRACE_ARMED"))
# how the backward's modules are found: autograd's current node (node), PyTorch's NVTX profiler
# (profiler), or not at all (off)
_backward_mode = os.environ.get("STEPTRACE_TORCH_BACKWARD", "node")
_level = LEVEL_MODULES      # what the step now running records (the recorder says, _apply_level)
_global_handles = []        # the global module hooks, while installed
_root_handles = {}          # id(root) -> its own pre- and post-hook, while installed
_costing = False            # the recorder takes the hooks' host time (steptrace_py_cost)
_spent = [0]                # ns the hooks spent in this step
_ns = None                  # time.perf_counter_ns
_orig_backward = None       # torch.autograd.backward as PyTorch has it

# the recorder's calls, bound at activation
_phase = _module = _module_end = _step = _tag_call = _cost = None


def _say(msg):
    sys.stderr.write("steptrace: %s (pid %d)\n" % (msg, os.getpid()))


# ---- names ----------------------------------------------------------------


def relative_name(parent, module, qualified_names):
    """The module's name within parent: its attribute path there, else its class."""
    name = qualified_names.get(id(module)) if parent is not None else None
    return name if name else type(root_of(module)).__name__


def root_of(module):
    """What a root module is called by: torch.compile's wrapper by the module it wraps."""
    return getattr(module, "_orig_mod", module)


def _qualified(parent):
    entry = _quals.get(id(parent))
    if entry is not None and entry[0]() is parent:
        return entry[1]
    names = {}
    try:
        for name, child in parent.named_modules(remove_duplicate=False):
            if name and id(child) not in names:
                names[id(child)] = name
    except Exception:
        pass
    _quals[id(parent)] = (weakref.ref(parent), names)
    return names


def _name_id(parent, module):
    key = (id(parent) if parent is not None else 0, id(module))
    entry = _names.get(key)
    if entry is not None and entry[0]() is module:
        return entry[1]
    name = relative_name(parent, module, _qualified(parent) if parent is not None else {})
    nid = _lib.steptrace_py_intern(name.encode("utf-8", "replace"))
    try:
        _names[key] = (weakref.ref(module), nid)
    except TypeError:
        pass
    return nid


# ---- memory tags ------------------------------------------------------------


def _tag(tensors, category):
    """Tags the blocks of CUDA tensors that own their whole block (address, bytes) as category."""
    if "tags" in _skip or not _tags_on:
        return
    by_device = {}
    for t in tensors:
        if t is None:
            continue
        try:
            dev = t.get_device()
            if dev < 0:
                continue
            by_device.setdefault(dev, []).extend((t.data_ptr(), t.numel() * t.element_size()))
        except Exception:
            continue
    for dev, flat in by_device.items():
        n = len(flat) // 2
        if n:
            _tag_call((ctypes.c_uint64 * len(flat))(*flat), n, category, dev)


def _tensors_in(value, out, depth=0):
    if isinstance(value, _torch.Tensor):
        out.append(value)
    elif depth < 2 and isinstance(value, (list, tuple)):
        for v in value:
            _tensors_in(v, out, depth + 1)
    elif depth < 2 and isinstance(value, dict):
        for v in value.values():
            _tensors_in(v, out, depth + 1)
    return out


def _root_params(root):
    """A root module's parameters, and whether this recording has yet to tag them."""
    entry = _roots.get(id(root))
    if entry is not None and entry[0]() is root:
        params = entry[1]
    else:
        params = list(root.parameters())
        _roots[id(root)] = (weakref.ref(root), params)
    first = id(root) not in _tagged
    _tagged.add(id(root))
    return params, first


def _tag_grads():
    if not _tags_on or "tags" in _skip:
        return
    seen = set()
    grads = []
    for ref, params in list(_roots.values()):
        if ref() is None:
            continue
        for p in params:
            g = p.grad
            if g is not None and id(g) not in seen:
                seen.add(id(g))
                grads.append(g)
    _tag(grads, CAT_GRADIENT)


def _tag_optimizer_state(opt):
    if not _tags_on:
        return
    state = getattr(opt, "state", None)
    if not state or _opt_state_sizes.get(id(opt)) == len(state):
        return
    _opt_state_sizes[id(opt)] = len(state)
    tensors = []
    for s in state.values():
        if isinstance(s, dict):
            tensors.extend(v for v in s.values() if isinstance(v, _torch.Tensor))
    _tag(tensors, CAT_OPTIMIZER)


# ---- the parameters' sizes ----------------------------------------------------------


def _report_params(opt):
    """Once, at the first optimizer step: each of its parameter groups' parameters that
    require a gradient (how many, their elements, bytes and dtype), for the bundle's footer,
    where `explain --what-if ranks=N` finds the gradients' size with or without memory tags."""
    fn = getattr(_lib, "steptrace_py_params", None)
    if fn is None:
        return
    codes = {}   # trace/types.h enum st_dtype
    for name, code in (("float32", 1), ("bfloat16", 2), ("float16", 3), ("int32", 4), ("int64", 5),
                       ("float64", 6), ("uint8", 7)):
        if hasattr(_torch, name):
            codes[getattr(_torch, name)] = code
    flat, seen = [], set()
    for group in getattr(opt, "param_groups", None) or ():
        tensors = elements = nbytes = 0
        dtypes = set()
        for p in group.get("params", ()) if isinstance(group, dict) else ():
            if not isinstance(p, _torch.Tensor) or not p.requires_grad or id(p) in seen:
                continue
            seen.add(id(p))
            n = p.numel()
            tensors, elements, nbytes = tensors + 1, elements + n, nbytes + n * p.element_size()
            dtypes.add(p.dtype)
        flat += [tensors, elements, nbytes, codes.get(next(iter(dtypes)), 0) if len(dtypes) == 1 else 0]
    if flat:
        fn.argtypes = (ctypes.c_void_p, ctypes.c_uint32)
        fn.restype = None
        fn((ctypes.c_uint64 * len(flat))(*flat), len(flat) // 4)


# ---- activation -------------------------------------------------------------------


def _peek_address():
    """The address of at::sequence_number::peek in the program's libtorch, or None."""
    lib_dir = os.path.join(os.path.dirname(_torch.__file__), "lib")
    for name in ("libtorch_cpu.so", "libtorch.so"):
        try:
            lib = ctypes.CDLL(os.path.join(lib_dir, name), mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            fn = lib._ZN2at15sequence_number4peekEv
            return ctypes.cast(fn, ctypes.c_void_p).value
        except (OSError, AttributeError):
            continue
    return None


def _backward_profiler():
    """Calls that turn PyTorch's NVTX profiler on and off for backward nodes only, or (None, None)."""
    try:
        from torch._C._profiler import RecordScope
        P = _torch.autograd.profiler
        config = P.ProfilerConfig(P.ProfilerState.NVTX, False, False, False, False, False,
                                  P._ExperimentalConfig())
        scopes = {RecordScope.BACKWARD_FUNCTION}
        enabled = _torch._C._autograd._profiler_enabled

        def on():
            if enabled():
                return False   # the program profiles itself: leave it be
            P._enable_profiler(config, set(), scopes)
            _lib.steptrace_py_profiler(1)
            return True

        def off():
            _lib.steptrace_py_profiler(0)
            P._disable_profiler()

        return on, off
    except Exception as e:
        _say("backward kernels go under 'backward' without modules: no NVTX profiler (%s)" % e)
        return None, None


def _nodes(lib):
    """Backward modules from autograd's current node: checked on a tiny CPU graph, then on (True).

    The recorder reads torch::autograd::get_current_node at each launch of autograd's thread; here a
    prehook of two nodes of known sequence numbers asks it where a node keeps its number."""
    fn = _libtorch_symbol("_ZN5torch8autograd16get_current_nodeEv")
    if fn is None or _orig_backward is None:
        return False
    lib.steptrace_py_node_probe.argtypes = (ctypes.c_void_p, ctypes.c_uint64)
    lib.steptrace_py_node_probe.restype = ctypes.c_int
    lib.steptrace_py_nodes.argtypes = (ctypes.c_int,)
    lib.steptrace_py_nodes.restype = None
    found = []

    def probe(node, first):
        def pre(grad_outputs):
            found.append(lib.steptrace_py_node_probe(fn if first else None, node._sequence_nr()))
        return pre

    with _torch.inference_mode(False), _torch.enable_grad():
        x = _torch.ones(2, requires_grad=True)
        y = x * 2
        z = y.sum()
        handles = [z.grad_fn.register_prehook(probe(z.grad_fn, True)),
                   y.grad_fn.register_prehook(probe(y.grad_fn, False))]
        try:
            _orig_backward(z)
        finally:
            for h in handles:
                h.remove()
    if len(found) != 2 or found[0] != found[1] or found[0] <= 0:
        return False
    lib.steptrace_py_nodes(found[0])
    return True


def _libtorch_symbol(name):
    """The address of `name` in the program's libtorch, or None."""
    lib_dir = os.path.join(os.path.dirname(_torch.__file__), "lib")
    for lib_name in ("libtorch_cpu.so", "libtorch.so"):
        try:
            lib = ctypes.CDLL(os.path.join(lib_dir, lib_name), mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
            return ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
        except (OSError, AttributeError):
            continue
    return None


def _activate():
    """At the first hook call after CUDA is up: attach to the recorder, or turn everything off."""
    global _state, _lib, _phase, _module, _module_end, _step, _tag_call, _prof_on, _prof_off
    global _cost, _costing
    if not _torch.cuda.is_initialized():
        return False
    _state = OFF
    path = os.environ.get("CUDA_INJECTION64_PATH", "")
    try:
        lib = ctypes.CDLL(path, mode=os.RTLD_NOLOAD | os.RTLD_LAZY) if path else None
    except OSError:
        lib = None
    if lib is None:
        _remove_hooks()
        return False
    lib.steptrace_py_attach.argtypes = (ctypes.c_int, ctypes.c_void_p)
    lib.steptrace_py_attach.restype = ctypes.c_int
    lib.steptrace_py_intern.argtypes = (ctypes.c_char_p,)
    lib.steptrace_py_intern.restype = ctypes.c_uint32
    lib.steptrace_py_phase.argtypes = (ctypes.c_int, ctypes.c_int)
    lib.steptrace_py_phase.restype = None
    lib.steptrace_py_module.argtypes = (ctypes.c_uint32,)
    lib.steptrace_py_module.restype = None
    lib.steptrace_py_module_end.argtypes = ()
    lib.steptrace_py_module_end.restype = None
    lib.steptrace_py_profiler.argtypes = (ctypes.c_int,)
    lib.steptrace_py_profiler.restype = None
    lib.steptrace_py_step.argtypes = ()
    lib.steptrace_py_step.restype = ctypes.c_int
    lib.steptrace_py_tag.argtypes = (ctypes.c_void_p, ctypes.c_uint32, ctypes.c_int, ctypes.c_int)
    lib.steptrace_py_tag.restype = None
    peek = _peek_address()
    if not lib.steptrace_py_attach(2 if _mode == "ops" else 1, peek):
        _remove_hooks()
        return False
    _lib = lib
    _phase, _module, _module_end = lib.steptrace_py_phase, lib.steptrace_py_module, lib.steptrace_py_module_end
    _step, _tag_call = lib.steptrace_py_step, lib.steptrace_py_tag
    cost = getattr(lib, "steptrace_py_cost", None)
    if cost is not None:
        cost.argtypes = (ctypes.c_uint64,)
        cost.restype = None
        _cost, _costing = cost, True
    if _mode == "ops":
        try:
            ops = _torch.autograd.profiler.emit_nvtx(record_shapes=True)
            ops.__enter__()
            import atexit
            atexit.register(_quietly, ops.__exit__, None, None, None)
        except Exception as e:
            _say("--torch ops: emit_nvtx could not start (%s)" % e)
    elif peek and "backward" not in _skip and _backward_mode != "off":
        try:
            nodes = _backward_mode == "node" and _nodes(lib)
        except Exception:
            nodes = False
        if not nodes:
            _prof_on, _prof_off = _backward_profiler()
    elif not peek:
        _say("at::sequence_number::peek not found in libtorch: backward kernels go under "
             "'backward' without modules")
    _state = ACTIVE
    level = getattr(lib, "steptrace_py_level", None)
    if level is not None:
        level.argtypes = ()
        level.restype = ctypes.c_int
        _apply_level(level())
    return True


def _ready():
    """True when the hooks should speak to the recorder (never while Dynamo traces them:
    is_compiling() is a constant there, so the traced hook is empty and guards nothing)."""
    if _compiling():
        return False
    if _state == ACTIVE:
        return True
    if _state == OFF:
        return False
    try:
        return _activate()
    except Exception as e:
        _turn_off(e)
        return False


def _quietly(fn, *args):
    try:
        fn(*args)
    except Exception:
        pass


def _turn_off(e):
    global _state
    _state = OFF
    _remove_hooks()
    _say("PyTorch annotation turned off: %s: %s" % (type(e).__name__, e))


def _remove_hooks():
    for h in _handles + _global_handles:
        try:
            h.remove()
        except Exception:
            pass
    del _handles[:]
    del _global_handles[:]
    _roots_off()


# ---- hooks ---------------------------------------------------------------------------


def _stack():
    try:
        return _tls.stack
    except AttributeError:
        _tls.stack = []
        return _tls.stack


def _pre_hook(module, args):
    if not _ready() or not _level or not _global_handles:   # (activation may have just removed them)
        return None
    t0 = _ns() if _costing else 0
    try:
        st = _stack()
        if st:
            nid = _name_id(st[-1], module)
        else:
            _root_begins(module, args)
            nid = _name_id(None, module)
        st.append(module)
        if "modules" not in _skip or len(st) == 1:
            _module(nid)   # with "modules" skipped: the root's range alone
    except Exception as e:
        _turn_off(e)
    if t0:
        _spent[0] += _ns() - t0
    return None


def _post_hook(module, args, output):
    if _compiling() or _state != ACTIVE:
        return None
    t0 = _ns() if _costing else 0
    try:
        st = _stack()
        if st and st[-1] is module:
            st.pop()
            if "modules" not in _skip or not st:
                _module_end()
            if not st:
                _phase(PHASE_FORWARD, 0)
    except Exception as e:
        _turn_off(e)
    if t0:
        _spent[0] += _ns() - t0
    return None


def _root_begins(module, args):
    """An outermost module call begins: the forward phase, its parameters (once) and inputs tagged."""
    _phase(PHASE_FORWARD, 1)
    params, first = _root_params(module)
    if first:
        _tag(params, CAT_PARAMETER)
    _tag(_tensors_in(args, []), CAT_INPUT)


def _root_pre_hook(module, args):
    """A step with phases only: the outermost module's own hook, the global ones removed."""
    if _global_handles or _level != LEVEL_PHASES or not _ready() or _stack():
        return None
    t0 = _ns() if _costing else 0
    try:
        _root_begins(module, args)
        _tls.root_depth = getattr(_tls, "root_depth", 0) + 1
    except Exception as e:
        _turn_off(e)
    if t0:
        _spent[0] += _ns() - t0
    return None


def _root_post_hook(module, args, output):
    if _compiling() or _state != ACTIVE or not getattr(_tls, "root_depth", 0):
        return None
    try:
        _tls.root_depth -= 1
        _phase(PHASE_FORWARD, 0)
    except Exception as e:
        _turn_off(e)
    return None


# ---- what a step records: the hooks it needs ------------------------------------------


def _hooks_on():
    """The global module hooks: every module's call, forward (a step with modules)."""
    if _global_handles or "hooks" in _skip or _torch is None:
        return
    M = _import("torch.nn.modules.module")
    _global_handles.append(M.register_module_forward_pre_hook(_pre_hook))
    try:
        _global_handles.append(M.register_module_forward_hook(_post_hook, always_call=True))
    except TypeError:
        _global_handles.append(M.register_module_forward_hook(_post_hook))


def _compiled():
    """torch.compile is in use: the hooks stay where Dynamo traced them (no recompiling)."""
    if _compiled_ids[0]:
        return True
    return any(getattr(ref(), "_orig_mod", None) is not None for ref, _ in list(_roots.values()))


def _hooks_off():
    if _compiled():
        return
    for h in _global_handles:
        _quietly(h.remove)
    del _global_handles[:]


def _roots_on():
    """Each outermost module's own pre- and post-hook (a step with phases only)."""
    for rid, (ref, _) in list(_roots.items()):
        root = ref()
        if root is None or rid in _root_handles:
            continue
        pre = root.register_forward_pre_hook(_root_pre_hook)
        try:
            post = root.register_forward_hook(_root_post_hook, always_call=True)
        except TypeError:
            post = root.register_forward_hook(_root_post_hook)
        _root_handles[rid] = (pre, post)


def _roots_off():
    for handles in _root_handles.values():
        for h in handles:
            _quietly(h.remove)
    _root_handles.clear()


def _apply_level(level):
    """Installs what the step now running records needs (record/torch.h, ranges_torch_level)."""
    global _level
    if _level == LEVEL_OFF and level != LEVEL_OFF:   # a new recording (armed): its own tags
        _tagged.clear()
        _opt_state_sizes.clear()
    _level = level
    if level == LEVEL_MODULES or (level == LEVEL_PHASES and (not _roots or _compiled())):
        _roots_off()   # the global hooks do it all (a step with phases only before any root is known)
        _hooks_on()
    elif level == LEVEL_PHASES:
        _hooks_off()
        _roots_on()
    else:
        _hooks_off()
        _roots_off()


def _import(name):
    import importlib
    return importlib.import_module(name)


def _opt_pre_hook(opt, args, kwargs):
    if _ready() and _level:
        _phase(PHASE_OPTIMIZER, 1)
    return None


def _opt_post_hook(opt, args, kwargs):
    global _primary
    if _compiling() or _state != ACTIVE:
        return None
    try:
        if _level:
            _phase(PHASE_OPTIMIZER, 0)
        if _primary is None or _primary() is None:
            _primary = weakref.ref(opt)
            _quietly(_report_params, opt)
        if _primary() is opt:
            if _costing:
                _cost(_spent[0])   # the hooks' host time in the step that ends here
                _spent[0] = 0
            level = _step()
            if level != _level:
                _apply_level(level)
        if _level:
            _tag_optimizer_state(opt)
    except Exception as e:
        _turn_off(e)
    return None


def _phase_wrapper(fn, phase, after=None):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _ready() or not _level:
            return fn(*args, **kwargs)
        t0 = _ns() if _costing else 0
        _phase(phase, 1)
        prof = (_prof_on() if phase == PHASE_BACKWARD and _prof_on is not None and _level == LEVEL_MODULES
                else False)
        if t0:
            _spent[0] += _ns() - t0
        try:
            return fn(*args, **kwargs)
        finally:
            t0 = _ns() if _costing else 0
            if prof:
                _prof_off()
            if after is not None and _state == ACTIVE:
                try:
                    after()
                except Exception as e:
                    _turn_off(e)
            if _state == ACTIVE:
                _phase(phase, 0)
            if t0:
                _spent[0] += _ns() - t0
    wrapper.__steptrace_wrapped__ = fn
    return wrapper


def _wrap(owner, attr, phase, after=None):
    fn = getattr(owner, attr, None)
    if fn is None or getattr(fn, "__steptrace_wrapped__", None) is not None:
        return
    setattr(owner, attr, _phase_wrapper(fn, phase, after))


def _patch_compiled_graph(cls):
    """Each call of a compiled graph (Inductor's CompiledFxGraph) is a range "compiled_N"."""
    call = getattr(cls, "__call__", None)
    if call is None or getattr(call, "__steptrace_wrapped__", None) is not None:
        return

    @functools.wraps(call)
    def __call__(self, *args, **kwargs):
        if _state != ACTIVE or _compiling() or not _level:
            return call(self, *args, **kwargs)
        nid = self.__dict__.get("_steptrace_name_id")
        if nid is None:
            name = "compiled_%d" % _compiled_ids[0]
            nid = _lib.steptrace_py_intern(name.encode())
            _compiled_ids[0] += 1
            try:
                self.__dict__["_steptrace_name_id"] = nid
            except Exception:
                pass
            _send_kernel_table(self, nid, name)
        _module(nid)
        try:
            return call(self, *args, **kwargs)
        finally:
            _module_end()
    __call__.__steptrace_wrapped__ = call
    cls.__call__ = __call__


# ---- torch.compile: Inductor's kernels under their modules -------------------------------
#
# While Inductor writes a graph's wrapper it calls debug.set_kernel_post_grad_provenance_tracing
# once per kernel call, in call order, with the call's scheduler nodes (an extern kernel: its IR
# node) and its kernel's name; their FX nodes carry the module calls that made them
# (nn_module_stack; a backward node its forward node's, fwd_nn_module_stack). The wrapper of that
# function notes on the graph being lowered (V.graph) each call's Triton kernel and module path;
# CompiledFxGraph's __init__ turns the notes into the table record/compiled.h reads and keeps it on
# the compiled graph, so that Inductor's cache keeps it too; the graph's first call hands it to
# the recorder for its region. Any failure leaves the kernels under compiled_N, with one line.

_PROVENANCE = "set_kernel_post_grad_provenance_tracing"
_SITES = "_steptrace_sites"      # GraphLowering: ([(kernel name, path)], {id(fx node): chain}), None: broken
_TABLE = "_steptrace_kernels"    # CompiledFxGraph: its table (str; "" no kernel call)
_PATH_UNSAFE = re.compile(r"[/\t\n\r]")
_provenance = {}                 # Inductor's function -> its wrapper
_compile_said = set()            # what this section said on stderr, once each
_kernel_modules = None           # the recorder's steptrace_py_kernel_modules; False: it has none
_V = None                        # torch._inductor.virtualized.V


def _compile_say(key, msg):
    if key not in _compile_said:
        _compile_said.add(key)
        _say("torch.compile: " + msg)


def fqn_split(qualified):
    """Dynamo's qualified name of a module call ("L['self'].transformer.h[3]") as
    (root variable, attribute path): ("self", "transformer.h.3")."""
    m = re.match(r"""^[LG]\[['"]([^'"]*)['"]\]""", qualified)
    root, rest = (m.group(1), qualified[m.end():]) if m else ("self", qualified)
    rest = re.sub(r"""\._modules\[['"]([^'"]*)['"]\]""", r".\1", rest)
    rest = re.sub(r"""\[['"]?([^'"\]]*)['"]?\]""", r".\1", rest)
    return root, rest.strip(".")


def module_chain(stack):
    """An nn_module_stack ({key: (qualified name, class)}, outermost call first) as a list of
    ((root, attribute path), name): each call named as the module hooks name it, by its path
    relative to the call that encloses it, the first relative to the compiled frame's module
    (L['self'], whose own call encloses the region: left out), else by its class."""
    chain = []
    prev = None
    for value in stack.values():
        qualified, cls = (value[0], value[1]) if isinstance(value, (tuple, list)) else (value, None)
        root, path = fqn_split(str(qualified))
        if prev is None and root == "self" and not path:
            continue
        if prev is not None and prev[0] == root and (not prev[1] or path.startswith(prev[1] + ".")):
            name = path[len(prev[1]) + 1:] if prev[1] else path
        elif prev is None and root == "self":
            name = path
        else:
            name = getattr(cls, "__name__", "") or path.rsplit(".", 1)[-1] or root
        if name:
            chain.append(((root, path), name))
            prev = (root, path)
    return chain


def node_chain(node):
    """The module calls an FX node of Inductor's graph was made in (module_chain): [] for the
    compiled frame's own code (a loss computed in the model's forward), None when the node says
    nothing (made by a pass; the backward's gradient sums)."""
    meta = getattr(node, "meta", None) or {}
    for key in ("nn_module_stack", "fwd_nn_module_stack"):
        if key in meta:
            return module_chain(meta[key]) if meta[key] else []
    if "from_node" in meta and not meta.get("is_gradient_acc"):
        return []
    return None


def common_path(chains):
    """The table's PATH (record/compiled.h) of the chains' common ancestor: module names joined
    by "/", "." for the compiled frame's own module, "" when no chain says anything."""
    known = [c for c in chains if c is not None]
    if not known:
        return ""
    common = known[0]
    for c in known[1:]:
        n = 0
        while n < len(common) and n < len(c) and common[n][0] == c[n][0]:
            n += 1
        common = common[:n]
    return "/".join(_PATH_UNSAFE.sub("_", name) for _, name in common) or "."


_MATMULS = {"mm", "addmm", "bmm", "baddbmm", "addmv", "mv", "matmul", "_int_mm", "_scaled_mm",
            "_grouped_mm", "_scaled_grouped_mm"}


def _made_of(ir_node):
    """The FX nodes whose values an IR node holds: its origin_node when Inductor knows it, else
    the last of the nodes it was made of (origins with no user among them: not those it only
    recomputes on the way, as a layer norm recomputes the residual stream's sums)."""
    origin = getattr(ir_node, "origin_node", None)
    if origin is not None:
        return [origin]
    made = set(getattr(ir_node, "origins", None) or ())
    return [n for n in made if not any(u in made for u in (getattr(n, "users", None) or ()))]


def kernel_site(node_schedule, kernel_name, is_extern, memo=None):
    """One kernel call of a graph's wrapper as the table has it: (its Triton kernel's name, or
    for an extern kernel "@mm" when it is a matrix product and "" otherwise; the module path of
    the FX nodes whose values it computes)."""
    nodes = []
    if is_extern:
        nodes = _made_of(node_schedule)
        parts = [p for p in str(kernel_name).split(".") if p not in ("default", "out", "Tensor")]
        name = "@mm" if parts and parts[-1] in _MATMULS else ""
    else:
        for snode in node_schedule:
            get_nodes = getattr(snode, "get_nodes", None)
            if not callable(get_nodes) or isinstance(snode, type):
                continue   # Inductor's markers (EnableReduction, DisableReduction)
            for sub in get_nodes():
                nodes.extend(_made_of(getattr(sub, "node", None)))
        name = _PATH_UNSAFE.sub("_", str(kernel_name))
    chains = []
    for n in nodes:
        if getattr(n, "op", "call_function") != "call_function":
            continue
        if memo is None:
            chains.append(node_chain(n))
            continue
        chain = memo.get(id(n), memo)
        if chain is memo:
            chain = memo[id(n)] = node_chain(n)
        chains.append(chain)
    return name, common_path(chains)


def kernel_table(sites):
    """The table record/compiled.h reads: a line per kernel call, "NAME\tPATH"."""
    return "".join("%s\t%s\n" % site for site in sites)


def _provenance_wrapper(fn):
    @functools.wraps(fn)
    def set_kernel_post_grad_provenance_tracing(node_schedule, kernel_name, *args, **kwargs):
        if _state != OFF:
            _note_kernel_call(node_schedule, kernel_name, args[0] if args else kwargs.get("is_extern", False))
        return fn(node_schedule, kernel_name, *args, **kwargs)
    set_kernel_post_grad_provenance_tracing.__steptrace_wrapped__ = fn
    return set_kernel_post_grad_provenance_tracing


def _note_kernel_call(node_schedule, kernel_name, is_extern):
    """Notes a kernel call on the graph Inductor is lowering; never raises."""
    global _V
    d = None
    try:
        if _V is None:
            from torch._inductor.virtualized import V
            _V = V
        d = getattr(_V.graph, "__dict__", None)
        if not isinstance(d, dict):
            return
        notes = d.setdefault(_SITES, ([], {}))
        if notes is not None:
            notes[0].append(kernel_site(node_schedule, kernel_name, is_extern, notes[1]))
    except Exception as e:
        if isinstance(d, dict):
            d[_SITES] = None
        _compile_say("note", "a graph's kernels stay under its compiled_N: %s: %s" % (type(e).__name__, e))


def _on_inductor_provenance(module):
    """Wraps Inductor's provenance call where `module` (torch._inductor.debug, or codegen/triton.py,
    which imports it by name) holds it."""
    fn = getattr(module, _PROVENANCE, None)
    if not callable(fn):
        if module.__name__ == "torch._inductor.debug":
            _compile_say("provenance", "Inductor has no %s: compiled kernels stay under compiled_N"
                         % _PROVENANCE)
        return
    if getattr(fn, "__steptrace_wrapped__", None) is not None:
        return
    wrapper = _provenance.get(fn)
    if wrapper is None:
        wrapper = _provenance[fn] = _provenance_wrapper(fn)
    setattr(module, _PROVENANCE, wrapper)


def _unique_kernel_names():
    config = sys.modules.get("torch._inductor.config")
    try:
        return bool(config.triton.unique_kernel_names)
    except AttributeError:
        return True


def _patch_compiled_init(cls):
    """A CompiledFxGraph made by code generation keeps its kernel table (Inductor's cache too)."""
    init = getattr(cls, "__init__", None)
    if init is None or getattr(init, "__steptrace_wrapped__", None) is not None:
        return

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        init(self, *args, **kwargs)
        if _state == OFF or not _provenance:
            return
        try:
            notes = ([], None)   # no kernel noted: a graph without kernel calls
            for a in itertools.chain(args, kwargs.values()):
                d = getattr(a, "__dict__", None)
                if isinstance(d, dict) and _SITES in d:
                    notes = d.pop(_SITES)
                    break
            if notes is None:
                return   # broken while noting: said then
            if not notes[0] and ".run(" in (getattr(self, "source_code", None) or ""):
                _compile_say("silent", "Inductor wrote kernel calls without its provenance call: "
                             "they stay under compiled_N")
                return
            if not _unique_kernel_names():
                _compile_say("names", "Inductor's kernels are not named one by one "
                             "(config.triton.unique_kernel_names): they stay under compiled_N")
                return
            self.__dict__[_TABLE] = kernel_table(notes[0])
        except Exception as e:
            _compile_say("table", "a graph's kernels stay under its compiled_N: %s: %s" % (type(e).__name__, e))
    __init__.__steptrace_wrapped__ = init
    cls.__init__ = __init__


def _send_kernel_table(graph, nid, name):
    """At a compiled graph's first call: its table to the recorder, for its region `nid`; never raises."""
    global _kernel_modules
    try:
        table = graph.__dict__.get(_TABLE)
        if table is None:
            if not _compile_said:
                _compile_say("cache", "%s has no kernel table (Inductor's cache gave it, compiled without "
                             "steptrace? TORCHINDUCTOR_FX_GRAPH_CACHE=0 recompiles): its kernels stay "
                             "under it" % name)
            return
        if not table:
            return
        if _kernel_modules is None:
            fn = getattr(_lib, "steptrace_py_kernel_modules", None)
            if fn is not None:
                fn.argtypes = (ctypes.c_uint32, ctypes.c_char_p)
                fn.restype = ctypes.c_int
            _kernel_modules = fn or False
        if _kernel_modules and not _kernel_modules(nid, table.encode("utf-8", "replace")):
            _compile_say("refused", "the recorder did not take %s's kernel table: its kernels stay under it"
                         % name)
    except Exception as e:
        _compile_say("send", "%s's kernels stay under it: %s: %s" % (name, type(e).__name__, e))


def _on_inductor(module):
    cls = getattr(module, "CompiledFxGraph", None)
    if cls is not None:
        _patch_compiled_graph(cls)
        _patch_compiled_init(cls)


def _on_torch(torch):
    global _torch, _compiling, _ns, _orig_backward
    _torch = torch
    import time
    _ns = time.perf_counter_ns
    _orig_backward = torch.autograd.backward
    try:
        _compiling = torch.compiler.is_compiling
    except AttributeError:
        _compiling = getattr(getattr(torch, "_dynamo", None), "is_compiling", lambda: False)
    import importlib
    import warnings
    # our global hooks are why torch.compile would warn that they fire for its wrapper too
    warnings.filterwarnings("ignore", message=r"Using `torch.compile\(module\)` when there are global hooks")
    # submodules by import, not attribute: torch.optim's __init__ deletes the name `optimizer`
    O = importlib.import_module("torch.optim.optimizer")
    dataloader = importlib.import_module("torch.utils.data.dataloader")
    if not _armed:   # an armed process installs them for a trigger's steps only
        _hooks_on()
    _handles.append(O.register_optimizer_step_pre_hook(_opt_pre_hook))
    _handles.append(O.register_optimizer_step_post_hook(_opt_post_hook))
    _wrap(torch.optim.Optimizer, "zero_grad", PHASE_ZERO_GRAD)
    _wrap(torch.nn.Module, "zero_grad", PHASE_ZERO_GRAD)
    _wrap(torch.autograd, "backward", PHASE_BACKWARD, _tag_grads)
    _wrap(torch.autograd, "grad", PHASE_BACKWARD, _tag_grads)
    _wrap(dataloader._BaseDataLoaderIter, "__next__", PHASE_DATA)
    for name in ("torch._inductor.output_code", "torch._inductor.codecache"):
        _when_imported(name, _on_inductor)
    for name in ("torch._inductor.debug", "torch._inductor.codegen.triton"):
        _when_imported(name, _on_inductor_provenance)


# ---- import hooks -------------------------------------------------------------------

_waiting = {}   # module name -> [callbacks after it is imported]


class _Finder:
    """Runs callbacks once a watched module has been imported (executed) whole."""

    _busy = False

    def find_spec(self, name, path=None, target=None):
        if name not in _waiting or _Finder._busy:
            return None
        import importlib.util
        _Finder._busy = True
        try:
            spec = importlib.util.find_spec(name)
        finally:
            _Finder._busy = False
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        loader = spec.loader
        exec_module = loader.exec_module

        def exec_then_call(module):
            exec_module(module)
            try:
                del loader.exec_module
            except AttributeError:
                pass
            for callback in _waiting.pop(name, []):
                try:
                    callback(module)
                except Exception as e:
                    _say("no PyTorch annotation: %s: %s" % (type(e).__name__, e))
            if not _waiting and _FINDER in sys.meta_path:
                sys.meta_path.remove(_FINDER)

        loader.exec_module = exec_then_call
        return spec


_FINDER = _Finder()


def _when_imported(name, callback):
    if name in sys.modules:
        callback(sys.modules[name])
        return
    _waiting.setdefault(name, []).append(callback)
    if _FINDER not in sys.meta_path:
        sys.meta_path.insert(0, _FINDER)


def install(mode="auto"):
    """Arms the annotation: hooks go in once torch has been imported."""
    global _mode
    _mode = mode
    _when_imported("torch", _on_torch)
