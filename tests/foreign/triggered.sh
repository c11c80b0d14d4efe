#!/bin/sh
# triggered.sh STEPTRACE OUTDIR: `record --armed`, then `steptrace trigger`
# (issue 36), on scripts/gpt_train.py (GPT-2 small, batch 8 x 512; label
# gpu). Checks, with steptrace's own reports:
#  - one GPU: the armed program runs to its end; `trigger --run ID --steps
#    5` answers with the steps S to S+4 and the bundle run.1.stb, whose
#    steps are exactly those (their indices S..S+4, none warm-up, from
#    PyTorch's optimizer) with the phases and, on its first step, module
#    ranges under step/forward and step/backward (transformer.h.N) and ops
#    naming them, <= 1% of the GPU time without an op; a second trigger, by
#    the program's pid, gives run.2.stb of 3 steps; record reports both
#    when the command ends; a trigger once it has ended says in one line
#    that there is no such run; `record --every 20 --window 3` records
#    steps 20-22, 40-42 and 60-62 by itself (run.s20.stb, ...), beside a
#    trigger's;
#  - two ranks under torchrun (DDP, accumulation 2; on two GPUs with NCCL,
#    else on one GPU shared with gloo, the tiny model): one trigger gives
#    run.1.rank0.stb and run.1.rank1.stb of the same step numbers, which
#    comm reads as one run (NCCL); a second trigger gives both ranks'
#    run.2.*; a window of every.* says what recording cost the program,
#    measured in the process (format 1.11).
# What each trigger printed and what was checked is in OUTDIR/triggered.txt.
# The armed program's cost is scripts/torch_cost.py's mode `armed`.
# Exit 77 (skipped) without python3 + torch + a CUDA GPU.
set -u
. "$(dirname "$0")/torch_prologue.sh"
train="$here/../../scripts/gpt_train.py"
export STEPTRACE_ARMED_DIR="$out/armed"
log=$out/triggered.txt
: >"$log"
rm -f "$out"/*.stb

# armed NAME FLAGS COMMAND...: starts `record FLAGS -o NAME.stb -- COMMAND` in the background (FLAGS
# --armed, or --every K --window N); $job its pid, $rid the run id it printed
armed() {
	name=$1
	flags=$2
	shift 2
	echo "+ steptrace record $flags -o $name.stb -- $*" | tee -a "$log"
	# shellcheck disable=SC2086   # the flags split into words
	"$st" record $flags -o "$out/$name.stb" -- "$@" >"$out/$name.out" 2>"$out/$name.err" &
	job=$!
	rid=
	for i in $(seq 1 300); do
		rid=$(sed -n 's/^record: armed (run \([0-9]*\),.*/\1/p' "$out/$name.err")
		[ -n "$rid" ] && break
		sleep 0.1
	done
	[ -n "$rid" ] || fail "$name: record --armed printed no run id: $(cat "$out/$name.err")"
}

# trig ARGS...: steptrace trigger (it waits for the processes to join: their first step ended), again while none has; $rc
trig() {
	for i in $(seq 1 600); do
		"$st" trigger "$@" >"$out/trig.out" 2>"$out/trig.err"
		rc=$?
		grep -q "no process recording yet" "$out/trig.err" || break
		sleep 0.2
	done
	echo "+ steptrace trigger $*" >>"$log"
	cat "$out/trig.out" "$out/trig.err" | tee -a "$log"
}

# steps_of BUNDLE: "index warm-up" per step
steps_of() {
	"$st" steps "$1" --include-warmup --format csv | awk -F, '/^[0-9]+,(yes|no),/ { print $1, $2 }'
}

