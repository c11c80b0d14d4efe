#!/usr/bin/env python3
"""multi_tables.py: docs/measurements.md's multi-GPU tables from the CSVs of one device call.

  python3 scripts/multi_tables.py \\
      --allreduce st-allreduce.csv torch-allreduce.csv \\
      --single st-single.csv --ddp st-ddp-naive.csv st-ddp-flat.csv ... \\
      --torch-ddp torch-ddp.csv

prints Markdown tables:
  - all-reduce: per size and dtype, the "all" rows' bus bandwidth of
    `steptrace bench allreduce` and of scripts/torch_allreduce.py, and their
    ratio (target: steptrace >= 0.95 x PyTorch);
  - data-parallel step: per model and precision, steptrace's single-GPU step
    (`steptrace bench`, batch per GPU as the ranks'), every --ddp mode's run
    step on the ranks ("all" rows), bucket against the single GPU (target:
    at most 1.15x) and PyTorch DDP against bucket (target: at least 2.5x for
    large BF16);
  - the seeds' table per mode: step time, each phase's share, communication
    and the part of it exposed;
  - with --speed DIR (scripts/ddp_speed.sh's CSVs): bucket against one GPU
    with and without the SM carve-out, 100 MB buckets, and PyTorch DDP.
Inputs are steptrace's `--format csv` (lines starting with '#' are titles
and notes) and the scripts' `--format csv`.
"""

import argparse
import csv
import os
import sys


def read_rows(path):
    """The rows of every table in a CSV with '#' title and note lines."""
    rows, header = [], None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                header = None
                continue
            cells = next(csv.reader([line]))
            if header is None:
                header = cells
                continue
            rows.append(dict(zip(header, cells)))
    return rows


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def fmt(v, digits=2):
    return "" if v is None else f"{v:.{digits}f}"


