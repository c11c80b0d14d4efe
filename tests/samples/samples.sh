#!/bin/sh
# Every report on every bundle in samples/ (real recordings from an H100):
# each must succeed and say something checkable about a real training step.
set -eu
st=$1; samples=$2; proto=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
n=0
for f in "$samples"/*.stb; do
	n=$((n + 1))
	name=$(basename "$f" .stb)
	"$st" info "$f" --format csv > "$tmp/info.csv" || fail "info $name"
	grep -q '^complete,yes' "$tmp/info.csv" || fail "$name is not complete"
	grep -q '^dropped,0' "$tmp/info.csv" || fail "$name has dropped records"
	"$st" steps "$f" --format json > "$tmp/steps.json" || fail "steps $name"
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert any(d.values()), d" "$tmp/steps.json" || fail "steps json $name"
	for fmt in table csv json md; do
		"$st" summary "$f" --format $fmt > "$tmp/summary.$fmt" || fail "summary --format $fmt $name"
	done
	# Every kernel of a real recording is attributed to an op: no "(no op)" row.
	"$st" summary "$f" --by op --format csv > "$tmp/byop.csv" || fail "summary --by op $name"
	! grep -q '(no op)' "$tmp/byop.csv" || fail "$name has kernels without an op"
	"$st" summary "$f" --by category --format csv | grep -q ',GEMM$' || fail "$name: no GEMM category"
	"$st" summary "$f" --by category --range forward --format csv | grep -q ',GEMM$' || fail "$name: no GEMM under forward"
	"$st" ranges "$f" --format csv | grep -q ',step/forward' || fail "$name: no step/forward range"
	"$st" memory "$f" --format json > "$tmp/mem.json" || fail "memory $name"
	"$st" memory "$f" --svg "$tmp/mem.svg" > /dev/null || fail "memory --svg $name"
	python3 -c "import xml.etree.ElementTree as E,sys; E.parse(sys.argv[1])" "$tmp/mem.svg" || fail "memory svg $name"
	"$st" flops "$f" --format csv > "$tmp/flops.csv" || fail "flops $name"
	"$st" flops "$f" --svg "$tmp/roof.svg" > /dev/null || fail "flops --svg $name"
	python3 -c "import xml.etree.ElementTree as E,sys; E.parse(sys.argv[1])" "$tmp/roof.svg" || fail "roofline svg $name"
	"$st" replay "$f" --capacity 512MiB > "$tmp/cap.txt" || fail "replay --capacity $name"
	grep -q 'out of memory' "$tmp/cap.txt" || fail "$name: 512 MiB should not fit a small model (490 MiB of parameters alone)"
	"$st" replay "$f" --kind kernel --range 'layer.0/attn/softmax' > "$tmp/replay.txt" || fail "replay $name"
	grep -q 'softmax' "$tmp/replay.txt" || fail "$name: no softmax kernel under layer.0/attn/softmax"
	"$st" export "$f" -o "$tmp/t.pftrace" > /dev/null 2>&1 || fail "export $name"
	protoc --decode=perfetto.protos.Trace -I "$proto" "$proto/perfetto_trace.proto" < "$tmp/t.pftrace" \
		> "$tmp/t.txt" || fail "protoc cannot decode the export of $name"
	grep -q 'track_event' "$tmp/t.txt" || fail "export of $name has no track events"
	"$st" export "$f" --format chrome -o "$tmp/t.json" > /dev/null 2>&1 || fail "export chrome $name"
	python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert len(d['traceEvents']) > 1000" "$tmp/t.json" ||
		fail "chrome export of $name"
	"$st" report "$f" -o "$tmp/r.html" > /dev/null 2>&1 || fail "report $name"
	grep -q '<svg' "$tmp/r.html" || fail "report of $name has no chart"
done
[ "$n" -ge 3 ] || fail "only $n bundles in $samples"
a="$samples/small-fp32-train.stb" b="$samples/small-bf16-train.stb"
"$st" diff "$a" "$b" --format csv > "$tmp/diff.csv" || fail "diff"
grep -q 'forward/ffn/w1' "$tmp/diff.csv" || fail "diff does not align forward/ffn/w1"
"$st" report "$a" "$b" -o "$tmp/d.html" > /dev/null 2>&1 || fail "report diff"
echo "samples: every report ran on $n bundles; diff and diff report on fp32 vs bf16"
