#!/usr/bin/env python3
"""attention_anchor.py: steptrace's flash attention against PyTorch's default
SDPA (cuDNN's fused attention on Hopper with PyTorch 2.11), BF16, on the grid
of issue 41: d_head 64 and 128, seq 4,096 to 65,536, causal and not, batch 8,
one head (GPU).

Both sides in one process run, one after the other: `steptrace bench
attention --impl flash --precision bf16 [--no-causal] --format csv` (medians
of its measured steps), then F.scaled_dot_product_attention with no backend
forced, timed as scripts/torch_attention.py times it (CUDA events, the median
of --runs after --warmup; the backward is out.backward(dout) after a fresh
forward). TFLOP/s count 4 B H T^2 d for the forward (half of it causal) and
2.5 times that for the backward.

  python3 scripts/attention_anchor.py --steptrace BUILD/steptrace --out OUT
      [--d-head 64,128] [--seq 4096,8192,16384,32768,65536] [--batch 8]
      [--heads 1] [--runs 10] [--warmup 3] [--csv FILE] [--md FILE]

Writes OUT/attention-anchor.csv (or --csv) with one row per d_head, seq and
causal: both sides' ms and TFLOP/s, forward and backward, and SDPA's time over
steptrace's (>= 1.0: steptrace as fast or faster), and a Markdown table to
stdout (and --md). The kernels SDPA ran are printed once per d_head, and
written to OUT/sdpa-kernels.txt. Exit 0 (a
measurement, not a test), 77 without torch or a GPU.
"""
import argparse
import csv
import io
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def st_bench(a, causal):
    cmd = [a.steptrace, "bench", "attention", "--impl", "flash", "--precision", "bf16", "--d-head", a.d_head,
           "--seq", a.seq, "--batch", str(a.batch), "--heads", str(a.heads), "--warmup", str(a.warmup),
           "--steps", str(a.runs), "--format", "csv"]
    if not causal:
        cmd.append("--no-causal")
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(cmd), p.returncode, p.stderr.strip()[-400:]))
    rows = {}
    for r in csv.DictReader(io.StringIO(p.stdout)):
        if r.get("status") == "ok":
            rows[(int(r["d_head"]), int(r["seq"]))] = (float(r["forward_median_ms"]), float(r["backward_median_ms"]))
    return rows


def tflops(batch, heads, t, d, causal, ms, backward):
    f = 4.0 * batch * heads * t * t * d * (0.5 if causal else 1.0) * (2.5 if backward else 1.0)
    return f / (ms * 1e-3) / 1e12 if ms else None


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--steptrace", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--d-head", default="64,128")
    ap.add_argument("--seq", default="4096,8192,16384,32768,65536")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--csv")
    ap.add_argument("--md")
    a = ap.parse_args()
    try:
        import torch
        sys.path.insert(0, HERE)
        import torch_attention as ta
        if not torch.cuda.is_available():
            raise ImportError("no CUDA")
    except ImportError as e:
        print("attention_anchor: skipped: %s" % e)
        return 77
    os.makedirs(a.out, exist_ok=True)
    ds = [int(x) for x in a.d_head.split(",")]
    ts = [int(x) for x in a.seq.split(",")]
    print("GPU: %s, PyTorch %s" % (torch.cuda.get_device_name(0), torch.__version__), flush=True)
    with open(os.path.join(a.out, "sdpa-kernels.txt"), "w") as f:
        f.write("GPU: %s, PyTorch %s\n" % (torch.cuda.get_device_name(0), torch.__version__))
        for d in ds:
            line = "SDPA's default kernels at d_head %d: %s" % (d, "; ".join(ta.default_kernels(d)))
            print(line, flush=True)
            f.write(line + "\n")
    rows = []
    for causal in (True, False):
        st = st_bench(a, causal)
        ta.CAUSAL[0] = causal
        for d in ds:
            for t in ts:
                s_fwd, s_bwd = st.get((d, t), (None, None))
                try:
                    p_fwd, p_bwd, _, _ = ta.bench("default", torch.bfloat16, d, t, a.batch, a.heads, a.runs, a.warmup)
                except torch.cuda.OutOfMemoryError:
                    p_fwd = p_bwd = None
                    torch.cuda.empty_cache()
                row = dict(d_head=d, seq=t, causal="yes" if causal else "no", batch=a.batch, heads=a.heads,
                           steptrace_fwd_ms=s_fwd, steptrace_bwd_ms=s_bwd, sdpa_fwd_ms=p_fwd, sdpa_bwd_ms=p_bwd,
                           fwd_ratio=p_fwd / s_fwd if p_fwd and s_fwd else None,
                           bwd_ratio=p_bwd / s_bwd if p_bwd and s_bwd else None,
                           steptrace_fwd_tflops=tflops(a.batch, a.heads, t, d, causal, s_fwd, False),
                           steptrace_bwd_tflops=tflops(a.batch, a.heads, t, d, causal, s_bwd, True),
                           sdpa_fwd_tflops=tflops(a.batch, a.heads, t, d, causal, p_fwd, False),
                           sdpa_bwd_tflops=tflops(a.batch, a.heads, t, d, causal, p_bwd, True))
                rows.append(row)
                print(row, flush=True)
    path = a.csv or os.path.join(a.out, "attention-anchor.csv")
    fmt = lambda v, p="%.3f": "" if v is None else p % v
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        for r in rows:
            w.writerow({k: fmt(v, "%.4f") if isinstance(v, float) else v for k, v in r.items()})
    lines = ["| d_head | seq | causal | steptrace forward ms (TFLOP/s) | SDPA forward ms (TFLOP/s) | forward: SDPA / steptrace "
             "| steptrace backward ms (TFLOP/s) | SDPA backward ms (TFLOP/s) | backward: SDPA / steptrace |",
             "|---:|---:|---|---:|---:|---:|---:|---:|---:|"]
    cell = lambda ms, tf: "-" if ms is None else "%.3f (%.0f)" % (ms, tf)
    for r in rows:
        lines.append("| %d | %d | %s | %s | %s | %s | %s | %s | %s |" % (
            r["d_head"], r["seq"], r["causal"], cell(r["steptrace_fwd_ms"], r["steptrace_fwd_tflops"]),
            cell(r["sdpa_fwd_ms"], r["sdpa_fwd_tflops"]),
            "-" if r["fwd_ratio"] is None else ("**%.2f×**" if r["fwd_ratio"] < 1 else "%.2f×") % r["fwd_ratio"],
            cell(r["steptrace_bwd_ms"], r["steptrace_bwd_tflops"]), cell(r["sdpa_bwd_ms"], r["sdpa_bwd_tflops"]),
            "-" if r["bwd_ratio"] is None else ("**%.2f×**" if r["bwd_ratio"] < 1 else "%.2f×") % r["bwd_ratio"]))
    table = "\n".join(lines) + "\n"
    print("\n" + table)
    if a.md:
        with open(a.md, "w") as f:
            f.write(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
