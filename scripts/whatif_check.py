#!/usr/bin/env python3
"""whatif_check.py: the committed what-if validation (docs/whatif/validation.csv) against issue 37's targets.

  python3 scripts/whatif_check.py [CSV]     (default docs/whatif/validation.csv)

Targets, over the rows measured (a prediction and a measurement): at least
12 of them, mean |error| at most 5%, max |error| at most 10%, and for
every base bundle with two changes or more their order by predicted step
equal to their order by measured step (the same base: the order of their
savings; two measurements closer than their noise may come either way).
The intervals' coverage (measurements inside) is reported, not a target.

Exit 0 when every target holds, 1 when one misses (each said), 77 with
"no validation data" when the CSV is absent or has no measured row, 2 when
it is not the validation's CSV.

  python3 scripts/whatif_check.py --baseline COMMITTED.csv NEW.csv

The ratchet (ctest whatif.validation): NEW.csv, the GPU runs kept in
docs/whatif/runs/ predicted again by the steptrace just built
(whatif_validate.py --predict-from), against the committed CSV: it fails
when fewer changes are measured, the mean |error| grows by more than 0.5
point, one change's |error| by more than 2 points, or a ranking that was
right turns wrong, so a model change that makes predictions worse cannot
land quietly; the targets above are printed, met or not.
"""
import csv
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_ROWS, MEAN_ABS, MAX_ABS = 12, 5.0, 10.0
FIELDS = ("bundle", "change", "rule", "predicted_ms", "lo", "hi", "measured_ms", "error_pct", "noise_pct",
          "in_interval")


def num(v):
    try:
        return float(v)
    except (TypeError, ValueError):
        return None


def measured(rows):
    return [r for r in rows if num(r.get("predicted_ms")) is not None and num(r.get("measured_ms")) is not None]


NOISY = 20.0   # percent: the rounds' spread past which a measurement is too noisy to judge a prediction by


def summary(rows):
    ok = measured(rows)
    errs = [abs(100 * (num(r["predicted_ms"]) - num(r["measured_ms"])) / num(r["measured_ms"])) for r in ok]
    rankings = {}
    for base in sorted({r["bundle"] for r in ok}):
        mine = [r for r in ok if r["bundle"] == base]
        if len(mine) < 2:
            continue
        pred = sorted(mine, key=lambda r: num(r["predicted_ms"]))
        meas = sorted(mine, key=lambda r: num(r["measured_ms"]))
        same = True
        for i in range(len(pred)):
            for j in range(i + 1, len(pred)):
                a, b = pred[i], pred[j]
                tol = max(num(a.get("noise_pct")) or 0, num(b.get("noise_pct")) or 0) / 100
                if num(a["measured_ms"]) > num(b["measured_ms"]) * (1 + tol):
                    same = False
        rankings[base] = ([r["change"] for r in pred], [r["change"] for r in meas], same)
    # a measurement whose rounds spread wider than NOISY judges no model at 5%: counted apart as well
    quiet = [e for e, r in zip(errs, ok) if (num(r.get("noise_pct")) or 0) <= NOISY]
    return dict(n=len(ok), mean_abs=sum(errs) / len(errs) if errs else None, max_abs=max(errs) if errs else None,
                n_quiet=len(quiet), mean_quiet=sum(quiet) / len(quiet) if quiet else None,
                max_quiet=max(quiet) if quiet else None,
                noisy=[r["change"] for r in ok if (num(r.get("noise_pct")) or 0) > NOISY],
                covered=sum(1 for r in ok if r.get("in_interval") == "true"), rankings=rankings,
                rank_right=sum(1 for v in rankings.values() if v[2]))


