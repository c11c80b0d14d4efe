# torch_prologue.sh: sourced by the GPU tests that record PyTorch programs
# (gpu.sh, auto.sh) with their arguments STEPTRACE OUTDIR: sets $st (the
# program, absolute), $out (emptied of bundles), $here, $py, loads check.sh,
# and exits 77 (skipped) without python3 + torch + a CUDA GPU.
st=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
out=$2
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON:-python3}
. "$here/../lib/check.sh"
mkdir -p "$out"
rm -f "$out"/*.stb

if ! "$py" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)" 2>/dev/null; then
	echo "skip: no python3 with torch and a CUDA GPU"
	exit 77
fi
