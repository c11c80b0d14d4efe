"""test_python.py BUILD_PYTHON_DIR: steptrace's Python side without PyTorch or a GPU.

- sitecustomize, first on PYTHONPATH, arms steptrace_torch under
  STEPTRACE_TORCH and chains to the sitecustomize it shadows (which runs
  once, as `sitecustomize`); without STEPTRACE_TORCH it arms nothing;
- a program that never imports torch is left alone (only the import hook
  waits, and nothing else of steptrace_torch runs);
- a `torch` that is not PyTorch (here a stub package) turns the annotation
  off with one line on stderr, and the program runs on to its end;
- module names: relative to the enclosing module call, the class for a
  root, torch.compile's wrapper by the module it wraps.
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

if failures:
    print("test_python: %d check(s) failed" % len(failures))
    sys.exit(1)
print("test_python: ok")
