#!/usr/bin/env python3
"""Cuts a torch.profiler trace to its first whole steps, for shipping in tests.

  kineto_trim.py IN OUT [--steps N]

Keeps the top-level keys as they are and, of traceEvents, the metadata
events, everything on the CPU side (cpu_op, user_annotation, cuda_runtime,
cuda_driver, [memory], python_function, flows) that starts within the
first N ProfilerStep#K ranges (default 1), and the GPU work (kernel,
gpu_memcpy, gpu_memset, cuda_sync, gpu_user_annotation) whose launching
call (the same correlation) was kept. OUT is written gzip'd when it ends
in .gz. The importer's checks (tests/import/real.sh) hold on the result:
its kernels, steps and Total Allocated are what it keeps.
"""
import argparse
import gzip
import json


def load(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        return json.load(f)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--steps", type=int, default=1)
    a = ap.parse_args()
    d = load(a.src)
    ev = d["traceEvents"]
    steps = sorted((e["ts"], e["ts"] + e["dur"]) for e in ev
                   if e.get("ph") == "X" and str(e.get("name", "")).startswith("ProfilerStep#"))[:a.steps]
    if not steps:
        raise SystemExit("kineto_trim: %s has no ProfilerStep#N" % a.src)
    lo, hi = steps[0][0], steps[-1][1]
    gpu = {"kernel", "gpu_memcpy", "gpu_memset", "cuda_sync", "gpu_user_annotation"}
    keep, corr = [], set()
    for e in ev:
        if e.get("ph") == "M":
            keep.append(e)
        elif e.get("cat") not in gpu and isinstance(e.get("ts"), (int, float)) and lo <= e["ts"] <= hi:
            keep.append(e)
            c = e.get("args", {}).get("correlation") if e.get("cat") in ("cuda_runtime", "cuda_driver") else None
            if c is not None:
                corr.add(c)
    for e in ev:
        if e.get("cat") in gpu and (e.get("args", {}).get("correlation") in corr or
                                   (e.get("cat") == "gpu_user_annotation" and lo <= e.get("ts", -1) <= hi)):
            keep.append(e)
    d["traceEvents"] = keep
    with (gzip.open(a.dst, "wt", compresslevel=9) if a.dst.endswith(".gz") else open(a.dst, "w")) as f:
        json.dump(d, f)
    print("kineto_trim: %d of %d events, %d step(s)" % (len(keep), len(ev), len(steps)))


if __name__ == "__main__":
    main()
