"""test_python.py BUILD_PYTHON_DIR: steptrace's Python side without PyTorch or a GPU.

- sitecustomize, first on PYTHONPATH, arms steptrace_torch under
  STEPTRACE_TORCH and chains to the sitecustomize it shadows (which runs
  once, as `sitecustomize`); without STEPTRACE_TORCH it arms nothing;
- a program that never imports torch is left alone (only the import hook
  waits, and nothing else of steptrace_torch runs);
- a `torch` that is not PyTorch (here a stub package) turns the annotation
  off with one line on stderr, and the program runs on to its end;
- module names: relative to the enclosing module call, the class for a
  root, torch.compile's wrapper by the module it wraps;
- the parameters' sizes (_report_params): per parameter group of a fake
  optimizer, the tensors that require a gradient, their elements, bytes and
  dtype (0 for a group of several), a tensor in two groups counted once,
  handed to the recorder's steptrace_py_params in one call;
- what each step records (issue 36), with a stand-in for PyTorch (the
  parts the Python side touches: module hooks global and per module, with
  Module.__call__'s fast path when there are none; optimizer step hooks;
  autograd.backward; the DataLoader's iterator) and for the recorder (its
  steptrace_py_* calls, logged): a step with modules has every module call
  on the slow path and in the recorder; a step with phases only has the
  global hooks gone (every module but the outermost on the fast path), its
  forward phase from the outermost module's own hooks, and no module call;
  an armed process between triggers calls nothing but the step count, and
  installs no module hook until a trigger's steps; the hooks' host time goes
  to the recorder once per step.
"""
import json
import os
import subprocess
import sys
import tempfile

here = os.path.dirname(os.path.abspath(__file__))
pydir = os.path.abspath(sys.argv[1])
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def run(code, env_extra, pythonpath):
    env = dict(os.environ)
    env.pop("STEPTRACE_TORCH", None)
    env.update(env_extra)
    env["PYTHONPATH"] = os.pathsep.join(pythonpath)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60)
    return p.returncode, p.stdout, p.stderr


with tempfile.TemporaryDirectory() as tmp:
    user = os.path.join(tmp, "user")
    os.makedirs(user)
    with open(os.path.join(user, "sitecustomize.py"), "w") as f:
        f.write("import os\nos.environ['USER_SITE_RAN'] = str(int(os.environ.get('USER_SITE_RAN', '0')) + 1)\n")

    probe = ("import os, sys; print(os.environ.get('USER_SITE_RAN'), 'steptrace_torch' in sys.modules, "
             "sys.modules['sitecustomize'].__file__.startswith(%r))" % user)
    rc, out, err = run(probe, {"STEPTRACE_TORCH": "auto"}, [pydir, user])
    check(rc == 0 and out.split() == ["1", "True", "True"], "chained sitecustomize: %r %r %r" % (rc, out, err))
    rc, out, err = run(probe, {}, [pydir, user])
    check(rc == 0 and out.split() == ["1", "False", "True"], "without STEPTRACE_TORCH: %r %r %r" % (rc, out, err))
    rc, out, err = run("import sys; print('ok')", {"STEPTRACE_TORCH": "auto"}, [pydir])
    check(rc == 0 and out.strip() == "ok" and not err, "alone: %r %r %r" % (rc, out, err))

    # a program that never imports torch: the finder waits, nothing else happens
    code = ("import json, steptrace_torch as s, sys; "
            "print(any(type(f).__name__ == '_Finder' for f in sys.meta_path), s._torch is None, s._state)")
    rc, out, err = run(code, {"STEPTRACE_TORCH": "auto"}, [pydir])
    check(rc == 0 and out.split() == ["True", "True", "0"] and not err, "no torch: %r %r %r" % (rc, out, err))

    # a torch that is not PyTorch: one line, and the program runs on
    fake = os.path.join(tmp, "fake")
    os.makedirs(os.path.join(fake, "torch"))
    with open(os.path.join(fake, "torch", "__init__.py"), "w") as f:
        f.write("VERSION = 'stub'\n")
    rc, out, err = run("import torch; print(torch.VERSION, 'done')", {"STEPTRACE_TORCH": "auto"}, [pydir, fake])
    check(rc == 0 and out.strip() == "stub done", "stub torch: the program did not run on: %r %r" % (rc, out))
    check(len(err.strip().splitlines()) == 1 and err.startswith("steptrace: no PyTorch annotation"),
          "stub torch: want one line on stderr, got %r" % err)

