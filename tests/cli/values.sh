#!/bin/sh
# values.sh STEPTRACE GEN: one rule per kind of value and one message shape
# for every command (lib/options.h): counts, positive counts, sizes and
# times, refused with exit 129 and "option '--x' expects ..., not 'v'" as
# the first line, before any bundle is read.
set -u
st=$1 gen=$2
. "$(dirname "$0")/../lib/check.sh"
b="$tmp/b.stb"
"$gen" basic -o "$b" || { echo "cannot make a bundle"; exit 1; }

# refused WANT ARGS...: exit 129 and WANT as the first line on stderr
refused() {
	want=$1
	shift
	"$st" "$@" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ $rc = 129 ] || fail "$*: exit $rc, want 129"
	[ "$(head -n 1 "$tmp/err")" = "$want" ] || fail "$*: said '$(head -n 1 "$tmp/err")', want '$want'"
	[ -s "$tmp/out" ] && fail "$*: printed a report"
}

# accepted ARGS...: exit 0
accepted() {
	"$st" "$@" > "$tmp/out" 2> "$tmp/err" || fail "$*: exit $?: $(head -n 1 "$tmp/err")"
}

for c in summary ranges flops diff memory; do
	case $c in diff) args="$b $b" ;; *) args=$b ;; esac
	refused "error: option '--top' expects a positive integer, not '0'" $c $args --top 0
	accepted $c $args --top 1
done
refused "error: option '--top' expects a positive integer, not '-1'" summary "$b" --top -1
refused "error: option '-n' expects a positive integer, not 'x'" summary "$b" -n x
refused "error: option '--depth' expects a positive integer, not '-1'" ranges "$b" --depth -1
refused "error: option '--depth' expects a positive integer, not '0'" ranges "$b" --depth 0
accepted ranges "$b" --depth 1
refused "error: option '--from' expects a non-negative number, not '-3'" replay "$b" --from -3 --to 0.5
refused "error: option '--to' expects a non-negative number, not '-1'" replay "$b" --to -1
refused "error: option '--to' expects a time at or after --from's 3 ms, not '0.5'" replay "$b" --from 3 --to 0.5
accepted replay "$b" --from 0 --to 0
refused "error: option '--capacity' expects a positive size such as 4096, 512MiB, 1.5GiB or 80GB, not '0'" \
	replay "$b" --capacity 0
refused "error: option '--capacity' expects a positive size such as 4096, 512MiB, 1.5GiB or 80GB, not '-1GiB'" \
	replay "$b" --capacity -1GiB
refused "error: option '--step' expects a non-negative integer, not '-1'" export "$b" --step -1 -o "$tmp/t"
refused "error: option '--step' expects a non-negative integer, not '-1'" memory "$b" --step -1
[ -e "$tmp/t" ] && fail "a refused export wrote its file"
accepted memory "$b" --step 0
# export's switch reads well both ways: --api (the default) and --no-api
accepted export "$b" --no-api -o "$tmp/noapi.pftrace"
grep -q ', 0 launch flows' "$tmp/err" || fail "export --no-api: $(head -n 1 "$tmp/err")"
accepted export "$b" --api -o "$tmp/api.pftrace"
grep -q ', 0 launch flows' "$tmp/err" && fail "export --api: $(head -n 1 "$tmp/err")"
refused "error: unknown option '--no-no-api'" export "$b" --no-no-api -o "$tmp/x"
check_done cli.values
