#!/usr/bin/env python3
"""whatif_torch.py: scripts/gpt_train.py's loop, several variants in one process, rounds alternating.

For scripts/whatif_validate.py: each variant is gpt_train.py with its own
options (as a person would run it: eager, --compile, --dtype fp32, --item,
--load-ms X, --batch B), set up once (its model, optimizer, and for
--compile its compilation), then run round after round in turn, so that
every variant's time is measured beside the others' with nothing recording
and the process's start (PyTorch's import, CUDA's start, the compilations)
is paid once.

  python3 scripts/whatif_torch.py --variants '{"eager": ["--preset", "gpt2"], ...}'
      [--rounds 3] [--steps 10] [--warmup 3]

Prints one JSON line per round and variant, then {"medians": {variant: [median of each round, ms]}}.

With --windows-of VARIANT (the process run under `steptrace record
--armed`, VARIANT first among the variants, so that its optimizer is the
one whose steps are the run's steps): each round first runs VARIANT once
more for a recorded window, not counted among its measured rounds: it
prints {"window": round} and waits until the file --go names holds that
round's number (the driver has asked `steptrace trigger` for a window of
the steps that follow), then runs the variant's iterations and prints
{"window_done": round}. The base's recording, its own measurement and its
changed variants' then all come from one process.
"""
import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_train  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", required=True, help="JSON: name -> gpt_train.py options")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10, help="measured iterations a round")
    ap.add_argument("--warmup", type=int, default=3, help="iterations a round left out")
    ap.add_argument("--windows-of", default=None, help="a variant run once more each round for a recorded window")
    ap.add_argument("--go", default=None, help="the file the driver writes a round's number into (--windows-of)")
    ap.add_argument("--go-timeout", type=float, default=120)
    a = ap.parse_args()
    variants = json.loads(a.variants)
    runs, states, medians = {}, {}, {}
    errors = {}
    for name, opts in variants.items():
        try:
            args = gpt_train.parse(opts + ["--steps", str(a.steps + a.warmup)])
            states[name] = gpt_train.setup(args)
            gpt_train.train(args, states[name])   # the first: compilation, the allocator's warm-up
            runs[name] = args
            medians[name] = []
        except Exception as e:   # one variant failing (a compilation) leaves the others measured
            errors[name] = "%s: %s" % (type(e).__name__, e)
            print(json.dumps(dict(variant=name, error=errors[name])), flush=True)
    for rnd in range(a.rounds):
        if a.windows_of in runs and a.go:
            print(json.dumps(dict(window=rnd)), flush=True)
            deadline = time.time() + a.go_timeout
            while time.time() < deadline:
                try:
                    if open(a.go).read().strip() == str(rnd):
                        break
                except OSError:
                    pass
                time.sleep(0.05)
            try:
                gpt_train.train(runs[a.windows_of], states[a.windows_of])
            except Exception as e:
                errors[a.windows_of] = "%s: %s" % (type(e).__name__, e)
            print(json.dumps(dict(window_done=rnd)), flush=True)
        for name, args in runs.items():
            if name in errors:
                continue
            try:
                times = gpt_train.train(args, states[name])[a.warmup:]
            except Exception as e:
                errors[name] = "%s: %s" % (type(e).__name__, e)
                continue
            medians[name].append(statistics.median(times))
            print(json.dumps(dict(round=rnd, variant=name, median_ms=round(medians[name][-1], 3))), flush=True)
    print(json.dumps(dict(medians={k: v for k, v in medians.items() if k not in errors}, errors=errors)), flush=True)


if __name__ == "__main__":
    main()
