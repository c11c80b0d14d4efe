#!/usr/bin/env python3
"""chrome_check.py TRACE.json [--flows N] [--time-base NS] [--ranks N]

Checks what Chrome DevTools' trace engine needs from `steptrace export
--format chrome` (its FlowsHandler): a flow's start ("s", at a launch call)
and end ("f", at the activity it launched) share category, name and id, and
each binds to the complete slice of that category at the same ts, pid and
tid; otherData.time_base_ns is a string (it exceeds 2^53, which JavaScript
numbers round); no displayTimeUnit. With --ranks (a trace of several
ranks): N ranks' processes, and every flow starts and ends in one rank's
processes, its id used by no other rank. Prints one line and exits 1 on the
first problem.
"""
import argparse
import json
import re
import sys


def fail(msg):
    print(f"chrome_check: {msg}")
    sys.exit(1)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("trace")
    ap.add_argument("--flows", type=int, help="expected number of launch flows")
    ap.add_argument("--time-base", help="expected otherData.time_base_ns")
    ap.add_argument("--ranks", type=int, help="expected number of ranks, each flow within one")
    a = ap.parse_args()

    with open(a.trace) as f:
        d = json.load(f)
    if "displayTimeUnit" in d:
        fail("displayTimeUnit is still written")
    base = d.get("otherData", {}).get("time_base_ns")
    if a.time_base is not None:
        if not isinstance(base, str):
            fail(f"otherData.time_base_ns is {type(base).__name__} {base!r}, not a string")
        if base != a.time_base:
            fail(f"otherData.time_base_ns is {base!r}, expected {a.time_base!r}")

    slices = {}
    for e in d["traceEvents"]:
        if e["ph"] == "X":
            slices.setdefault((e["cat"], e["ts"], e["pid"], e["tid"]), []).append(e)
    starts, ends = {}, {}
    for e in d["traceEvents"]:
        if e["ph"] not in ("s", "f"):
            continue
        key = (e["cat"], e["ts"], e["pid"], e["tid"])
        if key not in slices:
            fail(f"flow {e['ph']} id {e['id']} has no slice with cat {key[0]!r}, ts {key[1]}, "
                 f"pid {key[2]}, tid {key[3]}")
        group = starts if e["ph"] == "s" else ends
        if e["id"] in group:
            fail(f"two flow {e['ph']} events with id {e['id']}")
        group[e["id"]] = e
    if set(starts) != set(ends):
        fail(f"{len(set(starts) ^ set(ends))} flows have a start without an end or the reverse")
    for i, s in starts.items():
        f = ends[i]
        if (f["cat"], f["name"]) != (s["cat"], s["name"]):
            fail(f"flow {i} starts as {s['cat']}/{s['name']} but ends as {f['cat']}/{f['name']}")
        if f["ts"] < s["ts"]:
            fail(f"flow {i} ends before it starts")
        if f["pid"] == s["pid"]:
            fail(f"flow {i} does not go from a host thread to a GPU stream")
    if a.flows is not None and len(starts) != a.flows:
        fail(f"{len(starts)} flows, expected {a.flows}")
    if a.ranks is not None:
        check_ranks(d["traceEvents"], starts, ends, a.ranks)
        print(f"chrome_check: {len(starts)} flows bind to their slices, each within one of {a.ranks} ranks")
        return
    print(f"chrome_check: {len(starts)} flows bind to their slices")


def check_ranks(events, starts, ends, n):
    """Each process's rank from its name ("rank R host", "GPU n ... (rank R, pid P)")."""
    rank = {}
    for e in events:
        if e["ph"] == "M" and e["name"] == "process_name":
            m = re.search(r"\brank (\d+)\b", e["args"]["name"])
            if not m:
                fail(f"process {e['pid']} ({e['args']['name']!r}) names no rank")
            rank[e["pid"]] = int(m.group(1))
    if len(set(rank.values())) != n:
        fail(f"processes of ranks {sorted(set(rank.values()))}, expected {n} ranks")
    per_rank = {}
    for i, s in starts.items():
        f = ends[i]
        rs, rf = rank.get(s["pid"]), rank.get(f["pid"])
        if rs is None or rf is None:
            fail(f"flow {i} starts or ends in a process without a name")
        if rs != rf:
            fail(f"flow {i} starts in rank {rs} (pid {s['pid']}) and ends in rank {rf} (pid {f['pid']})")
        per_rank.setdefault(rs, 0)
        per_rank[rs] += 1
    if len(per_rank) != n:
        fail(f"flows in ranks {sorted(per_rank)} only, expected {n} ranks")


if __name__ == "__main__":
    main()
