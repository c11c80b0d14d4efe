#!/bin/sh
# cli.sh STEPTRACE: `steptrace record [options] -o FILE -- COMMAND` as a
# launcher, without a GPU: the command runs with its environment plus the
# recorder's variables, its exit status and its signal come back as
# steptrace's, steptrace hands SIGTERM on, and bad usage is refused before
# anything runs. (Nothing here touches CUDA, so no bundle is written.)
set -u
st=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
. "$(dirname "$0")/../lib/check.sh"

# run ARGS...: sets $rc; stdout in $tmp/out, stderr in $tmp/err
run() {
	"$st" record "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

run -o "$tmp/r.stb" -- true
if grep -q "needs a GPU build" "$tmp/err"; then
	echo "skip: no GPU build of steptrace"
	exit 77
fi
[ "$rc" = 0 ] || fail "true: exit $rc, want 0"
grep -q "no process of 'true' created a CUDA context: no bundle written" "$tmp/err" ||
	fail "true: no 'no bundle' warning: $(cat "$tmp/err")"
[ -e "$tmp/r.stb" ] && fail "true: a bundle was written"

# exit status passes through
run -o "$tmp/r.stb" -- sh -c 'exit 3'
[ "$rc" = 3 ] || fail "exit 3: got $rc"

# the environment passes through, with the recorder's variables added
(cd "$tmp" && FOO='a b' "$st" record -o r.stb --step-range train_step --warmup 2 --precision bf16 -- \
	sh -c 'printf "%s|%s|%s|%s|%s|%s|%s|%s\n" "$FOO" "$CUDA_INJECTION64_PATH" "$NVTX_INJECTION64_PATH" \
	"$STEPTRACE_OUTPUT" "$STEPTRACE_STEP_RANGE" "$STEPTRACE_WARMUP" "$STEPTRACE_PRECISION" \
	"${PYTORCH_CUDA_ALLOC_CONF-unset}"' >"$tmp/out" 2>"$tmp/err")
IFS='|' read -r foo cuda nvtx output range warmup precision conf <"$tmp/out"
[ "$foo" = "a b" ] || fail "FOO arrived as '$foo'"
case $cuda in
*/libsteptrace_inject.so) [ -r "$cuda" ] || fail "CUDA_INJECTION64_PATH '$cuda' is not readable" ;;
*) fail "CUDA_INJECTION64_PATH is '$cuda'" ;;
esac
[ "$nvtx" = "$cuda" ] || fail "NVTX_INJECTION64_PATH '$nvtx' differs from '$cuda'"
[ "$output" = "$(cd "$tmp" && pwd -P)/r.stb" ] || fail "STEPTRACE_OUTPUT is '$output', not absolute"
[ "$range" = train_step ] || fail "STEPTRACE_STEP_RANGE is '$range'"
[ "$warmup" = 2 ] || fail "STEPTRACE_WARMUP is '$warmup'"
[ "$precision" = bf16 ] || fail "STEPTRACE_PRECISION is '$precision'"
[ "$conf" = unset ] || fail "PYTORCH_CUDA_ALLOC_CONF set without --torch-alloc: '$conf'"

# --torch: the Python side's folder first on PYTHONPATH (the program's own after it),
# STEPTRACE_TORCH its mode; --torch off: neither, and PyTorch's own allocator
PYTHONPATH=/mine run -o "$tmp/r.stb" -- sh -c 'echo "$PYTHONPATH|${STEPTRACE_TORCH-unset}"'
IFS='|' read -r pypath torch <"$tmp/out"
case $pypath in
*/python:/mine) [ -r "${pypath%:/mine}/sitecustomize.py" ] && [ -r "${pypath%:/mine}/steptrace_torch.py" ] ||
	fail "PYTHONPATH '$pypath' has no sitecustomize.py and steptrace_torch.py" ;;
