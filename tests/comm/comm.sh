#!/bin/sh
# comm.sh STEPTRACE GEN_RANKS [SAMPLES]: the analysis of a multi-GPU run from
# its rank bundles, on the synthetic runs of gen_ranks.c (whose comment has
# the time line these numbers are worked out from):
#   - steptrace comm: per collective, time per step and rank, transfer (last
#     arrival to end), algorithm and bus bandwidth, hidden and exposed
#     shares; the skew and the last rank, which only come out right when
#     rank 1's clock base (5 ms later) is applied; per-rank overlap; the
#     same numbers with rank 1 on another host whose real-time clock is off
#     (aligned by the collectives' ends), and the residual of that alignment;
#   - every report across ranks: summary's totals and --per-rank, steps per
#     rank, bundles of two runs refused, a rank given twice refused, ranks
#     whose clocks no time line holds refused, a missing rank warned about;
#   - export: one process per rank on one time line; report: a
#     Communication card and a timeline lane group per rank; diff of two
#     data-parallel modes.
set -u
st=$1
gen=$2
samples=${3:-}
. "$(dirname "$0")/../lib/check.sh"

"$gen" "$tmp" b bucket || fail "gen bucket"
"$gen" "$tmp" n naive 0x777 || fail "gen naive"
"$gen" "$tmp" half bucket 0x999 1 || fail "gen one rank of two"
B="$tmp/b.rank0.stb $tmp/b.rank1.stb"
N="$tmp/n.rank0.stb $tmp/n.rank1.stb"

# want FILE LINE: LINE is a whole line of FILE
want() {
	grep -Fxq -- "$2" "$1" || fail "$(basename "$1"): no line '$2'; got:
$(cat "$1")"
}

# ---- comm -------------------------------------------------------------------
# shellcheck disable=SC2086
"$st" comm $B --format csv >"$tmp/comm.csv" 2>"$tmp/err" || fail "comm exit $?: $(cat "$tmp/err")"
# shellcheck disable=SC2086
"$st" comm $B --format csv --section skew >"$tmp/skew.csv" 2>/dev/null || fail "comm --section skew"
# shellcheck disable=SC2086
"$st" comm $B --format csv --section ranks >"$tmp/ranks.csv" 2>/dev/null || fail "comm --section ranks"
# bucket.1: 2.0 + 1.9 ms per step on the two ranks; transfer 7.5 - 5.6 ms; 200 MB / 1.9 ms;
# hidden 0.5 + 0.4 of 3.9 ms. bucket.0: all of it under the backward.
want "$tmp/comm.csv" "allreduce/bucket.1,1,200000000,1.950,1900.0,105.26,105.26,23.1,76.9"
want "$tmp/comm.csv" "allreduce/bucket.0,1,100000000,0.900,800.0,125.00,125.00,100.0,0.0"
want "$tmp/comm.csv" "allreduce (total per step),2,300000000,2.850,2700.0,111.11,111.11,47.4,52.6"
want "$tmp/skew.csv" "allreduce/bucket.1,2,100.0,100.0,1,100.0,100.0,0.0,100.0"
want "$tmp/skew.csv" "allreduce/bucket.0,2,200.0,200.0,1,100.0,200.0,0.0,200.0"
want "$tmp/ranks.csv" "0,3.000,1.500,1.500,50.0,50.0,6.000,9.000,16.7"
want "$tmp/ranks.csv" "1,2.700,1.200,1.500,44.4,55.6,6.000,9.000,16.7"
# CSV: the first table alone; the others and the notes on stderr
grep -q '^#' "$tmp/comm.csv" && fail "a comment line in comm's CSV"
want "$tmp/err" "csv: one table, 'collectives'; the report's others: skew, ranks (--section NAME prints one, --format json all)"
want "$tmp/err" "communication 2.850 ms per step and rank: 47.4% hidden under computation, 52.6% exposed (1.500 ms)"
want "$tmp/err" "2 ranks; time line: the ranks share their host's clock: each placed by its time base"
# the copy engines' all-reduces (--allreduce-by ce: a copy, grad_reduce, a copy back; exchange:
# one copy) over the same spans: each op's activities of a step are one collective, so comm
# says what it says of NCCL's kernels, table for table
"$gen" "$tmp" ce ce || fail "gen ce"
"$gen" "$tmp" ex exchange 0x555 || fail "gen exchange"
for m in ce ex; do
	for sec in collectives skew ranks; do
		"$st" comm "$tmp/b.rank0.stb" "$tmp/b.rank1.stb" --format csv --section $sec >"$tmp/want-$sec.csv" 2>/dev/null
		"$st" comm "$tmp/$m.rank0.stb" "$tmp/$m.rank1.stb" --format csv --section $sec >"$tmp/$m-$sec.csv" 2>/dev/null ||
			fail "comm of the $m run"
		cmp -s "$tmp/want-$sec.csv" "$tmp/$m-$sec.csv" || fail "comm --section $sec of the $m run: $(cat "$tmp/$m-$sec.csv")"
	done