def load(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def err(r):
    return abs(100 * (num(r["predicted_ms"]) - num(r["measured_ms"])) / num(r["measured_ms"]))


def ratchet(old_path, new_path):
    old, new = load(old_path), load(new_path)
    so, sn = summary(old), summary(new)
    bad = []
    if sn["n"] < so["n"]:
        bad.append("%d changes measured, %d before" % (sn["n"], so["n"]))
    if so["mean_abs"] is not None and sn["mean_abs"] is not None and sn["mean_abs"] > so["mean_abs"] + 0.5:
        bad.append("mean |error| %.2f%%, %.2f%% committed" % (sn["mean_abs"], so["mean_abs"]))
    before = {r["change"]: r for r in measured(old)}
    for r in measured(new):
        o = before.get(r["change"])
        if o is not None and err(r) > err(o) + 2:
            bad.append("%s (%s): |error| %.2f%%, %.2f%% committed" % (r["change"], r["rule"], err(r), err(o)))
    for base, (_, _, same) in so["rankings"].items():
        if same and base in sn["rankings"] and not sn["rankings"][base][2]:
            bad.append("%s: its ranking was right and is wrong now" % base)
    print("whatif_check: predicted again: %d changes, mean |error| %.2f%% (committed %.2f%%), max %.2f%% "
          "(committed %.2f%%), rankings right %d of %d" % (sn["n"], sn["mean_abs"] or 0, so["mean_abs"] or 0,
                                                           sn["max_abs"] or 0, so["max_abs"] or 0,
                                                           sn["rank_right"], len(sn["rankings"])))
    targets = []
    if sn["n"] < MIN_ROWS:
        targets.append("%d changes under %d" % (sn["n"], MIN_ROWS))
    if (sn["mean_abs"] or 0) > MEAN_ABS:
        targets.append("mean |error| over %.0f%%" % MEAN_ABS)
    if (sn["max_abs"] or 0) > MAX_ABS:
        targets.append("max |error| over %.0f%%" % MAX_ABS)
    print("whatif_check: issue 37's targets: %s" % ("met" if not targets else "not met: " + "; ".join(targets)))
    for b in bad:
        print("whatif_check: WORSE: " + b)
    sys.exit(1 if bad else 0)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--baseline":
        ratchet(sys.argv[2], sys.argv[3])
    path = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "docs/whatif/validation.csv")
    if not os.path.exists(path):
        print("whatif_check: no validation data: %s is absent (scripts/whatif_validate.py writes it on the GPU "
              "machine)" % path)
        sys.exit(77)
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in FIELDS if c not in (reader.fieldnames or [])]
        if missing:
            print("whatif_check: %s: not the validation's CSV: no column %s" % (path, ", ".join(missing)))
            sys.exit(2)
        rows = list(reader)
    s = summary(rows)
    if not s["n"]:
        print("whatif_check: no validation data: %s has no measured row (%d rows, all skipped or failed)"
              % (path, len(rows)))
        sys.exit(77)
    bad = []
    if s["n"] < MIN_ROWS:
        bad.append("%d changes measured, under %d" % (s["n"], MIN_ROWS))
    if s["mean_abs"] > MEAN_ABS:
        bad.append("mean |error| %.2f%% over %.0f%%" % (s["mean_abs"], MEAN_ABS))
    if s["max_abs"] > MAX_ABS:
        worst = max(measured(rows), key=lambda r: abs(num(r["predicted_ms"]) / num(r["measured_ms"]) - 1))
        bad.append("max |error| %.2f%% over %.0f%% (%s, %s)" % (s["max_abs"], MAX_ABS, worst["change"], worst["rule"]))
    for base, (pred, meas, same) in s["rankings"].items():
        if not same:
            bad.append("%s: ranked %s by prediction, %s by measurement" % (base, " > ".join(pred), " > ".join(meas)))
    skipped = [r for r in rows if r not in measured(rows)]
    print("whatif_check: %d changes measured (%d not: %s); mean |error| %.2f%%, max %.2f%%; intervals cover %d of %d "
          "(%.0f%%); rankings right %d of %d" % (
              s["n"], len(skipped), "; ".join("%s: %s" % (r["change"], r.get("status", "")) for r in skipped) or "-",
              s["mean_abs"], s["max_abs"], s["covered"], s["n"], 100 * s["covered"] / s["n"], s["rank_right"],
              len(s["rankings"])))
    if s["noisy"]:
        print("whatif_check: too noisy to judge (rounds' spread over %.0f%%): %s; the other %d: mean |error| %.2f%%, "
              "max %.2f%%" % (NOISY, "; ".join(s["noisy"]), s["n_quiet"], s["mean_quiet"] or 0, s["max_quiet"] or 0))
    for b in bad:
        print("whatif_check: MISSED: " + b)
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
