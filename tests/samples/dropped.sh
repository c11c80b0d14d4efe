#!/bin/sh
# dropped.sh STEPTRACE ROOT: no silent loss. tests/samples/dropped/ holds
# the ranks of a `record --ddp naive` run made before issue 23's fix of the
# recorder's buffers, which dropped 2,637 and 2,678 records while recording
# (CUPTI had no buffer for them): every analysis command that reads one says so in one
# warning line per bundle on stderr, once, in every format, stdout left as
# it was; a sound bundle (samples/small-bf16-train.stb) gets none; and diff
# does not call two runs' kernels the same when one of them dropped some.
set -u
st=$1 root=$2
. "$(dirname "$0")/../lib/check.sh"

r0=$root/tests/samples/dropped/ddp-naive.rank0.stb
r1=$root/tests/samples/dropped/ddp-naive.rank1.stb
b0=$root/docs/multi/ddp-bucket.rank0.stb
b1=$root/docs/multi/ddp-bucket.rank1.stb
sound=$root/samples/small-bf16-train.stb
tail="kernel records were dropped while recording (CUPTI's buffers were full; it does not say of which kind: copies and memsets may be among them): kernel totals undercount"

# warned N BUNDLE COUNT ARGS...: `steptrace ARGS` succeeds and its stderr
# holds BUNDLE's warning exactly once, and N lines of such warnings in all
warned() {
	n=$1 bundle=$2 count=$3
	shift 3
	"$st" "$@" > "$tmp/out" 2> "$tmp/err" || { fail "$*: exit $?: $(cat "$tmp/err")"; return; }
	[ "$(grep -cxF "warning: '$bundle': $count $tail" "$tmp/err")" = 1 ] ||
		fail "$*: want one warning of $bundle's $count dropped records, got: $(cat "$tmp/err")"
	[ "$(grep -c 'records were dropped' "$tmp/err")" = "$n" ] ||
		fail "$*: want $n warning(s) of dropped records, got: $(cat "$tmp/err")"
	! grep -q 'records were dropped' "$tmp/out" || [ "$keep_stdout" = no ] ||
		fail "$*: the warning went to stdout"
}

keep_stdout=yes
for c in info steps summary ranges memory flops replay comm "summary --per-rank" "memory --step 1" \
	 "summary --format csv" "summary --format json" "summary --format md" "replay --format csv"; do
	# shellcheck disable=SC2086
	set -- $c
	name=$1
	shift
	[ "$name" = info ] && keep_stdout=no || keep_stdout=yes   # info's table and notes say it too
	warned 1 "$r0" 2,637 "$name" "$r0" "$@"
	warned 2 "$r1" 2,678 "$name" "$r0" "$r1" "$@"
done
keep_stdout=yes
warned 1 "$r0" 2,637 export "$r0" -o "$tmp/t.pftrace"
warned 2 "$r1" 2,678 export "$r0" "$r1" --format chrome -o "$tmp/t.json"
warned 1 "$r0" 2,637 export "$r0" --format sqlite -o "$tmp/t.sqlite"
warned 1 "$r0" 2,637 report "$r0" -o "$tmp/t.html"
warned 2 "$r1" 2,678 report "$r0" "$r1" -o "$tmp/t.html"
warned 1 "$r0" 2,637 flops "$r0" --svg "$tmp/t.svg"
keep_stdout=no   # diff's notes say it too (below)
warned 2 "$r0" 2,637 diff "$r0" "$r1" "$b0" "$b1"
warned 1 "$r0" 2,637 diff "$sound" "$r0"

# diff: no claim that both ran the same kernels; the totals named incomplete
"$st" diff "$r0" "$r1" "$b0" "$b1" > "$tmp/out" 2> "$tmp/err" || fail "diff naive bucket: exit $?"
! grep -q 'both bundles ran the same kernels' "$tmp/out" || fail "diff naive bucket: claims the same kernels"
grep -q 'whether both ran the same kernels is unknown' "$tmp/out" ||
	fail "diff naive bucket: does not say the kernels' lists are incomplete"
grep -q '^A: 5,315 kernel records were dropped while recording' "$tmp/out" ||
	fail "diff naive bucket: no note of A's 5,315 dropped records (both ranks)"
grep -q 'A dropped records of GPU work: GPU times, kernel counts and their deltas compare incomplete totals' \
	"$tmp/out" || fail "diff naive bucket: the deltas are not said to be incomplete"
"$st" diff "$r0" "$r1" "$b0" "$b1" --format json > "$tmp/out" 2> /dev/null || fail "diff --format json: exit $?"
python3 -c 'import json, sys; n = json.load(open(sys.argv[1]))["notes"]; sys.exit(not any("unknown" in x for x in n))' \
	"$tmp/out" || fail "diff --format json: the notes do not say the kernels' lists are incomplete"
"$st" diff "$sound" "$sound" > "$tmp/out" 2> "$tmp/err" || fail "diff sound sound: exit $?"
grep -q 'both bundles ran the same kernels' "$tmp/out" || fail "diff sound sound: no longer the same kernels"

# a sound bundle: not a word of it
for c in info steps summary ranges memory flops replay "diff $sound"; do
	# shellcheck disable=SC2086
	"$st" $c "$sound" > "$tmp/out" 2> "$tmp/err" || fail "$c: exit $?"
	! grep -q 'records were dropped\|^warning' "$tmp/err" "$tmp/out" || fail "$c on a sound bundle: $(cat "$tmp/err")"
done
"$st" export "$sound" -o "$tmp/s.pftrace" > /dev/null 2> "$tmp/err" || fail "export sound: exit $?"
! grep -q '^warning' "$tmp/err" || fail "export on a sound bundle: $(cat "$tmp/err")"
check_done "samples.dropped"
