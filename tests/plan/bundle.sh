#!/bin/sh
# bundle.sh TEST_PLAN STEPTRACE SAMPLE: `steptrace plan RUN.stb` on the
# synthetic run of test_plan.c (rank 1 of 4; at its memory peak W 4 GB,
# G 4 GB, O 8 GB, A 3 GB, R 0.5 GB; 2e9 FLOPs in 1 ms; batch 8 × 2048,
# d_model 768, d_ff 3072, 12 blocks, bf16) and on a real sample,
# samples/small-bf16-train.stb, with the arithmetic beside each number.
set -u
gen=$1
st=$2
sample=$3
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/csv.sh"

"$gen" --write "$tmp/run.stb" || fail "test_plan --write failed"

want() {  # want WHAT GOT EXPECTED
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}
# cell BUNDLE TABLE ROW COLUMN ARGS...: one cell of the CSV (columns numbered from 1, quotes honoured)
cell() {
	b=$1
	t=$2
	q=$3
	c=$4
	shift 4
	"$st" plan "$b" --section "$t" --format csv "$@" 2>/dev/null | csv_cell "$q" "$c"
}
run=$tmp/run.stb

# what plan takes from it
want "P" "$(cell "$run" bundle 'Parameters P' 2)" 1000000000
want "W" "$(cell "$run" bundle 'Weights W' 2)" 4.00
want "O" "$(cell "$run" bundle 'Optimizer state O' 2)" 8.00
want "A" "$(cell "$run" bundle 'Activations A' 2)" 3.00
want "R" "$(cell "$run" bundle 'Other R' 2)" 0.50
want "peak" "$(cell "$run" bundle 'Memory peak' 2)" 19.50
want "bytes per parameter" "$(cell "$run" bundle 'State bytes per parameter' 2)" 16.00
# 2e9 FLOPs / 1 ms = 2 TFLOP/s (the warm-up step's 2 ms kernel not counted)
want "achieved" "$(cell "$run" bundle 'Achieved' 2)" 2.00
want "tokens" "$(cell "$run" bundle 'Tokens per step' 2)" 16384

# parallel, D = 4 (its world size): DP 4 + 4 + 8 = 16 GB + A 3 + R 0.5 = 19.50;
# ZeRO-1 4 + 4 + 8/4 = 10, 13.50; ZeRO-2 4 + 12/4 = 7, 10.50; ZeRO-3 16/4 = 4, 7.50
want "dp" "$(cell "$run" parallel DP 2) $(cell "$run" parallel DP 5)" "16.00 19.50"
want "zero-1" "$(cell "$run" parallel ZeRO-1 2) $(cell "$run" parallel ZeRO-1 5)" "10.00 13.50"
want "zero-2" "$(cell "$run" parallel ZeRO-2 2) $(cell "$run" parallel ZeRO-2 5)" "7.00 10.50"
want "zero-3" "$(cell "$run" parallel ZeRO-3/FSDP 2) $(cell "$run" parallel ZeRO-3/FSDP 5)" "4.00 7.50"
"$st" plan "$run" --section parallel 2>&1 | grep -q "D = 4 (the bundle's world size)" ||
	fail "parallel: D is not said to be the world size"
# --dp 2 replaces it: ZeRO-3 16/2 = 8 GB
want "zero-3 over --dp 2" "$(cell "$run" parallel ZeRO-3/FSDP 2 --dp 2)" 8.00
# TP 2: A × (768 + 1536)/(768 + 3072) = 3 × 0.6 = 1.80 GB; the state 16/2 = 8 GB for DP
want "tp 2 act" "$(cell "$run" parallel 'act (in each row)' 3 --tp 2)" 1.80
want "tp 2 dp state" "$(cell "$run" parallel DP 2 --tp 2)" 8.00

# comm over D = 4, inside a node of 8 (T·D = 4), at NVLink's 450 GB/s: DP
# 2·3/4 × G = 6e9 B = 6.00 GB, 13.33 ms; ZeRO-3 3/4 × (2·W + G) = 9e9 B = 9.00 GB, 20.00 ms
want "dp comm" "$(cell "$run" comm DP 3) $(cell "$run" comm DP 5)" "6.00 13.33"
"$st" plan "$run" --section comm | grep -Eq '^ZeRO-3/FSDP .* 9\.00 +NVLink 4, 450\.00 GB/s +20\.00 ' || fail "zero-3 comm: no 9.00 GB in 20.00 ms"
# T = 2, PP = 2, M = 8: DP of the T·PP shard 6e9/4 = 1.50 GB; TP (a full
# model: four all-reduces per layer, Megatron §3) 12/2 × 4 × 2·1/2 × 8 × 2048 × 768 × 2 B
# = 24 × 25,165,824 = 603,979,776 B = 0.60 GB, at 450e9 1.34 ms; PP 2 × 25,165,824
# = 50,331,648 B = 0.05 GB, T·D·PP = 16 > 8 crosses nodes: at 50e9 (InfiniBand
# 400 Gb/s) 1.01 ms; bubble 1/(8 + 1) = 0.1111
tpp="--tp 2 --pp 2 --microbatches 8"
# shellcheck disable=SC2086
want "dp comm of a shard" "$(cell "$run" comm DP 3 $tpp)" 1.50
# shellcheck disable=SC2086
want "tp comm" "$(cell "$run" comm TP 3 $tpp) $(cell "$run" comm TP 5 $tpp)" "0.60 1.34"
# shellcheck disable=SC2086
want "pp comm" "$(cell "$run" comm PP 3 $tpp) $(cell "$run" comm PP 5 $tpp)" "0.05 1.01"
# shellcheck disable=SC2086
want "bubble" "$(cell "$run" comm 'PP bubble' 6 $tpp)" 0.1111

