#!/bin/sh
# import.sh STEPTRACE ST_HOSTILE SOURCE_DIR [FACTOR]: hostile torch.profiler
# traces for `steptrace import` (issue 40): truncated, garbage, huge
# numbers, deep nesting, wrong types, duplicate keys, NaN, negative
# durations, ids past 2^63, a value of 65 MiB, a deep tree of 100,000 CPU
# ops. Each ends in one error line and exit 1 (or imports, where the input
# is a trace), within MAX_CPU_S of CPU time and MAX_KIB of peak RSS
# (st-hostile run), and leaves no bundle behind when refused.
set -u
st=$1; h=$2; src=$3; factor=${4:-1}
dir=$(mktemp -d /tmp/st-hostile-import-XXXXXX)
trap 'rm -rf "$dir"' EXIT
MAX_KIB=${MAX_KIB:-$((524288 * factor))}   # FACTOR 4 under the sanitizers: their shadow memory too
MAX_CPU_S=${MAX_CPU_S:-$((5 * factor))}
. "$(dirname "$0")/expect.sh"

# a trace of one event: ev EVENT [TOP-LEVEL PREFIX]
ev() {
	printf '{%s"traceEvents": [%s]}' "${2:-}" "$1"
}
X='"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7'
ok="{$X, \"ts\": 1.5, \"dur\": 2.25, \"args\": {\"stream\": 7, \"device\": 0, \"correlation\": 3}}"

# refused: expect_refused NAME PATTERN FILE-CONTENT
n=0
refused() {
	n=$((n + 1))
	printf '%s' "$3" > "$dir/t$n.json"
	expect "$1" 1 "$2" import -o "$dir/t$n.stb" "$dir/t$n.json"
	[ -e "$dir/t$n.stb" ] && fail "$1: left a bundle behind"
}

ev "$ok" > "$dir/ok.json"
expect good 0 "^wrote " import -o "$dir/ok.stb" "$dir/ok.json"
refused empty "neither a torch.profiler trace" ""
refused garbage "neither a torch.profiler trace" "$(printf '\001\002garbage')"
refused open-brace "ends early at byte 1" "{"
refused cut "ends early|is not a trace" "$(ev "$ok" | head -c 60)"
refused no-events "has no \"traceEvents\"" '{"schemaVersion": 1}'
refused not-array "where '\\[' was expected" '{"traceEvents": 5}'
refused two-events "two \"traceEvents\"" '{"traceEvents": [], "traceEvents": []}'
refused after "more after its top-level object" "$(ev "$ok") {}"
refused trailing-comma "is not a trace this reads" '{"traceEvents": [1,]}'
refused nan "is not a trace this reads: .*invalid token" "$(ev "{$X, \"ts\": NaN, \"dur\": 1}")"
refused infinity "is not a trace this reads" "$(ev "{$X, \"ts\": Infinity, \"dur\": 1}")"
refused real-overflow "real number overflow" "$(ev "{$X, \"ts\": 1e400, \"dur\": 1}")"
refused int-overflow "too big" "$(ev "{$X, \"ts\": 1, \"dur\": 1, \"args\": {\"correlation\": 18446744073709551616}}")"
refused huge-ts "\"ts\" is not a time" "$(ev "{$X, \"ts\": 1e300, \"dur\": 1}")"
refused negative-ts "\"ts\" is not a time" "$(ev "{$X, \"ts\": -5, \"dur\": 1}")"
refused negative-dur "negative duration" "$(ev "{$X, \"ts\": 5, \"dur\": -1}")"
refused ends-past "ends past 2\^62" "$(ev "{$X, \"ts\": 4611686018427387, \"dur\": 4611686018427387}")"
refused string-ts "\"ts\" is not a time" "$(ev "{$X, \"ts\": \"5\", \"dur\": 1}")"
refused name-type "without a \"name\" string" "$(ev '{"ph": "X", "cat": "kernel", "name": 5, "ts": 1, "dur": 1}')"
refused args-type "\"args\" is not an object" "$(ev "{$X, \"ts\": 1, \"dur\": 1, \"args\": [1]}")"
refused negative-id "is not a count" "$(ev "{$X, \"ts\": 1, \"dur\": 1, \"args\": {\"correlation\": -3}}")"
refused ph-type "\"ph\" is not one letter" "$(ev '{"ph": 7, "cat": "kernel", "name": "k", "ts": 1, "dur": 1}')"
refused duplicate-key "duplicate object key" "$(ev "{$X, \"ts\": 1, \"ts\": 2, \"dur\": 1}")"
refused element "not an object" "$(ev '[1, 2]')"
refused rank "rank 5 is not below its world_size 2" \
	"$(ev "$ok" '"distributedInfo": {"rank": 5, "world_size": 2}, ')"
