#!/bin/sh
# real.sh STEPTRACE SOURCE_DIR: the real torch.profiler traces shipped in
# tests/import/real/ (scripts/gpt_train.py --profile on a GPU: eager,
# --compile, two ranks under torchrun), each imported and checked against
# the trace itself (read whole by Python's json: they are small): summary's
# total is the trace's kernel time, steps its ProfilerStep#N count,
# memory's peak its largest Total Allocated; explain runs, and the two
# ranks join in comm. Passes with a note when none are shipped.
set -u
st=$1; src=$2
real=$src/tests/import/real
dir=$(mktemp -d /tmp/st-import-real-XXXXXX)
trap 'rm -rf "$dir"' EXIT
failed=0
fail() { echo "import.real: $*" >&2; failed=1; }
n=0
for d in "$real"/*/; do
	[ -d "$d" ] || continue
	name=$(basename "$d")
	"$st" import -o "$dir/$name.stb" "$d" 2> "$dir/err" || { fail "$name: $(cat "$dir/err")"; continue; }
	for t in "$d"*.pt.trace.json*; do
		want=$(python3 - "$t" <<'PY'
import gzip, json, sys
p = sys.argv[1]
d = json.load(gzip.open(p, "rt") if p.endswith(".gz") else open(p))
ev = d["traceEvents"]
k = sum(round(e["dur"] * 1000) for e in ev if e.get("cat") == "kernel" and e.get("ph") == "X")
s = sum(1 for e in ev if e.get("ph") == "X" and e.get("cat") in ("user_annotation", "cpu_op")
        and str(e.get("name", "")).startswith("ProfilerStep#"))
m = max([e["args"].get("Total Allocated", 0) for e in ev if e.get("name") == "[memory]"
         and e.get("args", {}).get("Device Type") == 1] or [0])
print(d.get("distributedInfo", {}).get("rank", 0), d.get("distributedInfo", {}).get("world_size", 1), k, s, m)
PY
)
		set -- $want
		b=$dir/$name.stb
		[ "$2" -gt 1 ] && b=$dir/$name.rank$1.stb
		total=$("$st" summary --include-warmup --format csv "$b" 2> /dev/null | awk -F, 'NR > 1 { s += $2 } END { print s + 0 }')
		# Kineto writes ns as three decimals of us: the sum of rounded durations, within 1 ns a kernel
		[ "$total" = "$3" ] || fail "$name: summary total $total ns, the trace's kernels $3"
		steps=$("$st" steps --format csv --section steps "$b" 2> /dev/null | awk 'NR > 1' | wc -l)
		[ "$steps" = "$4" ] || fail "$name: $steps steps, the trace's ProfilerStep#N $4"
		if [ "$5" != 0 ]; then
			peak=$("$st" memory --format csv "$b" 2> /dev/null | awk -F, '$1 == "overall" { print $3 }')
			[ "$peak" = "$5" ] || fail "$name: memory peak $peak, the trace's largest Total Allocated $5"
		fi
		"$st" explain "$b" > /dev/null 2> "$dir/err" || fail "$name: explain: $(cat "$dir/err")"
		echo "import.real: $name rank $1: $total ns of kernels, $steps steps, peak $5"
		n=$((n + 1))
	done
	# against steptrace's recording of the same program (NAME.stb, or NAME.0.stb NAME.1.stb): the same kernels
	a=""; b=""
	if [ -f "$real/$name.stb" ]; then
		a="$real/$name.stb"; b="$dir/$name.stb"
	elif [ -f "$real/$name.0.stb" ]; then
		a="$real/$name.0.stb $real/$name.1.stb"; b="$dir/$name.rank0.stb $dir/$name.rank1.stb"
	fi
	if [ -n "$a" ]; then
		# shellcheck disable=SC2086
		"$st" diff --format csv --section steps $a $b > "$dir/diff" 2> "$dir/err" || fail "$name: diff: $(cat "$dir/err")"
		k=$(awk -F, '$1 == "kernels" { print $2, $3 }' "$dir/diff")
		set -- $k
		[ $# = 2 ] && [ "$1" = "$2" ] || fail "$name: diff against the recording: kernels per step '$k', want the same"
		echo "import.real: $name against its recording: $k kernels per step"
	fi
	if ls "$dir/$name".rank1.stb > /dev/null 2>&1; then
		"$st" comm "$dir/$name".rank*.stb > /dev/null 2> "$dir/err" || fail "$name: comm: $(cat "$dir/err")"
		[ -s "$dir/err" ] && fail "$name: comm warned: $(cat "$dir/err")"
	fi
done
[ $n = 0 ] && echo "import.real: no real traces shipped in tests/import/real"
exit $failed
