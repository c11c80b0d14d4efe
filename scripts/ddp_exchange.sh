#!/bin/bash
# ddp_exchange.sh OUT: the gradients' all-reduce three ways on two GPUs
# against one GPU, in one call (docs/measurements.md, "Several GPUs";
# issue 41): `steptrace bench` on one GPU, then `--nproc 2 --ddp bucket`
# with NCCL's all-reduce (the defaults: 25 MB buckets, --sm-carveout 28
# under BF16, --nccl-ctas 12), with the copy engines' reduce-scatter and
# all-gather (--allreduce-by ce, 100 MB buckets) and with the copy engines'
# exchange averaged inside AdamW (--allreduce-by exchange); BF16 small and
# large with the plain and the fused kernels, FP32 small plain; then
# scripts/torch_ddp.py (PyTorch DDP, eager, autocast) with the same model
# flags. ctx 512, batch 4 per rank. CSVs in OUT; the table:
# python3 scripts/multi_tables.py --exchange OUT.
set -u
out=${1:?usage: ddp_exchange.sh OUT}
st=${ST:-build-rel/steptrace}
py=${PYTHON:-python3}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out"
steps="--warmup ${WARMUP:-3} --steps ${STEPS:-10}"
for p in bf16:plain:${MODELS:-small,large} bf16:fused:${MODELS:-small,large} fp32:plain:${FP32_MODELS:-small}; do
	prec=${p%%:*}; rest=${p#*:}; kern=${rest%%:*}; models=${rest#*:}
	[ -n "$models" ] || continue
	flags="--model $models --ctx 512 --precision $prec --kernels $kern $steps --format csv"
	tag=$prec-$kern
	"$st" bench $flags > "$out/$tag-one.csv" 2> "$out/$tag-one.log" || echo "$tag one GPU failed"
	for v in nccl: ce:"--allreduce-by ce --bucket-mb 100" exchange:"--allreduce-by exchange"; do
		name=${v%%:*}
		"$st" bench --nproc 2 --ddp bucket $flags ${v#*:} > "$out/$tag-$name.csv" 2> "$out/$tag-$name.log" ||
			echo "$tag $name failed"
	done
	if [ "$kern" = plain ]; then
		"$py" scripts/torch_ddp.py --nproc 2 --model "$models" --ctx 512 --precision "$prec" $steps --format csv \
			> "$out/$prec-torch.csv" 2> "$out/$prec-torch.log" || echo "$prec PyTorch DDP failed"
	fi
done
