#!/bin/sh
# `steptrace memory` and `steptrace replay` on the hand-built bundles of
# test_memory.c (answers in its comments): the peaks, breakdown and largest
# blocks in JSON, the capacity replay exactly fitting and overshooting by one
# byte, the event listing and its filters, and the SVG parsed back as XML
# with its legend and peak label.
set -eu
gen=$1; st=$2
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "memory.cli: $*"; exit 1; }

"$gen" --write "$tmp/x.stb" || fail "cannot write the bundle"
"$gen" --write-train "$tmp/train.stb" || fail "cannot write the training bundle"
"$gen" --write-tags "$tmp/tags.stb" || fail "cannot write the bundle with tags"
"$gen" --write-edges "$tmp/edges.stb" || fail "cannot write the bundle of shared step boundaries"
"$gen" --write-sweep "$tmp/sweep.stb" || fail "cannot write the sweep"

# peaks, categories, largest blocks
"$st" memory "$tmp/x.stb" --top 3 --format json > "$tmp/m.json" || fail "memory --format json failed"
python3 - "$tmp/m.json" <<'PY' || fail "memory JSON is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
rows = {(r["Scope"], r["View"]): r for r in d["peaks"]}
def peak(scope, view="model"): return rows[(scope, view)]["Peak (bytes)"]
assert peak("overall") == 2100, rows
assert peak("phase forward") == 2000
assert peak("phase backward") == 2100
assert peak("phase optimizer") == 1950
assert peak("step 0") == 1950 and peak("step 1") == 2100
assert peak("overall", "driver") == 12288
assert rows[("phase optimizer", "model")]["Op"] == "step/optimizer/adamw"
assert rows[("overall", "model")]["Op"] == "step/backward/layer.0/ffn/w1"
cat = {r["Category"]: r["Bytes"] for r in d["at_peak"]}
assert cat == {"parameter": 1000, "gradient": 200, "optimizer": 400, "activation": 500}, cat
big = [(r["Bytes"], r["Category"]) for r in d["largest_at_peak"]]
assert big == [(1000, "parameter"), (500, "activation"), (400, "optimizer")], big
assert [r["Address"] for r in d["never_freed"]] == ["0x1000", "0x6000"]
assert [r["Address"] for r in d["unknown_frees"]] == ["0x9999"]
assert [r["Address"] for r in d["never_freed_driver"]] == ["0xe000"]
notes = " ".join(d["notes"])
assert "never freed" in notes and "not live" in notes, notes
PY

# the default text table names the same peak
"$st" memory "$tmp/x.stb" > "$tmp/m.txt" || fail "memory failed"
grep -q "overall *model *2,\{0,1\}100" "$tmp/m.txt" || { cat "$tmp/m.txt"; fail "text peak row missing"; }

# capacity: exactly the peak fits with no headroom; one byte less fails at g3 by 1 byte
"$st" replay --capacity 2100 "$tmp/x.stb" --format json > "$tmp/c.json" || fail "capacity 2100 failed"
"$st" replay --capacity 2099 "$tmp/x.stb" --format json > "$tmp/d.json" || fail "capacity 2099 failed"
"$st" replay --capacity 2099 "$tmp/x.stb" > "$tmp/d.txt" || fail "capacity text failed"
python3 - "$tmp/c.json" "$tmp/d.json" <<'PY' || fail "capacity JSON is wrong"
import json, sys
c = {r["What"]: r for r in json.load(open(sys.argv[1]))["capacity"]}
assert c["result"]["Value"] == "fits", c
assert c["headroom at the peak"]["Bytes"] == 0 and c["peak"]["Bytes"] == 2100
d = json.load(open(sys.argv[2]))
f = {r["What"]: r for r in d["capacity"]}
assert f["result"]["Value"] == "out of memory", f
assert f["request"]["Bytes"] == 200 and f["overshoot"]["Bytes"] == 1
assert f["live before it"]["Bytes"] == 1900
assert f["category"]["Value"] == "gradient" and f["phase"]["Value"] == "backward"
assert f["op"]["Value"] == "step/backward/layer.0/ffn/w1" and f["step"]["Value"] == "1"
live = {r["Category"]: r["Bytes"] for r in d["live_at_failure"]}
assert live == {"parameter": 1000, "optimizer": 400, "activation": 500}, live
assert any("fragmentation" in n for n in d["notes"])
PY
grep -q "fragmentation" "$tmp/d.txt" || fail "capacity text does not say it ignores fragmentation"
# a sweep's steps by label (A B A C B): one row a label, in the order first seen, C's recorded OOM
"$st" replay --capacity 6000 "$tmp/sweep.stb" --format json > "$tmp/sweep.json" 2> /dev/null ||
	fail "capacity on the sweep"
