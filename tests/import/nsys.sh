#!/bin/sh
# nsys.sh STEPTRACE ST-IMPORT-NSYS DIR: the real Nsight Systems exports of
# DIR (README.md says whose) imported: the kernels' count and total time in
# `summary` are the kernel table's (nsys's own sum), the copies' too, the
# NVTX ranges are there, the header says what the export lacks, and every
# analysis runs on the bundles.
set -u
. "$(dirname "$0")/../lib/check.sh"
st=$1 imp=$2 dir=$3

for db in "$dir"/saxpy-mpi-cuda.sqlite "$dir"/cloverleaf-cuda.sqlite; do
	name=$(basename "$db" .sqlite)
	b=$tmp/$name.stb
	if ! "$imp" "$db" "$b" 2>"$tmp/err"; then
		fail "$name: import failed: $(cat "$tmp/err")"
		continue
	fi
	[ -s "$tmp/err" ] && fail "$name: import warned: $(cat "$tmp/err")"

	# summary over everything (--include-warmup: the launch period's warm-up step and setup too)
	want=$(sqlite3 "$db" "SELECT count(*) || ' ' || sum(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_KERNEL")
	got=$("$st" summary --include-warmup --format csv "$b" 2>/dev/null |
	      awk -F, 'NR > 1 { n += $3; t += $2 } END { printf "%d %d", n, t }')
	[ "$got" = "$want" ] || fail "$name: summary's kernels $got, the table's $want (count, ns)"
	want=$(sqlite3 "$db" "SELECT count(*) || ' ' || sum(\"end\" - start) FROM CUPTI_ACTIVITY_KIND_MEMCPY")
	got=$("$st" summary --include-warmup --by category --format csv "$b" 2>/dev/null |
	      awk -F, '$NF == "memcpy/memset" { printf "%d %d", $3, $2 }')
	[ "$got" = "$want" ] || fail "$name: summary's copies $got, the table's $want (count, ns)"

	for c in info steps "steps --include-warmup" memory explain ranges comm flops replay "summary --by op" \
		 "diff $b"; do
		# shellcheck disable=SC2086
		"$st" $c "$b" >"$tmp/out" 2>&1 || fail "$name: $c failed: $(tail -3 "$tmp/out")"
	done
	for f in sqlite chrome perfetto; do
		"$st" export --format $f -o "$tmp/$name.export.$f" "$b" >/dev/null 2>&1 ||
			fail "$name: export --format $f failed"
	done

	bsdtar -xOf "$b" header.pb >"$tmp/header.pb"
	grep -aq "nsys: $name.sqlite" "$tmp/header.pb" || fail "$name: no imported_from in the header"
	grep -aq "no allocations: memory reports empty" "$tmp/header.pb" ||
		fail "$name: the header does not say that the export has no allocations"
done

# the MPI SAXPY's NVTX: 22 push/pop ranges, MPI's in domain "MPI"
b=$tmp/saxpy-mpi-cuda.stb
want=$(sqlite3 "$dir/saxpy-mpi-cuda.sqlite" "SELECT count(*) FROM NVTX_EVENTS WHERE eventType IN (59, 60)")
got=$("$st" info "$b" | awk '$1 == "range" { print $3 }')
[ "$got" = "$want" ] || fail "saxpy: $got ranges read, the export has $want"
"$st" ranges --include-warmup "$b" | grep -q 'MPI_Send' || fail "saxpy: no MPI_Send range"
"$st" ranges --include-warmup "$b" | grep -q 'saxpy' || fail "saxpy: no saxpy range"
# CloverLeaf has no NVTX: the header says so, and replay cuts steps by the launch period
grep -aq "no NVTX ranges" "$tmp/header.pb" || fail "cloverleaf: the header does not say it has no NVTX"

check_done import.nsys
