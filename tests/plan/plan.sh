#!/bin/sh
# plan.sh STEPTRACE: `steptrace plan` against the seeds' answers ("4D
# Parallelism", XXL), the published numbers of the papers it follows and
# values worked out by hand, each with its arithmetic and its source beside
# it. The sources:
#   [Book]   How to Scale Your Model (the Scaling Book), "How to Parallelize a
#            Transformer for Training": its section "Combining FSDP and
#            Tensor Parallelism" (current text: T_comms = max(T_FSDP, T_TP),
#            floor B/N > α²/(M_X·M_Y·F)); its early-2025 text, section
#            "Mixed FSDP and Tensor Parallelism" (jax-ml/scaling-book at
#            0c5b588, Feb 2025: T_FSDP + T_TP < T_math, floor 4α²/(M_X·M_Y·F));
#            its "Tensor Parallelism" section and closing table (TP moves
#            4BD + 4BD bytes per layer: one AllGather + ReduceScatter, an
#            all-reduce, forward and one backward).
#   [ZeRO]   Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training
#            Trillion Parameter Models", §3.1 (mixed-precision Adam: 2Ψ + 2Ψ
#            + KΨ, K = 12), §5.1 and Figure 1 (Ψ = 7.5B, N_d = 64: 120 GB,
#            P_os 31.4 GB, P_os+g 16.6 GB, P_os+g+p 1.9 GB), §7.2 (DP and
#            P_os+g move 2Ψ, P_os+g+p 3Ψ).
#   [Megatron] Shoeybi et al., "Megatron-LM", §3 and its Figure 3: the MLP
#            block's f and g, one all-reduce in forward and one in backward;
#            a transformer layer (attention + MLP) two and two.
#   [Narayanan] Narayanan et al. 2021, "Efficient Large-Scale Language Model
#            Training on GPU Clusters Using Megatron-LM", §2.2.1: GPipe stashes
#            the activations of all m micro-batches, 1F1B (PipeDream-Flush) at
#            most p; the bubble (p−1)/m of the ideal time, (p−1)/(m+p−1) of
#            the step.
#   [H100]   NVIDIA H100 SXM datasheet: 989 TFLOP/s dense BF16 (1,979 with
#            sparsity), NVLink 900 GB/s (450 each way), 80 GB; DGX H100: eight
#            GPUs, eight ConnectX-7 400 Gb/s InfiniBand (50 GB/s a GPU).
#   [seeds]  the seeds' "4D Parallelism" questions (a)-(d): XXL d_model 16384,
#            d_ff 53248, 126 blocks of two linear layers; v5p C = 4.6e14,
#            W_ici = 2 × 9e10, 95 GB; M_X = 2, M_Y = 1, X = 16, Y = 4.
set -u
st=$1
. "$(dirname "$0")/../lib/check.sh"
. "$(dirname "$0")/../lib/csv.sh"
root=$(cd "$(dirname "$0")/../.." && pwd)

xxl="--d-model 16384 --d-ff 53248 --blocks 126 --ffn-only"

