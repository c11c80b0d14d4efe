#!/bin/sh
# scripts/attention_check.sh BUILD OUT: the BF16 attention measurements of
# docs/measurements.md's "Attention against PyTorch" table in one go, logs under OUT:
# test_gpu_flash (every path against its CPU and GPU references),
# flash_bench paths (the Hopper kernels against FlashAttention-2),
# `steptrace bench attention` in BF16, PyTorch's SDPA (default backend and
# forced FA2) and naive attention beside it (scripts/torch_attention.py, the
# tables at the end of torch-attention.log), the agreement with PyTorch of a
# training step with flash (scripts/torch_check.py), and the large model's
# step with each attention.
set -u
build=$1 out=$2
st=$build/steptrace
seq=256,1024,4096,8192,16384,32768,65536
mkdir -p "$out"
timeout 300 "$build/tests/gpu/test_gpu_flash" > "$out/test_flash.log" 2>&1
echo "test_gpu_flash rc $? ($(grep -c ' ok$' "$out/test_flash.log") checks ok, $(grep -c FAIL "$out/test_flash.log") FAIL)"
timeout 300 "$build/tests/gpu/flash_bench" paths > "$out/flash_paths.log" 2>&1
echo "flash_bench paths rc $?"
echo "== $st bench attention --impl naive,flash --precision bf16 --seq $seq --warmup 3 --steps 10"
timeout 400 "$st" bench attention --impl naive,flash --precision bf16 --seq $seq --warmup 3 \
	--steps 10 --format csv > "$out/st-bf16.csv" 2> "$out/st-bf16.err"
echo "rc $?"
"$st" bench attention --impl flash --precision bf16 --seq 1024 --warmup 1 --steps 1 2>/dev/null |
	grep "flash ran"
echo "== python3 scripts/torch_attention.py --seq $seq --sdpa-extra-seq '' --runs 10 --steptrace st-bf16.csv"
PYTHONUNBUFFERED=1 timeout 500 python3 scripts/torch_attention.py --seq $seq --sdpa-extra-seq '' \
	--runs 10 --steptrace "$out/st-bf16.csv" > "$out/torch-attention.log" 2>&1
echo "rc $?"
echo "== torch_check.py run --steptrace $st --precision bf16 --mode train --attention flash"
PYTHONUNBUFFERED=1 timeout 300 python3 scripts/torch_check.py run --steptrace "$st" \
	--precision bf16 --mode train --attention flash --workdir "$out/torch-check-flash-bf16" 2>&1 |
	tail -4
for a in naive flash; do
	echo "== $st bench --model large --ctx 512 --precision bf16 --attention $a --warmup 3 --steps 10"
	"$st" bench --model large --ctx 512 --precision bf16 --attention $a --warmup 3 --steps 10 \
		2>/dev/null | head -8
done