python3 - "$tmp/sweep.json" <<'PY' || fail "capacity by label is wrong"
import json, sys
rows = json.load(open(sys.argv[1]))["capacity_by_range"]
got = [(r["Range"], r["Steps"], round(r["Peak (MiB)"] * 2**20), round(r["Needs (MiB)"] * 2**20), r["Recorded"],
        r["Fits"]) for r in rows]
assert got == [("A", 2, 3000, 3000, "ok", "yes"), ("B", 2, 5000, 5000, "ok", "yes"),
               ("C", 1, 4000, 6500, "OOM", "no")], got
PY

# the listing: every event once, in time order, filters; allocations and frees
# of one view (the model's 17; the driver's 3 with --view driver)
"$st" replay "$tmp/x.stb" > "$tmp/all.txt" || fail "replay failed"
n=$(grep -c -v '^#' "$tmp/all.txt")
[ "$n" -eq 19 ] || { cat "$tmp/all.txt"; fail "replay listed $n events, want 19 (17 memory + 2 steps)"; }
n=$("$st" replay --view driver "$tmp/x.stb" | grep -c -v '^#')
[ "$n" -eq 5 ] || fail "replay --view driver listed $n events, want 5 (3 memory + 2 steps)"
awk '!/^#/ { if ($1 + 0 < prev) { print "out of order: " $0; exit 1 } prev = $1 + 0 }' "$tmp/all.txt" ||
  fail "replay is not in time order"
n=$("$st" replay --kind alloc "$tmp/x.stb" | grep -c ' alloc ')
[ "$n" -eq 9 ] || fail "--kind alloc gave $n, want 9"
n=$("$st" replay --kind free --from 0.0005 --to 0.0009 "$tmp/x.stb" | grep -c -v '^#')
[ "$n" -eq 4 ] || fail "--kind free --from 0.0005 --to 0.0009 gave $n, want 4"
grep -q "unknown address" "$tmp/all.txt" || fail "the unknown free is not flagged"
# the same listing in csv, json and md: one row per event, live memory in bytes
for f in csv json md; do
  "$st" replay "$tmp/x.stb" --format $f > "$tmp/all.$f" || fail "replay --format $f failed"
done
[ "$(head -n 1 "$tmp/all.csv")" = "Time (ms),Kind,Duration (ms),Where,Live (bytes),Range,Name" ] ||
  fail "replay --format csv header: $(head -n 1 "$tmp/all.csv")"
[ "$(($(wc -l < "$tmp/all.csv") - 1))" -eq 19 ] || fail "replay --format csv rows: $(wc -l < "$tmp/all.csv")"
[ "$(grep -c '^| [0-9]' "$tmp/all.md")" -eq 19 ] || fail "replay --format md rows"
python3 - "$tmp/all.json" <<'PY' || fail "replay --format json is wrong"
import json, sys
ev = json.load(open(sys.argv[1]))["events"]
assert len(ev) == 19, len(ev)
times = [e["Time (ms)"] for e in ev]
assert times == sorted(times), times
assert max(e["Live (bytes)"] for e in ev) == 2100
assert sum(e["Kind"] == "alloc" for e in ev) == 9
assert any("unknown address" in e["Name"] for e in ev)
PY
"$st" replay "$tmp/x.stb" --kind alloc --format csv | grep -c ',alloc,' | grep -qx 9 || fail "--kind with --format csv"

# blocks both views recorded (edges.stb): each listed once, in the view asked for
"$st" replay "$tmp/edges.stb" --kind alloc > "$tmp/e.txt" || fail "replay edges"
[ "$(grep -c ' alloc ' "$tmp/e.txt")" -eq 3 ] || { cat "$tmp/e.txt"; fail "replay --kind alloc: each block once, 3"; }
grep -q ' driver' "$tmp/e.txt" && fail "the model view lists the driver's records"
"$st" replay "$tmp/edges.stb" --kind alloc --view driver > "$tmp/e.txt" || fail "replay edges --view driver"
[ "$(grep -c ' alloc .* driver' "$tmp/e.txt")" -eq 3 ] || { cat "$tmp/e.txt"; fail "replay --view driver: 3 driver blocks"; }
# the text header stands over its columns: "live (MiB)" ends where the live values end
awk '/^#  *time/ { h = index($0, "live (MiB)") + length("live (MiB)") - 1 }
     !/^#/ { split($0, f, " "); v = index($0, " " f[6] " ") + length(f[6]); if (v != h) { print "header " h ", value " v ": " $0; exit 1 } }' \
	"$tmp/e.txt" || fail "the header does not line up with the live column"
