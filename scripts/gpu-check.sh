#!/usr/bin/env bash
# scripts/gpu-check.sh BUILD OUTDIR [stage...]: what runs on the GPU machine.
# Stages: tests (ctest -L gpu), samples (re-record samples/), overhead
# (record vs bench step time, scripts/overhead.sh), sweep (Table 1 of
# docs/measurements.md), every-size (record each size at ctx 512, and the 2.7B ctx 1024
# OOM), torch (agreement with PyTorch), attention (issue 14's measurements:
# bench attention beside PyTorch's SDPA and naive attention, the model with
# flash, record attention and naive/flash bundles; docs/attention.md),
# fused (issue 17's measurements: bench --kernels plain,fused per size and
# precision, PyTorch eager and torch.compile on the same sizes, the
# agreement check for both kernel sets, a fused bundle; docs/measurements.md, "Fused"),
# fused-step and fused-torch (issue 27's: the BF16 step plain and fused at
# every size, its agreement with PyTorch in FP32 and BF16, a recorded large
# fused bundle; then PyTorch eager and torch.compile on small to large),
# multi (issue 16 on two GPUs, nvidia-h200-x2: multi-tests, multi-allreduce,
# multi-ddp and multi-record in turn; each can be run alone), torchrun (issue
# 23 on two GPUs: PyTorch DDP, FSDP, two simulated nodes and mpirun, recorded
# with record --), drops (dropped records and CUPTI's buffer traffic per DDP mode),
# exchange (issue 41's all-reduce engines, bench contention, the gpu4 tests).
# Default: tests samples overhead torch.
# The build must have been configured at the path its CTest files name; on
# the GPU machine link that path to the checkout first (see docs/gpu-machine.md).
set -uo pipefail
build=$1; out=$2; shift 2
stages=${*:-tests samples overhead torch}
expanded=""
for s in $stages; do   # multi: its four stages
	[ "$s" = multi ] && s="multi-tests multi-allreduce multi-ddp multi-record"
	expanded="$expanded $s"
done
stages=$expanded
export LD_LIBRARY_PATH=$PWD/.devdeps/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
st=$build/steptrace
mkdir -p "$out"
nvidia-smi -L

for stage in $stages; do
case $stage in
tests)
	ctest --test-dir "$build" -L gpu --output-on-failure 2>&1 | tee "$out/gpu-tests.log" |
		grep -E "Test +#|tests passed|tests failed"
	;;
