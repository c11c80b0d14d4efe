#!/bin/sh
# time.sh STEPTRACE ST_HOSTILE CASE [FACTOR]: the bundles of issue 25, small
# files that made a command run for minutes or hours, each generated here.
# Every command must end within MAX_CPU_S seconds of CPU time, 5 times
# FACTOR (1, or 4 for a sanitizer build, as CMake passes it): on a 2-core
# machine each takes at most 1.4 s of CPU in a Release build and 3.2 s
# under the sanitizers, and took 10 s to hours before the fixes (README's
# "Hostile bundles"); a busy machine stretches the wall-clock time, not
# the work. And within MAX_KIB of peak RSS, with the right exit status and
# a result that shows the work was done. The last line of the output shows
# the most any command took.
#   world     a header that claims 2^32-1 ranks, and ranks with gaps
#   graph     100,000 stream captures, then a graph's launch of 100,000 ops' kernels
#   names     12 kernel names of 4 MiB, 2,000 launches
#   overlap   100,000 steps, ranges or kernels, each overlapping the next; 100,000
#             launches, each from a thread of its own onto a stream of its own
#   paths     4,096 nested ranges of 1 KiB names, 1,000 launches in the innermost
#   steps     150,000 steps with an allocation each, in a range each or not
set -u -f   # -f: patterns such as r4095* go to steptrace as they are
st=$1; h=$2; case=$3; factor=${4:-1}
dir=$(mktemp -d /tmp/st-time-XXXXXX)
trap 'rm -rf "$dir"' EXIT
MAX_KIB=${MAX_KIB:-1048576}
MAX_CPU_S=${MAX_CPU_S:-$((5 * factor))}
. "$(dirname "$0")/expect.sh"

case $case in
world)
	# the missing ranks are listed as far as one line has room, never counted one by one
	gen world "$dir/w.stb"                                  # rank 0 of 4294967295, 540 B
	for cmd in info steps summary ranges memory replay flops comm explain; do
		expect "world-$cmd" 0 "^warning: the run of '.*w.stb' has 4294967295 ranks but no bundle of ranks 1, 2, 3, .* 63, \.\.\.: results cover the ranks given$" \
			$cmd "$dir/w.stb"
	done
	for fmt in perfetto chrome sqlite; do
		run_timed "world-export-$fmt" 0 export "$dir/w.stb" --format $fmt -o "$dir/w.$fmt" &&
			expect_err "world-export-$fmt" "has 4294967295 ranks but no bundle of ranks 1, 2, 3, "
	done
	run_timed world-report 0 report "$dir/w.stb" -o "$dir/w.html" &&
		expect_err world-report "has 4294967295 ranks"
	gen world "$dir/g.rank0.stb" 6 0                        # ranks 0 and 3 of 6: the gaps between them
	gen world "$dir/g.rank3.stb" 6 3
	expect world-gaps 0 "^warning: the run of '.*g.rank0.stb' has 6 ranks but no bundle of ranks 1, 2, 4, 5: results cover the ranks given$" \
		summary "$dir/g.rank0.stb" "$dir/g.rank3.stb"
	gen world "$dir/h.rank0.stb" 2 0
	expect world-one 0 "but no bundle of rank 1: results" summary "$dir/h.rank0.stb"
	;;
graph)
	# a CUDA graph's ops: their path components looked up in a table of the strings, the
	# capture calls sorted by thread, not each compared with every string, call and range
	gen graph "$dir/g.stb" 100000                           # 887 KB
	for cmd in summary "ranges --depth 1" flops "explain --what-if graph"; do
		expect "graph-$cmd" 0 "" $cmd "$dir/g.stb"
	done
	expect graph-ranges 0 "" ranges "$dir/g.stb" --format csv
	expect_out graph-ranges ",graph/op\.99999,"
	grep -q ",capture," "$dir/out" && fail "graph-ranges: the range around the captures is kept"
	run_timed graph-perfetto 0 export "$dir/g.stb" -o "$dir/g.pftrace"
	;;
