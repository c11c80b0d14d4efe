#!/bin/sh
# import.sh STEPTRACE SOURCE_DIR: `steptrace import` on synthetic
# torch.profiler traces (scripts/kineto_trace.py, Kineto's layout), checked
# against what the generator says each holds: summary's total kernel time
# is the trace's kernel time, steps the ProfilerStep#N count, memory's peak
# the largest "Total Allocated"; two ranks join in comm; every analysis
# runs; outputs are named as the recorder names ranks; a file steptrace did
# not write is not replaced without --force.
set -u
st=$1; src=$2
dir=$(mktemp -d /tmp/st-import-XXXXXX)
trap 'rm -rf "$dir"' EXIT
failed=0
fail() { echo "import: $*" >&2; failed=1; }
field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

gen=$(python3 "$src/scripts/kineto_trace.py" --steps 3 --layers 2 "$dir/one") || exit 1
gen2=$(python3 "$src/scripts/kineto_trace.py" --steps 3 --layers 2 --ranks 2 --gzip --meta-last "$dir/two") || exit 1
python3 "$src/scripts/kineto_trace.py" --steps 2 --layers 1 --no-memory "$dir/nomem" > /dev/null || exit 1

# one rank: a folder of one trace, -o
"$st" import -o "$dir/one.stb" "$dir/one" 2> "$dir/err" || { fail "import one: $(cat "$dir/err")"; exit 1; }
total=$("$st" summary --format csv "$dir/one.stb" | awk -F, 'NR > 1 { s += $2 } END { print s }')
[ "$total" = "$(field "$gen" kernel_ns)" ] || fail "summary total $total ns, the trace's kernels $(field "$gen" kernel_ns)"
steps=$("$st" steps --format csv --section steps "$dir/one.stb" 2> /dev/null | awk 'NR > 1' | wc -l)
[ "$steps" = "$(field "$gen" steps)" ] || fail "steps: $steps, the trace's ProfilerStep#N: $(field "$gen" steps)"
peak=$("$st" memory --format csv "$dir/one.stb" 2> "$dir/memerr" | awk -F, '$1 == "overall" { print $3 }')
[ "$peak" = "$(field "$gen" max_total_allocated)" ] || fail "memory peak $peak, Total Allocated at most $(field "$gen" max_total_allocated)"
"$st" info "$dir/one.stb" > "$dir/info" || fail "info"
grep -q "imported from *torch.profiler: gpuhost_4000" "$dir/info" || fail "info: no 'imported from'"
grep -q "format *1.12" "$dir/info" || fail "info: not format 1.12"
"$st" ranges --format csv "$dir/one.stb" | grep -q ',step/forward/aten::linear/aten::addmm,' || fail "ranges: no step/forward/aten::linear/aten::addmm"
"$st" ranges --format csv "$dir/one.stb" | grep -q ',step/backward/autograd::engine' || fail "ranges: the autograd thread's work is not under step/backward"
"$st" flops --format csv "$dir/one.stb" 2> /dev/null | grep -q 'forward/aten::addmm' || fail "flops: no forward/aten::addmm"

grep -q "overlap" "$dir/memerr" && fail "memory: $(grep overlap "$dir/memerr")"

