#!/usr/bin/env python3
"""torch_cost.py OUT: what recording costs an unmodified PyTorch loop, and that it still records.

Runs scripts/gpt_train.py (GPT-2 small, 124M, BF16 autocast, AdamW, a
DataLoader; no NVTX, no import of steptrace) in each mode below, the
modes alternating within each round, for each form:

  12x1024      batch 12 x 1,024 (issue 36's first loop)
  8x512a2      batch 8 x 512, gradient accumulation 2 (host-bound)
  torchrun     the same under torchrun on two GPUs (DDP; rank 0's timer)

and the modes:

  plain        the script alone
  off          steptrace record --torch off
  auto         steptrace record (--torch auto: modules on every 10th step)
  every1       steptrace record --modules-every 1 (modules on every step)
  profiler     every1 with STEPTRACE_TORCH_BACKWARD=profiler (the backward's
               modules from PyTorch's NVTX profiler, as before issue 36)
  async        steptrace record --torch-alloc async
  armed        steptrace record --armed (no trigger: nothing recorded)
  NAME=FLAGS   a recorded mode of your own: `steptrace record FLAGS`
               (ENV=VALUE words set the environment), e.g.
               'nonode=STEPTRACE_TORCH_BACKWARD=off --modules-every 1'

A run's figure is the median of its iterations after the first W (the
script's own timer: synchronise, then perf_counter); a mode's is the median
over rounds of those, and its cost the median over rounds of (mode / plain
of the same round) - 1. Each recorded bundle (rank 0's) is checked: steps
from PyTorch's optimizer, the phases data, forward, backward and optimizer,
and (--torch auto) module ranges named transformer.h.N under step/forward
and step/backward and ops under forward/ and backward/ naming them
(summary --by op), and how many steps have modules (steps' note).

Writes OUT/torch_cost.csv (one row per run), OUT/torch_cost.md (one table
per form: mode, runs' medians, median, cost, bundle check) and
OUT/torch_cost.json, and prints the tables. One form fits a 10-minute
device call with 3 rounds of the seven modes:

  python3 scripts/torch_cost.py OUT --steptrace BUILD/steptrace --forms 12x1024
  python3 scripts/torch_cost.py OUT --steptrace BUILD/steptrace --forms 8x512a2
  python3 scripts/torch_cost.py OUT --steptrace BUILD/steptrace --forms torchrun
"""
import argparse
import csv
import glob
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TRAIN = os.path.join(HERE, "gpt_train.py")
FORMS = {
    "12x1024": dict(args=["--batch", "12", "--ctx", "1024"], ranks=1),
    "8x512a2": dict(args=["--batch", "8", "--ctx", "512", "--accum", "2"], ranks=1),
    "torchrun": dict(args=["--batch", "8", "--ctx", "512", "--accum", "2"], ranks=2),
}
MODES = {
    "plain": None,
    "off": ["--torch", "off"],
    "auto": [],
    "every1": ["--modules-every", "1"],
    "profiler": ["STEPTRACE_TORCH_BACKWARD=profiler", "--modules-every", "1"],
    "async": ["--torch-alloc", "async"],
    "armed": ["--armed"],
}
DEFAULT_MODES = "plain,off,auto,every1,async,armed"
MODULE_PATH = re.compile(r"^step/(forward|backward)/.*\btransformer\.h\.(\d+)(/|$)")
MODULE_NOTE = re.compile(r"module ranges on (\d+) of the (\d+) steps")


def mode_of(spec):
    """(name, [record words] or None) of a --modes entry."""
    if "=" in spec.split(" ")[0] and spec.split("=", 1)[0] not in MODES:
        name, flags = spec.split("=", 1)
        return name, shlex.split(flags)
    if spec not in MODES:
        sys.exit("torch_cost.py: unknown mode '%s' (%s, or NAME=FLAGS)" % (spec, ", ".join(MODES)))
    return spec, MODES[spec]