done
"$st" info "$tmp/ex.rank0.stb" >"$tmp/info.txt" 2>/dev/null || fail "info of the exchange run"
grep -q "all-reduces by  *the copy engines, whole copies averaged in AdamW (--allreduce-by exchange)" "$tmp/info.txt" ||
	fail "info names no exchange: $(cat "$tmp/info.txt")"
"$st" diff "$tmp/b.rank0.stb" "$tmp/ex.rank0.stb" >"$tmp/differr" 2>&1 || fail "diff bucket exchange: $(cat "$tmp/differr")"
grep -q "allreduce (nccl -> exchange)" "$tmp/differr" || fail "diff names no allreduce: $(cat "$tmp/differr")"
# any order of the bundles, the same report
"$st" comm "$tmp/b.rank1.stb" "$tmp/b.rank0.stb" --format csv >"$tmp/comm2.csv" 2>"$tmp/err2"
cmp -s "$tmp/comm.csv" "$tmp/comm2.csv" && cmp -s "$tmp/err" "$tmp/err2" || fail "the order of the bundles changed the report"
# ranks on two hosts, node2's real-time clock 7 ms behind (then 3 ms ahead): the ends of the
# collectives place rank 1 where one host's clock does, so every number is the same host's; the
# residual is what the ends disagree by once aligned (rank 1's warm-up ends 3 and 8 us late)
for err in -7000000 3000000; do
	"$gen" "$tmp" h bucket 0xabcdef 2 0 $err || fail "gen two hosts"
	for section in collectives skew ranks; do
		# shellcheck disable=SC2086
		"$st" comm $B --format csv --section $section >"$tmp/one.csv" 2>/dev/null
		"$st" comm "$tmp/h.rank0.stb" "$tmp/h.rank1.stb" --format csv --section $section >"$tmp/two.csv" \
			2>"$tmp/two.err" || fail "comm of two hosts: $(cat "$tmp/two.err")"
		cmp -s "$tmp/one.csv" "$tmp/two.csv" || fail "two hosts (clock off by $err ns): $section differs:
$(diff "$tmp/one.csv" "$tmp/two.csv")"
	done
done
want "$tmp/two.err" "2 ranks; time line: ranks on 2 hosts aligned by the ends of 6 collectives (moved up to 3 ms from their real-time clocks): residual median 0 ns, max 8 us"
"$gen" "$tmp" h bucket 0xabcdef 2 0 -7000000 || fail "gen two hosts"
"$st" comm "$tmp/h.rank0.stb" "$tmp/h.rank1.stb" --format csv >/dev/null 2>"$tmp/two.err" || fail "comm of two hosts"
want "$tmp/two.err" "2 ranks; time line: ranks on 2 hosts aligned by the ends of 6 collectives (moved up to 7 ms from their real-time clocks): residual median 0 ns, max 8 us"
# without collectives nothing refines the real-time clocks, and the note says so
"$gen" "$tmp" quiet none 0x123 2 0 3000000 || fail "gen two hosts without collectives"
"$st" comm "$tmp/quiet.rank0.stb" "$tmp/quiet.rank1.stb" --format csv >/dev/null 2>"$tmp/quiet.err" || fail "comm without collectives"
want "$tmp/quiet.err" "2 ranks; time line: ranks on 2 hosts placed by each host's real-time clock only, so only as close as those clocks agree (0 collectives common to every rank, at least 3 needed to align them by their ends)"
# the same run as a PyTorch program records it: NCCL's kernels under a module's op, the
# collective from the kernel's name or (ncclDevKernel_Generic) from NCCL's range, the bytes
# from that range's payload; the same numbers as steptrace's own step
"$gen" "$tmp" t torch || fail "gen torch"
"$st" comm "$tmp/t.rank0.stb" "$tmp/t.rank1.stb" --format csv >"$tmp/torch.csv" 2>/dev/null || fail "comm torch"
want "$tmp/torch.csv" "allreduce (NCCL),1,200000000,1.950,1900.0,105.26,105.26,23.1,76.9"
want "$tmp/torch.csv" "allreduce (NCCL RING LL),1,100000000,0.900,800.0,125.00,125.00,100.0,0.0"
want "$tmp/torch.csv" "allreduce (total per step),2,300000000,2.850,2700.0,111.11,111.11,47.4,52.6"
"$st" comm "$tmp/t.rank0.stb" "$tmp/t.rank1.stb" --format csv --section skew >"$tmp/torch.csv" 2>/dev/null ||
	fail "comm torch --section skew"