# the events in reverse order (Kineto writes each thread's in turn): the same peak
python3 -c "
import json, sys
d = json.load(open(sys.argv[1])); d['traceEvents'].reverse(); json.dump(d, open(sys.argv[2], 'w'))
" "$(ls "$dir"/one/*.json)" "$dir/reversed.json"
"$st" import -o "$dir/reversed.stb" "$dir/reversed.json" 2> /dev/null || fail "import reversed"
peak2=$("$st" memory --format csv "$dir/reversed.stb" 2> /dev/null | awk -F, '$1 == "overall" { print $3 }')
[ "$peak2" = "$peak" ] || fail "memory peak $peak2 with the events reversed, $peak in order"

# two ranks (gzip'd, distributedInfo after traceEvents): RUN.rankN.stb, one run in comm
"$st" import -o "$dir/run.stb" "$dir/two" 2> "$dir/err" || fail "import two: $(cat "$dir/err")"
[ -f "$dir/run.rank0.stb" ] && [ -f "$dir/run.rank1.stb" ] || fail "two ranks: no run.rank0.stb and run.rank1.stb"
"$st" comm "$dir/run.rank0.stb" "$dir/run.rank1.stb" > "$dir/comm" 2> "$dir/err" || fail "comm: $(cat "$dir/err")"
[ -s "$dir/err" ] && fail "comm warned: $(cat "$dir/err")"
grep -q "allreduce/record_param_comms *2 *28,311,552" "$dir/comm" || fail "comm: no all-reduce of 28,311,552 bytes, 2 a step"
grep -q "straggler: rank 1" "$dir/comm" || fail "comm: the ranks are not on one time line"

# every analysis on imported bundles, against a recording too
for c in "explain $dir/one.stb" "explain $dir/run.rank0.stb $dir/run.rank1.stb" "summary --by op $dir/one.stb" \
	 "summary --by category $dir/run.rank0.stb $dir/run.rank1.stb" "diff $dir/one.stb $src/samples/pytorch-auto.stb" \
	 "diff $dir/run.rank0.stb $dir/run.rank1.stb $dir/one.stb" "replay $dir/one.stb" "memory $dir/nomem.stb" \
	 "export -o $dir/x.pftrace $dir/one.stb" "export --format chrome -o $dir/x.json $dir/run.rank0.stb $dir/run.rank1.stb" \
	 "export --format sqlite -o $dir/x.sqlite $dir/one.stb" "report -o $dir/x.html $dir/run.rank0.stb $dir/run.rank1.stb" \
	 "steps $dir/nomem.stb"; do
	case $c in "memory $dir/nomem.stb"|"steps $dir/nomem.stb") "$st" import "$dir/nomem" 2> /dev/null ;; esac
	# shellcheck disable=SC2086
	"$st" $c > "$dir/out" 2> "$dir/err" || fail "$c: exit $?: $(head -3 "$dir/err")"
done
"$st" info "$dir/nomem.stb" | grep -q "no allocations (profile_memory was off)" || fail "info: profile_memory off not said"

# names and refusals
cp "$dir/one/"*.json "$dir/t.pt.trace.json"
"$st" import "$dir/t.pt.trace.json" 2> /dev/null && [ -f "$dir/t.stb" ] || fail "default name: no t.stb"
echo "not a bundle" > "$dir/keep.stb"
"$st" import -o "$dir/keep.stb" "$dir/t.pt.trace.json" 2> "$dir/err" && fail "replaced a file steptrace did not write"
grep -q "not a steptrace bundle: give --force" "$dir/err" || fail "refusal: $(cat "$dir/err")"
[ "$(cat "$dir/keep.stb")" = "not a bundle" ] || fail "the refused file changed"
"$st" import --force -o "$dir/keep.stb" "$dir/t.pt.trace.json" 2> /dev/null && "$st" info "$dir/keep.stb" > /dev/null ||
	fail "--force did not replace it with a bundle"
"$st" import -o "$dir/one.stb" "$dir/t.pt.trace.json" 2> /dev/null || fail "did not replace a bundle"
"$st" import "$dir/one" "$dir/t.pt.trace.json" 2> "$dir/err" && fail "two traces without ranks imported"
grep -q "no distributedInfo" "$dir/err" || fail "two traces without ranks: $(cat "$dir/err")"
printf 'SQLite format 3\000' > "$dir/n.sqlite"
"$st" import -o "$dir/n.stb" "$dir/n.sqlite" 2> "$dir/err" && [ -f "$dir/n.stb" ] || grep -q "Nsight Systems" "$dir/err" ||
	fail "an SQLite file is not taken for an Nsight Systems export: $(cat "$dir/err")"
[ $failed = 0 ] && echo "import: summary $total ns, $steps steps, peak $peak bytes, two ranks joined: as the traces say"
exit $failed
