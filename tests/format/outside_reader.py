#!/usr/bin/env python3
"""outside_reader.py STEPTRACE SOURCE_DIR: every shipped bundle (samples/,
docs/, tests/) read by scripts/read_bundle.py, a reader written from
docs/FORMAT.md and proto/steptrace.proto alone, must rebuild what steptrace
reports of it:

  - summary, by kernel and --by op, with and without --include-warmup: every row's name, Total Time (ns),
    Instances, Min and Max exactly; Avg, Med, StdDev within 0.01 ns and
    Time (%) within 1e-9 (steptrace's JSON prints doubles; the reader
    computes the same doubles in another order);
  - steps: how many steps are measured and their mean wall time (within
    1e-9 ms), whatever cut the steps (the recorder, or the launch period of
    a "whole run" bundle);
  - memory, each view that recorded allocations: every peak row (overall,
    phase, step, outside steps) in bytes exactly, the overall peak's time
    within 1e-6 ms, and the breakdown by category at the peak exactly.

The message classes are generated at test time: protoc --python_out into a
temporary folder (and read_bundle.py's own descriptor set, which it builds
the same way). Prints one line per bundle; exits 1 at the end if any
differed, naming each difference."""
import glob
import json
import os
import subprocess
import sys
import tempfile

st, src = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(src, "scripts"))
import read_bundle  # noqa: E402

failures = []
checked = {"bundles": 0, "rows": 0, "numbers": 0}


def steptrace(*args):
    out = subprocess.run([st, *args, "--format", "json"], capture_output=True, text=True)
    if out.returncode != 0:
        raise RuntimeError("steptrace %s: exit %d: %s" % (" ".join(args), out.returncode, out.stderr.strip()))
    return json.loads(out.stdout)


def differ(name, what):
    failures.append("%s: %s" % (name, what))


def close(a, b, tol):
    if a is None or b is None:
        return a is b
    return abs(a - b) <= tol


def check_summary(name, run, path, by, include_warmup=False):
    extra = ("--include-warmup",) if include_warmup else ()
    want = steptrace("summary", path, "--by", by, *extra)["summary"]
    got = read_bundle.kernel_summary(run, include_warmup, by=by)
    where = "%s summary --by %s%s" % (name, by, " --include-warmup" if include_warmup else "")
    if [w["Name"] for w in want] != [g[0] for g in got]:
        differ(where, "rows differ: steptrace %s..., the reader %s..." %
               ([w["Name"][:40] for w in want[:4]], [g[0][:40] for g in got[:4]]))
        return
    for w, (row, s, pct) in zip(want, got):
        exact = {"Total Time (ns)": s["total"], "Instances": s["n"], "Min (ns)": s["min"], "Max (ns)": s["max"]}
        approx = {"Avg (ns)": (s["mean"], 0.01), "Med (ns)": (s["median"], 0.01),
                  "StdDev (ns)": (s["stddev"], 0.01), "Time (%)": (pct, 1e-9)}
        for col, v in exact.items():
            if w[col] != v:
                differ(where, "row '%s', %s: steptrace %s, the reader %s" % (row[:60], col, w[col], v))
        for col, (v, tol) in approx.items():
            if not close(w[col], v, tol):
                differ(where, "row '%s', %s: steptrace %s, the reader %s" % (row[:60], col, w[col], v))
        checked["rows"] += 1
        checked["numbers"] += len(exact) + len(approx)


def check_steps(name, run, path):
    want = [r for r in steptrace("steps", path)["stats"] if r["Steps"] == "measured"]
    got = read_bundle.step_stats(run)
    n = want[0]["N"] if want else 0
    mean = want[0]["Wall Mean (ms)"] if want else None
    if n != got["N"]:
        differ(name, "measured steps: steptrace %d, the reader %d" % (n, got["N"]))
    elif n and not close(mean, got["mean"] / 1e6, 1e-9):
        differ(name, "mean wall: steptrace %r ms, the reader %r" % (mean, got["mean"] / 1e6))
    checked["numbers"] += 2


def check_memory(name, run, path, view):
    want = steptrace("memory", path, "--view", view)
    got = read_bundle.memory_report(run, view)
    where = "%s memory --view %s" % (name, view)
    rows = {}
    for r in want["peaks"]:
        scope = r["Scope"].replace(" (warm-up)", "")
        if r["View"] == view:
            rows[scope] = r
    if set(rows) != set(got["peaks"]):
        differ(where, "peak rows: steptrace %s, the reader %s" % (sorted(rows), sorted(got["peaks"])))
    for scope, r in rows.items():
        g = got["peaks"].get(scope)
        if g is None:
            continue
        if r["Peak (bytes)"] != g["bytes"]:
            differ(where, "%s peak: steptrace %d bytes, the reader %d" % (scope, r["Peak (bytes)"], g["bytes"]))
        if scope == "overall" and not close(r["Time (ms)"], g["time_ms"], 1e-6):
            differ(where, "overall peak at %r ms by steptrace, %r by the reader" % (r["Time (ms)"], g["time_ms"]))
        checked["numbers"] += 1 + (scope == "overall")
    at = {r["Category"]: r["Bytes"] for r in want["at_peak"] if r["Bytes"]}
    if at != got["at_peak"]:
        differ(where, "at the peak: steptrace %s, the reader %s" % (at, got["at_peak"]))
    checked["numbers"] += len(at)


def main():
    bundles = sorted(glob.glob(os.path.join(src, "samples", "*.stb")) +
                     glob.glob(os.path.join(src, "docs", "**", "*.stb"), recursive=True) +
                     glob.glob(os.path.join(src, "tests", "**", "*.stb"), recursive=True))
    if len(bundles) < 19:
        print("only %d bundles found under samples/, docs/ and tests/" % len(bundles), file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        # the schema's generated classes, as an outside reader makes them
        proto = os.path.join(src, "proto", "steptrace.proto")
        subprocess.run(["protoc", "-I", os.path.dirname(proto), "--python_out=" + tmp, proto], check=True)
        sys.path.insert(0, tmp)
        import steptrace_pb2
        schema = {d.name: getattr(steptrace_pb2, d.name) for d in steptrace_pb2.DESCRIPTOR.message_types_by_name.values()}
        for path in bundles:
            name = os.path.relpath(path, src)
            try:
                b = read_bundle.Bundle(path, schema=schema)
            except read_bundle.BundleError as e:
                # not a bundle: steptrace must refuse it too
                if subprocess.run([st, "info", path], capture_output=True).returncode == 0:
                    differ(name, "the reader refuses it (%s), steptrace reads it" % e)
                continue
            run = read_bundle.Run(b)
            before = len(failures)
            try:
                check_summary(name, run, path, "kernel")
                check_summary(name, run, path, "op")
                check_summary(name, run, path, "kernel", include_warmup=True)
                check_summary(name, run, path, "op", include_warmup=True)
                check_steps(name, run, path)
                views = {e[e["kind"]]["source"] for e in run.mem if e["kind"] == "alloc"}
                for view in ("model", "driver"):
                    if view in views:
                        check_memory(name, run, path, view)
            except RuntimeError as e:
                differ(name, str(e))
            checked["bundles"] += 1
            print("%-50s %s%s" % (name, "same" if len(failures) == before else "DIFFERS",
                                  " (steps cut by the launch period: %d launches)" % run.period if run.period else ""))
    for f in failures:
        print("FAIL: " + f, file=sys.stderr)
    print("the reader rebuilt %d bundles: %d summary rows, %d numbers compared; %d differences" %
          (checked["bundles"], checked["rows"], checked["numbers"], len(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
