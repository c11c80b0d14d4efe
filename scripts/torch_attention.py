#!/usr/bin/env python3
"""torch_attention.py: PyTorch's attention on the seeds' grid, the anchor for
steptrace's FlashAttention kernels (tests/gpu/flash_bench.c prints the same
columns).

Times, with CUDA events (warm-up, then the median of the measured runs),
causal attention at batch 8, 1 head, d_head 16/32/64/128 and seq 256 ..
16,384 (SDPA also 32,768):
  - sdpa:  F.scaled_dot_product_attention(q, k, v, is_causal=True), forced
           onto its flash backend (SDPBackend.FLASH_ATTENTION), BF16;
  - default: the same call with no backend forced, BF16: what PyTorch picks
           (cuDNN's fused attention on an H100 with PyTorch 2.11; the
           kernels it ran are printed once, from torch.profiler);
  - naive: the seeds' attention, scores = q k^T / sqrt(d), causal mask,
           softmax, @ v, in BF16 and (--fp32-too) FP32.
Forward with autograd recording (what a training step runs); backward is
out.backward(dout) after a fresh forward. TFLOP/s count the causal half:
forward 4 B H T^2 d / 2, backward 2.5 times that. A configuration that does
not fit prints an OOM row, its memory is returned and the sweep goes on.

  python3 scripts/torch_attention.py [--impl default,sdpa,naive] [--d-head 16,32,64,128]
      [--seq 256,1024,4096,8192,16384] [--runs 20] [--fp32-too] [--flash LOG]
      [--steptrace CSV]

Memory, as the seeds measure it: torch.cuda.memory_allocated() after the
forward (what the backward starts with: q, k, v, dout and what autograd
saved) and max_memory_allocated() over a forward and backward, in MiB.

--flash LOG reads tests/gpu/flash_bench's output (same columns) and ends with
one markdown table: flash beside SDPA and naive, ms and TFLOP/s.
--steptrace CSV (repeatable) reads `steptrace bench attention --format csv` and ends with
two markdown tables: steptrace's flash and naive beside SDPA and PyTorch's
naive attention, ms (TFLOP/s) of the forward and the backward, then memory
before the backward and peak (MiB).
"""

import argparse
import csv
import gc
import math
import statistics

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


CAUSAL = [True]   # attention_anchor.py sets it False for the non-causal sweep


def naive_attention(q, k, v):
    t, d = q.shape[-2], q.shape[-1]
    scores = q @ k.transpose(-2, -1) / math.sqrt(d)
    if CAUSAL[0]:
        mask = torch.triu(torch.ones(t, t, dtype=torch.bool, device=q.device), diagonal=1)
        scores = scores.masked_fill(mask, float("-inf"))
    return torch.softmax(scores, dim=-1) @ v


def sdpa_attention(q, k, v):
    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        return F.scaled_dot_product_attention(q, k, v, is_causal=CAUSAL[0])


def default_attention(q, k, v):
    return F.scaled_dot_product_attention(q, k, v, is_causal=CAUSAL[0])


IMPLS = {"sdpa": sdpa_attention, "default": default_attention, "naive": naive_attention}


def default_kernels(d):
    """The CUDA kernels SDPA's default backend runs, forward and backward, at d_head d."""
    q, k, v = (torch.randn(1, 1, 1024, d, device="cuda", dtype=torch.bfloat16, requires_grad=True)
               for _ in range(3))
    default_attention(q, k, v).sum().backward()
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
        default_attention(q, k, v).sum().backward()
        torch.cuda.synchronize()
    names = {e.key for e in prof.key_averages() if e.device_type == torch.autograd.DeviceType.CUDA}
    return sorted(n[:90] for n in names if any(w in n.lower() for w in
                                              ("sdpa", "fmha", "flash", "attention", "cudnn")))


