#!/bin/sh
# scripts/read_bundle.py, the format read from the outside (docs/FORMAT.md),
# recomputes the kernel summary of every sample, with and without warm-up,
# and of bundles that exercise what the samples do not: edge_bundle.py's,
# written from the documented format alone, where each membership and
# encoding rule decides whether some kernel counts (and steptrace must list
# exactly the kernels it was built for), and st-gen's (no steps, several
# chunks, cut files). Each must match `steptrace summary --format csv`
# number by number.
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
	counts=$("$py" "$src/tests/format/compare_summary.py" "$name" "$tmp/py.csv" "$tmp/st.csv" $names) || {
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
