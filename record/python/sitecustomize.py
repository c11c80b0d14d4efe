"""steptrace's sitecustomize: the way its Python side gets into a program.

`steptrace record -- COMMAND` puts the folder of this file first on
PYTHONPATH (unless --torch off), so every Python interpreter the command
starts imports it at start-up, as `site` imports any `sitecustomize`, without
a change to the program, its environment's site-packages or a .pth file.
Under STEPTRACE_TORCH (auto or ops) it arms steptrace_torch, which does
nothing until the program imports torch. Then it runs the sitecustomize this
one shadows, if the interpreter has one further down sys.path, as if ours
were not there (ddtrace-run and opentelemetry-instrument chain the same way).
"""
import os
import sys


def _chain():
    """Runs the next sitecustomize on sys.path (skipping this folder) as `sitecustomize`."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


def _arm():
    mode = os.environ.get("STEPTRACE_TORCH", "")
    if mode not in ("auto", "ops"):
        return
    try:
        import steptrace_torch

        steptrace_torch.install(mode)
    except Exception as e:  # the program runs on, recorded as any CUDA program
        sys.stderr.write("steptrace: no PyTorch annotation in pid %d: %s: %s\n"
                         % (os.getpid(), type(e).__name__, e))


_arm()
_chain()
