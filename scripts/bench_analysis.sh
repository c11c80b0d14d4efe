#!/bin/sh
# bench_analysis.sh [BUILD_DIR] [KERNELS]: the analysis benchmark. Writes a
# synthetic bundle of KERNELS kernels (default 1,000,000) under a
# transformer-like NVTX tree (each kernel comes with its launch call and
# about 1.2 ranges), then times `summary` and `ranges` on it: wall time, peak
# RSS (/usr/bin/time -v), bytes on disk and bytes per event. Run it on an
# idle machine; `taskset -c 0,1` is applied when available (2 cores).
set -eu
build=${1:-build}
kernels=${2:-1000000}
st=$build/steptrace
gen=$build/tests/gen/st-gen
[ -x "$st" ] && [ -x "$gen" ] || { echo "error: build steptrace and st-gen in '$build' first" >&2; exit 1; }
dir=$(mktemp -d /tmp/st-bench-XXXXXX)
trap 'rm -rf "$dir"' EXIT
pin=""
command -v taskset >/dev/null && pin="taskset -c 0,1"

$gen bench --events "$kernels" -o "$dir/bench.stb"
bytes=$(stat -c %s "$dir/bench.stb")
events=$($st info "$dir/bench.stb" --format csv --section footer | sed -n 's/^events,//p')
echo "bundle: $kernels kernels, $events events, $bytes bytes on disk, $(awk "BEGIN{printf \"%.2f\", $bytes/$events}") bytes/event"

run() {
	name=$1
	shift
	best=""
	for i in 1 2 3; do
		/usr/bin/time -v -o "$dir/time" $pin "$st" "$@" >/dev/null
		wall=$(sed -n 's/.*Elapsed (wall clock) time (h:mm:ss or m:ss): //p' "$dir/time" | awk -F: '{print $(NF-1)*60 + $NF}')
		rss=$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$dir/time")
		if [ -z "$best" ] || awk "BEGIN{exit !($wall < $best)}"; then best=$wall; best_rss=$rss; fi
	done
	echo "$name: best of 3 wall ${best} s, peak RSS $((best_rss / 1024)) MiB"
}
run "summary" summary "$dir/bench.stb"
run "summary --range forward --by category" summary "$dir/bench.stb" --range forward --by category
run "ranges" ranges "$dir/bench.stb"
