#!/bin/sh
# gpu_command.sh STEPTRACE: on a machine without a GPU, `steptrace bench`,
# `record` and `step` fail plainly: exit 1 and exactly one line on stderr,
# either "needs a GPU build" (no libsteptrace_gpu.so) or "no NVIDIA GPU
# found (the CUDA reason)"; record and step write nothing.
# Skipped (77) where a GPU is present, since they would then really run.
set -u
st=$1
if nvidia-smi -L >/dev/null 2>&1; then
	echo "skip: a GPU is present"
	exit 77
fi
if ! "$st" help | grep -q '^   bench '; then
	echo "skip: this steptrace does not list bench"
	exit 77
fi
. "$(dirname "$0")/../lib/check.sh"
for c in bench "record -o $tmp/r.stb" "step -o $tmp/s.safetensors"; do
	# The CUDA runtime's own allocations at a failed init are not ours to find.
	# shellcheck disable=SC2086
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		timeout 120 "$st" $c >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" = 1 ] || fail "$c: exit $rc, want 1"
	[ "$(wc -l <"$tmp/err" | tr -d ' ')" = 1 ] || fail "$c: want exactly one line on stderr, got: $(cat "$tmp/err")"
	grep -Eq "^error: ('${c%% *}' needs a GPU build of steptrace: .+|no NVIDIA GPU found \(.+\))$" "$tmp/err" ||
		fail "$c: the line does not say the GPU is missing: $(cat "$tmp/err")"
done
[ ! -e "$tmp/r.stb" ] && [ ! -e "$tmp/s.safetensors" ] || fail "a file was written without a GPU"
ls -a "$tmp" | grep -q '\.tmp-' && fail "a temporary file was left"
check_done cli.gpu_command_without_gpu
