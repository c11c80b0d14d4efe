#!/bin/sh
# rules.sh STEPTRACE ROOT: the rules of graph/rules.c (docs/whatif.md) on the
# shipped bundles: precision=bf16 from the FP32 sample (faster, refused on a
# BF16 one), batch=xK (x1 the replay, x2 longer but less than twice), fuse=
# elementwise (shorter), bucket-mb=M on steptrace's recorded two-GPU DDP
# (docs/multi), the calibration a multi-rank run writes and ranks=N with it
# (contention and host time per call lengthen the prediction), and their
# usage errors.
set -u
st=$1
root=$2
samples=$root/samples
multi=$root/docs/multi
. "$(dirname "$0")/../lib/check.sh"

# predicted FILE RULE [options]: the what_if table's Predicted of the first row
predicted() {
	f=$1
	shift
	"$st" explain "$f" "$@" --section what_if --format csv 2>"$tmp/err" | awk -F, 'NR == 2 { print $4 }'
}
measured() {
	"$st" explain "$1" --what-if host=1 --section what_if --format csv 2>/dev/null | awk -F, 'NR == 2 { print $2 }'
}
# lt A B: A < B
lt() { awk -v a="$1" -v b="$2" 'BEGIN { exit !(a + 0 < b + 0) }'; }

fp32=$samples/small-fp32-train.stb
bf16=$samples/small-bf16-train.stb
m=$(measured "$fp32")
[ -n "$m" ] || fail "no measured step for $fp32"

# precision=bf16: the FP32 step's products at the BF16/FP32 peak ratio, its
# memory-bound kernels halved: well under the FP32 step, above the BF16
# sample's GPU-free bound of half of it
p=$(predicted "$fp32" --what-if precision=bf16)
lt "$p" "$(awk -v m="$m" 'BEGIN { print 0.7 * m }')" && lt "$(awk -v m="$m" 'BEGIN { print 0.3 * m }')" "$p" ||
	fail "precision=bf16 on $fp32: predicted '$p' of $m ms, not within 30-70%"
"$st" explain "$bf16" --what-if precision=bf16 --section what_if > /dev/null 2> "$tmp/err" &&
	fail "precision=bf16 accepted on a BF16 run"
grep -q "already computes in 16 bits" "$tmp/err" || fail "precision=bf16 on BF16: $(cat "$tmp/err")"

# batch=xK: x1 changes nothing; x2 longer, less than twice; x0.5 shorter
p=$(predicted "$fp32" --what-if batch=x1)
[ "$p" = "$m" ] || fail "batch=x1 moved the step: $p against $m"
p=$(predicted "$fp32" --what-if batch=x2)
lt "$m" "$p" && lt "$p" "$(awk -v m="$m" 'BEGIN { print 2 * m }')" || fail "batch=x2: predicted '$p' of $m ms"
p2=$(predicted "$fp32" --what-if 'batch×2')
[ "$p2" = "$p" ] || fail "batch×2 ($p2) is not batch=x2 ($p)"
p=$(predicted "$fp32" --what-if batch=x0.5)
lt "$p" "$m" || fail "batch=x0.5: predicted '$p' of $m ms"

# fuse=elementwise: chains between products fused, the step shorter
p=$(predicted "$fp32" --what-if fuse=elementwise)
lt "$p" "$m" || fail "fuse=elementwise on $fp32: predicted '$p', measured $m"

# data=K: the PyTorch sample's host work before its batch's copies to the
# device (2.1 ms of data loading a step): x1 the replay, x0 shorter, x0.5
# between (data=K shortens the other threads' waits across the loading
# too, so the saving grows with it), twice x0.5 no shorter than x0
pt=$samples/pytorch-auto.stb
mp=$(measured "$pt")
[ "$(predicted "$pt" --what-if data=1)" = "$mp" ] || fail "data=1 moved the step"
d0=$(predicted "$pt" --what-if data=0)
d5=$(predicted "$pt" --what-if data=0.5)
lt "$d0" "$d5" && lt "$d5" "$mp" || fail "data=0 ($d0), data=0.5 ($d5), measured $mp: not in that order"
dd=$("$st" explain "$pt" --what-if data=0.5 --what-if data=0.5 --section what_if --format csv 2>/dev/null | awk -F, 'NR == 4 { print $4 }')
lt "$dd" "$d0" && fail "data=0.5 twice ($dd) shorter than data=0 ($d0)"

