#!/bin/sh
# gpu.sh STEPTRACE OUTDIR: `steptrace record -- python3 train_tiny.py` on a
# GPU (label gpu). Checks, with steptrace's own reports:
#  - a recorded PyTorch run: exit status, one bundle named as -o, complete,
#    no drops, steps and warm-up flags from --step-range, every kernel
#    attributed to an NVTX range (no "(no op)" row, even counting setup),
#    synchronisation events (from the calls, or CUPTI's with --cupti-sync),
#    FLOPs from emit_nvtx's shapes, and every report runs on it;
#  - its kernels per step equal torch.profiler's for the same steps;
#  - --torch-alloc async: each tensor's allocation reaches the bundle;
#  - a crash mid-step (exception, SIGABRT, SIGKILL) leaves a readable bundle;
#  - two processes on one GPU write two bundles (RANK naming).
# Exit 77 (skipped) without python3 + torch + a CUDA GPU. Outputs stay in OUTDIR.
set -u
. "$(dirname "$0")/torch_prologue.sh"
train="$here/train_tiny.py"

# record NAME EXPECTED-STATUS RECORD-ARGS... -- COMMAND...: stderr in $out/NAME.err
record() {
	name=$1 want=$2
	shift 2
	echo "+ steptrace record $*"
	"$st" record "$@" >"$out/$name.out" 2>"$out/$name.err"
	rc=$?
	cat "$out/$name.err"
	[ "$rc" = "$want" ] || fail "$name: exit $rc, want $want"
	grep -q "CUPTI DROPPED" "$out/$name.err" && fail "$name: CUPTI dropped records"
}

# field BUNDLE NAME: a field of the footer, `steptrace info --format csv --section footer`
field() {
	"$st" info "$1" --format csv --section footer 2>/dev/null | awk -F, -v k="$2" '$1 == k { print $2; exit }'
}

# count BUNDLE KIND: the events of one kind the footer counts (`--section counts`)
count() {
	"$st" info "$1" --format csv --section counts 2>/dev/null | awk -F, -v k="$2" '$1 == k { print $2; exit }'
}

# 1. emit_nvtx(record_shapes=True), 1 warm-up + 3 measured steps
b=$out/tiny.stb
record tiny 0 -o "$b" --step-range train_step --warmup 1 --precision bf16 -- \
	"$py" "$train" --emit-nvtx -w 1 -n 3
[ -f "$b" ] || fail "tiny: no bundle '$b'"
ls "$out"/tiny.*.stb >/dev/null 2>&1 && fail "tiny: a per-process bundle was left beside '$b'"
[ "$(field "$b" complete)" = yes ] || fail "tiny: bundle not complete"
[ "$(field "$b" "end reason")" = ok ] || fail "tiny: end reason '$(field "$b" "end reason")'"
[ "$(field "$b" dropped)" = 0 ] || fail "tiny: $(field "$b" dropped) dropped records"
grep -q "tiny.stb': .* 4 steps (1 warm-up)" "$out/tiny.err" ||
	fail "tiny: the summary line does not say 4 steps (1 warm-up)"
grep -q "launched outside every NVTX range" "$out/tiny.err" && fail "tiny: unattributed kernels"
"$st" summary "$b" --range 'train_step/backward' --format csv >"$out/tiny.bwd" || fail "tiny: summary --range backward"
grep -q 'Memset\|gemm\|nvjet\|Kernel' "$out/tiny.bwd" || fail "tiny: no kernels under train_step/backward (autograd's thread)"
"$st" steps "$b" --include-warmup --format csv >"$out/tiny.steps" || fail "tiny: steps failed"
awk -F, '/^[0-9]+,(yes|no),/ { print $1, $2 }' "$out/tiny.steps" >"$out/tiny.flags"
printf '0 yes\n1 no\n2 no\n3 no\n' | cmp -s - "$out/tiny.flags" || fail "tiny: steps and warm-up flags: $(cat "$out/tiny.flags")"
"$st" summary "$b" --by op --include-warmup --format csv >"$out/tiny.byop" || fail "tiny: summary --by op"
grep -q '(no op)' "$out/tiny.byop" && fail "tiny: kernels without an op: $(grep '(no op)' "$out/tiny.byop")"
grep -q 'backward/matmul/aten::mm' "$out/tiny.byop" || fail "tiny: no backward/matmul/aten::mm op"
grep -q 'optimizer/' "$out/tiny.byop" || fail "tiny: no optimizer op"
"$st" flops "$b" --format csv >"$out/tiny.flops" || fail "tiny: flops failed"
awk -F, 'NR > 1 && /matmul\/aten::/ && $5 + 0 > 0 { found = 1 } END { exit !found }' "$out/tiny.flops" ||
	fail "tiny: no matmul op with FLOPs in flops"
