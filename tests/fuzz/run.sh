#!/bin/sh
# run.sh FUZZ_BUILD SECONDS: runs the fuzzers built in FUZZ_BUILD
# (`cmake --build BUILD --target fuzz` makes BUILD/fuzz) for SECONDS in all,
# a fifth each to fuzz_bundle, fuzz_member and fuzz_import (torch.profiler
# traces for `steptrace import`) and the rest to fuzz_commands,
# from the seeds (seeds.sh) and what fuzzing found before
# (tests/fuzz/regress/). An input that runs over 10 s or takes over 1 GiB is
# a finding, as is a crash, a sanitizer report, a leak and fuzz_commands'
# own checks. Prints a line per fuzzer; on a finding it prints the report's
# end, keeps the input in FUZZ_BUILD/findings/ and in tests/fuzz/regress/
# (every input fuzzing ever found stays there: CTest fuzz.regress runs them
# all, and fails until the finding is fixed) and exits 1.
set -u
fb=$(cd "$1" && pwd); secs=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d /tmp/st-fuzz-XXXXXX)
trap 'rm -rf "$work"' EXIT
sh "$here/seeds.sh" "$here/../.." "$work/seeds" "$fb/tests/fuzz/fuzz_seed" || exit 1
mkdir -p "$fb/findings"
export ST_FUZZ_SCRATCH="$work"
status=0
for h in bundle member import commands; do
	mkdir -p "$work/corpus-$h"
	if [ $h = commands ]; then
		t=$((secs - 3 * (secs / 5)))
		# the mutator writes whole bundles: room for them from the start
		set -- -max_len=1048576 -len_control=0 "$work/seeds/windows"
	else
		t=$((secs / 5))
		set -- "$work/seeds/$h"
	fi
	if "$fb/tests/fuzz/fuzz_$h" -max_total_time="$t" -timeout=10 -rss_limit_mb=1024 -close_fd_mask=2 \
		-artifact_prefix="$fb/findings/$h-" -print_final_stats=1 \
		"$work/corpus-$h" "$here/regress/$h" "$@" > "$work/$h.log" 2>&1; then
		echo "fuzz_$h: $(sed -n 's/^stat::number_of_executed_units: *//p' "$work/$h.log") runs in $t s" \
		     "($(sed -n 's/^stat::average_exec_per_sec: *//p' "$work/$h.log")/s), nothing found"
	else
		status=1
		tail -n 60 "$work/$h.log"
		for f in "$fb/findings/$h-"*; do
			[ -f "$f" ] && cp "$f" "$here/regress/$h/$(basename "$f")"
		done
		echo "fuzz_$h: FOUND something; the input is in $fb/findings/ and tests/fuzz/regress/$h/"
	fi
done
exit $status
