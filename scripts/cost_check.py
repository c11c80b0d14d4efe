#!/usr/bin/env python3
"""cost_check.py: the recorder's own cost in the bundle against the program's own timer (GPU).

Issue 36, item 2: the recorder measures the host time it spends (its CUPTI
callbacks, NVTX handlers, entry points and the Python side: format 1.8's
cost events), `steps` shows it per step, and `explain` takes it out of the
host's work where it was spent: its steps table's Unrecorded column is the
step as it would have run without the recorder. This script sets that
estimate beside what the program measures when nothing records it, in one
call, alternating plain and recorded runs round after round:

  builtin   steptrace bench --model small --ctx 512 --precision bf16 --mode train
            (no CUPTI at all: its step_median_ms) against
            steptrace record of the same step (explain's Unrecorded, median
            over the measured steps)
  gpt2      scripts/gpt_train.py --preset gpt2 (GPT-2 small, 12 x 1,024, BF16,
            AdamW): its own iteration timer (median after the warm-up), plain
            against `steptrace record -- ...` (--torch auto; explain's
            Unrecorded median over the same steps, and the recorded run's
            own timer for the overhead)
  gpt2-host the host-bound form: --batch 8 --ctx 512 --accum 2

A configuration passes when the median over rounds of its estimates is
within --tolerance (3%) of the median over rounds of its plain runs. Also
written per configuration: the recorder's own time per step and its share
(steps' Recorder column), and its cost per kernel launch and per NVTX range
and module call (steps' notes). The PyTorch configurations are skipped,
said so, where python3 cannot import torch with CUDA.

  python3 scripts/cost_check.py --steptrace BUILD/steptrace --out OUT [--rounds 3]
      [--configs builtin,gpt2,gpt2-host] [--steps 20] [--warmup 5]

Writes OUT/cost_check.json (every run) and OUT/cost_check.csv (one row per
configuration), prints a Markdown table, exits 1 when a configuration
misses the tolerance, 0 when all pass, 77 without a GPU. With
--functional (ctest foreign.cost_check, label gpu) it exits 1 only when a
run failed or a recorded run lacks its estimate or the recorder's time: the
3% verdict is the benchmark's, and separate processes on a shared host move
by more than that (docs/record.md). The defaults take about 6 minutes on one
H200 (most of it PyTorch's start-up, 12 runs).
"""
import argparse
import csv
import io
import json
import os
import re
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "gpt_train.py")
TORCH_CONFIGS = {
    "gpt2": ["--preset", "gpt2"],
    "gpt2-host": ["--preset", "gpt2", "--batch", "8", "--ctx", "512", "--accum", "2"],
}
BUILTIN = ["--model", "small", "--ctx", "512", "--precision", "bf16", "--mode", "train"]


