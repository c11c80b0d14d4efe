#!/bin/sh
# attention.sh STEPTRACE OUTDIR: `bench attention` and `record attention` on
# the GPU (label gpu; exit 77 where there is none).
#
# bench: a small grid of both implementations and precisions runs, every row
# ok with time and TFLOP/s; a configuration that cannot fit (naive scores of
# 1 TiB) is an OOM row and the sweep goes on after it.
#
# record: naive and flash at seq 256 and 65,536 with a batch chosen so that
# one BF16 score matrix (batch x 65536^2 x 2 bytes) takes 55-70% of the
# device: naive's probabilities cannot join it. The bundle is complete with
# nothing dropped and every kernel attributed; every report reads it; its
# steps name their configurations; `memory` at the first OOM names the
# score matrix with its size; `replay --capacity` judges each configuration.
set -u
st=$1 dir=$2
mkdir -p "$dir"
fail=0
check() {  # check DESCRIPTION COMMAND...: runs a test command quietly
	what=$1; shift
	if "$@"; then
		echo "ok   $what"
	else
		echo "FAIL $what"
		fail=1
	fi
}

"$st" bench attention --seq 256 --d-head 16 --steps 1 --warmup 0 >"$dir/probe.out" 2>"$dir/probe.err"
if grep -qi "no CUDA GPU\|needs a GPU build" "$dir/probe.err"; then
	echo "skip: no GPU here"
	exit 77
fi

# ---- bench attention ----
"$st" bench attention --impl naive,flash --precision fp32,bf16 --d-head 16,64 --seq 77,256 \
	--batch 2 --heads 3 --warmup 1 --steps 3 --format csv >"$dir/bench.csv" 2>"$dir/bench.err"
check "bench attention exits 0" [ $? = 0 ]
cat "$dir/bench.csv"
check "16 rows, every one ok" [ "$(grep -c ',ok$' "$dir/bench.csv")" = 16 ]
check "ms (means and medians) above zero, TFLOP/s too at seq 256, peak at least the memory before the backward" \
	awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$c["status"] == "ok" { n++
		if (!($c["forward_ms"] > 0 && $c["backward_ms"] > 0 && $c["forward_median_ms"] > 0 &&
		      $c["backward_median_ms"] > 0 && $c["peak_mib"] >= $c["before_backward_mib"] &&
		      $c["before_backward_mib"] > 0)) bad = 1
		if ($c["seq"] == 256 && !($c["forward_tflops"] > 0 && $c["backward_tflops"] > 0)) bad = 1 }
		END { exit bad || n != 16 || !c["forward_median_ms"] }' "$dir/bench.csv"

"$st" bench attention --impl naive --precision fp32 --batch 64 --d-head 16 --seq 65536,256 \
	--warmup 0 --steps 2 --format csv >"$dir/bench-oom.csv" 2>"$dir/bench-oom.err"
check "an OOM row does not stop the sweep (exit 0)" [ $? = 0 ]
cat "$dir/bench-oom.csv"
check "the OOM row, then an ok row" sh -c "sed -n 2p '$dir/bench-oom.csv' | grep -q ',65536,.*,OOM$' &&
	sed -n 3p '$dir/bench-oom.csv' | grep -q ',256,.*,ok$'"

# ---- record attention ----
mib=$(nvidia-smi --query-gpu=memory.total --format=csv,noheader,nounits -i 0 2>/dev/null | head -1)
[ -n "$mib" ] || mib=81559
batch=$(( (mib * 62 / 100 + 8191) / 8192 ))   # GiB / 8, of 62% of the device
bundle=$dir/attention.stb
STEPTRACE_RECORD_STATS=$dir/attention.stats "$st" record attention --impl naive,flash \
	--precision bf16 --d-head 16 --seq 256,65536 --batch "$batch" --warmup 1 --steps 1 \
	--no-calibrate -o "$bundle" >"$dir/record.out" 2>"$dir/record.err"
check "record attention exits 0 with an OOM inside" [ $? = 0 ]
cat "$dir/record.out" "$dir/record.err" "$dir/attention.stats"
check "nothing dropped, every kernel attributed, ended ok" sh -c "grep -q '^dropped 0$' '$dir/attention.stats' &&
	grep -q '^unattributed 0$' '$dir/attention.stats' && grep -q '^end_reason ok$' '$dir/attention.stats'"
"$st" info "$bundle" >"$dir/info.out" 2>&1
check "info: complete" grep -q "complete.*yes" "$dir/info.out"
"$st" summary "$bundle" --by op --format csv >"$dir/summary.csv" 2>&1
check "summary --by op: naive's parts and flash, no kernel without an op" sh -c "
	grep -q 'forward/attn/scores' '$dir/summary.csv' && grep -q 'backward/attn/softmax' '$dir/summary.csv' &&
	grep -q 'forward/attn/flash' '$dir/summary.csv' && grep -q 'backward/attn/flash' '$dir/summary.csv' &&
	! grep -q '(no op)' '$dir/summary.csv'"
"$st" steps "$bundle" --include-warmup --format csv >"$dir/steps.csv" 2>&1
cat "$dir/steps.csv"
check "7 steps (naive 65536 stops in its warm-up), named by configuration" sh -c "
	[ \$(grep -c ',attn d16 seq' '$dir/steps.csv') = 7 ] &&
	grep -q ',attn d16 seq65536 b$batch h1 bf16 flash$' '$dir/steps.csv'"
"$st" flops "$bundle" --range "attn d16 seq256 b$batch h1 bf16 naive" >"$dir/flops.out" 2>&1
cat "$dir/flops.out"
check "flops of one configuration: softmax against the products, per its one step" sh -c "
	grep -q 'attention forward: softmax takes' '$dir/flops.out' && grep -q 'totals / 1)' '$dir/flops.out'"
"$st" memory "$bundle" --format csv --section largest_at_oom >"$dir/memory.csv" 2>&1
cat "$dir/memory.csv"
scores=$(( batch * 65536 * 65536 * 2 ))
check "memory at the first OOM: the B x T x T score matrix, $scores bytes, is the largest live block" sh -c "
	grep '^1,' '$dir/memory.csv' |
	grep -q '^1,$scores,.*,temporary,forward,attn d16 seq65536 b$batch h1 bf16 naive/forward/attn/scores,'"
"$st" replay "$bundle" --capacity 24GiB --format csv --section capacity_by_range >"$dir/capacity.csv" 2>&1
cat "$dir/capacity.csv"
check "replay --capacity 24GiB: seq 256 fits, naive at 65536 does not" sh -c "
	grep -q '^attn d16 seq256 b$batch h1 bf16 naive,2,.*,ok,yes$' '$dir/capacity.csv' &&
	grep -q '^attn d16 seq65536 b$batch h1 bf16 naive,1,.*,OOM,no$' '$dir/capacity.csv'"
for r in ranges export report; do
	case $r in
	export) "$st" export "$bundle" -o "$dir/attention.pftrace" >/dev/null 2>&1 ;;
	report) "$st" report "$bundle" -o "$dir/attention.html" >/dev/null 2>&1 ;;
	*) "$st" $r "$bundle" >/dev/null 2>&1 ;;
	esac
	check "$r reads the bundle" [ $? = 0 ]
done
exit $fail
