#!/usr/bin/env python3
"""armed_ab.py: what recording costs, measured inside one process (GPU).

Run to run, a PyTorch loop's speed on the GPU machines moves by 10-30%
(scripts/torch_cost.py's plain runs of one form: 36 to 51 ms a step), more
than the few percent recording costs, so plain and recorded runs of
separate processes need many rounds to tell them apart. This compares
them inside one process instead: the loop runs under `steptrace record
--armed` (recording nothing), and `steptrace trigger` records windows of
--window steps with a gap between them, over and over; the program's own
per-iteration timer (scripts/gpt_train.py's iter_ms) then says how long the
recorded steps took beside the unrecorded ones around them, in the same
process, and each window's bundle says what `explain` estimates the steps
would have taken unrecorded (its Unrecorded column, issue 36 item 2).

  python3 scripts/armed_ab.py --steptrace BUILD/steptrace --out OUT
      [--form 8x512a2|12x1024] [--mode auto|async] [--steps 200]
      [--window 10] [--gap-s 0.6] [--runs 1] [--every N]

With --every N the loop runs under `record --every N --window W` instead,
which records its windows by itself (steps N.., 2N.., ...), and the table
adds what recording left on cost the whole run: the windows' steps and the
two after each, over the unrecorded steps' median, as a share of the run
(and the same from means: every step's mean over the unrecorded ones').

Steps left out of both sides: the first --skip (warm-up), and the two
steps after each window (the window's bundle is written on the program's
thread at its end). The cost is median(recorded) / median(unrecorded) - 1;
the estimate's error median(Unrecorded) / median(unrecorded) - 1; also the
unrecorded steps before the first window against those after the last
(does the speed come back once recording stops?). Writes OUT/armed_ab.json
and prints a Markdown table; exit 0 (a measurement, not a test), 77
without torch or a GPU.
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
sys.path.insert(0, HERE)
import cost_check  # noqa: E402  (sh, csv_rows)

TRAIN = os.path.join(HERE, "gpt_train.py")
FORMS = {
    "12x1024": ["--preset", "gpt2"],
    "8x512a2": ["--preset", "gpt2", "--batch", "8", "--ctx", "512", "--accum", "2"],
}


def window_steps(st, bundle, estimate=True):
    """A window's measured steps from explain's steps table: (program step number, wall ms, Unrecorded ms).
    estimate: the Unrecorded column from the recorder's own time alone (--estimate-unrecorded),
    not calibrated on the unrecorded steps the window's bundle measured before it (format 1.11)."""
    p = cost_check.sh([st, "explain", bundle, "--section", "steps", "--format", "csv"] +
                      (["--estimate-unrecorded"] if estimate else []))
    if p.returncode:
        raise RuntimeError("explain %s: %s" % (bundle, p.stderr.strip()))
    rows = [r for r in cost_check.csv_rows(p.stdout) if r["Step"].isdigit()]
    # no Unrecorded column: the bundle has no cost events (said in the table as "-")
    return [(int(r["Step"]), float(r["Wall"]), float(r["Unrecorded"]) if r.get("Unrecorded") else None)
            for r in rows]


def bundle_cost(st, bundle):
    """What the window's bundle itself says recording cost the program (format 1.11: its unrecorded
    steps before the window against its recorded ones), in %; None where it says nothing."""
    p = cost_check.sh([st, "steps", bundle])
    m = re.search(r"recording cost it ([-+][0-9.]+)%", " ".join(p.stdout.split()))
    return float(m.group(1)) if m else None


def every_windows(a, tag):
    """--every's windows: the bundles TAG.sN.stb its run wrote, steps N to N + window - 1."""
    windows = []
    for name in sorted(os.listdir(a.out)):
        m = re.match(re.escape(tag) + r"\.s(\d+)\.stb$", name)
        if m:
            first = int(m.group(1))
            windows.append(dict(first=first, last=first + a.window - 1, bundle=os.path.join(a.out, name)))
    return windows


