#!/bin/sh
# record.sh STEPTRACE CHECK_RECORD OUTDIR NAME EXPECT PEAKS [RECORD-ARGS...]
#
# Runs `steptrace record RECORD-ARGS -o OUTDIR/NAME.stb` with
# STEPTRACE_RECORD_STATS=OUTDIR/NAME.stats, checks its exit status against
# EXPECT (ok 0, oom 2, interrupted 130), then reads the bundle back with
# check_record. EXPECT "interrupted" sends SIGINT once two progress lines
# have appeared (about a second of steps). Exit 77 (skipped) where there is no GPU. The bundle, stats and
# stderr stay in OUTDIR for a look after a failure.
set -u
st=$1 chk=$2 dir=$3 name=$4 expect=$5 peaks=$6
shift 6
out=$dir/$name.stb stats=$dir/$name.stats err=$dir/$name.stderr
mkdir -p "$dir"
rm -f "$out" "$stats" "$err"

case $expect in
ok) want=0 ;;
oom) want=2 ;;
interrupted) want=130 ;;
*) echo "record.sh: unknown expectation '$expect'" >&2; exit 2 ;;
esac

echo "+ STEPTRACE_RECORD_STATS=$stats $st record $* -o $out"
if [ "$expect" = interrupted ]; then
	STEPTRACE_RECORD_STATS=$stats "$st" record "$@" -o "$out" 2>"$err" &
	pid=$!
	i=0
	while [ $i -lt 1200 ] && kill -0 $pid 2>/dev/null &&
		[ "$(grep -c 'record: step' "$err")" -lt 2 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	kill -INT $pid 2>/dev/null
	wait $pid
	rc=$?
else
	STEPTRACE_RECORD_STATS=$stats timeout 600 "$st" record "$@" -o "$out" 2>"$err"
	rc=$?
fi
cat "$err"
if grep -qi "no CUDA GPU\|needs a GPU build" "$err"; then
	echo "skip: no GPU here"
	exit 77
fi
if [ "$rc" != "$want" ]; then
	echo "FAIL: steptrace record exited $rc, want $want ($expect)"
	exit 1
fi
echo "ok   steptrace record exited $rc ($expect)"
if [ "$expect" = oom ] && ! grep -q "^error: out of memory at '" "$err"; then
	echo "FAIL: no \"error: out of memory at '...'\" line on stderr"
	exit 1
fi
if grep -q "CUPTI DROPPED" "$err"; then
	echo "FAIL: the recorder warned about dropped CUPTI records"
	exit 1
fi
exec "$chk" "$out" "$stats" --expect "$expect" --peaks "$peaks"