sys.path.insert(0, pydir)
import steptrace_torch as st  # noqa: E402


class Module:
    def __init__(self, children=()):
        self.children = dict(children)

    def named_modules(self, prefix="", remove_duplicate=True):
        yield prefix, self
        for name, child in self.children.items():
            yield from child.named_modules(prefix + ("." if prefix else "") + name)


class GPT(Module):
    pass


class OptimizedModule(Module):
    pass


c_fc = Module()
mlp = Module({"c_fc": c_fc})
block = Module({"attn": Module(), "mlp": mlp})
h = Module({"0": Module(), "1": block})
gpt = GPT({"transformer": Module({"h": h}), "lm_head": Module()})
quals = {id(m): n for n, m in gpt.named_modules() if n}
check(st.relative_name(gpt, block, quals) == "transformer.h.1", "a block's name in its model")
block_quals = {id(m): n for n, m in block.named_modules() if n}
check(st.relative_name(block, c_fc, block_quals) == "mlp.c_fc", "a module's name below an uncalled one")
check(st.relative_name(None, gpt, {}) == "GPT", "a root is named by its class")
wrapped = OptimizedModule()
wrapped._orig_mod = gpt
check(st.relative_name(None, wrapped, {}) == "GPT", "torch.compile's wrapper is named by what it wraps")
check(st.relative_name(gpt, Module(), quals) == "Module", "a module outside its caller's tree: its class")



class FakeTorch:
    float32, bfloat16, float16, int64 = "f32", "bf16", "f16", "i64"

    class Tensor:
        def __init__(self, n, dtype, size, requires_grad=True):
            self.n, self.dtype, self.size, self.requires_grad = n, dtype, size, requires_grad

        def numel(self):
            return self.n

        def element_size(self):
            return self.size


class FakeLib:
    def __init__(self):
        self.calls = []

        def params(arr, n):
            self.calls.append((list(arr), n))
        self.steptrace_py_params = params


T = FakeTorch.Tensor
w, b, emb = T(1000, "bf16", 2), T(10, "f32", 4), T(500, "bf16", 2)
frozen, step = T(64, "bf16", 2, requires_grad=False), T(1, "i64", 8, requires_grad=False)


class FakeOptimizer:
    param_groups = [{"params": [w, b, frozen], "lr": 1e-3}, {"params": [emb, w, "not a tensor"], "lr": 0.0},
                    {"params": [step]}]


st._torch, st._lib = FakeTorch, FakeLib()
st._report_params(FakeOptimizer())
check(st._lib.calls == [([2, 1010, 2040, 0, 1, 500, 1000, 2, 0, 0, 0, 0], 3)],
      "parameter groups: %r" % st._lib.calls)
st._lib = object()   # an older recorder without the call: nothing happens
st._report_params(FakeOptimizer())
# ---- what each step records, with stand-ins for PyTorch and the recorder ----------

