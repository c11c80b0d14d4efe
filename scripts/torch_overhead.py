#!/usr/bin/env python3
"""torch_overhead.py: what recording adds to an unmodified PyTorch training loop.

Runs scripts/gpt_train.py (GPT-2 small, 124M, BF16 autocast, batch 12 x
1,024, AdamW, a DataLoader; no NVTX, no import of steptrace) round after
round in these variants, alternating, and compares each one's iteration
time (the script's own timer: synchronise, then perf_counter) with the
un-recorded run of the same round:

  plain       the script alone
  async       the script with PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync
              (the allocator --torch auto switches to, without recording)
  auto        steptrace record -o B -- python3 gpt_train.py ...  (the default: --torch auto)
  native      the same with --torch-alloc default (PyTorch's caching allocator)
  off         steptrace record --torch off (no Python side)
  ops         steptrace record --torch ops (every aten op with its shapes)
  profiler    the unmodified script run inside torch.profiler.profile(activities=[CPU, CUDA],
              with_modules=True, profile_memory=True) (runpy), as a user would wrap it
  emit-nvtx   inside torch.autograd.profiler.emit_nvtx(record_shapes=True) (what
              Nsight Systems' --pytorch=autograd-nvtx turns on), not recorded
  V,off=LIST  a recorded variant V with STEPTRACE_CUPTI_OFF=LIST (a diagnostic that
              switches CUPTI pieces off: memory2, driver, runtime, callbacks, ...)
  V,skip=LIST the same with STEPTRACE_TORCH_SKIP=LIST (the Python side's pieces left out:
              backward, modules, hooks, tags; '+' separates them)

A run's figure is the median of its iterations after the first W; a
variant's is the median over rounds of those. Prints a Markdown table and
writes every run to OUT/torch_overhead.json.

  python3 scripts/torch_overhead.py --steptrace BUILD/steptrace --out OUT \\
      --rounds 3 -n 30 -w 5 --variants plain,auto,off,ops,profiler,emit-nvtx
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "gpt_train.py")
SUMMARY = re.compile(r"record: '[^']*': (\d+) events, .*?\(([\d.]+) bytes/event\)")
RECORDED = ("auto", "native", "off", "ops")
WRAP = {
    "profiler": ("import runpy, sys, torch\n"
                 "from torch.profiler import profile, ProfilerActivity\n"
                 "sys.argv = sys.argv[1:]\n"
                 "with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], with_modules=True,"
                 " profile_memory=True):\n"
                 "    runpy.run_path(sys.argv[0], run_name='__main__')\n"),
    "emit-nvtx": ("import runpy, sys, torch\n"
                  "sys.argv = sys.argv[1:]\n"
                  "with torch.autograd.profiler.emit_nvtx(record_shapes=True):\n"
                  "    runpy.run_path(sys.argv[0], run_name='__main__')\n"),
}


def command(a, variant, bundle):
    script = [TRAIN, "--preset", a.preset, "--steps", str(a.steps)]
    env = dict(os.environ)
    if ",off=" in variant:
        variant, off = variant.split(",off=")
        env["STEPTRACE_CUPTI_OFF"] = off.replace("+", ",")
    if ",skip=" in variant:
        variant, skip = variant.split(",skip=")
        env["STEPTRACE_TORCH_SKIP"] = skip.replace("+", ",")
    if variant == "async":
        env["PYTORCH_CUDA_ALLOC_CONF"] = "backend:cudaMallocAsync"
    if variant in WRAP:
        return [sys.executable, "-c", WRAP[variant]] + script, env
    cmd = [sys.executable] + script
    if variant not in RECORDED:
        return cmd, env
    pre = [a.steptrace, "record", "-o", bundle]
    pre += {"auto": [], "native": ["--torch-alloc", "default"], "off": ["--torch", "off"],
            "ops": ["--torch", "ops"]}[variant]
    return pre + ["--"] + cmd, env


def run_one(a, variant, rnd):
    bundle = os.path.join(a.out, "%s-r%d.stb" % (variant.replace(",", "_").replace("=", "-"), rnd))
    cmd, env = command(a, variant, bundle)
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    row = dict(variant=variant, round=rnd, rc=p.returncode, seconds=round(time.time() - t0, 1))
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode or not lines:
        row["error"] = (p.stderr or p.stdout)[-2000:]
        return row
    iters = json.loads(lines[-1])["iter_ms"][a.warmup:]
    row["iter_ms"] = iters
    row["median_ms"] = statistics.median(iters)
    m = SUMMARY.search(p.stderr)
    if m:
        row["events"], row["bytes_per_event"] = int(m.group(1)), float(m.group(2))
        row["bytes"] = os.path.getsize(bundle) if os.path.exists(bundle) else None
        if not a.keep:
            os.remove(bundle)
    if "PyTorch annotation" in p.stderr or "DROPPED" in p.stderr:
        row["warning"] = p.stderr[-1000:]
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steptrace", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--preset", default="gpt2")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", "--steps", type=int, default=30)
    ap.add_argument("-w", "--warmup", type=int, default=5, help="iterations left out of each run's median")
    ap.add_argument("--variants", default="plain,auto,off,ops,profiler,emit-nvtx",
                    help="comma-free list separated by ':' when a variant has ',off=' (else ',')")
    ap.add_argument("--keep", action="store_true", help="keep the bundles")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    variants = a.variants.split(":" if ":" in a.variants else ",")
    rows = []
    for rnd in range(a.rounds):
        for v in variants:
            row = run_one(a, v, rnd)
            rows.append(row)
            print(json.dumps({k: row.get(k) for k in ("variant", "round", "rc", "seconds", "median_ms",
                                                      "bytes_per_event", "warning", "error")}), flush=True)
    with open(os.path.join(a.out, "torch_overhead.json"), "w") as f:
        json.dump(dict(preset=a.preset, steps=a.steps, warmup=a.warmup, rounds=rows), f, indent=1)
    med = {v: [r["median_ms"] for r in rows if r["variant"] == v and "median_ms" in r] for v in variants}
    base = statistics.median(med["plain"]) if med.get("plain") else None
    print("\n| variant | runs | iteration (ms), median of runs | runs' medians (ms) | vs plain |")
    print("|---|---:|---:|---|---:|")
    for v in variants:
        if not med[v]:
            print("| %s | 0 | failed | | |" % v)
            continue
        m = statistics.median(med[v])
        vs = "%+.1f%%" % (100 * (m / base - 1)) if base else ""
        print("| %s | %d | %.2f | %s | %s |" % (v, len(med[v]), m, ", ".join("%.2f" % x for x in med[v]), vs))


if __name__ == "__main__":
    main()
