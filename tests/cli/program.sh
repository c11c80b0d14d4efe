#!/bin/sh
# program.sh STEPTRACE VERSION: the dispatcher's contract: version, help,
# usage errors (exit 129: one error line, with git's "Did you mean" where a
# name is near, and one line pointing to --help), and for every command it
# lists, that `help CMD` equals `CMD --help`, starts with what CMD does and
# that a bad flag is a usage error.
set -u
st=$1
version=$2
. "$(dirname "$0")/../lib/check.sh"

# run ARGS...: sets $rc; stdout in $tmp/out, stderr in $tmp/err
run() {
	"$st" "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

lines() {
	wc -l <"$1" | tr -d ' '
}

run --version
[ "$rc" = 0 ] || fail "--version exit $rc"
[ "$(cat "$tmp/out")" = "steptrace $version" ] || fail "--version printed '$(cat "$tmp/out")'"
run version
[ "$(cat "$tmp/out")" = "steptrace $version" ] || fail "version printed '$(cat "$tmp/out")'"

run help
[ "$rc" = 0 ] || fail "help exit $rc"
[ -s "$tmp/err" ] && fail "help wrote to stderr"
head -n 1 "$tmp/out" | grep -q '^usage: steptrace ' || fail "help does not start with usage"
grep -q '^   record ' "$tmp/out" || fail "help does not list record"
grep -q '^Order of work: ' "$tmp/out" || fail "help does not show the order of work"
grep -q '^  1\. steptrace record ' "$tmp/out" || fail "help's order of work does not start with record"
cp "$tmp/out" "$tmp/help"
run --help
cmp -s "$tmp/out" "$tmp/help" || fail "--help differs from help"
run -h
cmp -s "$tmp/out" "$tmp/help" || fail "-h differs from help"

run
[ "$rc" = 129 ] || fail "no command: exit $rc, want 129"
[ -s "$tmp/out" ] && fail "no command wrote to stdout"
grep -q '^usage: steptrace ' "$tmp/err" || fail "no command: no usage on stderr"

run foo
[ "$rc" = 129 ] || fail "unknown command: exit $rc, want 129"
[ "$(cat "$tmp/err")" = "error: 'foo' is not a steptrace command. See 'steptrace help'." ] ||
	fail "unknown command printed '$(cat "$tmp/err")'"
[ "$(lines "$tmp/err")" = 1 ] || fail "unknown command: more than one line"
[ -s "$tmp/out" ] && fail "unknown command wrote to stdout"

run help foo
[ "$rc" = 129 ] || fail "help foo: exit $rc, want 129"
[ "$(lines "$tmp/err")" = 1 ] || fail "help foo: want one line"

# a misspelled command: git's "Did you mean"
for typo in sumary:summary summray:summary recrod:record replya:replay; do
	run "${typo%%:*}"
	[ "$rc" = 129 ] || fail "${typo%%:*}: exit $rc, want 129"
	[ "$(cat "$tmp/err")" = "error: '${typo%%:*}' is not a steptrace command. Did you mean '${typo#*:}'?" ] ||
		fail "${typo%%:*} printed '$(cat "$tmp/err")'"
done
run help sumary
[ "$(cat "$tmp/err")" = "error: 'sumary' is not a steptrace command. Did you mean 'summary'?" ] ||
	fail "help sumary printed '$(cat "$tmp/err")'"

run --bogus
[ "$rc" = 129 ] || fail "--bogus: exit $rc, want 129"
[ "$(head -n 1 "$tmp/err")" = "error: unknown option '--bogus'" ] || fail "--bogus printed '$(head -n 1 "$tmp/err")'"
[ "$(lines "$tmp/err")" = 2 ] && [ "$(sed -n 2p "$tmp/err")" = "See 'steptrace --help'." ] ||
	fail "--bogus: want the error and one line pointing to --help, got: $(cat "$tmp/err")"

# usage errors of an analysis command: one error line, one pointing to --help
usage_error() {  # usage_error LINE ARGS...
	want=$1
	shift
	run "$@"
	[ "$rc" = 129 ] || fail "$*: exit $rc, want 129"
	[ "$(cat "$tmp/err")" = "$want
See 'steptrace $1 --help'." ] || fail "$*: printed '$(cat "$tmp/err")'"
	[ -s "$tmp/out" ] && fail "$*: wrote to stdout"
}
usage_error "error: unknown option '--tpo'. Did you mean '--top'?" summary --tpo 3 x.stb
usage_error "error: unknown option '--formt'. Did you mean '--format'?" summary --formt csv x.stb
usage_error "error: unknown option '--full-name'. Did you mean '--full-names'?" summary --full-name x.stb
usage_error "error: option '--range' given twice" summary --range forward --range backward x.stb
usage_error "error: option '--range' given twice" diff --range=forward x.stb --range backward y.stb
usage_error "error: 'diff' compares two bundles, A (the baseline) and B: give the second" diff x.stb
usage_error "error: 'diff' compares two bundles, A (the baseline) and B: give both" diff
usage_error "error: 'summary' needs a bundle (FILE.stb, or the bundles of one run's ranks)" summary
usage_error "error: option '--by' expects kernel, op or category, not 'nothing'" summary --by nothing x.stb

# Every analysis command listed (the section before the GPU commands).
cmds=$(sed -n '/^Analysis commands/,/^$/p' "$tmp/help" | awk '/^   [a-z]/ { print $1 }')
for c in $cmds; do
	run help "$c"
	[ "$rc" = 0 ] || fail "help $c: exit $rc"
	grep -q '^usage: ' "$tmp/out" || fail "help $c: no usage on stdout"
	head -n 1 "$tmp/out" | grep -q "^steptrace $c: ." || fail "help $c: does not start with what $c does"
	cp "$tmp/out" "$tmp/cmdhelp"
	run "$c" --help
	cmp -s "$tmp/out" "$tmp/cmdhelp" || fail "'$c --help' differs from 'help $c'"
	run "$c" --no-such-flag
	[ "$rc" = 129 ] || fail "$c --no-such-flag: exit $rc, want 129"
	[ "$(cat "$tmp/err")" = "error: unknown option '--no-such-flag'
See 'steptrace $c --help'." ] || fail "$c --no-such-flag printed '$(cat "$tmp/err")'"
done

check_done "cli.program (commands: $(echo $cmds))"
