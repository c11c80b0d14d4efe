#!/usr/bin/env python3
"""scripts/replay_table.py: the typical replay's error on bundles, as docs/explain.md's table.

    python3 scripts/replay_table.py --steptrace BUILD/steptrace BUNDLE... [--md]

Runs `steptrace explain BUNDLE --section replay --format csv` on each run
(the ranks of one run, FILE.rankN.stb or FILE.N.stb, together) and prints
its `typical delays` row: the measured and replayed step, the error, the
steps' error mean and max and their own spread; then the mean and max of
|error| over the runs. With --md, a Markdown table.
"""
import argparse
import collections
import csv
import io
import re
import subprocess
import sys


def runs(paths):
    """The bundles grouped by run: the ranks of FILE.rankN.stb (or FILE.N.stb) together."""
    groups = collections.OrderedDict()
    for p in paths:
        m = re.match(r"(.*)\.(rank)?[0-9]+\.stb$", p)
        key = (m.group(1) + ".rank*.stb" if m.group(2) else m.group(1) + ".*.stb") if m else p
        groups.setdefault(key, []).append(p)
    return groups


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steptrace", required=True)
    ap.add_argument("--md", action="store_true")
    ap.add_argument("bundles", nargs="+")
    a = ap.parse_args()
    rows, errs = [], []
    for name, files in runs(a.bundles).items():
        out = subprocess.run([a.steptrace, "explain", *files, "--section", "replay", "--format", "csv"],
                             capture_output=True, text=True)
        if out.returncode:
            print(f"{name}: {out.stderr.strip().splitlines()[-1:]}", file=sys.stderr)
            continue
        row = next((r for r in csv.reader(io.StringIO(out.stdout)) if r and r[0] == "typical delays"), None)
        steps = subprocess.run([a.steptrace, "steps", *files[:1], "--format", "csv"], capture_output=True, text=True)
        counted = sum(1 for r in csv.reader(io.StringIO(steps.stdout)) if len(r) > 1 and r[1] == "no")
        if not row:
            print(f"{name}: no typical replay", file=sys.stderr)
            continue
        measured, typical, err, smean, smax, spread = (float(x) for x in row[1:7])
        errs.append(abs(err))
        rows.append((name, counted, measured, typical, err, smean, smax, spread))
    if a.md:
        print("| Bundle | Counted steps | Measured (ms) | Typical replay (ms) | Error | Step error mean | "
              "Step error max | Steps' spread |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for n, c, m, t, e, sm, sx, sp in rows:
            print(f"| `{n}` | {c} | {m:.3f} | {t:.3f} | {e:+.1f}% | {sm:.1f}% | {sx:.1f}% | {sp:.1f}% |")
    else:
        for r in rows:
            print(",".join(str(x) for x in r))
    if errs:
        print(f"\nOver the {len(errs)}: mean |error| {sum(errs) / len(errs):.1f}% (max {max(errs):.1f}%), "
              f"mean step error {sum(r[5] for r in rows) / len(rows):.1f}% (max {max(r[6] for r in rows):.1f}%)")


if __name__ == "__main__":
    main()