want "$tmp/torch.csv" "allreduce (NCCL),2,100.0,100.0,1,100.0,100.0,0.0,100.0"
want "$tmp/torch.csv" "allreduce (NCCL RING LL),2,200.0,200.0,1,100.0,200.0,150.0,50.0"
# the straggler and why: of 600 us of skew, rank 1's host 300 (its synchronisation 200), its GPU 300
"$st" comm "$tmp/t.rank0.stb" "$tmp/t.rank1.stb" --format csv >/dev/null 2>"$tmp/torch.err" || fail "comm torch notes"
want "$tmp/torch.err" "straggler: rank 1 arrives last at 100.0% of 4 collectives; of the mean skew of 150.0 us, 50.0% is the last rank's host launching later (synchronisation 33.3%, data loading 0.0%, other host work 16.7%) and 50.0% its GPU still busy with earlier work"
# NCCL's kernels are communication in summary's categories, whatever op launched them
"$st" summary --by category "$tmp/t.rank0.stb" --format csv >"$tmp/torch.csv" 2>/dev/null || fail "summary torch"
grep -q ",communication\$" "$tmp/torch.csv" || fail "summary --by category: no communication row: $(cat "$tmp/torch.csv")"
# naive: everything after the backward, nothing hidden; rank 1 arrives 300 us late
# shellcheck disable=SC2086
"$st" comm $N --format csv >"$tmp/naive.csv" 2>/dev/null || fail "comm naive"
want "$tmp/naive.csv" "allreduce/layers.0.ffn.w1.weight,1,100000000,0.850,700.0,142.86,142.86,0.0,100.0"
# shellcheck disable=SC2086
"$st" comm $N --format csv --section skew >"$tmp/naive.csv" 2>/dev/null || fail "comm naive --section skew"
# (rank 0's kernel starts 20 us before its launch call here: its start stands for the launch)
want "$tmp/naive.csv" "allreduce/layers.0.ffn.w1.weight,2,300.0,300.0,1,100.0,300.0,20.0,280.0"
# shellcheck disable=SC2086
"$st" comm $N --format csv --section ranks >"$tmp/naive.csv" 2>/dev/null || fail "comm naive --section ranks"
want "$tmp/naive.csv" "0,3.000,0.000,3.000,0.0,100.0,6.000,10.500,28.6"
# --top and --include-warmup (3 steps of which one warm-up: the same per step)
# shellcheck disable=SC2086
"$st" comm $B --top 1 --include-warmup --format csv >"$tmp/top.csv" 2>"$tmp/top.err"
want "$tmp/top.csv" "allreduce/bucket.1,1,200000000,1.950,1900.0,105.26,105.26,23.1,76.9"
grep -q "^allreduce/bucket.0,1.00" "$tmp/top.csv" && fail "--top 1 shows bucket.0"
want "$tmp/top.err" "1 of 2 collectives shown (--top 1)"
# one rank of two: a warning names the missing one
"$st" comm "$tmp/half.rank0.stb" --format csv >"$tmp/half.csv" 2>"$tmp/half.err" || fail "comm of one rank"
want "$tmp/half.err" "warning: the run of '$tmp/half.rank0.stb' has 2 ranks but no bundle of rank 1: results cover the ranks given"
want "$tmp/half.err" "1 of the run's 2 ranks given: bus bandwidth counts the run's ranks, skew and totals the ranks given"
"$st" comm "$tmp/half.rank0.stb" --format json 2>/dev/null | python3 -c '
import json, sys
assert not json.load(sys.stdin).get("skew"), "skew from one rank"' || fail "skew from one rank"
# a bundle without communication
if [ -n "$samples" ] && [ -f "$samples/small-bf16-train.stb" ]; then
	"$st" comm "$samples/small-bf16-train.stb" >"$tmp/none.txt" 2>&1 || fail "comm of a single-GPU sample"
	want "$tmp/none.txt" "no collectives: the bundle holds no NCCL kernel (record a program that communicates, or steptrace's own step with --ddp on several GPUs)"
