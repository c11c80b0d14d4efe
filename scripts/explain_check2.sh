#!/bin/bash
# explain_check2.sh OUT: `steptrace explain` and `plan` against measurements
# made in the same run on two GPUs (docs/explain.md):
#   - the built-in step (small and large BF16) on one GPU, and data-parallel
#     on two with --ddp naive and bucket; the all-reduce table of these two
#     GPUs (bench allreduce); from the one-GPU bundle, ranks=2 predicted
#     naive (--naive) and bucketed, against the two-GPU runs; from the naive
#     two-GPU bundles, comm-overlap against the bucketed run; each two-GPU
#     run's replay across its ranks;
#   - plan's memory per device from the bucketed rank 0 bundle against its
#     measured peak, and from the model's sizes with --fsdp 2 against a
#     PyTorch FSDP run's peak (tests/foreign/ddp_train.py under torchrun).
set -u
out=${1:?usage: explain_check2.sh OUT}
st=${ST:-build-rel/steptrace}
py=${PYTHON:-python3}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
mkdir -p "$out"
step_ms() { "$st" explain "$@" --section steps --format csv 2>/dev/null | awk -F, '$1=="mean"{print $2 " (replayed " $10 ")"}'; }
pred_ms() { "$st" explain "$@" --section what_if --format csv 2>/dev/null | tail -1 | awk -F, '{print $4}'; }
"$st" bench allreduce --nproc 2 --sizes 1MiB,4MiB,16MiB,64MiB,256MiB,1GiB --dtype f32 --format csv \
	> "$out/allreduce.csv" 2> "$out/allreduce.log" || echo "bench allreduce failed"
for m in small large; do
	"$st" record --model $m --ctx 512 --precision bf16 --warmup 2 --steps 6 -o "$out/$m-one.stb" \
		> "$out/record-$m-one.log" 2>&1 || echo "record $m one failed"
	for d in naive bucket; do
		"$st" record --nproc 2 --ddp $d --model $m --ctx 512 --precision bf16 --warmup 2 --steps 6 \
			-o "$out/$m-$d.stb" > "$out/record-$m-$d.log" 2>&1 || echo "record $m $d failed"
		"$st" explain "$out/$m-$d".rank*.stb --format md > "$out/explain-$m-$d.md" 2>&1
	done
	"$st" explain "$out/$m-one.stb" --format md > "$out/explain-$m-one.md" 2>&1
	echo "$m one: $(step_ms "$out/$m-one.stb")"
	echo "$m naive: $(step_ms "$out/$m-naive".rank*.stb)  predicted from one (ranks=2 --naive): $(pred_ms "$out/$m-one.stb" --allreduce "$out/allreduce.csv" --what-if ranks=2 --naive)"
	echo "$m bucket: $(step_ms "$out/$m-bucket".rank*.stb)  predicted from one (ranks=2): $(pred_ms "$out/$m-one.stb" --allreduce "$out/allreduce.csv" --what-if ranks=2)  from naive (comm-overlap): $(pred_ms "$out/$m-naive".rank*.stb --what-if comm-overlap)"
	"$st" plan "$out/$m-bucket.rank0.stb" --section parallel > "$out/plan-$m-bucket.txt" 2>&1
	"$st" memory "$out/$m-bucket.rank0.stb" > "$out/memory-$m-bucket.txt" 2>&1
done 2>&1 | tee "$out/builtin.txt"
"$st" record -o "$out/fsdp.stb" -- "$py" -m torch.distributed.run --nproc_per_node 2 tests/foreign/ddp_train.py --fsdp \
	> "$out/record-fsdp.log" 2>&1 || echo "record fsdp failed"
ls "$out"/fsdp* >> "$out/record-fsdp.log" 2>&1
for f in "$out"/fsdp*.stb; do "$st" memory "$f" > "$f.memory.txt" 2>&1; done
"$st" plan --d-model 512 --d-ff 2048 --blocks 4 --vocab 8192 --fsdp 2 --section parallel \
	> "$out/plan-fsdp.txt" 2>&1
"$st" explain "$out"/fsdp*.stb --format md > "$out/explain-fsdp.md" 2>&1
