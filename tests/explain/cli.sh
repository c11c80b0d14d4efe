#!/bin/sh
# cli.sh STEPTRACE SAMPLES: `steptrace explain` on the recorded samples:
# every step's parts add up to its wall time and the replay gives the
# measured step back (tables, CSV, JSON, markdown); a PyTorch step (no
# NVTX, its own loop) is found launch-bound and its CUDA-graph prediction
# lies between the GPU's busy time and the measured step; two ranks of a
# DDP run join through their collectives; steptrace's bucketed DDP's
# products slowed beside NCCL (docs/multi); the rules' usage errors;
# ranks=N with an all-reduce table; no finding shown with no saving; the
# replay's error with typical delays.
set -u
st=$1
samples=$2
. "$(dirname "$0")/../lib/check.sh"

for f in "$samples"/small-bf16-train.stb "$samples"/small-fp32-train.stb "$samples"/pytorch-auto.stb; do
	"$st" explain "$f" --section steps --format csv > "$tmp/s.csv" 2> "$tmp/err" || fail "explain $f: $(cat "$tmp/err")"
	# Step,Wall,Compute,...,Other idle,Replayed: parts sum to Wall, Replayed == Wall
	awk -F, 'NR > 1 && $1 != "share (%)" {
		s = 0; for (i = 3; i <= 9; i++) s += $i
		if (s - $2 > 0.002 || $2 - s > 0.002) { print "row " $1 ": parts " s " != wall " $2; bad = 1 }
		if ($10 != $2) { print "row " $1 ": replayed " $10 " != wall " $2; bad = 1 }
	} END { exit bad }' "$tmp/s.csv" > "$tmp/bad" || fail "$f: $(cat "$tmp/bad")"
	for fmt in table json md; do
		"$st" explain "$f" --format $fmt > "$tmp/out.$fmt" 2>&1 || fail "explain --format $fmt $f"
	done
	grep -q '"findings"' "$tmp/out.json" || fail "$f: no findings in JSON"
	grep -q '"critical_path"' "$tmp/out.json" || fail "$f: no critical path in JSON"
done

# the PyTorch step: launch-bound first, predicted between the GPU's busy time and 0.6 of the measured step
"$st" explain "$samples"/pytorch-auto.stb --section findings --format csv > "$tmp/f.csv" 2>/dev/null
head -2 "$tmp/f.csv" | tail -1 | grep -q '^1,launch-bound' || fail "pytorch: launch-bound is not the first finding: $(head -2 "$tmp/f.csv")"
busy=$("$st" steps "$samples"/pytorch-auto.stb --format csv 2>/dev/null |
	awk -F, '$2 == "no" { s += $4; n++ } END { if (n) printf "%.3f", s / n }')
"$st" explain "$samples"/pytorch-auto.stb --what-if graph --section what_if --format csv > "$tmp/w.csv" 2>/dev/null
awk -F, -v busy="$busy" 'NR == 2 { exit !(busy > 5 && $4 >= busy && $4 < 0.6 * $2) }' "$tmp/w.csv" ||
	fail "pytorch graph prediction (GPU busy $busy ms a step): $(cat "$tmp/w.csv")"
# host=1 and kernels:*=1 change nothing; their interval (Low, High) holds the measured steps' mean, every one its prediction
"$st" explain "$samples"/pytorch-auto.stb --what-if host=1 --what-if 'kernels:*=1' --what-if graph --section what_if --format csv \
	> "$tmp/w.csv" 2> "$tmp/err"
awk -F, 'NR > 1 && $1 != "graph" && $1 !~ / \+ / && $4 != $3 { bad = 1 } END { exit bad }' "$tmp/w.csv" ||
	fail "identity rules moved the step: $(cat "$tmp/w.csv")"
awk -F, 'NR == 1 { ok = ($5 == "Low" && $6 == "High") } NR > 1 && !($5 <= $4 && $4 <= $6) { ok = 0 }
	$1 == "host=1" && !($5 < $2 && $2 < $6) { ok = 0 } END { exit !ok }' "$tmp/w.csv" ||
	fail "prediction intervals: $(cat "$tmp/w.csv")"
grep -q "^what if graph: predicted [0-9.]* ms \[[0-9.]*, [0-9.]*\]" "$tmp/err" || fail "no 'predicted X ms [lo, hi]' note"
# the interval holds the model's own error on the run, the typical replay's against the measured steps,
# on both sides: on the built-in FP32 step (0.5%) that is wider than the steps' own spread (0.2%)
"$st" explain "$samples"/small-fp32-train.stb --section replay --format csv 2>/dev/null |
	awk -F, '$1 == "typical delays" { e = ($3 - $2) / $2; print (e < 0 ? -e : e) }' > "$tmp/model" || fail "replay csv"
"$st" explain "$samples"/small-fp32-train.stb --what-if graph --section what_if --format csv > "$tmp/w.csv" 2>/dev/null
awk -F, -v m="$(cat "$tmp/model")" 'NR > 1 { if (!(m > 0.0005 && ($6 - $4) / $4 >= 0.9 * m && ($4 - $5) / $4 >= 0.9 * m)) bad = 1 }
	END { exit bad }' "$tmp/w.csv" || fail "the interval leaves out the model's error $(cat "$tmp/model"): $(cat "$tmp/w.csv")"

# steptrace's own bucketed DDP on two H200s, recorded before the SM carve-out
# (docs/multi/ddp-bucket.rank*.stb): its products beside NCCL's kernels took
# longer than alone, and no-contention predicts the step without that
docs=$(dirname "$samples")/docs/multi
"$st" explain "$docs"/ddp-bucket.rank0.stb "$docs"/ddp-bucket.rank1.stb --section findings --format csv \
	> "$tmp/c.csv" 2>/dev/null || fail "explain ddp-bucket"
