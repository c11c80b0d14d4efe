#!/bin/sh
# ranks.sh STEPTRACE TEST_RANK_FLOWS RUN.rank0.stb RUN.rank1.stb: the trace of
# a real two-rank run (docs/multi/ddp-bucket), in Perfetto and Chrome JSON,
# keeps every launch flow within its rank. Each rank counts its correlation
# ids from 1 (659 of the run's 2,409 are used by both): a flow id that is a
# bare correlation id joins a launch on one GPU to a kernel on the other.
set -u
st=$1
flows=$2
shift 2
. "$(dirname "$0")/../lib/check.sh"
here=$(dirname "$0")

"$st" export "$@" -o "$tmp/run.pftrace" 2>"$tmp/err" || fail "perfetto export: $(cat "$tmp/err")"
"$flows" "$tmp/run.pftrace" 2 || fail "perfetto flows cross ranks"

"$st" export "$@" --format chrome -o "$tmp/run.json" 2>"$tmp/err" || fail "chrome export: $(cat "$tmp/err")"
n=$(sed -n 's/.* \([0-9][0-9]*\) launch flows.*/\1/p' "$tmp/err")
python3 "$here/chrome_check.py" "$tmp/run.json" --flows "${n:-0}" --ranks 2 >"$tmp/out" ||
	fail "chrome flows: $(cat "$tmp/out")"
cat "$tmp/out"

# the same bundles exported twice: the same ids (the same bytes)
"$st" export "$@" -o "$tmp/again.pftrace" 2>/dev/null && cmp -s "$tmp/run.pftrace" "$tmp/again.pftrace" ||
	fail "exporting the run twice gives different bytes"

check_done "export.ranks"