def sh(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def csv_rows(text):
    return list(csv.DictReader(io.StringIO(text)))


def explain_steps(st, bundle):
    """Per measured step: (wall ms, unrecorded ms) from explain's steps table."""
    p = sh([st, "explain", bundle, "--section", "steps", "--format", "csv"])
    if p.returncode:
        raise RuntimeError("explain: " + p.stderr.strip())
    rows = [r for r in csv_rows(p.stdout) if r["Step"] not in ("mean", "share (%)")]
    if rows and "Unrecorded" not in rows[0]:
        raise RuntimeError("explain has no Unrecorded column: the bundle has no cost events (format 1.8)")
    return [(float(r["Wall"]), float(r["Unrecorded"])) for r in rows]


def recorder_facts(st, bundle):
    """The recorder's time per measured step (ms) and steps' notes on it."""
    p = sh([st, "steps", bundle, "--format", "csv"])
    rows = csv_rows(p.stdout)
    per_step = [float(r["Recorder (ms)"]) for r in rows if r.get("Recorder (ms)")]
    notes = [line for line in p.stderr.splitlines() if line.startswith("recorder:")]
    return per_step, notes


def run_builtin(a, rnd, recorded):
    if not recorded:
        p = sh([a.steptrace, "bench"] + BUILTIN + ["--warmup", str(a.warmup), "--steps", str(a.steps),
                                                     "--format", "csv"])
        rows = csv_rows(p.stdout)
        if p.returncode or not rows:
            return dict(error=p.stderr[-2000:])
        return dict(median_ms=float(rows[0]["step_median_ms"]))
    bundle = os.path.join(a.out, "builtin-r%d.stb" % rnd)
    p = sh([a.steptrace, "record"] + BUILTIN + ["--warmup", str(a.warmup), "--steps", str(a.steps),
                                                  "--no-calibrate", "-o", bundle])
    if p.returncode:
        return dict(error=p.stderr[-2000:])
    return bundle_facts(a, bundle)


def bundle_facts(a, bundle):
    steps = explain_steps(a.steptrace, bundle)
    rec, notes = recorder_facts(a.steptrace, bundle)
    return dict(bundle=bundle, wall_ms=statistics.median(w for w, _ in steps),
                estimate_ms=statistics.median(u for _, u in steps),
                recorder_ms=statistics.median(rec) if rec else None, notes=notes)


def run_torch(a, name, rnd, recorded):
    script = [sys.executable, TRAIN] + TORCH_CONFIGS[name] + ["--steps", str(a.steps + a.warmup)]
    bundle = os.path.join(a.out, "%s-r%d.stb" % (name, rnd))
    cmd = [a.steptrace, "record", "--warmup", str(a.warmup), "-o", bundle, "--"] + script if recorded else script
    p = sh(cmd)
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode or not lines:
        return dict(error=(p.stderr or p.stdout)[-2000:])
    row = dict(median_ms=statistics.median(json.loads(lines[-1])["iter_ms"][a.warmup:]))
    if recorded:
        row.update(bundle_facts(a, bundle))
    return row


def torch_ok():
    p = sh([sys.executable, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"])
    return p.returncode == 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steptrace", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--configs", default="builtin,gpt2,gpt2-host")
    ap.add_argument("--steps", type=int, default=20, help="measured steps (iterations) per run")
    ap.add_argument("--warmup", type=int, default=5, help="steps left out of each run's median")
    ap.add_argument("--tolerance", type=float, default=3.0, help="percent")
    ap.add_argument("--functional", action="store_true",
                    help="exit 1 only when a run failed or a recorded run has no estimate "
                         "(ctest: the verdict is a benchmark's, not a test's)")
    a = ap.parse_args()
    if sh(["sh", "-c", "nvidia-smi -L"]).returncode:
        print("cost_check: no GPU (nvidia-smi -L fails): skipped")
        sys.exit(77)
    os.makedirs(a.out, exist_ok=True)
    configs = a.configs.split(",")
    if any(c in TORCH_CONFIGS for c in configs) and not torch_ok():
        print("cost_check: python3 cannot import torch with CUDA: the PyTorch configurations are skipped")
        configs = [c for c in configs if c not in TORCH_CONFIGS]
    runs = []
    for rnd in range(a.rounds):
        for c in configs:
            for recorded in (False, True):
                t0 = time.time()
                try:
                    row = run_builtin(a, rnd, recorded) if c == "builtin" else run_torch(a, c, rnd, recorded)
                except (RuntimeError, ValueError, KeyError) as e:
                    row = dict(error=str(e))
                row.update(config=c, round=rnd, recorded=recorded, seconds=round(time.time() - t0, 1))
                runs.append(row)
                print(json.dumps({k: row.get(k) for k in ("config", "round", "recorded", "median_ms", "wall_ms",
                                                          "estimate_ms", "recorder_ms", "error")}), flush=True)
    with open(os.path.join(a.out, "cost_check.json"), "w") as f:
        json.dump(dict(steps=a.steps, warmup=a.warmup, runs=runs), f, indent=1)

    def med(c, recorded, key):
        v = [r[key] for r in runs if r["config"] == c and r["recorded"] == recorded and r.get(key) is not None]
        return statistics.median(v) if v else None

    failed = False
    table = []
    print("\n| config | plain (ms) | recorded, own timer (ms) | recorded, bundle (ms) | recorder (ms/step) "
          "| unrecorded estimate (ms) | estimate vs plain | verdict |")
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    for c in configs:
        plain, own = med(c, False, "median_ms"), med(c, True, "median_ms")
        wall, est, rec = med(c, True, "wall_ms"), med(c, True, "estimate_ms"), med(c, True, "recorder_ms")
        err = 100 * (est / plain - 1) if plain and est else None
        ok = err is not None and abs(err) <= a.tolerance
        failed |= not ok
        fmt = lambda v: "%.3f" % v if v is not None else "-"
        table.append(dict(config=c, plain_ms=plain, recorded_own_ms=own, recorded_bundle_ms=wall, recorder_ms=rec,
                          estimate_ms=est, error_pct=err, passed=ok))
        print("| %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c, fmt(plain), fmt(own), fmt(wall), fmt(rec), fmt(est),
            "%+.1f%%" % err if err is not None else "-", "PASS" if ok else "FAIL"))
    for c in configs:
        notes = next((r.get("notes") for r in runs if r["config"] == c and r.get("notes")), None)
        for n in notes or []:
            print("%s: %s" % (c, n))
    with open(os.path.join(a.out, "cost_check.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(table[0].keys()) if table else ["config"])
        w.writeheader()
        w.writerows(table)
    if a.functional:
        broken = [r for r in runs if r.get("error") or (r["recorded"] and r.get("estimate_ms") is None)
                  or (r["recorded"] and not (r.get("recorder_ms") or 0) > 0)
                  or (not r["recorded"] and r.get("median_ms") is None)]
        for r in broken:
            print("broken run: %s" % json.dumps(r))
        sys.exit(1 if broken else 0)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