names)
	# names cut at 4 KiB when read (BUNDLE_NAME_MAX): no report hashes, compares or prints megabytes per event
	gen long-names "$dir/n.stb" 12 4194304 2000             # 3.4 KB
	for fmt in perfetto chrome sqlite; do
		run_timed "names-$fmt" 0 export "$dir/n.stb" --format $fmt -o "$dir/n.$fmt" &&
			expect_err "names-$fmt" "^wrote '.*n.$fmt'"
	done
	expect names-summary 0 "" summary "$dir/n.stb" --full-names --format csv
	expect_out names-summary ",k00x{4090}\.\.\.$"          # its first 4,093 bytes and "..."
	[ "$(grep -c ',k[0-9][0-9]x*\.\.\.$' "$dir/out")" = 12 ] || fail "names-summary: not 12 names cut"
	for cmd in ranges memory replay flops steps explain; do
		expect "names-$cmd" 0 "" $cmd "$dir/n.stb"
	done
	run_timed names-report 0 report "$dir/n.stb" -o "$dir/n.html"
	;;
overlap)
	# lanes for slices that overlap without nesting: a heap of lane ends and a tree of the
	# lanes' room, not a try of every lane for every slice
	for what in steps ranges kernels; do
		gen overlap "$dir/o-$what.stb" $what 100000
		for fmt in perfetto chrome; do
			run_timed "overlap-$what-$fmt" 0 export "$dir/o-$what.stb" --format $fmt -o "$dir/o.$fmt" &&
				expect_err "overlap-$what-$fmt" " 100000 slices, .*\(99999 extra lanes for slices that overlap"
		done
		# each step's parts by prefix sums, its critical path within a budget of the graph's size
		run_timed "overlap-$what-explain" 0 explain "$dir/o-$what.stb" --what-if graph --what-if no-sync
	done
	# a stream and a thread per launch: each GPU's track looked up, not searched for
	gen spread "$dir/spread.stb" 100000
	run_timed spread-perfetto 0 export "$dir/spread.stb" -o "$dir/spread.perfetto" &&
		expect_err spread-perfetto "^wrote .*: 200003 tracks, 200001 slices"
	;;
paths)
	# range paths cut in the middle at 8 KiB, each built from its parent's: 4,096 nested
	# ranges of 1 KiB names made paths of up to 4 MiB, 8.6 GB of them in all
	gen nested "$dir/p.stb" 1024 1000                       # 23 KB
	for cmd in ranges "ranges --depth 4096" "summary --range r4095*" explain; do
		expect "paths-$cmd" 0 "" $cmd "$dir/p.stb"
	done
	expect paths-replay 0 "" replay "$dir/p.stb" --kind kernel --format csv
	# the kernels' path: its first third (of 8 KiB), "...", its last
	expect_out paths-replay ",r0000x{1019}/r0001x{1019}/r0002x+\.\.\.x+/(r409[0-4]x{1019}/)+r4095x{1019},nested_kernel$"
	expect paths-nomatch 1 "^error: --range 'nomatch' matches no range path; the nearest: 'r[0-9]{4}x+" \
		summary "$dir/p.stb" --range nomatch
	for fmt in perfetto chrome sqlite; do
		run_timed "paths-$fmt" 0 export "$dir/p.stb" --format $fmt -o "$dir/p.$fmt" &&
			expect_err "paths-$fmt" "^wrote '.*p.$fmt'"
	done
	run_timed paths-report 0 report "$dir/p.stb" -o "$dir/p.html"
	;;
steps)
	# memory finds each step by binary search
	gen steps "$dir/s.stb" 150000                           # 272 KB
	expect steps-memory 0 "" memory "$dir/s.stb"
	# each step's peak: its allocation, 0.25 ms into it
	expect_out steps-memory "^step 149999 +model +5,632 +0\.0 +149,999\.250 +0\.250( |$)"
	expect steps-memory-step 0 "" memory "$dir/s.stb" --step 149998
	expect_out steps-memory-step "^step 149998 +model +5,120 +0\.0 +149,998\.250 +0\.250( |$)"
	for cmd in steps summary replay "explain --what-if graph --what-if host=0.5"; do
		expect "steps-$cmd" 0 "" $cmd "$dir/s.stb"
	done
	# each in a range of its own, as an attention sweep's: --capacity groups them by sorting
	gen steps "$dir/l.stb" 150000 labelled
	expect steps-capacity 0 "" replay --capacity 1GiB "$dir/l.stb"
	expect_out steps-capacity "^config 149999 +1 +0\.0 +0\.0 +ok +yes"
	expect_out steps-capacity "150000 of 150000 step ranges fit in 1 GiB"
	expect steps-labelled 0 "" steps "$dir/l.stb"
	expect_out steps-labelled "^ *149,999 +no +1\.000 .* config 149999$"
	;;
*)
	echo "time.sh: no case '$case'" >&2
	exit 2
	;;
esac
report_work "time.sh $case"
exit $failed
