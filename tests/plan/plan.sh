#!/bin/sh
# plan.sh STEPTRACE: `steptrace plan` against the seeds' answers ("4D
# Parallelism", XXL) and against values worked out by hand below, with
# their arithmetic beside them.
set -u
st=$1
. "$(dirname "$0")/../lib/check.sh"

xxl="--d-model 16384 --d-ff 53248 --blocks 126 --ffn-only"

# value TABLE QUANTITY [ARGS...]: the Value cell of a row of one table, from the CSV
value() {
	t=$1
	q=$2
	shift 2
	# shellcheck disable=SC2086
	"$st" plan $xxl --section "$t" --format csv "$@" 2>/dev/null |
		awk -F, -v q="$q" '$1 == q { print $2 }'
}

want() {  # want WHAT GOT EXPECTED
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}

# (a) the seeds: 126 × 2 × 16384 × 53248 = 219,848,638,464 parameters;
# 4 B each = 879.39 GB; Adam 8 B = 1,758.79 GB; 16 B = 3,517,578,215,424 B,
# which is 3,517.58 GB (the seeds' 3,517.57 adds the rounded parts);
# 3,517.58 / 80 = 43.97: 44 H100s
# shellcheck disable=SC2086
"$st" plan $xxl --format csv >"$tmp/a.csv" 2>"$tmp/a.err" || fail "plan --format csv failed"
row() { awk -F, -v q="$1" '$1 == q { print $2 }' "$tmp/a.csv"; }
want "parameters" "$(row 'Parameters P')" 219848638464
want "master weights" "$(row 'Master weights (FP32)')" 879.39
want "gradients" "$(row 'Accumulated gradients (FP32)')" 879.39
want "adam" "$(row 'Adam m and v (FP32)')" 1758.79
want "total" "$(row Total)" 3517.58
want "devices" "$(row Devices)" 44
grep -q '16 B × P = 3,517,578,215,424 B' "$tmp/a.csv" || fail "the total's formula has not its bytes"
grep -q '⌈total / 80 GB⌉ = ⌈43.97⌉' "$tmp/a.csv" || fail "the devices' formula is not printed"
grep -q '3,517.58 GB = 44 H100 80GB' "$tmp/a.err" || fail "no one-line answer to (a): $(cat "$tmp/a.err")"
# the seeds' 3,517.57 = 879.39 + 879.39 + 1,758.79, the parts rounded first
grep -q 'the parts as printed add up to 3,517.57 GB' "$tmp/a.err" || fail "no note of the seeds' 3,517.57"
# shellcheck disable=SC2086
"$st" plan $xxl --format json >"$tmp/a.json" || fail "plan --format json failed"
grep -q '"Value": 219848638464' "$tmp/a.json" || fail "json: no parameter count"
for f in table md; do
	# shellcheck disable=SC2086
	"$st" plan $xxl --format $f >"$tmp/a.$f" || fail "plan --format $f failed"
	grep -q '3,517.58' "$tmp/a.$f" || fail "$f: no total"
done

# The full model's count is model_config_params': small (768, 3072, 12
# layers, vocab 10000) = 2·10000·768 + 12·(4·768² + 3·768·3072 + 2·768) + 768 = 128,625,408
params() {
	"$st" plan "$@" --format csv 2>/dev/null | awk -F, '$1 == "Parameters P" { print $2 }'
}
want "small's parameters" "$(params --d-model 768 --d-ff 3072 --blocks 12)" 128625408
want "--model small" "$(params --model small)" 128625408
# 2.7B: 2·10000·2560 + 32·(4·2560² + 3·2560·10240 + 2·2560) + 2560 = 3,406,809,600
want "--model 2.7B" "$(params --model 2.7B)" 3406809600
# a preset's sizes as the seeds' FFN-only blocks: 12 × 2 × 768 × 3072 = 56,623,104
want "--model small --ffn-only" "$(params --model small --ffn-only)" 56623104
"$st" plan --model huge >/dev/null 2>&1
[ $? = 129 ] || fail "--model huge: want exit 129"

