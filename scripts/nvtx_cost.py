#!/usr/bin/env python3
"""What one NVTX range costs the program, recorded or not (issue 22's <= 1 us target).

    python3 scripts/nvtx_cost.py [--pairs N] [--kernels]
    steptrace record --torch off -o x.stb -- python3 scripts/nvtx_cost.py ...

Times N push/pop pairs of torch.cuda.nvtx (NVTX's default domain: what a
program's own ranges and emit_nvtx cost) on the thread that launches, and,
with --kernels, the same with a small kernel launched inside every range (so
the recorder attributes one launch per range). Run it twice, plain and under
`steptrace record`, and subtract: the difference per pair is the recorder's
cost per range. Prints one JSON line. The first 10% of the pairs warm up and
are not counted; the median of 5 rounds is given.
"""
import argparse
import json
import os
import statistics
import time

import torch


def rounds(fn, n, reps=5):
    fn(n // 10)
    out = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn(n)
        out.append((time.perf_counter_ns() - t0) / n)
    return statistics.median(out), out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, default=200000)
    ap.add_argument("--kernels", action="store_true", help="a kernel inside each range")
    args = ap.parse_args()
    torch.cuda.init()
    x = torch.zeros(16, device="cuda")
    push, pop = torch.cuda.nvtx.range_push, torch.cuda.nvtx.range_pop
    names = ["transformer.h.%d" % (i % 12) for i in range(64)]

    def ranges(n):
        for i in range(n):
            push(names[i & 63])
            pop()

    def ranges_kernel(n):
        for i in range(n):
            push(names[i & 63])
            x.add_(1.0)
            pop()
        torch.cuda.synchronize()

    def kernels(n):
        for _ in range(n):
            x.add_(1.0)
        torch.cuda.synchronize()

    res = dict(recorded="CUDA_INJECTION64_PATH" in os.environ, pairs=args.pairs)
    res["range_ns"], res["range_rounds"] = rounds(ranges, args.pairs)
    if args.kernels:
        n = args.pairs // 10
        res["kernel_ns"], _ = rounds(kernels, n)
        res["range_kernel_ns"], _ = rounds(ranges_kernel, n)
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
