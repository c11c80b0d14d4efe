#!/usr/bin/env python3
"""torch_allreduce.py: PyTorch + NCCL's all-reduce, the anchor of `steptrace bench allreduce`.

Starts N processes (one per GPU, torch.multiprocessing), each with
torch.distributed on NCCL, and for every dtype and size: warm-up, then timed
iterations, each between two CUDA events on the current stream (the
all-reduce is in place, so every iteration first restores its input, outside
the events), then a check that the result is the exact sum (rank r's
element i is ((r + i) mod 4) + 1, as steptrace's). Statistics as
steptrace's: per rank the mean, min, max and sample std of its iterations;
"all" takes each iteration's slowest rank; algorithm bandwidth = bytes /
mean time, bus bandwidth = algorithm bandwidth * 2(n-1)/n (nccl-tests'), in
GB/s of 10^9 bytes.

  python3 scripts/torch_allreduce.py --nproc 2 --sizes 1MiB,10MiB,100MiB,1GiB \\
      --dtype f32 --warmup 5 --iters 20 --format csv > torch-allreduce.csv

NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 are set unless already set. --backend gloo --device
cpu runs the same on the CPU (a check of this script, not a measurement).
"""

import argparse
import os
import statistics
import sys

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_ranks import print_rows, run_ranks  # noqa: E402

DTYPES = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
COLUMNS = ["size", "bytes", "dtype", "ranks", "rank", "iters", "mean_us", "min_us", "max_us",
           "std_us", "algbw_gbs", "busbw_gbs", "check"]
UNITS = {"": 1, "B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30, "KB": 10 ** 3,
         "MB": 10 ** 6, "GB": 10 ** 9}


def parse_size(s):
    """'1MiB' -> 1048576, as steptrace's parse_size."""
    t = s.strip()
    i = len(t)
    while i and not (t[i - 1].isdigit() or t[i - 1] == "."):
        i -= 1
    unit = t[i:].upper()
    if unit not in UNITS or not t[:i]:
        raise SystemExit(f"error: bad size '{s}'")
    return int(float(t[:i]) * UNITS[unit])


def human(n):
    for unit, div in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= div:
            v = n / div
            return f"{v:.3g} {unit}" if v < 100 else f"{v:.0f} {unit}"
    return f"{n} B"


def stats(v):
    return dict(mean=statistics.fmean(v), min=min(v), max=max(v),
                std=statistics.stdev(v) if len(v) > 1 else 0.0)


def rows_of(bytes_, dtype, ranks, times, wrong):
    """Rows of one size and dtype from every rank's iteration times (us)."""
    rows = []
    factor = 2 * (ranks - 1) / ranks
    check = f"FAILED: {wrong} wrong" if wrong else "ok"
    slowest = [max(t[i] for t in times) for i in range(len(times[0]))]
    for rank, v in list(enumerate(times)) + [("all", slowest)]:
        s = stats(v)
        alg = bytes_ / (s["mean"] * 1e3) if s["mean"] > 0 else 0.0
        rows.append(dict(size=human(bytes_), bytes=bytes_, dtype=dtype, ranks=ranks, rank=rank,
                         iters=len(v), mean_us=s["mean"], min_us=s["min"], max_us=s["max"],
                         std_us=s["std"], algbw_gbs=alg, busbw_gbs=alg * factor, check=check))
    return rows


def worker(rank, a, queue):
    """One rank: every size and dtype; rank 0 puts the rows."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(a.port)
    device = torch.device(a.device, rank) if a.device == "cuda" else torch.device("cpu")
    if a.device == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group(a.backend, rank=rank, world_size=a.nproc)
    ranks = a.nproc
    results = []
    for dname in a.dtype.split(","):
        dtype = DTYPES[dname]
        esize = torch.tensor([], dtype=dtype).element_size()
        for size in a.sizes:
            count = size // esize
            idx = torch.arange(count, device=device)
            source = (((rank + idx) % 4) + 1).to(dtype)
            want = sum(((r + idx) % 4) + 1 for r in range(ranks)).to(dtype)
            buf = source.clone()
            for _ in range(a.warmup):
                buf.copy_(source)
                dist.all_reduce(buf)
            times = []
            for _ in range(a.iters):
                buf.copy_(source)
                if a.device == "cuda":
                    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                    start.record()
                    dist.all_reduce(buf)
                    end.record()
                    end.synchronize()
                    times.append(start.elapsed_time(end) * 1e3)
                else:
                    import time
                    t0 = time.perf_counter()
                    dist.all_reduce(buf)
                    times.append((time.perf_counter() - t0) * 1e6)
            wrong = int((buf != want).sum().item())
            gathered = [None] * ranks
            dist.all_gather_object(gathered, (times, wrong))
            if rank == 0:
                results += rows_of(count * esize, dname, ranks, [g[0] for g in gathered],
                                   sum(g[1] for g in gathered))
                print(f"torch_allreduce: {human(count * esize)} {dname} on {ranks} ranks: "
                      f"{results[-1]['busbw_gbs']:.2f} GB/s bus bandwidth", file=sys.stderr, flush=True)
            del buf, source, want, idx
            if a.device == "cuda":
                torch.cuda.empty_cache()
    if rank == 0:
        queue.put(results)
    dist.barrier()
    dist.destroy_process_group()


def fmt(v, col):
    if isinstance(v, float):
        return f"{v:.2f}" if col.endswith("gbs") else f"{v:.1f}"
    return str(v)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--sizes", default="1MiB,10MiB,100MiB,1GiB")
    ap.add_argument("--dtype", default="f32", help="comma-separated: f32, bf16, f16")
    ap.add_argument("-w", "--warmup", type=int, default=5)
    ap.add_argument("-n", "--iters", type=int, default=20)
    ap.add_argument("--backend", default="nccl", choices=("nccl", "gloo"))
    ap.add_argument("--device", default="cuda", choices=("cuda", "cpu"))
    ap.add_argument("--port", type=int, default=29511)
    ap.add_argument("--format", default="table", choices=("table", "csv"))
    a = ap.parse_args()
    a.sizes = [parse_size(s) for s in a.sizes.split(",")]
    for d in a.dtype.split(","):
        if d not in DTYPES:
            raise SystemExit(f"error: --dtype expects f32, bf16 or f16, not '{d}'")
    if a.device == "cuda" and torch.cuda.device_count() < a.nproc:
        print(f"error: {a.nproc} ranks need {a.nproc} GPUs; this machine has "
              f"{torch.cuda.device_count()}", file=sys.stderr)
        return 1
    rows = run_ranks(worker, a.nproc, a)
    if rows is None:
        return 1
    note = (f"{a.warmup} warm-up and {a.iters} timed iterations per size; torch {torch.__version__}, "
            f"backend {a.backend}" + (f", NCCL {'.'.join(map(str, torch.cuda.nccl.version()))} on "
                                      f"{torch.cuda.get_device_name(0)}" if a.device == "cuda" else ""))
    print_rows(rows, COLUMNS, a.format, "PyTorch all-reduce (us per iteration; bandwidths in GB/s, "
               "nccl-tests' definitions)", note, fmt, {"size", "dtype", "rank", "check"})
    return 1 if any(r["check"] != "ok" for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
