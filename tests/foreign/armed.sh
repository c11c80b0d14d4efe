#!/bin/sh
# armed.sh STEPTRACE TEST_ARMED: `steptrace trigger` against stand-ins for
# the processes of an armed run (test_armed serve: each publishes its status
# file and ends a step every 20 ms; no GPU): the trigger by a process's pid
# and by the run id records the same steps on both ranks and says where,
# triggers are numbered, --no-wait returns at once, and a process that is
# not armed, a run that does not exist and bad usage each say so in one
# line (exit 1, 1 and 129); a trigger issued before any process has joined
# (beside a launcher that never does) waits until both ranks of the world
# have, and one whose rank never joins names it after --timeout.
set -u
st=$1
armed=$2
. "$(dirname "$0")/../lib/check.sh"
export STEPTRACE_ARMED_DIR="$tmp/armed"
run=$tmp/armed/777
mkdir -p "$run"

"$armed" serve "$run" 0 20 &
p0=$!
"$armed" serve "$run" 1 20 &
p1=$!
# both published
for i in $(seq 1 100); do
	[ -e "$run/$p0.armed" ] && [ -e "$run/$p1.armed" ] && break
	sleep 0.05
done

# trigger TRIGGER-ARGS...: stdout in $tmp/out, stderr in $tmp/err, status in $rc
trigger() {
	"$st" trigger "$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
}

trigger "$p1" --steps 3 --timeout 30
[ "$rc" = 0 ] || fail "trigger by pid: exit $rc: $(cat "$tmp/out" "$tmp/err")"
first=$(sed -n '1s/^trigger 1 of run 777: steps \([0-9]*\) to \([0-9]*\) on 2 processes (rank 0 (pid '"$p0"'), rank 1 (pid '"$p1"'))$/\1 \2/p' "$tmp/out")
[ -n "$first" ] || fail "trigger by pid: first line: $(head -n 1 "$tmp/out")"
set -- $first
s=${1:-0} e=${2:-0}
[ "$((e - s))" = 2 ] || fail "3 steps are $s to $e"
grep -qx "rank 0 (pid $p0): steps $s to $e in '$run/run.1.rank0.stb'" "$tmp/out" ||
	fail "rank 0's bundle: $(cat "$tmp/out")"
grep -qx "rank 1 (pid $p1): steps $s to $e in '$run/run.1.rank1.stb'" "$tmp/out" ||
	fail "rank 1's bundle: $(cat "$tmp/out")"
[ -s "$tmp/err" ] && fail "trigger by pid wrote to stderr: $(cat "$tmp/err")"

trigger --run 777 -n 2 --timeout 30
[ "$rc" = 0 ] || fail "trigger --run: exit $rc: $(cat "$tmp/out" "$tmp/err")"
grep -q "^trigger 2 of run 777: steps [0-9]* to [0-9]* on 2 processes" "$tmp/out" ||
	fail "the second trigger is not number 2: $(cat "$tmp/out")"
[ "$(grep -c "in '$run/run.2.rank[01].stb'" "$tmp/out")" = 2 ] || fail "trigger 2's bundles: $(cat "$tmp/out")"

trigger --run 777 --no-wait
[ "$rc" = 0 ] && [ "$(wc -l <"$tmp/out")" = 1 ] || fail "--no-wait: exit $rc: $(cat "$tmp/out" "$tmp/err")"
trigger --run 777 --no-wait
[ "$rc" = 1 ] && grep -q "^error: trigger 3 of run 777 is still under way" "$tmp/err" ||
	fail "a trigger while one is under way: exit $rc: $(cat "$tmp/out" "$tmp/err")"

# not armed, no such run, no such process: one line, exit 1; bad usage 129
trigger $$
[ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "^error: process $$ is not armed" "$tmp/err" ||
	fail "a process that is not armed: exit $rc: $(cat "$tmp/err")"
trigger --run 778
[ "$rc" = 1 ] && grep -q "^error: there is no armed run '778'" "$tmp/err" || fail "no run: exit $rc: $(cat "$tmp/err")"
trigger 2147483646
[ "$rc" = 1 ] && grep -q "^error: there is no process 2147483646" "$tmp/err" ||
	fail "no process: exit $rc: $(cat "$tmp/err")"
trigger
[ "$rc" = 129 ] || fail "no argument: exit $rc"
trigger "$p0" --run 777
[ "$rc" = 129 ] || fail "a pid and --run: exit $rc"
trigger x1
[ "$rc" = 129 ] || fail "not a pid: exit $rc"

kill "$p0" "$p1" 2>/dev/null
wait

# torchrun: a launcher that never records (no status file: the run's processes join when
# their first step ends), two ranks that join late, a trigger issued before either has:
# it waits for both ranks of the world, then both record the same steps
run=$tmp/armed/779
mkdir -p "$run"
sleep 60 &
launcher=$!
"$st" trigger --run 779 --steps 2 --timeout 30 >"$tmp/out" 2>"$tmp/err" &
trig=$!
sleep 0.2
"$armed" serve "$run" 1 20 1500 &
p1=$!
"$armed" serve "$run" 0 20 600 &
p0=$!
wait "$trig"
rc=$?
[ "$rc" = 0 ] || fail "a trigger before the ranks joined: exit $rc: $(cat "$tmp/out" "$tmp/err")"
grep -q "^trigger 1 of run 779: steps [0-9]* to [0-9]* on 2 processes (rank 0 (pid $p0), rank 1 (pid $p1))$" \
	"$tmp/out" || fail "a trigger before the ranks joined: $(cat "$tmp/out" "$tmp/err")"
[ "$(grep -c "in '$run/run.1.rank[01].stb'" "$tmp/out")" = 2 ] || fail "late ranks' bundles: $(cat "$tmp/out")"
kill "$p0" "$p1" 2>/dev/null

# a rank that never joins: the trigger says which, after --timeout, and requests nothing
run=$tmp/armed/780
mkdir -p "$run"
"$armed" serve "$run" 0 20 &
p0=$!
trigger --run 780 --timeout 1
[ "$rc" = 1 ] && [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "^error: armed run 780: rank 1 of 2 is not recording yet" "$tmp/err" ||
	fail "a rank missing: exit $rc: $(cat "$tmp/out" "$tmp/err")"
kill "$p0" "$launcher" 2>/dev/null
wait
check_done foreign.trigger
