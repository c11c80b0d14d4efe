#!/usr/bin/env python3
"""What one piece of the recording costs, step against step in one process (issue 36).

    python3 scripts/alternate_ab.py --steptrace BUILD/steptrace --out OUT
        [--piece kernels|callbacks] [--form 8x512a2|12x1024] [--steps 80] [--runs 2]

Records scripts/gpt_train.py under `steptrace record --torch auto` with
STEPTRACE_KERNELS_EVERY=2 (CUPTI's kernel records on even steps only) or
STEPTRACE_CALLBACKS_EVERY=2 (the runtime and driver callbacks on even steps
only), both diagnostics of record/capture.c, and compares the program's own
per-iteration timer (iter_ms) on the steps with the piece against the steps
without it. Neighbouring steps share whatever the host's speed does over
seconds, which between processes moves more than the piece costs.

The bundle's step numbers are matched to iter_ms indices by the offset whose
walls agree best (armed_ab.match_offset). Left out: the first --skip steps and
the steps with module ranges (steptrace steps names them; they come every
10th step and would all fall on one side). Prints one JSON line per run and
a table: medians of each side, the cost (with / without - 1), and the median
over adjacent pairs (each even step against the odd step after it); the
bundle's own Kernels and Recorder (ms) medians per side show which side had
the piece.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import cost_check  # noqa: E402
from armed_ab import FORMS, TRAIN, match_offset  # noqa: E402

VARS = {"kernels": "STEPTRACE_KERNELS_EVERY", "callbacks": "STEPTRACE_CALLBACKS_EVERY"}


def one_run(a, k):
    tag = "%s-%s-%d" % (a.form, a.piece, k)
    bundle = os.path.join(a.out, tag + ".stb")
    env = dict(os.environ)
    env[VARS[a.piece]] = "2"
    cmd = [a.steptrace, "record", "--torch", "auto", "-o", bundle, "--", sys.executable, TRAIN] + \
        FORMS[a.form] + ["--steps", str(a.steps)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    iters = None
    for line in p.stdout.splitlines():
        if line.startswith("{") and "iter_ms" in line:
            iters = json.loads(line)["iter_ms"]
    if iters is None or not os.path.exists(bundle):
        sys.exit("alternate_ab: %s: no iter_ms or no bundle (exit %d): %s" % (tag, p.returncode, p.stderr[-400:]))
    s = cost_check.sh([a.steptrace, "steps", bundle, "--format", "csv"])
    rows = [r for r in cost_check.csv_rows(s.stdout) if r["Step"].isdigit() and r["Warm-up"] == "no"]
    notes = " ".join(cost_check.sh([a.steptrace, "steps", bundle]).stdout.split())
    m = re.search(r"module ranges on \d+ of the \d+ steps \(([0-9, ]+)", notes)
    modules = set(int(x) for x in m.group(1).split(",")) if m else set()
    steps = {int(r["Step"]): (float(r["Wall (ms)"]), int(r["Kernels"].replace(",", "")),
                              float(r["Recorder (ms)"]) if r.get("Recorder (ms)") else 0.0) for r in rows}
    best = match_offset(iters, [(n, w) for n, (w, _, _) in steps.items()])
    if best is None:
        sys.exit("alternate_ab: %s: the bundle's steps match none of the program's iterations" % tag)
    off = best[0]
    use = [n for n in steps if n not in modules and n + off >= a.skip and n + off < len(iters)]
    on = [n for n in use if n % 2 == 0]
    offs = [n for n in use if n % 2 == 1]
    med = statistics.median
    pairs = [iters[n + off] / iters[n + 1 + off] - 1 for n in on if n + 1 in offs]
    row = dict(run=tag, offset=off, match_ms=round(best[1], 3), with_steps=len(on), without_steps=len(offs),
               with_ms=round(med(iters[n + off] for n in on), 3),
               without_ms=round(med(iters[n + off] for n in offs), 3),
               with_kernels=med(steps[n][1] for n in on), without_kernels=med(steps[n][1] for n in offs),
               with_recorder_ms=round(med(steps[n][2] for n in on), 3),
               without_recorder_ms=round(med(steps[n][2] for n in offs), 3),
               pairs=len(pairs), pair_pct=round(100 * med(pairs), 2) if pairs else None)
    row["cost_pct"] = round(100 * (row["with_ms"] / row["without_ms"] - 1), 2)
    print(json.dumps(row), flush=True)
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steptrace", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--piece", choices=sorted(VARS), default="kernels")
    ap.add_argument("--form", choices=sorted(FORMS), default="8x512a2")
    ap.add_argument("--steps", type=int, default=80)
    ap.add_argument("--skip", type=int, default=5)
    ap.add_argument("--runs", type=int, default=1)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    rows = [one_run(a, k) for k in range(a.runs)]
    print("\n| run | steps with / without | with (ms) | without (ms) | cost | adjacent pairs (median) | "
          "kernels with / without | recorder with / without (ms) |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print("| %s | %d / %d | %.2f | %.2f | %+.1f%% | %s | %d / %d | %.2f / %.2f |" % (
            r["run"], r["with_steps"], r["without_steps"], r["with_ms"], r["without_ms"], r["cost_pct"],
            "%+.1f%% (%d)" % (r["pair_pct"], r["pairs"]) if r["pair_pct"] is not None else "-",
            r["with_kernels"], r["without_kernels"], r["with_recorder_ms"], r["without_recorder_ms"]))


if __name__ == "__main__":
    main()
