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
"""
import argparse
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt_train  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--variants", required=True, help="JSON: name -> gpt_train.py options")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=10, help="measured iterations a round")
    ap.add_argument("--warmup", type=int, default=3, help="iterations a round left out")
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
