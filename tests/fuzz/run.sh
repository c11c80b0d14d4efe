#!/bin/sh
# run.sh FUZZ_BUILD SECONDS: runs each fuzzer built in FUZZ_BUILD
# (`cmake --build BUILD --target fuzz` makes BUILD/fuzz) for SECONDS, from
# the samples and what fuzzing found before (tests/fuzz/regress/). Prints a
# line per fuzzer; on a crash, a sanitizer report, a leak or a timeout it
# prints the report's end, keeps the input in FUZZ_BUILD/findings/ and
# exits 1: add the input to tests/fuzz/regress/ once fixed.
set -u
fb=$(cd "$1" && pwd); secs=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/st-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
sh "$here/seeds.sh" "$here/../../samples" "$work/seeds" || exit 1
mkdir -p "$fb/findings"
status=0
for h in bundle member; do
	mkdir -p "$work/corpus-$h"
	if "$fb/tests/fuzz/fuzz_$h" -max_total_time="$secs" -timeout=20 -rss_limit_mb=3072 \
		-artifact_prefix="$fb/findings/$h-" -print_final_stats=1 \
		"$work/corpus-$h" "$work/seeds/$h" "$here/regress/$h" > "$work/$h.log" 2>&1; then
		echo "fuzz_$h: $(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$h.log") runs in $secs s, nothing found"
	else
		status=1
		tail -n 60 "$work/$h.log"
		echo "fuzz_$h: FOUND something; the input is in $fb/findings/"
	fi
done
exit $status