def median_ms(prepare, timed, runs, warmup):
    """Median ms of timed(prepare()) over the measured runs; prepare is not timed."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    ms = []
    for i in range(warmup + runs):
        state = prepare()
        start.record()
        timed(state)
        end.record()
        end.synchronize()
        del state
        if i >= warmup:
            ms.append(start.elapsed_time(end))
    return statistics.median(ms)


def bench(impl, dtype, d, t, batch, heads, runs, warmup):
    f = IMPLS[impl]
    gen = torch.Generator(device="cuda").manual_seed(0)
    shape = (batch, heads, t, d)
    q, k, v, dout = (torch.randn(shape, device="cuda", dtype=dtype, generator=gen) for _ in range(4))
    for x in (q, k, v):
        x.requires_grad_(True)

    def fresh_forward():
        for x in (q, k, v):
            x.grad = None
        return f(q, k, v)

    torch.cuda.synchronize()
    fwd = median_ms(lambda: None, lambda _: f(q, k, v), runs, warmup)
    bwd = median_ms(fresh_forward, lambda out: out.backward(dout), runs, warmup)
    # memory: what the backward starts with, and the peak of a forward and backward
    for x in (q, k, v):
        x.grad = None
    gc.collect()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    out = f(q, k, v)
    before = torch.cuda.memory_allocated()
    out.backward(dout)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()
    del out
    return fwd, bwd, before / 2**20, peak / 2**20


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--impl", default="default,sdpa,naive")
    ap.add_argument("--d-head", default="16,32,64,128")
    ap.add_argument("--seq", default="256,1024,4096,8192,16384")
    ap.add_argument("--sdpa-extra-seq", default="32768")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--heads", type=int, default=1)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--fp32-too", action="store_true", help="naive also in FP32")
    ap.add_argument("--flash", help="flash_bench output to merge into one table")
    ap.add_argument("--steptrace", action="append",
                    help="`steptrace bench attention --format csv` output to merge (repeatable)")
    a = ap.parse_args()
    ds = [int(x) for x in a.d_head.split(",")]
    seqs = [int(x) for x in a.seq.split(",")]
    extra = [int(x) for x in a.sdpa_extra_seq.split(",") if x]
    print(f"# {torch.cuda.get_device_name()}, torch {torch.__version__}, batch {a.batch}, "
          f"heads {a.heads}, causal; median ms of {a.runs} runs")
    print(f"{'impl':<18} {'dt':<4} {'d':>4} {'seq':>6} {'fwd_ms':>9} {'fwd_tf':>7} {'bwd_ms':>9} {'bwd_tf':>7} "
          f"{'before_mib':>9} {'peak_mib':>9}")
    rows = []
    if "default" in a.impl.split(","):
        for d in ds:
            print(f"# SDPA default backend, d_head {d}: " + "; ".join(default_kernels(d)), flush=True)
    for impl in a.impl.split(","):
        for d in ds:
            for t in seqs + (extra if impl in ("sdpa", "default") else []):
                rows.append((impl, torch.bfloat16, d, t))
    if a.fp32_too:
        rows += [("naive", torch.float32, d, t) for d in ds for t in seqs]
    results = {}
    for impl, dtype, d, t in rows:
        name = "bf16" if dtype == torch.bfloat16 else "f32"
        flops = 4.0 * a.batch * a.heads * t * t * d / 2
        try:
            fwd, bwd, before, peak = bench(impl, dtype, d, t, a.batch, a.heads,
                                           a.runs if t < 16384 else max(5, a.runs // 2), a.warmup)
            print(f"{'torch-' + impl:<18} {name:<4} {d:>4} {t:>6} {fwd:>9.3f} {flops / fwd / 1e9:>7.1f} "
                  f"{bwd:>9.3f} {2.5 * flops / bwd / 1e9:>7.1f} {before:>9.1f} {peak:>9.1f}", flush=True)
            results[(impl, name, d, t)] = (fwd, bwd, before, peak)
        except torch.cuda.OutOfMemoryError:
            print(f"{'torch-' + impl:<18} {name:<4} {d:>4} {t:>6} OOM", flush=True)
            results[(impl, name, d, t)] = None
        gc.collect()
        torch.cuda.empty_cache()
    if a.flash:
        merge_table(a.flash, results, a.batch * a.heads)
    if a.steptrace:
        steptrace_tables(a.steptrace, results, a.batch * a.heads)


def merge_table(path, results, bh):
    """flash_bench's rows beside PyTorch's, as one markdown table."""
    for line in open(path):
        f = line.split()
        if len(f) == 8 and f[0] == "flash":
            results[("flash", f[1], int(f[2]), int(f[3]))] = (float(f[4]), float(f[6]))
    keys = sorted({(k[1], k[2], k[3]) for k in results}, key=lambda k: (k[0] != "bf16", k[1], k[2]))

    def cell(impl, dt, d, t, i):
        r = results.get((impl, dt, d, t), "absent")
        if r == "absent":
            return ""
        if r is None:
            return "OOM"
        flops = 4.0 * bh * t * t * d / 2 * (2.5 if i else 1)
        return f"{r[i]:.3f} ({flops / r[i] / 1e9:.0f})"

    print("\n| dtype | d_head | seq | flash fwd | SDPA fwd | naive fwd | flash bwd | SDPA bwd | naive bwd |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for dt, d, t in keys:
        cells = [cell(impl, dt, d, t, i) for i in (0, 1) for impl in ("flash", "sdpa", "naive")]
        print(f"| {dt} | {d} | {t} | " + " | ".join(cells) + " |")


def steptrace_tables(paths, results, bh):
    """`steptrace bench attention --format csv` beside PyTorch: times, then memory."""
    st = {}
    rows = []
    for path in paths:
        with open(path) as f:
            lines = [line for line in f if line.strip() and not line.startswith("#")]
        rows += list(csv.DictReader(lines))
    for r in rows:
        if r.get("impl") not in ("naive", "flash") or int(r["batch"]) * int(r["heads"]) != bh:
            continue
        dt = "bf16" if r["precision"] == "bf16" else "f32"
        key = (r["impl"], dt, int(r["d_head"]), int(r["seq"]))
        # medians where the CSV has them: the same statistic as PyTorch's side
        fwd = "forward_median_ms" if r.get("forward_median_ms") else "forward_ms"
        bwd = "backward_median_ms" if r.get("backward_median_ms") else "backward_ms"
        st[key] = None if r["status"] != "ok" else tuple(
            float(r[c]) for c in (fwd, bwd, "before_backward_mib", "peak_mib"))
        if r["status"] == "OOM" and r.get("peak_mib"):
            st[key] = ("OOM", float(r["peak_mib"]))
    keys = sorted({k[1:] for k in st} | {k[1:] for k in results},
                  key=lambda k: (k[0] != "bf16", k[1], k[2]))

    def cell(src, impl, dt, d, t, i):
        r = src.get((impl, dt, d, t), "absent")
        if r == "absent":
            return ""
        if r is None or r[0] == "OOM":
            return "OOM"
        if i >= 2:
            return f"{r[i]:.0f}"
        flops = 4.0 * bh * t * t * d / 2 * (2.5 if i else 1)
        return f"{r[i]:.3f} ({flops / r[i] / 1e9:.0f})"

    impls = [(st, "flash"), (results, "default"), (results, "sdpa"), (st, "naive"),
             (results, "naive")]
    print("\n| dtype | d_head | seq | flash fwd | SDPA default fwd | SDPA FA2 fwd | naive fwd "
          "| torch naive fwd | flash bwd | SDPA default bwd | SDPA FA2 bwd | naive bwd "
          "| torch naive bwd |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for dt, d, t in keys:
        cells = [cell(src, impl, dt, d, t, i) for i in (0, 1) for src, impl in impls]
        print(f"| {dt} | {d} | {t} | " + " | ".join(cells) + " |")
    print("\n| dtype | d_head | seq | flash before bwd / peak | SDPA default | SDPA FA2 | naive "
          "| torch naive |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for dt, d, t in keys:
        cells = []
        for src, impl in impls:
            b, p = cell(src, impl, dt, d, t, 2), cell(src, impl, dt, d, t, 3)
            cells.append(b if b in ("", "OOM") else f"{b} / {p}")
        print(f"| {dt} | {d} | {t} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    main()