# cell ARGS... -- TABLE ROW COLUMN: one cell of `plan ARGS --section TABLE --format csv`
cell() {
	args=""
	while [ "$1" != "--" ]; do
		args="$args $1"
		shift
	done
	shift
	# shellcheck disable=SC2086
	"$st" plan $args --section "$1" --format csv 2>/dev/null | csv_cell "$2" "$3"
}
# value TABLE QUANTITY [ARGS...]: the Value cell of a row of the seeds' XXL
value() {
	t=$1
	q=$2
	shift 2
	# shellcheck disable=SC2086
	cell $xxl "$@" -- "$t" "$q" 2
}
want() {  # want WHAT GOT EXPECTED
	[ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"
}
# refused WHAT EXPECTED-STATUS TEXT ARGS...: exits so, saying TEXT in one error line
refused() {
	w=$1
	rc=$2
	text=$3
	shift 3
	"$st" plan "$@" >/dev/null 2>"$tmp/err"
	got=$?
	[ "$got" = "$rc" ] || fail "$w: exit $got, want $rc"
	grep -q "^error: .*$text" "$tmp/err" || fail "$w: no error line saying '$text': $(cat "$tmp/err")"
	[ "$(grep -c '^error:' "$tmp/err")" = 1 ] || fail "$w: not one error line: $(cat "$tmp/err")"
}

# ---- (a) [seeds]: 126 × 2 × 16384 × 53248 = 219,848,638,464 parameters;
# 4 B each = 879.39 GB; Adam 8 B = 1,758.79 GB; 16 B = 3,517,578,215,424 B,
# which is 3,517.58 GB (the seeds' 3,517.57 adds the rounded parts);
# 3,517.58 / 80 [H100] = 43.97: 44 H100s
# shellcheck disable=SC2086
"$st" plan $xxl --format csv >"$tmp/a.csv" 2>"$tmp/a.err" || fail "plan --format csv failed"
row() { csv_cell "$1" 2 <"$tmp/a.csv"; }
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
# (a)'s second part, the activations saved for backward [seeds: BF16]: each
# linear layer's input, x (d_model) and h (d_ff) per token, in every block:
# 126 × (16,384 + 53,248) × 2 B = 126 × 69,632 × 2 = 17,547,264 B = 17.55 MB
# per token, printed without --batch (the seeds' answer computes the BF16
# weights and gradients instead: not what the question asks)
want "activations per token" "$(row 'Activations saved for backward per token')" 17.55
grep -q 'saved for backward in BF16: 17.55 MB per token (17,547,264 B)' "$tmp/a.err" ||
	fail "(a): no note of the activations per token: $(cat "$tmp/a.err")"
# with one sequence of 2,048 tokens: 17,547,264 × 2048 = 35,936,796,672 B = 35.94 GB
want "activations of 2048 tokens" "$(value state 'Activations saved for backward (BF16)' --batch 1 --seq 2048)" 35.94
# shellcheck disable=SC2086
"$st" plan $xxl --format json >"$tmp/a.json" || fail "plan --format json failed"
grep -q '"Value": 219848638464' "$tmp/a.json" || fail "json: no parameter count"
for f in table md; do
	# shellcheck disable=SC2086
	"$st" plan $xxl --format $f >"$tmp/a.$f" || fail "plan --format $f failed"
	grep -q '3,517.58' "$tmp/a.$f" || fail "$f: no total"
done

# The full model's count is model_config_params' (SwiGLU, k = 3): small (768,
# 3072, 12 layers, vocab 10000) = 2·10000·768 + 12·(4·768² + 3·768·3072 + 2·768) + 768 = 128,625,408
params() {
	cell "$@" -- state 'Parameters P' 2
}
want "small's parameters" "$(params --d-model 768 --d-ff 3072 --blocks 12)" 128625408
want "--model small" "$(params --model small)" 128625408
# 2.7B: 2·10000·2560 + 32·(4·2560² + 3·2560·10240 + 2·2560) + 2560 = 3,406,809,600
want "--model 2.7B" "$(params --model 2.7B)" 3406809600
# two FFN matrices: 15,360,000 + 12·(2,359,296 + 2·768·3072 + 1,536) + 768 = 100,313,856
want "--model small --ffn-matrices 2" "$(params --model small --ffn-matrices 2)" 100313856
# a preset's sizes as the seeds' FFN-only blocks: 12 × 2 × 768 × 3072 = 56,623,104; SwiGLU's three: 84,934,656
want "--model small --ffn-only" "$(params --model small --ffn-only)" 56623104
want "--ffn-only --ffn-matrices 3" "$(params --model small --ffn-only --ffn-matrices 3)" 84934656
want "--params" "$(params --params 7500000000)" 7500000000
"$st" plan --model huge >/dev/null 2>&1
[ $? = 129 ] || fail "--model huge: want exit 129"

# ---- (b) [seeds] on a TPU v5p (95 GB), no activations: N ≥ 3,517.58 / 95 = 37.03: 38,
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
# (b) after a TP split, as the parallel table has it: --fsdp 16 --tp 4 on
# H100s, 16·P/(T·N) = 3,517,578,215,424 / 64 = 54,962,159,616 B = 54.96 GB,
# which fits 80 GB (an earlier plan ignored --tp here: 219.85 GB, no)
want "fsdp after TP" "$(value fsdp 'Total per device' --fsdp 16 --tp 4)" 54.96
want "fsdp after TP fits" "$(value fsdp 'Fits' --fsdp 16 --tp 4)" yes

# ---- (c) [seeds], [Book] on the v5p mesh: α = 4.6e14 / 1.8e11 = 2,555.56;
# X = 16, Y = 4, M_X = 2, M_Y = 1, k = 2.
# T_FSDP ≤ T_math ⟺ B/N ≥ α/(M_X·Y) = 2,555.56/8 = 319.44;
# T_TP/T_math = 2·α·Y/(k·M_Y·F) = α·Y/F = 10,222.2/53,248 = 0.191974; Y < F/α = 20.84.
# Overlapped (the Book's current text, max): ⌈319.44⌉ = 320 tokens per
# device, 320 × 64 = 20,480 in all. Not overlapped (its early-2025 text,
# sum): 319.44 / (1 − 0.191974) = 395.34: 396, 396 × 64 = 25,344.
c="--chip tpu-v5p --fsdp 16 --tp 4 --mesh-x 2 --mesh-y 1"
# shellcheck disable=SC2086
want "alpha" "$(value compute 'α_X' $c)" 2555.56
# shellcheck disable=SC2086
want "v5p bound" "$(value compute 'FSDP bound on tokens per device' $c)" 319.44
# shellcheck disable=SC2086
want "v5p TP share" "$(value compute 'TP share of T_math' $c)" 0.19
# shellcheck disable=SC2086
want "v5p TP bound" "$(value compute 'TP bound on Y' $c)" 20.84
# shellcheck disable=SC2086
want "v5p overlapped" "$(value compute 'Per-device batch (overlapped)' $c)" 320
# shellcheck disable=SC2086
want "v5p overlapped overall" "$(value compute 'Overall batch (overlapped)' $c)" 20480
# shellcheck disable=SC2086
want "v5p tokens per device bound" "$(value compute 'Tokens per device bound (not overlapped)' $c)" 395.34
# shellcheck disable=SC2086
want "v5p per-device batch" "$(value compute 'Per-device batch (not overlapped)' $c)" 396
# shellcheck disable=SC2086
want "v5p overall batch" "$(value compute 'Overall batch (not overlapped)' $c)" 25344
# the Book's floors over Y: current α²/(M_X·M_Y·F) = 2,555.56² / (2 × 1 × 53,248)
# = 6,530,864.2 / 106,496 = 61.32; early 4α²/(M_X·M_Y·F) = 245.30
# shellcheck disable=SC2086
want "v5p floor overlapped" "$(value compute 'Floor over Y (overlapped)' $c)" 61.32
# shellcheck disable=SC2086
want "v5p floor summed" "$(value compute 'Floor over Y (not overlapped)' $c)" 245.30
# the two use disjoint links on the torus; both bounds with their assumption named
# shellcheck disable=SC2086
want "v5p links" "$(value compute 'Links of X and Y' $c)" disjoint
# shellcheck disable=SC2086
"$st" plan $xxl $c --section compute >"$tmp/c.txt" 2>&1 || fail "compute failed"
grep -q 'compute-bound from 320 tokens per device, 20,480 in all over X × Y = 16 × 4, if the FSDP and' "$tmp/c.txt" ||
	fail "(c): no overlapped headline"
grep -q "from 396 and 25,344 if they do" "$tmp/c.txt" || fail "(c): no not-overlapped bound in the note"
# the assumptions whole: the text format wraps them onto more lines to fit 160 columns
# shellcheck disable=SC2086
"$st" plan $xxl $c --section compute --format csv >"$tmp/c.csv" 2>/dev/null || fail "compute --format csv failed"
grep -q "max(T_FSDP, T_TP) ≤ T_math: the two collectives overlap each other and the math (the Book's current text)" \
	"$tmp/c.csv" || fail "(c): the overlapped rows name no assumption"
grep -q "T_FSDP + T_TP ≤ T_math: they overlap the math, not each other (the Book's early-2025 text)" "$tmp/c.csv" ||
	fail "(c): the not-overlapped rows name no assumption"
# H100s, 8 × 8 [H100]: Y = 8 inside a node on NVLink (450e9), X crosses nodes
# (X·Y = 64 > 8) on InfiniBand 400 Gb/s (50e9): α_X = 989e12/50e9 = 19,780,
# α_Y = 989e12/450e9 = 2,197.78. Overlapped: 19,780/8 = 2,472.5: 2,473, × 64 = 158,272.
# Not overlapped: share 2,197.78 × 8/53,248 = 0.330195; 2,472.5/0.669805 = 3,691.37: 3,692, × 64 = 236,288
c="--fsdp 8 --tp 8"
# shellcheck disable=SC2086
want "h100 alpha_X" "$(value compute 'α_X' $c)" 19780.00
# shellcheck disable=SC2086
want "h100 overlapped" "$(value compute 'Per-device batch (overlapped)' $c) $(value compute 'Overall batch (overlapped)' $c)" \
	"2473 158272"
# shellcheck disable=SC2086
want "h100 summed" "$(value compute 'Per-device batch (not overlapped)' $c) $(value compute 'Overall batch (not overlapped)' $c)" \
	"3692 236288"
# one NVLink domain of 64 (--gpus-per-node 64): α = 2,197.78 on both axes;
# 2,197.78/8 = 274.72: 275, 17,600; 274.72/0.669805 = 410.15: 411, 26,304;
# the two share NVLink: the note says the not-overlapped bound holds
c="--fsdp 8 --tp 8 --gpus-per-node 64"
# shellcheck disable=SC2086
want "nvl64 overlapped" "$(value compute 'Overall batch (overlapped)' $c)" 17600
# shellcheck disable=SC2086
want "nvl64 summed" "$(value compute 'Per-device batch (not overlapped)' $c) $(value compute 'Overall batch (not overlapped)' $c)" \
	"411 26304"
# shellcheck disable=SC2086
want "nvl64 links" "$(value compute 'Links of X and Y' $c)" shared
# shellcheck disable=SC2086
"$st" plan $xxl $c --section compute 2>&1 | grep -q 'the not-overlapped bound is the one that holds' ||
	fail "(c): shared links, no note that the sum holds"
# X = 1, Y = 1: no collective, compute-bound at any batch
want "no collectives" "$(value compute 'Per-device batch (overlapped)' --fsdp 1)" 0
# Y = 32 > 8 crosses nodes: α_Y = 19,780, Y < 53,248/19,780 = 2.69: TP communication-bound at any batch
want "h100 Y above the TP bound" "$(value compute 'Per-device batch (overlapped)' --fsdp 8 --tp 32)" ""
# A SwiGLU model (k = 3: w1, w3 and w2 in the FFN, 2k·D·F FLOPs per token
# forward, while T_TP still gathers the input and scatters the output):
# 2.7B, X = 4, Y = 2 on H100s inside a node: α = 2,197.78; FSDP 2,197.78/2 =
# 1,098.89: 1,099, × 8 = 8,792; T_TP/T_math = 2·α·Y/(3·F) = 8,791.1/30,720 =
# 0.286169; 1,098.89/0.713831 = 1,539.42: 1,540, × 8 = 12,320; Y < 3·F/(2α) = 6.99.
# Counted as two matrices the TP share is 0.429253 and Y < 4.66.
c="--fsdp 4 --tp 2"
want "2.7B k" "$(cell --model 2.7B $c -- compute 'k (FFN matrices)' 2)" 3
want "2.7B TP share" "$(cell --model 2.7B $c -- compute 'TP share of T_math' 2)" 0.29
want "2.7B TP bound" "$(cell --model 2.7B $c -- compute 'TP bound on Y' 2)" 6.99
want "2.7B overlapped" "$(cell --model 2.7B $c -- compute 'Overall batch (overlapped)' 2)" 8792
want "2.7B summed" "$(cell --model 2.7B $c -- compute 'Overall batch (not overlapped)' 2)" 12320
want "2.7B two matrices TP bound" "$(cell --model 2.7B $c --ffn-matrices 2 -- compute 'TP bound on Y' 2)" 4.66

# ---- parallel: memory per device. The hand-worked case of [ZeRO] Figure 1:
# Ψ = 7.5e9 over N_d = 64, K = 12. DP (2 + 2 + 12)·Ψ = 120e9 B = 120 GB;
# P_os: 2Ψ + 2Ψ + 12Ψ/64 = 30e9 + 1.40625e9 = 31,406,250,000 B: 31.41 (the paper's 31.4);
# P_os+g: 2Ψ + 14Ψ/64 = 15e9 + 1.640625e9 = 16,640,625,000: 16.64 (16.6);
# P_os+g+p: 16Ψ/64 = 1,875,000,000: 1.88 (the paper's 1.9).
# The autocast alternative (FP32 weights used directly): ZeRO-1 8Ψ + 8Ψ/64 =
# 60,937,500,000: 60.94, ZeRO-2 4Ψ + 12Ψ/64 = 31,406,250,000: 31.41 (an
# earlier plan printed these two for ZeRO-1/2)
z="--params 7500000000 --dp 64"
# shellcheck disable=SC2086
want "zero DP" "$(cell $z -- parallel DP 2)" 120.00
# shellcheck disable=SC2086
want "zero Pos" "$(cell $z -- parallel ZeRO-1 2)" 31.41
# shellcheck disable=SC2086
want "zero Pos+g" "$(cell $z -- parallel ZeRO-2 2)" 16.64
# shellcheck disable=SC2086
want "zero Pos+g+p" "$(cell $z -- parallel ZeRO-3/FSDP 2)" 1.88
# shellcheck disable=SC2086
want "zero-1 autocast" "$(cell $z -- parallel 'ZeRO-1 autocast' 2)" 60.94
# shellcheck disable=SC2086
want "zero-2 autocast" "$(cell $z -- parallel 'ZeRO-2 autocast' 2)" 31.41
# shellcheck disable=SC2086
"$st" plan $z --section parallel --format csv 2>/dev/null | csv_cell ZeRO-1 7 | grep -q "FP32 master weights, m, v sharded (Pos)" ||
	fail "ZeRO-1: its row names no master-weight policy"
# [ZeRO] §7.2: an all-reduce moves 2Ψ, P_os+g+p 3Ψ, each × (N_d−1)/N_d on the
# ring and × 2 B (BF16): 2 × 63/64 × 2 × 7.5e9 = 29,531,250,000 B = 29.53 GB;
# 3 × 63/64 × 2 × 7.5e9 = 44,296,875,000 B = 44.30 GB, over 64 GPUs of 8 a node
# the data axis crosses nodes: at 50e9 B/s [H100] 885.94 ms
# shellcheck disable=SC2086
want "zero DP comm" "$(cell $z -- comm DP 3)" 29.53
# shellcheck disable=SC2086
want "zero-3 comm" "$(cell $z -- comm ZeRO-3/FSDP 3) $(cell $z -- comm ZeRO-3/FSDP 5)" "44.30 885.94"
# shellcheck disable=SC2086
want "zero link" "$(cell $z -- comm DP 4)" "InfiniBand 400 Gb/s, 50.00 GB/s"

# The seeds' XXL in the paper's policy: DP on 8 H100s, every device 16·P =
# 3,517.58 GB > 80 GB; ZeRO-1 over 8: 4·P + 12·P/8 = 5.5·P = 1,209,167,511,552 B
# = 1,209.17 GB; ZeRO-2: 2·P + 14·P/8 = 3.75·P = 824,432,394,240 B = 824.43 GB;
# ZeRO-3 16·P/8 = 2·P = 439.70 GB, no fit; over 64 (--fsdp) 54.96 GB, fits
# shellcheck disable=SC2086
want "dp 8 state" "$(cell $xxl --dp 8 -- parallel DP 2) $(cell $xxl --dp 8 -- parallel DP 5)" "3517.58 no"
# shellcheck disable=SC2086
want "zero-1 over 8" "$(cell $xxl --dp 8 -- parallel ZeRO-1 2)" 1209.17
# shellcheck disable=SC2086
want "zero-2 over 8" "$(cell $xxl --dp 8 -- parallel ZeRO-2 2)" 824.43
# shellcheck disable=SC2086
want "zero-3 over 8" "$(cell $xxl --dp 8 -- parallel ZeRO-3/FSDP 2) $(cell $xxl --dp 8 -- parallel ZeRO-3/FSDP 5)" "439.70 no"
# shellcheck disable=SC2086
want "zero-3 over 64" "$(cell $xxl --fsdp 64 -- parallel ZeRO-3/FSDP 4) $(cell $xxl --fsdp 64 -- parallel ZeRO-3/FSDP 5)" \
	"54.96 yes"
# TP 4 × FSDP 16, one sequence of 2,048 tokens: P' = P/4; ZeRO-3 16·P'/16 =
# 54.96 GB; act = 126 × 2048 × (16384 + 53248/4) × 2 B = 15,325,986,816 B =
# 15.33 GB (no pipeline); total 70,288,146,432 B = 70.29 GB
tf="--tp 4 --fsdp 16 --batch 1 --seq 2048"
# shellcheck disable=SC2086
want "tp 4 activations" "$(cell $xxl $tf -- parallel 'act (in each row)' 3)" 15.33
# shellcheck disable=SC2086
want "tp 4 fsdp 16 total" "$(cell $xxl $tf -- parallel ZeRO-3/FSDP 4)" 70.29

# ---- The hand-worked 70B-class case: FFN-only, d_model 8192, d_ff 32768,
# 128 blocks: P = 128 × 2 × 8192 × 32768 = 68,719,476,736; TP 8 × PP 4 × DP 8
# (256 H100s, 8 a node), 16 sequences of 4,096 tokens per replica in 16
# micro-batches. P' = P/32 = 2,147,483,648 = 2^31.
m70="--d-model 8192 --d-ff 32768 --blocks 128 --ffn-only --tp 8 --pp 4 --dp 8 --batch 16 --seq 4096 --microbatches 16"
want "70B P" "$(cell $m70 -- state 'Parameters P' 2)" 68719476736
# [ZeRO]'s policy: DP 16·P' = 34,359,738,368 B = 34.36 GB; ZeRO-1 4·P' + 12·P'/8
# = 5.5·P' = 11,811,160,064 = 11.81; ZeRO-2 2·P' + 14·P'/8 = 3.75·P' =
# 8,053,063,680 = 8.05; ZeRO-3 16·P'/8 = 4,294,967,296 = 4.29; autocast ZeRO-1
# 8·P' + 8·P'/8 = 9·P' = 19,327,352,832 = 19.33, ZeRO-2 4·P' + 12·P'/8 = 11.81
# shellcheck disable=SC2086
want "70B state" "$(cell $m70 -- parallel DP 2) $(cell $m70 -- parallel ZeRO-1 2) $(cell $m70 -- parallel ZeRO-2 2) $(cell $m70 -- parallel ZeRO-3/FSDP 2)" \
	"34.36 11.81 8.05 4.29"
# shellcheck disable=SC2086
want "70B autocast" "$(cell $m70 -- parallel 'ZeRO-1 autocast' 2) $(cell $m70 -- parallel 'ZeRO-2 autocast' 2)" "19.33 11.81"
# Activations [Narayanan] §2.2.1, each stage blocks/PP = 32 blocks of BF16
# inputs, x whole and h split by T: per sequence 32 × 4096 × (8192 + 32768/8)
# × 2 B = 3,221,225,472 B. GPipe holds all 16 sequences (16 micro-batches of
# one): 51,539,607,552 B = 51.54 GB; 1F1B at most PP = 4 on the first stage:
# 12,884,901,888 B = 12.88 GB (an earlier plan printed GPipe's, labelled "one
# micro-batch per stage")
# shellcheck disable=SC2086
want "70B 1F1B" "$(cell $m70 -- parallel 'act 1F1B (in each row)' 3)" 12.88
# shellcheck disable=SC2086
want "70B GPipe" "$(cell $m70 -- parallel 'act GPipe' 3)" 51.54
# totals: ZeRO-1 with 1F1B 11,811,160,064 + 12,884,901,888 = 24,696,061,952 B
# = 24.70 GB; with --schedule gpipe 63,350,767,616 B = 63.35 GB, and DP's
# 34.36 + 51.54 = 85.90 GB no longer fits 80 GB
# shellcheck disable=SC2086
want "70B zero-1 1F1B total" "$(cell $m70 -- parallel ZeRO-1 4)" 24.70
# shellcheck disable=SC2086
want "70B zero-1 GPipe total" "$(cell $m70 --schedule gpipe -- parallel ZeRO-1 4)" 63.35
# shellcheck disable=SC2086
want "70B DP GPipe" "$(cell $m70 --schedule gpipe -- parallel DP 4) $(cell $m70 --schedule gpipe -- parallel DP 5)" "85.90 no"
# shellcheck disable=SC2086
"$st" plan $m70 --section parallel --format csv 2>/dev/null | csv_cell ZeRO-1 7 | grep -q "act: 1F1B" ||
	fail "70B: the ZeRO-1 row does not name its schedule"
# Communication [Megatron], [Book]: an FFN-only block all-reduces once
# forward and once backward: blocks/PP × 2 × 2·(T−1)/T × B·S·d_model × 2 B
# = 32 × 2 × 2 × 7/8 × 65,536 × 8192 × 2 B = 32 × 3.5 × 1,073,741,824 =
# 120,259,084,288 B = 120.26 GB; T = 8 inside a node, NVLink 450e9: 267.24 ms.
# PP: 2 × B·S·d_model × 2 B = 2,147,483,648 B = 2.15 GB; T·D·PP = 256 > 8
# crosses nodes, 50e9: 42.95 ms. DP: 2 × 7/8 × 2 B × 2^31 = 7,516,192,768 B =
# 7.52 GB, T·D = 64 > 8 crosses, 150.32 ms; ZeRO-3 3 × 7/8 × 2 × 2^31 =
# 11,274,289,152 B = 11.27 GB, 225.49 ms. Bubble (4−1)/(16+4−1) = 3/19 = 0.1579.
# shellcheck disable=SC2086
want "70B TP" "$(cell $m70 -- comm TP 3) $(cell $m70 -- comm TP 5)" "120.26 267.24"
# shellcheck disable=SC2086
want "70B TP link" "$(cell $m70 -- comm TP 4)" "NVLink 4, 450.00 GB/s"
# shellcheck disable=SC2086
want "70B PP" "$(cell $m70 -- comm PP 3) $(cell $m70 -- comm PP 5)" "2.15 42.95"
# shellcheck disable=SC2086
want "70B DP" "$(cell $m70 -- comm DP 3) $(cell $m70 -- comm DP 5)" "7.52 150.32"
# shellcheck disable=SC2086
want "70B ZeRO-3" "$(cell $m70 -- comm ZeRO-3/FSDP 3) $(cell $m70 -- comm ZeRO-3/FSDP 5)" "11.27 225.49"
# shellcheck disable=SC2086
want "70B bubble" "$(cell $m70 -- comm 'PP bubble' 6)" 0.1579
# shellcheck disable=SC2086
"$st" plan $m70 --section comm --format csv 2>/dev/null | csv_cell DP 8 | grep -q "crosses nodes: T·D = 8 × 8 = 64 > 8 per node" ||
	fail "70B: the DP row does not say it crosses nodes"

# ---- The hand-worked 2.7B case: the full model (3,406,809,600 parameters),
# DP 4 × TP 2 × PP 2 on 16 H100s, 8 sequences of 1,024 tokens in 4
# micro-batches. P' = P/4 = 851,702,400 (the embeddings split with the rest).
m27="--model 2.7B --dp 4 --tp 2 --pp 2 --batch 8 --seq 1024 --microbatches 4"
# [ZeRO]'s policy: DP 16·P' = 13,627,238,400 B = 13.63 GB; ZeRO-1 (4 + 12/4)·P'
# = 5,961,916,800 = 5.96; ZeRO-2 (2 + 14/4)·P' = 4,684,363,200 = 4.68; ZeRO-3
# 16·P'/4 = 3,406,809,600 = 3.41; autocast ZeRO-1 (8 + 2)·P' = 8.52, ZeRO-2 (4 + 3)·P' = 5.96
# shellcheck disable=SC2086
want "2.7B state" "$(cell $m27 -- parallel DP 2) $(cell $m27 -- parallel ZeRO-1 2) $(cell $m27 -- parallel ZeRO-2 2) $(cell $m27 -- parallel ZeRO-3/FSDP 2)" \
	"13.63 5.96 4.68 3.41"
# shellcheck disable=SC2086
want "2.7B autocast" "$(cell $m27 -- parallel 'ZeRO-1 autocast' 2) $(cell $m27 -- parallel 'ZeRO-2 autocast' 2)" "8.52 5.96"
# a full model's activations are not counted from its sizes: said, not zero-filled silently
# shellcheck disable=SC2086
"$st" plan $m27 --section parallel --format csv 2>/dev/null | csv_cell 'act 1F1B (in each row)' 6 |
	grep -q "a bundle measures them" || fail "2.7B: the act row does not say why none are counted"
# [Megatron]: four all-reduces per layer (attention and MLP, forward and
# backward): 32/2 × 4 × 2 × 1/2 × 8 × 1024 × 2560 × 2 B = 64 × 41,943,040 =
# 2,684,354,560 B = 2.68 GB; T = 2 inside a node: / 450e9 = 5.97 ms.
# PP 2 × 8 × 1024 × 2560 × 2 B = 83,886,080 B = 0.08 GB; T·D·PP = 16 > 8
# crosses nodes: / 50e9 = 1.68 ms. DP 2 × 3/4 × 2 B × P' = 3·P' =
# 2,555,107,200 B = 2.56 GB; T·D = 8 ≤ 8 inside a node: 5.68 ms. ZeRO-3
# 4.5·P' = 3,832,660,800 B = 3.83 GB: 8.52 ms. Bubble 1/(4 + 1) = 0.2000.
# shellcheck disable=SC2086
want "2.7B TP" "$(cell $m27 -- comm TP 3) $(cell $m27 -- comm TP 5)" "2.68 5.97"
# shellcheck disable=SC2086
want "2.7B PP" "$(cell $m27 -- comm PP 3) $(cell $m27 -- comm PP 5)" "0.08 1.68"
# shellcheck disable=SC2086
want "2.7B DP" "$(cell $m27 -- comm DP 3) $(cell $m27 -- comm DP 5)" "2.56 5.68"
# shellcheck disable=SC2086
want "2.7B ZeRO-3" "$(cell $m27 -- comm ZeRO-3/FSDP 3) $(cell $m27 -- comm ZeRO-3/FSDP 5)" "3.83 8.52"
# shellcheck disable=SC2086
want "2.7B bubble" "$(cell $m27 -- comm 'PP bubble' 6)" 0.2000
# its compute bound with X = D = 4 (the data axis), k = 3: 1,099 and 1,540 per device (above)
# shellcheck disable=SC2086
want "2.7B compute" "$(cell $m27 -- compute 'Per-device batch (overlapped)' 2) $(cell $m27 -- compute 'Per-device batch (not overlapped)' 2)" \
	"1099 1540"

# ---- comm, the seeds' XXL: D = 8 inside a node (T·D = 8 ≤ 8), NVLink 450e9:
# all-reduce 2·7/8 × 2 B × P = 3.5·P = 769,470,234,624 B = 769.47 GB; 1,709.93 ms;
# ZeRO-3: 3·7/8 × 2 B × P = 5.25·P = 1,154,205,351,936 B = 1,154.21 GB, 2,564.90 ms
want "all-reduce GB" "$(cell $xxl --dp 8 -- comm DP 3)" 769.47
want "all-reduce ms" "$(cell $xxl --dp 8 -- comm DP 5)" 1709.93
want "zero-1 as DP" "$(cell $xxl --dp 8 -- comm ZeRO-1 5)" 1709.93
want "zero-3 comm" "$(cell $xxl --dp 8 -- comm ZeRO-3/FSDP 3) $(cell $xxl --dp 8 -- comm ZeRO-3/FSDP 5)" "1154.21 2564.90"
# D = 1: nothing moves
want "d 1 all-reduce" "$(cell $xxl -- comm DP 3)" 0.00
# shellcheck disable=SC2086
"$st" plan $xxl --dp 8 --section comm 2>&1 | grep -q 'bus-bandwidth lower bounds' || fail "comm: no lower-bound note"
# TP 4 × PP 2 × DP 8, one sequence of 2,048 tokens, M = 8 (64 GPUs):
# TP [Megatron], [Book]: 126/2 × 2 × 2 × 3/4 × 2048 × 16384 × 2 B = 189 × 67,108,864
#   = 12,683,575,296 B = 12.68 GB (an earlier plan counted four all-reduces: 25.37); / 450e9 = 28.19 ms
# PP: 2 × 2048 × 16384 × 2 B = 134,217,728 B = 0.13 GB; crosses nodes, / 50e9 = 2.68 ms
# DP over 8 of P' = P/8: 2·7/8 × 2 B × 27,481,079,808 = 96,183,779,328 B = 96.18 GB;
#   T·D = 32 > 8 crosses nodes: / 50e9 = 1,923.68 ms; in one NVLink domain of 64: / 450e9 = 213.74 ms;
#   at 200 Gb/s InfiniBand (--inter ib200, 25e9): 3,847.35 ms
tpc="--tp 4 --pp 2 --dp 8 --batch 1 --seq 2048 --microbatches 1"
# shellcheck disable=SC2086
want "tp GB ms" "$(cell $xxl $tpc -- comm TP 3) $(cell $xxl $tpc -- comm TP 5)" "12.68 28.19"
# shellcheck disable=SC2086
want "pp GB ms" "$(cell $xxl $tpc -- comm PP 3) $(cell $xxl $tpc -- comm PP 5)" "0.13 2.68"
# shellcheck disable=SC2086
want "dp over 8 of a T·PP shard" "$(cell $xxl $tpc -- comm DP 3) $(cell $xxl $tpc -- comm DP 5)" "96.18 1923.68"
# shellcheck disable=SC2086
want "one NVLink domain" "$(cell $xxl $tpc --gpus-per-node 64 -- comm DP 5)" 213.74
# shellcheck disable=SC2086
want "ib200" "$(cell $xxl $tpc --inter ib200 -- comm DP 5) $(cell $xxl $tpc --inter ib200 -- comm DP 4)" \
	"3847.35 InfiniBand 200 Gb/s, 25.00 GB/s"
# --inter-bw replaces the preset's number: 96,183,779,328 / 1e11 = 961.84 ms
# shellcheck disable=SC2086
want "--inter-bw" "$(cell $xxl $tpc --inter ib200 --inter-bw 1e11 -- comm DP 5)" 961.84
# bubble (2−1)/(8+2−1) = 1/9 = 0.1111 at M = 8
# shellcheck disable=SC2086
want "bubble" "$(cell $xxl --tp 4 --pp 2 --dp 8 --microbatches 8 -- comm 'PP bubble' 6)" 0.1111
# shellcheck disable=SC2086
"$st" plan $xxl --tp 4 --pp 2 --dp 8 --microbatches 8 --section comm 2>&1 |
	grep -q 'pipeline bubble is 11.11% of a step at PP = 2, M = 8' || fail "comm: no bubble note"
# without --batch and --seq no TP or PP bytes are counted
want "tp without batch" "$(cell $xxl --tp 4 -- comm TP 3)" ""

# A small case: d_model 1024, d_ff 4096, 2 blocks, FFN-only: P = 2 × 2 × 1024 × 4096
# = 16,777,216; D = 4, 150,000,000 B devices, --link-bw 1e9 (D = 4 inside a node).
# [ZeRO]'s policy: DP 16·P = 268,435,456 B (0.27 GB, no); ZeRO-1 4·P + 12·P/4 =
# 7·P = 117,440,512 (0.12, yes); ZeRO-2 2·P + 14·P/4 = 5.5·P = 92,274,688 (0.09,
# yes); ZeRO-3 4·P = 67,108,864 (0.07, yes); autocast ZeRO-1 8·P + 2·P = 10·P =
# 167,772,160 (0.17, no). All-reduce 2·3/4 × 2 × P = 3·P = 50,331,648 B: 50.33
# ms; ZeRO-3 4.5·P = 75,497,472 B (0.08 GB): 75.50 ms
small="--d-model 1024 --d-ff 4096 --blocks 2 --ffn-only --dp 4 --memory 150000000 --link-bw 1e9"
scell() {
	# shellcheck disable=SC2086
	cell $small -- "$1" "$2" "$3"
}
want "small dp" "$(scell parallel DP 2) $(scell parallel DP 5)" "0.27 no"
want "small zero-1" "$(scell parallel ZeRO-1 2) $(scell parallel ZeRO-1 5)" "0.12 yes"
want "small zero-2" "$(scell parallel ZeRO-2 2) $(scell parallel ZeRO-2 5)" "0.09 yes"
want "small zero-3" "$(scell parallel ZeRO-3/FSDP 2) $(scell parallel ZeRO-3/FSDP 5)" "0.07 yes"
want "small zero-1 autocast" "$(scell parallel 'ZeRO-1 autocast' 2) $(scell parallel 'ZeRO-1 autocast' 5)" "0.17 no"
want "small all-reduce ms" "$(scell comm DP 5)" 50.33
want "small zero-3 comm" "$(scell comm ZeRO-3/FSDP 3) $(scell comm ZeRO-3/FSDP 5)" "0.08 75.50"
want "small link" "$(scell comm DP 4)" "--link-bw, 1.00 GB/s"

# ---- (d) [seeds], [Book]: the smallest compute-bound batch on N = 64 v5p,
# over every Y dividing 64 and mesh axes M_X + M_Y ≤ 3 (an axis of n devices
# spans at most log2 n). Overlapped, b ≥ α/(M_X·Y) with Y < k·M_Y·F/(2α) =
# M_Y × 20.84: Y = 16 (M_X = 2, M_Y = 1) and Y = 32 (M_X = 1, M_Y = 2) both give
# 2,555.56/32 = 79.86: 80 tokens per device, 80 × 64 = 5,120 in all; the tie
# goes to the smaller not-overlapped bound, equal too (T_TP/T_math =
# 2,555.56 × 16/53,248 = 0.767895 both: 79.86/0.232105 = 344.07, 345), then
# to the smaller Y: X = 4 × Y = 16. Not overlapped the best is Y = 8 (M_X = 2,
# M_Y = 1): 159.72/(1 − 0.383948) = 259.27: 260, 16,640 in all (Y = 4 gives
# the seeds' 396, Y = 16 345). The Book's continuous floors: 61.32 and 245.30.
# Memory at Y = 16: 16·P/64 + 126 × 80 × 69,632 × 2 B = 54,962,159,616 +
# 1,403,781,120 = 56,365,940,736 B = 56.37 GB ≤ 95.
d="--chip tpu-v5p --devices 64"
# shellcheck disable=SC2086
"$st" plan $xxl $d --section devices --format csv >"$tmp/d.csv" 2>"$tmp/d.err" || fail "(d) failed"
drow() {  # drow Y COLUMN
	csv_cell "$1" "$2" 2 <"$tmp/d.csv"
}
want "(d) Y=16" "$(drow 16 1) $(drow 16 3) $(drow 16 4) $(drow 16 6) $(drow 16 7) $(drow 16 10)" "4 2 1 80 5120 56.37"
want "(d) Y=32" "$(drow 32 3) $(drow 32 4) $(drow 32 7) $(drow 32 9)" "1 2 5120 22080"
want "(d) Y=8 not overlapped" "$(drow 8 8) $(drow 8 9)" "260 16640"
want "(d) Y=4 the seeds' split" "$(drow 4 6) $(drow 4 8)" "320 396"
want "(d) Y=64 TP-bound" "$(drow 64 11)" "TP-bound"
want "(d) smallest" "$(drow 16 12) $(drow 8 12)" "overlapped not overlapped"
grep -q '(d) the smallest compute-bound global batch on 64 TPU v5p 95GB, the collectives overlapped: 5,120 tokens (80 per device) at FSDP X = 4 (M_X = 2) × TP Y = 16' "$tmp/d.err" ||
	fail "(d): no answer line: $(cat "$tmp/d.err")"
grep -q '(d) not overlapped: 16,640 tokens (260 per device) at X = 8 (M_X = 2) × Y = 8 (M_Y = 1)' "$tmp/d.err" ||
	fail "(d): no not-overlapped line: $(cat "$tmp/d.err")"
# 512 H100s, 8 a node: Y ≤ 8 keeps TP on NVLink (Y = 16 crosses: α_Y = 19,780,
# Y < 2.69, TP-bound); X = 64 crosses nodes: 19,780/8 = 2,472.5: 2,473 per
# device, 1,266,176 in all; memory 16·P/512 + 126 × 2,473 × 69,632 × 2 B =
# 6,870,269,952 + 43,394,537,472 = 50,264,807,424 B = 50.26 GB: fits
# shellcheck disable=SC2086
"$st" plan $xxl --devices 512 --section devices --format csv >"$tmp/d.csv" 2>/dev/null || fail "(d) 512 failed"
want "(d) 512 H100" "$(drow 8 1) $(drow 8 7) $(drow 8 10) $(drow 8 12)" "64 1266176 50.26 overlapped, not overlapped"
want "(d) 512 H100 Y=16" "$(drow 16 11)" "TP-bound"

# ---- Refusals: one error line each, the usage status; degrees past the model or any machine [issue 39]
refused "--tp past d_ff" 129 "more tensor-parallel devices than the 53248 columns" $xxl --tp 1000000
refused "degrees past 2^20 devices" 129 "more than 2^20" --model small --tp 1000 --dp 2000
refused "degrees past --devices" 129 "is more than --devices 64" $xxl --tp 8 --pp 4 --dp 8 --devices 64
refused "--link-bw past any link" 129 "outside 1e6 to 1e15 bytes/s" $xxl --link-bw 1e-300
refused "--inter-bw past any link" 129 "--inter-bw 1e+20: outside" $xxl --inter-bw 1e20
refused "--flops past any device" 129 "outside 1e9 to 1e18 FLOP/s" $xxl --flops 1e300
refused "--tp without d_ff" 129 "needs d_ff" --params 1000 --tp 2
refused "--devices without d_ff" 129 "needs d_ff" --params 1000 --devices 8
refused "--params 0" 129 "no parameters" --params 0
refused "micro-batches" 129 "do not split into --microbatches 3" $xxl --pp 2 --batch 16 --seq 8 --microbatches 3
refused "--ffn-matrices 4" 129 "is 2 (two linear layers) or 3" $xxl --ffn-matrices 4
refused "--dp ≠ --fsdp" 129 "both the data-parallel degree" $xxl --dp 8 --fsdp 16
refused "--pp above the blocks" 129 "more pipeline stages than the 126 blocks" $xxl --pp 127
refused "no --blocks" 129 "needs the model's sizes" --d-model 16384 --d-ff 53248
refused "--batch without --seq" 129 "go together" $xxl --batch 4
refused "--microbatches without --pp" 129 "give --pp too" --d-model 64 --d-ff 256 --blocks 2 --microbatches 4
refused "--ffn-only with a bundle" 129 "a bundle gives the parameters" $xxl x.stb
refused "--params with a bundle" 129 "a bundle gives the parameters" --params 10 x.stb
# a bundle that lacks what plan needs: one status (1) whatever it lacks
refused "no model sizes" 1 "records no model sizes" "$root/samples/pytorch-auto.stb"
refused "no parameters" 1 "records no parameter count" "$root/docs/foreign/pytorch-off.stb"
# one bundle at most; a missing one fails to load (exit 1)
"$st" plan a.stb b.stb >/dev/null 2>&1
[ $? = 129 ] || fail "two bundles: want exit 129"
"$st" plan "$tmp/none.stb" >/dev/null 2>&1
[ $? = 1 ] || fail "a missing bundle: want exit 1"
"$st" plan --d-model 64 --d-ff 256 --blocks 2 --pp 2 --microbatches 4 --section comm >/dev/null 2>&1 ||
	fail "--microbatches with --pp failed"
# a full model takes --batch and --seq now (its TP and PP bytes)
"$st" plan --model small --batch 4 --seq 128 >/dev/null 2>&1 || fail "--model small --batch --seq refused"
# 2^31−1 everywhere: over 2^53 parameters, refused rather than wrapped
refused "an uncountable model" 129 "over 2^53 parameters" --d-model 2147483647 --d-ff 2147483647 --blocks 2147483647 --ffn-only

check_done plan.cli