# --kind oom on a run that never ran out of memory: the header, then a line that says so
"$st" replay "$tmp/edges.stb" --kind oom > "$tmp/e.txt" || fail "replay --kind oom"
[ "$(tail -n 1 "$tmp/e.txt")" = "# no events listed: the run never ran out of memory (the bundle has no oom event)" ] ||
	fail "replay --kind oom without one: $(cat "$tmp/e.txt")"
"$st" replay "$tmp/edges.stb" --kind oom --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["events"] == [] and d["notes"] == ["no events listed: the run never ran out of memory (the bundle has no oom event)"], d
' || fail "replay --kind oom --format json without one"
# steps that share a boundary: the shared instant is the later step's
"$st" memory "$tmp/edges.stb" --format json > "$tmp/e.json" || fail "memory edges"
"$st" memory "$tmp/edges.stb" --step 0 --format json > "$tmp/e0.json" || fail "memory edges --step 0"
python3 - "$tmp/e.json" "$tmp/e0.json" <<'PY' || fail "memory at shared step boundaries"
import json, sys
rows = {(r["Scope"], r["View"]): r for r in json.load(open(sys.argv[1]))["peaks"]}
def row(scope): return rows[(scope, "model")]
assert (row("step 0")["Peak (bytes)"], row("step 0")["In step (ms)"]) == (1500, 0.101), row("step 0")
# allocated at the instant step 0 ends and step 1 begins: 0 ms into step 1, not 0.9 ms into step 0
assert (row("step 1")["Peak (bytes)"], row("step 1")["In step (ms)"]) == (1800, 0.0), row("step 1")
# carried into step 2, which allocates nothing: its start, 0 ms into it
assert (row("step 2")["Peak (bytes)"], row("step 2")["In step (ms)"]) == (1000, 0.0), row("step 2")
one = {(r["Scope"], r["View"]): r for r in json.load(open(sys.argv[2]))["peaks"]}
# step 0 alone leaves out step 1's allocation at their shared instant
assert one[("step 0", "model")]["Peak (bytes)"] == 1500, one
PY
# live MiB after g3 (2100 B) prints 0.0; the training bundle has real sizes
"$st" replay --kind range --range forward "$tmp/train.stb" > "$tmp/r.txt" || fail "replay --range failed"
n=$(grep -v '^#' "$tmp/r.txt" | grep -c ' range ')
[ "$n" -eq 34 ] || { cat "$tmp/r.txt"; fail "--range forward kept $n ranges, want 34 (2 x (forward + 8 layers + 8 ffn))"; }
"$st" replay --kind bogus "$tmp/x.stb" 2> "$tmp/e.txt" && fail "--kind bogus succeeded"
grep -q "option '--kind' expects .*, not 'bogus'" "$tmp/e.txt" || fail "no message for a bad kind"

# the chart parses as XML and carries its legend and peak label
for b in x train; do
  "$st" memory "$tmp/$b.stb" --svg "$tmp/$b.svg" > /dev/null || fail "memory --svg failed ($b)"
  python3 - "$tmp/$b.svg" "$b" <<'PY' || fail "the $b SVG is wrong"
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
assert root.tag == ns + "svg", root.tag
texts = ["".join(t.itertext()) for t in root.iter(ns + "text")]
legend = [g for g in root.iter(ns + "g") if g.get("class") == "legend"]
assert legend, "no legend"
ltext = " ".join("".join(t.itertext()) for t in legend[0].iter(ns + "text"))
peak = [t for t in root.iter(ns + "text") if t.get("class") == "peak-label"]
assert len(peak) == 1, "no peak label"
label = "".join(peak[0].itertext())
if sys.argv[2] == "x":
    for c in ("parameter", "gradient", "optimizer", "activation", "temporary"):
        assert c in ltext, (c, ltext)
    assert label.startswith("peak 2.05 KiB"), label
else:
    assert label.startswith("peak 2.91 GiB"), label
    assert any(t == "backward" for t in texts), "no backward phase label"
    assert "time (ms since the bundle's first event)" in texts, texts