# modules BUNDLE WHAT: step/forward and step/backward have transformer.h.N ranges, ops name them
modules() {
	"$st" ranges "$1" --format csv >"$out/m.ranges" 2>/dev/null
	for phase in data forward backward optimizer; do
		grep -q ",step/$phase," "$out/m.ranges" || fail "$2: no range step/$phase"
	done
	for phase in forward backward; do
		grep -Eq ",step/$phase/(.*/)?transformer\.h\.[0-9]+(/[^,]*)?," "$out/m.ranges" ||
			fail "$2: no module transformer.h.N under step/$phase"
		"$st" summary "$1" --by op --format csv 2>/dev/null | grep -Eq ",$phase/(.*/)?transformer\.h\.\*" ||
			fail "$2: no op $phase/.../transformer.h.* in summary --by op"
	done
	noop=$("$st" summary "$1" --by op --format csv 2>/dev/null | awk -F, '$NF == "(no op)" { print $1; exit }')
	awk -v x="${noop:-0}" 'BEGIN { exit !(x <= 1.0) }' || fail "$2: ${noop}% of GPU time without an op"
	"$st" info "$1" | grep -q "optimizer steps (PyTorch)" || fail "$2: steps not from PyTorch's optimizer"
}

# api_calls BUNDLE WHAT: a window holds the calls that launched its work (an armed process's windows
# once held none: CUPTI wrote no record of calls enabled one by one after the process began), and
# not the query calls the filter leaves out (cudaGetDevice and the like: 25 calls a kernel with them)
api_calls() {
	"$st" info "$1" 2>/dev/null | awk '$1 == "kernel" { k = $3 } $1 == "api" { a = $3 }
		END { gsub(",", "", k); gsub(",", "", a); exit !(k > 0 && a + 0 >= k / 2 && a + 0 <= 4 * k) }' ||
		fail "$2: API calls against kernels: $("$st" info "$1" 2>/dev/null | grep -E '^(api|kernel) ' | tr -s ' ' | tr '\n' ';')"
}

# measured BUNDLE WHAT: the window's footer holds the program's unrecorded steps just before it
# (1.11), and steps says what recording cost the program, a figure between -50% and +100%
measured() {
	cost=$("$st" steps "$1" 2>/dev/null | tr '\n' ' ' | tr -s ' ' | sed -n 's/.*recording cost it \([-+][0-9.]*\)%.*/\1/p')
	"$st" info "$1" 2>/dev/null | grep -Eq '^unrecorded +[0-9]+ steps of the program just before this window, unrecorded: [0-9.]+ ms' &&
		awk -v c="${cost:-x}" 'BEGIN { exit !(c != "x" && c + 0 > -50 && c + 0 < 100) }' ||
		fail "$2: no measured cost of recording: $("$st" info "$1" 2>/dev/null | grep '^unrecorded'); cost '${cost}'"
	echo "$2: recording cost the program ${cost}% (measured in the process)" | tee -a "$log"
	armed=$("$st" info "$1" 2>/dev/null | sed -n 's/^armed cost .*: [0-9.]* ms (\([0-9.]*\)%)$/\1/p')
	awk -v a="${armed:-x}" 'BEGIN { exit !(a != "x" && a + 0 >= 0 && a + 0 < 5) }' ||
		fail "$2: no armed cost (the recorder's time while armed): $("$st" info "$1" 2>/dev/null | grep '^armed')"
	echo "$2: armed, the recorder's own time ${armed}% of the run before the window" | tee -a "$log"
}

# want_steps BUNDLE FIRST N WHAT: exactly steps FIRST..FIRST+N-1, none warm-up
want_steps() {
	steps_of "$1" >"$out/s.txt"
	seq "$2" $(($2 + $3 - 1)) | sed 's/$/ no/' | cmp -s - "$out/s.txt" ||
		fail "$4: steps, want $2 to $(($2 + $3 - 1)) none warm-up: $(tr '\n' ';' <"$out/s.txt")"
}