# bucket-mb=M on two ranks of steptrace's bucketed DDP (25 MB buckets): larger
# buckets, fewer all-reduces, the step no longer; the refusal on one GPU
out=$("$st" explain "$multi"/ddp-bucket.rank0.stb "$multi"/ddp-bucket.rank1.stb --what-if bucket-mb=100 \
	--section what_if --format csv 2>"$tmp/err")
echo "$out" | awk -F, 'NR == 2 { exit !($4 > 0 && $4 <= $2) }' || fail "bucket-mb=100 on ddp-bucket: $out $(cat "$tmp/err")"
"$st" explain "$fp32" --what-if bucket-mb=100 --section what_if > /dev/null 2> "$tmp/err" &&
	fail "bucket-mb on a single-GPU run accepted"
grep -q "no collectives" "$tmp/err" || fail "bucket-mb on one GPU: $(cat "$tmp/err")"

# the calibration of a multi-rank run: the products beside NCCL 1.5-1.8x
# (explain's own finding says 1.64x), a host time per collective call
"$st" explain "$multi"/ddp-bucket.rank0.stb "$multi"/ddp-bucket.rank1.stb --section calibration --format csv \
	> "$tmp/cal.csv" 2>"$tmp/err" || fail "calibration: $(cat "$tmp/err")"
awk -F, 'NR == 1 { ok = $1 == "contention" && $2 == "call_us" } NR == 2 { exit !(ok && $1 > 1.5 && $1 < 1.8 && $2 > 0) }' \
	"$tmp/cal.csv" || fail "calibration: $(cat "$tmp/cal.csv")"
# ranks=2 with it: longer than with neither (contention 1, no time a call), as
# the default's (the PyTorch DDP sample's 1.382, 142.1 us) is; its contention
# alone (no time a call) no longer than both; a larger contention, a longer step
ar="--allreduce $multi/st-allreduce-h200x2.csv"
printf 'contention,call_us\n1,0\n' > "$tmp/one.csv"
printf 'contention,call_us\n2.5,0\n' > "$tmp/more.csv"
a=$(predicted "$bf16" $ar --contention "$tmp/one.csv" --what-if ranks=2)
d=$(predicted "$bf16" $ar --what-if ranks=2)
b=$(predicted "$bf16" $ar --contention "$tmp/cal.csv" --what-if ranks=2)
e=$(predicted "$bf16" $ar --contention "$tmp/more.csv" --what-if ranks=2)
awk -F, 'NR == 2 { print $1 ",0" } NR == 1' "$tmp/cal.csv" > "$tmp/nocall.csv"
c=$(predicted "$bf16" $ar --contention "$tmp/nocall.csv" --what-if ranks=2)
lt "$a" "$d" && lt "$a" "$b" && ! lt "$b" "$c" ||
	fail "ranks=2: neither $a, the default $d, ddp-bucket's calibration $b, its contention alone $c: not in that order"
lt "$a" "$e" || fail "ranks=2: contention 2.5 ($e) no longer than 1 ($a)"
"$st" explain "$bf16" $ar --what-if ranks=2 --section what_if 2>&1 | grep -q "the default without --contention" ||
	fail "ranks=2: the note does not say where its calibration came from"

# usage: an error line that says the form, non-zero
for bad in data=-1 data precision=fp16 precision batch=x0 batch=abc 'batch=x2000' bucket-mb=0 bucket-mb fuse=all fuse; do
	"$st" explain "$fp32" --what-if "$bad" > /dev/null 2> "$tmp/err" && fail "--what-if $bad accepted"
	head -1 "$tmp/err" | grep -q "^error: --what-if '$bad': say" || fail "--what-if $bad: $(cat "$tmp/err")"
done
for body in 'x,y\n1,2\n' 'contention\n0.5\n' 'contention,call_us\n' 'call_us\n-3\n'; do
	printf "$body" > "$tmp/bad.csv"
	"$st" explain "$bf16" --allreduce "$multi"/st-allreduce-h200x2.csv --contention "$tmp/bad.csv" --what-if ranks=2 \
		> /dev/null 2> "$tmp/err" && fail "--contention '$body' accepted"
	grep -q "error" "$tmp/err" || fail "--contention '$body': $(cat "$tmp/err")"
done

check_done explain.rules
