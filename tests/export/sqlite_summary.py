#!/usr/bin/env python3
"""sqlite_summary.py NAME SQL_CSV SUMMARY_CSV: the rows kernel_summary.sql
printed (sqlite3 -csv) against `steptrace summary --format csv`, number for
number. Names, Total Time, Instances, Min and Max must be equal; Avg and
Time (%), which steptrace prints with C's %.1f, must be what %.1f makes of
SQL's integers (total / instances, 100 * total / the sum of all totals), and
within 0.1 of SQL's own ROUND (SQLite rounds halves its own way). Prints
"ROWS rows" or one line naming the first difference."""
import csv
import sys


def main():
    name, sql_path, want_path = sys.argv[1:4]
    with open(sql_path, newline="") as f:
        got = list(csv.reader(f))
    with open(want_path, newline="") as f:
        want = [r for r in csv.reader(f) if r and not r[0].startswith("#")]
    head, want = want[0], want[1:]

    def differ(what):
        print(f"{name}: {what}")
        sys.exit(1)

    col = {c: i for i, c in enumerate(head)}
    if len(got) != len(want) or not want:
        differ(f"SQL gives {len(got)} kernel names, steptrace summary {len(want)}")
    grand = sum(int(g[1]) for g in got)
    for i, (g, w) in enumerate(zip(got, want)):
        pct, total, n, avg, lo, hi, kname = g
        where = f"row {i + 1} ({kname[:50]})"
        if kname != w[col["Name"]]:
            differ(f"{where}: SQL names {kname!r}, steptrace {w[col['Name']]!r}")
        for c, v in (("Total Time (ns)", total), ("Instances", n), ("Min (ns)", lo), ("Max (ns)", hi)):
            if int(v) != int(w[col[c]]):
                differ(f"{where}: {c} is {v} in SQL, {w[col[c]]} in steptrace")
        for c, exact, sql in (("Avg (ns)", int(total) / int(n), avg),
                              ("Time (%)", 100.0 * int(total) / grand, pct)):
            if "%.1f" % exact != w[col[c]]:
                differ(f"{where}: {c} from SQL's integers is {exact:.1f}, steptrace says {w[col[c]]}")
            if abs(float(sql) - float(w[col[c]])) > 0.1 + 1e-9:
                differ(f"{where}: {c} is {sql} in SQL, {w[col[c]]} in steptrace")
    print(f"{len(got)} rows")


if __name__ == "__main__":
    main()
