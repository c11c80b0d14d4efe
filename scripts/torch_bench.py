#!/usr/bin/env python3
"""torch_bench.py: the PyTorch side of `steptrace bench`.

Times the same model (scripts/torch_check.py's TransformerLM, SPEC.md's
maths) in PyTorch eager, and with --compile under torch.compile, over sizes x
context lengths x precisions x modes, with warm-up and measured steps, and
prints a table with the columns of `steptrace bench` (ms, mean and sample
std over measured steps; phases timed with CUDA events, the step with the
host clock after torch.cuda.synchronize()). A configuration that does not
fit prints an OOM row and the sweep goes on.

  python3 scripts/torch_bench.py --model small,medium --ctx 128,256,512 \
      --precision fp32,bf16 --mode forward,train --warmup 5 --steps 10 [--compile]

The optimizer is torch.optim.AdamW(lr 1e-3, betas (0.9, 0.999), eps 1e-8,
weight decay 0.01) (foreach implementation), as the seeds used; `forward`
runs under torch.no_grad().
"""

import argparse
import gc
import math
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_check import TransformerLM, add_size_args, config_from_args, loss_fn, param_count, precision_context  # noqa: E402

COLUMNS = ["impl", "model", "params", "ctx", "precision", "mode", "forward_ms", "forward_std",
           "backward_ms", "backward_std", "optimizer_ms", "optimizer_std", "step_ms", "step_std",
           "warmup_step_ms", "tokens_per_s", "peak_gib", "status"]


def mean_std(v):
    return (statistics.fmean(v), statistics.stdev(v) if len(v) > 1 else 0.0) if v else (None, None)


def bench_one(cfg, precision, mode, a, device):
    """One configuration's row (dict)."""
    row = dict(impl="compile" if a.compile else "eager", model=cfg["name"], params=param_count(cfg),
               ctx=cfg["ctx"], precision=precision, mode=mode, status="ok")
    model = opt = step_fn = None
    try:
        torch.manual_seed(a.seed)
        torch.cuda.reset_peak_memory_stats(device)
        model = TransformerLM(cfg).to(device)
        fwd = torch.compile(model) if a.compile else model
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=0.01) if mode == "train" else None
        shape = (cfg["batch"], cfg["ctx"])
        inputs = torch.randint(cfg["vocab"], shape, device=device)
        targets = torch.randint(cfg["vocab"], shape, device=device)
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]

        def step_fn():
            ev[0].record()
            with precision_context(precision, device):
                if mode == "forward":
                    with torch.no_grad():
                        loss = loss_fn(fwd(inputs), targets)
                else:
                    loss = loss_fn(fwd(inputs), targets)
            ev[1].record()
            if mode != "forward":
                loss.backward()
            ev[2].record()
            if opt is not None:
                opt.step()
            if mode != "forward":
                model.zero_grad(set_to_none=True)
            ev[3].record()

        times = {k: [] for k in ("forward", "backward", "optimizer", "wall")}
        warm = []
        for i in range(a.warmup + a.steps):
            torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            step_fn()
            torch.cuda.synchronize(device)
            wall = (time.perf_counter() - t0) * 1e3
            if i < a.warmup:
                warm.append(wall)
                continue
            times["forward"].append(ev[0].elapsed_time(ev[1]))
            times["backward"].append(ev[1].elapsed_time(ev[2]))
            times["optimizer"].append(ev[2].elapsed_time(ev[3]))
            times["wall"].append(wall)
        for k, present in (("forward", True), ("backward", mode != "forward"),
                           ("optimizer", mode == "train")):
            m, s = mean_std(times[k]) if present else (None, None)
            row[f"{k}_ms"], row[f"{k}_std"] = m, s
        row["step_ms"], row["step_std"] = mean_std(times["wall"])
        row["warmup_step_ms"] = statistics.fmean(warm) if warm else None
        row["tokens_per_s"] = cfg["batch"] * cfg["ctx"] / (row["step_ms"] / 1e3)
        row["peak_gib"] = torch.cuda.max_memory_allocated(device) / 2 ** 30
    except torch.cuda.OutOfMemoryError:
        row["status"] = "OOM"
    finally:
        del model, opt, step_fn
        gc.collect()
        torch.cuda.empty_cache()
    return row


def fmt(v, col):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.0f}" if col == "tokens_per_s" else f"{v:.3f}"
    return str(v)


def print_rows(rows, form):
    cells = [[fmt(r.get(c), c) for c in COLUMNS] for r in rows]
    if form == "csv":
        print(",".join(COLUMNS))
        for c in cells:
            print(",".join(c))
    elif form == "json":
        import json
        print(json.dumps({"torch_bench": [{c: r.get(c) for c in COLUMNS} for r in rows]}, indent=2))
    elif form == "md":
        print("| " + " | ".join(COLUMNS) + " |")
        print("|" + "|".join("---" for _ in COLUMNS) + "|")
        for c in cells:
            print("| " + " | ".join(c) + " |")
    else:
        w = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(COLUMNS)]
        left = {"impl", "model", "precision", "mode", "status"}
        line = lambda c: "  ".join(x.ljust(w[i]) if COLUMNS[i] in left else x.rjust(w[i])
                                   for i, x in enumerate(c))
        print("PyTorch training step benchmark (ms: mean and std over measured steps)\n")
        print(line(COLUMNS))
        print(line(["-" * n for n in w]))
        for c in cells:
            print(line(c))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_size_args(ap, ctx=False)
    ap.add_argument("--ctx", default="128", help="comma-separated context lengths")
    ap.add_argument("--precision", default="fp32", help="comma-separated: fp32, tf32, bf16")
    ap.add_argument("--mode", default="train", help="comma-separated: forward, fwdbwd, train")
    ap.add_argument("-w", "--warmup", type=int, default=5)
    ap.add_argument("-n", "--steps", type=int, default=10)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--compile", action="store_true", help="torch.compile the model")
    ap.add_argument("--format", default="table", choices=("table", "csv", "json", "md"))
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("error: no CUDA device found: torch_bench needs an NVIDIA GPU", file=sys.stderr)
        return 1
    device = torch.device("cuda")
    models = (a.model or ("custom" if a.d_model else "small")).split(",")
    rows = []
    for name in models:
        for ctx in [int(x) for x in a.ctx.split(",")]:
            for precision in a.precision.split(","):
                for mode in a.mode.split(","):
                    ns = argparse.Namespace(**vars(a))
                    ns.ctx = ctx
                    cfg = config_from_args(ns, name)
                    print(f"torch_bench: {name} ctx {ctx} {precision} {mode} ...", end="",
                          file=sys.stderr, flush=True)
                    r = bench_one(cfg, precision, mode, a, device)
                    print(f" {r['step_ms']:.3f} ± {r['step_std']:.3f} ms/step" if r["status"] == "ok"
                          else " OOM", file=sys.stderr)
                    rows.append(r)
    print_rows(rows, a.format)
    print(f"\n{a.warmup} warm-up and {a.steps} measured steps per configuration; "
          f"torch {torch.__version__} on {torch.cuda.get_device_name(device)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
