#!/bin/sh
# auto.sh STEPTRACE OUTDIR: PyTorch programs written as people write them
# (scripts/gpt_train.py: no NVTX, no import of steptrace, a DataLoader,
# AdamW, BF16 autocast), recorded with the default --torch auto (label
# gpu; issue 22). Checks, with steptrace's own reports:
#  - training: steps = optimizer steps exactly, the first flagged warm-up,
#    "optimizer steps (PyTorch)"; every phase (data, zero_grad, forward,
#    backward, optimizer) has kernels or ranges; <= 1% of the measured GPU
#    time without an op; module ranges on the warm-up and the first
#    measured step only (--modules-every's default 10; steps lists them);
#    the backward's GEMMs of each layer's mlp.c_fc (found from autograd's
#    current node) under step/backward/GPT/transformer.h.N/mlp/c_fc, and
#    with --modules-every 1 on every step; memory at the peak:
#    parameters = the model's parameter bytes exactly, optimizer state =
#    2 x that, gradients = that;
#  - gradient accumulation (2 micro-batches per optimizer step): steps =
#    optimizer steps, two backward passes each;
#  - torch.compile: steps, Triton kernels under a compiled region of the
#    model in the forward and in the backward;
#  - an inference loop: a step per call of the model;
#  - --torch ops: aten ops with shapes, FLOPs of the matrix products;
#  - torch.compile(mode="reduce-overhead"): CUDA graph replays keep their ops;
#  - a program without annotation: a step per cudaProfilerStart/Stop range.
# Exit 77 (skipped) without python3 + torch + a CUDA GPU. Outputs stay in OUTDIR.
set -u
. "$(dirname "$0")/torch_prologue.sh"
train="$here/../../scripts/gpt_train.py"

# record NAME RECORD-ARGS... -- COMMAND...: the bundle is $out/NAME.stb, stderr in $out/NAME.err
record() {
	name=$1
	shift
	echo "+ steptrace record -o $name.stb $*"
	"$st" record -o "$out/$name.stb" "$@" >"$out/$name.out" 2>"$out/$name.err"
	rc=$?
	cat "$out/$name.err"
	[ "$rc" = 0 ] || fail "$name: exit $rc"
	grep -q "CUPTI DROPPED" "$out/$name.err" && fail "$name: CUPTI dropped records"
	grep -q "PyTorch annotation" "$out/$name.err" && fail "$name: the Python side turned itself off"
	[ -f "$out/$name.stb" ] || fail "$name: no bundle"
}

# steps BUNDLE: "index warm-up" per step
steps_of() {
	"$st" steps "$1" --include-warmup --format csv | awk -F, '/^[0-9]+,(yes|no),/ { print $1, $2 }'
}

# share BUNDLE NAME [ARGS]: Time (%) of the row NAME of summary --by op
share() {
	b=$1 n=$2
	shift 2
	"$st" summary "$b" --by op --format csv "$@" | awk -F, -v n="$n" '$NF == n { print $1; exit }'
}

# 1. training, every tensor's allocation recorded (--torch-alloc async: memory categories)
record train --torch-alloc async -- "$py" "$train" --steps 5
b=$out/train.stb
printf '0 yes\n1 no\n2 no\n3 no\n4 no\n' | cmp -s - "$(steps_of "$b" >"$out/train.steps"; echo "$out/train.steps")" ||
	fail "train: steps and warm-up flags: $(cat "$out/train.steps")"
grep -q "5 steps (1 warm-up) from optimizer steps (PyTorch)" "$out/train.err" || fail "train: the summary line"
"$st" info "$b" | grep -q "optimizer steps (PyTorch)" || fail "train: info does not say how the steps were found"
noop=$(share "$b" "(no op)")
awk -v x="${noop:-0}" 'BEGIN { exit !(x <= 1.0) }' || fail "train: ${noop}% of GPU time without an op"
"$st" summary "$b" --by op --format csv >"$out/train.byop" || fail "train: summary --by op"
for phase in forward backward optimizer; do
	grep -q ",$phase/" "$out/train.byop" || fail "train: no op of phase $phase: $(head -20 "$out/train.byop")"
done
"$st" ranges "$b" --format csv >"$out/train.ranges" || fail "train: ranges"
for phase in data zero_grad forward backward optimizer; do
	grep -q ",step/$phase," "$out/train.ranges" || fail "train: no range step/$phase"
done
# backward GEMMs of c_fc: input and weight gradients, in each measured step with modules
gemms_of() {
	for layer in 0 1 2 3; do
		"$st" summary "$1" --range "step/backward/GPT/transformer.h.$layer/mlp/c_fc" --by category \
			--format csv >"$out/train.cfc$layer" || fail "$1: summary --range backward c_fc"
		gemms=$(awk -F, '$NF == "GEMM" { print $3 }' "$out/train.cfc$layer")
		[ "${gemms:-0}" -ge "$2" ] ||
			fail "$1: layer $layer's backward c_fc has ${gemms:-0} GEMMs, want $2: $(cat "$out/train.cfc$layer")"
	done
}
"$st" steps "$b" 2>&1 | grep -q "module ranges on 2 of the 5 steps (0, 1; the others have phases only)" ||
	fail "train: module ranges not on steps 0 and 1 alone: $("$st" steps "$b" 2>&1 | tail -3)"