# (csv: the text table wraps a long command line)
"$st" info "$b" --format csv | grep -q "^command line,.*train_tiny.py --emit-nvtx" ||
	fail "tiny: command line not in the header"
for cmd in "info" "summary --range forward" "summary --by category" "ranges --depth 2" "memory" \
	"replay --kind kernel --to 1" "diff $b" "export -o $out/tiny.pftrace" "report -o $out/tiny.html"; do
	# shellcheck disable=SC2086
	"$st" $cmd "$b" >/dev/null 2>"$out/cmd.err" || fail "tiny: '$cmd' failed: $(cat "$out/cmd.err")"
done

# 2. kernels per step against torch.profiler (the same steps, profiled one at a time)
"$py" "$train" -w 1 -n 3 --kernel-counts "$out/tiny.counts" >/dev/null || fail "torch.profiler run failed"
want=$("$py" -c "import json, sys; print(' '.join(map(str, json.load(open(sys.argv[1]))['kernels'])))" "$out/tiny.counts")
got=$(awk -F, '/^[0-9]+,(yes|no),/ { printf "%s%s", sep, $6; sep = " " }' "$out/tiny.steps")
echo "kernels per step: steptrace $got, torch.profiler $want"
[ -n "$want" ] && [ "$got" = "$want" ] || fail "kernels per step: steptrace '$got', torch.profiler '$want'"

# 2b. without emit_nvtx: autograd's kernels fall under the loop's backward range
# (--torch off here and below: the NVTX path alone; auto.sh tests the automatic one)
record plain 0 -o "$out/plain.stb" --torch off --step-range train_step -- "$py" "$train" -w 0 -n 2
grep -q "launched outside every NVTX range" "$out/plain.err" && fail "plain: unattributed kernels"
"$st" summary "$out/plain.stb" --by op --format csv >"$out/plain.byop"
grep -q '^[^#].*,backward/backward$' "$out/plain.byop" || fail "plain: no backward op: $(cat "$out/plain.byop")"
n=$("$st" summary "$out/plain.stb" --range 'train_step/backward' --format csv | grep -c '^[0-9]')
[ "$n" -gt 3 ] || fail "plain: $n kernel names under train_step/backward"

# 2b'. synchronisation: from the synchronising calls by default (the loop's
# torch.cuda.synchronize is a cudaDeviceSynchronize), from CUPTI with --cupti-sync
n=$(count "$out/plain.stb" sync)
[ "${n:-0}" -ge 2 ] || fail "plain: ${n:-no} synchronisation events, want one per step at least"
"$st" replay "$out/plain.stb" --kind sync >"$out/plain.sync" || fail "plain: replay --kind sync failed"
grep -q 'context synchronize' "$out/plain.sync" || fail "plain: no context synchronize event: $(head -5 "$out/plain.sync")"
record cuptisync 0 -o "$out/cuptisync.stb" --torch off --step-range train_step --cupti-sync -- "$py" "$train" -w 0 -n 2
n=$(count "$out/cuptisync.stb" sync)
[ "${n:-0}" -ge 2 ] || fail "cuptisync: ${n:-no} synchronisation events with --cupti-sync"

