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
# Issue 39, each within 5 s of CPU time and BOUND_KIB (256 MiB; 1 GiB under
# the sanitizers) or refused in one line:
#   ddp       a header's parameter count and bucket size that make billions of
#             buckets or undefined behaviour (N1, N7); an all-reduce table of
#             100,000 rows (N9)
#   deep      4,095 nested ranges over 100,000 launches: kernels:GLOB=K (N2),
#             report (N3), comm (N8)
#   ranks     32 ranks of 20,000 collectives (N4), collectives each on a
#             communicator of its own (N5), NCCL messages of 2^64 - 1 bytes
#             (N6), ranks of different collective counts, time bases a day and
#             146 years apart, a bundle given twice
#   values    overlapping live allocations, a bundle cut in half, -o onto a file
#             with two hard links
#   residues  memory under --memory-limit 64MiB on F4, explain on F3
set -u -f   # -f: patterns such as r4095* go to steptrace as they are
st=$1; h=$2; case=$3; factor=${4:-1}
dir=$(mktemp -d /tmp/st-time-XXXXXX)
trap 'rm -rf "$dir"' EXIT
MAX_KIB=${MAX_KIB:-1048576}
MAX_CPU_S=${MAX_CPU_S:-$((5 * factor))}
BOUND_KIB=${BOUND_KIB:-$([ "$factor" = 1 ] && echo 262144 || echo 1048576)}
. "$(dirname "$0")/expect.sh"
NCCL_KERNEL='ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)'

# ranks DIR N: the bundles st-hostile ranks wrote into DIR, ranks 0 to N - 1 (no glob: set -f)
ranks() {
	i=0
	while [ $i -lt "$2" ]; do
		printf '%s/r.rank%d.stb ' "$1" $i
		i=$((i + 1))
	done
}

# said NAME PATTERN: the last command's output or its notes on stderr hold PATTERN
said() {
	grep -Eq "$2" "$dir/out" "$dir/err" || { fail "$1: neither output nor stderr holds '$2'"; head -5 "$dir/err" >&2; }
}

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
ddp)
	small_kib=$BOUND_KIB
	printf 'Bytes,Bus BW (GB/s)\n1048576,100\n104857600,300\n' > "$dir/t.csv"
	# N1: 10^18 parameters in buckets of 25 MB (1.6*10^11 buckets), 4*10^9 one-byte buckets
	gen ddp "$dir/p18.stb" 1000000000000000000 25                  # 668 B
	expect ddp-params 1 "^error: --what-if ranks=N: '.*p18.stb' claims 1000000000000000000 parameters, 4e\+18 bytes of gradients: past 2\^53 bytes" \
		explain "$dir/p18.stb" --what-if ranks=8 --allreduce "$dir/t.csv"
	expect ddp-plan 1 "sizes past what plan counts exactly" plan "$dir/p18.stb"
	gen ddp "$dir/b1.stb" 1000000000 0.000001
	expect ddp-tiny 1 "^error: --what-if ranks=N: buckets of 1e-06 MB \(the bundle's header\) make 4e\+09 buckets .*over 1000000: give --bucket-mb$" \
		explain "$dir/b1.stb" --what-if ranks=8 --allreduce "$dir/t.csv"
	# N7: buckets of 1e308 MB, undefined behaviour in the cast to bytes
	gen ddp "$dir/b308.stb" 100000000 1e308
	expect ddp-huge 1 "^error: --what-if ranks=N: buckets of 1e\+308 MB \(the bundle's header\) are past 2\^53 bytes: give --bucket-mb$" \
		explain "$dir/b308.stb" --what-if ranks=8 --allreduce "$dir/t.csv"
	expect ddp-huge-given 1 "buckets of 1e\+300 MB \(--bucket-mb\) are past 2\^53 bytes" \
		explain "$dir/b1.stb" --what-if ranks=8 --allreduce "$dir/t.csv" --bucket-mb 1e300
	# a real one: 10^9 parameters in buckets of 25 MB
	gen ddp "$dir/ok.stb" 1000000000 25
	run_timed ddp-ok 0 explain "$dir/ok.stb" --what-if ranks=8 --allreduce "$dir/t.csv" --section what_if --format csv
	expect_out ddp-ok "^ranks=8,0\.999,0\.999,[0-9.]+,"
	# N9: an all-reduce table of 100,000 rows, in reverse order: sorted by qsort, looked up by bisection
	awk 'BEGIN { print "Bytes,Bus BW (GB/s)"; for (i = 100000; i > 0; i--) print i * 4096 "," 100 + i / 1000 }' > "$dir/big.csv"
	run_timed ddp-table 0 explain "$dir/ok.stb" --what-if ranks=8 --allreduce "$dir/big.csv" --section what_if --format csv
	expect_out ddp-table "^ranks=8,0\.999,0\.999,[0-9.]+,"
	;;
