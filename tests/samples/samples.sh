#!/bin/sh
# samples.sh STEPTRACE BUNDLE PROTO_DIR: every report on one real bundle of
# samples/ (recorded on an H100); each must succeed and say something
# checkable about a real training step. CMake runs one test per bundle so
# they run side by side. The formats themselves are tested in tests/cli;
# here one format per report is enough.
#
# samples.sh STEPTRACE --diff A B: diff and the diff report of two bundles.
set -u
st=$1
. "$(dirname "$0")/../lib/check.sh"

if [ "$2" = --diff ]; then
	a=$3 b=$4
	"$st" diff "$a" "$b" --format csv > "$tmp/diff.csv" || fail "diff: exit $?"
	grep -q 'forward/ffn/w1' "$tmp/diff.csv" || fail "diff does not align forward/ffn/w1"
	"$st" report "$a" "$b" -o "$tmp/d.html" > /dev/null 2> "$tmp/err" || fail "report A B: $(cat "$tmp/err")"
	grep -q '<svg' "$tmp/d.html" || fail "the diff report has no chart"
	check_done "samples.diff"
	exit
fi

f=$2 proto=$3
name=$(basename "$f" .stb)
run() {  # run WHAT ARGS...: steptrace ARGS with stdout in $tmp/WHAT, stderr kept for a failure
	what=$1
	shift
	"$st" "$@" > "$tmp/$what" 2> "$tmp/err" || fail "$name: $*: exit $?: $(cat "$tmp/err")"
}

run info.csv info "$f" --format csv
run footer.csv info "$f" --format csv --section footer
grep -q '^complete,yes' "$tmp/footer.csv" || fail "$name is not complete"
grep -q '^dropped,0' "$tmp/footer.csv" || fail "$name has dropped records"
run steps.json steps "$f" --format json
run summary.csv summary "$f" --format csv
# Every kernel of a real recording is attributed to an op: no "(no op)" row.
run byop.csv summary "$f" --by op --format csv
! grep -q '(no op)' "$tmp/byop.csv" || fail "$name has kernels without an op"
run cat.csv summary "$f" --by category --format csv
grep -q ',GEMM$' "$tmp/cat.csv" || fail "$name: no GEMM category"
run catfwd.csv summary "$f" --by category --range forward --format csv
grep -q ',GEMM$' "$tmp/catfwd.csv" || fail "$name: no GEMM under forward"
run ranges.csv ranges "$f" --format csv
grep -q ',step/forward' "$tmp/ranges.csv" || fail "$name: no step/forward range"
run mem.json memory "$f" --format json --svg "$tmp/mem.svg"
run flops.csv flops "$f" --format csv --svg "$tmp/roof.svg"
# plan from the bundle: the sizes given, as a foreign program's bundle records none (GPT-2 small's and the built-in small's)
run plan.json plan "$f" --d-model 768 --d-ff 3072 --blocks 12 --dp 2 --tp 2 --pp 2 --microbatches 4 --format json
grep -q '"bundle"' "$tmp/plan.json" || fail "$name: plan has no bundle table"
case $name in
pytorch-ddp.*)
	# one rank of PyTorch DDP under torchrun (21,130,240 FP32 parameters, three buckets)
	grep -q 'Active memory — python3 .*ddp_train' "$tmp/mem.svg" ||
		fail "$name: the memory chart's title does not name the program"
	grep -q ',communication$' "$tmp/cat.csv" || fail "$name: NCCL's kernels are not communication"
	run comm.csv comm "$f" --format csv
	grep -q '^allreduce (total per step),3,84520960,' "$tmp/comm.csv" ||
		fail "$name: all-reduce bytes per step are not the gradients' 84,520,960: $(cat "$tmp/comm.csv")"
	;;
*)
if grep -q '^steps from,optimizer steps (PyTorch)' "$tmp/footer.csv"; then
	# the chart's title names the user's program, not the recorder's options
	grep -q 'Active memory — python3 .*gpt_train' "$tmp/mem.svg" && ! grep -q 'Active memory — steptrace' "$tmp/mem.svg" ||
		fail "$name: the memory chart's title does not name the program: $(grep -o 'Active memory[^<]*' "$tmp/mem.svg" | head -1)"
	# a PyTorch program recorded with --torch auto (GPT-2 small): its tensors are the driver's blocks
	run cap.txt replay "$f" --capacity 512MiB --view driver
	grep -q 'out of memory' "$tmp/cap.txt" || fail "$name: 512 MiB should not fit GPT-2 small (473 MiB of parameters alone)"
	run replay.txt replay "$f" --kind kernel --range 'backward/*/transformer.h.0/attn'
	grep -q 'flash\|attention\|fmha\|sdpa' "$tmp/replay.txt" ||
		fail "$name: no attention kernel under backward/*/transformer.h.0/attn"
	run memtag.csv memory "$f" --format csv --section at_peak
	grep -q '^parameter,496330752,' "$tmp/memtag.csv" || fail "$name: parameters at the peak are not GPT-2's 124,082,688 x 4 bytes"
else
	run cap.txt replay "$f" --capacity 512MiB
	grep -q 'out of memory' "$tmp/cap.txt" || fail "$name: 512 MiB should not fit a small model (490 MiB of parameters alone)"
	run replay.txt replay "$f" --kind kernel --range 'layer.0/attn/softmax'
	grep -q 'softmax' "$tmp/replay.txt" || fail "$name: no softmax kernel under layer.0/attn/softmax"
fi
	;;
esac
# a range's GPU span holds all of its GPU work, that of its copies on a helper
# thread (PyTorch's autograd engine: steptrace.mirror) included
run ranges.csv ranges "$f" --format csv
awk -F, 'NR > 1 && $(NF - 1) + 0 < $NF + 0 { print; exit 1 }' "$tmp/ranges.csv" >"$tmp/short" ||
	fail "$name: a range's GPU Time is less than its GPU Busy: $(cat "$tmp/short")"
run export.txt export "$f" -o "$tmp/t.pftrace"
protoc --decode=perfetto.protos.Trace -I "$proto" "$proto/perfetto_trace.proto" < "$tmp/t.pftrace" \
	> "$tmp/t.txt" || fail "protoc cannot decode the export of $name"
grep -q 'track_event' "$tmp/t.txt" || fail "export of $name has no track events"
run chrome.txt export "$f" --format chrome -o "$tmp/t.json"
run report.txt report "$f" -o "$tmp/r.html"
grep -q '<svg' "$tmp/r.html" || fail "report of $name has no chart"
# one Python for every structured output (its start-up is most of the cost)
python3 - "$tmp" <<'PY' || fail "$name: a structured output is wrong"
import json, sys, xml.etree.ElementTree as ET
d = sys.argv[1]
steps = json.load(open(f"{d}/steps.json"))
assert any(steps.values()), steps
mem = json.load(open(f"{d}/mem.json"))
assert mem["peaks"][0]["Peak (bytes)"] > 500 * 2**20, mem["peaks"][0]
for svg in ("mem.svg", "roof.svg"):
    ET.parse(f"{d}/{svg}")
assert len(json.load(open(f"{d}/t.json"))["traceEvents"]) > 1000
PY
check_done "samples.$name"