# (b) on a TPU v5p (95 GB), no activations: N ≥ 3,517.58 / 95 = 37.03: 38,
# 3,517,578,215,424 / 38 = 92,567,847,774 B = 92.57 GB
want "v5p smallest N" "$(value fsdp 'Smallest N that fits' --chip tpu-v5p)" 38
want "v5p per device" "$(value fsdp 'Total per device' --chip tpu-v5p)" 92.57
# With --batch 1 --seq 2048: A = 126 × 1 × 2048 × (16384 + 53248) × 2 B
# = 35,936,796,672 B, A/2 = 17,968,398,336 B.
# N ≥ (3,517,578,215,424 + 17,968,398,336) / (95e9 − 17,968,398,336)
#   = 3,535,546,613,760 / 77,031,601,664 = 45.90: 46
# at 46: 76,469,091,640 + 17,968,398,336 + 390,617,355 = 94,828,107,331 B = 94.83 GB
# at 45: 78,168,404,787 + 17,968,398,336 + 399,297,741 = 96,536,100,864 B > 95 GB
act="--chip tpu-v5p --batch 1 --seq 2048"
# shellcheck disable=SC2086
want "activations" "$(value fsdp 'Activations A (unsharded)' $act)" 35.94
# shellcheck disable=SC2086
want "smallest N with activations" "$(value fsdp 'Smallest N that fits' $act)" 46
# shellcheck disable=SC2086
want "per device at 46" "$(value fsdp 'Total per device' $act)" 94.83
# shellcheck disable=SC2086
want "fits at 45" "$(value fsdp 'Fits' $act --fsdp 45)" no
# --fsdp 64: 54,962,159,616 + 17,968,398,336 + 280,756,224 = 73,211,314,176 B
# shellcheck disable=SC2086
want "per device at 64" "$(value fsdp 'Total per device' $act --fsdp 64)" 73.21
# the unsharded half alone above the memory: 1 × 8192 tokens give A/2 = 71.87 GB,
# over a 64 GB device no N fits
# shellcheck disable=SC2086
want "no N fits" "$(value fsdp 'Smallest N that fits' --batch 1 --seq 8192 --memory 64GB)" ""

# (c) the seeds: v5p, α = 4.6e14 / 1.8e11 = 2,555.56; X = 16, Y = 4, M_X = 2,
# M_Y = 1. The Scaling Book (Training, "Mixed FSDP and Tensor Parallelism"):
# compute-bound when T_math ≥ T_FSDP + T_TP, i.e.
# B/N ≥ [α/(M_X·Y)] / [1 − α·Y/(M_Y·F)] = (2,555.56/8) / (1 − 2,555.56·4/53,248)
#     = 319.44 / (1 − 0.191974) = 319.44 / 0.808026 = 395.34: 396 tokens per
# device, 396 × 16 × 4 = 25,344 overall; TP: Y < 53,248 / 2,555.56 = 20.84.
# Were the two collectives to overlap each other too (max, not the Book's
# sum): ⌈319.44⌉ = 320, 20,480 overall.
c="--chip tpu-v5p --fsdp 16 --tp 4 --mesh-x 2 --mesh-y 1"
# shellcheck disable=SC2086
want "alpha" "$(value compute 'α' $c)" 2555.56
# shellcheck disable=SC2086
want "v5p bound" "$(value compute 'FSDP bound on tokens per device' $c)" 319.44
# shellcheck disable=SC2086
want "v5p TP share" "$(value compute 'TP share of T_math' $c)" 0.19
# shellcheck disable=SC2086
want "v5p tokens per device bound" "$(value compute 'Tokens per device bound' $c)" 395.34
# shellcheck disable=SC2086
want "v5p per-device batch" "$(value compute 'Per-device batch' $c)" 396
# shellcheck disable=SC2086
want "v5p overall batch" "$(value compute 'Overall batch' $c)" 25344
# shellcheck disable=SC2086
want "v5p overlapped" "$(value compute 'Per-device batch if collectives overlap' $c)" 320
# shellcheck disable=SC2086
want "v5p TP bound" "$(value compute 'TP bound on Y' $c)" 20.84
# the Scaling Book's floor with the optimal X: 4·α² / (F·M_X·M_Y)
# = 4 × 2,555.56² / (53,248 × 2 × 1) = 245.30 (its 2·2550²/F at M_X = 2, M_Y = 1)
# shellcheck disable=SC2086
want "v5p optimum" "$(value compute 'FSDP bound with the optimal X' $c)" 245.30
# H100: α = 989e12 / 450e9 = 2,197.78; X = 8, Y = 8: 2,197.78 / 8 = 274.72,
# α·Y/F = 17,582.22 / 53,248 = 0.330195: 274.72 / 0.669805 = 410.15:
# 411 per device, 411 × 64 = 26,304
c="--fsdp 8 --tp 8"
# shellcheck disable=SC2086
want "h100 per-device batch" "$(value compute 'Per-device batch' $c)" 411
# shellcheck disable=SC2086
want "h100 overall batch" "$(value compute 'Overall batch' $c)" 26304
# X = 1, Y = 1: no collective, compute-bound at any batch
want "no collectives" "$(value compute 'Per-device batch' --fsdp 1)" 0
# Y = 32 > 53,248 / 2,197.78 = 24.23: TP is communication-bound at any batch
want "h100 Y above the TP bound" "$(value compute 'Per-device batch' --fsdp 8 --tp 32)" ""