fi

# A type's total per step keeps its fraction of a byte: PyTorch's two broadcasts
# of 216 and 12 bytes, 0.2 of each per step and rank, are 45.6 bytes, not 45.
if [ -n "$samples" ] && [ -f "$samples/pytorch-ddp.rank0.stb" ]; then
	"$st" comm "$samples/pytorch-ddp.rank0.stb" "$samples/pytorch-ddp.rank1.stb" --format csv >"$tmp/ddp.csv" 2>/dev/null ||
		fail "comm of the DDP sample"
	want "$tmp/ddp.csv" "broadcast (total per step),0.40,45.6,0.002,1.5,0.03,0.03,0.0,100.0"
	want "$tmp/ddp.csv" "broadcast (NCCL RING LL),0.20,216,0.001,4.2,0.05,0.05,0.0,100.0"
	# replay: a Rank column (and a '# rank' line) for the ranks together, none for one rank's bundle alone
	"$st" replay "$samples/pytorch-ddp.rank0.stb" --kind step --format csv >"$tmp/r1.csv" 2>/dev/null || fail "replay of one rank"
	"$st" replay "$samples/pytorch-ddp.rank0.stb" --kind step >"$tmp/r1.txt" 2>/dev/null || fail "replay of one rank (text)"
	"$st" replay "$samples/pytorch-ddp.rank0.stb" "$samples/pytorch-ddp.rank1.stb" --kind step --format csv \
		>"$tmp/r2.csv" 2>/dev/null || fail "replay of two ranks"
	[ "$(head -n 1 "$tmp/r1.csv")" = "Time (ms),Kind,Duration (ms),Where,Live (bytes),Range,Name" ] ||
		fail "replay of one rank's bundle: $(head -n 1 "$tmp/r1.csv")"
	grep -q '^# rank' "$tmp/r1.txt" && fail "replay of one rank's bundle says whose: $(head -n 1 "$tmp/r1.txt")"
	[ "$(head -n 1 "$tmp/r2.csv")" = "Rank,Time (ms),Kind,Duration (ms),Where,Live (bytes),Range,Name" ] ||
		fail "replay of two ranks: $(head -n 1 "$tmp/r2.csv")"
fi

# ---- one run only -------------------------------------------------------------
"$st" summary "$tmp/b.rank0.stb" "$tmp/n.rank1.stb" >"$tmp/out" 2>"$tmp/err"
rc=$?
[ "$rc" = 1 ] || fail "two runs to summary: exit $rc, want 1"
[ "$(wc -l <"$tmp/err" | tr -d ' ')" = 1 ] || fail "two runs: want one line, got: $(cat "$tmp/err")"
want "$tmp/err" "error: '$tmp/b.rank0.stb' and '$tmp/n.rank1.stb' are not ranks of one run: 'summary' reads one run (a bundle, or the bundles of one run's ranks)"
"$st" comm "$tmp/b.rank0.stb" "$tmp/b.rank0.stb" >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] || fail "a rank twice: not refused"
want "$tmp/err" "error: '$tmp/b.rank0.stb' and '$tmp/b.rank0.stb' are the same bundle given twice: give each bundle once"
# shellcheck disable=SC2086
"$st" diff $B >"$tmp/out" 2>"$tmp/err"
[ $? = 129 ] || fail "diff of one run: exit $?, want 129"
want "$tmp/err" "error: 'diff' compares two runs: the bundles given are ranks of one run"
# clocks 2^62 + 1 ns apart: no run's ranks start more than a day apart
"$gen" "$tmp" far bucket 0x555 2 0x4000000000000001 || fail "gen far"
"$st" summary "$tmp/far.rank0.stb" "$tmp/far.rank1.stb" >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] || fail "ranks 146 years apart: not refused"
[ "$(wc -l <"$tmp/err" | tr -d ' ')" = 1 ] || fail "ranks 146 years apart: want one line, got: $(cat "$tmp/err")"
want "$tmp/err" "error: '$tmp/far.rank0.stb' and '$tmp/far.rank1.stb' are ranks of one run, but their time bases place them 53376.0 days apart: a run's ranks start within a day of each other"