gemms_of "$b" 2   # the first measured step
record every1 --modules-every 1 -- "$py" "$train" --steps 5
gemms_of "$out/every1.stb" 8   # 4 measured steps
params=$("$py" -c "import json, sys; print([json.loads(l) for l in open(sys.argv[1]) if l.startswith('{')][-1]['parameters'])" "$out/train.out")
"$st" memory "$b" --format csv --section at_peak >"$out/train.memory" || fail "train: memory"
cat_bytes() { awk -F, -v c="$1" '$1 == c { print $2; exit }' "$out/train.memory"; }
[ "$(cat_bytes parameter)" = "$((params * 4))" ] ||
	fail "train: parameter bytes at the peak $(cat_bytes parameter), want $((params * 4))"
[ "$(cat_bytes optimizer)" = "$((params * 8))" ] ||
	fail "train: optimizer state at the peak $(cat_bytes optimizer), want $((params * 8))"
[ "$(cat_bytes gradient)" = "$((params * 4))" ] ||
	fail "train: gradients at the peak $(cat_bytes gradient), want $((params * 4))"
for cmd in "info" "steps" "summary --range forward" "summary --by category" "ranges --depth 4" "memory" \
	"flops" "replay --kind kernel --to 1" "diff $b" "export -o $out/train.pftrace" "report -o $out/train.html"; do
	# shellcheck disable=SC2086
	"$st" $cmd "$b" >/dev/null 2>"$out/cmd.err" || fail "train: '$cmd' failed: $(cat "$out/cmd.err")"
done

# 2. gradient accumulation
record accum -- "$py" "$train" --steps 3 --accum 2
printf '0 yes\n1 no\n2 no\n' | cmp -s - "$(steps_of "$out/accum.stb" >"$out/accum.steps"; echo "$out/accum.steps")" ||
	fail "accum: steps: $(cat "$out/accum.steps")"
n=$("$st" ranges "$out/accum.stb" --format csv | awk -F, '$(NF-2) == "step/backward" { print $3 }')
[ "${n:-0}" = 4 ] || fail "accum: $n backward ranges in the 2 measured steps, want 4"

# 3. inference: a step per call of the model
record infer -- "$py" "$train" --steps 4 --infer
printf '0 yes\n1 no\n2 no\n3 no\n' | cmp -s - "$(steps_of "$out/infer.stb" >"$out/infer.steps"; echo "$out/infer.steps")" ||
	fail "infer: steps: $(cat "$out/infer.steps")"
"$st" info "$out/infer.stb" | grep -q "outermost module calls" || fail "infer: info does not say how the steps were found"

# 4. --torch ops: FLOPs of the matrix products
record ops --torch ops -- "$py" "$train" --steps 3
"$st" flops "$out/ops.stb" --format csv >"$out/ops.flops" || fail "ops: flops"
awk -F, 'NR > 1 && /matmul\/aten::/ && $5 + 0 > 0 { found = 1 } END { exit !found }' "$out/ops.flops" ||
	fail "ops: no matrix product with FLOPs: $(head "$out/ops.flops")"

# 5. torch.compile: Triton kernels under the model's compiled regions, forward and backward
record compile -- "$py" "$train" --steps 4 --compile
printf '0 yes\n1 no\n2 no\n3 no\n' | cmp -s - "$(steps_of "$out/compile.stb" >"$out/compile.steps"; echo "$out/compile.steps")" ||
	fail "compile: steps: $(cat "$out/compile.steps")"
for phase in forward backward; do
	"$st" summary "$out/compile.stb" --range "step/$phase/GPT/compiled_*" --format csv >"$out/compile.$phase" ||
		fail "compile: summary --range $phase"
	grep -q 'triton_' "$out/compile.$phase" || fail "compile: no Triton kernel under step/$phase/GPT/compiled_*"
done
noop=$(share "$out/compile.stb" "(no op)")
awk -v x="${noop:-0}" 'BEGIN { exit !(x <= 1.0) }' || fail "compile: ${noop}% of GPU time without an op"

# 6. torch.compile(mode="reduce-overhead"): CUDA graphs replayed; their kernels keep ops
record graphs -- "$py" "$train" --steps 6 --compile reduce-overhead
n=$("$st" steps "$out/graphs.stb" --include-warmup --format csv | grep -c '^[0-9]*,\(yes\|no\),')
[ "$n" = 6 ] || fail "graphs: $n steps, want 6"
noop=$(share "$out/graphs.stb" "(no op)")
awk -v x="${noop:-0}" 'BEGIN { exit !(x <= 1.0) }' || fail "graphs: ${noop}% of GPU time without an op"
"$st" replay "$out/graphs.stb" --kind api --format csv | grep -q 'GraphLaunch' ||
	fail "graphs: no graph launch recorded (reduce-overhead ran no CUDA graph?)"
"$st" summary "$out/graphs.stb" --range "step/forward/GPT" --format csv | grep -q 'triton_' ||
	fail "graphs: no Triton kernel under step/forward/GPT"

# 7. a program without annotation that marks each iteration with cudaProfilerStart/Stop
# (Nsight Systems' capture ranges): a step per range
cat >"$out/capture.py" <<'PY'
import torch
x = torch.randn(1024, 1024, device="cuda")
for i in range(4):
    torch.cuda.profiler.start()
    for _ in range(5):
        x = x @ x
        x = x / x.norm()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
PY
record capture --torch off -- "$py" "$out/capture.py"
printf '0 no\n1 no\n2 no\n3 no\n' | cmp -s - "$(steps_of "$out/capture.stb" >"$out/capture.steps"; echo "$out/capture.steps")" ||
	fail "capture: steps: $(cat "$out/capture.steps")"
"$st" info "$out/capture.stb" | grep -q "cudaProfilerStart/Stop" || fail "capture: info does not say cudaProfilerStart/Stop"

check_done foreign.auto