areas = [p for p in root.iter(ns + "path") if (p.get("class") or "").startswith("area-")]
assert len(areas) >= 5, len(areas)
PY
done
"$st" memory "$tmp/train.stb" --svg "$tmp/s1.svg" --step 1 > /dev/null || fail "--svg --step 1 failed"
# one time origin: the chart's peak label says the time the text reports say;
# --step applies to the text report and the chart alike, subtitled with that step's counts
"$st" memory "$tmp/train.stb" --format json > "$tmp/t.json" || fail "memory train json"
"$st" memory "$tmp/train.stb" --step 1 --format json > "$tmp/t1.json" || fail "memory --step 1 json"
"$st" replay "$tmp/train.stb" --kind alloc --format json > "$tmp/allocs.json" || fail "replay allocs"
"$st" replay "$tmp/train.stb" --kind step --format json > "$tmp/steps.json" || fail "replay steps"
python3 - "$tmp" <<'PY' || fail "--step or the time origin is wrong"
import json, re, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
ns = "{http://www.w3.org/2000/svg}"
def svg_texts(f):
    root = ET.parse(f"{d}/{f}").getroot()
    return {t.get("class"): "".join(t.itertext()) for t in root.iter(ns + "text")}, \
        ["".join(t.itertext()) for t in root.iter(ns + "text")]
whole = json.load(open(f"{d}/t.json"))
one = json.load(open(f"{d}/t1.json"))
overall = whole["peaks"][0]
assert overall["Scope"] == "overall"
label = svg_texts("train.svg")[0]["peak-label"]
assert f"at {overall['Time (ms)']:.3f} ms" in label, (label, overall)
# --step 1: the first row is the step's own peak, no other step is listed
rows = one["peaks"]
assert rows[0]["Scope"] == "step 1", rows[0]
assert not any(r["Scope"].startswith("step 0") for r in rows), rows
assert "step 1" in " ".join(one["notes"])
label1 = svg_texts("s1.svg")[0]["peak-label"]
assert f"at {rows[0]['Time (ms)']:.3f} ms" in label1, (label1, rows[0])
# the subtitle counts the model allocator's allocations of step 1, not the bundle's
step1 = [e for e in json.load(open(f"{d}/steps.json"))["events"] if e["Name"] == "step 1"][0]
t0, t1 = step1["Time (ms)"], step1["Time (ms)"] + step1["Duration (ms)"]
allocs = [a for a in json.load(open(f"{d}/allocs.json"))["events"] if " driver" not in a["Name"]]
in_step = sum(1 for a in allocs if t0 <= a["Time (ms)"] <= t1 + 1e-9)
sub = [t for t in svg_texts("s1.svg")[1] if "allocations over" in t][0]
assert f"step 1: peak 2.91 GiB; {in_step} allocations over" in sub, (sub, in_step)
sub_all = [t for t in svg_texts("train.svg")[1] if "allocations over" in t][0]
assert f"; {len(allocs)} allocations over" in sub_all and in_step < len(allocs), (sub_all, len(allocs))
PY
"$st" memory "$tmp/train.stb" --svg "$tmp/s9.svg" --step 9 2> "$tmp/e.txt" && fail "--step 9 succeeded"
grep -q "no step 9" "$tmp/e.txt" || fail "no message for a missing step"
# driver blocks with the program's tags (tag_scenario in test_memory.c): the
# driver view by default, its categories at the peak tagged and inferred,
# the phases zero_grad and data, tags listed as their own kind
"$st" memory "$tmp/tags.stb" --top 3 --format json > "$tmp/tags.json" || fail "memory on tags failed"
python3 - "$tmp/tags.json" <<'PY' || fail "memory JSON of the tagged bundle is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
rows = {r["Scope"]: r for r in d["peaks"]}
assert all(r["View"] == "driver" for r in d["peaks"]), d["peaks"]
assert rows["overall"]["Peak (bytes)"] == 4830, rows
assert rows["phase zero_grad"]["Peak (bytes)"] == 2380 and rows["phase data"]["Peak (bytes)"] == 2480, rows
assert rows["phase forward"]["Peak (bytes)"] == 4710
scopes = [r["Scope"] for r in d["peaks"]]
assert scopes[:7] == ["overall", "phase forward", "phase backward", "phase optimizer", "phase zero_grad",
                      "phase data", "phase other"], scopes
