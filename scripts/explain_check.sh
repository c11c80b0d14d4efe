#!/bin/bash
# explain_check.sh OUT: `steptrace explain`'s predictions against
# measurements made in the same run on one GPU (docs/explain.md):
#   - the built-in step, small and large BF16, plain and fused kernels:
#     each bundle's replay against its measured steps, and the plain
#     bundle's predictions (--what-if graph, and graph with the small
#     kernels fused away) against the fused run's measured step;
#   - a PyTorch GPT-2 step (scripts/gpt_train.py, no NVTX, no steptrace
#     import) eager, and the same under torch.compile(mode="reduce-overhead"):
#     the eager bundle's launch-bound share and its `--what-if graph`
#     prediction against the compiled run's measured step.
# Every bundle, explain output and the table go under OUT.
set -u
out=${1:?usage: explain_check.sh OUT}
st=${ST:-build-rel/steptrace}
mkdir -p "$out"
step_ms() { "$st" explain "$1" --section steps --format csv 2>/dev/null | awk -F, '$1=="mean"{print $2}'; }
pred_ms() { f=$1; shift; "$st" explain "$f" "$@" --section what_if --format csv 2>/dev/null | tail -1 | awk -F, '{print $4}'; }
for m in small large; do
	for k in plain fused; do
		"$st" record --model $m --ctx 512 --precision bf16 --kernels $k --warmup 2 --steps 6 \
			-o "$out/$m-$k.stb" > "$out/record-$m-$k.log" 2>&1 || echo "record $m $k failed"
		"$st" explain "$out/$m-$k.stb" --format md > "$out/explain-$m-$k.md" 2>&1
		"$st" steps "$out/$m-$k.stb" > "$out/steps-$m-$k.txt" 2>&1
	done
	p=$(step_ms "$out/$m-plain.stb"); f=$(step_ms "$out/$m-fused.stb")
	g=$(pred_ms "$out/$m-plain.stb" --what-if graph)
	gs=$(pred_ms "$out/$m-plain.stb" --what-if graph --what-if 'kernels:<10us=0')
	echo "builtin $m plain_ms=$p fused_ms=$f pred_graph_ms=$g pred_graph_small_ms=$gs"
done | tee "$out/builtin.txt"
py=${PYTHON:-python3}
"$st" record -o "$out/torch-eager.stb" -- $py scripts/gpt_train.py --preset gpt2 --batch 8 --ctx 512 --steps 10 \
	> "$out/record-torch-eager.log" 2>&1 || echo "record torch eager failed"
"$st" record -o "$out/torch-graphs.stb" -- $py scripts/gpt_train.py --preset gpt2 --batch 8 --ctx 512 --steps 14 \
	--compile reduce-overhead > "$out/record-torch-graphs.log" 2>&1 || echo "record torch compile failed"
for b in torch-eager torch-graphs; do
	"$st" explain "$out/$b.stb" --format md > "$out/explain-$b.md" 2>&1
	"$st" steps "$out/$b.stb" > "$out/steps-$b.txt" 2>&1
done
e=$(step_ms "$out/torch-eager.stb"); c=$(step_ms "$out/torch-graphs.stb")
g=$(pred_ms "$out/torch-eager.stb" --what-if graph)
echo "torch eager_ms=$e reduce_overhead_ms=$c pred_graph_ms=$g" | tee "$out/torch.txt"
