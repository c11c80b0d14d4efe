#!/usr/bin/env python3
"""formats.py STEPTRACE ST-GEN GEN-RANKS SAMPLES: every report's CSV and JSON
are files other tools read without options or surprises, on synthetic
bundles (tests/gen's, the ranks of tests/comm's data-parallel runs) and on
samples/.

CSV is read as pandas reads it by default (pandas is not needed: Python's
csv module and pandas' default rules): the first line is the header, every
row has the header's field count, no comment lines, no blank lines, no
empty or repeated column name. Every table a report has (its JSON keys)
is checked through --section too, and its CSV header must be its JSON rows'
keys. JSON must load with json.loads, with no repeated key anywhere: one
object of tables (arrays of rows whose keys are the same for every row)
and "notes" (an array of strings), the same table names for every bundle a
command reads. Prints one line per problem; exit status 1 when any."""
import csv
import io
import json
import os
import subprocess
import sys
import tempfile

st, gen, gen_ranks, samples = sys.argv[1:5]
problems = []
checked = {"csv": 0, "json": 0}


def problem(what):
    problems.append(what)
    print("FAIL: " + what, file=sys.stderr)


def run(args):
    p = subprocess.run([st] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if p.returncode != 0:
        problem("steptrace %s: exit %d: %s" % (" ".join(args), p.returncode, p.stderr.decode()[-500:]))
        return None
    return p.stdout.decode()


def check_csv(args, text):
    """pandas.read_csv(text) with its defaults would read the table the header announces."""
    what = "steptrace " + " ".join(args)
    checked["csv"] += 1
    if not text:
        problem(what + ": no output")
        return None
    if not text.endswith("\n"):
        problem(what + ": the last line has no newline")
    lines = text.split("\n")[:-1]
    for i, line in enumerate(lines, 1):
        if line == "":
            problem("%s: line %d is blank (pandas skips it; a second table would follow)" % (what, i))
            return None
        if line.startswith("#"):
            problem("%s: line %d is a comment, which pandas reads as a row: %r" % (what, i, line[:80]))
            return None
    rows = list(csv.reader(io.StringIO(text)))
    header = rows[0]
    if any(not h for h in header) or len(set(header)) != len(header):
        problem("%s: the header has an empty or repeated name: %r" % (what, header))
    for i, row in enumerate(rows[1:], 2):
        if len(row) != len(header):
            problem("%s: row %d has %d fields, the header %d: %r" % (what, i, len(row), len(header), row[:4]))
            return None
    return header


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    dup = {k for k in keys if keys.count(k) > 1}
    if dup:
        raise ValueError("repeated keys %s" % sorted(dup))
    return dict(pairs)


def check_json(args, text):
    what = "steptrace " + " ".join(args)
    checked["json"] += 1
    try:
        doc = json.loads(text, object_pairs_hook=no_duplicates)
    except ValueError as e:
        problem("%s: not valid JSON: %s" % (what, e))
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("notes"), list) or \
            not all(isinstance(n, str) for n in doc["notes"]):
        problem(what + ": not an object of tables with a \"notes\" array of strings")
        return None
    for name, rows in doc.items():
        if name == "notes":
            continue
        if not isinstance(rows, list) or not all(isinstance(r, dict) for r in rows):
            problem("%s: table %r is not an array of row objects" % (what, name))
        elif rows and any(list(r) != list(rows[0]) for r in rows):
            problem("%s: table %r: rows with other keys than the first row's" % (what, name))
    return doc


def report(args, tables_seen=None):
    """One report in JSON and CSV, then each of its tables alone."""
    doc = check_json(args + ["--format", "json"], run(args + ["--format", "json"]) or "")
    header = check_csv(args + ["--format", "csv"], run(args + ["--format", "csv"]))
    if doc is None:
        return
    names = [k for k in doc if k != "notes"]
    # the same command has the same tables on every bundle: replay --capacity whether or not it fits
    # (live_at_failure empty), comm on one rank or several (skew empty)
    if tables_seen is not None:
        rest = [a for a in args[1:] if not a.endswith(".stb")]
        if "--capacity" in rest:
            rest = ["--capacity"]
        key = args[0] + " " + " ".join(rest)
        if key in tables_seen and tables_seen[key] != names:
            problem("steptrace %s: tables %s here, %s on another bundle" % (" ".join(args), names, tables_seen[key]))
        tables_seen.setdefault(key, names)
    if header is not None and names and doc[names[0]] and list(doc[names[0]][0]) != header:
        problem("steptrace %s: the CSV header %s is not the JSON keys %s" % (" ".join(args), header,
                                                                           list(doc[names[0]][0])))
    for name in names:
        a = args + ["--section", name, "--format", "csv"]
        h = check_csv(a, run(a))
        if h is not None and doc[name] and list(doc[name][0]) != h:
            problem("steptrace %s: the CSV header %s is not the JSON keys %s" % (" ".join(a), h, list(doc[name][0])))


def listing(args):
    """replay's listing: streamed, but the same rules."""
    check_json(args + ["--format", "json"], run(args + ["--format", "json"]) or "")
    check_csv(args + ["--format", "csv"], run(args + ["--format", "csv"]))


def single(bundles):
    seen = {}
    for f in bundles:
        for args in (["info"], ["steps"], ["steps", "--include-warmup"], ["summary"],
                     ["summary", "--by", "op", "--top", "3"], ["summary", "--by", "category", "--all"],
                     ["summary", "--per-step", "--include-warmup"], ["summary", "--range", "forward"],
                     ["ranges"], ["ranges", "--depth", "2"], ["memory"], ["memory", "--view", "driver"],
                     ["flops"], ["flops", "--by", "op", "--top", "5"], ["flops", "--phase", "forward"],
                     ["replay", "--capacity", "1GiB"], ["replay", "--capacity", "1KiB"], ["comm"]):
            report([args[0], f] + args[1:], seen)
        listing(["replay", f, "--to", "5"])
        listing(["replay", f, "--kind", "oom"])
        report(["diff", f, bundles[0]], seen)
    return seen


def main():
    with tempfile.TemporaryDirectory() as tmp:
        def path(name):
            return os.path.join(tmp, name)
        for scenario in ("basic", "nosteps", "truncated"):
            subprocess.run([gen, scenario, "-o", path(scenario + ".stb")], check=True)
        subprocess.run([gen_ranks, tmp, "b", "bucket"], check=True)
        subprocess.run([gen_ranks, tmp, "n", "naive", "0x777"], check=True)
        ours = [path(s + ".stb") for s in ("basic", "nosteps", "truncated")]
        theirs = sorted(os.path.join(samples, f) for f in os.listdir(samples) if f.endswith(".stb"))
        seen = single(ours + theirs)

        # the ranks of a run: totals, each rank's, the collectives, two runs compared
        b = [path("b.rank0.stb"), path("b.rank1.stb")]
        n = [path("n.rank0.stb"), path("n.rank1.stb")]
        for args in (["info"], ["steps"], ["summary"], ["summary", "--per-rank"], ["ranges"], ["memory"],
                     ["flops"], ["flops", "--per-rank"], ["comm"], ["replay", "--capacity", "1GiB"]):
            report([args[0]] + b + args[1:], seen if args[0] in ("comm", "replay") else None)
        report(["diff"] + b + n)
        report(["diff"] + b + n + ["--per-rank"])
        listing(["replay"] + b)
        listing(["replay"] + b + ["--kind", "oom"])
    print("formats: %d CSV and %d JSON outputs%s" % (checked["csv"], checked["json"],
                                                      ", %d problem(s)" % len(problems) if problems else ": ok"))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