FAKE_TORCH = {
    "torch/__init__.py": """
import contextlib
from . import cuda, compiler, autograd, nn, optim
from .utils.data import dataloader
from .nn.modules import module as _module

def inference_mode(mode=True):
    return contextlib.nullcontext()

def enable_grad():
    return contextlib.nullcontext()

class Tensor:
    def get_device(self):
        return -1

    def backward(self):
        autograd.backward(self)   # as PyTorch's does: through the module attribute
""",
    "torch/cuda.py": "def is_initialized():\n    return True\n",
    "torch/compiler.py": "def is_compiling():\n    return False\n",
    "torch/autograd/__init__.py": """
RUNS = [0]

def backward(tensors, *args, **kwargs):
    RUNS[0] += 1

def grad(*args, **kwargs):
    return ()
""",
    "torch/nn/__init__.py": "from .modules.module import Module\n",
    "torch/nn/modules/__init__.py": "",
    "torch/nn/modules/module.py": """
from collections import OrderedDict
_global_forward_pre_hooks = OrderedDict()
_global_forward_hooks = OrderedDict()
_global_forward_hooks_always_called = OrderedDict()
CALLS = {"fast": 0, "slow": 0}

class RemovableHandle:
    next_id = 0

    def __init__(self, hooks, extra=None):
        self.hooks, self.extra = hooks, extra
        self.id = RemovableHandle.next_id
        RemovableHandle.next_id += 1

    def remove(self):
        self.hooks.pop(self.id, None)
        if self.extra is not None:
            self.extra.pop(self.id, None)

def register_module_forward_pre_hook(hook):
    h = RemovableHandle(_global_forward_pre_hooks)
    _global_forward_pre_hooks[h.id] = hook
    return h

def register_module_forward_hook(hook, *, always_call=False):
    h = RemovableHandle(_global_forward_hooks, _global_forward_hooks_always_called)
    _global_forward_hooks[h.id] = hook
    if always_call:
        _global_forward_hooks_always_called[h.id] = True
    return h

class Module:
    def __init__(self, **children):
        self._forward_pre_hooks = OrderedDict()
        self._forward_hooks = OrderedDict()
        self._modules = OrderedDict(children)
        for name, child in children.items():
            setattr(self, name, child)

    def register_forward_pre_hook(self, hook):
        h = RemovableHandle(self._forward_pre_hooks)
        self._forward_pre_hooks[h.id] = hook
        return h

    def register_forward_hook(self, hook, *, always_call=False):
        h = RemovableHandle(self._forward_hooks)
        self._forward_hooks[h.id] = hook
        return h

    def named_modules(self, memo=None, prefix="", remove_duplicate=True):
        yield prefix, self
        for name, child in self._modules.items():
            yield from child.named_modules(None, prefix + ("." if prefix else "") + name, remove_duplicate)

    def parameters(self):
        return []

    def zero_grad(self, set_to_none=True):
        pass

    def forward(self, x):
        for child in self._modules.values():
            x = child(x)
        return x

    def __call__(self, *args, **kwargs):
        # PyTorch's _call_impl: no hook anywhere, the fast path
        if not (self._forward_pre_hooks or self._forward_hooks or _global_forward_pre_hooks
                or _global_forward_hooks):
            CALLS["fast"] += 1
            return self.forward(*args, **kwargs)
        CALLS["slow"] += 1
        for hook in list(_global_forward_pre_hooks.values()) + list(self._forward_pre_hooks.values()):
            hook(self, args)
        out = self.forward(*args, **kwargs)
        for hook in list(_global_forward_hooks.values()) + list(self._forward_hooks.values()):
            hook(self, args, out)
        return out
""",
    "torch/optim/__init__.py": "from .optimizer import Optimizer\n\nclass AdamW(Optimizer):\n    pass\n",
    "torch/optim/optimizer.py": """
from collections import OrderedDict
_pre = OrderedDict()
_post = OrderedDict()

class _Handle:
    def __init__(self, d, k):
        self.d, self.k = d, k

    def remove(self):
        self.d.pop(self.k, None)

def register_optimizer_step_pre_hook(hook):
    _pre[id(hook)] = hook
    return _Handle(_pre, id(hook))

def register_optimizer_step_post_hook(hook):
    _post[id(hook)] = hook
    return _Handle(_post, id(hook))

class Optimizer:
    def __init__(self, params):
        self.state = {}

    def step(self):
        for hook in list(_pre.values()):
            hook(self, (), {})
        for hook in list(_post.values()):
            hook(self, (), {})

    def zero_grad(self, set_to_none=True):
        pass
""",
    "torch/utils/__init__.py": "",
    "torch/utils/data/__init__.py": "from .dataloader import DataLoader\n",
    "torch/utils/data/dataloader.py": """
class _BaseDataLoaderIter:
    def __init__(self, items):
        self.items = iter(items)

    def __next__(self):
        return next(self.items)

class DataLoader:
    def __init__(self, items):
        self.items = items

    def __iter__(self):
        return _BaseDataLoaderIter(self.items)
""",
}

