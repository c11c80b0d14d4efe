#!/usr/bin/env python3
"""What an armed process pays per launch before any trigger (issue 36).

    python3 scripts/armed_cost.py --steptrace BUILD/steptrace --out OUT [--pairs 6]
        [--csv docs/foreign/overhead/armed-launch.csv]

Runs scripts/launch_cost.py (small PyTorch ops, host-bound: its time per
launch is what the host pays per launch, three kinds of op) plain and under
`steptrace record --armed` (never triggered), alternating A B B A ... over
--pairs pairs, and compares the medians of the runs' per-launch medians.
Each armed run joins its run at its first optimizer step, so it pays what
an armed job pays: CUPTI loaded and subscribed (resource callbacks only),
the NVTX injection, the Python side's optimizer hook.

Prints a table and writes a CSV (one row per run: pair, mode, kind, ns per
launch) where --csv says. The cost per launch times a loop's launches per
step over its step time is what being armed costs that loop; the table says
it for the host-bound GPT-2 form (1,622 launches in a ~50 ms step) as an
example, with the spread of the plain runs beside it.
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys

KINDS = ("same", "mixed", "cat")
HERE = os.path.dirname(os.path.abspath(__file__))


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    for line in reversed(p.stdout.splitlines()):
        if line.startswith("{"):
            return json.loads(line)
    sys.exit("armed_cost: no result from %s (exit %d): %s" % (" ".join(cmd), p.returncode,
                                                              (p.stderr or p.stdout)[-400:]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steptrace", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--pairs", type=int, default=6)
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--csv")
    ap.add_argument("--launches-per-step", type=float, default=1622)
    ap.add_argument("--step-ms", type=float, default=50.0)
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    prog = [sys.executable, os.path.join(HERE, "launch_cost.py"), "--launches", str(args.launches),
            "--rounds", str(args.rounds)]
    rows, got = [], {"plain": {k: [] for k in KINDS}, "armed": {k: [] for k in KINDS}}
    for p in range(args.pairs):
        order = ("plain", "armed") if p % 2 == 0 else ("armed", "plain")
        for mode in order:
            if mode == "plain":
                cmd = prog
            else:
                cmd = [args.steptrace, "record", "--armed", "-o",
                       os.path.join(args.out, "armed-%d.stb" % p), "--"] + prog
            r = run(cmd)
            for k in KINDS:
                got[mode][k].append(r[k])
                rows.append({"pair": p, "mode": mode, "kind": k, "ns_per_launch": r[k]})
            print("pair %d %-5s %s" % (p, mode, " ".join("%s %.1f" % (k, r[k]) for k in KINDS)), flush=True)
    if args.csv:
        with open(args.csv, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=["pair", "mode", "kind", "ns_per_launch"])
            w.writeheader()
            w.writerows(rows)
    print()
    print("| kind | plain ns/launch (median; runs' range) | armed ns/launch | armed - plain | "
          "paired differences (median; range) | as a share of the example step |")
    print("|---|---:|---:|---:|---:|---:|")
    for k in KINDS:
        a, b = got["plain"][k], got["armed"][k]
        d = [y - x for x, y in zip(a, b)]
        ma, mb = statistics.median(a), statistics.median(b)
        share = statistics.median(d) * args.launches_per_step / (args.step_ms * 1e6) * 100
        print("| %s | %.1f (%.1f-%.1f) | %.1f (%.1f-%.1f) | %+.1f | %+.1f (%+.1f to %+.1f) | %+.2f%% |" % (
            k, ma, min(a), max(a), mb, min(b), max(b), mb - ma, statistics.median(d), min(d), max(d), share))
    print("\n(the share: the paired median difference times %g launches over a %g ms step)"
          % (args.launches_per_step, args.step_ms))


if __name__ == "__main__":
    main()
