#!/bin/sh
# multi.sh STEPTRACE OUTDIR (label gpu2): the multi-GPU commands on two GPUs.
#   - bench allreduce under --nproc, under torchrun's variables with
#     --rendezvous, and under mpirun when Open MPI is installed: every sum
#     right, rank 0 alone prints;
#   - bench --nproc 2 --ddp in every mode: a row per rank and the run's;
#   - record --nproc 2 --ddp bucket: a bundle per rank naming its rank,
#     every NCCL kernel attributed to a communication op, and every report
#     on the pair (comm with skew, summary totals, steps, export);
#   - failures: a rank that exits, dies by SIGKILL or hangs ends the run
#     within bounded time, with a line naming the rank.
# Skipped (77) without two GPUs. Bundles stay in OUTDIR.
set -u
st=$1
out=$2
. "$(dirname "$0")/../lib/check.sh"
two_gpus "$out"
TINY="--d-model 128 --layers 2 --heads 4 --d-ff 256 --vocab 512 --ctx 64 --batch 2"

# count PATTERN FILE: lines matching
count() {
	grep -c -- "$1" "$2" 2>/dev/null || true
}

# ---- bench allreduce ------------------------------------------------------------
timeout 300 "$st" bench allreduce --nproc 2 --sizes 4KiB,1MiB,64MiB --dtype f32,bf16,f16 --warmup 2 \
	--iters 5 --format csv >"$tmp/ar.csv" 2>"$tmp/ar.err" || fail "bench allreduce --nproc 2: $(cat "$tmp/ar.err")"
[ "$(count ',ok$' "$tmp/ar.csv")" = 27 ] || fail "want 27 rows 'ok' (3 sizes x 3 dtypes x rank 0, 1, all):
$(cat "$tmp/ar.csv")"
grep -q FAILED "$tmp/ar.csv" && fail "a wrong sum: $(grep FAILED "$tmp/ar.csv")"
grep -q '^64 MiB,67108864,f32,2,all,5,' "$tmp/ar.csv" || fail "no 64 MiB f32 row of the run"

# torchrun's variables: two processes started by hand, meeting in a directory
torchrun_rank() {
	RANK=$1 WORLD_SIZE=2 LOCAL_RANK=$1 LOCAL_WORLD_SIZE=2 timeout 300 "$st" bench allreduce \
		--rendezvous "$tmp/rdv" --sizes 1MiB --iters 3 --format csv >"$tmp/tr$1.csv" 2>"$tmp/tr$1.err"
}
torchrun_rank 1 &
pid1=$!
torchrun_rank 0 &
pid0=$!
wait "$pid0"; rc0=$?
wait "$pid1"; rc1=$?
[ "$rc0" = 0 ] && [ "$rc1" = 0 ] || fail "torchrun-style ranks: exit $rc0 and $rc1: $(cat "$tmp"/tr*.err)"
[ "$(count ',ok$' "$tmp/tr0.csv")" = 3 ] || fail "rank 0 prints the table: $(cat "$tmp/tr0.csv")"
[ -s "$tmp/tr1.csv" ] && fail "rank 1 printed: $(cat "$tmp/tr1.csv")"

# mpirun: the rendezvous directory comes from Open MPI's job id
if command -v mpirun >/dev/null 2>&1; then
	timeout 300 mpirun --allow-run-as-root --oversubscribe -np 2 -x NCCL_NVLS_ENABLE -x LD_LIBRARY_PATH \
		-x TORCH_SYMM_MEM_DISABLE_MULTICAST -x NVSHMEM_DISABLE_NVLS \
		"$st" bench allreduce --sizes 1MiB --iters 3 --format csv >"$tmp/mpi.csv" 2>"$tmp/mpi.err" ||
		fail "mpirun -np 2: $(cat "$tmp/mpi.err")"
	[ "$(count ',ok$' "$tmp/mpi.csv")" = 3 ] || fail "under mpirun, rank 0 prints the table: $(cat "$tmp/mpi.csv")"
else
	echo "mpirun not found: its case skipped"
fi

# ---- bench --ddp ------------------------------------------------------------------
for m in naive flat overlap bucket; do
	buckets=""
	[ $m = bucket ] && buckets="--bucket-mb 0.05"   # several buckets in the tiny model
	# shellcheck disable=SC2086
	timeout 300 "$st" bench --nproc 2 --ddp $m $buckets $TINY --precision bf16 --warmup 1 --steps 3 \
		--format csv >"$tmp/ddp-$m.csv" 2>"$tmp/ddp-$m.err" || fail "bench --ddp $m: $(cat "$tmp/ddp-$m.err")"
	[ "$(count ',ok$' "$tmp/ddp-$m.csv")" = 3 ] || fail "bench --ddp $m: want rows of rank 0, 1 and all:
$(cat "$tmp/ddp-$m.csv")"
done