def one_run(a, k):
    tag = "%s-%s-%d%s" % (a.form, a.mode, k, "-every%d" % a.every if a.every else "")
    bundle = os.path.join(a.out, tag + ".stb")
    if a.every:
        cmd = [a.steptrace, "record", "--every", str(a.every), "--window", str(a.window), "-o", bundle]
    else:
        cmd = [a.steptrace, "record", "--armed", "-o", bundle]
    if a.mode == "async":
        cmd += ["--torch-alloc", "async"]
    cmd += ["--", sys.executable, TRAIN] + FORMS[a.form] + ["--steps", str(a.steps)]
    out_f = open(os.path.join(a.out, tag + ".out"), "w")
    err_path = os.path.join(a.out, tag + ".err")
    err_f = open(err_path, "w")
    proc = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
    run_id = None
    deadline = time.time() + 120
    while run_id is None and time.time() < deadline and proc.poll() is None:
        m = re.search(r"armed \(run (\d+)", open(err_path).read())
        run_id = m.group(1) if m else None
        time.sleep(0.2)
    windows = []
    while run_id and proc.poll() is None and not a.every:
        t = subprocess.run([a.steptrace, "trigger", "--run", run_id, "--steps", str(a.window), "--timeout", "120"],
                           capture_output=True, text=True)
        m = re.search(r"steps (\d+) to (\d+) in '([^']+)'", t.stdout)
        if t.returncode or not m:
            break          # the program ended, or was ending
        windows.append(dict(first=int(m.group(1)), last=int(m.group(2)), bundle=m.group(3)))
        time.sleep(a.gap_s)
    proc.wait()
    out_f.close()
    err_f.close()
    if a.every:
        windows = every_windows(a, tag)
    iters = None
    for line in open(os.path.join(a.out, tag + ".out")):
        if line.startswith("{") and "iter_ms" in line:
            iters = json.loads(line)["iter_ms"]
    if iters is None:
        raise RuntimeError("%s: no iter_ms from the program (exit %d; see %s)" % (tag, proc.returncode, err_path))
    return tag, iters, windows


def match_offset(iters, pairs):
    """The program's step numbers against its iter_ms indices: (offset, median |difference| ms) of
    the offset in -2..2 whose iter_ms match the bundle's walls (pairs of step number, wall ms) best;
    None when no pair falls inside iters."""
    best = None
    for off in (-2, -1, 0, 1, 2):
        d = [abs(iters[n + off] - wall) for n, wall in pairs if 0 <= n + off < len(iters)]
        if d and (best is None or statistics.median(d) < best[1]):
            best = (off, statistics.median(d))
    return best


