#!/bin/sh
# flops.sh STEPTRACE GEN_MODEL: `steptrace flops` on transformer-shaped
# bundles whose kernels run at a fixed share of their roofline (gen_model.c):
# that share must come back as "Of Bound (%)"; options, --svg and bad input.
set -u
st=$1
gen=$2
. "$(dirname "$0")/../lib/check.sh"

"$gen" --precision bf16 --layers 2 -o "$tmp/bf16.stb" || { echo "FAIL: gen_model" >&2; exit 1; }
"$gen" --precision tf32 --layers 2 -o "$tmp/tf32.stb" || exit 1
"$gen" --no-peaks --layers 2 -o "$tmp/nopeaks.stb" || exit 1

"$st" flops "$tmp/bf16.stb" --format csv >"$tmp/out" 2>"$tmp/err" || fail "flops bf16: exit $?"
# ffn GEMMs at 70% of the bf16 peak, attention GEMMs at 35% of the memory bound,
# softmax at 25% of the fp32 memory bound (its inputs f32), AdamW at 80%
grep -q ',2,2,9.664,25.166,692.54,1803.5,384.00,bf16,989.40,compute,70.0,"bf16,bf16",bf16,forward/ffn/w1$' "$tmp/out" ||
	fail "forward/ffn/w1 row: $(grep 'forward/ffn/w1' "$tmp/out")"
grep -q ',bf16,142.93,memory,35.0,"bf16,bf16",bf16,forward/attn/scores$' "$tmp/out" || fail "forward/attn/scores row"
grep -q ',fp32,4.19,memory,25.0,"f32,f32",f32,forward/attn/softmax$' "$tmp/out" || fail "forward/attn/softmax row"
grep -q ',fp32,1.44,memory,80.0,"f32,f32",f32,optimizer/adamw$' "$tmp/out" || fail "optimizer/adamw row: $(grep adamw "$tmp/out")"
grep -q '(no op)' "$tmp/out" && fail "a (no op) row without op-less kernels"
# the CSV is the table alone; the notes are on stderr
grep -q '^#' "$tmp/out" && fail "a comment line in the CSV"
grep -q '^attention forward: softmax takes 0.933x the time of scores+av' "$tmp/err" || fail "attention note"
grep -q '^GEMM share of GPU time: ' "$tmp/err" || fail "GEMM share note: $(cat "$tmp/err")"
[ "$(grep -c ',forward/' "$tmp/out")" = 18 ] || fail "want 18 forward kinds"
# --phase: the share is the phase's, and says so
"$st" flops "$tmp/bf16.stb" --phase forward >"$tmp/out" 2>&1 || fail "flops --phase forward: exit"
grep -q "^GEMM share of the forward phase's GPU time: .* of its kernels per step)$" "$tmp/out" ||
	fail "--phase forward: GEMM share note: $(grep 'GEMM share' "$tmp/out")"

# tf32 run: fp32 inputs of matrix products use the tf32 peak
"$st" flops "$tmp/tf32.stb" --format csv --phase forward >"$tmp/out" 2>&1 || fail "flops tf32: exit"
grep -q ',tf32,494.70,compute,70.0,"f32,f32",f32,forward/ffn/w1$' "$tmp/out" || fail "tf32 ffn/w1 row"
grep -q 'backward/' "$tmp/out" && fail "--phase forward kept backward rows"