# parallel: memory per device by parallelism, FP32 weights 4 B + gradients
# 4 B + Adam 8 B per parameter, P' = P/(T·PP), D = --dp or --fsdp.
# cell TABLE ROW COLUMN ARGS...: one cell of the CSV (columns numbered from 1)
cell() {
	t=$1
	q=$2
	c=$3
	shift 3
	# shellcheck disable=SC2086
	"$st" plan $xxl --section "$t" --format csv "$@" 2>/dev/null |
		awk -F, -v q="$q" -v c="$c" '$1 == q { print $c }'
}
# DP on 8 H100s: every device 16·P = 3,517,578,215,424 B = 3,517.58 GB > 80 GB
want "dp 8 state" "$(cell parallel DP 2 --dp 8)" 3517.58
want "dp 8 fits" "$(cell parallel DP 5 --dp 8)" no
# ZeRO-1 over 8: 8·P + 8·P/8 = 9·P = 1,978,637,746,176 B = 1,978.64 GB
want "zero-1 over 8" "$(cell parallel ZeRO-1 2 --dp 8)" 1978.64
# ZeRO-2 over 8: 4·P + 12·P/8 = 5.5·P = 1,209,167,511,552 B = 1,209.17 GB
want "zero-2 over 8" "$(cell parallel ZeRO-2 2 --dp 8)" 1209.17
# ZeRO-3 over 8: 16·P/8 = 2·P = 439,697,276,928 B = 439.70 GB, no fit
want "zero-3 over 8" "$(cell parallel ZeRO-3/FSDP 2 --dp 8)" 439.70
want "zero-3 over 8 fits" "$(cell parallel ZeRO-3/FSDP 5 --dp 8)" no
# ZeRO-3 over 64 (--fsdp): 16·P/64 = 54,962,159,616 B = 54.96 GB, fits 80 GB
want "zero-3 over 64" "$(cell parallel ZeRO-3/FSDP 4 --fsdp 64)" 54.96
want "zero-3 over 64 fits" "$(cell parallel ZeRO-3/FSDP 5 --fsdp 64)" yes
# TP 4 × FSDP 16: P' = P/4 = 54,962,159,616; ZeRO-3 16·P'/16 = P' = 54.96 GB;
# DP 16·P' = 879,394,553,856 B = 879.39 GB
tf="--tp 4 --fsdp 16"
# shellcheck disable=SC2086
want "tp 4 fsdp 16 zero-3" "$(cell parallel ZeRO-3/FSDP 2 $tf)" 54.96
# shellcheck disable=SC2086
want "tp 4 fsdp 16 dp" "$(cell parallel DP 2 $tf)" 879.39
# with --batch 1 --seq 2048: act = 126 × 1 × 2048 × (16384 + 53248/4) × 2 B
# = 258,048 × 29,696 × 2 = 15,325,986,816 B = 15.33 GB;
# total 54,962,159,616 + 15,325,986,816 = 70,288,146,432 B = 70.29 GB, fits
# shellcheck disable=SC2086
want "tp 4 activations" "$(cell parallel 'act (in each row)' 3 $tf --batch 1 --seq 2048)" 15.33
# shellcheck disable=SC2086
want "tp 4 fsdp 16 total" "$(cell parallel ZeRO-3/FSDP 4 $tf --batch 1 --seq 2048)" 70.29
# TP 2 × PP 2, D = 4: P' = P/4 = 54,962,159,616; ZeRO-1 8·P' + 8·P'/4 = 10·P'
# = 549,621,596,160 B; act = 126/2 × 2048 × (16384 + 26624) × 2 B
# = 129,024 × 43,008 × 2 = 11,098,128,384 B = 11.10 GB; total 560,719,724,544 B = 560.72 GB
tpp="--tp 2 --pp 2 --dp 4 --batch 1 --seq 2048"
# shellcheck disable=SC2086
want "pp 2 activations" "$(cell parallel 'act (in each row)' 3 $tpp)" 11.10
# shellcheck disable=SC2086
want "pp 2 zero-1 total" "$(cell parallel ZeRO-1 4 $tpp)" 560.72
# --dp and --fsdp disagreeing: refused
"$st" plan $xxl --dp 8 --fsdp 16 >/dev/null 2>&1
[ $? = 129 ] || fail "--dp 8 --fsdp 16: want exit 129"
"$st" plan $xxl --pp 127 >/dev/null 2>&1
[ $? = 129 ] || fail "--pp above the blocks: want exit 129"

