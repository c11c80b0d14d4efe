#!/usr/bin/env bash
# scripts/torch_traces.sh STEPTRACE OUT: real torch.profiler traces of the
# GPT-2 style loop (scripts/gpt_train.py --profile, as torch.profiler's
# tutorial runs it: tensorboard_trace_handler, record_shapes,
# profile_memory), and steptrace recordings of the same loops, for
# `steptrace import` and its tests (tests/import/). On the GPU machine:
#
#   tiny-eager/     --preset tiny, 6 steps (2 profiled)
#   tiny-compile/   the same under torch.compile
#   tiny-ddp/       two ranks under torchrun (gloo when there is one GPU)
#   gpt2-eager/     GPT-2 small, batch 4 x 256
#   *.stb           `steptrace record` of the same loops, unprofiled
set -uo pipefail
st=$1; out=$2
mkdir -p "$out"
train="scripts/gpt_train.py --steps 6"
tiny="$train --preset tiny"
gpt2="$train --preset gpt2 --batch 4 --ctx 256"
backend=nccl
[ "$(nvidia-smi -L | wc -l)" -lt 2 ] && backend=gloo
run() { echo "== $*"; "$@" 2>&1 | tail -3; }
run python3 $tiny --profile "$out/tiny-eager"
run python3 $tiny --compile --profile "$out/tiny-compile"
run torchrun --standalone --nproc-per-node 2 $tiny --backend $backend --profile "$out/tiny-ddp"
run python3 $gpt2 --profile "$out/gpt2-eager"
run "$st" record -o "$out/tiny-eager.stb" -- python3 $tiny
run "$st" record -o "$out/gpt2-eager.stb" -- python3 $gpt2
run "$st" record -o "$out/tiny-ddp.stb" -- torchrun --standalone --nproc-per-node 2 $tiny --backend $backend
ls -lR "$out" | grep -v "^total"
