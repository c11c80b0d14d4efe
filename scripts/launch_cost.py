#!/usr/bin/env python3
"""What one kernel launch costs a PyTorch program's thread (issue 36).

    python3 scripts/launch_cost.py [--launches N] [--rounds R]
    steptrace record -o x.stb -- python3 scripts/launch_cost.py ...
    steptrace record --armed -o x.stb -- python3 scripts/launch_cost.py --armed-ab STEPTRACE

Times N launches of small PyTorch ops on the launching thread, in three
kinds: the same op over and over ("same": x.add_(1)), eight different ops
in turn ("mixed"), and an op whose kernel takes a large parameter block
("cat": torch.cat of 16 tensors). The ops are tiny, so the loop is
host-bound: its time per launch is what the host pays per launch. Each
round ends with an optimizer step (a step to the recorder under `--torch
auto`, so its own launch-cost calibration runs and `steptrace info` shows
it beside this). Run it plain and recorded and subtract: the difference per
launch is the recorder's cost per launch as PyTorch pays it. Prints one
JSON line: per kind the median ns per launch over the rounds after the
first two, and every round's (round r is the recorder's step r under
`--torch auto`).

Run to run, the machines' speed moves more than a microsecond a launch, so
--armed-ab compares inside one process instead: under `steptrace record
--armed`, the program triggers itself every fourth round (`steptrace
trigger PID --steps 1 --no-wait`: the next step no process has begun, a
round being a step) and the rounds recorded are compared with the others
(but the one after each recorded round, whose step writes the bundle); "recorded"/"unrecorded" are the medians of each, and
"cost" their difference per launch, ns. STEPTRACE_CUPTI_OFF pieces (a
diagnostic) leave parts of the recording out of the recorded rounds.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import time

import torch


def step(model, opt, m):
    """An optimizer step: a step boundary to the recorder under --torch auto."""
    loss = model(m).square().sum()
    loss.backward()
    opt.step()
    opt.zero_grad()
    torch.cuda.synchronize()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--launches", type=int, default=20000)
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--armed-ab", metavar="STEPTRACE", help="record every other round (under record --armed)")
    args = ap.parse_args()
    torch.cuda.init()
    dev = "cuda"
    x = torch.randn(256, device=dev)
    y = torch.randn(256, device=dev)
    m = torch.randn(16, 16, device=dev)
    parts = [torch.randn(8, device=dev) for _ in range(16)]
    model = torch.nn.Linear(16, 16).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)

    def same(n):
        for _ in range(n):
            x.add_(1.0)

    def mixed(n):
        ops = (lambda: x.add_(1.0), lambda: x.mul_(0.999), lambda: x.relu_(), lambda: torch.sigmoid(y),
               lambda: torch.exp(y), lambda: x + y, lambda: m @ m, lambda: x.copy_(y))
        for i in range(n):
            ops[i & 7]()

    def cat(n):
        for _ in range(n):
            torch.cat(parts)

    kinds = {"same": same, "mixed": mixed, "cat": cat}
    times = {k: [] for k in kinds}
    recorded = set()
    for r in range(args.rounds):
        if args.armed_ab and r % 4 == 2:
            # the trigger names the steps it asks for (the next ones no process has begun);
            # --no-wait: this thread must go on for them to be recorded
            t = subprocess.run([args.armed_ab, "trigger", str(os.getpid()), "--steps", "1", "--no-wait"],
                               capture_output=True, text=True)
            got = re.search(r"steps (\d+) to (\d+)", t.stdout + t.stderr)
            if got:
                recorded.update(range(int(got.group(1)), int(got.group(2)) + 1))
            else:
                print("trigger: " + (t.stdout + t.stderr).strip(), flush=True)
        for k, fn in kinds.items():
            torch.cuda.synchronize()
            t0 = time.perf_counter_ns()
            fn(args.launches)
            times[k].append((time.perf_counter_ns() - t0) / args.launches)
            torch.cuda.synchronize()
        step(model, opt, m)
    out = {k: round(statistics.median(v[2:]), 1) for k, v in times.items()}
    if args.armed_ab:
        # round r is step r; the round after a recorded one is left out (the bundle is written then)
        rec = sorted(r for r in recorded if 2 <= r < args.rounds)
        idle = [r for r in range(2, args.rounds) if r not in recorded and r - 1 not in recorded]
        for k, v in times.items():
            a = [v[r] for r in rec]
            b = [v[r] for r in idle]
            if a and b:
                out[k + "_recorded"] = round(statistics.median(a), 1)
                out[k + "_unrecorded"] = round(statistics.median(b), 1)
                out[k + "_cost"] = round(statistics.median(a) - statistics.median(b), 1)
        out["recorded_rounds"] = rec
    out["launches"] = args.launches
    out["rounds"] = {k: [round(t, 1) for t in v] for k, v in times.items()}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
