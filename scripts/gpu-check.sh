#!/usr/bin/env bash
# scripts/gpu-check.sh BUILD OUTDIR [stage...]: what runs on the GPU machine.
# Stages: tests (ctest -L gpu), samples (re-record samples/), overhead
# (record vs bench step time), torch (agreement with PyTorch). Default: all.
# The build must have been configured at the path its CTest files name; on
# the GPU machine link that path to the checkout first (see README).
set -uo pipefail
build=$1; out=$2; shift 2
stages=${*:-tests samples overhead torch}
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
	# Same configuration under bench (no CUPTI) and under record: mean measured step wall time.
	echo "model,ctx,precision,bench_ms,record_ms,overhead_pct" > "$out/overhead.csv"
	for m in small large; do for p in fp32 bf16; do
		b=$($st bench --model $m --ctx 512 --precision $p --mode train --warmup 3 --steps 10 --format csv 2>/dev/null |
			awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i=="step_ms") c=i} NR==2{print $c}')
		$st record --model $m --ctx 512 --precision $p --mode train --warmup 3 --steps 10 --no-calibrate \
			-o "$out/ovh.stb" >/dev/null 2>"$out/record-$m-$p.log"
		r=$($st steps "$out/ovh.stb" --format csv | awk -F, '$1=="Steps"{for(i=1;i<=NF;i++) if($i=="Wall Mean (ms)") c=i} $1=="measured"{print $c}')
		echo "$m,512,$p,$b,$r,$(awk "BEGIN{if ($b>0) printf \"%.2f\", ($r/$b-1)*100}")" | tee -a "$out/overhead.csv"
	done; done
	rm -f "$out/ovh.stb"
	;;
torch)
	for p in fp32 tf32 bf16; do
		PYTHONUNBUFFERED=1 python3 scripts/torch_check.py run --steptrace "$st" --precision $p --mode train 2>&1 |
			tee "$out/torch-check-$p.log" | tail -4
	done
	;;
esac
done
