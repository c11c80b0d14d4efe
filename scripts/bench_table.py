#!/usr/bin/env python3
"""bench_table.py STEPTRACE_CSV TORCH_CSV: docs/measurements.md's Table 1 in Markdown.

STEPTRACE_CSV is `steptrace bench ... --format csv`; TORCH_CSV has the
columns model,ctx,precision,mode,step_ms,step_std,status (scripts/torch_bench.py
--format csv, or docs/torch-eager-h100.csv). Rows follow STEPTRACE_CSV; the
speed-up is PyTorch's mean step over steptrace's.
"""
import csv
import sys


def key(r):
    return (r["model"], r["ctx"], r["precision"], r["mode"])


def num(s, digits=1):
    return f"{float(s):.{digits}f}" if s not in ("", None) else "–"


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: bench_table.py STEPTRACE_CSV TORCH_CSV")
    torch = {key(r): r for r in csv.DictReader(open(sys.argv[2]))}
    print("| model | ctx | precision | mode | steptrace step (ms) | fwd / bwd / opt (ms) "
          "| peak (GiB) | PyTorch eager step (ms) | speed-up |")
    print("|---|---:|---|---|---:|---:|---:|---:|---:|")
    lines = [l for l in open(sys.argv[1]) if l.strip() and not l.startswith("#")]
    for r in csv.DictReader(lines):
        t = torch.get(key(r))
        lead = f"| {r['model']} | {r['ctx']} | {r['precision']} | {r['mode']} |"
        if t is None or t.get("status") != "ok":
            tcell, speed = "not run", ""
        else:
            tcell = f"{float(t['step_ms']):.1f} ± {float(t['step_std']):.1f}"
            speed = ""
        if r["status"] != "ok":
            print(f"{lead} {r['status']} |  |  | {tcell} |  |")
            continue
        if tcell != "not run":
            speed = f"{float(t['step_ms']) / float(r['step_ms']):.2f}×"
        phases = " / ".join(num(r[c]) for c in ("forward_ms", "backward_ms", "optimizer_ms"))
        print(f"{lead} {float(r['step_ms']):.1f} ± {float(r['step_std']):.1f} | {phases} "
              f"| {float(r['peak_gib']):.2f} | {tcell} | {speed} |")


if __name__ == "__main__":
    main()