def command(a, form, words, bundle):
    """The command line and environment of one run."""
    script = [TRAIN, "--preset", "gpt2", "--steps", str(a.steps)] + FORMS[form]["args"]
    if FORMS[form]["ranks"] > 1:
        prog = [sys.executable, "-m", "torch.distributed.run", "--standalone",
                "--nproc-per-node", str(FORMS[form]["ranks"])] + script
    else:
        prog = [sys.executable] + script
    env = dict(os.environ)
    if words is None:
        return prog, env
    flags = []
    for w in words:
        if re.match(r"^[A-Z_][A-Z0-9_]*=", w):
            k, v = w.split("=", 1)
            env[k] = v
        else:
            flags.append(w)
    return [a.steptrace, "record", "-o", bundle] + flags + ["--"] + prog, env


def run_st(a, *args):
    p = subprocess.run([a.steptrace] + list(args), capture_output=True, text=True)
    return p.returncode, p.stdout, p.stderr


def check_bundle(a, bundle, words):
    """What the bundle still has: (ok, detail, module steps 'N/M')."""
    if not os.path.exists(bundle):
        return False, "no bundle", ""
    problems = []
    torch_off = "--torch" in words and "off" in words
    rc, out, err = run_st(a, "info", bundle)
    if rc:
        return False, "info failed: " + err.strip(), ""
    if torch_off:   # recorded as any CUDA program: steps of its own finding, no phases
        return "steps from" in out, "steps, no annotation (--torch off)", ""
    if "optimizer steps (PyTorch)" not in out:
        problems.append("steps not from PyTorch's optimizer")
    rc, out, err = run_st(a, "ranges", bundle, "--format", "csv")
    paths = [row[-3] for row in csv.reader(out.splitlines()) if len(row) > 3]
    for phase in ("data", "forward", "backward", "optimizer"):
        if "step/" + phase not in paths:
            problems.append("no step/" + phase)
    modules = ""
    fwd = {m.group(2) for m in map(MODULE_PATH.match, paths) if m and m.group(1) == "forward"}
    bwd = {m.group(2) for m in map(MODULE_PATH.match, paths) if m and m.group(1) == "backward"}
    if not fwd:
        problems.append("no transformer.h.N under step/forward")
    if not bwd:
        problems.append("no transformer.h.N under step/backward")
    rc, out, err = run_st(a, "summary", bundle, "--by", "op", "--format", "csv")
    ops = [row[-1] for row in csv.reader(out.splitlines()) if row]
    for phase in ("forward", "backward"):   # under DDP: forward/module/transformer.h.*/...
        if not any(re.match(r"^%s/(.*/)?transformer\.h\.\*(/|$)" % phase, o) for o in ops):
            problems.append("no op %s/.../transformer.h.*" % phase)
    rc, out, err = run_st(a, "steps", bundle, "--include-warmup")
    m = MODULE_NOTE.search(out + err)
    modules = "%s/%s" % (m.group(1), m.group(2)) if m else "all"
    return not problems, "; ".join(problems) or "steps, phases, modules forward and backward", modules


def run_one(a, form, mode, rnd):
    name, words = mode
    stem = os.path.join(a.out, "%s-%s-r%d" % (form, name, rnd))
    bundle = stem + ".stb"
    for old in glob.glob(stem + "*.stb"):
        os.remove(old)
    cmd, env = command(a, form, words, bundle)
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=a.timeout)
    row = dict(form=form, mode=name, round=rnd, rc=p.returncode, seconds=round(time.time() - t0, 1),
               median_ms=None, bundle_ok=None, bundle="", modules="", detail="")
    lines = [line for line in p.stdout.splitlines() if line.startswith("{")]
    if p.returncode or not lines:
        row["detail"] = (p.stderr or p.stdout)[-1500:].replace("\n", " | ")
        return row
    iters = json.loads(lines[-1])["iter_ms"][a.warmup:]
    row["median_ms"] = round(statistics.median(iters), 3)
    if words is not None and "--armed" not in words:
        found = sorted(glob.glob(stem + "*.stb"))
        rank0 = bundle if os.path.exists(bundle) else next((f for f in found if re.search(r"\.0\.stb$", f)), "")
        row["bundle"] = os.path.basename(rank0)
        row["bundle_ok"], row["detail"], row["modules"] = check_bundle(a, rank0, words)
        if not a.keep:
            for f in found:
                os.remove(f)
    elif words is not None:
        found = glob.glob(stem + "*.stb")
        row["bundle_ok"] = not found
        row["detail"] = "armed, no trigger: no bundle" if not found else "an armed run wrote a bundle"
    return row