# per op: one row per op and layer
"$st" flops "$tmp/bf16.stb" --by op --range 'layer.*/attn/softmax' --format csv >"$tmp/out" 2>&1 || fail "--by op: exit"
[ "$(grep -c 'step/.*/layer\.[01]/attn/softmax$' "$tmp/out")" = 4 ] || fail "--by op --range: want 4 softmax ops"
# --by op carries each op's input and output dtypes as recorded (docs/reports.md: "what
# dtype each op produces under autocast"): GEMMs in bf16, the rest in f32
"$st" flops "$tmp/bf16.stb" --by op --format json >"$tmp/op.json" || fail "--by op json: exit"
python3 - "$tmp/op.json" <<'PY' || fail "--by op json dtypes"
import json, sys
rows = {r["Name"]: r for r in json.load(open(sys.argv[1]))["flops"]}
w1 = [r for n, r in rows.items() if n.endswith("forward/layer.0/ffn/w1")][0]
sm = [r for n, r in rows.items() if n.endswith("forward/layer.0/attn/softmax")][0]
assert (w1["Inputs"], w1["Outputs"]) == ("bf16,bf16", "bf16"), w1
assert (sm["Inputs"], sm["Outputs"]) == ("f32,f32", "f32"), sm
PY
# --by kind: the dtypes the kind's ops share, and the same columns as --by op
"$st" flops "$tmp/bf16.stb" --format json >"$tmp/kind.json" || fail "--by kind json: exit"
python3 - "$tmp/kind.json" "$tmp/op.json" <<'PY' || fail "--by kind json dtypes"
import json, sys
kinds = json.load(open(sys.argv[1]))["flops"]
ops = json.load(open(sys.argv[2]))["flops"]
assert list(kinds[0]) == list(ops[0]), (list(kinds[0]), list(ops[0]))
w1 = [r for r in kinds if r["Name"] == "forward/ffn/w1"][0]
assert (w1["Inputs"], w1["Outputs"], w1["Peak Used"]) == ("bf16,bf16", "bf16", "bf16"), w1
PY

# no peaks: bound cells empty, a note says so
"$st" flops "$tmp/nopeaks.stb" --format csv --top 1 >"$tmp/out" 2>&1 || fail "no peaks: exit"
grep -q ',fp32,,,,"f32,f32",f32,backward/lm_head$' "$tmp/out" || fail "no peaks: bound cells not empty: $(cat "$tmp/out")"
grep -q 'the header has no device peaks' "$tmp/out" || fail "no peaks: note"

# the chart
"$st" flops "$tmp/bf16.stb" --svg "$tmp/r.svg" >/dev/null 2>&1 || fail "--svg: exit"
head -c 5 "$tmp/r.svg" | grep -q '^<svg ' || fail "--svg: not an svg"
tail -n 1 "$tmp/r.svg" | grep -q '^</svg>$' || fail "--svg: unterminated"
grep -q 'fp16/bf16 peak 989.4 TFLOP/s' "$tmp/r.svg" || fail "--svg: bf16 ceiling"
grep -q 'memory 3.35 TB/s' "$tmp/r.svg" || fail "--svg: bandwidth ceiling"
if command -v xmllint >/dev/null 2>&1; then
	xmllint --noout "$tmp/r.svg" || fail "--svg: not well-formed XML"
fi

# usage and bad input
"$st" flops "$tmp/bf16.stb" --by layer >/dev/null 2>&1
[ $? = 129 ] || fail "--by layer: want 129"
"$st" flops "$tmp/bf16.stb" --phase sideways >/dev/null 2>&1
[ $? = 129 ] || fail "--phase sideways: want 129"
"$st" flops "$tmp/bf16.stb" --phase sideways 2>"$tmp/err" >/dev/null
grep -q "expects forward, backward, optimizer, zero_grad or data, not 'sideways'" "$tmp/err" ||
	fail "--phase sideways: the choices are not the phases: $(cat "$tmp/err")"
# the phases beyond a training step's three: accepted, nothing of them in this bundle
"$st" flops "$tmp/bf16.stb" --phase zero_grad --format csv >"$tmp/out" 2>&1 || fail "--phase zero_grad: exit"
grep -q 'no kernels selected' "$tmp/out" || fail "--phase zero_grad selected kernels of another phase"
"$st" flops "$tmp/missing.stb" >/dev/null 2>"$tmp/err"
[ $? = 1 ] || fail "missing bundle: want exit 1"
[ "$(wc -l <"$tmp/err" | tr -d ' ')" = 1 ] || fail "missing bundle: want one error line"
"$st" flops "$tmp/bf16.stb" --svg "$tmp/no/such/dir/r.svg" >/dev/null 2>"$tmp/err"
[ $? = 1 ] || fail "unwritable --svg: want exit 1"

check_done flops.cli
