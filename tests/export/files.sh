#!/bin/sh
# What `steptrace export` does with its output file and its size:
#   - the size is estimated before writing: exactly for small traces
#     (--max-size at the size passes, one byte less is refused), and a
#     large trace is announced (and refused above --max-size, 512 MiB by default);
#   - nothing is written over the bundle itself (symlinks followed);
#   - a failed export leaves an existing output as it was and no temporary;
#   - a non-regular output (/dev/null) is written in place and stays.
set -eu
steptrace=$1; writer=$2; gen=$3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$writer" --write "$tmp/x.stb"
cd "$tmp"

for fmt in perfetto chrome; do
	"$steptrace" export x.stb --format $fmt -o full.out 2> log || { cat log; fail "export $fmt"; }
	n=$(stat -c %s full.out)
	grep -q "^wrote 'full.out' (" log || fail "$fmt: no size in: $(cat log)"
	! "$steptrace" export x.stb --format $fmt -o small.out --max-size $((n - 1)) 2> log ||
		fail "$fmt: --max-size $((n - 1)) accepted a $n-byte trace"
	[ "$(wc -l < log)" -eq 1 ] && grep -q "would be about .* more than --max-size" log ||
		fail "$fmt: refusal is not one line: $(cat log)"
	[ ! -e small.out ] || fail "$fmt: a refused export left its file"
	"$steptrace" export x.stb --format $fmt -o exact.out --max-size $n 2> log ||
		fail "$fmt: --max-size $n refused a $n-byte trace: $(cat log)"
	cmp -s full.out exact.out || fail "$fmt: two exports of one bundle differ"
done

# a large trace: announced before it is written, refused above the limit
"$gen" bench --events 60000 -o big.stb
"$steptrace" export big.stb -o big.pftrace 2> log || { cat log; fail "export big"; }
head -1 log | grep -q "^writing about .* MiB of Perfetto trace to 'big.pftrace'" ||
	fail "no note before a large write: $(cat log)"
! "$steptrace" export big.stb --format chrome -o big.json --max-size 8MiB 2> log || fail "--max-size 8MiB ignored"
grep -q "would be about .* MiB of Chrome JSON, more than --max-size 8 MiB: keep less with --step N, --range PATH" log ||
	fail "refusal does not say the size and what to do: $(cat log)"

# never over the bundle, also through a symlink
cp x.stb x.copy
ln -s x.stb link.stb
for out in x.stb link.stb; do
	! "$steptrace" export x.stb -o $out 2> log || fail "-o $out accepted"
	grep -q "is the same file as input" log || fail "-o $out: $(cat log)"
	cmp -s x.stb x.copy || fail "-o $out changed the bundle"
done

# a failed export keeps what was there, and leaves no temporary
mkdir out && printf 'keep me\n' > out/t.pftrace
! "$steptrace" export x.stb --range no-such-range -o out/t.pftrace 2> /dev/null || fail "--range no-such-range accepted"
(trap '' XFSZ; ulimit -f 1; ! "$steptrace" export x.stb -o out/t.pftrace 2> log) || fail "a write past ulimit -f succeeded"
grep -q "cannot write" log || fail "the failed write says: $(cat log)"
[ "$(cat out/t.pftrace)" = "keep me" ] || fail "a failed export changed the existing output"
[ "$(ls -A out)" = "t.pftrace" ] || fail "a failed export left: $(ls -A out)"

# without -o, the default name is replaced only when steptrace wrote it
for fmt in perfetto chrome sqlite; do
	ext=$(case $fmt in perfetto) echo pftrace;; chrome) echo json;; sqlite) echo sqlite;; esac)
	printf 'mine\n' > "x.$ext"
	! "$steptrace" export x.stb --format $fmt 2> log || fail "--format $fmt replaced x.$ext that steptrace did not write"
	grep -q "exists and is not an export steptrace wrote" log || fail "--format $fmt over a foreign file says: $(cat log)"
	[ "$(cat "x.$ext")" = "mine" ] || fail "--format $fmt changed x.$ext"
	rm "x.$ext"
	"$steptrace" export x.stb --format $fmt 2> /dev/null && "$steptrace" export x.stb --format $fmt 2> /dev/null ||
		fail "--format $fmt did not replace its own x.$ext"
done

# a device is written in place and kept
"$steptrace" export x.stb -o /dev/null 2> /dev/null || fail "-o /dev/null"
[ -c /dev/null ] || fail "/dev/null is no longer a device"
echo "files: sizes estimated and limited, outputs replaced only whole, the bundle never overwritten"