def summarise(rows, forms, modes):
    lines = []
    for form in forms:
        base = {r["round"]: r["median_ms"] for r in rows
                if r["form"] == form and r["mode"] == "plain" and r["median_ms"]}
        lines += ["", "### %s (%s)" % (form, " ".join(FORMS[form]["args"]) +
                                       (", torchrun, %d GPUs" % FORMS[form]["ranks"]
                                        if FORMS[form]["ranks"] > 1 else "")), "",
                  "| mode | runs (ms) | median (ms) | cost vs plain | bundle | steps with modules |",
                  "|---|---|---:|---:|---|---:|"]
        for name, _ in modes:
            rs = [r for r in rows if r["form"] == form and r["mode"] == name]
            ms = [r["median_ms"] for r in rs if r["median_ms"]]
            if not ms:
                lines.append("| %s | failed | | | %s | |" % (name, rs[0]["detail"][:200] if rs else ""))
                continue
            ratios = [r["median_ms"] / base[r["round"]] - 1 for r in rs
                      if r["median_ms"] and base.get(r["round"])]
            cost = "%+.1f%%" % (100 * statistics.median(ratios)) if ratios and name != "plain" else ""
            checks = [r["bundle_ok"] for r in rs if r["bundle_ok"] is not None]
            check = ("" if not checks else "ok" if all(checks) else
                     "FAILED: " + next(r["detail"] for r in rs if r["bundle_ok"] is False))
            mods = next((r["modules"] for r in rs if r["modules"]), "")
            lines.append("| %s | %s | %.2f | %s | %s | %s |" % (
                name, ", ".join("%.2f" % x for x in ms), statistics.median(ms), cost, check, mods))
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--steptrace", required=True)
    ap.add_argument("--forms", default="12x1024,8x512a2,torchrun")
    ap.add_argument("--modes", default=DEFAULT_MODES, help="comma-separated; ';' when a NAME=FLAGS has a comma")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("-n", "--steps", type=int, default=30, help="optimizer steps per run")
    ap.add_argument("-w", "--warmup", type=int, default=5, help="iterations left out of each run's median")
    ap.add_argument("--timeout", type=int, default=300, help="seconds one run may take")
    ap.add_argument("--keep", action="store_true", help="keep the bundles")
    a = ap.parse_args()
    a.steptrace = os.path.abspath(a.steptrace)
    os.makedirs(a.out, exist_ok=True)
    forms = [f for f in a.forms.split(",") if f]
    for f in forms:
        if f not in FORMS:
            sys.exit("torch_cost.py: unknown form '%s' (%s)" % (f, ", ".join(FORMS)))
    modes = [mode_of(m) for m in a.modes.split(";" if ";" in a.modes else ",") if m]
    if "plain" not in [m[0] for m in modes]:
        modes.insert(0, ("plain", None))
    rows = []
    for form in forms:
        for rnd in range(a.rounds):
            for mode in modes:
                try:
                    row = run_one(a, form, mode, rnd)
                except subprocess.TimeoutExpired:
                    row = dict(form=form, mode=mode[0], round=rnd, rc=-1, seconds=a.timeout, median_ms=None,
                               bundle_ok=False, bundle="", modules="", detail="timed out")
                rows.append(row)
                print(json.dumps(row), flush=True)
    fields = ["form", "mode", "round", "rc", "seconds", "median_ms", "bundle_ok", "bundle", "modules", "detail"]
    with open(os.path.join(a.out, "torch_cost.csv"), "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=fields)
        w.writeheader()
        w.writerows(rows)
    with open(os.path.join(a.out, "torch_cost.json"), "w") as f:
        json.dump(dict(steps=a.steps, warmup=a.warmup, rounds=a.rounds, rows=rows), f, indent=1)
    lines = ["# Recording cost on scripts/gpt_train.py --preset gpt2",
             "",
             "`python3 scripts/torch_cost.py OUT --steptrace %s --forms %s --modes '%s' --rounds %d -n %d -w %d`"
             % (os.path.relpath(a.steptrace), a.forms, a.modes, a.rounds, a.steps, a.warmup)]
    lines += summarise(rows, forms, modes)
    with open(os.path.join(a.out, "torch_cost.md"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))
    bad = [r for r in rows if r["rc"] or r["bundle_ok"] is False]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