# ---- reports across ranks -----------------------------------------------------
# shellcheck disable=SC2086
"$st" summary $B --format csv >"$tmp/sum.csv" 2>"$tmp/sum.err" || fail "summary of two ranks"
want "$tmp/sum.csv" "33.9,12000000,4,3000000.0,3000000.0,3000000,3000000,0.0,gemm_bwd"
# the totals' note is not a row of the CSV (pandas would read it as one)
want "$tmp/sum.err" "totals across the 2 ranks given (--per-rank: each rank's)"
grep -q '^#' "$tmp/sum.csv" && fail "a comment line in summary's CSV of two ranks"
# shellcheck disable=SC2086
"$st" summary $B --per-rank --format csv >"$tmp/per.csv" 2>&1 || fail "summary --per-rank"
want "$tmp/per.csv" "Rank,Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name"
want "$tmp/per.csv" "0,33.3,6000000,2,3000000.0,3000000.0,3000000,3000000,0.0,gemm_bwd"
want "$tmp/per.csv" "1,34.5,6000000,2,3000000.0,3000000.0,3000000,3000000,0.0,gemm_bwd"
# shellcheck disable=SC2086
"$st" steps $B --format csv >"$tmp/steps.csv" 2>&1 || fail "steps of two ranks"
want "$tmp/steps.csv" "1,2,no,9.000,7.500,7.500,5"
# shellcheck disable=SC2086
"$st" info $B --format csv >"$tmp/info.csv" 2>&1 || fail "info of two ranks"
want "$tmp/info.csv" "1,rank,\"1 of 2 (local rank 1, run 0000000000abcdef, NCCL 2.28.9)\""
want "$tmp/info.csv" "0,data parallel,bucket (buckets of 25 MB)"
# memory per rank (rank 1's activations are twice rank 0's); diff's pooled peak is the largest rank's
# shellcheck disable=SC2086
"$st" memory $B --format csv >"$tmp/mem.csv" 2>&1 || fail "memory of two ranks"
want "$tmp/mem.csv" "0,overall,model,83886080,80.0,6.100,1.100,step/forward/layer.0/ffn/w1,step"
want "$tmp/mem.csv" "1,overall,model,100663296,96.0,6.100,1.100,step/forward/layer.0/ffn/w1,step"
# shellcheck disable=SC2086
"$st" diff $B $N --format csv --section memory >"$tmp/dmem.csv" 2>&1
want "$tmp/dmem.csv" "peak,96.000,96.000,0.000,1.000"
# shellcheck disable=SC2086
"$st" memory $B --svg "$tmp/m.svg" >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] || fail "memory --svg of two ranks: not refused"
want "$tmp/err" "error: --svg writes one file: give the bundle of one rank"
[ -e "$tmp/m.svg" ] && fail "memory --svg wrote a file"

# ---- diff of two data-parallel modes -------------------------------------------
# shellcheck disable=SC2086
"$st" diff $B $N --format csv >"$tmp/diff.csv" 2>"$tmp/diff.err" || fail "diff bucket naive"
# a collective of one mode only: 0 in the other, its whole time the delta, no ratio
want "$tmp/diff.csv" "0.000,1.975,1.975,,0,1,comm/allreduce/lm_head.weight"
want "$tmp/diff.err" "A and B differ in ddp (bucket -> naive)"
# shellcheck disable=SC2086
"$st" diff $B $N --format csv --section comm >"$tmp/diff.csv" 2>/dev/null || fail "diff bucket naive --section comm"
want "$tmp/diff.csv" "hidden (ms),1.350,0.000,-1.350,0.000"
want "$tmp/diff.csv" "exposed (ms),1.500,2.825,1.325,1.883"
# shellcheck disable=SC2086
"$st" diff $B $N --per-rank --format csv --section comm >"$tmp/diffr.csv" 2>&1 || fail "diff --per-rank"
want "$tmp/diffr.csv" "1,hidden (ms),1.200,0.000,-1.200,0.000"

