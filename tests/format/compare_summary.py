#!/usr/bin/env python3
"""compare_summary.py NAME GOT WANT WANT_NOTES [NAMES]: two kernel summaries
as CSV (read_bundle.py's, steptrace's) must hold the same rows, names and
numbers: integers exactly, decimals to the precision they are printed with;
and the same notes: read_bundle.py's '#' lines, the lines of WANT_NOTES
(steptrace's standard error, where its CSV puts them; warnings left out).
With NAMES, a file of kernel names one a line, WANT must list exactly
those. Stops at the first difference with one line naming it; on success
prints "ROWS NUMBERS"."""
import csv
import sys
from decimal import Decimal, InvalidOperation


def table(path):
    """The header, the rows, and the '#' note lines (without '# ') of a CSV report."""
    with open(path, newline="") as f:
        lines = f.read().split("\n")
    notes = [l[2:] for l in lines if l.startswith("#")]
    rows = list(csv.reader(l for l in lines if l and not l.startswith("#")))
    return (rows[0] if rows else []), rows[1:], notes


def stderr_notes(path):
    """steptrace's notes: its standard error less warnings and errors."""
    with open(path) as f:
        return [l.rstrip("\n") for l in f if l.strip() and not l.startswith(("warning:", "error:"))]


def number(s):
    try:
        return Decimal(s)
    except InvalidOperation:
        return None


def decimals(d):
    return max(0, -d.as_tuple().exponent)


def main():
    name, got_path, want_path, want_notes_path = sys.argv[1:5]
    names_path = sys.argv[5] if len(sys.argv) > 5 else None
    got_head, got, got_notes = table(got_path)
    want_head, want, want_notes = table(want_path)
    if want_notes:
        print("%s: steptrace's CSV holds '#' lines: %s" % (name, want_notes), file=sys.stderr)
        sys.exit(1)
    want_notes = stderr_notes(want_notes_path)

    def differ(what):
        print("%s: %s" % (name, what), file=sys.stderr)
        sys.exit(1)

    if got_head != want_head:
        differ("columns differ: read_bundle.py has %s, steptrace %s" % (got_head, want_head))
    if not want_head:
        differ("steptrace printed no table")
    numbers = 0
    for i, (g, w) in enumerate(zip(got, want)):
        where = "row %d (%s)" % (i + 1, w[-1][:60])
        for col, a, b in zip(want_head, g, w):
            x, y = number(a), number(b)
            if x is None or y is None:
                same = a == b
            elif decimals(x) == 0 and decimals(y) == 0:
                same = x == y
                numbers += 1
            else:
                places = Decimal(1).scaleb(-min(decimals(x), decimals(y)))
                same = x.quantize(places) == y.quantize(places)
                numbers += 1
            if not same:
                differ("%s, column '%s': read_bundle.py says %s, steptrace %s" % (where, col, a, b))
    if len(got) != len(want):
        differ("read_bundle.py has %d rows, steptrace %d (first extra: %s)" %
               (len(got), len(want), (got[len(want)] if len(got) > len(want) else want[len(got)])[-1][:60]))
    if got_notes != want_notes:
        differ("notes differ: read_bundle.py has %s, steptrace %s" % (got_notes, want_notes))
    if names_path:
        with open(names_path) as f:
            expected = sorted(l.rstrip("\n") for l in f if l.strip())
        listed = sorted(w[-1] for w in want)
        if listed != expected:
            differ("steptrace lists %s, the bundle was built to list %s" % (listed, expected))
    print(len(want), numbers)


if __name__ == "__main__":
    main()
