#!/bin/sh
# contention.sh STEPTRACE SOURCE OUTDIR (label gpu2): `bench contention` on
# two GPUs. Its table has a row per computation (three products, one
# memory-bound kernel), each with times alone and beside the all-reduces
# and a ratio above 0; rank 0 alone prints; the calibration it writes
# (--calibration) has explain's columns and `explain --what-if ranks=2
# --contention FILE` takes it. Skipped (77) without two GPUs. The table and
# the calibration stay in OUTDIR.
set -u
st=$1
src=$2
out=$3
. "$(dirname "$0")/../lib/check.sh"
two_gpus "$out"

timeout 600 "$st" bench contention --nproc 2 --sizes 25MiB --iters 5 --format csv \
	--calibration "$out/calibration.csv" >"$out/contention.csv" 2>"$tmp/err" ||
	fail "bench contention --nproc 2: $(cat "$tmp/err")"
head -n 1 "$out/contention.csv" | grep -q '^size,bytes,dtype,ranks,computation,kind,rank,alone_us,beside_us,ratio,' ||
	fail "the table's header: $(head -n 1 "$out/contention.csv")"
# a row per computation at 25 MiB of f32 on 2 ranks, times and ratio above 0
awk -F, 'NR > 1 && $1 == "25 MiB" && $3 == "f32" && $4 == 2 && $8 > 0 && $9 > 0 && $10 > 0 && $11 > 0 { n++ }
	NR > 1 && $6 == "product" { p++ } NR > 1 && $6 == "memory" { m++ }
	END { exit !(n == 4 && p == 3 && m == 1) }' "$out/contention.csv" ||
	fail "want 4 rows (3 products, 1 memory-bound) with times and ratios above 0: $(cat "$out/contention.csv")"

# the calibration: explain's columns, a row, a contention of at least 1
awk -F, 'NR == 1 { ok = $0 == "contention,call_us,kernels_beside,calls" }
	NR == 2 { exit !(ok && $1 >= 1 && $2 > 0 && $3 == 15 && $4 > 5) } END { if (NR < 2) exit 1 }' \
	"$out/calibration.csv" || fail "the calibration: $(cat "$out/calibration.csv")"
"$st" explain "$src/samples/small-bf16-train.stb" --allreduce "$src/docs/multi/st-allreduce-h200x2.csv" \
	--what-if ranks=2 --contention "$out/calibration.csv" --section what_if >"$tmp/what" 2>"$tmp/err" ||
	fail "explain --contention: $(cat "$tmp/err")"
grep -q "$out/calibration.csv" "$tmp/what" || fail "explain's note does not name the calibration: $(cat "$tmp/what")"

# a path it cannot write fails before the measurement, and nothing is left
timeout 120 "$st" bench contention --nproc 2 --sizes 1MiB --iters 1 --calibration "$tmp/no/such/dir/cal.csv" \
	>/dev/null 2>"$tmp/err" && fail "an unwritable --calibration accepted"
grep -q "^error: rank 0: " "$tmp/err" || fail "an unwritable --calibration: $(cat "$tmp/err")"

check_done gpu2_contention