# fsdp: (W + G + O)/N + A/2 + A/(2N) + R; on 7 GB devices ⌈(16 + 1.5) / (7 − 1.5 − 0.5)⌉ = 4
want "fsdp on 7 GB" "$(cell "$run" fsdp 'Smallest N that fits' 2 --memory 7000000000)" 4
want "fsdp R" "$(cell "$run" fsdp 'Other (unsharded)' 2)" 0.50

# compute: the measured rate beside C; X = 4, Y = 2 on H100 inside a node (450e9):
# α measured = 2e12 / 450e9 = 4.44; a run of the built-in step: k = 3 (SwiGLU);
# overlapped 4.444/2 = 2.22; not overlapped [4.444/2] / [1 − 2·4.444·2/(3·3072)]
# = 2.2222 / 0.998071 = 2.23
xy="--fsdp 4 --tp 2"
# shellcheck disable=SC2086
want "C measured" "$(cell "$run" compute 'C measured' 2 $xy)" 2.00
# shellcheck disable=SC2086
want "alpha measured" "$(cell "$run" compute 'α_X measured' 2 $xy)" 4.44
# shellcheck disable=SC2086
want "k of the built-in step" "$(cell "$run" compute 'k (FFN matrices)' 2 $xy)" 3
# shellcheck disable=SC2086
want "bound at C measured" "$(cell "$run" compute 'Tokens per device bound at C measured (overlapped)' 2 $xy) $(cell "$run" compute 'Tokens per device bound at C measured (not overlapped)' 2 $xy)" \
	"2.22 2.23"
# 2 / 725 TFLOP/s of the device's recorded bf16 peak = 0.28%
# shellcheck disable=SC2086
want "of the peak" "$(cell "$run" compute "C measured of the device's peak" 2 $xy)" 0.28

# options: the bundle gives P; --ffn-only or --model with it is bad usage
"$st" plan "$run" --ffn-only >/dev/null 2>&1
[ $? = 129 ] || fail "--ffn-only with a bundle: want exit 129"
"$st" plan "$run" --model small >/dev/null 2>&1
[ $? = 129 ] || fail "--model with a bundle: want exit 129"
# --d-model replaces the bundle's: TP 12 × 4 × 1 × 8 × 2048 × 1024 × 2 B = 1,610,612,736 B = 1.61 GB
want "--d-model replaces" "$(cell "$run" comm TP 3 --tp 2 --d-model 1024)" 1.61

# The sample: small (128,625,408 parameters), bf16, one H200. At its model
# allocator's peak W 514,501,632 B (4 B per parameter), G the same, O
# 1,029,003,264 B: 16 B per parameter; 2.58 GB in all (2.41 GiB, as
# `steptrace memory` says); 381.25 GFLOP in 3.336 ms of kernels per measured
# step (the sum of the kernels' end - start over steps 1 and 2 of `steptrace
# export --format sqlite`, 6,672,317 ns, halved) = 114.28 TFLOP/s
want "sample P" "$(cell "$sample" bundle 'Parameters P' 2)" 128625408
want "sample W" "$(cell "$sample" bundle 'Weights W' 2)" 0.51
want "sample bytes per parameter" "$(cell "$sample" bundle 'State bytes per parameter' 2)" 16.00
want "sample peak" "$(cell "$sample" bundle 'Memory peak' 2)" 2.58
want "sample achieved" "$(cell "$sample" bundle 'Achieved' 2)" 114.28
want "sample C measured" "$(cell "$sample" compute 'C measured' 2)" 114.28
# DP over 8: 2·7/8 × 514,501,632 B = 900,377,856 B = 0.90 GB, / 450e9 = 2.00 ms
want "sample dp comm" "$(cell "$sample" comm DP 3 --dp 8) $(cell "$sample" comm DP 5 --dp 8)" "0.90 2.00"
# ZeRO-3 over 8: (4 + 4 + 8 B)·P / 8 = 257,250,816 B = 0.26 GB, + A 0.48 + R 0.04 = 0.78 GB
want "sample zero-3" "$(cell "$sample" parallel ZeRO-3/FSDP 2 --dp 8) $(cell "$sample" parallel ZeRO-3/FSDP 5 --dp 8)" \
	"0.26 0.78"
for f in table json md; do
	"$st" plan "$sample" --format $f >"$tmp/s.$f" 2>&1 || fail "plan SAMPLE --format $f failed"
	grep -q '114.28' "$tmp/s.$f" || fail "$f: no achieved rate"
done

check_done plan.bundle
