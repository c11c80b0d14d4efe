#!/usr/bin/env python3
"""foreign_overhead.py: what recording adds to PyTorch's training step.

Runs scripts/torch_train.py (the seeds' step: CS336 model, AdamW, BF16
autocast; NVTX ranges train_step > forward, backward, optimizer) for each
model, round after round, in these variants:

  plain          no tool (the NVTX calls are no-ops)
  record         steptrace record -o M.stb --step-range train_step --warmup W --precision bf16 -- ...
  profiler       under torch.profiler.profile(activities=[CPU, CUDA])
  profiler-cuda  under torch.profiler.profile(activities=[CUDA])
  api-all        steptrace record --api all (every runtime and driver call)
  launches       steptrace record --api launches (API events from the callbacks)
  cupti-sync     steptrace record --cupti-sync (CUPTI's SYNCHRONIZATION activity)
  off=LIST       steptrace record with STEPTRACE_CUPTI_OFF=LIST (a diagnostic: what a piece costs)
  emit-nvtx      plain under emit_nvtx(record_shapes=True); record-emit-nvtx recorded

Each run makes W warm-up and N measured steps and reports its median
measured step (synchronised host wall time); a variant's figure is the
median over rounds of its runs' medians. Recorded runs also give events,
bytes and bytes per event of their bundle. Prints a Markdown table and
writes every run to OUT/overhead.json.

  python3 scripts/foreign_overhead.py --steptrace BUILD/steptrace --out OUT \\
      --models small,large --rounds 2 -w 3 -n 20 --variants plain,record,profiler
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
TRAIN = os.path.join(HERE, "torch_train.py")
SUMMARY = re.compile(r"record: '[^']*': (\d+) events, .*?\(([\d.]+) bytes/event\).*?(\d+) dropped")


def command(a, model, variant, bundle):
    args = [sys.executable, TRAIN, "--model", model, "--ctx", str(a.ctx), "--batch", str(a.batch),
            "--precision", "bf16", "-w", str(a.warmup), "-n", str(a.steps)]
    env = dict(os.environ)
    recorded = variant in ("record", "api-all", "launches", "cupti-sync", "record-emit-nvtx") or variant.startswith("off=")
    if variant in ("emit-nvtx", "record-emit-nvtx"):
        args.append("--emit-nvtx")
    if variant == "profiler":
        args += ["--profile", "cpu,cuda"]
    if variant == "profiler-cuda":
        args += ["--profile", "cuda"]
    if not recorded:
        return args, env
    pre = [a.steptrace, "record", "-o", bundle, "--step-range", "train_step", "--warmup", str(a.warmup),
           "--precision", "bf16"]
    if variant == "api-all":
        pre += ["--api", "all"]
    if variant == "launches":
        pre += ["--api", "launches"]
    if variant == "cupti-sync":
        pre += ["--cupti-sync"]
    if variant.startswith("off="):
        env["STEPTRACE_CUPTI_OFF"] = variant[4:]
    return pre + ["--"] + args, env


def run_one(a, model, variant, rnd):
    bundle = os.path.join(a.out, f"{model}-{variant.replace('=', '-').replace(',', '+')}-r{rnd}.stb")
    cmd, env = command(a, model, variant, bundle)
    if a.taskset:
        cmd = ["taskset", "-c", a.taskset] + cmd
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    row = dict(model=model, variant=variant, round=rnd, rc=p.returncode, seconds=round(time.time() - t0, 1))
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode or not lines:
        row["error"] = (p.stderr or p.stdout)[-2000:]
        return row
    out = json.loads(lines[-1])
    row["median_ms"] = out["median_ms"]
    row["steps_ms"] = out["steps_ms"]
    m = SUMMARY.search(p.stderr)
    if m:
        row["events"] = int(m.group(1))
        row["bytes_per_event"] = float(m.group(2))
        row["dropped"] = int(m.group(3))
        row["bytes"] = os.path.getsize(bundle) if os.path.exists(bundle) else None
    if os.path.exists(bundle) and not a.keep:
        os.unlink(bundle)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steptrace", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--models", default="small,large")
    ap.add_argument("--variants", default="plain,record,profiler,profiler-cuda")
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("-w", "--warmup", type=int, default=3)
    ap.add_argument("-n", "--steps", type=int, default=20)
    ap.add_argument("--keep", action="store_true", help="keep the recorded bundles")
    ap.add_argument("--taskset", metavar="CPUS", help="run every variant on these CPUs (taskset -c)")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    a.steptrace = os.path.abspath(a.steptrace)
    rows = []
    variants = a.variants.split(":") if ":" in a.variants else a.variants.split(",")
    for rnd in range(a.rounds):
        for model in a.models.split(","):
            for v in variants:
                r = run_one(a, model, v, rnd)
                print(f"foreign_overhead: {model} {v} round {rnd}: "
                      f"{r.get('median_ms', 'FAILED')} ms ({r['seconds']} s)", file=sys.stderr, flush=True)
                if "error" in r:
                    print(r["error"], file=sys.stderr)
                rows.append(r)
                with open(os.path.join(a.out, f"overhead-{a.models.replace(',', '-')}.json"), "w") as f:
                    json.dump(rows, f, indent=1)   # after every run: a run cut short keeps the others
    print(f"\nPyTorch {a.models} BF16 ctx {a.ctx} batch {a.batch}: median of {a.rounds} runs' median step "
          f"({a.warmup} warm-up + {a.steps} measured steps each)\n")
    print("| model | variant | step (ms) | added | events/step | bytes/event |")
    print("|---|---|---:|---:|---:|---:|")
    for model in a.models.split(","):
        base = [r["median_ms"] for r in rows if r["model"] == model and r["variant"] == "plain" and "median_ms" in r]
        b = statistics.median(base) if base else None
        for v in variants:
            rs = [r for r in rows if r["model"] == model and r["variant"] == v and "median_ms" in r]
            if not rs:
                print(f"| {model} | {v} | failed | | | |")
                continue
            m = statistics.median(r["median_ms"] for r in rs)
            added = f"{100 * (m / b - 1):+.1f}%" if b and v != "plain" else ""
            ev = [r["events"] for r in rs if r.get("events")]
            bpe = [r["bytes_per_event"] for r in rs if r.get("bytes_per_event")]
            per_step = f"{statistics.median(ev) / (a.warmup + a.steps):,.0f}" if ev else ""
            print(f"| {model} | {v} | {m:.2f} | {added} | {per_step} | "
                  f"{statistics.median(bpe):.1f} |" if bpe else f"| {model} | {v} | {m:.2f} | {added} | {per_step} | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
