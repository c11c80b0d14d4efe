# check.sh: the shell tests' harness, sourced after `set -u`:
#
#   . "$(dirname "$0")/../lib/check.sh"
#
# $tmp is a folder removed at exit; `fail MSG` counts a failure and the test
# goes on, so one run shows every broken expectation; `check_done NAME` is
# the last line (exit status 1 when anything failed).
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0

fail() {
	echo "FAIL: $*" >&2
	failures=$((failures + 1))
}

check_done() {
	if [ "$failures" != 0 ]; then
		echo "$1: $failures failure(s)" >&2
		exit 1
	fi
	echo "$1: ok"
}

# two_gpus OUTDIR: the two-GPU tests' start (tests/gpu2): exit 77 (skipped)
# with fewer GPUs, else OUTDIR made and NVLink multicast kept off.
two_gpus() {
	gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
	if [ "$gpus" -lt 2 ]; then
		echo "skip: $gpus GPU(s), this test needs 2"
		exit 77
	fi
	mkdir -p "$1"
	export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
}