*) fail "PYTHONPATH is '$pypath'" ;;
esac
[ "$torch" = auto ] || fail "STEPTRACE_TORCH is '$torch'"
run -o "$tmp/r.stb" --torch ops -- sh -c 'echo "${STEPTRACE_TORCH-unset}"'
[ "$(cat "$tmp/out")" = ops ] || fail "--torch ops: STEPTRACE_TORCH is '$(cat "$tmp/out")'"
PYTHONPATH=/mine STEPTRACE_TORCH=auto run -o "$tmp/r.stb" --torch off -- \
	sh -c 'echo "${PYTHONPATH-unset}|${STEPTRACE_TORCH-unset}|${PYTORCH_CUDA_ALLOC_CONF-unset}"'
[ "$(cat "$tmp/out")" = "/mine|unset|unset" ] || fail "--torch off: '$(cat "$tmp/out")'"
run -o "$tmp/r.stb" --torch-alloc default -- sh -c 'echo "${PYTORCH_CUDA_ALLOC_CONF-unset}"'
[ "$(cat "$tmp/out")" = unset ] || fail "--torch-alloc default: '$(cat "$tmp/out")'"
PYTORCH_CUDA_ALLOC_CONF=backend:native run -o "$tmp/r.stb" -- sh -c 'echo "$PYTORCH_CUDA_ALLOC_CONF"'
[ "$(cat "$tmp/out")" = backend:native ] || fail "a program's backend was changed: '$(cat "$tmp/out")'"
# --warmup without --step-range reaches the recorder; without --warmup the rule's default
run -o "$tmp/r.stb" --warmup 3 -- sh -c 'echo "${STEPTRACE_WARMUP-unset}"'
[ "$(cat "$tmp/out")" = 3 ] || fail "--warmup 3: STEPTRACE_WARMUP is '$(cat "$tmp/out")'"
STEPTRACE_WARMUP=2 run -o "$tmp/r.stb" -- sh -c 'echo "${STEPTRACE_WARMUP-unset}"'
[ "$(cat "$tmp/out")" = unset ] || fail "without --warmup: STEPTRACE_WARMUP is '$(cat "$tmp/out")'"

# --torch-alloc async adds the backend, keeping the user's settings
run -o "$tmp/r.stb" --torch-alloc async -- sh -c 'echo "$PYTORCH_CUDA_ALLOC_CONF"'
[ "$(cat "$tmp/out")" = backend:cudaMallocAsync ] || fail "--torch-alloc async: '$(cat "$tmp/out")'"
PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True run -o "$tmp/r.stb" --torch-alloc async -- \
	sh -c 'echo "$PYTORCH_CUDA_ALLOC_CONF"'
[ "$(cat "$tmp/out")" = expandable_segments:True,backend:cudaMallocAsync ] ||
	fail "--torch-alloc async with a conf: '$(cat "$tmp/out")'"
PYTORCH_CUDA_ALLOC_CONF=backend:native run -o "$tmp/r.stb" --torch-alloc async -- true
[ "$rc" = 1 ] || fail "--torch-alloc async over another backend: exit $rc, want 1"
grep -q "^error: --torch-alloc async: PYTORCH_CUDA_ALLOC_CONF='backend:native' already names a backend$" \
	"$tmp/err" || fail "--torch-alloc over a backend said: $(cat "$tmp/err")"

# a command killed by a signal ends steptrace by that signal
run -o "$tmp/r.stb" -- sh -c 'kill -TERM $$'
[ "$rc" = 143 ] || fail "command killed by SIGTERM: exit $rc, want 143"
run -o "$tmp/r.stb" -- sh -c 'kill -USR1 $$'
[ "$rc" = 138 ] || fail "command killed by SIGUSR1: exit $rc, want 138"

# SIGTERM to steptrace goes on to the command
"$st" record -o "$tmp/r.stb" -- sh -c 'trap "echo got-term; exit 7" TERM; touch "$1"; while :; do sleep 0.05; done' \
	sh "$tmp/started" >"$tmp/out" 2>"$tmp/err" &
pid=$!
i=0
while [ ! -e "$tmp/started" ] && [ $i -lt 600 ]; do
	sleep 0.05
	i=$((i + 1))