# comm: D = 8 on H100 (450e9 B/s): all-reduce 2·7/8 × 2 B × P = 3.5·P
# = 769,470,234,624 B = 769.47 GB; / 450e9 = 1.70993 s = 1,709.93 ms
want "all-reduce GB" "$(cell comm DP 3 --dp 8)" 769.47
want "all-reduce ms" "$(cell comm DP 4 --dp 8)" 1709.93
want "zero-1 as DP" "$(cell comm ZeRO-1 4 --dp 8)" 1709.93
# ZeRO-3: 3·7/8 × 2 B × P = 5.25·P = 1,154,205,351,936 B = 1,154.21 GB;
# / 450e9 = 2.56490 s = 2,564.90 ms (its collectives cell holds a comma: read the text table)
# shellcheck disable=SC2086
"$st" plan $xxl --dp 8 --section comm >"$tmp/comm.txt" 2>&1 || fail "comm failed"
grep -Eq '^ZeRO-3/FSDP .* 1,154\.21 +2,564\.90 ' "$tmp/comm.txt" || fail "zero-3 comm: no 1,154.21 GB in 2,564.90 ms"
# D = 1: nothing moves
want "d 1 all-reduce" "$(cell comm DP 3)" 0.00
# shellcheck disable=SC2086
"$st" plan $xxl --dp 8 --section comm 2>&1 | grep -q 'bus-bandwidth lower bounds' || fail "comm: no lower-bound note"

# TP and PP (Megatron), T = 4, PP = 2, one sequence of 2,048 tokens, M = 8:
# TP: blocks/PP × 4 × 2·(T−1)/T × B·S·d_model × 2 B = 63 × 4 × 1.5 × 2048 × 16384 × 2
#   = 378 × 67,108,864 = 25,367,150,592 B = 25.37 GB; / 450e9 = 56.37 ms
# PP: 2 × B·S·d_model × 2 B = 134,217,728 B = 0.13 GB, 0.30 ms; bubble 1/(8 + 1) = 0.1111
# DP over 8 of P' = P/8: 2·7/8 × 2 B × 27,481,079,808 = 96,183,779,328 B = 96.18 GB
tpc="--tp 4 --pp 2 --dp 8 --batch 1 --seq 2048 --microbatches 8"
# shellcheck disable=SC2086
want "tp GB" "$(cell comm TP 3 $tpc)" 25.37
# shellcheck disable=SC2086
want "tp ms" "$(cell comm TP 4 $tpc)" 56.37
# shellcheck disable=SC2086
want "pp GB ms" "$(cell comm PP 3 $tpc) $(cell comm PP 4 $tpc)" "0.13 0.30"
# shellcheck disable=SC2086
want "bubble" "$(cell comm 'PP bubble' 5 $tpc)" 0.1111
# shellcheck disable=SC2086
want "dp over 8 of a T·PP shard" "$(cell comm DP 3 $tpc)" 96.18
# shellcheck disable=SC2086
"$st" plan $xxl $tpc --section comm 2>&1 | grep -q 'pipeline bubble is 11.11% of a step at PP = 2, M = 8' ||
	fail "comm: no bubble note"