# ---- export: a process per rank, one time line ---------------------------------------
# shellcheck disable=SC2086
"$st" export $B --format chrome -o "$tmp/run.json" 2>"$tmp/err" || fail "export of two ranks: $(cat "$tmp/err")"
grep -q "^wrote '$tmp/run.json' (.*): 2 ranks, each its own process, on one time line" "$tmp/err" ||
	fail "export says: $(cat "$tmp/err")"
if command -v python3 >/dev/null && python3 -c 'import json' 2>/dev/null; then
	python3 - "$tmp/run.json" >"$tmp/export.txt" <<'EOF' || fail "export check: $(cat "$tmp/export.txt")"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "process_name"}
print(sorted(procs.values()))
assert "rank 0 host" in procs.values() and "rank 1 host" in procs.values(), procs
nccl = sorted((e["ts"], procs[e["pid"]]) for e in ev if e.get("ph") == "X" and e["name"].startswith("nccl"))
# the first bucket.0: rank 0 at 14.0 ms, rank 1 at 14.2 ms on the run's time line
assert nccl[0] == (14000.0, "GPU 0 NVIDIA H200 (rank 0, pid 100)"), nccl[:2]
assert nccl[1] == (14200.0, "GPU 1 NVIDIA H200 (rank 1, pid 101)"), nccl[:2]
EOF
fi
# shellcheck disable=SC2086
"$st" export $B -o "$tmp/run.pftrace" 2>/dev/null || fail "perfetto export of two ranks"
[ -s "$tmp/run.pftrace" ] || fail "no perfetto trace"
(cd "$tmp" && "$st" export $B --format chrome >/dev/null 2>&1) || fail "export to the default name"
[ -f "$tmp/b.json" ] || fail "the default name of a run's trace is not b.json: $(ls "$tmp")"
# shellcheck disable=SC2086
"$st" export $B --format sqlite -o "$tmp/x.sqlite" >"$tmp/out" 2>"$tmp/err"
[ $? = 1 ] || fail "sqlite of two ranks: not refused"
want "$tmp/err" "error: --format sqlite writes one rank's database: give one rank's bundle"

# ---- report: a Communication card -------------------------------------------------
# shellcheck disable=SC2086
"$st" report $B -o "$tmp/run.html" 2>/dev/null || fail "report of two ranks"
grep -q 'id="comm"' "$tmp/run.html" || fail "no Communication card"
grep -q 'href="#comm">Communication</a>' "$tmp/run.html" || fail "no Communication link"
grep -q 'allreduce/bucket.1' "$tmp/run.html" || fail "the card lacks the collectives"
grep -q 'Arrival skew' "$tmp/run.html" || fail "the card lacks the skew"
# the timeline: a lane group per rank (its GPU stream, its thread, its memory), on the run's time line
if command -v python3 >/dev/null; then
	python3 - "$tmp/run.html" >"$tmp/tl.txt" 2>&1 <<'EOF' || fail "report timeline: $(cat "$tmp/tl.txt")"
import json, re, sys
page = open(sys.argv[1]).read()
d = json.loads(re.search(r'id="timeline-data">(.*?)</script>', page, re.S).group(1))
assert d["ranks"] == [0, 1], d["ranks"]
for key in ("streams", "threads", "mem"):
    assert sorted({t["rank"] for t in d[key]}) == [0, 1], (key, [t["rank"] for t in d[key]])
# the first bucket.0: rank 1's 200 us after rank 0's, as in the export
names = d["strings"]
nccl = sorted((s["s"][i], s["rank"]) for s in d["streams"] for i in range(0, len(s["s"]), 5)
              if names[s["s"][i + 2]].startswith("nccl"))
assert nccl[1][0] - nccl[0][0] == 200000 and [r for _, r in nccl[:2]] == [0, 1], nccl[:2]
EOF
fi
# shellcheck disable=SC2086
"$st" report $B $N -o "$tmp/diff.html" 2>/dev/null || fail "report diff of two runs"
grep -q 'id="a-comm"' "$tmp/diff.html" && grep -q 'id="b-comm"' "$tmp/diff.html" ||
	fail "the diff page lacks a Communication card per side"

check_done "comm.cli"