DRIVER = """
import ctypes, json, os, sys
LOG = []
LEVELS = json.loads(os.environ["FAKE_LEVELS"])   # what the recorder says each step records, from step 0

class Fn:
    def __init__(self, name, impl):
        self.name, self.impl, self.argtypes, self.restype = name, impl, None, None

    def __call__(self, *args):
        LOG.append([self.name] + [a if isinstance(a, (int, str)) else None for a in args])
        return self.impl(*args)

steps = [0]
names = {}

def step():
    steps[0] += 1
    return LEVELS[steps[0]] if steps[0] < len(LEVELS) else LEVELS[-1]

class Lib:
    def __getattr__(self, name):
        impl = {"steptrace_py_attach": lambda mode, peek: 1,
                "steptrace_py_intern": lambda s: names.setdefault(s, len(names) + 1),
                "steptrace_py_step": step,
                "steptrace_py_level": lambda: LEVELS[0]}.get(name, lambda *a: None)
        fn = Fn(name, impl)
        setattr(self, name, fn)
        return fn

real_cdll = ctypes.CDLL
ctypes.CDLL = lambda path, *a, **k: Lib() if path == "fake-recorder" else real_cdll(path, *a, **k)
import steptrace_torch as st
st._peek_address = lambda: 1
st.install("auto")
import torch
from torch.nn.modules import module as M

class Net(torch.nn.Module):
    pass

model = Net(emb=torch.nn.Module(), block=torch.nn.Module(attn=torch.nn.Module(), mlp=torch.nn.Module()),
            head=torch.nn.Module())
opt = torch.optim.AdamW(model.parameters())
per_step = []
for x in torch.utils.data.DataLoader(range(len(LEVELS))):
    mark, calls = len(LOG), dict(M.CALLS)
    opt.zero_grad()   # the step began where the previous optimizer step ended
    hooks = len(M._global_forward_pre_hooks)
    out = model(torch.Tensor())
    out.backward()
    opt.step()
    names_called = [e[0] for e in LOG[mark:]]
    per_step.append(dict(hooks=hooks, slow=M.CALLS["slow"] - calls["slow"], fast=M.CALLS["fast"] - calls["fast"],
                         modules=names_called.count("steptrace_py_module"),
                         phases=[e[1:] for e in LOG[mark:] if e[0] == "steptrace_py_phase"],
                         steps=names_called.count("steptrace_py_step"),
                         costs=[e[1] for e in LOG[mark:] if e[0] == "steptrace_py_cost"]))
print(json.dumps(per_step))
"""


def run_fake(levels, armed):
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in FAKE_TORCH.items():
            path = os.path.join(tmp, name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as f:
                f.write(text)
        env = dict(os.environ, FAKE_LEVELS=json.dumps(levels), CUDA_INJECTION64_PATH="fake-recorder",
                   STEPTRACE_TORCH_BACKWARD="off", PYTHONPATH=os.pathsep.join([pydir, tmp]))
        env.pop("STEPTRACE_TORCH", None)
        env.pop("STEPTRACE_ARMED", None)
        if armed:
            env["STEPTRACE_ARMED"] = "/nonexistent"
        p = subprocess.run([sys.executable, "-c", DRIVER], env=env, capture_output=True, text=True, timeout=60)
        if p.returncode or p.stderr:
            check(False, "fake run: exit %d: %s" % (p.returncode, p.stderr[-2000:]))
            return []
        return json.loads(p.stdout.strip().splitlines()[-1])


# Net and its emb, block (attn, mlp) and head: 6 module calls a forward
steps = run_fake([2, 2, 1, 1, 2, 1], armed=False)
check(len(steps) == 6, "fake: %d steps" % len(steps))
for i, s in enumerate(steps):
    want = [2, 2, 1, 1, 2, 1][i]
    if want == 2:
        check(s["hooks"] == 1 and s["slow"] == 6 and s["fast"] == 0 and s["modules"] == 6,
              "step %d with modules: %r" % (i, s))
    else:
        check(s["hooks"] == 0 and s["slow"] == 1 and s["fast"] == 5 and s["modules"] == 0,
              "step %d with phases only: the global hooks stay: %r" % (i, s))
    check([3, 1] in s["phases"] and [3, 0] in s["phases"] and [4, 1] in s["phases"] and [5, 0] in s["phases"],
          "step %d: a phase is missing: %r" % (i, s["phases"]))
    check(s["steps"] == 1, "step %d: %d steps ended" % (i, s["steps"]))
    check(len(s["costs"]) == 1 and s["costs"][0] > 0, "step %d: the hooks' time, once: %r" % (i, s["costs"]))

# armed: nothing but the step count until a trigger's steps (3 and 4), nothing after
steps = run_fake([0, 0, 0, 2, 2, 0, 0], armed=True)
check(len(steps) == 7, "armed: %d steps" % len(steps))
for i, s in enumerate(steps):
    if i in (3, 4):
        check(s["slow"] == 6 and s["modules"] == 6 and [3, 1] in s["phases"], "armed, triggered step %d: %r" % (i, s))
    else:
        check(s["hooks"] == 0 and s["slow"] == 0 and s["fast"] == 6 and s["modules"] == 0 and not s["phases"],
              "armed, quiet step %d: %r" % (i, s))
    check(s["steps"] == 1 and len(s["costs"]) == 1, "armed step %d: %d steps counted" % (i, s["steps"]))

if failures:
    print("test_python: %d check(s) failed" % len(failures))
    sys.exit(1)
print("test_python: ok")
