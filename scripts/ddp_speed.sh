#!/bin/bash
# ddp_speed.sh OUT: bucketed data parallelism on two GPUs against one GPU
# and PyTorch DDP, in one call (docs/measurements.md, "Several GPUs"): `steptrace bench`
# on one GPU, then `--nproc 2 --ddp bucket` with the defaults (25 MB
# buckets, --sm-carveout 28, --nccl-ctas 12), without the carve-out and the
# CTA cap (--sm-carveout 0 --nccl-ctas 0: the step before #27), and with
# 100 MB buckets; then scripts/torch_ddp.py with the same flags. BF16
# small,large,xl and FP32 small,large (MODELS, FP32_MODELS), ctx 512,
# batch 4 per rank. CSVs in OUT; tables: scripts/multi_tables.py --speed OUT.
set -u
out=${1:?usage: ddp_speed.sh OUT}
st=${ST:-build-rel/steptrace}
py=${PYTHON:-python3}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out"
steps="--warmup ${WARMUP:-3} --steps ${STEPS:-10}"
for p in bf16:${MODELS:-small,large,xl} fp32:${FP32_MODELS:-small,large}; do
	prec=${p%%:*}
	flags="--model ${p#*:} --ctx 512 --precision $prec $steps --format csv"
	"$st" bench $flags > "$out/$prec-one.csv" 2> "$out/$prec-one.log" || echo "$prec one GPU failed"
	for v in bucket: old:"--sm-carveout 0 --nccl-ctas 0" b100:"--bucket-mb 100"; do
		name=${v%%:*}
		"$st" bench --nproc 2 --ddp bucket $flags ${v#*:} > "$out/$prec-$name.csv" 2> "$out/$prec-$name.log" ||
			echo "$prec $name failed"
	done
	"$py" scripts/torch_ddp.py --nproc 2 $flags > "$out/$prec-torch.csv" 2> "$out/$prec-torch.log" ||
		echo "$prec PyTorch DDP failed"
done