cat = {r["Category"]: r["Bytes"] for r in d["at_peak"]}
assert cat == {"parameter": 1000, "gradient": 400, "optimizer": 800, "input": 100, "activation": 2300,
               "temporary": 166, "unknown": 64}, cat
big = [(r["Bytes"], r["Category"], r["Phase"]) for r in d["largest_at_peak"]]
assert big == [(2000, "activation", "forward"), (1000, "parameter", "other"), (800, "optimizer", "optimizer")], big
notes = " ".join(d["notes"])
assert "8 tag(s) of the program named the category of 5 block(s); 5 named no live block" in notes, notes
PY
"$st" replay "$tmp/tags.stb" --kind tag > "$tmp/tags.txt" || fail "replay --kind tag failed"
[ "$(grep -c ' tag ' "$tmp/tags.txt")" -eq 13 ] || { cat "$tmp/tags.txt"; fail "replay --kind tag: want 13 tags"; }
[ "$(grep -c 'ignored' "$tmp/tags.txt")" -eq 5 ] || fail "replay --kind tag: want 5 ignored"
grep -q ' tag .* 100 B parameter 0x5100 (names no live block: ignored)' "$tmp/tags.txt" ||
  fail "the tag inside a larger block is not flagged"
"$st" replay "$tmp/tags.stb" --kind alloc --format csv > "$tmp/allocs.csv" || fail "replay --kind alloc csv"
grep -q ',alloc,.*+1.95 KiB activation 0x5000 driver' "$tmp/allocs.csv" ||
  fail "the listing does not name an inferred category"
"$st" replay "$tmp/tags.stb" --kind tag --format json | python3 -c '
import json, sys
ev = json.load(sys.stdin)["events"]
assert len(ev) == 13 and all(e["Kind"] == "tag" for e in ev), ev
' || fail "replay --kind tag --format json"
"$st" replay --capacity 4829 --view driver "$tmp/tags.stb" --format json > "$tmp/tc.json" || fail "capacity on tags"
python3 - "$tmp/tc.json" <<'PY' || fail "capacity on the tagged bundle is wrong"
import json, sys
d = json.load(open(sys.argv[1]))
f = {r["What"]: r for r in d["capacity"]}
assert f["category"]["Value"] == "temporary" and f["overshoot"]["Bytes"] == 1, f
live = {r["Category"]: r["Bytes"] for r in d["live_at_failure"]}
assert live["activation"] == 2300 and live["optimizer"] == 800 and live["temporary"] == 16, live
PY
"$st" memory "$tmp/tags.stb" --svg "$tmp/tags.svg" > /dev/null || fail "memory --svg on tags"
python3 - "$tmp/tags.svg" <<'PY' || fail "the SVG of the tagged bundle is wrong"
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
legend = [g for g in root.iter(ns + "g") if g.get("class") == "legend"][0]
ltext = " ".join("".join(t.itertext()) for t in legend.iter(ns + "text"))
for c in ("parameter", "gradient", "optimizer", "activation", "temporary", "input", "zero_grad phase", "data phase"):
    assert c in ltext, (c, ltext)
PY
# the exports carry the categories: SQLite's allocations, the driver view's counters by category
"$st" export "$tmp/tags.stb" --format sqlite -o "$tmp/tags.sqlite" 2>/dev/null || fail "export sqlite of tags"
"$st" export "$tmp/tags.stb" --format chrome -o "$tmp/tags.json" 2>/dev/null || fail "export chrome of tags"
python3 - "$tmp/tags.sqlite" "$tmp/tags.json" <<'PY' || fail "the exports of the tagged bundle are wrong"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = dict(db.execute("select category, sum(bytes) from ALLOCATIONS group by category").fetchall())
assert rows == {"activation": 4600, "gradient": 400, "input": 200, "optimizer": 800, "parameter": 1000,
                "temporary": 444, "unknown": 64}, rows
assert db.execute("select count(*) from ALLOCATIONS where phase = 'zero_grad'").fetchone()[0] == 1
d = json.load(open(sys.argv[2]))
ev = d["traceEvents"] if isinstance(d, dict) else d
counters = [e for e in ev if e.get("ph") == "C" and "cudaMalloc" in e["name"]]
peak = max(counters, key=lambda e: sum(e["args"].values()))
assert peak["args"] == {"unknown": 64, "parameter": 1000, "gradient": 400, "optimizer": 800, "activation": 2300,
                        "temporary": 166, "input": 100}, peak
PY

echo "memory.cli: ok"