refused base-time "\"baseTimeNanoseconds\" is not a time" "$(ev "$ok" '"baseTimeNanoseconds": -1, ')"
refused memory-bytes "Addr, Bytes and Device Id" "$(ev '{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 1, "args": {"Bytes": "x", "Addr": 1, "Device Id": 0, "Device Type": 1}}')"
refused memory-zero "0 bytes, or of more than 2\^56" "$(ev '{"ph": "i", "cat": "cpu_instant_event", "name": "[memory]", "ts": 1, "args": {"Bytes": 0, "Addr": 1, "Device Id": 0, "Device Type": 1, "Total Allocated": 0}}')"
refused utf8 "is not a trace this reads" "$(ev "$(printf '{"ph": "X", "cat": "kernel", "name": "\377", "ts": 1, "dur": 1}')")"

# deep nesting: 100,000 brackets in one event (jansson stops at 2,048 levels)
python3 -c "import sys; sys.stdout.write('{\"traceEvents\": [' + '[' * 100000 + ']' * 100000 + ']}')" > "$dir/deep.json"
expect deep 1 "maximum parsing depth" import -o "$dir/deep.stb" "$dir/deep.json"
# one value of 65 MiB
python3 -c "import sys; sys.stdout.write('{\"traceEvents\": [{\"name\": \"' + 'a' * (65 << 20) + '\"}]}')" > "$dir/big.json"
expect big-value 1 "a value of more than 64 MiB" import -o "$dir/big.stb" "$dir/big.json"
# a gzip'd trace cut in half
gzip -c "$dir/ok.json" > "$dir/cut.json.gz"
python3 "$src/scripts/kineto_trace.py" --steps 2 --layers 2 --gzip "$dir/gen" > /dev/null
f=$(ls "$dir"/gen/*.gz)
head -c $(($(wc -c < "$f") / 2)) "$f" > "$dir/cut.json.gz"
expect gzip-cut 1 "cut short|ends early" import -o "$dir/cut.stb" "$dir/cut.json.gz"
[ -e "$dir/cut.stb" ] && fail "gzip-cut: left a bundle behind"
# 100,000 nested CPU ops over one launch each: imported, within the bounds
python3 - "$dir/tree.json" <<'PY'
import sys
n = 100000
with open(sys.argv[1], "w") as f:
    f.write('{"traceEvents": [')
    for i in range(n):
        f.write('{"ph": "X", "cat": "cpu_op", "name": "op%d", "pid": 1, "tid": 1, "ts": %d, "dur": %d, '
                '"args": {"External id": %d}},' % (i % 7, i, 2 * (n - i), i + 1))
        f.write('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": %d.5, '
                '"dur": 0.1, "args": {"External id": %d, "correlation": %d}},' % (i, i + 1, i + 1))
        f.write('{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": %d, "dur": 1, '
                '"args": {"External id": %d, "correlation": %d, "stream": 7, "device": 0}},' % (200000 + i, i + 1, i + 1))
    f.write('{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0, "dur": 300000}]}')
PY
expect deep-tree 0 "^wrote " import -o "$dir/tree.stb" "$dir/tree.json"
expect deep-tree-summary 0 "" summary "$dir/tree.stb"
expect_out deep-tree-summary "100,000 .* k$"
expect deep-tree-info 0 "" info "$dir/tree.stb"
expect_out deep-tree-info "[0-9]+ CPU ops nested more than 4096 deep left out"
report_work hostile.import
exit $failed