# 2c. --api launches: API events from the callbacks, the same kernels per step
record launches 0 -o "$out/launches.stb" --torch off --step-range train_step --api launches -- "$py" "$train" -w 0 -n 2
"$st" info "$out/launches.stb" | grep -q "API calls recorded.*launches, copies" || fail "launches: the header does not say --api launches"
k1=$("$st" steps "$out/plain.stb" --format csv | awk -F, '/^[0-9]+,no,/ { printf "%s ", $6 }')
k2=$("$st" steps "$out/launches.stb" --format csv | awk -F, '/^[0-9]+,no,/ { printf "%s ", $6 }')
[ "$k1" = "$k2" ] || fail "launches: kernels per step '$k2', with --api work '$k1'"
n=$("$st" summary "$out/launches.stb" --range 'train_step/forward' --format csv | grep -c '^[0-9]')
[ "$n" -gt 3 ] || fail "launches: $n kernel names under train_step/forward"

# 3. --torch-alloc async: tensor allocations reach CUPTI
record alloc 0 -o "$out/alloc.stb" --torch off --step-range train_step --torch-alloc async -- "$py" "$train" -w 0 -n 2
a_async=$("$st" info "$out/alloc.stb" --format csv --section counts | awk -F, '$1 == "alloc" { print $2 }')
a_plain=$("$st" info "$out/plain.stb" --format csv --section counts | awk -F, '$1 == "alloc" { print $2 }')
echo "allocations: $a_plain with PyTorch's caching allocator, $a_async with cudaMallocAsync"
[ "${a_async:-0}" -gt $((${a_plain:-0} + 20)) ] || fail "--torch-alloc async: $a_async allocations, plain $a_plain"
"$st" memory "$out/alloc.stb" >"$out/alloc.memory" 2>&1 || fail "memory on the async bundle failed"
grep -q "Largest live blocks" "$out/alloc.memory" || fail "memory: no largest live blocks on the async bundle"

# 4. crashes mid-step
record raise 1 -o "$out/raise.stb" --step-range train_step -- "$py" "$train" -w 0 -n 4 --crash-at 2 --crash raise
[ "$(field "$out/raise.stb" complete)" = yes ] || fail "raise: bundle not complete"
# Python's with statements close the ranges as the exception unwinds: step 2 ends early
n=$("$st" steps "$out/raise.stb" --include-warmup --format csv | grep -c '^[0-9]*,no,')
[ "$n" = 3 ] || fail "raise: $n steps, want 3"
record abort 134 -o "$out/abort.stb" --step-range train_step -- "$py" "$train" -w 0 -n 4 --crash-at 2 --crash abort
grep -q "got signal 6" "$out/abort.err" || fail "abort: no signal line"
[ "$(field "$out/abort.stb" "end reason")" = error ] || fail "abort: end reason '$(field "$out/abort.stb" "end reason")'"
n=$("$st" steps "$out/abort.stb" --include-warmup --format csv | grep -c '^[0-9]*,no,')
[ "$n" = 2 ] || fail "abort: $n whole steps, want 2"
k=$("$st" info "$out/abort.stb" --format csv --section counts | awk -F, '$1 == "kernel" { print $2 }')
[ "${k:-0}" -gt 0 ] || fail "abort: no kernels in the bundle"
record kill 137 -o "$out/kill.stb" --step-range train_step -- "$py" "$train" -w 0 -n 4 --crash-at 2 --crash kill
grep -q "was not closed" "$out/kill.err" || fail "kill: steptrace did not say the bundle was left open"
"$st" info "$out/kill.stb" >/dev/null 2>"$out/kill.info" || fail "kill: info cannot read the bundle: $(cat "$out/kill.info")"

# 5. two processes on one GPU, ranked: two bundles
record two 0 -o "$out/two.stb" --step-range train_step -- sh -c \
	"RANK=0 '$py' '$train' -w 0 -n 2 & RANK=1 '$py' '$train' -w 0 -n 2; wait"
for r in 0 1; do
	[ "$(field "$out/two.$r.stb" complete)" = yes ] || fail "two: '$out/two.$r.stb' missing or incomplete"
	"$st" info "$out/two.$r.stb" | grep -q "rank $r" || fail "two: the header of rank $r does not say so"
done
[ -e "$out/two.stb" ] && fail "two: a single-process name was written"

check_done foreign.pytorch