# 1. one GPU
armed one --armed "$py" "$train" --preset gpt2 --batch 8 --ctx 512 --steps 200
trig --run "$rid" --steps 5 --timeout 300
[ "$rc" = 0 ] || fail "one: trigger 1: exit $rc"
first=$(sed -n 's/^trigger 1 of run [0-9]*: steps \([0-9]*\) to [0-9]* on 1 process (pid \([0-9]*\))$/\1/p' "$out/trig.out")
pid=$(sed -n 's/^trigger 1 of run [0-9]*: steps [0-9]* to [0-9]* on 1 process (pid \([0-9]*\))$/\1/p' "$out/trig.out")
grep -q "steps $first to $((${first:-0} + 4)) in '.*/one\.1\.stb'$" "$out/trig.out" || fail "one: trigger 1's answer"
trig "${pid:-0}" --steps 3 --timeout 300
[ "$rc" = 0 ] || fail "one: trigger 2 by pid: exit $rc"
second=$(sed -n 's/^trigger 2 of run [0-9]*: steps \([0-9]*\) to .*/\1/p' "$out/trig.out")
wait "$job" || fail "one: the armed program: exit $?"
cat "$out/one.err" >>"$log"
[ -f "$out/one.1.stb" ] && [ -f "$out/one.2.stb" ] || fail "one: no one.1.stb and one.2.stb"
grep -q "one.1.stb': .* 5 steps (0 warm-up) from optimizer steps (PyTorch)" "$out/one.err" ||
	fail "one: record does not report one.1.stb"
want_steps "$out/one.1.stb" "${first:-0}" 5 "one.1"
want_steps "$out/one.2.stb" "${second:-0}" 3 "one.2"
# each trigger's bundle says what recording cost in its steps (cost events), the second's too
for b in one.1 one.2; do
	"$st" explain "$out/$b.stb" --section steps --format csv >"$out/$b.explain" 2>/dev/null
	head -1 "$out/$b.explain" | grep -q "Unrecorded" || fail "$b: no recorder cost in the bundle (explain has no Unrecorded)"
	api_calls "$out/$b.stb" "$b"
done
modules "$out/one.1.stb" "one.1"
"$st" trigger --run "$rid" >"$out/trig.out" 2>"$out/trig.err"
rc=$?
[ "$rc" = 1 ] && [ "$(wc -l <"$out/trig.err")" = 1 ] || fail "a trigger after the end: exit $rc: $(cat "$out/trig.err")"

# 1b. left on: record --every 20 --window 3 records steps 20-22, 40-42, 60-62 by itself, not 80
# (the program's 80 steps end there)
# (every.s20.stb, ...), and a trigger during the run still gets its own steps (every.1.stb);
# a window whose step a trigger's request or recording holds is left out
armed every "--every 20 --window 3" "$py" "$train" --preset gpt2 --batch 8 --ctx 512 --steps 80
grep -q "^record: armed (run [0-9]*, command pid [0-9]*): steps 20 to 22, then every 20 steps 3 more" \
	"$out/every.err" || fail "every: record's first line: $(head -1 "$out/every.err")"
trig --run "${rid:-0}" --steps 2 --timeout 300
[ "$rc" = 0 ] || fail "every: trigger: exit $rc"
tfirst=$(sed -n 's/^trigger 1 of run [0-9]*: steps \([0-9]*\) to .*/\1/p' "$out/trig.out")
wait "$job" || fail "every: the program: exit $?"
cat "$out/every.err" >>"$log"
want_steps "$out/every.1.stb" "${tfirst:-0}" 2 "every.1"
windows=0
for k in 20 40 60; do
	if [ "$k" -lt $((${tfirst:-0} - 2)) ] || [ "$k" -gt $((${tfirst:-0} + 1)) ]; then
		[ -f "$out/every.s$k.stb" ] || fail "every: no every.s$k.stb"
		want_steps "$out/every.s$k.stb" "$k" 3 "every.s$k"
		api_calls "$out/every.s$k.stb" "every.s$k"
		# unrecorded steps before the first window: 2-19, less the trigger's two and the two after it
		if [ "$k" = 20 ] && { [ "${tfirst:-0}" -le 13 ] || [ "${tfirst:-0}" -gt 22 ]; }; then
			measured "$out/every.s$k.stb" "every.s$k"
		fi
		grep -q "every.s$k.stb': .* 3 steps (0 warm-up)" "$out/every.err" || fail "every: record does not report every.s$k.stb"
		windows=$((windows + 1))
	fi