def analyse(a, tag, iters, windows):
    """Per window its steps' walls (bundle) and Unrecorded; the offset from step numbers to iter_ms indices."""
    rec_steps, unrec = {}, {}
    pairs, own, calibrated = [], [], {}
    for w in windows:
        if not os.path.exists(w["bundle"]):
            continue
        c = bundle_cost(a.steptrace, w["bundle"])
        if c is not None:
            own.append(c)
        for n, _, cal in window_steps(a.steptrace, w["bundle"], estimate=False):
            calibrated[n] = cal
        for n, wall, est in window_steps(a.steptrace, w["bundle"]):
            rec_steps[n] = wall
            unrec[n] = est
            pairs.append((n, wall))
    best = match_offset(iters, pairs)
    off = best[0] if best else 0
    recorded = set(n + off for n in rec_steps)
    near = set()
    for n in recorded:
        near.update((n + 1, n + 2))           # the bundle is written after a window's last step
    idle = [i for i in range(a.skip, len(iters)) if i not in recorded and i not in near]
    rec = [iters[i] for i in sorted(recorded) if a.skip <= i < len(iters)]
    est = [unrec[n] for n in rec_steps if a.skip <= n + off < len(iters) and unrec[n] is not None]
    cal = [calibrated[n] for n in rec_steps if a.skip <= n + off < len(iters) and calibrated.get(n) is not None]
    first_w = min(recorded) if recorded else len(iters)
    last_w = max(recorded) if recorded else 0
    before = [iters[i] for i in idle if i < first_w]
    after = [iters[i] for i in idle if i > last_w + 2]
    med = lambda v: statistics.median(v) if v else None
    row = dict(run=tag, windows=len(windows), offset=off, match_ms=best[1] if best else None,
               unrecorded_steps=len(idle), recorded_steps=len(rec),
               unrecorded_ms=med([iters[i] for i in idle]), recorded_ms=med(rec), estimate_ms=med(est),
               before_ms=med(before), after_ms=med(after), bundle_cost_pct=med(own), bundle_costs=own,
               calibrated_ms=med(cal))
    if row["unrecorded_ms"] and row["recorded_ms"]:
        row["cost_pct"] = 100 * (row["recorded_ms"] / row["unrecorded_ms"] - 1)
    if row["unrecorded_ms"] and row["estimate_ms"]:
        row["estimate_pct"] = 100 * (row["estimate_ms"] / row["unrecorded_ms"] - 1)
    if row["unrecorded_ms"] and row["calibrated_ms"]:
        row["calibrated_pct"] = 100 * (row["calibrated_ms"] / row["unrecorded_ms"] - 1)
    # left on (--every): what the windows and the steps that write their bundles added to the
    # whole run, over the unrecorded steps' median, as a share of the run at that median
    steps = range(a.skip, len(iters))
    if row["unrecorded_ms"] and len(steps):
        extra = sum(iters[i] - row["unrecorded_ms"] for i in steps if i in recorded or i in near)
        row["run_pct"] = 100 * extra / (len(steps) * row["unrecorded_ms"])
        row["run_mean_pct"] = 100 * (statistics.mean(iters[i] for i in steps) /
                                     statistics.mean(iters[i] for i in idle) - 1) if idle else None
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steptrace", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--form", choices=sorted(FORMS), default="8x512a2")
    ap.add_argument("--mode", choices=["auto", "async"], default="auto")
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--gap-s", type=float, default=0.6)
    ap.add_argument("--skip", type=int, default=10)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--every", type=int, default=0,
                    help="record --every N --window W instead of triggers: the windows it records by itself")
    a = ap.parse_args()
    probe = subprocess.run([sys.executable, "-c", "import torch; assert torch.cuda.is_available()"],
                           capture_output=True)
    if probe.returncode:
        print("armed_ab: skipped: python3 cannot use torch with CUDA here")
        return 77
    os.makedirs(a.out, exist_ok=True)
    rows = []
    for k in range(a.runs):
        try:
            tag, iters, windows = one_run(a, k)
            rows.append(analyse(a, tag, iters, windows))
        except (RuntimeError, ValueError, KeyError, OSError) as e:
            print("armed_ab: run %d: %s" % (k, e), flush=True)
            continue
        print(json.dumps(rows[-1]), flush=True)
    with open(os.path.join(a.out, "armed_ab.json"), "w") as f:
        json.dump(dict(form=a.form, mode=a.mode, steps=a.steps, window=a.window, rows=rows), f, indent=1)
    fmt = lambda v, p="%.2f": "-" if v is None else p % v
    print("\n`python3 scripts/armed_ab.py --steptrace %s --out OUT --form %s --mode %s --steps %d --window %d`\n"
          % (os.path.relpath(a.steptrace), a.form, a.mode, a.steps, a.window))
    print("| run | windows | unrecorded steps (ms, median) | recorded steps (ms) | cost | explain's Unrecorded (ms) "
          "| estimate vs unrecorded | before first window (ms) | after last (ms) | the run's cost (medians) "
          "| (means) | the bundles' own measure (median) | Unrecorded calibrated on it (ms) | vs unrecorded |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %d | %s (%d) | %s (%d) | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["run"], r["windows"], fmt(r["unrecorded_ms"]), r["unrecorded_steps"], fmt(r["recorded_ms"]),
            r["recorded_steps"], fmt(r.get("cost_pct"), "%+.1f%%"), fmt(r["estimate_ms"]),
            fmt(r.get("estimate_pct"), "%+.1f%%"), fmt(r["before_ms"]), fmt(r["after_ms"]),
            fmt(r.get("run_pct"), "%+.2f%%"), fmt(r.get("run_mean_pct"), "%+.2f%%"),
            fmt(r.get("bundle_cost_pct"), "%+.1f%%"), fmt(r.get("calibrated_ms")),
            fmt(r.get("calibrated_pct"), "%+.1f%%")))
    return 0


if __name__ == "__main__":
    sys.exit(main())