# without --batch and --seq no TP or PP bytes are counted
want "tp without batch" "$(cell comm TP 3 --tp 4)" ""

# A small case: d_model 1024, d_ff 4096, 2 blocks, FFN-only: P = 2 × 2 × 1024 × 4096
# = 16,777,216; D = 4, 150,000,000 B devices, W_ici 1e9 B/s:
# DP 16·P = 268,435,456 B (0.27 GB, no); ZeRO-1 10·P = 167,772,160 (0.17, no);
# ZeRO-2 4·P + 3·P = 117,440,512 (0.12, yes); ZeRO-3 4·P = 67,108,864 (0.07, yes)
# all-reduce 2·3/4 × 2 × P = 3·P = 50,331,648 B: 50.33 ms; ZeRO-3 4.5·P = 75,497,472 B (0.08 GB): 75.50 ms
small="--d-model 1024 --d-ff 4096 --blocks 2 --ffn-only --dp 4 --memory 150000000 --link-bw 1e9"
scell() {
	# shellcheck disable=SC2086
	"$st" plan $small --section "$1" --format csv 2>/dev/null | awk -F, -v q="$2" -v c="$3" '$1 == q { print $c }'
}
want "small dp" "$(scell parallel DP 2) $(scell parallel DP 5)" "0.27 no"
want "small zero-1" "$(scell parallel ZeRO-1 2) $(scell parallel ZeRO-1 5)" "0.17 no"
want "small zero-2" "$(scell parallel ZeRO-2 2) $(scell parallel ZeRO-2 5)" "0.12 yes"
want "small zero-3" "$(scell parallel ZeRO-3/FSDP 2) $(scell parallel ZeRO-3/FSDP 5)" "0.07 yes"
want "small all-reduce ms" "$(scell comm DP 4)" 50.33
# shellcheck disable=SC2086
"$st" plan $small --section comm | grep -Eq '^ZeRO-3/FSDP .* 0\.08 +75\.50 ' || fail "small zero-3 comm: no 75.50 ms"

# usage errors
# shellcheck disable=SC2086
"$st" plan --d-model 16384 --d-ff 53248 >/dev/null 2>"$tmp/err"
[ $? = 129 ] || fail "no --blocks: want exit 129"
grep -q "needs the model's sizes" "$tmp/err" || fail "no --blocks: $(cat "$tmp/err")"
"$st" plan $xxl --batch 4 >/dev/null 2>&1
[ $? = 129 ] || fail "--batch without --seq: want exit 129"
"$st" plan --d-model 768 --d-ff 3072 --blocks 12 --batch 4 --seq 128 >/dev/null 2>&1
[ $? = 129 ] || fail "activations of a full model: want exit 129"
# a bundle gives P: --ffn-only (the seeds' count) with one is bad usage, before reading it
"$st" plan $xxl x.stb >/dev/null 2>&1
[ $? = 129 ] || fail "--ffn-only with a bundle: want exit 129"
# one bundle at most; a missing one fails to load (exit 1)
"$st" plan a.stb b.stb >/dev/null 2>&1
[ $? = 129 ] || fail "two bundles: want exit 129"
"$st" plan "$tmp/none.stb" >/dev/null 2>&1
[ $? = 1 ] || fail "a missing bundle: want exit 1"
"$st" plan --d-model 64 --d-ff 256 --blocks 2 --pp 2 --microbatches 4 --section comm >/dev/null 2>&1 ||
	fail "--microbatches with --pp failed"
"$st" plan --d-model 64 --d-ff 256 --blocks 2 --microbatches 4 >/dev/null 2>&1
[ $? = 129 ] || fail "--microbatches without --pp: want exit 129"

# 2^31−1 everywhere: over 2^53 parameters, refused rather than wrapped
"$st" plan --d-model 2147483647 --d-ff 2147483647 --blocks 2147483647 --ffn-only >/dev/null 2>"$tmp/err"
[ $? = 129 ] || fail "an uncountable model: want exit 129"
grep -q 'over 2^53 parameters' "$tmp/err" || fail "an uncountable model: $(cat "$tmp/err")"

check_done plan.cli