grep -q '^[0-9]*,computation slowed beside communication,.*CTA per SM' "$tmp/c.csv" ||
	fail "ddp-bucket: no contention finding: $(cat "$tmp/c.csv")"
awk -F, '$2 == "computation slowed beside communication" { found = 1; if (!($(NF-1) > 0.2)) exit 1 }
	END { exit !found }' "$tmp/c.csv" || fail "ddp-bucket: contention saving under 0.2 ms: $(cat "$tmp/c.csv")"

# two ranks: collectives join them
"$st" explain "$samples"/pytorch-ddp.rank0.stb "$samples"/pytorch-ddp.rank1.stb > "$tmp/ddp.txt" 2>&1 || fail "explain ddp"
grep -q "of 2 ranks" "$tmp/ddp.txt" || fail "ddp: not 2 ranks: $(tail -5 "$tmp/ddp.txt")"
# a node per collective: 2 edges a rank (issue 39), not R(R - 1)
grep -Eq "[1-9][0-9]* collective \([1-9]" "$tmp/ddp.txt" ||
	fail "ddp: no collective edges"

# no finding listed with no saving (its time beside a saving of 0): in a note instead
"$st" explain "$samples"/pytorch-ddp.rank0.stb "$samples"/pytorch-ddp.rank1.stb --section findings --format csv \
	> "$tmp/f.csv" 2> "$tmp/notes" || fail "explain ddp findings"
awk -F, 'NR > 1 && $(NF-1) + 0 <= 0 { exit 1 }' "$tmp/f.csv" || fail "ddp: a finding with no saving: $(cat "$tmp/f.csv")"
grep -q "^no saving predicted: [a-z]" "$tmp/notes" || fail "ddp: no note of what saves nothing"

# the replay's error: as recorded 0, with typical delays a number, per step and for the run
"$st" explain "$samples"/small-bf16-train.stb --section replay --format csv > "$tmp/rp.csv" 2> "$tmp/err" ||
	fail "explain --section replay: $(cat "$tmp/err")"
awk -F, '$1 == "recorded delays" { r = ($4 == 0) } $1 == "typical delays" { t = ($3 > 0 && $4 < 3 && $4 > -3) }
	END { exit !(r && t) }' "$tmp/rp.csv" || fail "replay error: $(cat "$tmp/rp.csv")"
grep -q "^replay with typical delays: [0-9.]* ms vs measured [0-9.]* ms, error [-+][0-9.]*% (per step: mean" "$tmp/err" ||
	fail "no replay error note: $(cat "$tmp/err")"

# ranks=N: a single GPU's step on 2 and 8 GPUs, from a table
cat > "$tmp/ar.csv" <<'CSV'
size,bytes,dtype,ranks,rank,iters,mean_us,min_us,max_us,std_us,algbw_gbs,busbw_gbs,check
1 MiB,1048576,f32,2,all,100,58.2,34.1,156.4,26.2,18.02,18.02,ok
100 MiB,104857600,f32,2,all,100,800.0,790.0,810.0,5.0,131.0,131.0,ok
CSV
"$st" explain "$samples"/small-bf16-train.stb --allreduce "$tmp/ar.csv" --what-if ranks=2 --what-if ranks=8 --naive \
	--section what_if --format csv > "$tmp/r.csv" 2> "$tmp/err" || fail "ranks=N: $(cat "$tmp/err")"
awk -F, 'NR == 2 { two = $4; m = $2 } NR == 3 { eight = $4 } END { exit !(two > m && eight > two) }' "$tmp/r.csv" ||
	fail "ranks=N: naive all-reduce adds no time, or 8 GPUs no more than 2: $(cat "$tmp/r.csv")"

# the table from a recorded run's collectives (comm's CSV)
"$st" comm "$samples"/pytorch-ddp.rank0.stb "$samples"/pytorch-ddp.rank1.stb --section collectives --format csv \
	> "$tmp/rec.csv" 2>/dev/null || fail "comm csv"
"$st" explain "$samples"/small-bf16-train.stb --allreduce "$tmp/rec.csv" --what-if ranks=2 --section what_if --format csv \
	> "$tmp/r.csv" 2> "$tmp/err" || fail "ranks=N from a recorded run: $(cat "$tmp/err")"
awk -F, 'NR == 2 { exit !($4 > $2) }' "$tmp/r.csv" || fail "ranks=N from a recorded run adds no time: $(cat "$tmp/r.csv")"

# usage errors: one line, status 129 (a bad rule) or 1 (what the run lacks)
"$st" explain "$samples"/small-bf16-train.stb --what-if faster > /dev/null 2> "$tmp/err"
[ $? = 129 ] || fail "bad rule: status not 129 (usage)"
grep -q "no such rule" "$tmp/err" || fail "bad rule: $(cat "$tmp/err")"
"$st" explain "$samples"/small-bf16-train.stb --what-if ranks=2 > /dev/null 2> "$tmp/err"
[ $? = 1 ] || fail "ranks without a table: status not 1"
grep -q "needs --allreduce" "$tmp/err" || fail "ranks without a table: $(cat "$tmp/err")"
echo "no,table" > "$tmp/bad.csv"
"$st" explain "$samples"/small-bf16-train.stb --what-if ranks=2 --allreduce "$tmp/bad.csv" > /dev/null 2> "$tmp/err"
grep -q "not an all-reduce table" "$tmp/err" || fail "bad table: $(cat "$tmp/err")"
check_done explain.cli
