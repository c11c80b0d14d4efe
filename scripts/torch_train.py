#!/usr/bin/env python3
"""torch_train.py: the seeds' PyTorch training step, to record with `steptrace record -- COMMAND`.

The CS336 model of scripts/torch_check.py (TransformerLM), torch.optim.AdamW
(lr 1e-3, weight decay 0.01, foreach), a random batch, FP32 or BF16
autocast. Each step is an NVTX range `train_step` holding `forward`,
`backward` and `optimizer` (torch.cuda.nvtx: free when no tool listens), and
ends with torch.cuda.synchronize(); model and batch are made inside `setup`.
Prints one JSON line with every step's host wall time (ms).

  steptrace record -o small.stb --step-range train_step --warmup 2 -- \\
      python3 scripts/torch_train.py --model small --ctx 512 --precision bf16 -w 2 -n 10

  --emit-nvtx        run the steps under torch.autograd.profiler.emit_nvtx(record_shapes=True):
                     every aten op becomes an NVTX range with its input shapes
  --profile ACTS     run the steps under torch.profiler.profile with these activities
                     (cuda, or cpu,cuda), for the overhead comparison
  --kernel-counts F  profile each step on its own (torch.profiler, CUDA) and write the
                     number of kernels of each step to F (JSON)
  --crash-at K --crash raise|abort|kill
                     end the process in step K's forward pass: an exception, SIGABRT, SIGKILL
"""

import argparse
import contextlib
import json
import os
import signal
import statistics
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_check import TransformerLM, add_size_args, config_from_args, loss_fn, precision_context  # noqa: E402

nvtx = torch.cuda.nvtx


def count_kernels(prof):
    """Kernels (not copies or memsets) in a torch.profiler run, from its Chrome trace."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    try:
        prof.export_chrome_trace(path)
        with open(path) as f:
            trace = json.load(f)
    finally:
        os.unlink(path)
    return sum(1 for e in trace.get("traceEvents", []) if e.get("cat") == "kernel")


def crash(kind):
    print(f"torch_train: crashing ({kind}) as asked", file=sys.stderr, flush=True)
    if kind == "raise":
        raise RuntimeError("crash requested with --crash raise")
    if kind == "abort":
        os.abort()
    os.kill(os.getpid(), signal.SIGKILL)


def profiler(acts):
    if not acts:
        return contextlib.nullcontext()
    kinds = {"cpu": torch.profiler.ProfilerActivity.CPU, "cuda": torch.profiler.ProfilerActivity.CUDA}
    return torch.profiler.profile(activities=[kinds[k] for k in acts.split(",")])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_size_args(ap)
    ap.add_argument("--precision", default="bf16", choices=("fp32", "tf32", "bf16"))
    ap.add_argument("-w", "--warmup", type=int, default=2)
    ap.add_argument("-n", "--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--emit-nvtx", action="store_true")
    ap.add_argument("--profile", metavar="ACTS")
    ap.add_argument("--kernel-counts", metavar="FILE")
    ap.add_argument("--crash-at", type=int, default=-1)
    ap.add_argument("--crash", default="raise", choices=("raise", "abort", "kill"))
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("error: no CUDA device found", file=sys.stderr)
        return 1
    device = torch.device("cuda")
    cfg = config_from_args(a)
    torch.manual_seed(a.seed)
    with nvtx.range("setup"):
        model = TransformerLM(cfg).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=0.01)
        shape = (cfg["batch"], cfg["ctx"])
        inputs = torch.randint(cfg["vocab"], shape, device=device)
        targets = torch.randint(cfg["vocab"], shape, device=device)
        torch.cuda.synchronize()
    times, counts = [], []
    shapes = torch.autograd.profiler.emit_nvtx(record_shapes=True) if a.emit_nvtx else contextlib.nullcontext()
    with shapes, profiler(a.profile):
        for i in range(a.warmup + a.steps):
            prof = profiler("cuda") if a.kernel_counts else contextlib.nullcontext()
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            with prof:
                with nvtx.range("train_step"):
                    with nvtx.range("forward"), precision_context(a.precision, device):
                        logits = model(inputs)
                        if i == a.crash_at:
                            crash(a.crash)
                        loss = loss_fn(logits, targets)
                    with nvtx.range("backward"):
                        loss.backward()
                    with nvtx.range("optimizer"):
                        opt.step()
                        opt.zero_grad(set_to_none=True)
                    torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) * 1e3)
            if a.kernel_counts:
                counts.append(count_kernels(prof))
    with nvtx.range("report"):
        last_loss = loss.item()
    measured = times[a.warmup:]
    out = dict(model=cfg["name"], ctx=cfg["ctx"], batch=cfg["batch"], precision=a.precision,
               warmup=a.warmup, steps_ms=[round(t, 3) for t in times],
               median_ms=round(statistics.median(measured), 3) if measured else None,
               loss=round(last_loss, 4), pid=os.getpid(), rank=os.environ.get("RANK"))
    if a.kernel_counts:
        with open(a.kernel_counts, "w") as f:
            json.dump({"kernels": counts}, f)
    print(json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
