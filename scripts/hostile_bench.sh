#!/bin/sh
# hostile_bench.sh STEPTRACE ST_HOSTILE [MAX_S]: the worst bundles of issues
# 12 and 25 (tests/hostile/st-hostile writes them), each command on them at
# the default limits, as a Markdown table of file size against wall time,
# peak RSS and output size (README "Hostile bundles"). A command that uses
# more than MAX_S seconds of CPU (default 120; st-hostile run stops it a
# second later, or after 10 times MAX_S + 60 s of wall time) is shown as
# killed: give an older build to see what the fixes bought. Scratch files
# go to a temporary folder, removed at the end.
set -u -f
st=$1; h=$2; max_s=${3:-120}
dir=$(mktemp -d /tmp/st-hostile-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT

bytes() { wc -c < "$1" | tr -d ' '; }

# row LABEL FILE OUT ARGS...: runs `steptrace ARGS`; OUT is the file it writes ("-": its stdout).
row() {
	label=$1; file=$2; out=$3; shift 3
	rm -f "$dir/o" "$dir/out"
	ST_HOSTILE_VERBOSE=1 "$h" run 1000000000 "$max_s" "$st" "$@" > "$dir/out" 2> "$dir/err"
	rc=$?
	meas=$(sed -n 's/^st-hostile: [^:]*: \([0-9.]*\) s, \([0-9]*\) KiB$/\1 \2/p' "$dir/err" | tail -n 1)
	set -- $meas
	t=${1:-?}; kib=${2:-0}
	[ "$out" = - ] && out="$dir/out"
	ob=0; [ -f "$out" ] && ob=$(bytes "$out")
	fb=$(bytes "$file")
	what="exit $rc"
	[ $rc = 125 ] && what="killed past $max_s s"
	[ $rc = 1 ] && what="refused: $(grep -m1 '^error' "$dir/err" | sed "s|$dir/||g" | cut -c1-80)..."
	awk -v l="$label" -v fb="$fb" -v cmd="$cmd" -v t="$t" -v kib="$kib" -v ob="$ob" -v w="$what" 'BEGIN {
		printf "| %s | %.1f KB | `%s` | %s s | %.0f MiB (%.0f×) | %.1f MB (%.0f×) | %s |\n",
		       l, fb / 1000, cmd, t, kib / 1024, kib * 1024 / fb, ob / 1e6, ob / fb, w }'
}

gen() { "$h" "$@" > /dev/null || { echo "cannot generate $2" >&2; exit 1; }; }

echo "| bundle | size | command | wall | peak RSS (× size) | output (× size) | result |"
echo "|---|---:|---|---:|---:|---:|---|"
gen world "$dir/w.stb"
cmd="summary F"; row "F1: a run of 2^32-1 ranks (\`world F\`)" "$dir/w.stb" - summary "$dir/w.stb"
gen long-names "$dir/n.stb" 12 4194304 2000
cmd="export F -o T"; row "F2: 12 names of 4 MiB, 2,000 launches (\`long-names F 12 4194304 2000\`)" "$dir/n.stb" "$dir/o" export "$dir/n.stb" -o "$dir/o"
cmd="export --format chrome F -o T"; row "the same" "$dir/n.stb" "$dir/o" export --format chrome "$dir/n.stb" -o "$dir/o"
gen overlap "$dir/ov.stb" steps 250000
cmd="export F -o T"; row "F3: 250,000 overlapping steps (\`overlap F steps 250000\`)" "$dir/ov.stb" "$dir/o" export "$dir/ov.stb" -o "$dir/o"
gen steps "$dir/s.stb" 150000
cmd="memory F"; row "F4: 150,000 steps with an allocation each (\`steps F 150000\`)" "$dir/s.stb" - memory "$dir/s.stb"
gen steps "$dir/sl.stb" 150000 labelled
cmd="replay --capacity 24GiB F"; row "150,000 steps in ranges of their own (\`steps F 150000 labelled\`)" "$dir/sl.stb" - replay --capacity 24GiB "$dir/sl.stb"
gen graph "$dir/g.stb" 100000
cmd="ranges F"; row "100,000 stream captures, a graph of 100,000 ops (\`graph F 100000\`)" "$dir/g.stb" - ranges "$dir/g.stb"
gen nested "$dir/p.stb" 1024 1000
cmd="ranges F"; row "4,096 nested ranges of 1 KiB names (\`nested F 1024 1000\`)" "$dir/p.stb" - ranges "$dir/p.stb"
cmd="export --format sqlite F -o T"; row "the same" "$dir/p.stb" "$dir/o" export --format sqlite "$dir/p.stb" -o "$dir/o"
gen nested "$dir/q.stb" 1024 1 2500
cmd="report F -o T"; row "2,500 nested ranges of 1 KiB names (\`nested F 1024 1 2500\`)" "$dir/q.stb" "$dir/o" report "$dir/q.stb" -o "$dir/o"
cmd="export --format sqlite F -o T"; row "the same" "$dir/q.stb" "$dir/o" export --format sqlite "$dir/q.stb" -o "$dir/o"
cmd="export --format chrome F -o T"; row "the same" "$dir/q.stb" "$dir/o" export --format chrome "$dir/q.stb" -o "$dir/o"
gen flood "$dir/f.stb" 40
cmd="summary F"; row "8.4 million identical kernels (\`flood F 40\`)" "$dir/f.stb" - summary "$dir/f.stb"
gen mixed "$dir/m.stb" 100000
cmd="report F -o T"; row "100,000 launches, allocations and ranges (\`mixed F 100000\`)" "$dir/m.stb" "$dir/o" report "$dir/m.stb" -o "$dir/o"
cmd="export --format sqlite F -o T"; row "the same" "$dir/m.stb" "$dir/o" export --format sqlite "$dir/m.stb" -o "$dir/o"
gen utf8 "$dir/u.stb"
cmd="export --format chrome F -o T"; row "F5: names not UTF-8 (\`utf8 F\`)" "$dir/u.stb" "$dir/o" export --format chrome "$dir/u.stb" -o "$dir/o"