def allreduce_table(st_path, torch_path):
    st = {(r["bytes"], r["dtype"]): r for r in read_rows(st_path) if r.get("rank") == "all"}
    pt = {(r["bytes"], r["dtype"]): r for r in read_rows(torch_path) if r.get("rank") == "all"}
    print("| size | dtype | ranks | steptrace (us) | steptrace busbw (GB/s) | PyTorch (us) | "
          "PyTorch busbw (GB/s) | steptrace / PyTorch | check |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for key in sorted(st, key=lambda k: (k[1], int(k[0]))):
        s, p = st[key], pt.get(key, {})
        sb, pb = num(s.get("busbw_gbs")), num(p.get("busbw_gbs"))
        print(f"| {s['size']} | {s['dtype']} | {s['ranks']} | {fmt(num(s.get('mean_us')), 1)} | {fmt(sb)} | "
              f"{fmt(num(p.get('mean_us')), 1)} | {fmt(pb)} | {fmt(sb / pb if sb and pb else None, 3)} | "
              f"{s['check']}{'' if not p or p.get('check') == 'ok' else ' (PyTorch: ' + p['check'] + ')'} |")
    print()


def ddp_tables(single_path, ddp_paths, torch_path):
    single = {(r["model"], r["ctx"], r["precision"]): r for r in read_rows(single_path)
              if r.get("mode", "train") == "train"} if single_path else {}
    runs = {}   # (model, ctx, precision) -> mode -> row
    for path in ddp_paths:
        for r in read_rows(path):
            if r.get("rank") != "all":
                continue
            mode = r["ddp"].split(" ")[0]
            runs.setdefault((r["model"], r["ctx"], r["precision"]), {})[mode] = r
    torch_rows = {(r["model"], r["ctx"], r["precision"]): r for r in read_rows(torch_path)} if torch_path else {}
    modes = ["naive", "flat", "overlap", "bucket"]
    print("| model | ctx | precision | 1 GPU (ms) | " + " | ".join(f"{m} (ms)" for m in modes) +
          " | bucket / 1 GPU | PyTorch DDP (ms) | PyTorch DDP / bucket |")
    print("|---|---:|---|---:|" + "---:|" * len(modes) + "---:|---:|---:|")
    for key in runs:
        one = num(single.get(key, {}).get("step_ms"))
        steps = {m: num(runs[key].get(m, {}).get("step_ms")) for m in modes}
        pt = num(torch_rows.get(key, {}).get("step_ms"))
        b = steps["bucket"]
        print(f"| {key[0]} | {key[1]} | {key[2]} | {fmt(one)} | " +
              " | ".join(fmt(steps[m]) or runs[key].get(m, {}).get("status", "") for m in modes) +
              f" | {fmt(b / one if b and one else None, 3)} | {fmt(pt)} | {fmt(pt / b if pt and b else None, 2)} |")
    print()
    print("| model | precision | ddp | step (ms) | forward (%) | backward (%) | exposed comm (%) | "
          "optimizer (%) | comm (ms) | hidden (%) |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for key, by_mode in runs.items():
        for m in modes:
            r = by_mode.get(m)
            if not r or r.get("status") != "ok":
                continue
            # the share of the all-reduces' time not waited for; none when the wait outlasts them
            comm, exposed = num(r["comm_ms"]), num(r["exposed_ms"])
            hidden = max(0.0, 100.0 * (1.0 - exposed / comm)) if comm else 0.0
            print(f"| {key[0]} | {key[2]} | {r['ddp']} | {r['step_ms']} | {r['forward_pct']} | "
                  f"{r['backward_pct']} | {r['exposed_pct']} | {r['optimizer_pct']} | {r['comm_ms']} | "
                  f"{hidden:.1f} |")
    print()


def by_model(path, all_ranks_row=True):
    """A CSV's rows by model (each run's "all" row where it has ranks); {} when the file is not there."""
    if not os.path.exists(path):
        return {}
    return {r["model"]: r for r in read_rows(path) if not all_ranks_row or r.get("rank", "all") == "all"}


def speed_table(d):
    """scripts/ddp_speed.sh's CSVs in d: bucket against one GPU, before and after the carve-out."""
    print("| model | precision | 1 GPU step (ms) | 1 GPU backward (ms) | bucket, no carve-out or cap (ms) | its backward (ms) | "
          "bucket (ms) | its backward (ms) | its exposed comm (ms) | bucket / 1 GPU, no carve-out or cap | "
          "bucket / 1 GPU | bucket 100 MB (ms) | bucket 100 MB / 1 GPU | PyTorch DDP (ms) | PyTorch DDP / bucket |")
    print("|---|---|" + "---:|" * 13)
    for prec in ("bf16", "fp32"):
        rows = lambda name, all_ranks_row=True: by_model(os.path.join(d, f"{prec}-{name}.csv"), all_ranks_row)
        one, old, now, b100 = rows("one", False), rows("old"), rows("bucket"), rows("b100")
        pt = rows("torch", False)
        for model, o in one.items():
            v = lambda t, k: num(t.get(model, {}).get(k))
            s1, so, sn, sb, sp = num(o["step_ms"]), v(old, "step_ms"), v(now, "step_ms"), v(b100, "step_ms"), \
                v(pt, "step_ms")
            ratio = lambda a, b: fmt(a / b if a and b else None, 3)
            print(f"| {model} | {prec} | {fmt(s1)} | {fmt(num(o['backward_ms']))} | {fmt(so)} | "
                  f"{fmt(v(old, 'backward_ms'))} | {fmt(sn)} | {fmt(v(now, 'backward_ms'))} | "
                  f"{fmt(v(now, 'exposed_ms'))} | {ratio(so, s1)} | {ratio(sn, s1)} | {fmt(sb)} | "
                  f"{ratio(sb, s1)} | {fmt(sp)} | {ratio(sp, sn)} |")
    print()


def exchange_table(d):
    """scripts/ddp_exchange.sh's CSVs in d: the three all-reduces on two GPUs against one GPU."""
    print("| model | precision | kernels | 1 GPU (ms) | NCCL (ms) | NCCL / 1 GPU | ce (ms) | ce / 1 GPU | "
          "exchange (ms) | exchange / 1 GPU | backward 1 GPU / exchange (ms) | exposed (ms) | "
          "optimizer 1 GPU / exchange (ms) | PyTorch DDP (ms) |")
    print("|---|---|---|" + "---:|" * 11)
    for tag in ("bf16-plain", "bf16-fused", "fp32-plain"):
        prec = tag.split("-")[0]
        rows = lambda name, all_ranks_row=True: by_model(os.path.join(d, f"{tag}-{name}.csv"), all_ranks_row)
        one, nccl, ce, ex = rows("one", False), rows("nccl"), rows("ce"), rows("exchange")
        pt = by_model(os.path.join(d, f"{prec}-torch.csv"))
        for model, o in one.items():
            v = lambda t, k: num(t.get(model, {}).get(k))
            s1 = num(o["step_ms"])
            ratio = lambda a: fmt(a / s1 if a and s1 else None, 3)
            sn, sc, se = v(nccl, "step_ms"), v(ce, "step_ms"), v(ex, "step_ms")
            print(f"| {model} | {prec} | {tag.split('-')[1]} | {fmt(s1)} | {fmt(sn)} | {ratio(sn)} | {fmt(sc)} | "
                  f"{ratio(sc)} | {fmt(se)} | {ratio(se)} | {fmt(num(o['backward_ms']))} / "
                  f"{fmt(v(ex, 'backward_ms'))} | {fmt(v(ex, 'exposed_ms'))} | {fmt(num(o['optimizer_ms']))} / "
                  f"{fmt(v(ex, 'optimizer_ms'))} | {fmt(v(pt, 'step_ms'))} |")
    print()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--allreduce", nargs=2, metavar=("STEPTRACE_CSV", "TORCH_CSV"))
    ap.add_argument("--single", metavar="CSV", help="steptrace bench (one GPU) --format csv")
    ap.add_argument("--ddp", nargs="+", metavar="CSV", help="steptrace bench --ddp MODE --format csv")
    ap.add_argument("--torch-ddp", metavar="CSV", help="scripts/torch_ddp.py --format csv")
    ap.add_argument("--speed", metavar="DIR", help="scripts/ddp_speed.sh's output folder")
    ap.add_argument("--exchange", metavar="DIR", help="scripts/ddp_exchange.sh's output folder")
    a = ap.parse_args()
    if a.speed:
        speed_table(a.speed)
    if a.exchange:
        exchange_table(a.exchange)
    if a.allreduce:
        allreduce_table(*a.allreduce)
    if a.ddp:
        ddp_tables(a.single, a.ddp, a.torch_ddp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
