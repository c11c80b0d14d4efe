#!/bin/sh
# scripts/attention_check.sh BUILD OUT [quick]: the attention kernels on the
# GPU in one go: test_gpu_flash (every path against its CPU and GPU
# references), flash_bench paths (the BF16 forward's Hopper kernels against
# FlashAttention-2), then PyTorch's SDPA, default backend and forced FA2, at
# d_head 64 and 128 (scripts/torch_attention.py). Logs under OUT.
set -u
build=$1 out=$2
mkdir -p "$out"
timeout 300 "$build/tests/gpu/test_gpu_flash" ${3:-} > "$out/test_flash.log" 2>&1
echo "test_gpu_flash rc $?" | tee -a "$out/summary.txt"
grep -c FAIL "$out/test_flash.log" | sed 's/^/FAIL lines: /' | tee -a "$out/summary.txt"
timeout 300 "$build/tests/gpu/flash_bench" paths > "$out/flash_paths.log" 2>&1
echo "flash_bench paths rc $?" | tee -a "$out/summary.txt"
timeout 400 python3 scripts/torch_attention.py --impl default,sdpa --d-head 64,128 \
	--seq 1024,4096,8192,16384 --sdpa-extra-seq 32768 --runs 10 > "$out/torch_sdpa.log" 2>&1
echo "torch_attention rc $?" | tee -a "$out/summary.txt"