deep)
	small_kib=$BOUND_KIB
	# 4,095 nested ranges of one-letter names, 100,000 launches in the innermost: each kernel's
	# path of 8,189 bytes has 4,095 tails
	gen deep "$dir/d.stb" 4095 100000 gemv_kernel                  # 14 KB
	gen deep "$dir/n.stb" 4095 100000 "$NCCL_KERNEL"
	gen deep "$dir/s.stb" 4095 4095 gemv_kernel spread             # a kernel in each range: 4,095 paths
	for f in d s; do
		# N2: the manual's example, and a glob that matches the tails ending in "y/z"
		run_timed "deep-$f-glob" 0 explain "$dir/$f.stb" --what-if 'kernels:*gemm*=0.5' --what-if 'kernels:*y/z=0' \
			--section what_if --format csv
		expect_out "deep-$f-glob" '^kernels:\*gemm\*=0\.5,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,[0-9.]+,0\.0$'
	done
	# the innermost range's path is "a/b/.../z/a/b/.../m": no tail ends in "y/z", those from a "y" on match "y/z/a/*"
	run_timed deep-tail 0 explain "$dir/d.stb" --what-if 'kernels:y/z/a/*=1000' --section what_if --format csv
	expect_out deep-tail '^kernels:y/z/a/\*=1000,[0-9.]+,[0-9.]+,[0-9.]+,[1-9][0-9,.]+$'   # slower: the tails matched
	# N3, N8: the layer breakdown and NCCL's calls, once per path and range
	for f in d n; do
		run_timed "deep-$f-report" 0 report "$dir/$f.stb" -o "$dir/$f.html" && expect_err "deep-$f-report" "^wrote '"
	done
	run_timed deep-comm 0 comm "$dir/n.stb" --section collectives --format csv
	expect_out deep-comm "^allreduce \\(NCCL RING LL\\),100000,"
	;;
ranks)
	small_kib=$BOUND_KIB
	# N4: 32 ranks of 20,000 collectives, 823 B each: a node per collective, not 32^2 edges
	mkdir "$dir/r32"
	gen ranks "$dir/r32" 32 0 20000
	expect ranks-default 1 "needs at least .* over the limit of .* \(left of 128 MiB after the [0-9]+ bundles before it; the default for 32 bundles of .* in all: 1000 times their size, at least 128 MiB\): raise it with --memory-limit$" \
		explain $(ranks "$dir/r32" 32)
	small_kib=$((factor == 1 ? 716800 : 2097152))   # the limit given, 700 MiB, holds
	run_timed ranks-explain 0 explain $(ranks "$dir/r32" 32) --memory-limit 700MiB --format csv
	said ranks-explain " 1280000 collective \(20000 collectives, each rank's kernel joined to the others' through one node\)"
	small_kib=$BOUND_KIB
	expect ranks-limit 1 "needs at least .*over the limit of .* \(left of 300 MiB after the [0-9]+ bundles before it\): raise it with --memory-limit$" \
		explain $(ranks "$dir/r32" 32) --memory-limit 300MiB
	# N5: each collective on a communicator of its own: found by hash
	mkdir "$dir/c2" "$dir/c8"
	gen ranks "$dir/c8" 8 0 4000 comms
	gen ranks "$dir/c2" 2 0 40000 comms                           # 73 KB each
	for n in 8 2; do
		run_timed "ranks-c$n" 0 comm $(ranks "$dir/c$n" $n) --section collectives --format csv
		expect_out "ranks-c$n" "^allreduce \\(NCCL RING LL\\),0\\.1[01],4194304,"
	done
	# N6: NCCL messages of 2^64 - 1 bytes: read as unknown, said in one line a rank
	mkdir "$dir/b"
	gen ranks "$dir/b" 2 10 10 bytes
	run_timed ranks-bytes 0 comm $(ranks "$dir/b" 2)
	[ "$(grep -c "^warning: '.*r.rank[01].stb': 10 sizes past 2^53 bytes (an NCCL message of 18446744073709551615 B, the first): no machine holds them, so they are read as unknown$" "$dir/err")" = 2 ] ||
		fail "ranks-bytes: want a warning a rank"
	grep -Eq -- ' -1 |e\+|[0-9]{9,}\.' "$dir/out" && fail "ranks-bytes: a size or bandwidth that cannot be real printed"
	# ranks of different collective counts: said, by comm and explain
	mkdir "$dir/u"
	gen ranks "$dir/u" 4 100 100 uneven
	run_timed ranks-uneven 0 comm $(ranks "$dir/u" 4) &&
		said ranks-uneven "the ranks ran different numbers of collective kernels \(rank 3 89, rank 0 90\)"
	run_timed ranks-uneven-explain 0 explain $(ranks "$dir/u" 4) &&
		said ranks-uneven-explain "collectives: the ranks ran different numbers of them \(rank 3 99, rank 0 100\)"
	# time bases 146 years and a day apart: refused
	mkdir "$dir/a" "$dir/y"
	gen ranks "$dir/a" 2 10 10 apart
	gen ranks "$dir/y" 2 10 10 day
	for d in a y; do
		expect "ranks-apart-$d" 1 "^error: '.*r.rank0.stb' and '.*r.rank1.stb' are ranks of one run, but their time bases place them [0-9.]+ days apart: a run's ranks start within a day of each other$" \
			comm $(ranks "$dir/$d" 2)
	done
	# one bundle twice, and two copies of one
	cp "$dir/b/r.rank0.stb" "$dir/copy.stb"
	expect ranks-twice 1 "^error: '.*r.rank0.stb' and '.*r.rank0.stb' are the same bundle given twice: give each bundle once$" \
		comm "$dir/u/r.rank0.stb" "$dir/u/r.rank0.stb"
	gen world "$dir/w.stb" 1 0
	cp "$dir/w.stb" "$dir/w2.stb"
	expect ranks-copy 1 "^error: '.*w.stb' and '.*w2.stb' are two copies of one bundle: give each bundle once$" \
		summary "$dir/w.stb" "$dir/w2.stb"
	;;