# ---- record --ddp bucket, and the reports on its bundles ---------------------------------
rm -f "$out"/ddp.rank*.stb
timeout 600 "$st" record --nproc 2 --ddp bucket --bucket-mb 0.05 $TINY --precision bf16 --warmup 1 --steps 2 \
	--no-calibrate -o "$out/ddp.stb" 2>"$tmp/rec.err" || fail "record --ddp bucket: $(cat "$tmp/rec.err")"
B="$out/ddp.rank0.stb $out/ddp.rank1.stb"
for r in 0 1; do
	[ -f "$out/ddp.rank$r.stb" ] || fail "no bundle of rank $r"
	"$st" info "$out/ddp.rank$r.stb" >"$tmp/info$r" 2>&1 || fail "info of rank $r"
	grep -Eq "^rank +$r of 2 \(local rank $r, run [0-9a-f]{16}, NCCL [0-9]+\.[0-9]+\.[0-9]+\)" "$tmp/info$r" ||
		fail "rank $r's header: $(cat "$tmp/info$r")"
	grep -q "^complete *yes" "$tmp/info$r" || fail "rank $r's bundle is not complete"
done
# shellcheck disable=SC2086
"$st" comm $B --format csv >"$tmp/comm.csv" 2>&1 || fail "comm: $(cat "$tmp/comm.csv")"
grep -q '^allreduce/bucket\.0,' "$tmp/comm.csv" || fail "comm: no bucket.0: $(cat "$tmp/comm.csv")"
# shellcheck disable=SC2086
"$st" comm $B --format csv --section skew >"$tmp/skew.csv" 2>/dev/null || fail "comm: no skew table"
grep -q '^allreduce' "$tmp/skew.csv" || fail "comm: no skew rows: $(cat "$tmp/skew.csv")"
grep -q '(no op)' "$tmp/comm.csv" && fail "comm: NCCL kernels without an op"
# every NCCL kernel is a communication op's: as many in the kernel summary as in the op summary
# shellcheck disable=SC2086
nccl=$("$st" summary $B --format csv 2>/dev/null | awk -F, '/nccl/ { n += $3 } END { print n + 0 }')
# shellcheck disable=SC2086
ops=$("$st" summary $B --by op --format csv 2>/dev/null | awk -F, '/,comm\// { n += $3 } END { print n + 0 }')
[ "$nccl" -gt 0 ] && [ "$nccl" = "$ops" ] || fail "NCCL kernels $nccl, of communication ops $ops"
# shellcheck disable=SC2086
"$st" steps $B --format csv >"$tmp/steps.csv" 2>&1 || fail "steps of the two ranks"
[ "$(grep -c '^[01],[12],no,' "$tmp/steps.csv")" = 4 ] || fail "2 measured steps per rank: $(cat "$tmp/steps.csv")"
# shellcheck disable=SC2086
"$st" export $B --format chrome -o "$tmp/ddp.json" 2>/dev/null || fail "export of the two ranks"
grep -q '"rank 1 host"' "$tmp/ddp.json" || fail "export: no process of rank 1"
# shellcheck disable=SC2086
"$st" report $B -o "$tmp/ddp.html" 2>/dev/null && grep -q 'id="comm"' "$tmp/ddp.html" || fail "report: no Communication card"

# ---- a failing rank ends the run, named --------------------------------------------
fault() {   # fault SPEC WANT_RC LINE ARGS...: the run ends with WANT_RC, a line on stderr, in time
	spec=$1; want=$2; line=$3; shift 3
	start=$(date +%s)
	STEPTRACE_FAULT=$spec timeout 200 "$st" "$@" >"$tmp/f.out" 2>"$tmp/f.err"
	rc=$?
	took=$(($(date +%s) - start))
	[ "$rc" = "$want" ] || fail "STEPTRACE_FAULT=$spec: exit $rc, want $want: $(cat "$tmp/f.err")"
	[ "$took" -lt 120 ] || fail "STEPTRACE_FAULT=$spec: took $took s"
	grep -Eq -- "$line" "$tmp/f.err" || fail "STEPTRACE_FAULT=$spec: no line '$line': $(cat "$tmp/f.err")"
}
fault 1:exit:2 3 "error: rank 1 exited with status 3; stopping the other ranks" \
	bench --nproc 2 --ddp flat $TINY --warmup 1 --steps 5
fault 1:kill:2 137 "error: rank 1 was killed by signal 9" bench --nproc 2 --ddp overlap $TINY --warmup 1 --steps 5
fault 1:hang:2 1 "error: rank 0: .*did not finish within 15 s" \
	bench --nproc 2 --ddp bucket --bucket-mb 0.05 $TINY --warmup 1 --steps 5 --timeout 15
fault 0:exit:2 3 "error: rank 0 exited with status 3" \
	record --nproc 2 --ddp bucket $TINY --warmup 1 --steps 5 --no-calibrate -o "$tmp/fault.stb"
"$st" info "$tmp/fault.rank1.stb" >/dev/null 2>&1 || fail "rank 1's bundle of a failed run is unreadable"

check_done "gpu2.multi"