done
[ "$windows" -ge 2 ] || fail "every: $windows windows checked"
# the boundary after the last step (79) begins step 80, which never ends: no every.s80.stb
ls "$out"/every.s*.stb 2>/dev/null | grep -vqE "every\.s(20|40|60)\.stb$" && fail "every: a window at another step"
grep -q "every.s80" "$out/every.err" && fail "every: record reports a window the program ended in"
w=$(ls "$out"/every.s*.stb 2>/dev/null | head -1)
[ -n "$w" ] && modules "$w" "$(basename "$w")"

# 2. two ranks under torchrun: on two GPUs with NCCL; on one, both ranks share it with gloo (a smaller
# model: gloo all-reduces through the host), which checks the same triggering of every rank
ddp_train=
if "$py" -c "import torch, sys, torch.distributed as d; sys.exit(0 if torch.cuda.device_count() >= 2 and d.is_nccl_available() else 1)" 2>/dev/null; then
	ddp_train="--preset gpt2 --batch 8 --ctx 512 --accum 2 --steps 150"
	backend=nccl
elif "$py" -c "import torch, sys, torch.distributed as d; sys.exit(0 if torch.cuda.device_count() == 1 and d.is_gloo_available() else 1)" 2>/dev/null; then
	ddp_train="--preset tiny --batch 8 --ctx 128 --accum 2 --steps 600 --backend gloo"
	backend=gloo
fi
if [ -n "$ddp_train" ]; then
	export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
	echo "ddp: two ranks, $backend" | tee -a "$log"
	# shellcheck disable=SC2086   # the options split into words
	armed ddp --armed "$py" -m torch.distributed.run --standalone --nproc-per-node 2 "$train" $ddp_train
	trig --run "$rid" --steps 4 --timeout 300
	[ "$rc" = 0 ] || fail "ddp: trigger 1: exit $rc"
	first=$(sed -n 's/^trigger 1 of run [0-9]*: steps \([0-9]*\) to [0-9]* on 2 processes .*/\1/p' "$out/trig.out")
	for r in 0 1; do
		grep -q "^rank $r (pid [0-9]*): steps $first to $((${first:-0} + 3)) in '.*/ddp\.1\.rank$r\.stb'$" \
			"$out/trig.out" || fail "ddp: rank $r's answer to trigger 1"
	done
	trig --run "$rid" --steps 2 --timeout 300
	[ "$rc" = 0 ] || fail "ddp: trigger 2: exit $rc"
	wait "$job" || fail "ddp: the armed torchrun: exit $?"
	cat "$out/ddp.err" >>"$log"
	for r in 0 1; do
		[ -f "$out/ddp.1.rank$r.stb" ] && [ -f "$out/ddp.2.rank$r.stb" ] || fail "ddp: rank $r's bundles"
		want_steps "$out/ddp.1.rank$r.stb" "${first:-0}" 4 "ddp.1.rank$r"
		modules "$out/ddp.1.rank$r.stb" "ddp.1.rank$r"
	done
	steps_of "$out/ddp.2.rank0.stb" >"$out/s0.txt"
	steps_of "$out/ddp.2.rank1.stb" >"$out/s1.txt"
	cmp -s "$out/s0.txt" "$out/s1.txt" && [ "$(wc -l <"$out/s0.txt")" = 2 ] ||
		fail "ddp: trigger 2's ranks differ: $(tr '\n' ';' <"$out/s0.txt") vs $(tr '\n' ';' <"$out/s1.txt")"
	# (gloo's all-reduces run on the host: no collective kernel for comm to read)
	"$st" comm "$out/ddp.1.rank0.stb" "$out/ddp.1.rank1.stb" >"$out/ddp.comm" 2>"$out/ddp.comm.err" ||
		[ "$backend" = gloo ] || fail "ddp: comm of trigger 1's bundles: $(cat "$out/ddp.comm.err")"
	grep -q "not ranks of one run" "$out/ddp.comm.err" && fail "ddp: comm says the ranks are not of one run"
	cat "$out/ddp.comm.err" >>"$log"
else
	echo "skip: the torchrun part needs two GPUs, or one and gloo" | tee -a "$log"
fi

check_done foreign.triggered