values)
	small_kib=$BOUND_KIB
	# allocations overlapping live ones at other addresses: the live totals count them twice, said
	gen alloc-overlap "$dir/o.stb" 1000
	run_timed values-overlap 0 memory "$dir/o.stb" &&
		said values-overlap "^warning: model view: 999 allocation\(s\) overlap a block still live at another address"
	# a bundle cut in half warns on every command
	gen mixed "$dir/m.stb" 20000
	gen ddp "$dir/full.stb" 1000000 25
	head -c "$(($(wc -c < "$dir/full.stb") / 2))" "$dir/full.stb" > "$dir/half.stb"
	for cmd in info steps summary ranges memory flops comm explain replay "diff $dir/m.stb" "replay --capacity 1GiB"; do
		run_timed "values-cut-${cmd%% *}" 0 $cmd "$dir/half.stb" &&
			expect_err "values-cut-${cmd%% *}" "^warning: '.*half.stb' is truncated"
	done
	for cmd in "export -o $dir/h.pftrace" "export --format sqlite -o $dir/h.db" "report -o $dir/h.html"; do
		run_timed "values-cut-${cmd%% *}" 0 $cmd "$dir/half.stb" &&
			expect_err "values-cut-${cmd%% *}" "^warning: '.*half.stb' is truncated"
	done
	# -o onto a file with another hard link: both names see the new file
	echo old > "$dir/a.svg"
	ln "$dir/a.svg" "$dir/b.svg"
	expect_wrote values-link "$dir/a.svg" memory "$dir/m.stb" --svg "$dir/a.svg"
	cmp -s "$dir/a.svg" "$dir/b.svg" || fail "values-link: the hard link's other name kept the old file"
	[ "$(stat -c %h "$dir/a.svg")" = 2 ] || fail "values-link: the link is broken"
	;;
residues)
	# F4: each limit holds the peak (a sanitizer's shadow memory aside)
	gen steps "$dir/f4.stb" 150000
	for mib in 64 160; do
		small_kib=$((factor == 1 ? mib * 1024 : BOUND_KIB))
		run_timed "residues-f4-$mib" "$([ $mib = 64 ] && echo 1 || echo 0)" memory "$dir/f4.stb" --memory-limit ${mib}MiB
	done
	# F3: explain on 250,000 overlapping steps
	small_kib=$BOUND_KIB
	gen overlap "$dir/f3.stb" steps 250000
	expect residues-f3 0 "" explain "$dir/f3.stb"
	;;
*)
	echo "time.sh: no case '$case'" >&2
	exit 2
	;;
esac
report_work "time.sh $case"
exit $failed
