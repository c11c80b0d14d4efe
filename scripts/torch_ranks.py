"""torch_ranks.py: what scripts/torch_allreduce.py and torch_ddp.py share.

run_ranks() starts one process per GPU (torch.multiprocessing, spawn) with
NVLink multicast off (NCCL_NVLS_ENABLE=0, TORCH_SYMM_MEM_DISABLE_MULTICAST=1,
NVSHMEM_DISABLE_NVLS=1, unless set), waits for rank 0's rows and stops the
others when a rank dies first; print_rows() prints them as steptrace
prints its tables (aligned text or CSV).
"""

import os
import queue as queues
import sys

import torch.multiprocessing as mp


def run_ranks(worker, nproc, *args):
    """worker(rank, *args, queue) in nproc processes; rank 0 puts its rows. The rows, or None."""
    for k, v in (("NCCL_NVLS_ENABLE", "0"), ("TORCH_SYMM_MEM_DISABLE_MULTICAST", "1"),
                 ("NVSHMEM_DISABLE_NVLS", "1")):
        os.environ.setdefault(k, v)
    ctx = mp.get_context("spawn")
    queue = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(r, *args, queue)) for r in range(nproc)]
    for p in procs:
        p.start()
    rows = None
    while rows is None:
        try:
            rows = queue.get(timeout=2)
        except queues.Empty:
            if any(p.exitcode not in (None, 0) for p in procs):
                for p in procs:
                    if p.exitcode is None:
                        p.terminate()
                break
    for p in procs:
        p.join()
    if rows is None or any(p.exitcode for p in procs):
        print("error: a rank failed: " + ", ".join(f"rank {r} exit {p.exitcode}"
              for r, p in enumerate(procs) if p.exitcode), file=sys.stderr)
        return None
    return rows


def print_rows(rows, columns, form, title, note, fmt, left):
    """rows (dicts) under columns, as CSV or an aligned table with a title and a note."""
    cells = [[fmt(r.get(c), c) for c in columns] for r in rows]
    if form == "csv":
        print(",".join(columns))
        for c in cells:
            print(",".join(c))
        return
    w = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(columns)]

    def line(c):
        return "  ".join(x.ljust(w[i]) if columns[i] in left else x.rjust(w[i]) for i, x in enumerate(c))
    print(title + "\n")
    print(line(columns))
    print(line(["-" * n for n in w]))
    for c in cells:
        print(line(c))
    print("\n" + note)
