#!/bin/sh
# protoc reads what `steptrace export` writes with nothing but
# proto/perfetto_trace.proto: the file is a perfetto.protos.Trace.
set -eu
steptrace=$1; writer=$2; proto_dir=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
"$writer" --write "$tmp/x.stb"
"$steptrace" export "$tmp/x.stb" -o "$tmp/x.pftrace" 2> "$tmp/log"
grep -q "ui.perfetto.dev" "$tmp/log" || { echo "no hint to open the trace"; cat "$tmp/log"; exit 1; }
protoc --decode=perfetto.protos.Trace -I "$proto_dir" "$proto_dir/perfetto_trace.proto" \
  < "$tmp/x.pftrace" > "$tmp/x.txt"
count() { grep -c "$1" "$tmp/x.txt" || true; }
begins=$(count 'type: TYPE_SLICE_BEGIN')
ends=$(count 'type: TYPE_SLICE_END')
descs=$(count 'track_descriptor {')
[ "$begins" -eq 23 ] || { echo "protoc decoded $begins slice begins, expected 23"; exit 1; }
[ "$ends" -eq "$begins" ] || { echo "$begins begins but $ends ends"; exit 1; }
[ "$descs" -ge 9 ] || { echo "only $descs track descriptors"; exit 1; }
grep -q 'name: "gemm_kernel"' "$tmp/x.txt" || { echo "kernel name not interned"; exit 1; }
grep -q 'unit: UNIT_SIZE_BYTES' "$tmp/x.txt" || { echo "no memory counter track"; exit 1; }
grep -q 'thread_name: "thread 100 (main)"' "$tmp/x.txt" || { echo "no main thread track"; exit 1; }
# the first packet: state cleared and needed, the bundle's clock (64) paired with
# REALTIME at the header's creation time; the recording's pid
grep -m1 'sequence_flags:' "$tmp/x.txt" | grep -q 'sequence_flags: 3$' ||
	{ echo "first packet's sequence_flags are not 3"; exit 1; }
tr -d '\n ' < "$tmp/x.txt" | grep -q 'clock_snapshot{clocks{clock_id:64timestamp:0}clocks{clock_id:1timestamp:1767225600123456789}primary_trace_clock:BUILTIN_CLOCK_REALTIME}' ||
	{ echo "no clock snapshot pairing clock 64 with REALTIME"; exit 1; }
grep -q 'timestamp_clock_id: 64' "$tmp/x.txt" || { echo "packets do not default to clock 64"; exit 1; }
grep -q 'pid: 4242' "$tmp/x.txt" || { echo "the process id is not the recording's"; exit 1; }
# exported to stdout too
"$steptrace" export "$tmp/x.stb" --format chrome -o - 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
x = [e for e in d["traceEvents"] if e["ph"] == "X"]
assert len(x) == 23, len(x)
assert all(e["dur"] >= 0 for e in x)
'
echo "protoc: $descs tracks, $begins slices; chrome JSON parses with python"
