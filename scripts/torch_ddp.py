#!/usr/bin/env python3
"""torch_ddp.py: PyTorch's DistributedDataParallel, the anchor of `steptrace bench --ddp`.

The same model as steptrace's (scripts/torch_check.py's TransformerLM), the
same batch per rank and precision (eager; BF16 as autocast), wrapped in
torch.nn.parallel.DistributedDataParallel (NCCL, --bucket-mb, default 25 as
PyTorch's) with torch.optim.AdamW (lr 1e-3, betas (0.9, 0.999), eps 1e-8,
weight decay 0.01; foreach), one process per GPU. Per step: forward, the
backward (with DDP's all-reduces, overlapped as DDP does) and the optimizer
timed with CUDA events, the step with the host clock after synchronising;
rank 0 prints, per configuration, the mean over measured steps of every
rank's phases and of the slowest rank's step time (as `steptrace bench
--ddp`'s "all" row).

  python3 scripts/torch_ddp.py --nproc 2 --model small,large,xl --ctx 512 \\
      --precision fp32,bf16 --warmup 2 --steps 5 --format csv > torch-ddp.csv

NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1 and
NVSHMEM_DISABLE_NVLS=1 are set unless already set.
"""

import argparse
import datetime
import gc
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from torch_check import TransformerLM, add_size_args, config_from_args, loss_fn, param_count, precision_context  # noqa: E402
from torch_bench import fmt  # noqa: E402
from torch_ranks import print_rows, run_ranks  # noqa: E402

COLUMNS = ["impl", "model", "params", "ctx", "precision", "ranks", "batch", "bucket_mb", "forward_ms",
           "backward_ms", "optimizer_ms", "step_ms", "step_std", "tokens_per_s", "peak_gib", "status"]


def one(cfg, precision, a, rank, device):
    """This rank's step times of one configuration: (forward, backward, optimizer, wall) lists, peak."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    model = ddp = opt = None
    try:
        torch.manual_seed(a.seed)
        torch.cuda.reset_peak_memory_stats(device)
        model = TransformerLM(cfg).to(device)
        ddp = DDP(model, device_ids=[device.index], bucket_cap_mb=a.bucket_mb)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.999), eps=1e-8,
                                weight_decay=0.01)
        g = torch.Generator(device=device)
        g.manual_seed(a.seed + 1 + rank)   # a batch of its own per rank
        shape = (cfg["batch"], cfg["ctx"])
        inputs = torch.randint(cfg["vocab"], shape, device=device, generator=g)
        targets = torch.randint(cfg["vocab"], shape, device=device, generator=g)
        ev = [torch.cuda.Event(enable_timing=True) for _ in range(4)]
        times = ([], [], [], [])
        for i in range(a.warmup + a.steps):
            torch.cuda.synchronize(device)
            t0 = time.perf_counter()
            ev[0].record()
            with precision_context(precision, device):
                loss = loss_fn(ddp(inputs), targets)
            ev[1].record()
            loss.backward()
            ev[2].record()
            opt.step()
            opt.zero_grad(set_to_none=True)
            ev[3].record()
            torch.cuda.synchronize(device)
            wall = (time.perf_counter() - t0) * 1e3
            if i >= a.warmup:
                for k in range(3):
                    times[k].append(ev[k].elapsed_time(ev[k + 1]))
                times[3].append(wall)
        return "ok", times, torch.cuda.max_memory_allocated(device) / 2 ** 30
    except torch.cuda.OutOfMemoryError:
        return "OOM", None, 0.0
    finally:
        del model, ddp, opt
        gc.collect()
        torch.cuda.empty_cache()


def worker(rank, a, configs, queue):
    """One rank: every configuration; rank 0 gathers the ranks' times and puts the rows."""
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(a.port)
    device = torch.device("cuda", rank)
    torch.cuda.set_device(device)
    dist.init_process_group("nccl", rank=rank, world_size=a.nproc, device_id=device,
                            timeout=datetime.timedelta(seconds=a.timeout))
    rows = []
    for cfg, precision in configs:
        if rank == 0:
            print(f"torch_ddp: {cfg['name']} ctx {cfg['ctx']} {precision} on {a.nproc} ranks ...",
                  end="", file=sys.stderr, flush=True)
        status, times, peak = one(cfg, precision, a, rank, device)
        gathered = [None] * a.nproc
        dist.all_gather_object(gathered, (status, times, peak))
        if rank != 0:
            continue
        row = dict(impl="torch ddp", model=cfg["name"], params=param_count(cfg), ctx=cfg["ctx"],
                   precision=precision, ranks=a.nproc, batch=cfg["batch"], bucket_mb=a.bucket_mb,
                   status="ok")
        if any(g[0] != "ok" for g in gathered):
            row["status"] = "OOM"
            print(" OOM", file=sys.stderr)
            rows.append(row)
            continue
        for k, name in enumerate(("forward_ms", "backward_ms", "optimizer_ms")):
            row[name] = statistics.fmean(statistics.fmean(g[1][k]) for g in gathered)
        step = [max(g[1][3][i] for g in gathered) for i in range(a.steps)]
        row["step_ms"] = statistics.fmean(step)
        row["step_std"] = statistics.stdev(step) if len(step) > 1 else 0.0
        row["tokens_per_s"] = a.nproc * cfg["batch"] * cfg["ctx"] / (row["step_ms"] / 1e3)
        row["peak_gib"] = max(g[2] for g in gathered)
        print(f" {row['step_ms']:.3f} ms/step", file=sys.stderr)
        rows.append(row)
    if rank == 0:
        queue.put(rows)
    dist.barrier()
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    add_size_args(ap, ctx=False)
    ap.add_argument("--nproc", type=int, default=2)
    ap.add_argument("--ctx", default="512", help="comma-separated context lengths")
    ap.add_argument("--precision", default="bf16", help="comma-separated: fp32, tf32, bf16")
    ap.add_argument("--bucket-mb", type=float, default=25.0)
    ap.add_argument("-w", "--warmup", type=int, default=2)
    ap.add_argument("-n", "--steps", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--port", type=int, default=29512)
    ap.add_argument("--timeout", type=int, default=300, help="seconds a collective may take")
    ap.add_argument("--format", default="table", choices=("table", "csv"))
    a = ap.parse_args()
    if torch.cuda.device_count() < a.nproc:
        print(f"error: {a.nproc} ranks need {a.nproc} GPUs; this machine has "
              f"{torch.cuda.device_count()}", file=sys.stderr)
        return 1
    configs = []
    for name in (a.model or ("custom" if a.d_model else "small")).split(","):
        for ctx in [int(x) for x in a.ctx.split(",")]:
            for precision in a.precision.split(","):
                ns = argparse.Namespace(**vars(a))
                ns.ctx = ctx
                configs.append((config_from_args(ns, name), precision))
    rows = run_ranks(worker, a.nproc, a, configs)
    if rows is None:
        return 1
    print_rows(rows, COLUMNS, a.format, "PyTorch DistributedDataParallel training step (ms: mean over "
               "measured steps)", f"{a.warmup} warm-up and {a.steps} measured steps per configuration, "
               f"batch per rank; torch {torch.__version__}, NCCL "
               f"{'.'.join(map(str, torch.cuda.nccl.version()))} on {torch.cuda.get_device_name(0)}",
               fmt, {"impl", "model", "precision", "status"})
    return 0


if __name__ == "__main__":
    sys.exit(main())
