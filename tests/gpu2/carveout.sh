#!/bin/sh
# carveout.sh STEPTRACE OUTDIR (label gpu2): the matrix products leave SMs
# to the all-reduces beside the backward (--sm-carveout, model/ddp.c).
# A model wide enough that cuBLASLt's persistent kernels fill the device
# is recorded data-parallel on two GPUs twice: with the default carve-out
# every product that starts while an NCCL kernel runs has at most SMs - 28
# CTAs; with --sm-carveout 0 some have more (else the check could not
# fail). The bundles' run configurations say which (`info`, format 1.7).
# Skipped (77) without two GPUs. Bundles stay in OUTDIR.
set -u
st=$1
out=$2
. "$(dirname "$0")/../lib/check.sh"
two_gpus "$out"
WIDE="--d-model 1024 --d-ff 4096 --layers 2 --heads 8 --vocab 8192 --ctx 512 --batch 4 --precision bf16"

# widest NAME: "SMS MAXGRID N" over the products that start inside an NCCL kernel of rank 0
widest() {
	rm -f "$tmp/$1.sqlite"
	"$st" export "$out/$1.rank0.stb" --format sqlite -o "$tmp/$1.sqlite" >/dev/null 2>&1 ||
		fail "export $1: no sqlite"
	sms=$("$st" info "$out/$1.rank0.stb" | sed -n 's/.*sm_[0-9]*, \([0-9]*\) SMs).*/\1/p')
	python3 - "$tmp/$1.sqlite" "$sms" <<'PY'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select s.value, k.start, k.end, k.gridX * k.gridY * k.gridZ from "
                  "CUPTI_ACTIVITY_KIND_KERNEL k join StringIds s on s.id = k.shortName").fetchall()
nccl = [(a, b) for n, a, b, g in rows if n.startswith("ncclDevKernel")]
gemm = [g for n, a, b, g in rows if (n.startswith("nvjet") or "gemm" in n.lower())
        and any(x <= a < y for x, y in nccl)]
print(sys.argv[2], max(gemm, default=0), len(gemm))
PY
}

for v in co:"" co0:"--sm-carveout 0 --nccl-ctas 0"; do
	name=${v%%:*}
	timeout 600 "$st" record --nproc 2 --ddp bucket --bucket-mb 4 $WIDE ${v#*:} --warmup 1 --steps 2 \
		--no-calibrate -o "$out/$name.stb" >"$tmp/$name.log" 2>&1 || fail "record $name: $(cat "$tmp/$name.log")"
done
"$st" info "$out/co.rank0.stb" | grep -q 'products on the SMs less 28 (--sm-carveout), NCCL on at most 12 CTAs' ||
	fail "info: no carve-out 28 and 12 CTAs: $("$st" info "$out/co.rank0.stb" | grep -i beside)"
"$st" info "$out/co0.rank0.stb" | grep -q "SMs less 0 (--sm-carveout), NCCL's choice of CTAs" ||
	fail "info --sm-carveout 0: $("$st" info "$out/co0.rank0.stb" | grep -i beside)"
set -- $(widest co)
if [ "$#" != 3 ]; then
	fail "no products beside NCCL read: $*"
else
	[ "$3" -gt 0 ] || fail "no product started while an all-reduce ran"
	[ "$2" -le $(($1 - 28)) ] || fail "a product beside an all-reduce has $2 CTAs, over $1 SMs - 28"
	echo "carve-out 28: $3 products beside NCCL, the widest $2 CTAs of $1 SMs"
fi
set -- $(widest co0)
if [ "$#" != 3 ]; then
	fail "--sm-carveout 0: no products beside NCCL read: $*"
else
	[ "$2" -gt $(($1 - 28)) ] || fail "--sm-carveout 0: the widest product beside NCCL has $2 CTAs, not over $1 - 28"
	echo "carve-out 0: $3 products beside NCCL, the widest $2 CTAs"
fi
check_done gpu2_carveout
