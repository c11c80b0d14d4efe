#!/bin/sh
# program.sh STEPTRACE VERSION: the dispatcher's contract: version, help,
# usage errors (exit 129, one error line), and for every command it lists,
# that `help CMD` equals `CMD --help` and that a bad flag is a usage error.
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

run --bogus
[ "$rc" = 129 ] || fail "--bogus: exit $rc, want 129"
[ "$(head -n 1 "$tmp/err")" = "error: unknown option '--bogus'" ] || fail "--bogus printed '$(head -n 1 "$tmp/err")'"

# Every analysis command listed (the section before the GPU commands).
cmds=$(sed -n '/^Analysis commands/,/^$/p' "$tmp/help" | awk '/^   [a-z]/ { print $1 }')
for c in $cmds; do
	run help "$c"
	[ "$rc" = 0 ] || fail "help $c: exit $rc"
	grep -q '^usage: ' "$tmp/out" || fail "help $c: no usage on stdout"
	cp "$tmp/out" "$tmp/cmdhelp"
	run "$c" --help
	cmp -s "$tmp/out" "$tmp/cmdhelp" || fail "'$c --help' differs from 'help $c'"
	run "$c" --no-such-flag
	[ "$rc" = 129 ] || fail "$c --no-such-flag: exit $rc, want 129"
	[ "$(head -n 1 "$tmp/err")" = "error: unknown option '--no-such-flag'" ] ||
		fail "$c --no-such-flag printed '$(head -n 1 "$tmp/err")'"
done

check_done "cli.program (commands: $(echo $cmds))"
