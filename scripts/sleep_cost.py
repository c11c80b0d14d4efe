#!/usr/bin/env python3
"""scripts/sleep_cost.py: how long a short sleep takes, plain and recorded.

    python3 scripts/sleep_cost.py [--sleep-ms 2.5] [--sleeps 8] [--rounds 40] [--spin]
    steptrace record --torch off -o x.stb -- python3 scripts/sleep_cost.py ...

A data loader that waits (reading files, a worker's queue) sleeps; how late
the process wakes from each sleep is the host's, and it can differ between a
process that is recorded and one that is not (the recorder's own threads,
CUPTI's among them, keep a processor from its deeper idle states). Each
round: `--sleeps` sleeps of `--sleep-ms` (as scripts/gpt_train.py's
`--load-ms 20` at batch 8 sleeps 8 times 2.5 ms a
step), then a small GPU product and torch.cuda.synchronize(), as a
training step does. `--spin` runs a thread beside it that never sleeps
(a busy processor elsewhere in the process). Prints one JSON line: the
sleeps' overshoot over what was asked, per sleep, median and quartiles
over the rounds (us), and each round's total (ms).
"""
import argparse
import json
import statistics
import threading
import time

import torch


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sleep-ms", type=float, default=2.5)
    ap.add_argument("--sleeps", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=40)
    ap.add_argument("--spin", action="store_true", help="a busy thread beside the sleeps")
    a = ap.parse_args()
    x = torch.randn(1024, 1024, device="cuda")
    stop = []
    if a.spin:
        def spin():
            while not stop:
                pass
        threading.Thread(target=spin, daemon=True).start()
    over, totals = [], []
    for r in range(a.rounds + 3):
        t0 = time.perf_counter()
        for _ in range(a.sleeps):
            t = time.perf_counter()
            time.sleep(a.sleep_ms / 1e3)
            if r >= 3:
                over.append((time.perf_counter() - t) * 1e6 - a.sleep_ms * 1e3)
        y = x @ x
        torch.cuda.synchronize()
        if r >= 3:
            totals.append((time.perf_counter() - t0) * 1e3)
    stop.append(1)
    q = statistics.quantiles(over, n=4)
    print(json.dumps(dict(sleep_ms=a.sleep_ms, sleeps=a.sleeps, rounds=a.rounds, spin=a.spin,
                          overshoot_us=dict(median=round(statistics.median(over), 1), q1=round(q[0], 1),
                                            q3=round(q[2], 1), mean=round(statistics.mean(over), 1)),
                          round_ms=round(statistics.median(totals), 3), y=float(y[0, 0]))), flush=True)


if __name__ == "__main__":
    main()
