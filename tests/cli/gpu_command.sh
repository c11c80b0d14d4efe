#!/bin/sh
# gpu_command.sh STEPTRACE [gpu-part|no-gpu-part]: on a machine without a
# GPU, `steptrace bench` fails plainly: exit 1 and exactly one line on
# stderr, either "needs a GPU build" (no libsteptrace_gpu.so) or the model's
# "no CUDA GPU" line; a build without the GPU part says just that. Skipped
# (77) where a GPU is present and the build has its GPU part, since bench
# would then really run.
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
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The CUDA runtime's own allocations at a failed init are not ours to find.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 \
	timeout 120 "$st" bench >"$tmp/out" 2>"$tmp/err"
rc=$?
status=0
if [ "$rc" != 1 ]; then
	echo "FAIL: exit $rc, want 1" >&2
	status=1
fi
if [ "$(wc -l <"$tmp/err" | tr -d ' ')" != 1 ]; then
	echo "FAIL: want exactly one line on stderr, got:" >&2
	cat "$tmp/err" >&2
	status=1
fi
if ! grep -Eqi "^error: .*(needs a GPU build of steptrace|GPU)" "$tmp/err"; then
	echo "FAIL: the line does not say a GPU is missing: $(cat "$tmp/err")" >&2
	status=1
fi
if [ "$part" = no-gpu-part ] &&
	[ "$(cat "$tmp/err")" != "error: 'bench' needs the GPU part of steptrace, and this build has none (configured without CUDA)" ]; then
	echo "FAIL: a build without the GPU part does not say so: $(cat "$tmp/err")" >&2
	status=1
fi
[ "$status" = 0 ] && echo "ok: $(cat "$tmp/err")"
exit $status
