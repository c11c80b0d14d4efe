#!/bin/sh
# scripts/read_bundle.py, the format read from the outside (docs/FORMAT.md),
# recomputes the kernel summary of every sample, with and without warm-up,
# and of bundles that exercise what the samples do not: edge_bundle.py's,
# written from the documented format alone, where each membership and
# encoding rule decides whether some kernel counts (and steptrace must list
# exactly the kernels it was built for), and st-gen's (no steps, several
# chunks, cut files). Each must match `steptrace summary --format csv`
# number by number. And format 1.5's memory tags and steps_from, from
# tag_bundle.py's bundle.
#   read_bundle.sh STEPTRACE ST_GEN SOURCE_DIR
set -u
st=$1; gen=$2; src=$3
. "$src/tests/lib/check.sh"

# CI's python3 is Debian's; elsewhere python3 may be another one without them.
py=
for cand in python3 /usr/bin/python3; do
	if "$cand" -c 'import google.protobuf, zstandard' 2>/dev/null; then
		py=$cand
		break
	fi
done
if [ -z "$py" ]; then
	echo "skip: neither python3 nor /usr/bin/python3 imports google.protobuf and zstandard" \
	     "(Debian: python3-protobuf python3-zstandard)"
	exit 77
fi
command -v protoc > /dev/null || { echo "skip: no protoc (Debian: protobuf-compiler)"; exit 77; }

bundles=0; rows=0; numbers=0; names=
compare() { # NAME FILE [SUMMARY OPTION]; $names: the kernels steptrace must list
	name=$1; f=$2; shift 2
	if ! "$py" "$src/scripts/read_bundle.py" summary "$@" "$f" > "$tmp/py.csv" 2> "$tmp/py.err"; then
		fail "$name: read_bundle.py failed: $(cat "$tmp/py.err")"
		return
	fi
	if ! "$st" summary "$@" "$f" --format csv > "$tmp/st.csv" 2> "$tmp/st.err"; then
		fail "$name: steptrace summary failed: $(cat "$tmp/st.err")"
		return
	fi
	if grep -q 'is truncated' "$tmp/st.err" && ! grep -q 'is truncated' "$tmp/py.err"; then
		fail "$name: steptrace warns that the bundle is truncated, read_bundle.py does not"
	elif grep -q 'is truncated' "$tmp/py.err" && ! grep -q 'is truncated' "$tmp/st.err"; then
		fail "$name: read_bundle.py warns that the bundle is truncated, steptrace does not"
	fi
	counts=$("$py" "$src/tests/format/compare_summary.py" "$name" "$tmp/py.csv" "$tmp/st.csv" "$tmp/st.err" $names) || {
		fail "$name: read_bundle.py's summary differs from steptrace's (line above)"
		return
	}
	bundles=$((bundles + 1))
	rows=$((rows + ${counts% *}))
	numbers=$((numbers + ${counts#* }))
}

for f in "$src"/samples/*.stb; do
	[ -e "$f" ] || { fail "no bundles in $src/samples"; break; }
	name=$(basename "$f")
	compare "$name" "$f"
	compare "$name --include-warmup" "$f" --include-warmup
done
# Half a sample: its only chunk is cut, so no GPU work on either side.
f=$src/samples/small-bf16-train.stb
head -c $(($(wc -c < "$f") / 2)) "$f" > "$tmp/half.stb"
compare "half of $(basename "$f")" "$tmp/half.stb"

if "$py" "$src/tests/format/edge_bundle.py" "$tmp/edge.stb" "$tmp/edge.names"; then
	names=$tmp/edge.names
	compare "edge_bundle.py's bundle" "$tmp/edge.stb"
	names=
	compare "edge_bundle.py's bundle --include-warmup" "$tmp/edge.stb" --include-warmup
else
	fail "edge_bundle.py could not write its bundle"
fi

# Format 1.5: tag_bundle.py's MemTag events and footer steps_from, written
# from the documented format alone; read_bundle.py decodes them, steptrace
# lists the same tags and makes of them what section 6.5 says.
if "$py" "$src/tests/format/tag_bundle.py" "$tmp/tags.stb" "$tmp/tags.want"; then
	"$st" replay "$tmp/tags.stb" --kind tag --format json > "$tmp/st.tags" 2>&1 || fail "steptrace replay --kind tag"
	"$st" replay "$tmp/tags.stb" --kind alloc --view driver --format json > "$tmp/st.allocs" 2>&1 ||
		fail "steptrace replay --kind alloc"
	"$st" memory "$tmp/tags.stb" --format json > "$tmp/st.mem" 2>&1 || fail "steptrace memory"
	"$py" - "$src/scripts" "$tmp" <<'PY' || fail "tag_bundle.py's bundle: read_bundle.py and steptrace disagree"
import json, sys
sys.path.insert(0, sys.argv[1])
import read_bundle
d = sys.argv[2]
want = json.load(open(d + "/tags.want"))
b = read_bundle.Bundle(d + "/tags.stb")
events = list(b.events())
tags = [{"start": e["start"], **{k: e["mem_tag"][k] for k in ("address", "size", "category", "device")}}
        for e in events if e["kind"] == "mem_tag"]
assert tags == want["tags"], (tags, want["tags"])
assert b.footer["steps_from"] == want["steps_from"], b.footer
assert b.header["format_minor"] == 5
t0 = min(e["start"] for e in events if e["kind"] != "op")
listed = json.load(open(d + "/st.tags"))["events"]
assert [round(e["Time (ms)"] * 1e6) for e in listed] == [t["start"] - t0 for t in tags], listed
for e, t in zip(listed, tags):
    assert e["Kind"] == "tag" and e["Where"] == "device %d" % t["device"], e
    assert e["Name"].startswith("%d B %s 0x%x" % (t["size"], t["category"], t["address"])), e
    assert ("ignored" in e["Name"]) == (t["start"] in want["ignored"]), e
allocs = json.load(open(d + "/st.allocs"))["events"]
cats = {a["Name"].split()[3]: a["Name"].split()[2] for a in allocs}
assert cats == want["blocks"], cats
mem = json.load(open(d + "/st.mem"))
assert mem["peaks"][0]["Peak (bytes)"] == want["peak"], mem["peaks"][0]
assert {r["Category"]: r["Bytes"] for r in mem["at_peak"]} == want["at_peak"], mem["at_peak"]
PY
else
	fail "tag_bundle.py could not write its bundle"
fi

for layout in basic nosteps truncated; do
	"$gen" "$layout" -o "$tmp/$layout.stb" || { fail "st-gen $layout"; continue; }
	compare "st-gen $layout" "$tmp/$layout.stb"
	compare "st-gen $layout --include-warmup" "$tmp/$layout.stb" --include-warmup
done
if "$gen" bench --events 80000 -o "$tmp/bench.stb"; then
	chunks=$(bsdtar -tf "$tmp/bench.stb" | grep -c '^events-')
	[ "$chunks" -ge 2 ] || fail "st-gen bench wrote $chunks chunk(s); this test wants several"
	compare "st-gen bench ($chunks chunks)" "$tmp/bench.stb"
	head -c $(($(wc -c < "$tmp/bench.stb") * 3 / 4)) "$tmp/bench.stb" > "$tmp/cut.stb"
	compare "st-gen bench, first 3/4 of the file" "$tmp/cut.stb"
else
	fail "st-gen bench"
fi

echo "read_bundle.py matched steptrace on $bundles summaries: $rows rows, $numbers numbers"
check_done format.read_bundle
