# expect.sh: what hostile.sh and time.sh share, sourced with $st (steptrace),
# $h (st-hostile), $dir (a scratch folder), MAX_KIB and MAX_CPU_S set. A
# check that fails says why on stderr and sets failed=1. Each command is
# bounded in work, not in wall-clock time: a slow or busy machine takes
# longer but does no more work, so the bound is on the CPU time the command
# used (user + system, all its threads; st-hostile run measures it, stops it
# a second past the bound and stops a hang after 10 times the bound plus
# 60 s of wall time). Every run is logged to $dir/runs (CPU s, wall s, KiB,
# command) and report_work prints the largest.
failed=0

fail() {
	echo "hostile: $*" >&2
	failed=1
}

# run_timed NAME STATUS ARGS...: `steptrace ARGS` exits STATUS within
# MAX_KIB of peak RSS and MAX_CPU_S seconds of CPU time; its stdout and
# stderr are in $dir/out and $dir/err. False when it did not.
run_timed() {
	name=$1; status=$2; shift 2
	ST_HOSTILE_LOG="$dir/runs" "$h" run "${small_kib:-$MAX_KIB}" "$MAX_CPU_S" "$st" "$@" > "$dir/out" 2> "$dir/err"
	got=$?
	[ "$got" = "$status" ] && return 0
	fail "$name: exit status $got, want $status"; sed 's/^/  /' "$dir/err" | head -5 >&2
	return 1
}

# expect NAME STATUS PATTERN ARGS...: run_timed, and its stderr is one line
# matching PATTERN (grep -E), or nothing when PATTERN is "".
expect() {
	name=$1; status=$2; pattern=$3; shift 3
	run_timed "$name" "$status" "$@" || return
	lines=$(wc -l < "$dir/err")
	if [ -z "$pattern" ] && [ "$lines" != 0 ]; then
		fail "$name: wants no message, got:"; sed 's/^/  /' "$dir/err" | head -5 >&2
	elif [ -n "$pattern" ] && { [ "$lines" != 1 ] || ! grep -Eq "$pattern" "$dir/err"; }; then
		fail "$name: wants one line matching '$pattern', got:"; sed 's/^/  /' "$dir/err" | head -5 >&2
	fi
}

# expect_err NAME PATTERN: the last command's stderr holds PATTERN.
expect_err() {
	grep -Eq "$2" "$dir/err" || { fail "$1: stderr lacks '$2'"; head -5 "$dir/err" >&2; }
}

# expect_out NAME PATTERN: the last command's output holds PATTERN (a correct result).
expect_out() {
	grep -Eq "$2" "$dir/out" || { fail "$1: the output lacks '$2'"; head -5 "$dir/out" >&2; }
}

gen() {
	"$h" "$@" || fail "cannot generate $2"
}

# expect_wrote NAME FILE ARGS...: `steptrace ARGS` exits 0 and says it wrote FILE, no error.
expect_wrote() {
	name=$1; file=$2; shift 2
	run_timed "$name" 0 "$@" || return
	if grep -q '^error' "$dir/err" || ! grep -q "^wrote '$file'" "$dir/err"; then
		fail "$name: want 'wrote $file' and no error"; sed 's/^/  /' "$dir/err" | head -5 >&2
	fi
}

# report_work LABEL: one line on stdout, the most CPU time and memory any
# command took against the bounds (the margin left, for a slower build).
report_work() {
	[ -s "$dir/runs" ] || return 0
	sort -rn "$dir/runs" | head -n 1 | {
		read -r cpu wall _ cmd
		echo "$1: the most CPU time: $cpu s ($cmd, $wall s of wall time), bound $MAX_CPU_S s;" \
		     "the most memory: $(sort -k3 -rn "$dir/runs" | head -n 1 | cut -d' ' -f3) KiB, bound $MAX_KIB KiB"
	}
}
