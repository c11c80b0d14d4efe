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
  handed to the recorder's steptrace_py_params in one call.
"""
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

if failures:
    print("test_python: %d check(s) failed" % len(failures))
    sys.exit(1)
print("test_python: ok")
