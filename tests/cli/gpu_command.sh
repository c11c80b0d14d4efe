#!/bin/sh
# gpu_command.sh STEPTRACE [gpu-part|no-gpu-part]: on a machine without a
# GPU, `steptrace bench` (and its attention, allreduce and contention benchmarks),
# `record` and `step` fail plainly: exit 1 and exactly one line on stderr,
# either "needs a GPU build" (no libsteptrace_gpu.so) or "no NVIDIA GPU
# found (the CUDA reason)" (bench allreduce, contention: or "built without NCCL"); a
# build without the GPU part says just that; record and step write nothing.
# Skipped (77) where a GPU is present and the build has its GPU part, since
# they would then really run.
set -u
st=$1
part=${2:-gpu-part}
if [ "$part" = gpu-part ] && nvidia-smi -L >/dev/null 2>&1; then
	echo "skip: a GPU is present"
	exit 77
fi
if ! "$st" help | grep -q '^   bench '; then
	echo "skip: this steptrace does not list bench"
	exit 77
fi
. "$(dirname "$0")/../lib/check.sh"
for c in bench "bench attention" "bench allreduce" "bench contention" "record -o $tmp/r.stb" "step -o $tmp/s.safetensors"; do
	# The CUDA runtime's own allocations at a failed init are not ours to find.
	# shellcheck disable=SC2086
	ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
		timeout 120 "$st" $c >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ "$rc" = 1 ] || fail "$c: exit $rc, want 1"
	[ "$(wc -l <"$tmp/err" | tr -d ' ')" = 1 ] || fail "$c: want exactly one line on stderr, got: $(cat "$tmp/err")"
	if [ "$part" = no-gpu-part ]; then
		[ "$(cat "$tmp/err")" = "error: '${c%% *}' needs the GPU part of steptrace, and this build has none (configured without CUDA)" ] ||
			fail "$c: a build without the GPU part does not say so: $(cat "$tmp/err")"
	else
		grep -Eq "^error: ('${c%% *}' needs a GPU build of steptrace: .+|no NVIDIA GPU found \(.+\)|this steptrace was built without NCCL .+)$" "$tmp/err" ||
			fail "$c: the line does not say the GPU is missing: $(cat "$tmp/err")"
	fi
done
[ ! -e "$tmp/r.stb" ] && [ ! -e "$tmp/s.safetensors" ] || fail "a file was written without a GPU"
ls -a "$tmp" | grep -q '\.tmp-' && fail "a temporary file was left"
check_done cli.gpu_command_without_gpu