done
kill -TERM $pid
wait $pid
rc=$?
[ "$rc" = 7 ] || fail "SIGTERM forwarded: exit $rc, want the command's 7"
grep -q got-term "$tmp/out" || fail "the command did not see SIGTERM"

# a command that cannot run: 127, one error line
run -o "$tmp/r.stb" -- "$tmp/no-such-program"
[ "$rc" = 127 ] || fail "missing command: exit $rc, want 127"
[ "$(wc -l <"$tmp/err" | tr -d ' ')" = 1 ] || fail "missing command: want one line, got $(cat "$tmp/err")"
grep -q "^error: cannot run '$tmp/no-such-program': No such file or directory$" "$tmp/err" ||
	fail "missing command said: $(cat "$tmp/err")"

# another injected tool
CUDA_INJECTION64_PATH=/x/libother.so run -o "$tmp/r.stb" -- true
[ "$rc" = 1 ] || fail "CUDA_INJECTION64_PATH set: exit $rc, want 1"
grep -q "CUDA_INJECTION64_PATH is already set ('/x/libother.so')" "$tmp/err" ||
	fail "CUDA_INJECTION64_PATH set said: $(cat "$tmp/err")"

# usage errors: 129 and one error line first, nothing run
usage() {
	want=$1
	shift
	run "$@"
	[ "$rc" = 129 ] || fail "record $*: exit $rc, want 129"
	[ "$(head -n 1 "$tmp/err")" = "error: $want" ] || fail "record $*: said '$(head -n 1 "$tmp/err")'"
	[ -e "$tmp/ran" ] && fail "record $*: the command ran"
}
usage "no command after '--'" -o "$tmp/r.stb" --
usage "no output file: use -o FILE.stb" -- touch "$tmp/ran"
usage "option '--model' is for the built-in step, not for -- COMMAND" -o "$tmp/r.stb" --model small -- touch "$tmp/ran"
usage "option '--ctx' is for the built-in step, not for -- COMMAND" -o "$tmp/r.stb" --ctx=256 -- touch "$tmp/ran"
usage "option '-n' is for the built-in step, not for -- COMMAND" -o "$tmp/r.stb" -n 3 -- touch "$tmp/ran"
usage "option '--torch' expects auto, off or ops, not 'x'" -o "$tmp/r.stb" --torch x -- touch "$tmp/ran"
usage "option '--torch' needs -- COMMAND" -o "$tmp/r.stb" --torch off
usage "option '--warmup' expects a non-negative integer, not '-2'" -o "$tmp/r.stb" --step-range s --warmup -2 -- touch "$tmp/ran"
usage "option '--torch-alloc' expects default or async, not 'x'" -o "$tmp/r.stb" --torch-alloc x -- touch "$tmp/ran"
usage "option '--step-range' needs -- COMMAND" -o "$tmp/r.stb" --step-range s
usage "option '--cupti-sync' needs -- COMMAND" -o "$tmp/r.stb" --cupti-sync
usage "unexpected argument 'python3'" -o "$tmp/r.stb" python3 x.py

# --cupti-sync reaches the recorder; without it an inherited setting is taken away
run -o "$tmp/r.stb" --cupti-sync -- sh -c 'echo "${STEPTRACE_CUPTI_SYNC-unset}"'
[ "$(cat "$tmp/out")" = 1 ] || fail "--cupti-sync: STEPTRACE_CUPTI_SYNC is '$(cat "$tmp/out")'"
STEPTRACE_CUPTI_SYNC=1 run -o "$tmp/r.stb" -- sh -c 'echo "${STEPTRACE_CUPTI_SYNC-unset}"'
[ "$(cat "$tmp/out")" = unset ] || fail "without --cupti-sync: STEPTRACE_CUPTI_SYNC is '$(cat "$tmp/out")'"

# --armed: the run's directory (named by steptrace's pid) for the command, its id said first, the
# directory gone at the end, and no bundle without a trigger; --modules-every N reaches the recorder
export STEPTRACE_ARMED_DIR="$tmp/armed"
run -o "$tmp/r.stb" --armed --modules-every 3 -- \
	sh -c 'echo "$STEPTRACE_ARMED|${STEPTRACE_MODULES_EVERY-unset}"; [ -d "$STEPTRACE_ARMED" ] && echo dir'