samples)
	mkdir -p "$out/samples"
	common="--model small --ctx 128 --warmup 1 --steps 2"
	for p in fp32 bf16; do
		$st record $common --precision $p --mode train -o "$out/samples/small-$p-train.stb" 2>&1 | tail -3
	done
	$st record $common --precision bf16 --mode forward -o "$out/samples/small-bf16-forward.stb" 2>&1 | tail -3
	for f in "$out"/samples/*.stb; do $st info "$f" | grep -E "complete|dropped|events" | head -4; done
	ls -l "$out/samples"
	;;
overhead)
	bash scripts/overhead.sh "$build" "$out" 2>&1 | tee "$out/overhead.log"
	;;
sweep)
	# Table 1 (docs/measurements.md): bench_table.py turns this and a PyTorch CSV into Markdown.
	$st bench --model small,medium,large,xl,2.7B --ctx 128,256,512,1024 --precision fp32,bf16 \
		--mode forward,train --warmup 2 --steps 8 --format csv > "$out/bench-sweep.csv"
	python3 scripts/bench_table.py "$out/bench-sweep.csv" docs/torch-eager-h100.csv | tail -4
	;;
every-size)
	for m in small medium large xl 2.7B; do
		$st record --model $m --ctx 512 --precision bf16 --mode train --warmup 1 --steps 1 \
			--no-calibrate -o "$out/size.stb" 2>&1 | tail -1
		$st info "$out/size.stb" | grep -E "^(complete|end reason|events|dropped) "
	done
	$st record --model 2.7B --ctx 1024 --precision bf16 --mode train --warmup 1 --steps 1 \
		--no-calibrate -o "$out/size.stb" 2>&1 | grep -E "error|record:"; echo "exit ${PIPESTATUS[0]}"
	$st info "$out/size.stb" | grep -E "^(complete|end reason|events) "
	rm -f "$out/size.stb"
	;;
attention)
	seq=256,1024,4096,8192,16384,32768,65536
	echo "== $st bench attention --impl naive,flash --precision bf16 --seq $seq --warmup 3 --steps 10"
	$st bench attention --impl naive,flash --precision bf16 --seq $seq --warmup 3 --steps 10 \
		--format csv > "$out/st-bf16.csv" 2>/dev/null
	echo "== $st bench attention --impl naive,flash --precision fp32 --seq ${seq%,65536} --warmup 2 --steps 5"
	$st bench attention --impl naive,flash --precision fp32 --seq "${seq%,65536}" --warmup 2 --steps 5 \
		--format csv > "$out/st-fp32.csv" 2>/dev/null
	for a in naive flash; do
		echo "== $st bench --model large --ctx 512 --precision bf16 --attention $a --warmup 3 --steps 10"
		$st bench --model large --ctx 512 --precision bf16 --attention $a --warmup 3 --steps 10 2>/dev/null
	done
	for a in naive flash; do
		echo "== $st bench --model small --ctx 4096,8192,16384 --precision bf16 --attention $a --warmup 1 --steps 3"
		$st bench --model small --ctx 4096,8192,16384 --precision bf16 --attention $a --warmup 1 --steps 3 2>/dev/null
	done
	for a in naive flash; do
		echo "== $st record --model small --ctx 512 --precision bf16 --attention $a --warmup 1 --steps 2 -o $a.stb"
		$st record --model small --ctx 512 --precision bf16 --attention $a --warmup 1 --steps 2 \
			-o "$out/$a.stb" 2>&1 | tail -2
	done
	for p in fp32 bf16; do
		echo "== $st record attention --impl naive,flash --precision $p --seq $seq -o attn-$p.stb"
		$st record attention --impl naive,flash --precision $p --seq $seq -o "$out/attn-$p.stb" \
			2>&1 >/dev/null | tail -1
	done
	for p in fp32 bf16; do
		echo "== torch_check.py run --steptrace $st --precision $p --mode train --attention flash"
		PYTHONUNBUFFERED=1 python3 scripts/torch_check.py run --steptrace "$st" --precision $p \
			--mode train --attention flash --workdir "$out/torch-check-flash-$p" 2>&1 | tail -4
	done
	echo "== python3 scripts/torch_attention.py --seq $seq --sdpa-extra-seq '' --runs 10 --fp32-too --steptrace st-bf16.csv --steptrace st-fp32.csv"
	PYTHONUNBUFFERED=1 python3 scripts/torch_attention.py --seq $seq --sdpa-extra-seq '' --runs 10 \
		--fp32-too --steptrace "$out/st-bf16.csv" --steptrace "$out/st-fp32.csv" > "$out/torch-attention.log" 2>&1
	tail -140 "$out/torch-attention.log" | grep "^|"
	;;
fused)
	echo "== $st bench --model small,medium,large --ctx 512 --precision bf16,fp32 --kernels plain,fused --warmup 3 --steps 10"
	$st bench --model small,medium,large --ctx 512 --precision bf16,fp32 --kernels plain,fused \
		--warmup 3 --steps 10 --format md > "$out/fused-bench.md" 2>/dev/null
	sed -n '/Plain and fused/,$p' "$out/fused-bench.md"
	for c in "" --compile; do
		echo "== torch_bench.py --model small,medium --ctx 512 --precision bf16 --mode train $c"
		PYTHONUNBUFFERED=1 python3 scripts/torch_bench.py --model small,medium --ctx 512 \
			--precision bf16 --mode train --warmup 3 --steps 10 --format csv $c \
			> "$out/torch-bench$c.csv" 2>/dev/null; cat "$out/torch-bench$c.csv"
	done
	for k in plain fused; do
		for p in fp32 bf16; do
			echo "== torch_check.py run --steptrace $st --precision $p --mode train --kernels $k"
			PYTHONUNBUFFERED=1 python3 scripts/torch_check.py run --steptrace "$st" --precision $p \
				--mode train --kernels $k --workdir "$out/torch-check-$k-$p" 2>&1 | tail -4
		done
	done
	echo "== $st record --model small --ctx 512 --precision bf16 --kernels fused --warmup 1 --steps 2 -o fused.stb"
	$st record --model small --ctx 512 --precision bf16 --kernels fused --warmup 1 --steps 2 \
		-o "$out/fused.stb" 2>&1 | tail -2
	;;
fused-step)
	a="--model small,medium,large,xl --ctx 512 --precision bf16 --kernels plain,fused --warmup 3 --steps 10"
	echo "== $st bench $a"
	$st bench $a --format csv > "$out/fused-bench.csv" 2>"$out/fused-bench.err"; cat "$out/fused-bench.csv"
	for p in fp32 bf16; do
		echo "== torch_check.py run --steptrace $st --precision $p --mode train --kernels fused"
		PYTHONUNBUFFERED=1 python3 scripts/torch_check.py run --steptrace "$st" --precision $p \
			--mode train --kernels fused --workdir "$out/torch-check-fused-$p" 2>&1 | tail -3
	done
	a="--model large --ctx 512 --precision bf16 --kernels fused --warmup 1 --steps 1 --no-calibrate"
	echo "== $st record $a -o large-fused.stb"
	$st record $a -o "$out/large-fused.stb" 2>&1 | tail -2
	$st summary "$out/large-fused.stb" --by category | head -14
	;;
fused-torch)
	for c in "" --compile; do
		a="--model small,medium,large --ctx 512 --precision bf16 --mode train --warmup 3 --steps 10 $c"
		echo "== torch_bench.py $a"
		PYTHONUNBUFFERED=1 python3 scripts/torch_bench.py $a --format csv \
			> "$out/torch-bench$c.csv" 2>"$out/torch-bench$c.err"; cat "$out/torch-bench$c.csv"
	done
	;;
multi-tests)
	# NVLink multicast can take the host's GPUs out of service: off in everything started here
	export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
	nvidia-smi topo -m | head -4
	ctest --test-dir "$build" -L gpu2 --output-on-failure 2>&1 | tee "$out/gpu2-tests.log" |
		grep -E "Test +#|tests passed|tests failed|mean loss"
	ctest --test-dir "$build" -R gpu_comm_check --output-on-failure 2>&1 | grep -E "Test +#"
	;;
exchange)
	# issue 41 on two GPUs (four with N=4): the all-reduce engines against one GPU
	# (scripts/ddp_exchange.sh; table: multi_tables.py --exchange), bench contention's
	# table and ranks=N calibration (issue 37), and the gpu4 tests where there are four
	export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
	bash scripts/ddp_exchange.sh "$out/exchange" 2>&1 | tail -5
	python3 scripts/multi_tables.py --exchange "$out/exchange"
	echo "== $st bench contention --nproc 2 --calibration $out/contention-calibration.csv"
	$st bench contention --nproc 2 --calibration "$out/contention-calibration.csv" --format csv \
		> "$out/contention.csv" 2> "$out/contention.err"; tail -2 "$out/contention.err"
	cat "$out/contention.csv" "$out/contention-calibration.csv"
	[ "$(nvidia-smi -L | wc -l)" -ge 4 ] && ctest --test-dir "$build" -L gpu4 --output-on-failure 2>&1 |
		tee "$out/gpu4-tests.log" | grep -E "Test +#|tests passed|tests failed"
	;;
multi-allreduce)
	export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
	args="--sizes 1MiB,10MiB,100MiB,1GiB --dtype f32,bf16 --warmup 5 --iters 20"
	echo "== $st bench allreduce --nproc 2 $args"
	$st bench allreduce --nproc 2 $args --format csv > "$out/st-allreduce.csv" 2>"$out/st-allreduce.err"
	tail -2 "$out/st-allreduce.err"
	echo "== python3 scripts/torch_allreduce.py --nproc 2 $args"
	PYTHONUNBUFFERED=1 python3 scripts/torch_allreduce.py --nproc 2 $args --format csv \
		> "$out/torch-allreduce.csv" 2>"$out/torch-allreduce.err"; tail -2 "$out/torch-allreduce.err"
	python3 scripts/multi_tables.py --allreduce "$out/st-allreduce.csv" "$out/torch-allreduce.csv"
	;;
multi-ddp)
	export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
	args="--model small,large,xl --ctx 512 --precision fp32,bf16 --warmup 2 --steps 5"
	echo "== $st bench $args   (one GPU, the same batch per GPU)"
	$st bench $args --format csv > "$out/st-single.csv" 2>/dev/null
	for m in naive flat overlap bucket; do
		echo "== $st bench --nproc 2 --ddp $m $args"
		$st bench --nproc 2 --ddp $m $args --format csv > "$out/st-ddp-$m.csv" 2>"$out/st-ddp-$m.err" ||
			tail -3 "$out/st-ddp-$m.err"
	done
	echo "== python3 scripts/torch_ddp.py --nproc 2 $args"
	PYTHONUNBUFFERED=1 python3 scripts/torch_ddp.py --nproc 2 $args --format csv > "$out/torch-ddp.csv" \
		2>"$out/torch-ddp.err"; tail -2 "$out/torch-ddp.err"
	python3 scripts/multi_tables.py --single "$out/st-single.csv" --ddp "$out"/st-ddp-*.csv \
		--torch-ddp "$out/torch-ddp.csv"
	;;
multi-record)
	export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
	for m in bucket naive; do
		echo "== $st record --nproc 2 --ddp $m --model small --ctx 512 --precision bf16 --warmup 1 --steps 2 -o ddp-$m.stb"
		$st record --nproc 2 --ddp $m --model small --ctx 512 --precision bf16 --warmup 1 --steps 2 \
			-o "$out/ddp-$m.stb" 2>&1 | tail -3
	done
	echo "== $st comm ddp-bucket.rank0.stb ddp-bucket.rank1.stb"
	$st comm "$out"/ddp-bucket.rank*.stb
	echo "== $st summary ddp-bucket.rank*.stb --by category"
	$st summary "$out"/ddp-bucket.rank*.stb --by category
	echo "== $st diff ddp-naive.rank*.stb ddp-bucket.rank*.stb --top 8"
	$st diff "$out"/ddp-naive.rank*.stb "$out"/ddp-bucket.rank*.stb --top 8
	$st export "$out"/ddp-bucket.rank*.stb -o "$out/ddp-bucket.pftrace"
	$st report "$out"/ddp-bucket.rank*.stb -o "$out/ddp-bucket.html"
	ls -l "$out"/ddp-*.stb
	;;
torchrun)
	# issue 23: PyTorch DDP and FSDP under torchrun, two simulated nodes and mpirun, recorded
	# with record -- (the gpu2 test foreign.torchrun; its bundles and reports kept)
	export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
	ctest --test-dir "$build" -R foreign.torchrun -V 2>&1 | grep -E "ddp:|fsdp:|nodes:|mpi:|FAIL|Passed|Failed"
	tar czf "$out/torchrun.tgz" -C "$build/tests/foreign" torchrun
	;;
drops)
	# issue 23: dropped records and CUPTI's buffer traffic (STEPTRACE_DEBUG_BUFFERS) per DDP mode
	export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
	mkdir -p "$out/drops"
	for m in naive bucket; do
		echo "== record --nproc 2 --ddp $m"
		STEPTRACE_DEBUG_BUFFERS=1 $st record --nproc 2 --ddp $m --model small --ctx 512 \
			--precision bf16 --warmup 1 --steps 2 -o "$out/drops/$m.stb" 2>&1 | grep -E "CUPTI buffers|record:"
		$st info "$out/drops/$m.rank0.stb" 2>&1 | grep -A12 "Events per kind" | grep -E "kernel|api|range"
		$st steps "$out/drops/$m.rank0.stb" 2>/dev/null | grep -E "^ +[0-9]"
	done
	;;
torch)
	for p in fp32 tf32 bf16; do
		PYTHONUNBUFFERED=1 python3 scripts/torch_check.py run --steptrace "$st" --precision $p --mode train 2>&1 |
			tee "$out/torch-check-$p.log" | tail -4
	done
	;;
esac
done