[ "$rc" = 0 ] || fail "--armed: exit $rc"
run_id=$(sed -n 's/^record: armed (run \([0-9]*\), command pid [0-9]*): nothing is recorded until .*/\1/p' "$tmp/err")
[ -n "$run_id" ] || fail "--armed: no run id said: $(cat "$tmp/err")"
[ "$(head -n 1 "$tmp/out")" = "$tmp/armed/$run_id|3" ] && [ "$(sed -n 2p "$tmp/out")" = dir ] ||
	fail "--armed: STEPTRACE_ARMED and STEPTRACE_MODULES_EVERY arrived as '$(cat "$tmp/out")'"
[ -e "$tmp/armed/$run_id" ] && fail "--armed: the run's directory is left"
grep -q "^record: the armed run ended without a trigger: no bundle written$" "$tmp/err" ||
	fail "--armed without a trigger said: $(cat "$tmp/err")"
STEPTRACE_ARMED=/x STEPTRACE_MODULES_EVERY=2 run -o "$tmp/r.stb" -- \
	sh -c 'echo "${STEPTRACE_ARMED-unset}|${STEPTRACE_MODULES_EVERY-unset}"'
[ "$(cat "$tmp/out")" = "unset|unset" ] || fail "without --armed: '$(cat "$tmp/out")' inherited"
usage "option '--armed' needs -- COMMAND" -o "$tmp/r.stb" --armed
# --every K --window N: armed, STEPTRACE_ARMED_EVERY=K:N for the recorder (window 3 by default)
run -o "$tmp/r.stb" --every 50 --window 4 -- sh -c 'echo "${STEPTRACE_ARMED:+armed}|$STEPTRACE_ARMED_EVERY"'
[ "$rc" = 0 ] && [ "$(cat "$tmp/out")" = "armed|50:4" ] || fail "--every 50 --window 4: exit $rc, '$(cat "$tmp/out")'"
grep -q "^record: armed (run [0-9]*, command pid [0-9]*): steps 50 to 53, then every 50 steps 4 more" "$tmp/err" ||
	fail "--every: said $(head -1 "$tmp/err")"
run -o "$tmp/r.stb" --every 7 -- sh -c 'echo "$STEPTRACE_ARMED_EVERY"'
[ "$(cat "$tmp/out")" = "7:3" ] || fail "--every 7: STEPTRACE_ARMED_EVERY '$(cat "$tmp/out")'"
run -o "$tmp/r.stb" --every 2147483647 --window 2147483647 -- true
grep -q "steps 2147483647 to 4294967293, then every 2147483647 steps 2147483647 more" "$tmp/err" ||
	fail "--every at INT_MAX said $(head -1 "$tmp/err")"
STEPTRACE_ARMED_EVERY=5:1 run -o "$tmp/r.stb" --armed -- sh -c 'echo "${STEPTRACE_ARMED_EVERY-unset}"'
[ "$(cat "$tmp/out")" = unset ] || fail "--armed alone: STEPTRACE_ARMED_EVERY '$(cat "$tmp/out")' inherited"
usage "--window is the steps of each --every window: give --every K" -o "$tmp/r.stb" --window 3 -- touch "$tmp/ran"
usage "option '--every' needs -- COMMAND" -o "$tmp/r.stb" --every 10
usage "option '--every' expects a positive integer, not '0'" -o "$tmp/r.stb" --every 0 -- touch "$tmp/ran"
usage "option '--modules-every' expects a positive integer, not '0'" -o "$tmp/r.stb" --modules-every 0 -- touch "$tmp/ran"

# arguments after -- belong to the command, flags included
run -o "$tmp/r.stb" -- sh -c 'echo "$@"' sh --model -o --help
[ "$(cat "$tmp/out")" = "--model -o --help" ] || fail "the command's arguments arrived as '$(cat "$tmp/out")'"

check_done foreign.cli
